// The GBNF reader: every construct parses into a grammar that accepts exactly its language
// (checked through the matcher), and malformed grammars fail naming line and column.
#include <catch2/catch.hpp>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/matcher.h"

namespace {

using namespace baton::grammar;

bool matches(const std::string& gbnf, const std::string& text) {
  Matcher m(std::make_shared<const Grammar>(parse_gbnf(gbnf)));
  return m.accept(text) && m.can_end();
}

std::string error_of(const std::string& gbnf) {
  try {
    parse_gbnf(gbnf);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("gbnf: literals, sequences, alternatives and groups", "[grammar]") {
  const std::string g = "root ::= \"ab\" (\"c\" | \"d\" \"e\") tail\ntail ::= \"!\" | \"?\"\n";
  CHECK(matches(g, "abc!"));
  CHECK(matches(g, "abde?"));
  CHECK_FALSE(matches(g, "abd!"));
  CHECK_FALSE(matches(g, "abc"));
  CHECK_FALSE(matches(g, "abc!!"));
}

TEST_CASE("gbnf: repetitions *, +, ?, {m}, {m,}, {m,n}", "[grammar]") {
  CHECK(matches("root ::= \"a\"*", ""));
  CHECK(matches("root ::= \"a\"*", "aaaa"));
  CHECK_FALSE(matches("root ::= \"a\"+", ""));
  CHECK(matches("root ::= \"a\"+ \"b\"", "aaab"));
  CHECK(matches("root ::= \"x\"? \"y\"", "y"));
  CHECK(matches("root ::= \"x\"? \"y\"", "xy"));
  CHECK_FALSE(matches("root ::= \"x\"? \"y\"", "xxy"));
  CHECK(matches("root ::= [0-9]{3}", "123"));
  CHECK_FALSE(matches("root ::= [0-9]{3}", "12"));
  CHECK_FALSE(matches("root ::= [0-9]{3}", "1234"));
  CHECK(matches("root ::= [0-9]{2,}", "12345"));
  CHECK_FALSE(matches("root ::= [0-9]{2,}", "1"));
  CHECK(matches("root ::= [0-9]{1,3}", "1"));
  CHECK(matches("root ::= [0-9]{1,3}", "123"));
  CHECK_FALSE(matches("root ::= [0-9]{1,3}", "1234"));
  CHECK(matches("root ::= \"ab\"{2}", "abab"));  // a repeated literal repeats whole
  CHECK(matches("root ::= (\"a\" | \"b\"){0,2} \".\"", "ba."));
}

TEST_CASE("gbnf: character classes, ranges, negation, any, escapes and UTF-8", "[grammar]") {
  CHECK(matches("root ::= [a-cx]+", "abcx"));
  CHECK_FALSE(matches("root ::= [a-cx]+", "abd"));
  CHECK(matches("root ::= [^\"\\\\]*", "hello world"));
  CHECK_FALSE(matches("root ::= [^\"\\\\]*", "a\"b"));
  CHECK(matches("root ::= . .", "é!"));
  CHECK(matches("root ::= \"\\n\\t\\\\\\\"\"", "\n\t\\\""));
  CHECK(matches("root ::= \"\\x41\\u00e9\\U0001F600\"", "Aé\xF0\x9F\x98\x80"));
  CHECK(matches("root ::= [α-ω]+", "αβγ"));
  CHECK_FALSE(matches("root ::= [α-ω]+", "αb"));
  CHECK(matches("root ::= [\\[\\]\\-]+", "[-]"));
}

TEST_CASE("gbnf: rules over several lines, comments, and leading '|' continuation", "[grammar]") {
  const std::string g =
      "# a comment\n"
      "root ::=\n"
      "  item (\n"
      "    \",\" item  # inside a group newlines are free\n"
      "  )*\n"
      "item ::= \"x\"\n"
      "       | \"y\"\n";
  CHECK(matches(g, "x,y,x"));
  CHECK(matches(g, "y"));
  CHECK_FALSE(matches(g, "x,"));
}

TEST_CASE("gbnf: errors name the problem, the line and the column", "[grammar]") {
  CHECK_THAT(error_of("root ::= foo\n"), Catch::Contains("rule 'foo' is used (line 1) but never defined"));
  CHECK_THAT(error_of("start ::= \"a\"\n"), Catch::Contains("no rule named 'root'"));
  CHECK_THAT(error_of("root ::= \"a\n"), Catch::Contains("unterminated string literal at line 1"));
  CHECK_THAT(error_of("root ::= [a-z\n"), Catch::Contains("unterminated character class"));
  CHECK_THAT(error_of("root ::= (\"a\" \n"), Catch::Contains("expected ')'"));
  CHECK_THAT(error_of("root ::= \"a\"\nx ::= \"\\q\"\n"), Catch::Contains("unknown escape '\\q' at line 2, column 8"));
  CHECK_THAT(error_of("root ::= * \"a\"\n"), Catch::Contains("'*' has nothing to repeat at line 1, column 10"));
  CHECK_THAT(error_of("root ::= \"a\"{3,1}\n"), Catch::Contains("max < min"));
  CHECK_THAT(error_of("root ::= root \"a\" | \"b\"\n"), Catch::Contains("rule 'root' is left-recursive"));
  CHECK_THAT(error_of("root ::= x\nx ::= \"a\"? x \"b\"\n"), Catch::Contains("left-recursive"));
  CHECK_THAT(error_of("root ::= \"a\"\nroot ::= \"b\"\n"), Catch::Contains("defined twice at line 2"));
  CHECK_THAT(error_of("root ::= [z-a]\n"), Catch::Contains("reversed"));
  CHECK_THAT(error_of("root \"a\"\n"), Catch::Contains("expected '::='"));
}
