// Grammars and JSON schemas a client sends cannot take the server's CPU (issue 24): through a
// real engine-coordinator process over stories260K, the fuzz_grammar finding scaled up (empty
// alternatives inside a repetition: {4,4} took 37 s in the fuzz build; {6,6}, 101^6 paths, never
// finished in a release build, on the scheduler's thread, so every other request waited too) and a schema of nested
// anyOf (3^25 paths) are answered in a couple of seconds with text the grammar allows; grammars past the matcher's or
// the parser's bounds are 400s naming the limit; /health answers throughout.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <string>

#include "api_test_util.h"
#include "coordinator_process.h"
#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/matcher.h"

namespace {

using nlohmann::json;
using namespace baton::test;
using Clock = std::chrono::steady_clock;

struct TimedAnswer {
  int status = 0;  // 0: no answer within the client's 15 s
  json body;
  double seconds = 0;
};

TimedAnswer limits_post(int port, const std::string& path, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(15);
  const auto t0 = Clock::now();
  auto res = c.Post(path.c_str(), body.dump(), "application/json");
  TimedAnswer a;
  a.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!res) return a;
  a.status = res->status;
  a.body = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  return a;
}

std::string empty_alternatives_gbnf() {
  std::string alts;
  for (int i = 0; i < 100; ++i) alts += "| ";
  return "root ::= (\"ab\" " + alts + "| [x-z]+){6,6} . [^\\u00e9]\n";
}

json nested_any_of(int depth) {
  json defs = json::object();
  for (int i = 0; i < depth; ++i) {
    const std::string next = fmt::format("#/$defs/d{}", i + 1);
    defs[fmt::format("d{}", i)] = {{"anyOf", {{{"$ref", next}}, {{"$ref", next}}, {{"$ref", next}}}}};
  }
  defs[fmt::format("d{}", depth)] = {{"type", "integer"}};
  return {{"$defs", defs}, {"$ref", "#/$defs/d0"}};
}

// The text is what the grammar allows so far (generation may stop at max_tokens).
bool limits_grammar_allows(const std::string& gbnf, const std::string& text) {
  baton::grammar::Matcher m(std::make_shared<const baton::grammar::Grammar>(baton::grammar::parse_gbnf(gbnf)));
  return m.accept(text);
}

void limits_check_health(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(5);
  auto h = c.Get("/health");
  REQUIRE(h);
  CHECK(h->status == 200);
}

}  // namespace

TEST_CASE("grammars a client sends are answered within seconds or refused naming the limit", "[api][grammar]") {
  CoordinatorProcess c({"--model", stories_path(), "-t", "1", "--slots", "2"});

  SECTION("the fuzz finding as the grammar of /v1/completions: allowed text in a couple of seconds") {
    const std::string gbnf = empty_alternatives_gbnf();
    TimedAnswer a = limits_post(c.port(), "/v1/completions",
                                {{"prompt", "Once upon a time"}, {"grammar", gbnf}, {"max_tokens", 8}, {"seed", 1}});
    INFO(a.body.dump() << " after " << a.seconds << " s");
    REQUIRE(a.status == 200);  // before: no answer for about 37 s
    CHECK(a.seconds < 3.0);
    const std::string text = a.body["choices"][0]["text"];
    CHECK(limits_grammar_allows(gbnf, text));
  }

  SECTION("and as the grammar of /v1/chat/completions") {
    TimedAnswer a = limits_post(c.port(), "/v1/chat/completions",
                                {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                                 {"grammar", empty_alternatives_gbnf()},
                                 {"max_tokens", 8}});
    INFO(a.body.dump() << " after " << a.seconds << " s");
    REQUIRE(a.status == 200);
    CHECK(a.seconds < 3.0);
  }

  SECTION("a JSON schema of nested anyOf: a number in a couple of seconds") {
    TimedAnswer a =
        limits_post(c.port(), "/v1/chat/completions",
                    {{"messages", {{{"role", "user"}, {"content", "A number"}}}},
                     {"response_format",
                      {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", nested_any_of(25)}}}}},
                     {"max_tokens", 6}});
    INFO(a.body.dump() << " after " << a.seconds << " s");
    REQUIRE(a.status == 200);  // before: 3^25 paths at the start, no answer
    CHECK(a.seconds < 3.0);
    const std::string content = a.body["choices"][0]["message"]["content"];
    CHECK(content.find_first_not_of("-0123456789") == std::string::npos);
  }

  SECTION("a grammar with more parse states than the matcher keeps: 400 naming the limit") {
    TimedAnswer a =
        limits_post(c.port(), "/v1/completions", {{"prompt", "x"}, {"grammar", "root ::= (\"\" | \"a\"){0,2000}\n"}});
    INFO(a.body.dump());
    REQUIRE(a.status == 400);
    CHECK(a.seconds < 3.0);
    CHECK(a.body["error"]["param"] == "grammar");
    CHECK_THAT(a.body["error"]["message"].get<std::string>(),
               Catch::Contains(fmt::format("more than {} parse states", baton::grammar::kMaxParseStacks)));
  }

  SECTION("a JSON schema that spells out too large a grammar: 400 naming the schema") {
    json schema = {{"type", "object"}, {"properties", json::object()}};
    for (int i = 0; i < 30; ++i)
      schema["properties"][fmt::format("p{}", i)] = {{"type", "string"}, {"maxLength", 10000}};
    TimedAnswer a = limits_post(
        c.port(), "/v1/chat/completions",
        {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
         {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "big"}, {"schema", schema}}}}}});
    INFO(a.body.dump());
    REQUIRE(a.status == 400);
    CHECK(a.seconds < 3.0);
    CHECK(a.body["error"]["param"] == "response_format.json_schema.schema");
    CHECK_THAT(a.body["error"]["message"].get<std::string>(), Catch::Contains("symbols"));
  }

  limits_check_health(c.port());
}
