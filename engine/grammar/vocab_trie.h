// The vocabulary's token byte strings (the pieces the detokenizer emits) as a prefix trie, so
// that the allowed tokens of a grammar state are found by walking the trie once: a byte that
// the grammar rejects prunes every token below it. Tokens with no bytes (control tokens) are
// not in the trie. Immutable; shared by every request on the same tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace baton::tokenizer {
class Tokenizer;
}

namespace baton::grammar {

class VocabTrie {
 public:
  struct Node {
    uint32_t first_edge = 0, n_edges = 0;    // children: edges_[first_edge, +n_edges), by byte
    uint32_t first_token = 0, n_tokens = 0;  // tokens spelled exactly by the path: tokens_[...]
  };
  struct Edge {
    uint8_t byte = 0;
    uint32_t child = 0;
  };

  // pieces[id] = token id's bytes ("" = not a text token).
  explicit VocabTrie(const std::vector<std::string>& pieces);
  // The trie of a tokenizer's pieces (token_to_piece without specials), built once per
  // vocabulary and cached for the process.
  static std::shared_ptr<const VocabTrie> of(const tokenizer::Tokenizer& tokenizer);

  const Node& root() const { return nodes_[0]; }
  const Node& node(uint32_t i) const { return nodes_[i]; }
  const Edge& edge(uint32_t i) const { return edges_[i]; }
  int32_t token(uint32_t i) const { return tokens_[i]; }
  size_t n_vocab() const { return n_vocab_; }
  size_t n_nodes() const { return nodes_.size(); }
  size_t max_depth() const { return max_depth_; }  // the longest piece, in bytes
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }

 private:
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<int32_t> tokens_;
  std::vector<std::string> pieces_;
  size_t n_vocab_ = 0;
  size_t max_depth_ = 0;
};

}  // namespace baton::grammar
