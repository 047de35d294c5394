// Byte-level BPE merge loop (see bpe.h).
#include "engine/tokenizer/bpe.h"

#include <queue>

#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/utf8.h"

namespace baton::tokenizer {
namespace {

const PreTokenizerSpec& spec_of(const Vocab& vocab) {
  const PreTokenizerSpec* spec = find_pre_tokenizer(vocab.pre_name());
  return spec ? *spec : default_pre_tokenizer();
}

struct BpeSymbol {
  int prev;
  int next;
  size_t offset;
  size_t n;    // bytes; 0 once merged into its left neighbour
  int32_t id;  // token of this text, kNoToken if none
};

struct BpeBigram {
  int left;
  int right;
  int32_t rank;
  int32_t left_id;  // the pair it was made from, to detect stale entries
  int32_t right_id;
  int32_t merged;
};

struct BpeLowerPriority {
  bool operator()(const BpeBigram& a, const BpeBigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

BpeEncoder::BpeEncoder(const Vocab& vocab) : vocab_(vocab), splitter_(spec_of(vocab).patterns) {}

void BpeEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  const std::string clean = utf8_sanitize(text);
  std::string word;
  for (std::string_view piece : splitter_.split(clean)) {
    word.clear();
    byte_level_encode(piece, word);
    encode_word(word, out);
  }
}

void BpeEncoder::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (vocab_.ignore_merges()) {
    if (const int32_t id = vocab_.find(word); id != kNoToken) {
      out.push_back(id);
      return;
    }
  }
  std::vector<BpeSymbol> symbols;
  symbols.reserve(word.size());
  for (size_t offset = 0; offset < word.size();) {
    const size_t n = std::min(utf8_seq_len(static_cast<uint8_t>(word[offset])), word.size() - offset);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back(
        {index - 1, offset + n == word.size() ? -1 : index + 1, offset, n, vocab_.find(word.substr(offset, n))});
    offset += n;
  }

  std::priority_queue<BpeBigram, std::vector<BpeBigram>, BpeLowerPriority> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t l = symbols[left].id;
    const int32_t r = symbols[right].id;
    if (l == kNoToken || r == kNoToken) return;
    int32_t merged = kNoToken;
    const int32_t rank = vocab_.merge_rank(l, r, merged);
    if (rank < 0) return;
    queue.push({left, right, rank, l, r, merged});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const BpeBigram b = queue.top();
    queue.pop();
    BpeSymbol& l = symbols[b.left];
    BpeSymbol& r = symbols[b.right];
    if (l.n == 0 || r.n == 0 || l.id != b.left_id || r.id != b.right_id) continue;  // stale
    l.n += r.n;
    l.id = b.merged;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int i = 0; i != -1 && !symbols.empty(); i = symbols[i].next) {
    const BpeSymbol& s = symbols[i];
    if (s.id != kNoToken) {
      out.push_back(s.id);
      continue;
    }
    // a text with no token: emit whatever single bytes of it are tokens (llama.cpp's fallback)
    for (size_t k = 0; k < s.n; ++k) {
      const int32_t id = vocab_.find(word.substr(s.offset + k, 1));
      if (id != kNoToken) out.push_back(id);
    }
  }
}

}  // namespace baton::tokenizer
