// engine-run -cnv: an interactive chat in the terminal (like llama-cli -cnv) over a loaded
// model, local or on a cluster's workers.
#pragma once

#include <cstdint>
#include <string>

#include "engine/model/model_head.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/layer_runner.h"
#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_file.h"

namespace baton {

struct ConversationOptions {
  std::string system_prompt;  // "" = none
  std::string chat_template;  // by name; "" = the model's own
  GenerateOptions generate;   // n_predict < 0: until end of generation or the context is full
  bool ignore_eos = false;    // generate past end-of-generation tokens (up to n_predict)
};

// Reads user turns from stdin (a line; a trailing '\' continues it on the next line), formats
// the whole conversation with the chat template and streams the reply to stdout; per-reply
// figures go to stderr. Commands: /reset forgets the history, /exit quits; EOF quits. Ctrl-C
// (SIGINT) stops the reply being generated and keeps the program; the stopped reply stays in
// the history. When the history outgrows the context, the oldest turns are dropped.
// Returns the exit code.
int run_conversation(const gguf::GgufFile& file, const tokenizer::Tokenizer& tok, ModelHead& head, LayerRunner& layers,
                     const ConversationOptions& options);

}  // namespace baton
