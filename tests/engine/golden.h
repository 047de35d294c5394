// llama.cpp reference outputs (../shared/golden/*.json) and the rule for comparing to them
// (see ../shared/golden/README.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace baton::test {

struct GoldenStep {
  int32_t token;
  float logprob;
  std::vector<std::pair<int32_t, float>> top;  // best first
};

struct GoldenCase {
  std::string prompt;
  std::vector<int32_t> prompt_tokens;
  int n_predict = 0;
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<GoldenStep> steps;
};

struct GoldenFile {
  std::string model;  // file name under models/ (synthetic/ for the synthetic ones)
  std::vector<GoldenCase> cases;
};

// Reads a golden JSON; `relative` under shared_dir()/golden.
GoldenFile load_golden(const std::string& relative);
// The model path a golden file refers to.
std::string golden_model_path(const std::string& relative_golden, const GoldenFile& golden);

// Our steps: chosen token and log-probabilities of (at least) the tokens the reference lists.
struct OurStep {
  int32_t token;
  std::vector<std::pair<int32_t, float>> logprobs;  // id -> logprob, any order
};

// Applies the comparison rule; returns "" when ours matches, else a description of the first
// difference. Compared steps: up to and including the first step where the reference has a
// near-tie (top-1 and top-2 closer than 0.01); tokens must be equal before that step.
std::string compare_to_golden(const GoldenCase& ref, const std::vector<OurStep>& ours, float tolerance,
                              int* compared_steps = nullptr);

}  // namespace baton::test
