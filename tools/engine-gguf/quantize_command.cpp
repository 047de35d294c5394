// engine-gguf quantize IN OUT TYPE: writes IN quantized to a llama.cpp file type (Q4_K_M, Q8_0,
// ...) with llama-quantize's per-tensor mixture, streaming tensor by tensor.
#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "command.h"
#include "engine/base/error.h"
#include "engine/quantize/quantize_model.h"

namespace {

using namespace baton;

int run_quantize(CLI::App& app, const baton::tools::ParseCommandLine& parse) {
  app.description("quantize a GGUF model (F32/F16/BF16 source) to a llama.cpp file type");
  std::string in, out, type_name;
  int n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool quiet = false;
  app.add_option("input", in, "source GGUF")->required();
  app.add_option("output", out, "GGUF to write")->required();
  app.add_option("type", type_name, "one of " + quantize::supported_file_type_names())->required();
  app.add_option("-t,--threads", n_threads, "threads")->check(CLI::Range(1, 1024));
  app.add_flag("-q,--quiet", quiet, "no per-tensor lines");
  if (auto code = parse()) return *code;

  const auto ftype = quantize::parse_file_type(type_name);
  if (!ftype)
    fail<Error>("unknown quantization type '{}' (supported: {})", type_name, quantize::supported_file_type_names());
  quantize::QuantizeOptions options;
  options.ftype = *ftype;
  options.n_threads = n_threads;
  if (!quiet)
    options.on_tensor = [](size_t i, size_t n, const gguf::TensorInfo& t, GgmlType type) {
      fmt::print("[{:>4}/{}] {:<32} {:>6} -> {}\n", i + 1, n, t.name, ggml_type_name(t.type), ggml_type_name(type));
    };
  const auto start = std::chrono::steady_clock::now();
  const auto r = quantize::quantize_model(in, out, options);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}: {} -> {}: {:.1f} MiB -> {:.1f} MiB of tensors ({} quantized) in {:.1f} s\n",
             quantize::file_type_name(*ftype), in, out, r.in_bytes / 1048576.0, r.out_bytes / 1048576.0, r.n_quantized,
             s);
  return 0;
}

const bool registered_quantize =
    tools::register_command({"quantize", "quantize a model (Q4_K_M, Q8_0, ...)", run_quantize});

}  // namespace
