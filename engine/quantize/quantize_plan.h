// Which ggml type each tensor of a model gets when it is quantized to a llama.cpp file type
// (Q4_K_M, Q8_0, ...). The rules are llama-quantize's (llama_tensor_get_type) for the dense
// llama-family models we run: the mixture of the _K_M types (more bits for output.weight and for
// attn_v / ffn_down of the "use_more_bits" layers), 1-D tensors and non-weights kept as they are,
// and the fallbacks for rows that are not a multiple of the K-quant block (Q4_K->Q5_0,
// Q5_K->Q5_1, Q6_K->Q8_0). Pure functions; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/ggml_type.h"
#include "gguf/gguf_file.h"

namespace baton::quantize {

enum class FileType : uint32_t {  // llama_ftype ids, written as general.file_type
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 7,
  kQ5_0 = 8,
  kQ5_1 = 9,
  kQ2_K = 10,
  kQ3_K_M = 12,
  kQ4_K_M = 15,
  kQ5_K_M = 17,
  kQ6_K = 18,
};

// "Q4_K_M", "q8_0", ... -> the file type; nullopt when unknown or not supported here.
std::optional<FileType> parse_file_type(std::string_view name);
std::string_view file_type_name(FileType ftype);
// Every supported name, for help texts.
std::string supported_file_type_names();

// The default tensor type of a file type (Q4_K for Q4_K_M, ...).
GgmlType base_type(FileType ftype);

struct TensorPlan {
  size_t index;   // the tensor's index in file.tensors()
  GgmlType type;  // type to write
  bool quantize;  // false: the tensor's bytes are copied as they are
};

// One entry per tensor of `file`, in llama.cpp's output order: tensors outside blk.N first,
// then by layer number, each group by name (llama_model_loader's weight order, which is also
// the order in which llama-quantize's attn_v / ffn_down layer counters advance). Throws UnsupportedError naming the
// tensor when a fallback type has no block size that divides its rows.
std::vector<TensorPlan> plan_tensor_types(const gguf::GgufFile& file, FileType ftype);

}  // namespace baton::quantize
