// A recursive-descent reader of GBNF that writes the flat Grammar directly: each group and
// each repetition becomes a helper rule named after its parent ("value-3"), so the matcher only
// ever sees sequences of character classes and rule references.
#include "engine/grammar/gbnf_parser.h"

#include <map>

#include "engine/grammar/grammar_check.h"

namespace baton::grammar {
namespace {

using Sequence = std::vector<Symbol>;
using Alternatives = std::vector<Sequence>;

constexpr uint32_t kMaxRepeat = 10000;  // {m,n} bounds: each copy is spelled out
// All copies together: a short text must not build a huge grammar ("abcd..."{10000} inside
// (...){10000} would otherwise spell out billions of symbols).
constexpr uint64_t kMaxSpelledSymbols = 1u << 17;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Grammar parse(std::string_view root) {
    skip_space(true);
    while (pos_ < text_.size()) {
      parse_rule();
      skip_space(true);
    }
    for (size_t i = 0; i < rules_.size(); ++i)
      if (!defined_[i])
        fail<GrammarError>("grammar: rule '{}' is used (line {}) but never defined", g_.rule_names[i], first_use_[i]);
    auto it = ids_.find(std::string(root));
    if (it == ids_.end() || !defined_[it->second])
      fail<GrammarError>("grammar: no rule named '{}' (the start rule)", root);
    g_.root = it->second;
    for (size_t r = 0; r < rules_.size(); ++r) {
      for (const Sequence& seq : rules_[r]) {
        g_.alternatives[r].push_back(static_cast<uint32_t>(g_.code.size()));
        g_.code.insert(g_.code.end(), seq.begin(), seq.end());
        g_.code.push_back(Symbol{Symbol::Kind::kEnd, 0});
      }
    }
    check_no_left_recursion(g_);
    return std::move(g_);
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    fail<GrammarError>("grammar: {} at line {}, column {}", what, line, col);
  }
  size_t line() const {
    size_t n = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) n += text_[i] == '\n';
    return n;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }

