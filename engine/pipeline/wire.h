// Conversions between the engine's batch types and the wire messages of the pipeline
// (net/messages.h), plus the error codes workers put in ErrorReport. TokenBatch carries
// uint64 sequence ids and int32 positions, the wire uint32 for both: ids >= 2^32 and
// negative positions are refused with baton::Error instead of being truncated.
#pragma once

#include <cstdint>
#include <span>
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

// An F32 tensor [rows, n_embd] at offset 0 of a freshly allocated body.
struct WireTensor {
  net::TensorRef ref;
  net::Payload body;
};
WireTensor make_f32_tensor(const float* rows, size_t n_rows, size_t n_embd);

// Copies an F32 [n_rows, n_embd] TensorRef out of `body` into `out` (resized); throws
// baton::Error naming `what` when dtype or shape differ from what is expected.
void read_f32_tensor(const net::TensorRef& ref, const net::Payload& body, size_t n_rows, size_t n_embd,
                     std::vector<float>& out, const char* what);

}  // namespace baton::pipeline
