// Quantizes a GGUF model to a llama.cpp file type (see quantize_plan.h for the per-tensor types),
// streaming: tensors are converted one at a time from the input mapping into a buffer of the
// output tensor's size and written, so peak memory is about one tensor in f32 plus its output
// (not the model). The output is written to `out_path`.tmp and renamed when complete.
// Metadata is copied, with general.file_type and general.quantization_version = 2 set.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/quantize/quantize_plan.h"

namespace baton::quantize {

struct QuantizeOptions {
  FileType ftype = FileType::kQ4_K_M;
  int n_threads = 1;
  // Called after each tensor is written (index, count, tensor, its output type); may be empty.
  std::function<void(size_t, size_t, const gguf::TensorInfo&, GgmlType)> on_tensor;
};

struct QuantizeResult {
  uint64_t in_bytes = 0;   // tensor data bytes in the input
  uint64_t out_bytes = 0;  // tensor data bytes in the output
  size_t n_quantized = 0;  // tensors converted (the rest were copied)
};

// Throws FormatError (bad input), UnsupportedError (a tensor type with no kernels, no fallback
// type) or Error (I/O), each naming the file or tensor. The input must not be the output.
QuantizeResult quantize_model(const std::string& in_path, const std::string& out_path, const QuantizeOptions& options);

}  // namespace baton::quantize
