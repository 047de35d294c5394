// The message for a failed connect to a node, shared by the coordinator and engine-ctl doctor:
// "NODE refused the handshake, check that both use the same cluster secret: ..." when it answered
// and authentication failed (issue 29: a wrong secret read "did not answer within 5 s" after
// 20 ms, with the address twice), "NODE refused the handshake: ..." when it speaks another
// protocol version, else "NODE did not answer within N s: why". Chosen by the kind of
// net::ConnectError, never by the text of the message.
#pragma once

#include <exception>
#include <string>

namespace baton::pipeline {

// `who` names the node and its address; `e` is what net::Node::connect threw.
std::string describe_connect_failure(const std::string& who, double timeout_s, const std::exception& e);

}  // namespace baton::pipeline
