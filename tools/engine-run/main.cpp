// engine-run: generate a continuation of a prompt with a local model (like llama-completion).
//   engine-run -m FILE -p TEXT -n N [--temp T --top-k K --top-p P --min-p M --seed S] [-t THREADS]
//              [--ctx N] [--json | --tokenize] [--split A,B,...]
//   engine-run --config cluster.yaml -p TEXT ...   (the layers run on the cluster's engine-workers)
//   engine-run -m FILE -cnv [-sys TEXT]           interactive chat (conversation.h), local or --config
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "tools/common_cli.h"
#include "tools/context_check.h"
#include "tools/spec_options.h"
#include "tools/terminal_progress.h"
#include "tools/logging.h"
#include "engine/base/error.h"
#include "engine/cluster/cluster_config.h"
#include "engine/model/load_progress_listener.h"
#include "engine/pipeline/cluster.h"
#include "engine/pipeline/model_runner.h"
#include "engine/runtime/draft_model.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/local_model.h"
#include "conversation.h"

namespace {

struct Options {
  std::string model, config, prompt, prompt_file;
  int n_predict = 64;
  int threads = 0;
  int64_t n_ctx = 0;
  bool json = false, tokenize_only = false, no_bos = false, special = true, mmap = false;
  int top_logprobs = 5;
  int n_batch = 512, prefill_chunk = 0;
  std::string split;
  baton::SamplerParams sampling;
  int64_t seed = -1;
  bool conversation = false, ignore_eos = false;
  bool n_predict_given = false;
  std::string system_prompt, chat_template;
  baton::tools::SpecOptions spec;
  bool take_over = false;         // --config: take workers held by another coordinator
  double request_timeout_s = 30;  // --config: one forward pass through the chain
};

// "2,4" -> [0,2) [2,4) [4,n_layer)
std::vector<baton::LayerSpan> parse_split(const std::string& spec, int64_t n_layer) {
  std::vector<baton::LayerSpan> ranges;
  if (spec.empty()) return ranges;
  int64_t begin = 0;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    int64_t cut = std::stoll(item);
    if (cut <= begin || cut >= n_layer)
      baton::fail("--split: boundary {} must be increasing and inside 1..{}", cut, n_layer - 1);
    ranges.push_back({begin, cut});
    begin = cut;
  }
  ranges.push_back({begin, n_layer});
  return ranges;
}

