#include "engine/pipeline/remote_layers.h"
#include "engine/pipeline/chain.h"
#include "engine/pipeline/chain_link.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <mutex>

#include "engine/base/error.h"
#include "engine/pipeline/wire.h"

namespace baton::pipeline {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

void RemoteLayers::forward(const TokenBatch& batch, std::vector<float>& hidden, std::vector<float>& out_rows) {
  if (!passes_.empty()) fail("forward: {} submitted passes are unfinished; finish() them first", passes_.size());
  submit(batch, hidden);
  finish(out_rows);
}

int RemoteLayers::max_in_flight() const {
  const int n = chain_.options_.max_in_flight;
  return n > 0 ? n : std::max(1, static_cast<int>(chain_.plan_.size()));
}

void RemoteLayers::fail_all(const std::string& why) {
  const size_t lost = passes_.size();
  passes_.clear();
  {
    std::lock_guard lock(chain_.metrics_mutex_);
    chain_.metrics_.failed_passes += lost;
  }
  if (lost > 1) fail("{} ({} passes in flight lost)", why, lost);
  fail("{}", why);
}

void RemoteLayers::submit(const TokenBatch& batch, std::vector<float>& hidden) {
  Chain& c = chain_;
  const size_t n_embd = static_cast<size_t>(c.n_embd_);
  if (hidden.size() < batch.size() * n_embd)
    fail("forward: hidden has {} floats, the batch needs {}", hidden.size(), batch.size() * n_embd);
  if (static_cast<int>(passes_.size()) >= max_in_flight())
    fail("forward: {} passes are already in flight (max_in_flight {}); finish() one first", passes_.size(),
         max_in_flight());
  try {
    c.check_links();
  } catch (const std::exception& e) {
    fail_all(fmt::format("forward: {}", e.what()));
  }
  {
    std::lock_guard lock(c.notices_mutex_);
    if (!c.not_loaded_.empty()) fail("forward: the pipeline is not loaded: {}", c.not_loaded_);
  }
  Pass p;
  p.id = next_micro_batch_++;
  p.n_tokens = batch.size();
  p.n_outputs = batch.n_outputs();
  auto t = make_tensor(hidden.data(), batch.size(), n_embd, c.activations_);
  const double bytes = static_cast<double>(t.ref.bytes);
  net::Forward f{p.id, to_wire(batch), t.ref, batch.hints};
  p.sent = Clock::now();
  stamp_sent(f, p.sent);  // where the first hop and the round trip begin
  if (!c.links_.front()->connection->send(f, std::move(t.body)))
    fail_all(fmt::format("forward: cannot send micro-batch {} to {}", p.id, c.name(0)));
  passes_.push_back(std::move(p));
  std::lock_guard lock(c.metrics_mutex_);
  c.metrics_.bytes_to_first += bytes;
  c.metrics_.peak_in_flight = std::max(c.metrics_.peak_in_flight, static_cast<int>(passes_.size()));
}

void RemoteLayers::take(net::Incoming& in) {
  Chain& c = chain_;
  if (const auto* h = message_as<net::Hidden>(in)) {
    for (auto& p : passes_)
      if (p.id == h->micro_batch_id) {
        p.reply = std::move(in);
        return;
      }
    return;  // a reply of a pass lost to an earlier failure
  }
  if (const auto* e = message_as<net::ErrorReport>(in)) {
    const size_t i = c.link_index(in.connection);
    const std::string who = i < c.plan_.size() ? c.name(i) : std::string("a node");
    const auto& about = e->micro_batch_id;
    if (about && std::none_of(passes_.begin(), passes_.end(), [&](const Pass& p) { return p.id == *about; })) {
      spdlog::debug("ignoring a late error about lost micro-batch {}: {}", *about, e->message);
      return;
    }
    fail_all(fmt::format("forward: {} reported: {}", who, e->message));
  }
}

void RemoteLayers::finish(std::vector<float>& out_rows) {
  Chain& c = chain_;
  if (passes_.empty()) fail("forward: finish() without an unfinished pass");
  const size_t n_embd = static_cast<size_t>(c.n_embd_);
  while (!passes_.front().reply) {
    const Pass& oldest = passes_.front();
    const auto deadline = oldest.sent + c.options_.request_timeout;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::optional<net::Incoming> in;
    try {
      in = c.next_message(std::max(left, 0ms));
    } catch (const std::exception& e) {
      fail_all(fmt::format("forward: {}", e.what()));
    }
    if (!in)
      fail_all(fmt::format("forward: no result for micro-batch {} from {} within {} ms", oldest.id,
                           c.name(c.plan_.size() - 1), c.options_.request_timeout.count()));
    take(*in);
  }
  Pass p = std::move(passes_.front());
  passes_.pop_front();
  const auto& in = *p.reply;
  const auto& h = std::get<net::Hidden>(in.message);
  const size_t last = c.plan_.size() - 1;
  const std::vector<StageTiming>& timings = h.timings;
  const int64_t last_sent_ns = h.sent_ns;
  try {
    if (h.tokens.size() != p.n_outputs)
      fail("{} returned {} rows for micro-batch {}, expected {}", c.name(last), h.tokens.size(), p.id, p.n_outputs);
    read_tensor(h.hidden, in.body, h.tokens.size(), n_embd, out_rows, "Hidden");
    if (timings.size() != c.plan_.size())
      fail("{}: Hidden of micro-batch {} lists {} stage timings, the chain has {} stages", c.name(last), p.id,
           timings.size(), c.plan_.size());
  } catch (const std::exception& e) {
    fail_all(fmt::format("forward: {}", e.what()));
  }
  const auto received = in.received_at == Clock::time_point{} ? Clock::now() : in.received_at;
  const double rtt = std::chrono::duration<double, std::milli>(received - p.sent).count();
  const HopTime back = hop_time(last_sent_ns, received, in.connection->clock());
  std::lock_guard lock(c.metrics_mutex_);
  auto& m = c.metrics_;
  ++m.passes;
  m.tokens += p.n_tokens;
  m.round_trip_ms += rtt;
  double residence = 0;
  for (size_t i = 0; i < timings.size(); ++i) {
    m.stages[i].compute_ms += timings[i].compute_ms;
    m.stages[i].residence_ms += timings[i].residence_ms;
    m.stages[i].bytes_out += timings[i].bytes_out;
    residence += timings[i].residence_ms;
  }
  const double all_hops = std::max(0.0, rtt - residence);  // exact: the stamps telescope
  m.network_ms += all_hops;
  // Each hop's true time lies in [0, all_hops] of this pass, so clamping an estimate into
  // that range only moves it toward the truth (its error bound still holds).
  auto add_hop = [&](HopMetrics& hop, const HopTime& t, double bytes) {
    hop.bytes += bytes;
    if (t.error_ms < 0) {
      ++hop.unmeasured;
      return;
    }
    hop.network_ms += std::clamp(t.ms, 0.0, all_hops);
    hop.error_ms += t.error_ms;
    ++hop.passes;
    hop.tokens += p.n_tokens;
  };
  for (size_t i = 0; i < timings.size(); ++i)
    add_hop(
        m.hops[i], {timings[i].hop_in_ms, timings[i].hop_in_error_ms},
        i == 0 ? static_cast<double>(p.n_tokens * n_embd * net::dtype_size(c.activations_)) : timings[i - 1].bytes_out);
  add_hop(m.hops.back(), back, timings.back().bytes_out);
}

void RemoteLayers::reset_sequence(uint64_t seq_id) {
  Chain& c = chain_;
  if (seq_id > std::numeric_limits<uint32_t>::max()) fail("sequence id {} does not fit the wire's 32 bits", seq_id);
  try {
    c.check_links();
  } catch (const std::exception& e) {
    if (!passes_.empty()) fail_all(fmt::format("reset_sequence: {}", e.what()));
    throw;
  }
  if (!c.links_.front()->connection->send(net::ResetSequence{{static_cast<uint32_t>(seq_id)}, false}))
    fail("reset_sequence: cannot send to {}: {}", c.name(0),
         c.links_.front()->connection->close_info() ? c.links_.front()->connection->close_info()->reason
                                                    : "the connection is closing");
}

int64_t RemoteLayers::n_ctx() const { return chain_.n_ctx_; }

}  // namespace baton::pipeline
