// Conversions between the engine's batch types and the wire messages of the pipeline
// (net/messages.h), plus the error codes workers put in ErrorReport. TokenBatch carries
// uint64 sequence ids and int32 positions, the wire uint32 for both: ids >= 2^32 and
// negative positions are refused with baton::Error instead of being truncated.
//
// Activations travel as F32 (default, exact), F16 or BF16 (one rounding per hop, half the
// bytes). A Forward/Hidden body is the hidden tensor at offset 0, then (from the next multiple
// of 8) the timing trailer: the sender's hand-over time (little-endian i64, ns of its steady
// clock), then one StageTiming per stage already passed, in chain order, each as five
// little-endian f64. The coordinator sends the time alone; every stage copies the records it
// received, appends its own and stamps its own time, so the last stage's Hidden carries the
// whole chain's timings (docs/PROTOCOL.md, "Timing trailer" and "Per-hop network time").
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

// ErrorReport.code values sent by engine-worker.
enum class ErrorCode : uint32_t {
  kForwardFailed = 1,  // the stage refused the batch (position outside the context, cache full)
  kNotServing = 2,     // Forward before Commit or after Rollback
  kBadRequest = 3,     // a Forward whose tensor does not fit the loaded model
  kNextHop = 4,        // the result could not be sent to the next hop
  kTakenOver = 5,      // another coordinator took this worker over (--take-over); the connection closes next
};

// How often the pipeline's nodes probe each link's clock offset (net::NodeOptions): the
// estimate's drift term grows by 200 ppm of the time since the best recent probe.
inline constexpr std::chrono::milliseconds kClockProbeInterval{100};

// Prepare.options keys the coordinator sets.
inline constexpr const char* kOptionNCtx = "n_ctx";
inline constexpr const char* kOptionMaxSequences = "max_sequences";
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

// What one stage measured for one micro-batch. The first three are differences of its own
// clock's readings; the hop into it is the one quantity that uses a clock estimate.
struct StageTiming {
  double residence_ms = 0;  // frame received (I/O thread) -> result handed to the connection
  double compute_ms = 0;    // the stage's layers
  double bytes_out = 0;     // hidden tensor bytes it sent on (next hop or coordinator)
  double hop_in_ms = 0;     // the hop that brought the frame here (HopTime; may be slightly < 0)
  double hop_in_error_ms = -1;  // its error bound; < 0: not measured (no clock estimate yet)
};
inline constexpr size_t kTimingBytes = 5 * sizeof(double);
inline constexpr size_t kTrailerHeadBytes = sizeof(int64_t);
inline constexpr size_t kMaxTimings = 4096;  // stages a trailer may list

// A tensor [rows, n_embd] in `dtype` at offset 0 of a freshly allocated body, followed by a
// trailer holding `timings` and a zero hand-over time (stamp_sent() sets it).
struct WireTensor {
  net::TensorRef ref;
  net::Payload body;
  size_t trailer_at = 0;  // body offset of the trailer
  size_t n_timings = 0;
};
WireTensor make_tensor(const float* rows, size_t n_rows, size_t n_embd, net::DType dtype,
                       std::span<const StageTiming> timings = {});
// Writes the hand-over time into the trailer and, if given, the residence of the last record
// (ending at that same instant): call right before handing the frame to the connection.
void stamp_sent(WireTensor& t, std::chrono::steady_clock::time_point sent,
                std::optional<double> last_residence_ms = std::nullopt);
inline WireTensor make_f32_tensor(const float* rows, size_t n_rows, size_t n_embd) {
  return make_tensor(rows, n_rows, n_embd, net::DType::kF32);
}

// Converts an F32/F16/BF16 [n_rows, n_embd] TensorRef out of `body` into `out` (resized); throws
// baton::Error naming `what` when dtype or shape differ from what is expected.
void read_tensor(const net::TensorRef& ref, const net::Payload& body, size_t n_rows, size_t n_embd,
                 std::vector<float>& out, const char* what);
struct Trailer {
  int64_t sent_ns = 0;  // the sender's steady clock at hand-over; 0: not stamped
  std::vector<StageTiming> stages;
};
// The trailer after `ref` (nullopt if the body ends with the tensor); throws baton::Error
// naming `what` if malformed.
std::optional<Trailer> read_trailer(const net::TensorRef& ref, const net::Payload& body, const char* what);

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

// The micro-batch id a worker's ErrorReport is about ("... micro-batch N ..."), if it names one.
std::optional<uint64_t> micro_batch_of(const net::ErrorReport& report);

}  // namespace baton::pipeline
