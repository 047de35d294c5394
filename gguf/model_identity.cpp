#include "gguf/model_identity.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/base/error.h"
#include "gguf/gguf_writer.h"

namespace baton::gguf {
namespace {

// Two independent 64-bit FNV-1a streams with a final avalanche; not cryptographic (the cluster
// secret authenticates peers), only a guard against serving the wrong model by mistake.
class Hasher {
 public:
  void bytes(std::string_view s) {
    for (unsigned char c : s) {
      a_ = (a_ ^ c) * 0x100000001b3ull;
      b_ = (b_ ^ c) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
    }
  }
  // Length-prefixed, so field boundaries are unambiguous.
  void field(std::string_view s) {
    u64(s.size());
    bytes(s);
  }
  void u64(uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
    bytes(std::string_view(b, 8));
  }
  std::string hex() const { return fmt::format("{:016x}{:016x}", mix(a_), mix(b_ ^ 0x5bd1e995ull)); }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t a_ = 0xcbf29ce484222325ull;
  uint64_t b_ = 0x84222325cbf29ce4ull;
};

}  // namespace

std::string compute_model_identity(const Metadata& metadata, const std::vector<TensorInfo>& tensors) {
  const std::string arch = metadata.require_string("general.architecture");
  Hasher h;
  h.field("baton-model-identity-v1");
  h.field(arch);
  // Keys and tensors in sorted order: the identity does not depend on file order.
  const std::string prefix = arch + ".";
  std::vector<const std::pair<std::string, Value>*> keys;
  for (const auto& entry : metadata.entries())
    if (entry.first.compare(0, prefix.size(), prefix) == 0) keys.push_back(&entry);
  std::sort(keys.begin(), keys.end(), [](auto* x, auto* y) { return x->first < y->first; });
  for (const auto* entry : keys) {
    const auto& [key, value] = *entry;
    h.field(key);
    h.u64(static_cast<uint64_t>(value.type));
    std::string enc;
    encode_value(enc, value, key);
    h.field(enc);
  }
  std::vector<const TensorInfo*> sorted;
  for (const auto& t : tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](auto* x, auto* y) { return x->name < y->name; });
  h.u64(sorted.size());
  for (const TensorInfo* tp : sorted) {
    const TensorInfo& t = *tp;
    h.field(t.name);
    h.u64(static_cast<uint64_t>(t.type));
    h.u64(t.ne.size());
    for (uint64_t d : t.ne) h.u64(d);
  }
  return h.hex();
}

std::string model_identity(const GgufFile& file) {
  if (auto src = file.metadata().find_string(kShardSourceIdentityKey)) return *src;
  return compute_model_identity(file.metadata(), file.tensors());  // errors name the file
}

}  // namespace baton::gguf