int run(const Options& o) {
  std::string prompt = o.prompt;
  if (!o.prompt_file.empty()) {
    std::ifstream in(o.prompt_file, std::ios::binary);
    if (!in) baton::fail("cannot read prompt file {}", o.prompt_file);
    prompt.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string model_name = o.model;
  // On a terminal: a bar for the weights being placed and for the prompt (tools/terminal_progress.h).
  const bool bar = baton::tools::TerminalProgress::wanted();
  baton::tools::TerminalProgress progress;
  if (bar)
    baton::set_weight_progress_listener([&progress](uint64_t done, uint64_t total) {
      constexpr double kMiB = 1024.0 * 1024.0;
      progress.show("loading weights", total ? double(done) / double(total) : 1.0,
                    fmt::format("{:.0f}/{:.0f} MiB", done / kMiB, total / kMiB));
    });
  std::optional<baton::ClusterConfig> cc;
  if (!o.config.empty()) {
    cc = baton::parse_cluster_config_file(o.config);
    model_name = cc->model;
  }
  baton::tools::warn_if_ctx_above_trained("engine-run", model_name, o.n_ctx);
  // One front (file, tokenizer, head), then its layers here or on the workers of --config.
  baton::ModelFrontOptions fo;
  fo.threads = o.threads;
  fo.n_ctx = o.n_ctx;
  if (o.mmap && !cc) fo.placement = baton::WeightPlacement::kMapped;
  auto front = std::make_shared<baton::ModelFront>(model_name, fo);
  baton::pipeline::RunnerOptions ro;
  if (!cc) ro.layer_ranges = parse_split(o.split, front->config().n_layer);
  ro.cluster.take_over = o.take_over;
  ro.cluster.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout_s * 1000));
  auto model = baton::pipeline::open_runner(front, cc ? &*cc : nullptr, ro);
  progress.clear();
  baton::set_weight_progress_listener({});
  const auto& tok = front->tokenizer();
  baton::ModelHead& head = front->head();
  baton::LayerRunner& layers = model.runner();
  const baton::SpecParams spec = o.spec.resolve();
  std::unique_ptr<baton::DraftModel> draft;
  if (!o.spec.model_draft.empty()) {
    baton::LocalModelOptions dlo;
    dlo.threads = o.threads;
    dlo.n_ctx = layers.n_ctx();
    draft = std::make_unique<baton::DraftModel>(o.spec.model_draft, dlo, tok);
  }
  if (o.conversation) {
    baton::ConversationOptions co;
    co.system_prompt = o.system_prompt;
    co.chat_template = o.chat_template;
    co.generate.n_predict = o.n_predict_given ? o.n_predict : -1;
    co.generate.sampling = o.sampling;
    co.ignore_eos = o.ignore_eos;
    co.generate.sampling.seed = o.seed < 0 ? std::random_device{}() : static_cast<uint32_t>(o.seed);
    co.generate.speculation = spec;
    co.generate.draft_model = draft.get();
    return baton::run_conversation(*front->file(), tok, head, layers, co);
  }
  std::vector<int32_t> prompt_tokens = tok.encode(prompt, !o.no_bos, o.special);

  if (o.tokenize_only) {
    fmt::print("{}\n", nlohmann::json(prompt_tokens).dump());
    return 0;
  }

  baton::GenerateOptions go;
  go.n_predict = o.n_predict;
  go.sampling = o.sampling;
  go.sampling.seed = o.seed < 0 ? std::random_device{}() : static_cast<uint32_t>(o.seed);
  go.n_top_logprobs = o.json ? static_cast<size_t>(o.top_logprobs) : 0;
  go.n_batch = o.n_batch;
  go.prefill_chunk = o.prefill_chunk;
  go.speculation = spec;
  go.draft_model = draft.get();
  if (!o.ignore_eos) go.is_end_of_generation = [&tok](int32_t id) { return tok.is_eog(id); };

  baton::Generator generator(head, layers);
  baton::tokenizer::StreamDetokenizer stream(tok);
  // With a bar the prompt's text is printed once it has been processed, after the bar is erased.
  bool prompt_printed = false;
  auto print_prompt = [&] {
    progress.clear();
    if (o.json || prompt_printed) return;
    fmt::print("{}", prompt);
    std::fflush(stdout);
    prompt_printed = true;
  };
  if (bar)
    go.on_prompt_progress = [&progress](size_t done, size_t total) {
      progress.show("prompt", total ? double(done) / double(total) : 1.0, fmt::format("{}/{} tokens", done, total));
    };
  else print_prompt();
  auto result = generator.generate(1, prompt_tokens, go, [&](const baton::GeneratedStep& step) {
    print_prompt();
    if (!o.json && !tok.is_eog(step.token)) {
      fmt::print("{}", stream.push(step.token));
      std::fflush(stdout);
    }
    return true;
  });

  print_prompt();  // -n 0: no step printed it
  std::vector<int32_t> tokens;
  for (const auto& s : result.steps) tokens.push_back(s.token);
  const double pp = prompt_tokens.size() / std::max(result.prompt_seconds, 1e-9);
  const double tg = result.steps.size() > 1 ? (result.steps.size() - 1) / std::max(result.generation_seconds, 1e-9) : 0;

  if (o.json) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : result.steps) {
      nlohmann::json top = nlohmann::json::array();
      for (const auto& t : s.top) top.push_back({t.id, t.logprob});
      steps.push_back({{"token", s.token}, {"logprob", s.logprob}, {"top", top}});
    }
    std::vector<int32_t> text_tokens;
    for (int32_t t : tokens)
      if (!tok.is_eog(t)) text_tokens.push_back(t);
    nlohmann::json out = {
        {"model", model_name},
        {"prompt", prompt},
        {"prompt_tokens", prompt_tokens},
        {"n_predict", o.n_predict},
        {"tokens", tokens},
        {"text", tok.decode(text_tokens)},
        {"finish_reason", std::string(baton::to_string(result.finish_reason))},
        {"steps", steps},
        {"timings",
         {{"prompt_tokens_per_second", pp},
          {"generated_tokens_per_second", tg},
          {"prompt_seconds", result.prompt_seconds},
          {"generation_seconds", result.generation_seconds},
          {"decode_passes", result.decode_passes},
          {"draft_n", result.speculation.drafted},
          {"draft_n_accepted", result.speculation.accepted}}},
    };
    fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("{}\n", stream.flush());
    fmt::print(stderr, "\nprompt: {} tokens, {:.1f} t/s | generated: {} tokens, {:.1f} t/s | finish: {}\n",
               prompt_tokens.size(), pp, result.steps.size(), tg, baton::to_string(result.finish_reason));
    if (result.speculation.drafted > 0)
      fmt::print(stderr, "speculation: {} of {} draft tokens kept, {:.2f} tokens per pass\n",
                 result.speculation.accepted, result.speculation.drafted,
                 static_cast<double>(result.steps.size() - 1) /
                     static_cast<double>(std::max<size_t>(1, result.decode_passes)));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  baton::tools::log_to_stderr("engine-run");
  CLI::App app{"Generate a continuation of a prompt with a local GGUF model"};
  Options o;
  auto* m = app.add_option("-m,--model", o.model, "GGUF model file");
  app.add_option("--config", o.config, "cluster YAML: run the layers on its engine-workers")->excludes(m);
  auto* p = app.add_option("-p,--prompt", o.prompt, "prompt text");
  app.add_option("-f,--file", o.prompt_file, "read the prompt from a file")->excludes(p);
  app.add_option("-n,--n-predict", o.n_predict, "tokens to generate (-1: until end of generation)");
  app.add_option("-t,--threads", o.threads, "compute threads (default: all cores)");
  app.add_option("-c,--ctx,--ctx-size", o.n_ctx,
                 fmt::format("context length (default: the model's, at most {})", baton::kDefaultContextCap));
  app.add_option("--temp", o.sampling.temperature, "temperature (0 = greedy)");
  app.add_option("--top-k", o.sampling.top_k, "top-k (0 = off)");
  app.add_option("--top-p", o.sampling.top_p, "top-p (1 = off)");
  app.add_option("--min-p", o.sampling.min_p, "min-p (0 = off)");
  app.add_option("--repeat-penalty", o.sampling.repeat_penalty, "repetition penalty (1 = off)");
  app.add_option("--repeat-last-n", o.sampling.repeat_last_n, "window of the penalties");
  app.add_option("--presence-penalty", o.sampling.presence_penalty, "presence penalty");
  app.add_option("--frequency-penalty", o.sampling.frequency_penalty, "frequency penalty");
  app.add_option("-s,--seed", o.seed, "random seed (-1: random)");
  app.add_flag("--mmap", o.mmap,
               "keep the weights in the file mapping (no copy, no repacked layout): pages can be evicted and re-read "
               "under memory pressure, decode is slower");
  app.add_flag("--json", o.json, "print one JSON object: prompt_tokens, tokens, text, steps with top-5 logprobs");
  app.add_option("--top-logprobs", o.top_logprobs, "top entries per step in --json")->check(CLI::Range(0, 100));
  app.add_flag("--tokenize", o.tokenize_only, "print only the prompt's token ids as a JSON array");
  app.add_flag("--no-bos", o.no_bos, "do not add the special tokens the model adds around a prompt (BOS)");
  app.add_option("-b,--batch-size", o.n_batch,
                 "prompt tokens per chunk: how the prompt is cut (the numerics; as llama.cpp's ubatch)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--prefill-chunk", o.prefill_chunk,
                 "prompt tokens per pass on a pipeline (pieces of a chunk, same bits; 0: 128 / stages within [8, 32] "
                 "on a cluster, about 4 per stage for a short prompt; whole chunks locally)")
      ->check(CLI::Range(0, 1 << 20));
  o.spec.add_to(app);
  app.add_flag("--take-over", o.take_over, std::string("with --config: ") + baton::pipeline::kTakeOverHelp);
  app.add_option("--request-timeout", o.request_timeout_s,
                 std::string("with --config: ") + baton::pipeline::kRequestTimeoutHelp)
      ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--split", o.split, "run the layers as several local stages, e.g. 2,4 (for testing splits)");
  app.add_flag("--ignore-eos", o.ignore_eos, "generate past the end-of-generation token (up to -n)");
  app.add_flag("--conversation", o.conversation, "interactive chat with the model's chat template (also -cnv)");
  app.add_option("--system-prompt", o.system_prompt, "with -cnv: the system message (also -sys)");
  app.add_option("--chat-template", o.chat_template, "with -cnv: chat template by name (default: the model's)");
  baton::LogSettings log;
  baton::tools::add_log_options(app, log);
  // llama-cli's single-dash long names, which CLI11 does not take as such.
  if (auto code = baton::tools::parse_tool_command_line(
          app, argc, argv, "engine-run", {.renames = {{"-cnv", "--conversation"}, {"-sys", "--system-prompt"}}}))
    return *code;
  try {
    baton::tools::apply_log_options("engine-run", log);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  o.n_predict_given = app.count("--n-predict") > 0;
  if (o.conversation && (!o.prompt.empty() || !o.prompt_file.empty() || o.json || o.tokenize_only)) {
    fmt::print(stderr, "error: -cnv reads the conversation from stdin: no -p, -f, --json or --tokenize with it\n");
    return 2;
  }
  if (o.model.empty() && o.config.empty()) {
    fmt::print(stderr, "error: pass -m FILE or --config cluster.yaml\n");
    return 2;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