  // Spaces, tabs and comments; newlines too when `newlines` (inside groups, between rules).
  void skip_space(bool newlines) {
    while (!at_end()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  // At a newline outside groups: does the rule continue (next non-blank line starts with '|')?
  bool continues_on_next_line() {
    size_t save = pos_;
    skip_space(true);
    if (peek() == '|') return true;
    pos_ = save;
    return false;
  }

  std::string parse_name() {
    size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (start == pos_) error(fmt::format("expected a rule name, got '{}'", peek()));
    return std::string(text_.substr(start, pos_ - start));
  }

  uint32_t rule_id(const std::string& name) {
    auto [it, added] = ids_.try_emplace(name, static_cast<uint32_t>(rules_.size()));
    if (added) {
      rules_.emplace_back();
      defined_.push_back(false);
      first_use_.push_back(line());
      g_.rule_names.push_back(name);
      g_.alternatives.emplace_back();
    }
    return it->second;
  }
  uint32_t helper_rule(uint32_t parent, Alternatives alts) {
    std::string name = fmt::format("{}-{}", g_.rule_names[parent], ++helpers_);
    uint32_t id = rule_id(name);
    rules_[id] = std::move(alts);
    defined_[id] = true;
    return id;
  }

  void parse_rule() {
    std::string name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") error(fmt::format("expected '::=' after rule name '{}'", name));
    pos_ += 3;
    skip_space(true);
    uint32_t id = rule_id(name);
    if (defined_[id]) error(fmt::format("rule '{}' is defined twice", name));
    defined_[id] = true;
    Alternatives alts = parse_alternatives(id, false);
    rules_[id] = std::move(alts);
    if (!at_end() && peek() != '\n') error(fmt::format("expected the end of the line, got '{}'", peek()));
  }

  Alternatives parse_alternatives(uint32_t rule, bool nested) {
    Alternatives alts;
    alts.push_back(parse_sequence(rule, nested));
    for (;;) {
      if (!nested && peek() == '\n' && !continues_on_next_line()) break;
      if (peek() != '|') break;
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(rule, nested));
    }
    return alts;
  }

  Sequence parse_sequence(uint32_t rule, bool nested) {
    Sequence seq;
    size_t last_start = 0;  // where the element a repetition applies to begins
    bool have_last = false;
    for (;;) {
      char c = peek();
      if (at_end() || c == '|' || c == ')' || c == '\n') break;
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_last) error(fmt::format("'{}' has nothing to repeat", c));
        apply_repetition(rule, seq, last_start);
        have_last = false;
      } else {
        last_start = seq.size();
        have_last = true;
        parse_element(rule, seq);
      }
      skip_space(nested);
    }
    return seq;
  }

  void parse_element(uint32_t rule, Sequence& seq) {
    char c = peek();
    if (c == '"') {
      ++pos_;
      while (!at_end() && peek() != '"') {
        if (peek() == '\n') error("unterminated string literal");
        uint32_t cp = parse_char();
        seq.push_back(chars(CharClass{false, {{cp, cp}}}));
      }
      if (at_end()) error("unterminated string literal");
      ++pos_;
    } else if (c == '[') {
      ++pos_;
      CharClass cls;
      if (peek() == '^') {
        cls.negated = true;
        ++pos_;
      }
      while (!at_end() && peek() != ']') {
        if (peek() == '\n') error("unterminated character class");
        uint32_t lo = parse_char(), hi = lo;
        if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
          ++pos_;
          hi = parse_char();
          if (hi < lo) error(fmt::format("character range U+{:04X}-U+{:04X} is reversed", lo, hi));
        }
        cls.ranges.push_back({lo, hi});
      }
      if (at_end()) error("unterminated character class");
      ++pos_;
      seq.push_back(chars(std::move(cls)));
    } else if (c == '.') {
      ++pos_;
      seq.push_back(chars(CharClass{true, {}}));
    } else if (c == '(') {
      ++pos_;
      skip_space(true);
      Alternatives alts = parse_alternatives(rule, true);
      if (peek() != ')') error("expected ')' to close the group");
      ++pos_;
      seq.push_back(ref(helper_rule(rule, std::move(alts))));
    } else if (is_name_char(c)) {
      size_t at = pos_;
      std::string name = parse_name();
      size_t save = pos_;
      skip_space(false);
      if (text_.substr(pos_, 3) == "::=") {
        pos_ = at;
        error(fmt::format("rule '{}' starts on the line of the previous rule (a rule ends at the end of its line)",
                          name));
      }
      pos_ = save;
      seq.push_back(ref(rule_id(name)));
    } else {
      error(fmt::format("unexpected '{}'", c));
    }
  }

  void apply_repetition(uint32_t rule, Sequence& seq, size_t last_start) {
    const Sequence item(seq.begin() + static_cast<ptrdiff_t>(last_start), seq.end());
    seq.resize(last_start);
    uint32_t min = 0, max = 0;
    bool unbounded = false;
    char c = peek();
    ++pos_;
    if (c == '*') unbounded = true;
    else if (c == '+') {
      min = 1;
      unbounded = true;
    } else if (c == '?') max = 1;
    else {  // {m}, {m,}, {m,n}
      skip_space(false);
      min = parse_count();
      skip_space(false);
      if (peek() == ',') {
        ++pos_;
        skip_space(false);
        if (peek() == '}') unbounded = true;
        else max = parse_count();
        skip_space(false);
      } else {
        max = min;
      }
      if (peek() != '}') error("expected '}' to close the repetition");
      ++pos_;
      if (!unbounded && max < min) error(fmt::format("repetition {{{},{}}} has max < min", min, max));
    }
    spelled_ += (static_cast<uint64_t>(min) + (unbounded ? 1 : max - min)) * (item.size() + 1);
    if (spelled_ > kMaxSpelledSymbols)
      fail<GrammarLimitError>(
          "grammar: the repetitions up to line {} spell out more than {} symbols (the limit of a grammar)", line(),
          kMaxSpelledSymbols);
    for (uint32_t i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
    if (unbounded) {
      // R ::= item R | (empty)
      uint32_t r = helper_rule(rule, {});
      Sequence again = item;
      again.push_back(ref(r));
      rules_[r] = {again, {}};
      seq.push_back(ref(r));
    } else if (max > min) {
      // Nested optionals: R_k ::= item R_{k-1} | (empty), R_1 ::= item | (empty).
      uint32_t inner = helper_rule(rule, {item, {}});
      for (uint32_t k = 1; k < max - min; ++k) {
        Sequence more = item;
        more.push_back(ref(inner));
        inner = helper_rule(rule, {more, {}});
      }
      seq.push_back(ref(inner));
    }
  }

  uint32_t parse_count() {
    size_t start = pos_;
    uint64_t n = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      n = n * 10 + static_cast<uint64_t>(peek() - '0');
      if (n > kMaxRepeat) error(fmt::format("repetition count above {}", kMaxRepeat));
      ++pos_;
    }
    if (start == pos_) error("expected a number in the repetition");
    return static_cast<uint32_t>(n);
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      char c = peek();
      uint32_t d;
      if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
      else error(fmt::format("expected {} hex digits in the escape", digits));
      v = v * 16 + d;
      ++pos_;
    }
    if (v > 0x10FFFF) error(fmt::format("code point U+{:X} is beyond Unicode", v));
    return v;
  }

  // One character of a literal or class: an escape or one UTF-8 encoded code point.
  uint32_t parse_char() {
    unsigned char c = static_cast<unsigned char>(peek());
    if (c == '\\') {
      ++pos_;
      char e = peek();
      ++pos_;
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '0': return 0;
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
        case '\'': return static_cast<uint32_t>(e);
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        default: pos_ -= 2; error(fmt::format("unknown escape '\\{}'", e));
      }
    }
    int extra = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    if (extra < 0) error("invalid UTF-8 in the grammar text");
    uint32_t cp = extra == 0 ? c : c & (0x3Fu >> extra);
    ++pos_;
    for (int i = 0; i < extra; ++i) {
      unsigned char b = static_cast<unsigned char>(peek());
      if ((b & 0xC0) != 0x80) error("invalid UTF-8 in the grammar text");
      cp = (cp << 6) | (b & 0x3F);
      ++pos_;
    }
    return cp;
  }

  Symbol chars(CharClass cls) {
    g_.classes.push_back(std::move(cls));
    return Symbol{Symbol::Kind::kChars, static_cast<uint32_t>(g_.classes.size() - 1)};
  }
  static Symbol ref(uint32_t rule) { return Symbol{Symbol::Kind::kRule, rule}; }

  std::string_view text_;
  size_t pos_ = 0;
  Grammar g_;
  std::vector<Alternatives> rules_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  std::map<std::string, uint32_t> ids_;
  uint32_t helpers_ = 0;
  uint64_t spelled_ = 0;  // symbols the repetitions copied so far
};

}  // namespace

Grammar parse_gbnf(std::string_view text, std::string_view root) { return Parser(text).parse(root); }

}  // namespace baton::grammar
