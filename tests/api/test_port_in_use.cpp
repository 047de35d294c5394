// Two engine-coordinator processes on one HTTP port (issue 29, defect 2): cpp-httplib's default
// socket options set SO_REUSEPORT, so a second coordinator used to bind the same port and the
// kernel split the connections between the two. The second must fail with "address in use"
// while the first keeps serving.
#include <catch2/catch.hpp>
#include <httplib.h>

#include "api_test_util.h"
#include "support/process.h"

using namespace baton::test;

TEST_CASE("a second engine-coordinator on a port in use fails with address in use", "[api]") {
  const std::string port = "42101";  // this test's own port (tests of issue 29 use 42000-42999)
  auto args = [&] {
    return std::vector<std::string>{binary_dir() + "/bin/engine-coordinator",
                                    "--model",
                                    stories_path(),
                                    "-t",
                                    "1",
                                    "--host",
                                    "127.0.0.1",
                                    "--port",
                                    port};
  };
  ProcessOptions po;
  po.merge_stderr = true;
  Process first(args(), po);
  REQUIRE(first.wait_for_line("listening on http://127.0.0.1:" + port, std::chrono::seconds(30)));
  Process second(args(), po);
  const int status = second.wait(std::chrono::milliseconds(30000));
  INFO(second.output());
  CHECK(status == 1);
  CHECK(second.output().find("address in use") != std::string::npos);
  CHECK(second.output().find("listening on") == std::string::npos);
  // The first one still answers every connection.
  for (int i = 0; i < 8; ++i) {
    httplib::Client c("127.0.0.1", std::stoi(port));
    auto h = c.Get("/health");
    REQUIRE(h);
    CHECK(h->status == 200);
  }
  CHECK(first.terminate() == 0);
}
