// Text <-> token ids for a model, built from its GGUF metadata and matching llama.cpp's
// llama_tokenize / llama_token_to_piece / llama_detokenize for SPM ("llama"), byte-level BPE
// ("gpt2", per tokenizer.ggml.pre) and WordPiece ("bert") vocabularies.
// Immutable once built; every method is const and thread-safe. Token ids are int32 everywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/encoder.h"
#include "engine/tokenizer/vocab.h"

namespace baton::gguf {
class Metadata;
}

namespace baton::tokenizer {

class Tokenizer {
 public:
  // Throws FormatError (bad/missing tokenizer keys, naming the key) or UnsupportedError
  // (unknown tokenizer.ggml.model).
  static std::unique_ptr<Tokenizer> from_metadata(const gguf::Metadata& md);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;  // the encoder refers to vocab_
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Token ids of `text`.
  //  add_special:   add what the model adds around a prompt: BOS if add_bos_default(), EOS if
  //                 the model sets add_eos_token, and for WordPiece [CLS] ... [SEP].
  //  parse_special: recognise CONTROL/UNKNOWN token texts (e.g. "<|im_start|>") inside `text`,
  //                 longest first. USER_DEFINED tokens are always recognised (as in llama.cpp
  //                 and HF); with parse_special off, control texts are tokenized as plain text.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes token `id` stands for (may be part of a UTF-8 character). CONTROL and UNKNOWN
  // tokens give "" unless `special`, which renders their text. Throws baton::Error for an id
  // outside [0, n_vocab).
  std::string token_to_piece(int32_t id, bool special = false) const;

  // The concatenated pieces of `ids`: exactly the text llama-server returns for generated
  // tokens. Throws baton::Error for an id out of range.
  std::string decode(std::span<const int32_t> ids, bool special = false) const;
  // llama_detokenize(remove_special=false): like decode(), but the SPM leading space of the
  // first piece is dropped (unless the first token is BOS), and vocabularies with clean_spaces
  // (most BPE, WPM) tidy " ," " ." " 's" etc. The inverse of encode() for whole texts.
  std::string detokenize(std::span<const int32_t> ids, bool special = false) const;

  int32_t n_vocab() const { return vocab_.n_tokens(); }
  int32_t bos() const { return vocab_.special().bos; }  // kNoToken (-1) when the model has none
  int32_t eos() const { return vocab_.special().eos; }
  int32_t eot() const { return vocab_.special().eot; }
  int32_t unk() const { return vocab_.special().unk; }
  int32_t pad() const { return vocab_.special().pad; }
  int32_t sep() const { return vocab_.special().sep; }
  // End of generation: eos, eot, eom and the end-of-turn texts llama.cpp recognises.
  bool is_eog(int32_t id) const { return vocab_.is_eog(id); }
  bool is_control(int32_t id) const;
  bool add_bos_default() const { return vocab_.add_bos(); }
  bool add_eos_default() const { return vocab_.add_eos(); }
  // The token's text as stored in the vocabulary (e.g. "▁the", "Ġthe", "<0x0A>").
  const std::string& token_text(int32_t id) const;
  // Id of the vocabulary entry with exactly this text, or kNoToken.
  int32_t find_token(std::string_view text) const { return vocab_.find(text); }
  const Vocab& vocab() const { return vocab_; }

 private:
  struct Fragment {
    int32_t token;      // kNoToken for raw text
    size_t offset = 0;  // raw text range in the input
    size_t length = 0;
  };

  explicit Tokenizer(Vocab vocab);
  void check_id(int32_t id) const;
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
  void encode_text(std::string_view text, bool prefix_space, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::unique_ptr<Encoder> encoder_;
  std::vector<int32_t> special_tokens_;  // CONTROL/USER_DEFINED/UNKNOWN, longest text first
  std::vector<std::string> pieces_;      // rendering of every token with special = true
};

// Incremental detokenizer for streamed generation: feeds pieces through but only ever returns
// complete UTF-8, holding back a multi-byte character split across tokens (SPM byte tokens,
// byte-level BPE). Output is the plain concatenation of pieces (what llama-server streams): no
// leading-space removal, no space cleaning. Not thread-safe; one per stream.
class StreamDetokenizer {
 public:
  explicit StreamDetokenizer(const Tokenizer& tokenizer, bool special = false)
      : tokenizer_(tokenizer), special_(special) {}

  // The text that became complete with this token (may be empty). Throws for a bad id.
  std::string push(int32_t id);
  // Whatever is still held back (an incomplete character at end of stream), then resets.
  std::string flush();
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool special_;
  std::string pending_;
};

}  // namespace baton::tokenizer
