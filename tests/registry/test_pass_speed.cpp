// Worker speeds re-measured from real pass times (engine/registry/pass_speed.h).
#include <catch2/catch.hpp>

#include "engine/registry/pass_speed.h"

using baton::registry::speeds_from_passes;
using baton::registry::StageWork;

TEST_CASE("speeds from pass times rank the workers by their real work, on the calibration's scale") {
  // Three identical machines; node b announced a calibration skewed 90x low (it was busy at
  // join), node c one 3x high. Each holds the same layers and took the same time per pass.
  std::vector<StageWork> stages = {
      {"a", 2e9, 1000, 500, 6.0},
      {"b", 2e9, 1000, 500, 0.2},
      {"c", 2e9, 1000, 500, 18.4},
  };
  auto s = speeds_from_passes(stages);
  REQUIRE(s.size() == 3);
  CHECK(s["a"] == Approx(s["b"]));
  CHECK(s["b"] == Approx(s["c"]));
  CHECK(s["a"] == Approx(6.0));  // the median calibration sets the scale

  // A node twice as slow on its layers is half the speed, whatever it announced.
  stages[1].compute_ms = 2000;
  s = speeds_from_passes(stages);
  CHECK(s["b"] == Approx(s["a"] / 2));
  // Twice the layers in the same time: twice the speed.
  stages[2].flops_per_token = 4e9;
  s = speeds_from_passes(stages);
  CHECK(s["c"] == Approx(2 * s["a"]));
}

TEST_CASE("stages without enough measured work keep their announced speed") {
  std::vector<StageWork> stages = {{"a", 2e9, 1000, 500, 6.0}, {"b", 2e9, 3, 10, 6.0}, {"c", 2e9, 0, 500, 6.0}};
  auto s = speeds_from_passes(stages, 64);
  CHECK(s.size() == 1);
  CHECK(s.count("a") == 1);
  // No calibration at all: the effective GFLOP/s themselves.
  s = speeds_from_passes({{"x", 2e9, 1000, 500, 0}});
  CHECK(s["x"] == Approx(1000.0));  // 2e9 FLOP x 500 tokens in 1 s
}
