// grammar-bench: the cost of constrained decoding per generated token. Loads a GGUF's
// tokenizer, compiles a few grammars, and walks each with seeded random choices among the
// allowed tokens, timing TokenConstraint::apply (the mask over the whole vocabulary's logits)
// and accept per step; prints the median, p90 and max per step, plus trie build and grammar
// compile times.
//   grammar-bench -m MODEL.gguf [-n STEPS] [--seed S]
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/grammar/json_schema.h"
#include "engine/grammar/token_constraint.h"
#include "engine/tokenizer/tokenizer.h"
#include "gguf/gguf_file.h"

namespace {

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct Case {
  std::string name;
  std::string gbnf;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"grammar-bench: grammar masking cost per token"};
  std::string model;
  int steps = 200;
  uint32_t seed = 1;
  app.add_option("-m,--model", model, "GGUF whose tokenizer is used")->required();
  app.add_option("-n,--steps", steps, "tokens per walk");
  app.add_option("--seed", seed, "random choices");
  CLI11_PARSE(app, argc, argv);

  auto file = baton::gguf::GgufFile::open(model);
  auto tok = baton::tokenizer::Tokenizer::from_metadata(file->metadata());
  auto t0 = Clock::now();
  auto trie = baton::grammar::VocabTrie::of(*tok);
  fmt::print("vocabulary {} tokens, trie {} nodes, longest piece {} bytes, trie build {:.1f} ms\n", tok->n_vocab(),
             trie->n_nodes(), trie->max_depth(), us_since(t0) / 1000);

  const auto schema = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 40}, "age": {"type": "integer"},
      "email": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
      "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}}},
    "required": ["name", "age"]})");
  const std::vector<Case> cases = {
      {"json schema (object, 5 properties, nested)", baton::grammar::json_schema_to_gbnf(schema, true)},
      {"json_object (any JSON object)", baton::grammar::json_object_gbnf()},
      {"free string (\"...\" of any characters)", R"(root ::= "\"" ([^"\\] | "\\" ["\\nt])* "\"")"},
      {"enum of 3 words", R"(root ::= "alpha" | "beta" | "gamma")"},
  };
  fmt::print(
      "| grammar | compile ms | steps | mask p50 us | mask p90 us | mask max us | accept p50 us | allowed tokens p50 "
      "|\n");
  fmt::print("|---|---|---|---|---|---|---|---|\n");
  std::vector<float> logits(static_cast<size_t>(tok->n_vocab()));
  for (const Case& c : cases) {
    auto tc0 = Clock::now();
    auto compiled = baton::grammar::CompiledConstraint::build(c.gbnf, *tok);
    const double compile_ms = us_since(tc0) / 1000;
    std::vector<double> mask_us, accept_us, allowed_n;
    std::mt19937 rng(seed);
    for (int walk = 0; static_cast<int>(mask_us.size()) < steps && walk < 1000; ++walk) {
      baton::grammar::TokenConstraint constraint(compiled);
      for (int s = 0; s < steps; ++s) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        auto t = Clock::now();
        constraint.apply(logits);
        mask_us.push_back(us_since(t));
        std::vector<int32_t> ids;
        for (size_t i = 0; i < logits.size(); ++i)
          if (logits[i] == 0.0f) ids.push_back(static_cast<int32_t>(i));
        allowed_n.push_back(static_cast<double>(ids.size()));
        const int32_t pick = ids[rng() % ids.size()];
        if (tok->is_eog(pick)) break;
        t = Clock::now();
        constraint.accept(pick);
        accept_us.push_back(us_since(t));
        if (constraint.complete() || static_cast<int>(mask_us.size()) >= steps) break;
      }
    }
    fmt::print("| {} | {:.2f} | {} | {:.0f} | {:.0f} | {:.0f} | {:.1f} | {:.0f} |\n", c.name, compile_ms,
               mask_us.size(), percentile(mask_us, 0.5), percentile(mask_us, 0.9), percentile(mask_us, 1.0),
               percentile(accept_us, 0.5), percentile(allowed_n, 0.5));
  }
  return 0;
}
