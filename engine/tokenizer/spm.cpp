// SPM merge loop (see spm.h).
#include "engine/tokenizer/spm.h"

#include <queue>

#include "engine/tokenizer/utf8.h"

namespace baton::tokenizer {
namespace {

struct SpmSymbol {
  int prev;
  int next;
  size_t offset;  // into the text
  size_t n;       // bytes; 0 once merged into its left neighbour
};

struct SpmBigram {
  int left;
  int right;
  float score;
  size_t size;  // bytes of the merged text, to detect stale entries
};

struct SpmLowerPriority {
  bool operator()(const SpmBigram& a, const SpmBigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void SpmEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<SpmSymbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    const size_t n = std::min(utf8_seq_len(static_cast<uint8_t>(text[offset])), text.size() - offset);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, offset + n == text.size() ? -1 : index + 1, offset, n});
    offset += n;
  }
  if (symbols.empty()) return;

  std::priority_queue<SpmBigram, std::vector<SpmBigram>, SpmLowerPriority> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const SpmSymbol& l = symbols[left];
    const size_t size = l.n + symbols[right].n;
    const int32_t id = vocab_.find(text.substr(l.offset, size));
    if (id == kNoToken) return;
    queue.push({left, right, vocab_.token(id).score, size});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const SpmBigram b = queue.top();
    queue.pop();
    SpmSymbol& l = symbols[b.left];
    SpmSymbol& r = symbols[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  for (int i = 0; i != -1; i = symbols[i].next) {
    const SpmSymbol& s = symbols[i];
    const std::string_view piece = text.substr(s.offset, s.n);
    // a merged symbol is always a token; only single characters can miss
    if (const int32_t id = vocab_.find(piece); id != kNoToken) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      const int32_t id = vocab_.byte_token(static_cast<uint8_t>(c));
      if (id != kNoToken) out.push_back(id);
    }
  }
}

}  // namespace baton::tokenizer
