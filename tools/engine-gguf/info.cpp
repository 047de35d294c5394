// engine-gguf info FILE: the header of a GGUF file (version, alignment, metadata, tensor table,
// totals). Long arrays are summarised by their element type, length and first few elements.
#include <fmt/format.h>

#include <map>

#include "command.h"
#include "gguf/gguf_file.h"
#include "gguf/model_identity.h"

namespace {

using namespace baton::gguf;

constexpr size_t kShownElements = 4;
constexpr size_t kMaxStringChars = 80;

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kMaxStringChars; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') out += fmt::format("\\{}", static_cast<char>(c));
    else if (c == '\n') out += "\\n";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  if (s.size() > kMaxStringChars) out += fmt::format("...\" ({} bytes)", s.size());
  else out += "\"";
  return out;
}

std::string scalar_text(const auto& x) {
  using X = std::decay_t<decltype(x)>;
  if constexpr (std::is_same_v<X, std::string>) return quote(x);
  else if constexpr (std::is_same_v<X, bool>) return x ? "true" : "false";
  else return fmt::format("{}", x);
}

std::string value_text(const Value& v) {
  return std::visit(
      [&](const auto& d) -> std::string {
        using D = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<D, uint64_t> || std::is_same_v<D, int64_t> || std::is_same_v<D, double> ||
                      std::is_same_v<D, bool> || std::is_same_v<D, std::string>) {
          return scalar_text(d);
        } else {
          std::string out = "[";
          for (size_t i = 0; i < d.size() && i < kShownElements; ++i) {
            if (i) out += ", ";
            if constexpr (std::is_same_v<D, std::vector<bool>>) out += d[i] ? "true" : "false";
            else out += scalar_text(d[i]);
          }
          if (d.size() > kShownElements) out += fmt::format(", ... ({} more)", d.size() - kShownElements);
          return out + "]";
        }
      },
      v.data);
}

std::string type_text(const Value& v) {
  if (!v.is_array()) return std::string(value_type_name(v.type));
  return fmt::format("{}[{}]", value_type_name(v.element_type), v.array_size());
}

std::string shape_text(const TensorInfo& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.ne.size(); ++i) s += (i ? ", " : "") + std::to_string(t.ne[i]);
  return s + "]";
}

int run_info(CLI::App& app, const baton::tools::ParseCommandLine& parse) {
  app.description("Print the header of a GGUF file: metadata, tensor table and totals");
  std::string path;
  app.add_option("FILE", path, "GGUF file (the first part of a split model)")->required();
  if (auto code = parse()) return *code;

  auto f = GgufFile::open(path);
  fmt::print("file:      {}\n", f->path());
  fmt::print("parts:     {} ({} bytes)\n", f->n_parts(), f->total_file_bytes());
  fmt::print("version:   {}\n", f->version());
  fmt::print("alignment: {}\n", f->alignment());
  if (f->metadata().find("general.architecture") && f->metadata().find_string("general.architecture"))
    fmt::print("identity:  {}\n", model_identity(*f));

  fmt::print("\nmetadata ({} keys):\n", f->metadata().entries().size());
  size_t key_width = 0;
  for (const auto& [key, value] : f->metadata().entries()) key_width = std::max(key_width, key.size());
  for (const auto& [key, value] : f->metadata().entries())
    fmt::print("  {:<{}}  {:<14} {}\n", key, key_width, type_text(value), value_text(value));

  uint64_t total_bytes = 0;
  std::map<std::string, size_t> per_type;
  size_t name_width = 4;
  for (const auto& t : f->tensors()) name_width = std::max(name_width, t.name.size());
  fmt::print("\ntensors ({}):\n", f->tensors().size());
  fmt::print("  {:<{}}  {:<8} {:<24} {:>12} {:>12}{}\n", "name", name_width, "type", "shape (ggml order)", "bytes",
             "file offset", f->n_parts() > 1 ? "  part" : "");
  for (const auto& t : f->tensors()) {
    const std::string type(baton::ggml_type_name(t.type));
    fmt::print("  {:<{}}  {:<8} {:<24} {:>12} {:>12}", t.name, name_width, type, shape_text(t), t.n_bytes,
               f->tensor_file_offset(t));
    if (f->n_parts() > 1) fmt::print("  {}", t.part + 1);
    fmt::print("\n");
    total_bytes += t.n_bytes;
    ++per_type[type];
  }
  fmt::print("\ntotal: {} tensors, {} bytes ({:.2f} MiB)\n", f->tensors().size(), total_bytes,
             static_cast<double>(total_bytes) / (1024.0 * 1024.0));
  std::string types;
  for (const auto& [type, count] : per_type) types += fmt::format("{}{} x{}", types.empty() ? "" : ", ", type, count);
  fmt::print("types: {}\n", types.empty() ? "(none)" : types);
  return 0;
}

const bool registered_info = baton::tools::register_command(
    {"info", "print a GGUF file's version, metadata, tensor table and totals", run_info});

}  // namespace
