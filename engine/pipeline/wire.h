// Conversions between the engine's batch types and the wire messages of the pipeline
// (net/messages.h), plus the error codes workers put in ErrorReport. TokenBatch carries
// uint64 sequence ids and int32 positions, the wire uint32 for both: ids >= 2^32 and
// negative positions are refused with baton::Error instead of being truncated.
//
// Activations travel as F32 (default, exact), F16 or BF16 (one rounding per hop, half the
// bytes). A Forward/Hidden body is the hidden tensor at offset 0, then (from the next multiple
// of 8) an optional timing trailer: one StageTiming per stage already passed, in chain order,
// each as three little-endian f64. The coordinator sends none; every stage copies what it
// received and appends its own, so the last stage's Hidden carries the whole chain's timings.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/model/token_batch.h"
#include "net/messages.h"
#include "net/payload.h"

namespace baton::pipeline {

// ErrorReport.code values sent by engine-worker.
enum class ErrorCode : uint32_t {
  kForwardFailed = 1,  // the stage refused the batch (position outside the context, cache full)
  kNotServing = 2,     // Forward before Commit or after Rollback
  kBadRequest = 3,     // a Forward whose tensor does not fit the loaded model
  kNextHop = 4,        // the result could not be sent to the next hop
};

// Prepare.options keys the coordinator sets.
inline constexpr const char* kOptionNCtx = "n_ctx";
inline constexpr const char* kOptionMaxSequences = "max_sequences";

std::vector<net::TokenInfo> to_wire(const TokenBatch& batch);
TokenBatch from_wire(std::span<const net::TokenInfo> tokens);

// "f32" | "f16" | "bf16" -> dtype; nullopt for anything else (I32 is not an activation type).
std::optional<net::DType> parse_activation_dtype(std::string_view name);
bool is_activation_dtype(net::DType dtype);

// What one stage measured for one micro-batch, on its own clock only.
struct StageTiming {
  double residence_ms = 0;  // frame received (I/O thread) -> result handed to the connection
  double compute_ms = 0;    // the stage's layers
  double bytes_out = 0;     // hidden tensor bytes it sent on (next hop or coordinator)
};
inline constexpr size_t kTimingBytes = 3 * sizeof(double);
inline constexpr size_t kMaxTimings = 4096;  // stages a trailer may list

// A tensor [rows, n_embd] in `dtype` at offset 0 of a freshly allocated body, followed by
// `timings` as a trailer.
struct WireTensor {
  net::TensorRef ref;
  net::Payload body;
};
WireTensor make_tensor(const float* rows, size_t n_rows, size_t n_embd, net::DType dtype,
                       std::span<const StageTiming> timings = {});
inline WireTensor make_f32_tensor(const float* rows, size_t n_rows, size_t n_embd) {
  return make_tensor(rows, n_rows, n_embd, net::DType::kF32);
}

// Converts an F32/F16/BF16 [n_rows, n_embd] TensorRef out of `body` into `out` (resized); throws
// baton::Error naming `what` when dtype or shape differ from what is expected.
void read_tensor(const net::TensorRef& ref, const net::Payload& body, size_t n_rows, size_t n_embd,
                 std::vector<float>& out, const char* what);
// The trailer after `ref` (empty if none); throws baton::Error naming `what` if malformed.
std::vector<StageTiming> read_timings(const net::TensorRef& ref, const net::Payload& body, const char* what);

// The micro-batch id a worker's ErrorReport is about ("... micro-batch N ..."), if it names one.
std::optional<uint64_t> micro_batch_of(const net::ErrorReport& report);

}  // namespace baton::pipeline
