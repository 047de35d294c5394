// llama-quantize's per-tensor type choice (llama_tensor_get_type), restricted to the file types
// and the dense architectures this project quantizes. Counters for attn_v / ffn_down advance in
// file order, as in llama.cpp.
#include "engine/quantize/quantize_plan.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "engine/base/error.h"
#include "gguf/file_type.h"
#include "gguf/tensor_names.h"

namespace baton::quantize {
namespace {

namespace tensor_names = gguf::tensor_names;

// The file types quantized here and their default tensor type; their names are gguf/file_type.h's.
struct SupportedFileType {
  FileType ftype;
  GgmlType base;
};
constexpr std::array<SupportedFileType, 10> kFileTypes{{
    {FileType::kQ4_0, GgmlType::kQ4_0},
    {FileType::kQ4_1, GgmlType::kQ4_1},
    {FileType::kQ5_0, GgmlType::kQ5_0},
    {FileType::kQ5_1, GgmlType::kQ5_1},
    {FileType::kQ8_0, GgmlType::kQ8_0},
    {FileType::kQ2_K, GgmlType::kQ2_K},
    {FileType::kQ3_K_M, GgmlType::kQ3_K},
    {FileType::kQ4_K_M, GgmlType::kQ4_K},
    {FileType::kQ5_K_M, GgmlType::kQ5_K},
    {FileType::kQ6_K, GgmlType::kQ6_K},
}};

const SupportedFileType& entry(FileType ftype) {
  for (const auto& e : kFileTypes)
    if (e.ftype == ftype) return e;
  fail<Error>("unknown quantization file type id {}", static_cast<uint32_t>(ftype));
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// llama.cpp: more bits for the first and last eighth of the layers and every third in between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// Tensors llama-quantize never quantizes: 1-D tensors, non-weights, and a few special weights.
bool should_quantize(const gguf::TensorInfo& t) {
  if (t.ne.size() < 2) return false;
  const std::string_view name = t.name;
  if (!ends_with(name, "weight")) return false;
  for (std::string_view skip : {"_norm.weight", "pos_embd", "token_types", "ssm_conv1d", "rel_pos", "attn_rel_b"})
    if (contains(name, skip)) return false;
  return true;
}

// N of a "blk.N." name, -1 for tensors outside the layers.
int layer_of(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return -1;
  int il = -1;
  const char* begin = name.data() + 4;
  auto [end, ec] = std::from_chars(begin, name.data() + name.size(), il);
  return ec == std::errc{} && end != begin ? il : -1;
}

struct Counters {
  int n_attn_v = 0, n_ffn_down = 0;
  int i_attn_v = 0, i_ffn_down = 0;
};

GgmlType choose(const gguf::TensorInfo& t, FileType ftype, Counters& c, uint32_t n_gqa, bool has_output) {
  GgmlType type = base_type(ftype);
  const std::string_view name = t.name;
  const bool is_k_mix = ftype == FileType::kQ4_K_M || ftype == FileType::kQ5_K_M;
  if (name == tensor_names::kOutput || (!has_output && name == tensor_names::kTokenEmbd)) {
    if (t.row_length() % 256 != 0) type = GgmlType::kQ8_0;
    else if (type != GgmlType::kQ8_0) type = GgmlType::kQ6_K;
  } else if (contains(name, tensor_names::kAttnV)) {
    if (ftype == FileType::kQ2_K) type = n_gqa >= 4 ? GgmlType::kQ4_K : GgmlType::kQ3_K;
    else if (ftype == FileType::kQ3_K_M) type = c.i_attn_v < 2 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
    else if (is_k_mix && use_more_bits(c.i_attn_v, c.n_attn_v)) type = GgmlType::kQ6_K;
    ++c.i_attn_v;
  } else if (contains(name, "ffn_down")) {
    const int i = c.i_ffn_down, n = c.n_ffn_down;
    if (ftype == FileType::kQ2_K) type = GgmlType::kQ3_K;
    else if (ftype == FileType::kQ3_K_M) type = i < n / 16 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
    else if (is_k_mix && use_more_bits(i, n)) type = GgmlType::kQ6_K;
    ++c.i_ffn_down;
  } else if (contains(name, tensor_names::kAttnOutput)) {
    if (ftype == FileType::kQ2_K) type = GgmlType::kQ3_K;
    else if (ftype == FileType::kQ3_K_M) type = GgmlType::kQ4_K;
  } else if (contains(name, tensor_names::kAttnQkv)) {
    if (ftype == FileType::kQ3_K_M) type = GgmlType::kQ4_K;
    else if (ftype == FileType::kQ4_K_M) type = GgmlType::kQ5_K;
    else if (ftype == FileType::kQ5_K_M) type = GgmlType::kQ6_K;
  }

  // rows that do not split into this type's blocks: llama.cpp's fallbacks
  const uint64_t nx = t.row_length();
  if (nx % require_ggml_type(type).block_size != 0) {
    GgmlType fallback;
    switch (type) {
      case GgmlType::kQ4_K: fallback = GgmlType::kQ5_0; break;
      case GgmlType::kQ5_K: fallback = GgmlType::kQ5_1; break;
      case GgmlType::kQ6_K: fallback = GgmlType::kQ8_0; break;
      default:
        fail<UnsupportedError>(
            "tensor '{}': rows of {} elements do not fit {} blocks and there is no fallback type "
            "for it here (llama.cpp would use IQ4_NL)",
            t.name, nx, ggml_type_name(type));
    }
    type = nx % require_ggml_type(fallback).block_size == 0 ? fallback : GgmlType::kF16;
  }
  return type;
}

}  // namespace

std::optional<FileType> parse_file_type(std::string_view name) {
  std::string upper(name);
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const auto& e : kFileTypes)
    if (file_type_name(e.ftype) == upper) return e.ftype;
  return std::nullopt;
}

std::string_view file_type_name(FileType ftype) {
  return gguf::file_type_name(static_cast<uint32_t>(entry(ftype).ftype));
}

std::string supported_file_type_names() {
  std::string out;
  for (const auto& e : kFileTypes) {
    if (!out.empty()) out += ", ";
    out += file_type_name(e.ftype);
  }
  return out;
}

GgmlType base_type(FileType ftype) { return entry(ftype).base; }

std::vector<TensorPlan> plan_tensor_types(const gguf::GgufFile& file, FileType ftype) {
  const auto& tensors = file.tensors();
  Counters c;
  bool has_output = false;
  for (const auto& t : tensors) {
    if (contains(t.name, tensor_names::kAttnV)) ++c.n_attn_v;
    if (contains(t.name, "ffn_down")) ++c.n_ffn_down;
    if (t.name == tensor_names::kOutput) has_output = true;
  }
  uint32_t n_gqa = 1;
  if (auto arch = file.metadata().find_string("general.architecture")) {
    const auto n_head = file.metadata().find_uint(*arch + ".attention.head_count");
    const auto n_head_kv = file.metadata().find_uint(*arch + ".attention.head_count_kv");
    if (n_head && n_head_kv && *n_head_kv > 0) n_gqa = static_cast<uint32_t>(*n_head / *n_head_kv);
  }

  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });

  std::vector<TensorPlan> plan;
  plan.reserve(tensors.size());
  for (size_t i : order) {
    const auto& t = tensors[i];
    if (!should_quantize(t)) {
      plan.push_back({i, t.type, false});
      continue;
    }
    const GgmlType type = choose(t, ftype, c, n_gqa, has_output);
    plan.push_back({i, type, type != t.type});
  }
  return plan;
}

}  // namespace baton::quantize
