#include "conversation.h"

#include <fmt/core.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <optional>
#include <vector>

#include "engine/base/error.h"
#include "engine/chat/chat_template.h"

namespace baton {

namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<bool> g_generating{false};

// SIGINT: stops the reply being generated; at the prompt it only says how to quit.
void on_sigint(int) {
  if (g_generating.load()) {
    g_interrupted.store(true);
  } else {
    static const char hint[] = "\n(Ctrl-D or /exit quits)\n";
    ssize_t ignored = ::write(STDERR_FILENO, hint, sizeof hint - 1);
    (void)ignored;
  }
}

void install_sigint() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // a read at the prompt goes on after Ctrl-C
  sigaction(SIGINT, &sa, nullptr);
}

// One user turn: a line, continued while it ends with a backslash; nullopt at EOF.
std::optional<std::string> read_turn(bool interactive) {
  std::string text, line;
  for (;;) {
    if (interactive) {
      fmt::print("{}", text.empty() ? "> " : ". ");
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) {
      if (text.empty()) return std::nullopt;
      return text;
    }
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      text += line + "\n";
      continue;
    }
    return text + line;
  }
}

ChatTemplate choose_template(const gguf::GgufFile& file, const std::string& name) {
  return name.empty() ? ChatTemplate::from_metadata(file.metadata()) : ChatTemplate::from_name(name);
}

}  // namespace

int run_conversation(const gguf::GgufFile& file, const tokenizer::Tokenizer& tok, ModelHead& head, LayerRunner& layers,
                     const ConversationOptions& options) {
  // stdout carries only the replies: log lines (e.g. which chat template) go to stderr, as in
  // every tool (main sets the logger, tools/logging.h).
  const ChatTemplate chat = choose_template(file, options.chat_template);
  const bool interactive = ::isatty(STDIN_FILENO) != 0;
  install_sigint();
  std::vector<ChatMessage> history;
  auto reset = [&] {
    history.clear();
    if (!options.system_prompt.empty()) history.push_back({"system", options.system_prompt});
  };
  reset();
  fmt::print(stderr,
             "chat template: {}; /reset forgets the conversation, Ctrl-C stops a reply, Ctrl-D or /exit quits\n",
             chat.name());
  Generator generator(head, layers);
  GenerateOptions go = options.generate;
  if (!options.ignore_eos) go.is_end_of_generation = [&tok](int32_t id) { return tok.is_eog(id); };
  const int64_t n_ctx = layers.n_ctx();

  while (auto turn = read_turn(interactive)) {
    if (*turn == "/exit" || *turn == "/quit") break;
    if (*turn == "/reset") {
      reset();
      fmt::print(stderr, "(conversation reset)\n");
      continue;
    }
    if (turn->empty()) continue;
    history.push_back({"user", *turn});
    // The whole conversation is formatted and run again each turn (the template may render
    // earlier turns differently once a reply follows them); the oldest turns go when it no
    // longer leaves a quarter of the context to answer in.
    std::vector<int32_t> prompt;
    for (;;) {
      prompt = tok.encode(chat.apply(history, /*add_generation_prompt=*/true), true, true);
      const size_t first_turn = !history.empty() && history[0].role == "system" ? 1 : 0;
      if (static_cast<int64_t>(prompt.size()) * 4 <= n_ctx * 3 || history.size() <= first_turn + 1) break;
      history.erase(history.begin() + static_cast<std::ptrdiff_t>(first_turn));
    }
    if (static_cast<int64_t>(prompt.size()) >= n_ctx) {
      fmt::print(stderr, "error: this message alone ({} tokens) does not fit the context ({})\n", prompt.size(), n_ctx);
      history.pop_back();
      continue;
    }
    tokenizer::StreamDetokenizer stream(tok);
    std::string reply;
    g_interrupted.store(false);
    g_generating.store(true);
    GenerationResult result;
    try {
      result = generator.generate(1, prompt, go, [&](const GeneratedStep& step) {
        if (!tok.is_eog(step.token)) {
          std::string piece = stream.push(step.token);
          reply += piece;
          fmt::print("{}", piece);
          std::fflush(stdout);
        }
        return !g_interrupted.load();
      });
    } catch (...) {
      g_generating.store(false);
      throw;
    }
    g_generating.store(false);
    std::string rest = stream.flush();
    reply += rest;
    fmt::print("{}\n", rest);
    std::fflush(stdout);
    const bool stopped = g_interrupted.exchange(false);
    const double tg =
        result.steps.size() > 1 ? (result.steps.size() - 1) / std::max(result.generation_seconds, 1e-9) : 0;
    fmt::print(stderr, "[{} tokens, {:.1f} tokens/s, prompt {} tokens{}]\n", result.steps.size(), tg, prompt.size(),
               stopped                                                ? ", stopped"
               : result.finish_reason == baton::FinishReason::kLength ? ", length limit"
                                                                      : "");
    history.push_back({"assistant", reply});
  }
  return 0;
}

}  // namespace baton
