#include "engine/pipeline/worker.h"

#include <time.h>

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "engine/base/error.h"
#include "engine/cluster/stage_assignment.h"
#include "engine/cluster/node_probe.h"
#include "engine/cluster/node_readings.h"
#include "engine/model/model_config.h"
#include "engine/pipeline/wire.h"
#include "engine/runtime/layer_runner.h"
#include "engine/runtime/thread_count.h"
#include "gguf/gguf_file.h"
#include "gguf/model_identity.h"
#include "gguf/shard.h"
#include "kernels/core/thread_pool.h"

namespace baton::pipeline {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Worker::Load {
  uint64_t load_id = 0;
  bool committed = false;
  ModelConfig config;
  LayerSpan layers;  // what the Prepare asked for (the wire's inclusive range, converted once)
  std::unique_ptr<Stage> stage;
  net::ConnectionPtr coordinator;
  std::string holder;  // the coordinator instance that made it (Prepare option `coordinator`)
  // Committed once: a later Prepare of the same holder (or, kept without a coordinator, of any)
  // for the same layers re-adopts the stage, and a Rollback of such a re-adoption keeps it.
  bool reusable = false;
  net::ConnectionPtr next;  // nullptr: last stage
  std::string next_name;
  net::DType activations = net::DType::kF32;  // what this stage sends on
  int max_sequences = 1;
  // Forwards and ResetSequences that reached this stage before its Commit, in arrival order:
  // the Commit comes straight from the coordinator while they come through the earlier stages,
  // and two TCP connections keep no order between them.
  std::vector<net::Incoming> held;
};

namespace {
// More than any coordinator keeps in flight; beyond it the sender is not waiting for a Commit.
constexpr size_t kMaxHeldBeforeCommit = 256;

bool is_chain_message(const net::Message& m) {
  return std::holds_alternative<net::Forward>(m) || std::holds_alternative<net::ResetSequence>(m);
}

std::string prepare_option(const net::Prepare& p, std::string_view key) {
  for (const auto& kv : p.options)
    if (kv.key == key) return kv.value;
  return {};
}

// "coordinator 'engine-coordinator pid 12 on laptop-01' (connected from 10.0.0.5:41234)"
std::string describe_holder(const std::string& holder, const net::ConnectionPtr& connection) {
  return fmt::format("coordinator '{}' (connected from {})", holder.empty() ? std::string("unnamed") : holder,
                     connection ? connection->peer().address : std::string("?"));
}
}  // namespace

Worker::Worker(WorkerOptions options) : options_(std::move(options)) {
  net::NodeOptions no;
  no.node_id = options_.node_id;
  no.role = net::Role::kWorker;
  no.auth = options_.auth;
  no.clock_probe_interval = kClockProbeInterval;
  no.test_write_delay = options_.test_write_delay;
  no.on_rejected = [id = options_.node_id](const net::PeerInfo& peer, const net::CloseInfo& info) {
    spdlog::warn("{}: refused connection from {}: {}", id, peer.address, info.reason);
  };
  node_ = std::make_unique<net::Node>(std::move(no), inbox_.handler());
  port_ = node_->listen(options_.host, options_.port);
  thread_ = std::thread([this] { run(); });
}

Worker::~Worker() { stop(); }

void Worker::stop() {
  if (stopping_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  node_->stop();
  load_.reset();
}

void Worker::run() {
  while (!stopping_) {
    auto in = inbox_.pop(100ms);
    if (!in) {
      // A load lives only as long as the coordinator that made it (checked once its queued
      // messages, e.g. a Rollback, have been handled).
      if (load_ && !load_->coordinator->is_open() && !(options_.keep_load_without_coordinator && load_->committed))
        release("coordinator disconnected");
      continue;
    }
    dispatch(*in);
  }
  release("worker stopping");
}

void Worker::dispatch(net::Incoming& in) {
  try {
    if (load_ && !load_->committed && is_chain_message(in.message)) {
      if (load_->held.size() >= kMaxHeldBeforeCommit)
        fail("{} messages (the latest a {}) arrived before load {} was committed", load_->held.size() + 1,
             net::message_name(in.message), load_->load_id);
      load_->held.push_back(std::move(in));
      return;
    }
    handle(in);
  } catch (const std::exception& e) {
    // Never lets a request kill the worker: tell the sender and go on.
    spdlog::error("{}: {} from {} failed: {}", options_.node_id, net::message_name(in.message),
                  in.connection->peer().address, e.what());
    report(in.connection, ErrorCode::kBadRequest,
           fmt::format("node {}: {} failed: {}", options_.node_id, net::message_name(in.message), e.what()));
  }
}

void Worker::report(const net::ConnectionPtr& from, net::ErrorCode code, const std::string& message,
                    std::optional<uint64_t> micro_batch) {
  const net::ConnectionPtr& to =
      load_ && load_->coordinator && load_->coordinator->is_open() ? load_->coordinator : from;
  if (to) to->send(net::ErrorReport{code, message, micro_batch});
}

void Worker::release(const char* why) {
  if (!load_) return;
  spdlog::info("{}: releasing load {} ({})", options_.node_id, load_->load_id, why);
  if (load_->next) load_->next->close(why);
  load_.reset();
  hidden_ = {};
  out_rows_ = {};
}

void Worker::handle(net::Incoming& in) {
  const auto& from = in.connection;
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, net::Prepare>) {
          on_prepare(m, from);
        } else if constexpr (std::is_same_v<T, net::Commit>) {
          if (load_ && load_->load_id == m.load_id) {
            load_->committed = true;
            load_->reusable = true;
            spdlog::info("{}: load {} committed, serving layers {}..{}", options_.node_id, m.load_id,
                         load_->layers.begin, load_->layers.last());
            auto held = std::move(load_->held);
            if (!held.empty())
              spdlog::info("{}: running {} messages that arrived before the Commit", options_.node_id, held.size());
            for (auto& h : held) dispatch(h);
          } else {
            report(from, ErrorCode::kBadRequest,
                   fmt::format("node {}: Commit of unknown load {}", options_.node_id, m.load_id));
          }
        } else if constexpr (std::is_same_v<T, net::Rollback>) {
          if (load_ && load_->load_id == m.load_id) {
            // A re-adopted stage stays with its holder (a coordinator repairing its chain tries
            // again); anything else is released.
            if (load_->reusable && load_->coordinator && load_->coordinator->is_open()) {
              load_->committed = false;
              load_->held.clear();
              spdlog::info("{}: load {} rolled back; layers kept for their coordinator", options_.node_id, m.load_id);
            } else {
              release("rollback");
            }
          }
        } else if constexpr (std::is_same_v<T, net::Forward>) {
          on_forward(m, in.body, from, in.received_at == Clock::time_point{} ? Clock::now() : in.received_at);
        } else if constexpr (std::is_same_v<T, net::ResetSequence>) {
          // Applied here, then passed along the chain on the same connection as the Forwards,
          // so it reaches every stage after the passes sent before it and before those after.
          if (load_ && load_->stage) {
            if (m.all) load_->stage->reset_all();
            else
              for (uint32_t id : m.seq_ids) load_->stage->reset_sequence(id);
            if (load_->next && !load_->next->send(m))
              report(
                  from, ErrorCode::kNextHop,
                  fmt::format("node {}: cannot pass ResetSequence to next hop {}", options_.node_id, load_->next_name));
          }
        } else if constexpr (std::is_same_v<T, net::StatsRequest>) {
          net::Stats s;
          s.entries = {{"compute_ms", compute_ms_},
                       {"busy_ms", busy_ms_},
                       {"forwards", static_cast<double>(forwards_)},
                       {"tokens", static_cast<double>(tokens_)},
                       {"bytes_in", static_cast<double>(bytes_in_)},
                       {"bytes_out", static_cast<double>(bytes_out_)}};
          // The machine's readings too (a static cluster's coordinator has no heartbeats).
          for (auto& r : registry::read_node_readings()) s.entries.push_back(std::move(r));
          from->send(s);
        } else if constexpr (std::is_same_v<T, net::Heartbeat>) {
          // A status query (engine-ctl doctor): answered with this worker's own record (model
          // identity, servable layers, memory); it loads nothing and keeps any load it has.
          if (!file_) {
            file_ = gguf::GgufFile::open(options_.model_path);
            identity_ = gguf::model_identity(*file_);
          }
          registry::ProbeInput probe;
          probe.node_id = options_.node_id;
          probe.host = options_.host;
          probe.port = port_;
          probe.threads =
              options_.threads > 0 ? options_.threads : static_cast<int>(std::thread::hardware_concurrency());
          from->send(net::Heartbeat{registry::probe_node(probe, *file_)});
        } else if constexpr (std::is_same_v<T, net::Goodbye>) {
          from->close("goodbye");
        } else {
          spdlog::warn("{}: ignoring unexpected {} from {}", options_.node_id, net::message_name(in.message),
                       from->peer().address);
        }
      },
      in.message);
}

