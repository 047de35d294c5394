#include "engine/runtime/speculation.h"

#include <algorithm>

#include "engine/base/error.h"
#include "engine/runtime/draft_model.h"

namespace baton {

SpecMode parse_spec_mode(const std::string& name) {
  if (name == "ngram") return SpecMode::kNgram;
  if (name == "draft") return SpecMode::kDraft;
  if (name == "off" || name == "none") return SpecMode::kOff;
  fail("unknown speculation mode '{}' (expected ngram, draft or off)", name);
}

size_t draft_room(int64_t n_ctx, size_t pos, int64_t remaining) {
  size_t room = static_cast<size_t>(std::max<int64_t>(0, n_ctx - 1 - static_cast<int64_t>(pos)));
  if (remaining >= 0) room = std::min(room, static_cast<size_t>(std::max<int64_t>(0, remaining - 1)));
  return room;
}

std::vector<int32_t> propose_draft(const SpecParams& params, DraftModel* model, uint64_t seq_id,
                                   std::span<const int32_t> history, size_t max_tokens) {
  if (max_tokens == 0) return {};
  auto draft = params.mode == SpecMode::kDraft && model ? model->propose(seq_id, history, max_tokens)
                                                        : ngram_draft(history, params, max_tokens);
  if (draft.size() < static_cast<size_t>(params.draft_min)) draft.clear();
  return draft;
}

void SpecParams::validate() const {
  if (draft_max < 0 || draft_max > 64) fail("draft-max must be within [0, 64] (got {})", draft_max);
  if (draft_min < 0 || draft_min > draft_max)
    fail("draft-min must be within [0, draft-max = {}] (got {})", draft_max, draft_min);
  if (ngram_min < 1 || ngram_max < ngram_min || ngram_max > 16)
    fail("the n-gram lengths must satisfy 1 <= min <= max <= 16 (got {}..{})", ngram_min, ngram_max);
}

std::vector<int32_t> ngram_draft(std::span<const int32_t> history, const SpecParams& params, size_t max_tokens) {
  const size_t len = history.size();
  if (max_tokens == 0) return {};
  for (size_t n = static_cast<size_t>(params.ngram_max); n >= static_cast<size_t>(params.ngram_min); --n) {
    if (len < n + 1) continue;
    const auto suffix = history.subspan(len - n);
    // Latest occurrence first: the most recent context is the likeliest to repeat.
    for (size_t start = len - n; start-- > 0;) {
      if (!std::equal(suffix.begin(), suffix.end(), history.begin() + static_cast<ptrdiff_t>(start))) continue;
      const size_t from = start + n, count = std::min(max_tokens, len - from);
      return std::vector<int32_t>(history.begin() + static_cast<ptrdiff_t>(from),
                                  history.begin() + static_cast<ptrdiff_t>(from + count));
    }
  }
  return {};
}

namespace {
constexpr double kAverage = 0.2;  // weight of the newest sample in the moving averages

void blend(double& avg, double sample) { avg = avg < 0 ? sample : avg + kAverage * (sample - avg); }
}  // namespace

size_t DraftPolicy::best_length(size_t sharing) const {
  if (max_ <= 0) return 0;
  // Not measured yet: assume a row costs a quarter of a trip until a draft has been timed (the
  // first draft is then one token: cheap to learn from on a model whose rows are dear).
  const double t1 = t1_ > 0 ? t1_ : 1.0, m = m_ >= 0 ? m_ : 0.25 * t1;
  const double n = static_cast<double>(std::max<size_t>(1, sharing));
  double expected = n, term = 1, best_rate = n / t1 * 1.02;
  size_t best = 0;
  for (int k = 1; k <= max_; ++k) {
    term *= accept_;
    expected += term;
    const double rate = expected / (t1 + k * m);
    if (rate > best_rate) best_rate = rate, best = static_cast<size_t>(k);
  }
  return best;
}

size_t DraftPolicy::limit(size_t sharing) const {
  if (max_ <= 0) return 0;
  if (!adapt_) return static_cast<size_t>(max_);
  const size_t best = best_length(sharing);
  if (best > 0) return best;
  if (sharing > 1 && best_length(1) > 0) return 0;  // it would pay alone, not in this crowd
  return pause_ > 0 ? 0 : 1;                        // a trial draft now and then
}

void DraftPolicy::record(size_t rows, size_t kept, double seconds) {
  if (rows <= 1) {
    if (seconds > 0) blend(t1_, seconds);
    if (pause_ > 0) --pause_;
    return;
  }
  const size_t drafted = rows - 1;
  if (seconds > 0 && t1_ > 0) blend(m_, std::max(0.0, seconds - t1_) / static_cast<double>(drafted));
  // Each kept token is a success; the first rejected one (if any) a failure.
  const double successes = static_cast<double>(kept), trials = successes + (kept < drafted ? 1.0 : 0.0);
  for (double i = 0; i < trials; ++i) blend(accept_, i < successes ? 1.0 : 0.0);
  if (best_length(1) > 0) {
    pause_ = 0;  // drafting pays: draft at every token
    next_pause_ = 2;
  } else {
    pause_ = next_pause_;  // it does not: the next trial after a longer pause
    next_pause_ = std::min(128, next_pause_ * 2);
  }
}

}  // namespace baton
