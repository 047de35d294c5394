// The matcher's bounds (matcher.h) and the parser's (gbnf_parser.cpp): grammars that reach the
// same parse state along exponentially many paths start and step in milliseconds (each state is
// expanded once a step); grammars that keep too many states alive, or spell out too many
// symbols, are refused with a GrammarLimitError naming the limit; JSON schemas that compile to
// either are refused by the compiler, naming the schema.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/matcher.h"

namespace {

using namespace baton::grammar;
using Clock = std::chrono::steady_clock;

std::shared_ptr<const Grammar> limits_compile(const std::string& gbnf) {
  return std::make_shared<const Grammar>(parse_gbnf(gbnf));
}

double limits_seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool limits_accepts_whole(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  Matcher m(g);
  return m.accept(text) && m.can_end();
}

// fuzz_grammar's 37 s input, cleaned and scaled: a hundred empty alternatives in a group repeated 6 times.
std::string empty_alternatives_grammar() {
  std::string alts;
  for (int i = 0; i < 100; ++i) alts += "| ";
  return "root ::= (\"ab\" " + alts + "| [x-z]+){6,6} . [^\\u00e9]\n";
}

// anyOf of anyOf ... through $defs: linear in size, 3^depth paths to the same states.
nlohmann::ordered_json nested_any_of_schema(int depth) {
  nlohmann::ordered_json defs = nlohmann::ordered_json::object();
  for (int i = 0; i < depth; ++i) {
    const std::string next = fmt::format("#/$defs/d{}", i + 1);
    defs[fmt::format("d{}", i)] = {{"anyOf", {{{"$ref", next}}, {{"$ref", next}}, {{"$ref", next}}}}};
  }
  defs[fmt::format("d{}", depth)] = {{"type", "integer"}};
  return {{"$defs", defs}, {"$ref", "#/$defs/d0"}};
}

}  // namespace

TEST_CASE("a hundred empty alternatives repeated 6 times start and match in milliseconds", "[grammar]") {
  const auto t0 = Clock::now();
  auto g = limits_compile(empty_alternatives_grammar());
  CHECK(limits_accepts_whole(g, "abxyzab!?"));
  CHECK(limits_accepts_whole(g, "x!?"));
  CHECK(limits_accepts_whole(g, "abababxyz!?"));
  CHECK_FALSE(limits_accepts_whole(g, "ababababababz!?"));  // six "ab" and a "z": more than six copies
  CHECK_FALSE(limits_accepts_whole(g, "ab!\xc3\xa9"));      // the last character is excluded
  CHECK(limits_seconds_since(t0) < 2.0);                    // 101^6 paths before each state was expanded once
}

TEST_CASE("3^30 paths to the same state through nested groups are followed in milliseconds", "[grammar]") {
  std::string gbnf = "root ::= r0 \";\"\n";
  for (int i = 0; i < 30; ++i) gbnf += fmt::format("r{} ::= (r{} | r{} | \"\" r{})\n", i, i + 1, i + 1, i + 1);
  gbnf += "r30 ::= [0-9]+\n";
  const auto t0 = Clock::now();
  auto g = limits_compile(gbnf);
  CHECK(limits_accepts_whole(g, "123;"));
  CHECK_FALSE(limits_accepts_whole(g, ";"));
  CHECK(limits_seconds_since(t0) < 2.0);
}

TEST_CASE("a grammar keeping more parse states alive than the limit is refused naming it", "[grammar]") {
  // ("" | "a"){0,2000}: after the start, one state per copy that could take the next "a".
  auto g = limits_compile("root ::= (\"\" | \"a\"){0,2000}\n");
  REQUIRE_THROWS_AS(Matcher(g), GrammarLimitError);
  REQUIRE_THROWS_WITH(Matcher(g),
                      Catch::Contains(fmt::format("{}", kMaxParseStacks)) && Catch::Contains("parse states"));
  // Well within it: a few hundred copies.
  auto small = limits_compile("root ::= (\"\" | \"a\"){0,300}\n");
  CHECK(limits_accepts_whole(small, std::string(300, 'a')));
  CHECK_FALSE(limits_accepts_whole(small, std::string(301, 'a')));
}

TEST_CASE("repetitions that spell out more symbols than the limit are refused naming it", "[grammar]") {
  const std::string literal(60, 'x');
  REQUIRE_THROWS_AS(parse_gbnf("root ::= \"" + literal + "\"{10000}\n"), GrammarLimitError);
  REQUIRE_THROWS_WITH(parse_gbnf("root ::= \"" + literal + "\"{10000}\n"), Catch::Contains("spell out more than"));
  // The same count over a group is one reference a copy: fine.
  CHECK_NOTHROW(parse_gbnf("root ::= (\"" + literal + "\"){10000}\n"));
}

TEST_CASE("JSON schemas: nested anyOf compiles and matches fast, sizes past the limit are refused naming the schema",
          "[grammar]") {
  const auto t0 = Clock::now();
  const std::string gbnf = json_schema_to_gbnf(nested_any_of_schema(25), false);
  CHECK(limits_accepts_whole(limits_compile(gbnf), "-42"));
  CHECK(limits_seconds_since(t0) < 2.0);

  nlohmann::ordered_json many = {{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
  for (int i = 0; i < 30; ++i) many["properties"][fmt::format("p{}", i)] = {{"type", "string"}, {"maxLength", 10000u}};
  REQUIRE_THROWS_AS(json_schema_to_gbnf(many, false), GrammarLimitError);
  REQUIRE_THROWS_WITH(json_schema_to_gbnf(many, false), Catch::Contains("JSON schema") && Catch::Contains("symbols"));
  // One such string is fine.
  CHECK_NOTHROW(json_schema_to_gbnf({{"type", "string"}, {"maxLength", 10000u}}, false));
}