void Worker::on_prepare(const net::Prepare& p, const net::ConnectionPtr& from) {
  const auto t0 = Clock::now();
  const std::string holder = prepare_option(p, kOptionCoordinator);
  const bool held_by_other = load_ && load_->coordinator && load_->coordinator->is_open() &&
                             load_->coordinator->id() != from->id() && load_->holder != holder;
  if (held_by_other) {
    const std::string current = describe_holder(load_->holder, load_->coordinator);
    const std::string layers =
        load_->stage ? fmt::format("layers {}..{}", load_->layers.begin, load_->layers.last()) : std::string("a load");
    if (prepare_option(p, kOptionTakeOver) != "1") {
      const std::string reason = fmt::format(
          "node {} belongs to {}, which holds {}: stop that coordinator, or take the node over with --take-over",
          options_.node_id, current, layers);
      spdlog::warn("{}: refusing load {} from {}: {}", options_.node_id, p.load_id, describe_holder(holder, from),
                   reason);
      from->send(net::Failed{p.load_id, reason});
      return;
    }
    const std::string notice = fmt::format(
        "node {} was taken over by {} (--take-over): its {} for this coordinator "
        "are released",
        options_.node_id, describe_holder(holder, from), layers);
    spdlog::warn("{}: taken over: {} replaces {}", options_.node_id, describe_holder(holder, from), current);
    // Tell the displaced coordinator why before its connection closes (close() flushes).
    load_->coordinator->send(net::ErrorReport{ErrorCode::kTakenOver, notice});
    load_->coordinator->close(notice);
    release("taken over");
  }
  // Here any load left is this coordinator's, or its holder has gone.
  const bool same_holder = load_ && load_->holder == holder;
  if ((options_.keep_load_without_coordinator || same_holder) && try_readopt(p, from, holder)) return;
  release("a new Prepare replaces it");
  auto refuse = [&](const std::string& reason) {
    spdlog::warn("{}: refusing load {}: {}", options_.node_id, p.load_id, reason);
    from->send(net::Failed{p.load_id, reason});
  };
  try {
    if (!file_) {
      file_ = gguf::GgufFile::open(options_.model_path);
      identity_ = gguf::model_identity(*file_);
    }
    if (!is_activation_dtype(p.activation_dtype)) {
      refuse(fmt::format("node {}: activations cannot travel as {}", options_.node_id,
                         net::to_string(p.activation_dtype)));
      return;
    }
    if (identity_ != p.model_identity) {
      refuse(fmt::format("node {} has model {} with identity {}, the coordinator's model has identity {}",
                         options_.node_id, options_.model_path, identity_, p.model_identity));
      return;
    }
    gguf::require_layers(*file_, p.layer_first, p.layer_last);
    StageOptions so;
    so.placement = options_.placement;
    so.n_ctx = static_cast<int64_t>(p.n_ctx);  // ranges checked by net::check_message
    so.max_sequences = static_cast<int>(p.max_sequences);
    if (!pool_)
      pool_ = std::make_unique<kernels::ThreadPool>(options_.threads > 0 ? options_.threads : default_thread_count());
    auto load = std::make_unique<Load>();
    load->load_id = p.load_id;
    load->config = ModelConfig::from_metadata(file_->metadata());
    load->layers = LayerSpan::from_inclusive(p.layer_first, p.layer_last);
    load->stage = std::make_unique<Stage>(file_, load->config, load->layers.begin, load->layers.end, so, *pool_);
    load->coordinator = from;
    load->holder = holder;
    load->activations = p.activation_dtype;
    load->max_sequences = so.max_sequences;
    if (p.next_hop) {
      load->next_name = fmt::format("{} ({}:{})", p.next_hop->node_id, p.next_hop->host, p.next_hop->port);
      net::ConnectOptions co;
      co.deadline = 5000ms;
      try {
        load->next = node_->connect(p.next_hop->host, p.next_hop->port, co);
      } catch (const std::exception& e) {
        refuse(fmt::format("node {} cannot reach next hop {}: {}", options_.node_id, load->next_name, e.what()));
        return;
      }
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    net::Ready ready{p.load_id, load->stage->weight_bytes() + load->stage->kv_cache_bytes(), static_cast<uint64_t>(ms)};
    spdlog::info("{}: prepared load {}: layers {}..{}, {} bytes, {} ms", options_.node_id, p.load_id,
                 load->layers.begin, load->layers.last(), ready.memory_bytes, ms);
    load_ = std::move(load);
    from->send(ready);
  } catch (const std::exception& e) {
    refuse(fmt::format("node {}: {}", options_.node_id, e.what()));
  }
}

bool Worker::try_readopt(const net::Prepare& p, const net::ConnectionPtr& from, const std::string& holder) {
  if (!load_ || !load_->reusable || identity_ != p.model_identity || load_->activations != p.activation_dtype ||
      load_->layers != LayerSpan::from_inclusive(p.layer_first, p.layer_last))
    return false;
  if (static_cast<int64_t>(p.n_ctx) != load_->stage->n_ctx() ||
      static_cast<int>(p.max_sequences) != load_->max_sequences)
    return false;
  const std::string next_name =
      p.next_hop ? fmt::format("{} ({}:{})", p.next_hop->node_id, p.next_hop->host, p.next_hop->port) : "";
  if (next_name != load_->next_name || (load_->next && !load_->next->is_open())) {
    if (load_->next) load_->next->close("next hop changed");
    load_->next = nullptr;
    load_->next_name = next_name;
    if (p.next_hop) {
      net::ConnectOptions co;
      co.deadline = 5000ms;
      try {
        load_->next = node_->connect(p.next_hop->host, p.next_hop->port, co);
      } catch (const std::exception&) {
        return false;  // a full Prepare says why
      }
    }
  }
  load_->stage->reset_all();
  load_->load_id = p.load_id;
  load_->committed = false;
  load_->held.clear();
  load_->coordinator = from;
  load_->holder = holder;
  spdlog::info("{}: re-adopted load {}: layers {}..{} already loaded, no reload", options_.node_id, p.load_id,
               load_->layers.begin, load_->layers.last());
  from->send(net::Ready{p.load_id, load_->stage->weight_bytes() + load_->stage->kv_cache_bytes(), 0});
  return true;
}

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
  timespec cpu0{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
  try {
    load_->stage->forward(batch, hidden_.data());
  } catch (const std::exception& e) {
    report(from, ErrorCode::kForwardFailed,
           fmt::format("node {}: micro-batch {} failed: {}", options_.node_id, f.micro_batch_id, e.what()),
           f.micro_batch_id);
    return;
  }
  const double compute_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (spdlog::should_log(spdlog::level::debug)) {
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
