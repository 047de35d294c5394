#include "engine/pipeline/connect_failure.h"

#include <fmt/format.h>

#include "net/node.h"

namespace baton::pipeline {

std::string describe_connect_failure(const std::string& who, double timeout_s, const std::exception& e) {
  const auto* connect = dynamic_cast<const net::ConnectError*>(&e);
  // The reason alone: net's "net: cannot connect to HOST:PORT: " would repeat the address `who` names.
  const std::string why = connect ? connect->reason() : std::string(e.what());
  const auto kind = connect ? connect->kind() : net::ConnectFailure::kLocal;
  switch (kind) {
    // A node that answered and refused the handshake did answer (issue 29: a wrong secret was
    // reported as "did not answer within 5 s" after 20 ms).
    case net::ConnectFailure::kAuthRejected:
      return fmt::format("{} refused the handshake, check that both use the same cluster secret: {}", who, why);
    case net::ConnectFailure::kVersionMismatch: return fmt::format("{} refused the handshake: {}", who, why);
    case net::ConnectFailure::kRefused:
    case net::ConnectFailure::kTimedOut:
    case net::ConnectFailure::kHostNotFound:
    case net::ConnectFailure::kUnreachable:
    case net::ConnectFailure::kClosed:
    case net::ConnectFailure::kProtocol:
    case net::ConnectFailure::kStopped:
    case net::ConnectFailure::kLocal: break;
  }
  return fmt::format("{} did not answer within {} s: {}", who, timeout_s, why);
}

}  // namespace baton::pipeline
