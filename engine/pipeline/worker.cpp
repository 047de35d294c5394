// engine-worker's engine: its lifecycle (listen, the worker thread, stop), the dispatch of every
// message in arrival order (holding chain messages until the Commit), and the small replies
// (Commit, Rollback, ResetSequence, StatsRequest, status Heartbeat). Loading a range is in
// worker_prepare.cpp, a pass in worker_forward.cpp.
#include "engine/pipeline/worker.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "engine/base/error.h"
#include "engine/cluster/node_probe.h"
#include "engine/cluster/node_readings.h"
#include "engine/pipeline/wire.h"
#include "engine/pipeline/worker_load.h"
#include "gguf/gguf_file.h"
#include "gguf/model_identity.h"

namespace baton::pipeline {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {
// More than any coordinator keeps in flight; beyond it the sender is not waiting for a Commit.
constexpr size_t kMaxHeldBeforeCommit = 256;

bool is_chain_message(const net::Message& m) {
  return std::holds_alternative<net::Forward>(m) || std::holds_alternative<net::ResetSequence>(m);
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

}  // namespace baton::pipeline
