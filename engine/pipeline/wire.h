// Conversions between the engine's batch types and the wire messages of the pipeline
// (net/messages.h), plus the error codes workers put in ErrorReport. TokenBatch carries
// uint64 sequence ids and int32 positions, the wire uint32 for both: ids >= 2^32 and
// negative positions are refused with baton::Error instead of being truncated.
//
// Activations travel as F32 (default, exact), F16 or BF16 (one rounding per hop, half the
// bytes). A Forward/Hidden body is the hidden tensor at offset 0; its header carries the
// timings: the sender's hand-over time (`sent_ns`, ns of its steady clock) and one StageTiming
// per stage already passed, in chain order. The coordinator sends the time alone; every stage
// copies the records it received, appends its own and stamps its own time, so the last stage's
// Hidden carries the whole chain's timings (docs/PROTOCOL.md, "Timing" and "Per-hop network time").
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/model/token_batch.h"
#include "net/clock_sync.h"
#include "net/messages.h"
#include "net/payload.h"

namespace baton::pipeline {

// ErrorReport.code values sent by engine-worker (the wire's enum, net/messages.h).
using ErrorCode = net::ErrorCode;

// How often the pipeline's nodes probe each link's clock offset (net::NodeOptions): the
// estimate's drift term grows by 200 ppm of the time since the best recent probe.
inline constexpr std::chrono::milliseconds kClockProbeInterval{100};

// Prepare.options keys the coordinator sets (n_ctx and max_sequences are Prepare fields).
// Ownership (issue 29): a worker belongs to one coordinator at a time. `coordinator` names the
// coordinator instance that sends the Prepare (a Prepare from another instance while the
// holder's connection is open is refused with Failed naming the holder); `take_over` = "1"
// takes the worker over anyway, the displaced holder gets ErrorReport kTakenOver and is closed.
inline constexpr const char* kOptionCoordinator = "coordinator";
inline constexpr const char* kOptionTakeOver = "take_over";

std::vector<net::TokenInfo> to_wire(const TokenBatch& batch);
// hints: Forward.row_hints (empty, or one valid RowHint byte per token; else baton::Error).
TokenBatch from_wire(std::span<const net::TokenInfo> tokens, std::span<const uint8_t> hints = {});

// "f32" | "f16" | "bf16" -> dtype; nullopt for anything else (I32 is not an activation type).
std::optional<net::DType> parse_activation_dtype(std::string_view name);
bool is_activation_dtype(net::DType dtype);

// What one stage measured for one micro-batch (Forward/Hidden.timings). The first three are
// differences of its own clock's readings; the hop into it is the one quantity that uses a
// clock estimate:
//   residence_ms     frame received (I/O thread) -> result handed to the connection
//   compute_ms       the stage's layers
//   bytes_out        hidden tensor bytes it sent on (next hop or coordinator)
//   hop_in_ms        the hop that brought the frame here (HopTime; may be slightly < 0)
//   hop_in_error_ms  its error bound; < 0: not measured (no clock estimate yet)
using StageTiming = net::StageTiming;
inline constexpr size_t kMaxTimings = net::kMaxStageTimings;  // stages a frame may list

// A tensor [rows, n_embd] in `dtype` at offset 0 of a freshly allocated body.
struct WireTensor {
  net::TensorRef ref;
  net::Payload body;
};
WireTensor make_tensor(const float* rows, size_t n_rows, size_t n_embd, net::DType dtype);
// Writes the hand-over time into the message and, if given, the residence of its last timing
// record (ending at that same instant): call right before handing the frame to the connection.
void stamp_sent(net::Forward& f, std::chrono::steady_clock::time_point sent,
                std::optional<double> last_residence_ms = std::nullopt);
void stamp_sent(net::Hidden& h, std::chrono::steady_clock::time_point sent,
                std::optional<double> last_residence_ms = std::nullopt);
inline WireTensor make_f32_tensor(const float* rows, size_t n_rows, size_t n_embd) {
  return make_tensor(rows, n_rows, n_embd, net::DType::kF32);
}

// Converts an F32/F16/BF16 [n_rows, n_embd] TensorRef out of `body` into `out` (resized); throws
// baton::Error naming `what` when dtype or shape differ from what is expected.
void read_tensor(const net::TensorRef& ref, const net::Payload& body, size_t n_rows, size_t n_embd,
                 std::vector<float>& out, const char* what);

// One hop of one frame: from the sender's hand-over (`sent_ns`, its clock) to our receipt
// (`received`, our clock), with `clock` = the link's estimate of the sender's clock minus
// ours. ms = received - (sent_ns - offset); |ms - true| <= error_ms. Without an estimate or a
// sent time: ms 0, error_ms -1 (not measured).
struct HopTime {
  double ms = 0;
  double error_ms = -1;
};
HopTime hop_time(int64_t sent_ns, std::chrono::steady_clock::time_point received,
                 const std::optional<net::ClockEstimate>& clock);
int64_t steady_ns(std::chrono::steady_clock::time_point t);

}  // namespace baton::pipeline
