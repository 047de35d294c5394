// engine-bench: prompt-processing and generation speed, printed like llama-bench so tools
// that read its tables read ours:
//   engine-bench -m FILE -p 128 -n 64 -t 2 [-d 0,2048] [-r 5] [-o md|json]
//   engine-bench --config cluster.yaml ...   (layers on the cluster; adds, measured, per-stage
//                                             compute ms, per-hop bytes and the hops' network ms
//                                             per token)
// ppN: a prompt of N tokens through every layer (logits of the last only), in chunks of -b
// tokens sent as --prefill-chunk pieces (several in flight through a cluster); its time is
// the prompt's time to first token, printed per test;
// tgN: N single-token steps from an empty context, each with its logits.
// -d D (as llama-bench's -d): both start after D context tokens ("pp512 @ d2048"), which are
// filled once per depth, untimed; every repetition rewrites the positions after them.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <cmath>
#include <numeric>
#include <random>

#include "tools/common_cli.h"
#include "tools/logging.h"
#include "engine/cluster/cluster_config.h"
#include "engine/pipeline/cluster.h"
#include "engine/pipeline/model_runner.h"
#include "engine/model/row_hint.h"
#include "gguf/file_type.h"
#include "gguf/shard.h"
#include "engine/runtime/local_model.h"
#include "engine/runtime/prompt_runner.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string model, config, output = "md";
  std::vector<int> n_prompt = {128}, n_gen = {64}, threads = {0}, n_depth = {0};
  int reps = 5;
  bool mmap = false;  // keep weights in the file mapping
  int n_batch = 512, prefill_chunk = 0;
  std::vector<int> verify_rows;   // speculative verification passes of these many rows
  bool take_over = false;         // --config: take workers held by another coordinator
  double request_timeout_s = 30;  // --config: one forward pass through the chain
  int max_in_flight = 0;          // --config: passes in flight; 0: the chain's default
};

struct Stats {
  double mean = 0, sd = 0;
};

Stats stats(const std::vector<double>& v) {
  Stats s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / (v.size() - 1)) : 0;
  return s;
}

// What the bench needs, from a LocalModel or a Cluster.
struct ModelView {
  baton::ModelHead& head;
  baton::LayerRunner& layers;
  const baton::ModelConfig& config;
};

class Bench {
 public:
  Bench(ModelView m) : m_(m), rng_(42) {}

  // Empties the context and fills positions [0, depth) with random tokens, in batches.
  void set_depth(int depth) {
    m_.layers.reset_sequence(1);
    for (int first = 0; first < depth; first += kFillBatch) {
      const int n = std::min(kFillBatch, depth - first);
      auto tokens = random_tokens(n);
      baton::TokenBatch batch;
      for (int i = 0; i < n; ++i) batch.add(1, first + i, i + 1 == n);
      run(batch, tokens);
    }
    depth_ = depth;
  }
  int depth() const { return depth_; }

  // Seconds for a prompt of n tokens after the context, to the logits of its last token (its
  // time to first token): cut into n_batch chunks, sent as pieces with several in flight on a
  // pipeline (engine/runtime/prompt_runner.h).
  double prompt(int n, const baton::PromptCut& cut) {
    auto tokens = random_tokens(n);
    auto t0 = Clock::now();
    baton::run_prompt_pieces(m_.head, m_.layers, 1, tokens, depth_, cut, out_);
    logits_.resize(static_cast<size_t>(m_.head.n_vocab()));
    m_.head.logits(out_.data(), 1, logits_.data());
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  // Seconds for n single-token steps after the context.
  double generate(int n) {
    auto tokens = random_tokens(n);
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      baton::TokenBatch batch;
      batch.add(1, depth_ + i, true);
      run(batch, std::span<const int32_t>(&tokens[i], 1));
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  // Seconds for n speculative verification passes of `rows` tokens each (a generated token and
  // its draft: single-row numerics, logits of every row), after the context. Pass i starts at
  // position depth + i, as a generated token would (the draft's rows are rewritten by the next
  // pass), so that tv and tg read the same contexts.
  double verify(int n, int rows) {
    auto tokens = random_tokens(n * rows);
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      baton::TokenBatch batch;
      for (int j = 0; j < rows; ++j) batch.add(1, depth_ + i + j, true, baton::RowHint{}.encode());
      run(batch, std::span<const int32_t>(&tokens[static_cast<size_t>(i * rows)], static_cast<size_t>(rows)));
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

 private:
  std::vector<int32_t> random_tokens(int n) {
    std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(m_.head.n_vocab() - 1));
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) x = d(rng_);
    return t;
  }
  void run(const baton::TokenBatch& batch, std::span<const int32_t> tokens) {
    hidden_.resize(tokens.size() * static_cast<size_t>(m_.config.n_embd));
    m_.head.embed(tokens, hidden_.data());
    m_.layers.forward(batch, hidden_, out_);
    logits_.resize(static_cast<size_t>(m_.head.n_vocab()) * batch.n_outputs());
    m_.head.logits(out_.data(), static_cast<int64_t>(batch.n_outputs()), logits_.data());
  }

  static constexpr int kFillBatch = 512;
  ModelView m_;
  std::mt19937 rng_;
  int depth_ = 0;
  std::vector<float> hidden_, out_, logits_;
};

std::string human_size(double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", bytes / (1024.0 * 1024 * 1024));
  return fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024));
}

