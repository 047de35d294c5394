// The worker's two-phase load: a Prepare is answered Ready (the layer range loaded, the next hop
// connected) or Failed with why; a node held by another coordinator is refused unless taken
// over; a committed load is re-adopted without reloading when the Prepare asks for the same.
#include <spdlog/spdlog.h>

#include <chrono>

#include "engine/pipeline/wire.h"
#include "engine/pipeline/worker.h"
#include "engine/pipeline/worker_load.h"
#include "engine/runtime/thread_count.h"
#include "gguf/gguf_file.h"
#include "gguf/model_identity.h"
#include "gguf/shard.h"
#include "kernels/core/thread_pool.h"

namespace baton::pipeline {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

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

}  // namespace baton::pipeline
