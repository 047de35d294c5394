// When a weight load reports its progress (engine/model/load_progress_listener.h): a worker's
// log gets a line only for a load that lasts (first after 2 s, then every 5 s, and the total at
// the end), an installed listener (engine-run's bar) every 100 ms and always 100 % at the end.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/model/load_progress_listener.h"

using namespace std::chrono_literals;

TEST_CASE("a weight load logs progress only while it lasts, and a listener sees every step up to the total") {
  const auto t0 = std::chrono::steady_clock::now();
  SECTION("a quick load logs nothing") {
    baton::WeightProgressReporter r(1000, t0);
    r.add(600, t0 + 500ms);
    r.add(400, t0 + 1900ms);
    r.finish(t0 + 1950ms);
    CHECK(r.reports() == 0);
  }
  SECTION("a long load logs after 2 s, every 5 s, and at the end") {
    baton::WeightProgressReporter r(1000, t0);
    r.add(100, t0 + 1s);
    CHECK(r.reports() == 0);
    r.add(100, t0 + 2500ms);
    CHECK(r.reports() == 1);
    r.add(100, t0 + 4s);
    CHECK(r.reports() == 1);
    r.add(100, t0 + 7600ms);
    CHECK(r.reports() == 2);
    r.finish(t0 + 8s);
    CHECK(r.reports() == 3);
  }
  SECTION("a listener is told every 100 ms and 100 % at the end") {
    std::vector<std::pair<uint64_t, uint64_t>> seen;
    baton::set_weight_progress_listener([&](uint64_t done, uint64_t total) { seen.push_back({done, total}); });
    {
      baton::WeightProgressReporter r(1000, t0);
      r.add(100, t0 + 50ms);
      r.add(100, t0 + 150ms);
      r.add(100, t0 + 180ms);
      r.add(100, t0 + 260ms);
      r.finish(t0 + 300ms);
    }
    baton::set_weight_progress_listener({});
    REQUIRE(seen.size() == 3);
    CHECK(seen[0] == std::pair<uint64_t, uint64_t>{200, 1000});
    CHECK(seen[1] == std::pair<uint64_t, uint64_t>{400, 1000});
    CHECK(seen[2] == std::pair<uint64_t, uint64_t>{1000, 1000});
  }
}
