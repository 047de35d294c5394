// The address a worker listening on every interface (--host 0.0.0.0 or ::) announces when it
// registers without --advertise: the local address of its route to the registry (the
// coordinator's control port or etcd), which is the address the coordinator can dial back. So
// one identical command line (`--host 0.0.0.0 --join COORDINATOR:8022`) serves every machine.
#pragma once

#include <cstdint>
#include <string>

namespace baton::tools {

bool is_wildcard_address(const std::string& host);

// The source address the kernel would use to reach host:port (a UDP connect sends nothing).
// Throws baton::Error naming the host when it cannot be resolved or has no route.
std::string local_address_towards(const std::string& host, uint16_t port);

}  // namespace baton::tools
