// describe_connect_failure words a failed connect from the kind net::Node::connect reports
// (net::ConnectError), not from the text of its message: the sentences the coordinator and
// engine-ctl doctor print for each kind.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "engine/pipeline/connect_failure.h"
#include "net/node.h"

namespace {

using baton::net::ConnectError;
using baton::net::ConnectFailure;
using baton::pipeline::describe_connect_failure;

const std::string kWho = "node a (127.0.0.1:25010)";

std::string described(ConnectFailure kind, const std::string& reason) {
  return describe_connect_failure(kWho, 5, ConnectError(kind, "127.0.0.1", 25010, reason));
}

}  // namespace

TEST_CASE("a connect refused for its secret or its protocol version reads as a refused handshake") {
  CHECK(described(ConnectFailure::kAuthRejected, "authentication failed: x") ==
        "node a (127.0.0.1:25010) refused the handshake, check that both use the same cluster secret: "
        "authentication failed: x");
  CHECK(described(ConnectFailure::kVersionMismatch, "protocol version mismatch: y") ==
        "node a (127.0.0.1:25010) refused the handshake: protocol version mismatch: y");
}

TEST_CASE("every other connect failure reads as a node that did not answer, without the address twice") {
  for (auto kind : {ConnectFailure::kRefused, ConnectFailure::kTimedOut, ConnectFailure::kHostNotFound,
                    ConnectFailure::kUnreachable, ConnectFailure::kClosed, ConnectFailure::kProtocol,
                    ConnectFailure::kStopped, ConnectFailure::kLocal}) {
    INFO(baton::net::to_string(kind));
    CHECK(described(kind, "gave up after 3 attempts") ==
          "node a (127.0.0.1:25010) did not answer within 5 s: gave up after 3 attempts");
  }
  CHECK(describe_connect_failure(kWho, 2.5, std::runtime_error("something else")) ==
        "node a (127.0.0.1:25010) did not answer within 2.5 s: something else");
}

TEST_CASE("the wording follows the kind even where the reason's text names another cause") {
  // A peer whose node id or address reads "authentication" or "version" no longer turns a closed
  // connection into a refused handshake (the text used to decide).
  CHECK(described(ConnectFailure::kClosed, "peer 'authentication-version-node' closed the connection") ==
        "node a (127.0.0.1:25010) did not answer within 5 s: peer 'authentication-version-node' closed the "
        "connection");
}
