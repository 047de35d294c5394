// Drafts from a smaller model of the same vocabulary (--model-draft, llama-server's name): run in
// the coordinator's process, it keeps every sequence's KV, catches up with the tokens accepted
// since its last draft and decodes k tokens greedily. The target model verifies them exactly as
// n-gram drafts (engine/runtime/speculation.h): the output does not depend on the draft, only
// the speed does.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/runtime/local_model.h"

namespace baton {

class DraftModel {
 public:
  // Throws baton::Error when the file cannot be loaded or its vocabulary is not the target's
  // (size, or the first differing token named).
  DraftModel(const std::string& path, const LocalModelOptions& options, const tokenizer::Tokenizer& target);

  // Up to k tokens continuing `history` (a sequence's prompt and generated tokens).
  std::vector<int32_t> propose(uint64_t seq_id, std::span<const int32_t> history, size_t k);
  // The sequence ended or lost its tokens: its KV here is freed.
  void forget(uint64_t seq_id);

  const std::string& name() const { return name_; }

 private:
  // Runs tokens at positions from pos0; the greedy next token after the last of them.
  int32_t step(uint64_t seq_id, std::span<const int32_t> tokens, int32_t pos0);

  LocalModel model_;
  std::string name_;
  std::unordered_map<uint64_t, size_t> fed_;  // per sequence: history tokens whose KV is held
  TokenBatch batch_;
  std::vector<float> hidden_, out_rows_, logits_;
};

}  // namespace baton