std::string model_type(const baton::gguf::GgufFile& file, const baton::ModelConfig& config) {
  const auto& md = file.metadata();
  std::string ftype = "?";
  if (auto ft = md.find_uint("general.file_type"))
    if (auto name = baton::gguf::file_type_name(*ft); !name.empty()) ftype = name;
  return fmt::format("{} {}L {}", config.arch_name, config.n_layer, ftype);
}

// Per stage compute and residence ms per token, per hop network ms and bytes per token, and
// the network time of all hops per token, from the coordinator's measurements
// (Cluster::metrics(): each stage's own clock for its compute and residence, the
// coordinator's for the round trip; all hops = round trip - sum of residences, exact; each
// hop = receiver's receipt - sender's hand-over through the link's probed clock offset, with
// its error bound; see docs/PROTOCOL.md "Per-hop network time").
void print_stage_stats(const std::string& test, baton::pipeline::Cluster& cluster,
                       const baton::pipeline::ClusterMetrics& before, nlohmann::json& result, bool print) {
  const auto after = cluster.metrics();
  const double tokens = static_cast<double>(after.tokens - before.tokens);
  const double passes = static_cast<double>(after.passes - before.passes);
  if (tokens <= 0) return;
  nlohmann::json stages = nlohmann::json::array();
  nlohmann::json hop_list = nlohmann::json::array();
  const auto& plan = cluster.plan();
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& a = after.stages[i];
    const auto& b = before.stages[i];
    const double compute = (a.compute_ms - b.compute_ms) / tokens;
    const double residence = (a.residence_ms - b.residence_ms) / tokens;
    const auto& p = plan[i];
    stages.push_back({{"node", p.node_id},
                      {"layers", {p.layers.begin, p.layers.last()}},  // JSON: inclusive
                      {"compute_ms_per_token", compute},
                      {"residence_ms_per_token", residence}});
    if (print)
      fmt::print("# {}: stage {} ({}:{}, layers {}): compute {:.3f} ms/token, frame in -> out {:.3f} ms/token\n", test,
                 p.node_id, p.host, p.port, to_string(p.layers), compute, residence);
  }
  for (size_t h = 0; h < after.hops.size(); ++h) {
    const auto& a = after.hops[h];
    const baton::pipeline::HopMetrics b = h < before.hops.size() ? before.hops[h] : baton::pipeline::HopMetrics{};
    const double bytes = (a.bytes - b.bytes) / tokens;
    const double measured_tokens = static_cast<double>(a.tokens - b.tokens);
    nlohmann::json hop = {
        {"from", a.from}, {"to", a.to}, {"bytes_per_token", bytes}, {"passes_unmeasured", a.unmeasured - b.unmeasured}};
    if (measured_tokens > 0) {
      const double ms = (a.network_ms - b.network_ms) / measured_tokens;
      const double err = (a.error_ms - b.error_ms) / measured_tokens;
      hop["network_ms_per_token"] = ms;
      hop["error_ms_per_token"] = err;
      if (print)
        fmt::print("# {}: hop {} -> {}: {:.0f} bytes/token ({}), network {:.3f} ms/token +- {:.3f}\n", test, a.from,
                   a.to, bytes, after.activations, ms, err);
    } else if (print) {
      fmt::print("# {}: hop {} -> {}: {:.0f} bytes/token ({}), network not measured (no clock estimate)\n", test,
                 a.from, a.to, bytes, after.activations);
    }
    hop_list.push_back(std::move(hop));
  }
  const double rtt = (after.round_trip_ms - before.round_trip_ms) / tokens;
  const double net = (after.network_ms - before.network_ms) / tokens;
  if (print)
    fmt::print(
        "# {}: network, all {} hops: {:.3f} ms/token of a {:.3f} ms/token round trip ({:.0f} passes; measured: "
        "round trip - stage residences)\n",
        test, plan.size() + 1, net, rtt, passes);
  result["stages"] = stages;
  result["hops"] = hop_list;
  result["network_ms_per_token"] = net;
  result["round_trip_ms_per_token"] = rtt;
  result["activations"] = after.activations;
}

}  // namespace

