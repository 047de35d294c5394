// The speculative-decoding flags of engine-run and engine-coordinator, with llama-server's names
// (engine/runtime/speculation.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "engine/base/error.h"
#include "engine/runtime/speculation.h"

namespace baton::tools {

// Adds --spec, --draft-max, --draft-min, --spec-ngram-min, --spec-ngram-max; call
// apply_spec_options() after parsing.
struct SpecOptions {
  std::string mode = "ngram";
  std::string model_draft;  // --model-draft: implies --spec draft
  SpecParams params;

  void add_to(CLI::App& app) {
    app.add_option("--spec", mode,
                   "speculative decoding: ngram (drafts from earlier text), draft (from --model-draft) or off; "
                   "the same output, fewer passes")
        ->capture_default_str();
    app.add_option(
        "--model-draft", model_draft,
        "a smaller GGUF of the same vocabulary that proposes drafts, run by this process (implies --spec draft)");
    app.add_option("--draft-max,--draft,--draft-n", params.draft_max,
                   "draft tokens per pass at most (0: no speculation)")
        ->capture_default_str()
        ->check(CLI::Range(0, 64));
    app.add_option("--draft-min,--draft-n-min", params.draft_min, "a shorter draft is not sent")
        ->capture_default_str()
        ->check(CLI::Range(0, 64));
    app.add_option("--spec-ngram-min", params.ngram_min, "shortest suffix looked up for a draft")
        ->capture_default_str()
        ->check(CLI::Range(1, 16));
    app.add_option("--spec-ngram-max", params.ngram_max, "longest suffix looked up for a draft (tried first)")
        ->capture_default_str()
        ->check(CLI::Range(1, 16));
  }
  // Throws baton::Error for an unknown mode or inconsistent values.
  SpecParams resolve() const {
    SpecParams p = params;
    p.mode = model_draft.empty() ? parse_spec_mode(mode) : SpecMode::kDraft;
    if (p.mode == SpecMode::kDraft && model_draft.empty()) fail("--spec draft needs --model-draft FILE");
    p.validate();
    return p;
  }
};

}  // namespace baton::tools
