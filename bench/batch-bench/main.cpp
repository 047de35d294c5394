// batch-bench: what continuous batching buys. Runs the serving Scheduler in-process with N
// concurrent clients, each generating -n tokens after a prompt of -p tokens, and prints per
// client count: aggregate generated tok/s, per-client decode tok/s, the ratio to one client,
// time to first token (p50/p95) and the number of forward passes.
//   batch-bench -m MODEL -t THREADS --clients 1,8 -n 64 -p 32 [-r 3] [--n-batch 512]
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "engine/runtime/local_model.h"
#include "engine/serving/scheduler.h"

namespace {

using Clock = std::chrono::steady_clock;
using baton::serving::CompletionRequest;
using baton::serving::RequestHandle;
using baton::serving::Scheduler;

struct Options {
  std::string model;
  std::vector<int> clients = {1, 8};
  int n_gen = 64, n_prompt = 32, threads = 0, reps = 1, n_batch = 512;
};

struct Row {
  int clients = 0;
  double aggregate = 0;   // generated tokens of all clients / wall time
  double per_client = 0;  // mean of each client's tokens / its generation time
  double ttft_p50 = 0, ttft_p95 = 0;
  uint64_t passes = 0;
  double wall = 0;
  double cpu = 0;  // CPU seconds of the whole process (all threads) during the run
};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double idx = p * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(idx);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (idx - static_cast<double>(lo));
}

// A prompt of n tokens: BOS (if any) then a story text, repeated, rotated per client.
std::vector<int32_t> make_prompt(const baton::tokenizer::Tokenizer& tok, int n, int client) {
  const std::string text =
      "Once upon a time, in a small village by the sea, there lived an old fisherman and his "
      "granddaughter. Every morning they walked to the harbour, mended the nets and watched the "
      "boats come in. One day a storm came from the west and the sky turned dark as night. ";
  auto words = tok.encode(text, false, false);
  std::vector<int32_t> prompt;
  if (tok.bos() >= 0 && tok.add_bos_default()) prompt.push_back(tok.bos());
  for (size_t i = static_cast<size_t>(client) * 7; static_cast<int>(prompt.size()) < n; ++i)
    prompt.push_back(words[i % words.size()]);
  return prompt;
}

Row run(baton::LocalModel& model, const Options& o, int n_clients) {
  baton::serving::SchedulerOptions so;
  so.slots = n_clients;
  so.queue_limit = 0;
  so.n_batch = o.n_batch;
  Scheduler scheduler(model.head(), model.layers(), model.tokenizer(), so);

  std::vector<std::shared_ptr<RequestHandle>> handles;
  const double cpu0 = process_cpu_seconds();
  const auto t0 = Clock::now();
  for (int c = 0; c < n_clients; ++c) {
    CompletionRequest r;
    r.prompt = make_prompt(model.tokenizer(), o.n_prompt, c);
    r.max_tokens = o.n_gen;
    r.ignore_eos = true;
    r.sampling.seed = static_cast<uint32_t>(c + 1);
    handles.push_back(scheduler.submit(std::move(r)));
  }
  std::vector<std::thread> consumers;
  for (auto& h : handles)
    consumers.emplace_back([&h] {
      baton::serving::TokenEvent event;
      while (h->next(event, std::chrono::minutes(10)) == RequestHandle::Poll::kToken) {
      }
    });
  for (auto& t : consumers) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();

  Row row;
  row.cpu = process_cpu_seconds() - cpu0;
  row.clients = n_clients;
  row.wall = wall;
  std::vector<double> ttft;
  uint64_t total = 0;
  for (auto& h : handles) {
    auto s = h->summary();
    if (s.finish_reason != baton::FinishReason::kLength)
      throw baton::Error(fmt::format("a request ended with '{}': {}", baton::to_string(s.finish_reason), s.error));
    total += s.completion_tokens;
    ttft.push_back(s.time_to_first_token);
    if (s.completion_tokens > 1) row.per_client += static_cast<double>(s.completion_tokens - 1) / s.generation_seconds;
  }
  row.per_client /= n_clients;
  row.aggregate = static_cast<double>(total) / wall;
  row.ttft_p50 = percentile(ttft, 0.5);
  row.ttft_p95 = percentile(ttft, 0.95);
  row.passes = scheduler.stats().forward_passes;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Continuous batching throughput: N concurrent clients through the serving scheduler"};
  app.add_option("-m,--model", o.model, "GGUF model")->required();
  app.add_option("-t,--threads", o.threads, "threads (0 = all cores)");
  app.add_option("--clients", o.clients, "concurrent clients, e.g. 1,8")->delimiter(',')->check(CLI::Range(1, 256));
  app.add_option("-n,--n-gen", o.n_gen, "generated tokens per client")->check(CLI::Range(1, 100000));
  app.add_option("-p,--n-prompt", o.n_prompt, "prompt tokens per client")->check(CLI::Range(1, 100000));
  app.add_option("-r,--repetitions", o.reps, "runs per client count (the best aggregate is shown)")
      ->check(CLI::Range(1, 100));
  app.add_option("--n-batch", o.n_batch, "tokens per forward pass")->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);
  try {
    baton::LocalModelOptions mo;
    mo.threads = o.threads;
    mo.max_sequences = *std::max_element(o.clients.begin(), o.clients.end());
    mo.n_ctx = o.n_prompt + o.n_gen + 1;
    baton::LocalModel model(o.model, mo);
    fmt::print("model {} | threads {} | prompt {} | generated {} per client | n_batch {}\n", o.model,
               model.pool().n_threads(), o.n_prompt, o.n_gen, o.n_batch);
    {  // warm-up: page the weights in
      Options w = o;
      w.n_gen = 4;
      run(model, w, 1);
    }
    fmt::print(
        "| clients | aggregate tok/s | per-client tok/s | ratio vs 1 | TTFT p50 s | TTFT p95 s | passes | wall s | "
        "busy CPUs | tok per CPU-s |\n");
    fmt::print(
        "|--------:|----------------:|-----------------:|-----------:|-----------:|-----------:|-------:|-------:|-----"
        "-----:|--------------:|\n");
    double base = 0;
    for (int c : o.clients) {
      Row best;
      for (int r = 0; r < o.reps; ++r) {
        Row row = run(model, o, c);
        if (row.aggregate > best.aggregate) best = row;
      }
      if (c == 1 || base == 0) base = c == 1 ? best.aggregate : base;
      const std::string ratio = base > 0 ? fmt::format("{:.2f}x", best.aggregate / base) : "-";
      fmt::print(
          "| {:7} | {:15.2f} | {:16.2f} | {:>10} | {:10.3f} | {:10.3f} | {:6} | {:6.2f} | {:9.2f} | {:13.1f} |\n", c,
          best.aggregate, best.per_client, ratio, best.ttft_p50, best.ttft_p95, best.passes, best.wall,
          best.cpu / best.wall, best.aggregate * best.wall / best.cpu);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "batch-bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
