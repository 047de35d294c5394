#include "golden.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "fixtures.h"

namespace baton::test {

GoldenFile load_golden(const std::string& relative) {
  std::ifstream in(shared_path("golden/" + relative));
  nlohmann::json j = nlohmann::json::parse(in);
  GoldenFile g;
  g.model = j.at("model").get<std::string>();
  for (const auto& c : j.at("cases")) {
    GoldenCase gc;
    gc.prompt = c.at("prompt").get<std::string>();
    gc.prompt_tokens = c.at("prompt_tokens").get<std::vector<int32_t>>();
    gc.n_predict = c.at("n_predict").get<int>();
    gc.tokens = c.at("tokens").get<std::vector<int32_t>>();
    gc.text = c.at("text").get<std::string>();
    for (const auto& s : c.at("steps")) {
      GoldenStep st{s.at("token").get<int32_t>(), s.at("logprob").get<float>(), {}};
      for (const auto& t : s.at("top")) st.top.push_back({t.at(0).get<int32_t>(), t.at(1).get<float>()});
      gc.steps.push_back(std::move(st));
    }
    g.cases.push_back(std::move(gc));
  }
  return g;
}

std::string golden_model_path(const std::string& relative_golden, const GoldenFile& golden) {
  namespace fs = std::filesystem;
  std::string name = fs::path(golden.model).filename().string();
  if (fs::exists(fs::path(shared_dir()) / "models" / name)) return shared_path("models/" + name);
  (void)relative_golden;
  return shared_path("models/synthetic/" + name);
}

std::string compare_to_golden(const GoldenCase& ref, const std::vector<OurStep>& ours, float tolerance,
                              int* compared_steps) {
  int compared = 0;
  std::string problem;
  for (size_t i = 0; i < ref.steps.size(); ++i) {
    const GoldenStep& r = ref.steps[i];
    if (i >= ours.size()) {
      problem = fmt::format("we generated only {} tokens, the reference {}", ours.size(), ref.steps.size());
      break;
    }
    const OurStep& o = ours[i];
    ++compared;
    const bool near_tie = r.top.size() >= 2 && r.top[0].second - r.top[1].second < 0.01f;
    for (const auto& [id, lp] : r.top) {
      auto it = std::find_if(o.logprobs.begin(), o.logprobs.end(), [&](const auto& p) { return p.first == id; });
      if (it == o.logprobs.end()) {
        problem = fmt::format("step {}: reference top token {} (logprob {:.4f}) is not among ours", i, id, lp);
        break;
      }
      if (std::fabs(it->second - lp) > tolerance) {
        problem = fmt::format("step {}: token {} has logprob {:.5f}, reference {:.5f} (tolerance {})", i, id,
                              it->second, lp, tolerance);
        break;
      }
    }
    if (!problem.empty() || near_tie) break;
    if (o.token != r.token) {
      problem = fmt::format("step {}: we chose token {}, the reference {}", i, o.token, r.token);
      break;
    }
  }
  if (compared_steps) *compared_steps = compared;
  return problem;
}

}  // namespace baton::test
