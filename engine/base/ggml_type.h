// The ggml tensor type ids used in GGUF files, and their block geometry. Shared by gguf/
// (sizes and validation) and kernels/ (which of them it can compute with). Every id the
// format defines is listed, also those we have no kernels for: such tensors still load.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace baton {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;  // as ggml spells it: "q4_K", "f16"
  uint32_t block_size;    // elements per block
  uint32_t block_bytes;   // bytes per block
};

// nullopt for ids the format does not define (including the removed 4, 5, 31-33, 36-38).
std::optional<GgmlTypeInfo> find_ggml_type(uint32_t id);
// Throws baton::FormatError naming the id.
const GgmlTypeInfo& require_ggml_type(GgmlType type);
std::string_view ggml_type_name(GgmlType type);
// Parses "Q4_K", "q4_k", "F16" ...; nullopt when unknown.
std::optional<GgmlType> parse_ggml_type(std::string_view name);

}  // namespace baton
