#include "engine/api/served_model.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "engine/api/local_cluster_view.h"
#include "engine/api/static_cluster_view.h"
#include "engine/pipeline/model_runner.h"
#include "engine/registry/dynamic_cluster.h"
#include "engine/runtime/draft_model.h"
#include "gguf/file_type.h"

namespace baton::api {

// With `nodes: auto`: re-plans the cluster when its membership changes. While requests run, a
// lost planned node fails their next pass and the scheduler's repair (DynamicCluster::recover)
// re-plans and has them rebuilt; while idle, this thread re-plans on the scheduler's thread
// (Scheduler::run_exclusive) after a node was lost or joined. While no plan fits, new requests
// get 503 with the reason.
class Replanner {
 public:
  Replanner(registry::DynamicCluster& cluster, serving::Scheduler& scheduler)
      : cluster_(cluster), scheduler_(scheduler), thread_([this] { run(); }) {}
  ~Replanner() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  // Requests are refused exactly while the cluster says it cannot serve: the cluster tells the
  // scheduler before /health shows it (DynamicCluster::set_servable_listener).
  static void refuse_while_unservable(registry::DynamicCluster& cluster, serving::Scheduler& scheduler) {
    cluster.set_servable_listener([&scheduler](const std::string& refusal) {
      scheduler.set_unavailable(refusal.empty() ? std::string() : fmt::format("the cluster cannot serve: {}", refusal));
    });
  }

 private:
  void run() {
    using namespace std::chrono_literals;
    uint64_t seen = 0, settled = 0;  // settled: the registry version a re-plan found nothing to change at
    while (!stopped(0ms)) {
      seen = cluster_.registry().wait_for_change(seen, 250ms);
      if (stopped(0ms) || !cluster_.replan_wanted()) continue;
      const bool lost = cluster_.lost_planned_node();
      if (!lost && seen == settled) continue;  // e.g. a node the planner leaves out on purpose
      // Only while idle: running requests meet a lost node in their next pass and are repaired
      // there (DynamicCluster::recover), and a join must not pause them.
      const auto stats = scheduler_.stats();
      if (stats.active > 0 || stats.queued > 0) continue;
      try {
        const bool changed = scheduler_.run_exclusive([this] { return cluster_.replan(); });
        if (!changed) settled = seen;
      } catch (const std::exception&) {
        stopped(1000ms);  // retried after a pause (and at once on the next registry change)
      }
    }
  }
  bool stopped(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, wait, [&] { return stopping_; });
    return stopping_;
  }

