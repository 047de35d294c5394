// Speculative decoding by n-gram lookup (llama.cpp's prompt lookup, vLLM's n-gram speculator):
// the continuation that followed the latest earlier occurrence of the sequence's last n tokens
// is proposed as a draft, and the draft goes through the layers together with the token just
// sampled, as one pass of k + 1 rows of the single-row numerics. The rows' logits are then
// sampled in order by the sequence's own sampler; each draft token is kept while it equals
// what was sampled. Every kept row was computed exactly as in a pass of its own (the hints give
// each row llama.cpp's single-row order, attention is per row over positions <= its own), and
// every token is sampled from the same logits with the same sampler state as without
// speculation: the output is bitwise the same for greedy AND for seeded sampling (this is
// llama.cpp's "sample and accept" check; for a deterministic draft it also is the standard
// speculative-sampling rule: a draft token d is kept with probability p(d), a rejected one is
// replaced by a sample of p without d). Rejected rows leave KV at positions past the sequence's
// end, which the cache is positional about: the next pass overwrites them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace baton {

enum class SpecMode { kOff, kNgram };

// Throws baton::Error for anything but "off" / "ngram" (and "none", llama.cpp's word for off).
SpecMode parse_spec_mode(const std::string& name);
const char* spec_mode_name(SpecMode mode);

struct SpecParams {
  SpecMode mode = SpecMode::kNgram;
  int draft_max = 16;  // llama-server's --draft-max: tokens proposed per pass at most
  int draft_min = 0;   // llama-server's --draft-min: a shorter draft is not sent
  int ngram_min = 2;   // the shortest suffix that is looked up
  int ngram_max = 4;   // the longest (tried first)
  // Throws baton::Error naming the field for values out of range.
  void validate() const;
  bool enabled() const { return mode != SpecMode::kOff && draft_max > 0; }
};

// The continuation (at most max_tokens) that followed the latest earlier occurrence of the last
// n tokens of `history`, for n from ngram_max down to ngram_min; empty when none occurs.
std::vector<int32_t> ngram_draft(std::span<const int32_t> history, const SpecParams& params, size_t max_tokens);

// How long a sequence's next draft may be, from how its drafts fared: a draft that is kept
// whole doubles the limit (up to draft_max), a partly kept one sets it to what was kept + 1,
// and drafts that keep nothing pause speculation for a while (2, 4, ... 64 tokens), so that on
// text with no repetition a stream falls back to plain decoding by itself.
class DraftLength {
 public:
  explicit DraftLength(int draft_max) : limit_(draft_max), max_(draft_max) {}
  // The longest draft allowed before the next token (0: do not speculate now).
  size_t limit() const { return pause_ > 0 ? 0 : static_cast<size_t>(limit_); }
  // A draft of `proposed` tokens of which `kept` were kept.
  void record(size_t proposed, size_t kept);
  // One token was generated without a draft (counts down a pause).
  void plain_step() {
    if (pause_ > 0) --pause_;
  }

 private:
  int limit_, max_;
  int pause_ = 0;       // tokens to generate without drafts
  int next_pause_ = 2;  // doubles with every fruitless draft in a row
};

// Tokens proposed and kept, per request and in the server's totals.
struct SpecCounters {
  uint64_t drafted = 0;   // draft tokens sent through the layers
  uint64_t accepted = 0;  // of those, kept
  uint64_t passes = 0;    // verification passes (a draft + the sampled token)
};

}  // namespace baton
