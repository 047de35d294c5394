// libFuzzer target: the JSON-schema -> GBNF compiler and the GBNF parser (engine/grammar), with
// the matcher run over the input. The first byte picks the path:
//   even: the rest is a JSON schema (bit 1: strict). Malformed JSON and a GrammarError naming an
//         unsupported construct are the expected refusals; a compiled grammar that the GBNF
//         parser then refuses is a bug (the compiler must only emit valid, non-left-recursive
//         GBNF), and so is any other exception, a crash or a sanitizer report.
//   odd:  the rest is GBNF text; a GrammarError is the expected refusal. A grammar that parses
//         is run through a Matcher over the text's own bytes (accept, can_end, can_continue).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/matcher.h"

namespace {

// Feeds up to 256 bytes, one at a time, as a sampler would offer token pieces.
void fuzz_grammar_run_matcher(const baton::grammar::Grammar& grammar, std::string_view bytes) {
  baton::grammar::Matcher matcher(std::make_shared<const baton::grammar::Grammar>(grammar));
  for (size_t i = 0; i < bytes.size() && i < 256; ++i) {
    (void)matcher.can_end();
    (void)matcher.can_continue();
    (void)matcher.accept(bytes.substr(i, 1));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace baton::grammar;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] % 2 == 0) {
    nlohmann::ordered_json schema;
    try {
      schema = nlohmann::ordered_json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/true);
    } catch (const nlohmann::json::exception&) {
      return 0;
    }
    std::string gbnf;
    try {
      gbnf = json_schema_to_gbnf(schema, (data[0] & 2) != 0);
    } catch (const GrammarError&) {
      return 0;
    }
    try {
      fuzz_grammar_run_matcher(parse_gbnf(gbnf), R"({"a": [1, -2.5e3, "x\u00e9", true, null], "b": {}})");
    } catch (const GrammarError& e) {
      std::fprintf(stderr, "the schema compiler emitted GBNF its parser refuses: %s\n%s\n", e.what(), gbnf.c_str());
      std::abort();
    }
    return 0;
  }
  try {
    fuzz_grammar_run_matcher(parse_gbnf(text), text);
  } catch (const GrammarError&) {
  }
  return 0;
}