  registry::DynamicCluster& cluster_;
  serving::Scheduler& scheduler_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// A fixed node list (engine-coordinator --config without `nodes: auto`): when a worker's link is
// lost (the worker died, restarted, or another coordinator took it over with --take-over), new
// requests are refused with 503 and the reason, and this thread reconnects that node and loads
// the plan again (Cluster::repair(); the other workers re-adopt their ranges) every second
// until it works, then requests are served again. A pass running when the link is lost tries
// one repair at once (the scheduler's runner repair), so a quick restart is a pause.
class StaticRepairer {
 public:
  StaticRepairer(pipeline::Cluster& cluster, serving::Scheduler& scheduler) : cluster_(cluster), scheduler_(scheduler) {
    scheduler_.set_runner_repair([this](const std::string& error) {
      if (!cluster_.broken()) return false;  // not a lost node: the requests end with the error
      refuse(error);
      return repair_now();
    });
    thread_ = std::thread([this] { run(); });
  }
  ~StaticRepairer() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void run() {
    using namespace std::chrono_literals;
    // 50 ms: a lost link turns into 503 refusals within that of /health showing it (a request
    // that arrives in between meets the loss in its pass: 502, or a pause if the repair works).
    while (!stopped(50ms)) {
      const auto broken = cluster_.broken();
      if (!broken) continue;
      if (refusing().empty()) refuse(*broken);  // later, the last attempt's error says more
      try {
        scheduler_.run_exclusive([this] { return repair_now(); });
      } catch (const std::exception& e) {
        refuse(e.what());  // the same text as broken() then: logged once, not every second
        stopped(1000ms);
      }
    }
  }
  // On the scheduler's thread, no pass in flight (the view's Stats round trips run there too).
  bool repair_now() {
    const bool repaired = cluster_.repair();
    if (!cluster_.broken()) {  // repaired now, or by the other caller meanwhile
      std::lock_guard lock(mutex_);
      if (!refusal_.empty()) spdlog::info("cluster event=repaired reason=\"every node is loaded again: serving\"");
      refusal_.clear();
      scheduler_.set_unavailable("");
    }
    return repaired;
  }
  std::string refusing() {
    std::lock_guard lock(mutex_);
    return refusal_;
  }
  // Logs the first refusal at once, a changed one at most every 10 s (the attempts' errors vary
  // in their details, e.g. the number of connection attempts).
  void refuse(const std::string& why) {
    std::lock_guard lock(mutex_);
    if (why == refusal_) return;
    const auto now = std::chrono::steady_clock::now();
    if (refusal_.empty()) {
      spdlog::error("cluster event=unavailable reason=\"{}\"; requests get 503 until the node is back", why);
      last_log_ = now;
    } else if (now - last_log_ >= std::chrono::seconds(10)) {
      spdlog::warn("cluster event=still-unavailable reason=\"{}\"", why);
      last_log_ = now;
    }
    refusal_ = why;
    scheduler_.set_unavailable(fmt::format("the cluster cannot serve: {}", why));
  }
  bool stopped(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, wait, [&] { return stopping_; });
    return stopping_;
  }

  pipeline::Cluster& cluster_;
  serving::Scheduler& scheduler_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string refusal_;                             // guarded by mutex_: what requests are refused with ("" = served)
  std::chrono::steady_clock::time_point last_log_;  // guarded by mutex_
  std::thread thread_;
};

struct ServedModel::Parts {
  std::unique_ptr<registry::DynamicCluster> dynamic;  // `nodes: auto`; owns its chains and the view
  pipeline::ModelRunner runner;                       // -m FILE (runner.local) or a fixed node list (runner.cluster)
  std::unique_ptr<LocalClusterView> local_view;
  std::unique_ptr<StaticClusterView> static_view;
  std::unique_ptr<Replanner> replanner;      // stopped before the scheduler
  std::unique_ptr<DraftModel> draft;         // --model-draft, in this process
  std::unique_ptr<StaticRepairer> repairer;  // likewise
};

