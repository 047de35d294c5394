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

enum class SpecMode { kOff, kNgram, kDraft };  // kDraft: a DraftModel (engine/runtime/draft_model.h)

class DraftModel;  // engine/runtime/draft_model.h

// Throws baton::Error for anything but "off" / "ngram" / "draft" (and "none", llama.cpp's word for off).
SpecMode parse_spec_mode(const std::string& name);

struct SpecParams {
  SpecMode mode = SpecMode::kNgram;
  int draft_max = 16;  // llama-server's --draft-max: tokens proposed per pass at most
  int draft_min = 0;   // llama-server's --draft-min: a shorter draft is not sent
  int ngram_min = 2;   // the shortest suffix that is looked up
  int ngram_max = 4;   // the longest (tried first)
  // Adapt the draft length to measured costs and acceptance (DraftPolicy); false: always draft
  // up to draft_max (tests that must see drafts whatever the machine's timing).
  bool adapt = true;
  // Throws baton::Error naming the field for values out of range.
  void validate() const;
  bool enabled() const { return mode != SpecMode::kOff && draft_max > 0; }
};

// The continuation (at most max_tokens) that followed the latest earlier occurrence of the last
// n tokens of `history`, for n from ngram_max down to ngram_min; empty when none occurs.
std::vector<int32_t> ngram_draft(std::span<const int32_t> history, const SpecParams& params, size_t max_tokens);

// The draft tokens a sequence may send after its unfed token at position `pos`: each needs a
// position in the context, and a pass of k drafts may give k + 1 tokens, which must not pass the
// `remaining` tokens it may still generate (< 0: no limit; otherwise >= 1).
size_t draft_room(int64_t n_ctx, size_t pos, int64_t remaining);

// A sequence's next draft after `history` (its last token is the unfed one): at most max_tokens,
// from `model` under SpecMode::kDraft, else by n-gram lookup; empty when shorter than draft_min.
std::vector<int32_t> propose_draft(const SpecParams& params, DraftModel* model, uint64_t seq_id,
                                   std::span<const int32_t> history, size_t max_tokens);

// How long a sequence's next draft should be, from what its trips through the layers cost and
// how its drafts fared. A trip of 1 + k rows is measured to cost t1 + k * m (t1: a plain trip;
// m: one more row, both moving averages of this sequence's own trips), and each draft token is
// kept with probability a given the ones before it were (a moving average too). The expected
// tokens of a trip, 1 + a + a^2 + ... + a^k, per its cost is the sequence's speed; the draft
// length that maximises it is the limit, 0 when no draft beats a plain trip by 2 %. While
// drafting does not pay, a draft of one token is still tried now and then (after 2, 4, ... 128
// plain trips: the pause doubles after every trial that does not make drafting pay), so a
// sequence whose text starts repeating finds out. On a model whose rows are cheap next to
// reading its weights (every large one) m is small and long drafts pay at modest acceptance; on
// a tiny model a row costs as much as the trip and speculation stops by itself.
class DraftPolicy {
 public:
  explicit DraftPolicy(int draft_max, bool adapt = true) : max_(draft_max), adapt_(adapt) {}
  // The longest draft to send before the next token (0: a plain trip). `sharing`: decoders in the
  // pass; each draft row slows all of them, so a draft must gain n times its rows' cost: the k
  // that maximises (n + a + ... + a^k) / (t1 + k m).
  size_t limit(size_t sharing = 1) const;
  // A trip of `rows` rows (1: plain) took `seconds`; of its rows - 1 draft tokens `kept` were kept.
  // seconds < 0: not measured (e.g. the first trip after the prompt).
  void record(size_t rows, size_t kept, double seconds);

  double acceptance() const { return accept_; }
  double row_seconds() const { return m_; }

 private:
  size_t best_length(size_t sharing) const;

  int max_;
  bool adapt_;
  double t1_ = -1;       // seconds of a plain trip (< 0: not measured yet)
  double m_ = -1;        // seconds one more row adds (< 0: not measured yet)
  double accept_ = 0.5;  // probability a draft token is kept after the ones before it were
  int pause_ = 0;        // plain trips to go before the next trial draft
  int next_pause_ = 2;   // doubles with every fruitless draft in a row
};

// Tokens proposed and kept, per request and in the server's totals.
struct SpecCounters {
  uint64_t drafted = 0;   // draft tokens sent through the layers
  uint64_t accepted = 0;  // of those, kept
  uint64_t passes = 0;    // verification passes (a draft + the sampled token)
};

}  // namespace baton
