#include "engine/runtime/draft_model.h"

#include <algorithm>
#include <filesystem>

#include "engine/base/error.h"

namespace baton {

DraftModel::DraftModel(const std::string& path, const LocalModelOptions& options, const tokenizer::Tokenizer& target)
    : model_(path, options), name_(std::filesystem::path(path).filename().string()) {
  const auto& mine = model_.tokenizer();
  if (mine.n_vocab() != target.n_vocab())
    fail("draft model {}: its vocabulary has {} tokens, the target's {}: drafts must use the same tokens", name_,
         mine.n_vocab(), target.n_vocab());
  for (int32_t id = 0; id < mine.n_vocab(); ++id)
    if (mine.token_text(id) != target.token_text(id))
      fail("draft model {}: token {} is '{}' there and '{}' in the target: drafts must use the same vocabulary", name_,
           id, mine.token_text(id), target.token_text(id));
}

int32_t DraftModel::step(uint64_t seq_id, std::span<const int32_t> tokens, int32_t pos0) {
  const int64_t n_embd = model_.config().n_embd;
  batch_.clear();
  for (size_t i = 0; i < tokens.size(); ++i) batch_.add(seq_id, pos0 + static_cast<int32_t>(i), i + 1 == tokens.size());
  hidden_.resize(tokens.size() * static_cast<size_t>(n_embd));
  model_.head().embed(tokens, hidden_.data());
  model_.layers().forward(batch_, hidden_, out_rows_);
  logits_.resize(static_cast<size_t>(model_.head().n_vocab()));
  model_.head().logits(out_rows_.data(), 1, logits_.data());
  return static_cast<int32_t>(std::max_element(logits_.begin(), logits_.end()) - logits_.begin());
}

std::vector<int32_t> DraftModel::propose(uint64_t seq_id, std::span<const int32_t> history, size_t k) {
  std::vector<int32_t> draft;
  const int64_t n_ctx = model_.layers().n_ctx();
  if (k == 0 || history.empty()) return draft;
  k = std::min<size_t>(k, static_cast<size_t>(std::max<int64_t>(0, n_ctx - static_cast<int64_t>(history.size()))));
  if (k == 0) return draft;
  size_t& fed = fed_[seq_id];
  if (fed >= history.size()) fed = 0;  // a different history under this id: start over
  // Catch up: the tokens since the last draft, in chunks; the last one's logits give draft 1.
  constexpr size_t kChunk = 512;
  int32_t next = 0;
  while (fed < history.size()) {
    const size_t n = std::min(kChunk, history.size() - fed);
    next = step(seq_id, history.subspan(fed, n), static_cast<int32_t>(fed));
    fed += n;
  }
  draft.push_back(next);
  while (draft.size() < k) {
    const int32_t pos = static_cast<int32_t>(history.size() + draft.size() - 1);
    draft.push_back(step(seq_id, std::span<const int32_t>(&draft.back(), 1), pos));
  }
  return draft;  // its own rows past `fed` are rewritten by the next catch-up
}

void DraftModel::forget(uint64_t seq_id) {
  fed_.erase(seq_id);
  model_.layers().reset_sequence(seq_id);
}

}  // namespace baton