namespace {

// The scheduler's options, with the draft model (--model-draft) loaded into `slot` when asked
// for: it keeps a KV slot per scheduler slot, on as many threads as the layers.
serving::SchedulerOptions scheduler_options(const ServeOptions& options, std::unique_ptr<DraftModel>& slot,
                                            const tokenizer::Tokenizer& target, int64_t n_ctx) {
  serving::SchedulerOptions so = options.scheduler;
  if (options.model_draft.empty()) {
    if (so.speculation.mode == SpecMode::kDraft) fail("--spec draft needs --model-draft FILE");
    return so;
  }
  LocalModelOptions lo;
  lo.threads = options.threads;
  lo.n_ctx = n_ctx;
  lo.max_sequences = so.slots;
  slot = std::make_unique<DraftModel>(options.model_draft, lo, target);
  so.speculation.mode = SpecMode::kDraft;
  so.draft_model = slot.get();
  return so;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

ModelInfo describe_model(const gguf::GgufFile& file, const ModelConfig& config, const std::string& alias,
                         int64_t n_ctx) {
  ModelInfo m;
  m.id = alias.empty() ? std::filesystem::path(file.path()).stem().string() : alias;
  m.path = file.path();
  struct stat st {};
  if (::stat(file.path().c_str(), &st) == 0) m.created = static_cast<int64_t>(st.st_mtime);
  m.size_bytes = file.total_file_bytes();
  if (auto ft = file.metadata().find_uint("general.file_type")) m.quantization = std::string(gguf::file_type_name(*ft));
  // Without (or with an unknown) file type: the type holding most of the bytes.
  std::map<GgmlType, uint64_t> bytes_by_type;
  for (const auto& t : file.tensors()) {
    m.n_params += t.n_elements();
    bytes_by_type[t.type] += t.n_bytes;
  }
  if (m.quantization.empty() && !bytes_by_type.empty()) {
    auto best = bytes_by_type.begin();
    for (auto it = bytes_by_type.begin(); it != bytes_by_type.end(); ++it)
      if (it->second > best->second) best = it;
    m.quantization = upper(ggml_type_name(best->first));
  }
  m.n_ctx = n_ctx;
  m.n_ctx_train = config.n_ctx_train;
  m.n_layer = config.n_layer;
  m.kv_dim = config.kv_dim();
  m.n_vocab = config.n_vocab;
  m.arch = config.arch_name;
  return m;
}

void ServedModel::init_common(const gguf::GgufFile& file, const ModelConfig& config, const ServeOptions& options,
                              int64_t n_ctx, const std::string& default_id) {
  info_ = describe_model(file, config, options.alias.empty() ? default_id : options.alias, n_ctx);
  try {
    chat_template_ = options.chat_template.empty() ? ChatTemplate::from_metadata(file.metadata())
                                                   : ChatTemplate::from_name(options.chat_template);
  } catch (const Error& e) {
    if (!options.chat_template.empty()) throw;  // a bad --chat-template is the operator's error
    chat_template_error_ = e.what();
    spdlog::warn("chat completions disabled: {}", chat_template_error_);
  }
}

std::unique_ptr<ServedModel> ServedModel::open_local(const std::string& path, const ServeOptions& options) {
  std::unique_ptr<ServedModel> s(new ServedModel());
  s->parts_ = std::make_unique<Parts>();
  pipeline::RunnerOptions ro;
  ro.max_sequences = options.scheduler.slots;
  s->parts_->runner = pipeline::open_runner(std::make_shared<ModelFront>(path, front_options(options)), nullptr, ro);
  auto& model = s->parts_->runner.local;
  s->tokenizer_ = &model->tokenizer();
  s->init_common(*model->file(), model->config(), options, model->layers().n_ctx(),
                 std::filesystem::path(path).stem().string());
  s->scheduler_ = std::make_unique<serving::Scheduler>(
      model->head(), model->layers(), model->tokenizer(),
      scheduler_options(options, s->parts_->draft, model->tokenizer(), model->layers().n_ctx()));
  NodeView node;
  node.id = "coordinator";
  node.role = "coordinator";
  node.first_layer = 0;
  node.last_layer = model->config().n_layer - 1;
  node.memory_total_bytes = machine_memory_bytes();
  node.memory_used_bytes = model->file()->total_file_bytes();
  serving::Scheduler* sched = s->scheduler_.get();
  s->parts_->local_view =
      std::make_unique<LocalClusterView>(node, model->config().n_layer, [sched] { return sched->stats(); });
  s->view_ = s->parts_->local_view.get();
  return s;
}

std::unique_ptr<ServedModel> ServedModel::open_cluster(const ClusterConfig& config, const ServeOptions& options) {
  std::unique_ptr<ServedModel> s(new ServedModel());
  s->parts_ = std::make_unique<Parts>();
  pipeline::ClusterOptions co;
  co.threads = options.threads;
  co.n_ctx = options.n_ctx;
  co.max_sequences = options.scheduler.slots;
  co.take_over = options.take_over;
  co.request_timeout = options.request_timeout;
  ModelFrontOptions fo = front_options(options);
  fo.placement = WeightPlacement::kResident;  // the head only: the layers are the workers'
  auto front = std::make_shared<ModelFront>(config.model, fo);
  if (config.nodes_auto) {
    // Workers register (engine-worker --join / --registry); see docs/REGISTRY.md. The front
    // (head, tokenizer) and runner are the DynamicCluster's: they outlive every re-plan.
    registry::DynamicClusterOptions ro;
    ro.cluster = co;
    auto& dyn = *(s->parts_->dynamic = std::make_unique<registry::DynamicCluster>(config, ro, front));
    dyn.start();
    s->tokenizer_ = &dyn.tokenizer();
    s->init_common(*dyn.file(), dyn.model_config(), options, dyn.n_ctx(),
                   std::filesystem::path(config.model).stem().string());
    auto& sched = *(s->scheduler_ = std::make_unique<serving::Scheduler>(
                        dyn.head(), dyn.layers(), dyn.tokenizer(),
                        scheduler_options(options, s->parts_->draft, dyn.tokenizer(), dyn.n_ctx())));
    Replanner::refuse_while_unservable(dyn, sched);
    // Re-plans run on the scheduler's thread (run_exclusive, the runner repair): it swaps to
    // each new pipeline there.
    dyn.set_layers_listener([&sched](LayerRunner& layers) { sched.replace_runner(layers); });
    sched.set_runner_repair([&dyn](const std::string& error) { return dyn.recover(error); });
    s->parts_->replanner = std::make_unique<Replanner>(dyn, sched);
    s->view_ = &dyn;
    return s;
  }
  pipeline::RunnerOptions ro;
  ro.max_sequences = co.max_sequences;
  ro.cluster = co;
  s->parts_->runner = pipeline::open_runner(front, &config, ro);
  pipeline::Cluster* cluster = s->parts_->runner.cluster.get();
  s->tokenizer_ = &cluster->tokenizer();
  s->init_common(*cluster->file(), cluster->config(), options, cluster->n_ctx(),
                 std::filesystem::path(config.model).stem().string());
  s->scheduler_ = std::make_unique<serving::Scheduler>(
      cluster->head(), cluster->layers(), cluster->tokenizer(),
      scheduler_options(options, s->parts_->draft, cluster->tokenizer(), cluster->n_ctx()));
  NodeView node;
  node.id = "coordinator";
  node.role = "coordinator";
  node.memory_total_bytes = machine_memory_bytes();
  node.memory_used_bytes = cluster->file()->total_file_bytes();
  s->parts_->static_view = std::make_unique<StaticClusterView>(*cluster, *s->scheduler_, node);
  s->view_ = s->parts_->static_view.get();
  s->parts_->repairer = std::make_unique<StaticRepairer>(*cluster, *s->scheduler_);
  return s;
}

ServedModel::~ServedModel() {
  if (parts_) {
    parts_->replanner.reset();  // no re-plan or repair while the scheduler goes
    parts_->repairer.reset();
  }
  scheduler_.reset();  // ends running requests before the layers go away
}

void ServedModel::set_address(const std::string& address) {
  if (parts_->local_view) parts_->local_view->set_address(address);
  if (parts_->static_view) parts_->static_view->set_coordinator_address(address);
}

std::vector<pipeline::StageStats> ServedModel::stage_stats() const {
  if (parts_->static_view) return parts_->static_view->stage_stats();
  return {};
}

std::optional<pipeline::ClusterMetrics> ServedModel::cluster_metrics() const {
  if (parts_->runner.cluster) return parts_->runner.cluster->metrics();
  if (parts_->dynamic) return parts_->dynamic->metrics();
  return std::nullopt;
}

std::vector<StageAssignment> ServedModel::plan() const {
  if (parts_->runner.cluster) return parts_->runner.cluster->plan();
  if (parts_->dynamic) return parts_->dynamic->node_plan();  // the loaded chain's stages
  return {};
}

}  // namespace baton::api
