#include "engine/base/ggml_type.h"

#include <array>
#include <cctype>

#include "engine/base/error.h"

namespace baton {
namespace {

using T = GgmlType;
constexpr std::array<GgmlTypeInfo, 33> kTypes = {{
    {T::kF32, "f32", 1, 4},
    {T::kF16, "f16", 1, 2},
    {T::kQ4_0, "q4_0", 32, 18},
    {T::kQ4_1, "q4_1", 32, 20},
    {T::kQ5_0, "q5_0", 32, 22},
    {T::kQ5_1, "q5_1", 32, 24},
    {T::kQ8_0, "q8_0", 32, 34},
    {T::kQ8_1, "q8_1", 32, 36},
    {T::kQ2_K, "q2_K", 256, 84},
    {T::kQ3_K, "q3_K", 256, 110},
    {T::kQ4_K, "q4_K", 256, 144},
    {T::kQ5_K, "q5_K", 256, 176},
    {T::kQ6_K, "q6_K", 256, 210},
    {T::kQ8_K, "q8_K", 256, 292},
    {T::kIQ2_XXS, "iq2_xxs", 256, 66},
    {T::kIQ2_XS, "iq2_xs", 256, 74},
    {T::kIQ3_XXS, "iq3_xxs", 256, 98},
    {T::kIQ1_S, "iq1_s", 256, 50},
    {T::kIQ4_NL, "iq4_nl", 32, 18},
    {T::kIQ3_S, "iq3_s", 256, 110},
    {T::kIQ2_S, "iq2_s", 256, 82},
    {T::kIQ4_XS, "iq4_xs", 256, 136},
    {T::kI8, "i8", 1, 1},
    {T::kI16, "i16", 1, 2},
    {T::kI32, "i32", 1, 4},
    {T::kI64, "i64", 1, 8},
    {T::kF64, "f64", 1, 8},
    {T::kIQ1_M, "iq1_m", 256, 56},
    {T::kBF16, "bf16", 1, 2},
    {T::kTQ1_0, "tq1_0", 256, 54},
    {T::kTQ2_0, "tq2_0", 256, 66},
    {T::kMXFP4, "mxfp4", 32, 17},
    {T::kF32, "", 0, 0},  // sentinel, never matched (block_size 0)
}};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

std::optional<GgmlTypeInfo> find_ggml_type(uint32_t id) {
  for (const auto& t : kTypes)
    if (t.block_size != 0 && static_cast<uint32_t>(t.type) == id) return t;
  return std::nullopt;
}

const GgmlTypeInfo& require_ggml_type(GgmlType type) {
  for (const auto& t : kTypes)
    if (t.block_size != 0 && t.type == type) return t;
  fail<FormatError>("unknown ggml type id {}", static_cast<uint32_t>(type));
}

std::string_view ggml_type_name(GgmlType type) {
  auto info = find_ggml_type(static_cast<uint32_t>(type));
  return info ? info->name : std::string_view("unknown");
}

std::optional<GgmlType> parse_ggml_type(std::string_view name) {
  for (const auto& t : kTypes)
    if (t.block_size != 0 && iequals(t.name, name)) return t.type;
  return std::nullopt;
}

}  // namespace baton
