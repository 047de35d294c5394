// GgufFile: maps each part read-only, parses it with parse_gguf_header(), merges split parts.
#include "gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/base/aligned_buffer.h"
#include "engine/base/error.h"
#include "gguf/gguf_header.h"

namespace baton::gguf {

// One file image: either a read-only private mapping or an owned copy (from_bytes).
struct GgufFile::Part {
  std::string path;
  const uint8_t* base = nullptr;
  uint64_t size = 0;
  uint64_t data_offset = 0;
  bool mapped = false;
  AlignedBuffer owned;

  Part() = default;
  Part(const Part&) = delete;
  Part& operator=(const Part&) = delete;
  ~Part() {
    if (mapped && base) ::munmap(const_cast<uint8_t*>(base), size);
  }

  std::span<const uint8_t> bytes() const { return {base, static_cast<size_t>(size)}; }
};

namespace {

std::unique_ptr<GgufFile::Part> map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail<Error>("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail<Error>("{}: cannot stat: {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail<Error>("{}: not a regular file", path);
  }
  if (st.st_size == 0) {
    ::close(fd);
    fail<FormatError>("{}: not a GGUF file: the file is empty", path);
  }
  void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) fail<Error>("{}: mmap of {} bytes failed: {}", path, st.st_size, std::strerror(e));
  auto part = std::make_unique<GgufFile::Part>();
  part->path = path;
  part->base = static_cast<const uint8_t*>(p);
  part->size = static_cast<uint64_t>(st.st_size);
  part->mapped = true;
  return part;
}

struct SplitInfo {
  uint64_t no = 0, count = 1, tensors = 0;
  bool present = false;
};

SplitInfo read_split_keys(const Metadata& md, const std::string& path) {
  SplitInfo s;
  if (!md.contains("split.count")) return s;
  s.present = true;
  s.count = md.require_uint("split.count");  // errors name the file (Metadata::source_name)
  s.no = md.require_uint("split.no");
  s.tensors = md.require_uint("split.tensors.count");
  if (s.count == 0 || s.count > 99999 || s.no >= s.count)
    fail<FormatError>("{}: invalid split keys: split.no = {}, split.count = {}", path, s.no, s.count);
  return s;
}

// True when s[at, at+5) are five decimal digits.
bool five_digits(std::string_view s, size_t at) {
  if (at + 5 > s.size()) return false;
  for (size_t i = at; i < at + 5; ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// "dir/name-00001-of-00003.gguf", part index 1 -> "dir/name-00002-of-00003.gguf".
std::string sibling_path(const std::string& first, uint64_t index, uint64_t count) {
  // The name ends in "-NNNNN-of-MMMMM.gguf" (20 characters).
  constexpr std::string_view kSuffix = ".gguf";
  const size_t n = first.size();
  const bool matches = n > 20 && std::string_view(first).substr(n - 5) == kSuffix && first[n - 20] == '-' &&
                       five_digits(first, n - 19) && std::string_view(first).substr(n - 14, 4) == "-of-" &&
                       five_digits(first, n - 10);
  if (!matches)
    fail<FormatError>(
        "{}: split model (split.count = {}) but the file name does not follow the "
        "'NAME-00001-of-{:05}.gguf' pattern, so the other parts cannot be found",
        first, count, count);
  return fmt::format("{}-{:05}-of-{:05}.gguf", first.substr(0, n - 20), index + 1, count);
}

}  // namespace

class GgufParser {
 public:
  static std::shared_ptr<const GgufFile> build(std::unique_ptr<GgufFile::Part> first, bool follow_split) {
    std::shared_ptr<GgufFile> f(new GgufFile());
    f->path_ = first->path;
    GgufHeader h = parse_gguf_header(first->bytes(), first->path);
    first->data_offset = h.data_offset;
    f->version_ = h.version;
    f->alignment_ = h.alignment;
    f->metadata_ = std::move(h.metadata);
    f->tensors_ = std::move(h.tensors);
    f->parts_.push_back(std::move(first));

    const SplitInfo split = read_split_keys(f->metadata_, f->path_);
    if (!follow_split || !split.present || split.count == 1) return index(std::move(f));
    if (split.no != 0)
      fail<FormatError>("{}: this is part {} of {} of a split model; open the first part ({})", f->path_, split.no + 1,
                        split.count, sibling_path(f->path_, 0, split.count));
    for (uint64_t i = 1; i < split.count; ++i) add_part(*f, i, split);

    if (f->tensors_.size() != split.tensors)
      fail<FormatError>("{}: split.tensors.count = {} but the {} parts hold {} tensors", f->path_, split.tensors,
                        split.count, f->tensors_.size());
    return index(std::move(f));
  }

 private:
  // Builds the name index; a name in two parts is an error (within a part the parser checked).
  static std::shared_ptr<GgufFile> index(std::shared_ptr<GgufFile> f) {
    for (size_t i = 0; i < f->tensors_.size(); ++i) {
      const TensorInfo& t = f->tensors_[i];
      if (auto [it, fresh] = f->tensor_index_.emplace(t.name, i); !fresh)
        fail<FormatError>("{}: tensor '{}' appears in part {} and part {}", f->path_, t.name,
                          f->tensors_[it->second].part + 1, t.part + 1);
    }
    return f;
  }

  static void add_part(GgufFile& f, uint64_t index, const SplitInfo& split) {
    const std::string& first_path = f.path_;
    const std::string path = sibling_path(first_path, index, split.count);
    if (!std::filesystem::exists(path))
      fail<FormatError>("{}: split model part {} of {} is missing: {}", first_path, index + 1, split.count, path);
    auto part = map_file(path);
    GgufHeader h = parse_gguf_header(part->bytes(), path);
    const SplitInfo s = read_split_keys(h.metadata, path);
    if (!s.present || s.no != index || s.count != split.count)
      fail<FormatError>("{}: expected split part {} of {}, found split.no = {}, split.count = {}", path, index + 1,
                        split.count, s.present ? s.no + 1 : 0, s.present ? s.count : 0);
    part->data_offset = h.data_offset;
    const auto part_no = static_cast<uint32_t>(f.parts_.size());
    for (auto& t : h.tensors) {
      t.part = part_no;
      f.tensors_.push_back(std::move(t));
    }
    f.parts_.push_back(std::move(part));
  }
};

std::shared_ptr<const GgufFile> GgufFile::open(const std::string& path) {
  return GgufParser::build(map_file(path), /*follow_split=*/true);
}

std::shared_ptr<const GgufFile> GgufFile::from_bytes(std::span<const uint8_t> bytes, std::string name) {
  auto part = std::make_unique<Part>();
  part->path = std::move(name);
  part->owned.resize(bytes.size());
  if (!bytes.empty()) std::memcpy(part->owned.data(), bytes.data(), bytes.size());
  part->base = part->owned.as<uint8_t>();
  part->size = bytes.size();
  return GgufParser::build(std::move(part), /*follow_split=*/false);
}

GgufFile::~GgufFile() = default;

uint32_t GgufFile::n_parts() const { return static_cast<uint32_t>(parts_.size()); }

uint64_t GgufFile::total_file_bytes() const {
  uint64_t n = 0;
  for (const auto& p : parts_) n += p->size;
  return n;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& GgufFile::require_tensor(std::string_view name) const {
  if (const TensorInfo* t = find_tensor(name)) return *t;
  fail<FormatError>("{}: tensor '{}' not found", path_, name);
}

std::span<const uint8_t> GgufFile::tensor_data(const TensorInfo& t) const {
  if (t.part >= parts_.size()) fail<Error>("{}: tensor '{}' names part {} of {}", path_, t.name, t.part, parts_.size());
  const Part& p = *parts_[t.part];
  // Validated at open: data_offset + offset + n_bytes <= size.
  return {p.base + p.data_offset + t.offset, static_cast<size_t>(t.n_bytes)};
}

uint64_t GgufFile::tensor_file_offset(const TensorInfo& t) const {
  return static_cast<uint64_t>(tensor_data(t).data() - parts_[t.part]->base);
}

uint64_t GgufFile::part_file_bytes(uint32_t part) const {
  if (part >= parts_.size()) fail<Error>("{}: no part {} (the model has {})", path_, part, parts_.size());
  return parts_[part]->size;
}

namespace {
void advise(const uint8_t* addr, uint64_t len, int advice) {
  if (len == 0) return;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(addr) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(addr) + len;
  ::madvise(reinterpret_cast<void*>(begin), end - begin, advice);  // advisory: failure is harmless
}
}  // namespace

void GgufFile::prefetch(const TensorInfo& t) const {
  auto d = tensor_data(t);
  if (parts_[t.part]->mapped) advise(d.data(), d.size(), MADV_WILLNEED);
}

void GgufFile::release(const TensorInfo& t) const {
  auto d = tensor_data(t);
  // Only on file mappings: DONTNEED on owned heap memory would zero it.
  if (parts_[t.part]->mapped) advise(d.data(), d.size(), MADV_DONTNEED);
}

}  // namespace baton::gguf
