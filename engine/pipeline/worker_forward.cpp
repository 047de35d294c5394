// One pass through the worker's stage: a Forward's rows are read, computed, and sent on to the
// next hop as a Forward, or (last stage) the output rows back to the coordinator as Hidden, each
// with this stage's timing record appended.
#include <spdlog/spdlog.h>
#include <time.h>

#include <chrono>

#include "engine/base/error.h"
#include "engine/pipeline/wire.h"
#include "engine/pipeline/worker.h"
#include "engine/pipeline/worker_load.h"
#include "engine/runtime/layer_runner.h"

namespace baton::pipeline {

using Clock = std::chrono::steady_clock;

void Worker::on_forward(const net::Forward& f, const net::Payload& body, const net::ConnectionPtr& from,
                        Clock::time_point received_at) {
  if (!load_ || !load_->committed) {
    report(
        from, ErrorCode::kNotServing,
        fmt::format("node {}: Forward of micro-batch {} before a committed load", options_.node_id, f.micro_batch_id),
        f.micro_batch_id);
    return;
  }
  const size_t n_embd = static_cast<size_t>(load_->config.n_embd);
  TokenBatch batch;
  const HopTime hop_in = hop_time(f.sent_ns, received_at, from->clock());
  try {
    batch = from_wire(f.tokens, f.row_hints);
    read_tensor(f.hidden, body, f.tokens.size(), n_embd, hidden_, "Forward");
    if (f.timings.size() >= kMaxTimings) fail("Forward: its timings already list {} stages", f.timings.size());
  } catch (const std::exception& e) {
    report(from, ErrorCode::kBadRequest,
           fmt::format("node {}: micro-batch {} refused: {}", options_.node_id, f.micro_batch_id, e.what()),
           f.micro_batch_id);
    return;
  }
  const auto t0 = Clock::now();
  // The per-pass debug line's CPU time: read only when that line is written (a syscall a pass).
  const bool log_pass = spdlog::should_log(spdlog::level::debug);
  timespec cpu0{};
  if (log_pass) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
  try {
    load_->stage->forward(batch, hidden_.data());
  } catch (const std::exception& e) {
    report(from, ErrorCode::kForwardFailed,
           fmt::format("node {}: micro-batch {} failed: {}", options_.node_id, f.micro_batch_id, e.what()),
           f.micro_batch_id);
    return;
  }
  const double compute_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (log_pass) {
    // Per pass, for bench/scripts/pass_costs.py: CPU time is what a loaded machine distorts least.
    timespec cpu1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    const double cpu_ms =
        static_cast<double>(cpu1.tv_sec - cpu0.tv_sec) * 1e3 + static_cast<double>(cpu1.tv_nsec - cpu0.tv_nsec) / 1e6;
    const double idle_ms = last_pass_end_ == Clock::time_point{}
                               ? 0
                               : std::chrono::duration<double, std::milli>(t0 - last_pass_end_).count();
    spdlog::debug("{}: pass {}: {} tokens from position {}, compute {:.3f} ms, cpu {:.3f} ms, idle before {:.3f} ms",
                  options_.node_id, f.micro_batch_id, batch.size(), f.tokens.empty() ? 0u : f.tokens.front().pos,
                  compute_ms, cpu_ms, idle_ms);
  }
  last_pass_end_ = Clock::now();
  compute_ms_ += compute_ms;
  ++forwards_;
  tokens_ += batch.size();
  bytes_in_ += f.hidden.bytes;
  // Residence ends at the hand-over to the connection (after the tensor's encoding; the send
  // encodes the header), the very instant stamped as the frame's send time, where the next hop
  // begins. `out` is the Forward or Hidden to send: it gets the records received plus ours.
  auto encode = [&](auto& out, const float* rows, size_t n_rows) {
    const double bytes = static_cast<double>(n_rows * n_embd * net::dtype_size(load_->activations));
    out.timings.reserve(f.timings.size() + 1);
    out.timings.assign(f.timings.begin(), f.timings.end());
    out.timings.push_back({0, compute_ms, bytes, hop_in.ms, hop_in.error_ms});
    auto t = make_tensor(rows, n_rows, n_embd, load_->activations);
    out.hidden = t.ref;
    const auto sent = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(sent - received_at).count();
    stamp_sent(out, sent, ms);
    busy_ms_ += ms;
    bytes_out_ += n_rows * n_embd * net::dtype_size(load_->activations);
    return std::move(t.body);
  };
  if (load_->next) {
    net::Forward next{f.micro_batch_id, f.tokens, {}, f.row_hints};
    auto next_body = encode(next, hidden_.data(), batch.size());
    if (!load_->next->send(next, std::move(next_body)))
      report(from, ErrorCode::kNextHop,
             fmt::format("node {}: cannot send micro-batch {} to next hop {}: {}", options_.node_id, f.micro_batch_id,
                         load_->next_name,
                         load_->next->close_info() ? load_->next->close_info()->reason : "connection closed"),
             f.micro_batch_id);
    return;
  }
  gather_output_rows(batch, hidden_, static_cast<int64_t>(n_embd), out_rows_);
  net::Hidden h;
  h.micro_batch_id = f.micro_batch_id;
  for (const auto& t : f.tokens)
    if (t.output) h.tokens.push_back(t);
  auto hidden_body = encode(h, out_rows_.data(), h.tokens.size());
  load_->coordinator->send(h, std::move(hidden_body));
}

}  // namespace baton::pipeline
