// Runs a prompt through a LayerRunner in pieces (engine/runtime/prompt_pieces.h), keeping as
// many in flight as the runner allows: on a pipeline of S stages, piece k+1 enters stage 1 as
// soon as stage 1 has finished piece k, so a long prompt keeps every stage busy (pipelined
// prefill). Every row carries its hint from the n_batch cut: the result is bitwise that of whole
// n_batch chunks. Used by the Generator
// (engine-run) and engine-bench; the serving scheduler cuts its prompts by the same rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/model/model_head.h"
#include "engine/runtime/layer_runner.h"

namespace baton {

struct PromptCut {
  size_t n_batch = 512;      // the numerics' chunk
  size_t prefill_chunk = 0;  // tokens per pass; 0: auto_prompt_piece()
};

// Told after each finished piece: tokens done (their pieces came back) of the prompt's total.
using PromptProgress = std::function<void(size_t done, size_t total)>;

// tokens[i] goes to position pos0 + i of sequence seq_id (chunks are cut from tokens[0]);
// out_row receives the final hidden row of the last token ([n_embd]). Throws baton::Error
// from the runner (every unfinished piece is then lost).
void run_prompt_pieces(ModelHead& head, LayerRunner& layers, uint64_t seq_id, std::span<const int32_t> tokens,
                       int32_t pos0, const PromptCut& cut, std::vector<float>& out_row,
                       const PromptProgress& progress = {});

}  // namespace baton
