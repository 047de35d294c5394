#include "engine/runtime/speculation.h"

#include <algorithm>

#include "engine/base/error.h"

namespace baton {

SpecMode parse_spec_mode(const std::string& name) {
  if (name == "ngram") return SpecMode::kNgram;
  if (name == "off" || name == "none") return SpecMode::kOff;
  fail("unknown speculation mode '{}' (expected ngram or off)", name);
}

const char* spec_mode_name(SpecMode mode) { return mode == SpecMode::kNgram ? "ngram" : "off"; }

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

void DraftLength::record(size_t proposed, size_t kept) {
  if (proposed == 0) return;
  if (kept == proposed) {
    limit_ = std::min(max_, std::max(limit_, 1) * 2);
    next_pause_ = 2;
  } else if (kept > 0) {
    limit_ = static_cast<int>(kept) + 1;
    next_pause_ = 2;
  } else {
    limit_ = std::max(1, limit_ / 2);
    pause_ = next_pause_;
    next_pause_ = std::min(64, next_pause_ * 2);
  }
}

}  // namespace baton