int main(int argc, char** argv) {
  baton::tools::log_to_stderr("engine-bench");
  CLI::App app{"Measure prompt processing and generation speed (llama-bench compatible output)"};
  Options o;
  auto* m = app.add_option("-m,--model", o.model, "GGUF model");
  app.add_option("--config", o.config, "cluster YAML: run the layers on its engine-workers")->excludes(m);
  app.add_option("-p,--n-prompt", o.n_prompt, "prompt tokens (pp tests)")->delimiter(',');
  app.add_option("-n,--n-gen", o.n_gen, "generated tokens (tg tests)")->delimiter(',');
  app.add_option("-t,--threads", o.threads, "threads (0 = all cores)")->delimiter(',');
  app.add_option("-d,--n-depth", o.n_depth, "context tokens before each test (filled once, untimed)")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("-b,--batch-size", o.n_batch, "prompt tokens per chunk (the numerics' cut, as llama.cpp's ubatch)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--prefill-chunk", o.prefill_chunk,
                 "prompt tokens per pass, pieces of a chunk (same bits; 0: 128 / stages within [8, 32] on a cluster, "
                 "about 4 per stage for a short prompt; whole chunks locally)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--verify-rows", o.verify_rows,
                 "also time n-gen speculative verification passes of these many rows each (tests 'tv<rows>', "
                 "t/s = passes/s: compare with tg to see what a draft row costs)")
      ->delimiter(',')
      ->check(CLI::Range(1, 65));
  app.add_flag("--take-over", o.take_over, std::string("with --config: ") + baton::pipeline::kTakeOverHelp);
  app.add_option("--request-timeout", o.request_timeout_s,
                 std::string("with --config: ") + baton::pipeline::kRequestTimeoutHelp)
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--max-in-flight", o.max_in_flight,
                 "with --config: passes of a prompt in flight through the chain (0: the chain's default)")
      ->check(CLI::Range(0, 64));
  app.add_option("-r,--repetitions", o.reps, "repetitions per test")->check(CLI::Range(1, 1000));
  app.add_flag("--mmap", o.mmap,
               "keep the weights in the file mapping (no copy, no repacked layout): pages can be evicted and re-read "
               "under memory pressure, decode is slower");
  app.add_option("-o,--output", o.output, "md or json")->check(CLI::IsMember({"md", "json"}));
  baton::LogSettings log;
  baton::tools::add_log_options(app, log);
  if (auto code = baton::tools::parse_tool_command_line(app, argc, argv, "engine-bench")) return *code;
  try {
    baton::tools::apply_log_options("engine-bench", log);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  if (o.model.empty() && o.config.empty()) {
    fmt::print(stderr, "error: pass -m FILE or --config cluster.yaml\n");
    return 2;
  }
  try {
    nlohmann::json results = nlohmann::json::array();
    bool header = false;
    for (int threads : o.threads) {
      baton::LocalModelOptions lo;
      lo.threads = threads;
      if (o.mmap) lo.placement = baton::WeightPlacement::kMapped;
      const int max_rows = o.verify_rows.empty() ? 1 : *std::max_element(o.verify_rows.begin(), o.verify_rows.end());
      int max_tokens = std::max(*std::max_element(o.n_prompt.begin(), o.n_prompt.end()),
                                *std::max_element(o.n_gen.begin(), o.n_gen.end()) + max_rows);
      lo.n_ctx = std::max(256, *std::max_element(o.n_depth.begin(), o.n_depth.end()) + max_tokens + 16);
      // One front (file, tokenizer, head), then its layers here or on the workers of --config.
      std::optional<baton::ClusterConfig> cc;
      if (!o.config.empty()) {
        cc = baton::parse_cluster_config_file(o.config);
        if (o.model.empty()) o.model = cc->model;
      }
      baton::ModelFrontOptions fo = baton::front_options(lo);
      if (cc) fo.placement = baton::WeightPlacement::kResident;  // --mmap is for the local layers
      auto front = std::make_shared<baton::ModelFront>(cc ? cc->model : o.model, fo);
      baton::pipeline::RunnerOptions ro;
      ro.cluster.take_over = o.take_over;
      ro.cluster.max_in_flight = o.max_in_flight;
      ro.cluster.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout_s * 1000));
      auto model = baton::pipeline::open_runner(front, cc ? &*cc : nullptr, ro);
      baton::pipeline::Cluster* cluster = model.cluster.get();
      baton::LocalModel* local = model.local.get();
      const auto& file = *front->file();
      const baton::ModelConfig& mconfig = front->config();
      ModelView view{front->head(), model.runner(), mconfig};
      Bench bench(view);
      baton::PromptCut cut;
      cut.n_batch = static_cast<size_t>(o.n_batch);
      cut.prefill_chunk = static_cast<size_t>(o.prefill_chunk);
      const int nth = front->pool().n_threads();
      const double size = static_cast<double>(file.total_file_bytes());
      // Layer weights: the local stages', or on a cluster every blk.* tensor of the coordinator's file.
      double weight_bytes = 0;
      if (local) {
        weight_bytes = static_cast<double>(local->layers().weight_bytes());
      } else {
        for (const auto& t : file.tensors())
          if (baton::gguf::tensor_layer(t.name) >= 0) weight_bytes += static_cast<double>(t.n_bytes);
      }
      uint64_t n_params = 0;
      for (const auto& t : file.tensors()) n_params += t.n_elements();
      bench.generate(2);  // warm up: page in the weights, spin up the pool
      auto report = [&](const std::string& test, int n, std::vector<double> seconds) {
        std::vector<double> tps;
        for (double s : seconds) tps.push_back(n / s);
        Stats st = stats(tps);
        if (o.output == "md") {
          if (!header) {
            fmt::print("| model | size | params | backend | threads | test | t/s |\n");
            fmt::print("| --- | ---: | ---: | --- | ---: | ---: | ---: |\n");
            header = true;
          }
          fmt::print("| {} | {} | {:.2f} M | CPU | {} | {} | {:.2f} ± {:.2f} |\n", model_type(file, mconfig),
                     human_size(size), n_params / 1e6, nth, test, st.mean, st.sd);
        }
        results.push_back({{"model", o.model},
                           {"model_type", model_type(file, mconfig)},
                           {"size", size},
                           {"params", n_params},
                           {"threads", nth},
                           {"test", test},
                           {"avg_ts", st.mean},
                           {"stddev_ts", st.sd},
                           {"samples_ts", tps},
                           {"n_depth", bench.depth()},
                           {"layer_weight_gbps", test.rfind("tg", 0) == 0 ? weight_bytes * st.mean / 1e9 : 0.0}});
      };
      // One test ("pp128", "tg64 @ d2048"): its repetitions, its table row and, on a cluster,
      // its per-stage and per-hop lines.
      auto run_test = [&](const char* kind, int n, auto&& once) {
        if (n <= 0) return;
        std::vector<double> s;
        const auto before = cluster ? cluster->metrics() : baton::pipeline::ClusterMetrics{};
        for (int r = 0; r < o.reps; ++r) s.push_back(once(n));
        const int depth = bench.depth();
        const std::string test = fmt::format("{}{}{}", kind, n, depth > 0 ? fmt::format(" @ d{}", depth) : "");
        report(test, n, s);
        if (cluster) print_stage_stats(test, *cluster, before, results.back(), o.output == "md");
      };
      for (int d : o.n_depth) {
        bench.set_depth(d);
        for (int p : o.n_prompt) {
          run_test("pp", p, [&](int count) { return bench.prompt(count, cut); });
          if (p > 0 && o.output == "md") {
            const auto& samples = results.back()["samples_ts"];
            std::vector<double> ms;
            for (const auto& tps : samples) ms.push_back(1000.0 * p / tps.get<double>());
            std::sort(ms.begin(), ms.end());
            fmt::print("# {}: time to first token {:.1f} ms (median of {})\n",
                       results.back()["test"].get<std::string>(), ms[ms.size() / 2], ms.size());
          }
        }
        for (int n : o.n_gen) run_test("tg", n, [&](int count) { return bench.generate(count); });
        for (int rows : o.verify_rows)
          for (int n : o.n_gen)
            run_test(fmt::format("tv{}x", rows).c_str(), n, [&](int count) { return bench.verify(count, rows); });
      }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (o.output == "json") {
      fmt::print("{}\n", results.dump(2));
    } else {
      for (const auto& r : results)
        if (r["layer_weight_gbps"].get<double>() > 0)
          fmt::print("# {}: layer weights streamed at {:.1f} GB/s\n", r["test"].get<std::string>(),
                     r["layer_weight_gbps"].get<double>());
      fmt::print("# peak resident memory: {}\n", human_size(ru.ru_maxrss * 1024.0));
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
