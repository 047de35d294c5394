// The message for a failed connect to a node, shared by the coordinator and engine-ctl doctor:
// "NODE refused the handshake, check that both use the same cluster secret: ..." when it answered
// and authentication failed (issue 29: a wrong secret read "did not answer within 5 s" after
// 20 ms, with the address twice), else "NODE did not answer within N s: why".
#pragma once

#include <cstdint>
#include <string>

namespace baton::pipeline {

std::string describe_connect_failure(const std::string& who, const std::string& host, uint16_t port, double timeout_s,
                                     std::string why);

}  // namespace baton::pipeline
