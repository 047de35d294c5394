// The matcher and its token mask: on the real 32000-token Llama-2 vocabulary the trie walk
// allows exactly the tokens a brute-force check (feed every token's bytes to a copy of the
// matcher) allows, state after state; random walks under the mask always produce sentences of
// the language; partial UTF-8 characters split across tokens are handled.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <random>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar/token_constraint.h"
#include "engine/tokenizer/tokenizer.h"
#include "fixtures.h"
#include "gguf/gguf_file.h"

namespace {

using namespace baton;
using namespace baton::grammar;

const tokenizer::Tokenizer& llama2_tokenizer() {
  static auto file = gguf::GgufFile::open(test::shared_path("models/llama-2-tiny-random.gguf"));
  static auto tok = tokenizer::Tokenizer::from_metadata(file->metadata());
  return *tok;
}

std::shared_ptr<const Grammar> compile(const std::string& gbnf) {
  return std::make_shared<const Grammar>(parse_gbnf(gbnf));
}

// Random walk: pick uniformly among the allowed tokens (and end when the grammar may end, with
// probability 1/4, or must end). Returns the text; checks the mask against brute force at
// each of the first `checked_steps` steps.
std::string random_walk(const std::shared_ptr<const Grammar>& g, const VocabTrie& trie, uint32_t seed,
                        size_t checked_steps, size_t max_steps = 400) {
  Matcher m(g);
  std::mt19937 rng(seed);
  std::string out;
  std::vector<uint8_t> allowed;
  for (size_t step = 0; step < max_steps; ++step) {
    m.mask(trie, allowed);
    if (step < checked_steps) {
      size_t mismatches = 0;
      for (size_t id = 0; id < trie.n_vocab(); ++id) {
        const std::string& piece = trie.piece(static_cast<int32_t>(id));
        Matcher copy = m;
        const bool ok = !piece.empty() && copy.accept(piece);
        mismatches += ok != (allowed[id] != 0);
      }
      INFO("step " << step << " after \"" << out << "\"");
      REQUIRE(mismatches == 0);
    }
    std::vector<int32_t> ids;
    for (size_t id = 0; id < allowed.size(); ++id)
      if (allowed[id]) ids.push_back(static_cast<int32_t>(id));
    if (m.can_end() && (ids.empty() || rng() % 4 == 0)) return out;
    REQUIRE_FALSE(ids.empty());
    const int32_t pick = ids[rng() % ids.size()];
    REQUIRE(m.accept(trie.piece(pick)));
    out += trie.piece(pick);
  }
  return out;
}

}  // namespace

TEST_CASE("matcher: the trie mask equals a brute-force check over the 32000-token Llama-2 vocabulary", "[grammar]") {
  auto trie = VocabTrie::of(llama2_tokenizer());
  REQUIRE(trie->n_vocab() == 32000);
  const std::string schema = R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 12},
      "age": {"type": "integer"},
      "tags": {"type": "array", "items": {"enum": ["a", "b c", "é"]}, "maxItems": 3}},
      "required": ["name", "age"], "additionalProperties": false})";
  auto g = compile(json_schema_to_gbnf(nlohmann::ordered_json::parse(schema), true));
  for (uint32_t seed : {1u, 2u}) random_walk(g, *trie, seed, 12);
  // Non-ASCII classes: tokens that are partial UTF-8 characters are allowed only when they can
  // still become a matching character.
  random_walk(compile("root ::= [α-ω]{1,6} \" \" [^a-z]{1,4}"), *trie, 3, 6);
}

TEST_CASE("matcher: random walks under a JSON schema's mask always give valid, conforming JSON", "[grammar]") {
  auto trie = VocabTrie::of(llama2_tokenizer());
  const std::string schema = R"({"type": "object", "properties": {
      "id": {"type": "integer"},
      "score": {"type": "number"},
      "ok": {"type": "boolean"},
      "note": {"type": ["string", "null"], "maxLength": 8},
      "kind": {"enum": ["x", "y", 3]},
      "items": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}},
      "required": ["id", "kind", "items"]})";
  auto g = compile(json_schema_to_gbnf(nlohmann::ordered_json::parse(schema), true));
  for (uint32_t seed = 10; seed < 40; ++seed) {
    const std::string text = random_walk(g, *trie, seed, 0, 2000);
    INFO(text);
    const auto j = nlohmann::json::parse(text);  // throws if not JSON
    REQUIRE(j.is_object());
    CHECK(j["id"].is_number_integer());
    CHECK((j["kind"] == "x" || j["kind"] == "y" || j["kind"] == 3));
    CHECK((j["items"].size() >= 1 && j["items"].size() <= 3));
    for (const auto& [k, v] : j.items())
      CHECK((k == "id" || k == "score" || k == "ok" || k == "note" || k == "kind" || k == "items"));
    if (j.contains("note"))
      CHECK((j["note"].is_null() || (j["note"].is_string() && j["note"].get<std::string>().size() <= 8 * 6)));
  }
}

TEST_CASE("matcher: accept keeps the state on rejection, partial UTF-8 is tracked, can_end/can_continue", "[grammar]") {
  Matcher m(compile("root ::= \"a\" [é-ê] \"b\"?"));
  CHECK_FALSE(m.can_end());
  CHECK_FALSE(m.accept("x"));
  CHECK(m.accept("a"));
  CHECK(m.accept("\xC3"));        // first byte of é (U+00E9)
  CHECK_FALSE(m.accept("\xA0"));  // would be U+00E0: outside the class
  CHECK_FALSE(m.can_end());
  CHECK(m.accept("\xA9"));
  CHECK(m.can_end());
  CHECK(m.can_continue());
  CHECK(m.accept("b"));
  CHECK(m.can_end());
  CHECK_FALSE(m.can_continue());
}

TEST_CASE("token constraint: masks logits to -inf, allows end-of-generation only where the grammar may end",
          "[grammar]") {
  const auto& tok = llama2_tokenizer();
  auto c = CompiledConstraint::build("root ::= \"yes\" | \"no\"", tok);
  TokenConstraint tc(c);
  std::vector<float> logits(32000, 0.0f);
  tc.apply(logits);
  CHECK(logits[static_cast<size_t>(tok.eos())] == -INFINITY);
  size_t allowed = 0;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (logits[id] == -INFINITY) continue;
    ++allowed;
    const std::string piece = tok.token_to_piece(static_cast<int32_t>(id));
    CHECK((std::string("yes").rfind(piece, 0) == 0 || std::string("no").rfind(piece, 0) == 0));
  }
  CHECK(allowed >= 2);
  const int32_t no = tok.find_token("no");
  REQUIRE(no >= 0);
  tc.accept(no);
  CHECK(tc.complete());
  std::fill(logits.begin(), logits.end(), 0.0f);
  tc.apply(logits);
  for (size_t id = 0; id < logits.size(); ++id)
    CHECK((logits[id] == -INFINITY) == (static_cast<int32_t>(id) != tok.eos()));
  CHECK_THROWS_WITH(
      TokenConstraint(c).accept(tok.find_token("maybe") >= 0 ? tok.find_token("maybe") : tok.find_token("x")),
      Catch::Contains("does not continue"));
}
