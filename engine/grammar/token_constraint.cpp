#include "engine/grammar/token_constraint.h"

#include <algorithm>
#include <limits>

#include "engine/grammar/gbnf_parser.h"
#include "engine/tokenizer/tokenizer.h"

namespace baton::grammar {

std::shared_ptr<const CompiledConstraint> CompiledConstraint::build(std::string_view gbnf,
                                                                    const tokenizer::Tokenizer& tokenizer) {
  auto c = std::make_shared<CompiledConstraint>();
  c->grammar = std::make_shared<const Grammar>(parse_gbnf(gbnf));
  // The start within the matcher's bounds (GrammarLimitError otherwise): here, on the request's
  // thread and answered with a 400, rather than in the scheduler, where every sequence waits.
  Matcher start(c->grammar);
  c->trie = VocabTrie::of(tokenizer);
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
    if (tokenizer.is_eog(id)) c->eog_tokens.push_back(id);
  return c;
}

TokenConstraint::TokenConstraint(std::shared_ptr<const CompiledConstraint> compiled)
    : compiled_(std::move(compiled)), matcher_(compiled_->grammar) {}

void TokenConstraint::apply(std::span<float> logits) {
  matcher_.mask(*compiled_->trie, allowed_);
  if (matcher_.can_end())
    for (int32_t id : compiled_->eog_tokens)
      if (static_cast<size_t>(id) < allowed_.size()) allowed_[static_cast<size_t>(id)] = 1;
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  bool any = false;
  const size_t n = std::min(logits.size(), allowed_.size());
  for (size_t i = 0; i < n; ++i) {
    if (!allowed_[i]) logits[i] = kMasked;
    else any |= logits[i] != kMasked;
  }
  for (size_t i = n; i < logits.size(); ++i) logits[i] = kMasked;
  if (!any) fail("grammar: no token of the vocabulary can continue the output here");
}

void TokenConstraint::accept(int32_t token) {
  if (std::find(compiled_->eog_tokens.begin(), compiled_->eog_tokens.end(), token) != compiled_->eog_tokens.end())
    return;
  if (token < 0 || static_cast<size_t>(token) >= compiled_->trie->n_vocab() || compiled_->trie->piece(token).empty() ||
      !matcher_.accept(compiled_->trie->piece(token)))
    fail("grammar: token {} does not continue the output", token);
}

}  // namespace baton::grammar
