// Pre-tokenizer table (names, regexes, flags) and the PCRE2 splitter. The regexes are the ones
// the Hugging Face tokenizer.json files use, as llama.cpp lists them per pre type; case-insensitive
// contractions are spelled out ('[sS]) as llama.cpp does, so (?i) never widens them to U+017F.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/tokenizer/pre_tokenizer.h"

#include <pcre2.h>

#include <utility>

#include "engine/base/error.h"

namespace baton::tokenizer {
namespace {

// GPT-2's pattern (also the second step of several others).
constexpr std::string_view kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";
// Llama 3 / cl100k: digits in groups of up to three.
constexpr std::string_view kLlama3 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// Qwen2: single digits.
constexpr std::string_view kQwen2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kTekken =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
// o200k (gpt-4o, llama4)
constexpr std::string_view kGpt4o =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kBailing =
    R"re('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re";
constexpr std::string_view kSeedCoder =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr std::string_view kBloom = R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{0964}\x{06D4}\x{060C})]+)re";
// CJK ideographs U+4E00..U+9FA5, U+0800..U+4E00 and Hangul U+AC00..U+D7FF (DeepSeek).
constexpr std::string_view kDeepseekCjk = R"re([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re";
// DeepSeek LLM's letter class: the cased letters (Lu, Ll, Lt) of its tokenizer.json, verbatim.
constexpr std::string_view kDeepseekLetters =
    R"re(\s?[\x{41}-\x{5A}\x{61}-\x{7A}\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)re";
constexpr std::string_view kDeepseekPunct =
    R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)re";
constexpr std::string_view kDeepseekV3Main =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

const std::vector<PreTokenizerSpec>& table() {
  static const std::vector<PreTokenizerSpec> specs = [] {
    std::vector<PreTokenizerSpec> t;
    auto add = [&](std::vector<std::string_view> names, std::vector<std::string_view> patterns, bool clean_spaces,
                   bool ignore_merges = false, bool add_bos = false) {
      t.push_back({std::move(names), std::move(patterns), clean_spaces, ignore_merges, add_bos});
    };
    add({"default"}, {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re(\p{N}+)re", R"re([0-9][0-9][0-9])re"}, true);
    add({"llama3", "llama-bpe", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"}, {kLlama3}, true,
        /*ignore_merges=*/true, /*add_bos=*/true);
    add({"dbrx", "smaug-bpe"}, {kLlama3}, true);
    add({"chatglm-bpe", "glm4"}, {kLlama3}, true);
    add({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "grok-2"}, {kQwen2}, false);
    add({"stablelm2", "megrez"}, {kQwen2}, true);
    add({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code",
         "roberta-bpe", "a.x-4.0", "mellum", "modern-bert", "exaone4", "mpt", "olmo", "jais"},
        {kGpt2}, true);
    add({"trillion", "granite-docling"}, {kGpt2}, false);
    add({"starcoder", "refact", "codeshell", "exaone", "minerva-7b"}, {R"re(\p{N})re", kGpt2}, true);
    add({"command-r", "smollm"}, {R"re(\p{N})re", kGpt2}, false);
    add({"falcon"}, {R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, R"re([0-9][0-9][0-9])re"}, true);
    add({"deepseek-llm"},
        {R"re([\r\n])re", kDeepseekLetters, kDeepseekPunct, R"re(\s+$)re", kDeepseekCjk, R"re(\p{N}+)re"}, false);
    add({"deepseek-coder"}, {R"re([\r\n])re", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kDeepseekCjk, R"re(\p{N})re"},
        false);
    add({"deepseek-v3"},
        {R"re(\p{N}{1,3})re", R"re([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)re", kDeepseekV3Main}, false);
    add({"poro-chat"}, {kBloom}, false);
    add({"bloom", "gpt3-finnish"}, {kBloom}, true);
    add({"viking"}, {kBloom, R"re(\p{N})re"}, false);
    add({"tekken"}, {kTekken}, false, /*ignore_merges=*/true, /*add_bos=*/true);
    add({"gpt-4o", "llama4"}, {kGpt4o}, false);
    add({"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailing}, false);
    add({"seed-coder"}, {kSeedCoder}, false);
    add({"chameleon"},
        {R"re(<sentinel:[0-9]+>)re", R"re((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)re", R"re(([\t\n]|    |  ))re",
         R"re(\p{N})re", R"re([\p{P}!-/:-@\[-`{-~])re", kGpt2},
        false, false, /*add_bos=*/true);
    return t;
  }();
  return specs;
}

}  // namespace

const PreTokenizerSpec* find_pre_tokenizer(std::string_view name) {
  for (const auto& spec : table())
    for (auto n : spec.names)
      if (n == name) return &spec;
  return nullptr;
}

const PreTokenizerSpec& default_pre_tokenizer() { return table().front(); }

std::vector<std::string_view> pre_tokenizer_names() {
  std::vector<std::string_view> names;
  for (const auto& spec : table()) names.insert(names.end(), spec.names.begin(), spec.names.end());
  return names;
}

struct RegexSplitter::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

RegexSplitter::RegexSplitter(const std::vector<std::string_view>& patterns) {
  for (auto pattern : patterns) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    auto c = std::make_unique<Compiled>();
    c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP, &error,
                            &offset, nullptr);
    if (!c->code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      fail("pre-tokenizer regex does not compile at offset {}: {} (pattern: {})", offset,
           reinterpret_cast<const char*>(message), pattern);
    }
    pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
    regexes_.push_back(std::move(c));
  }
}

RegexSplitter::~RegexSplitter() = default;

std::vector<std::string_view> RegexSplitter::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  std::vector<std::string_view> next;
  for (const auto& regex : regexes_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(regex->code, nullptr);
    if (!md) throw std::bad_alloc();
    next.clear();
    for (std::string_view piece : pieces) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t last = 0;  // end of the previous match
      size_t pos = 0;   // where the next search starts
      uint32_t options = PCRE2_NO_UTF_CHECK;
      while (pos <= piece.size()) {
        const int rc = pcre2_match(regex->code, subject, piece.size(), pos, options, md, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) {
          if (options == PCRE2_NO_UTF_CHECK || pos >= piece.size()) break;
          // no non-empty match at an empty-match position: step over one character
          options = PCRE2_NO_UTF_CHECK;
          size_t step = 1;
          while (pos + step < piece.size() && (static_cast<uint8_t>(piece[pos + step]) & 0xC0) == 0x80) ++step;
          pos += step;
          continue;
        }
        if (rc < 0) {
          PCRE2_UCHAR message[256];
          pcre2_get_error_message(rc, message, sizeof(message));
          pcre2_match_data_free(md);
          fail("pre-tokenizer regex failed on a {}-byte piece: {}", piece.size(),
               reinterpret_cast<const char*>(message));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t start = ov[0];
        const size_t end = ov[1];
        if (end == start) {
          // an empty match splits nothing; look for a non-empty one at the same place
          pos = start;
          options = PCRE2_NO_UTF_CHECK | PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;
          continue;
        }
        options = PCRE2_NO_UTF_CHECK;
        if (start > last) next.push_back(piece.substr(last, start - last));
        next.push_back(piece.substr(start, end - start));
        last = pos = end;
      }
      if (last < piece.size()) next.push_back(piece.substr(last));
    }
    pcre2_match_data_free(md);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace baton::tokenizer
