// Every socket a Node opens (listening, accepted, connected) is close-on-exec, so processes
// spawned by a worker, a coordinator or a test do not inherit them; a spawned shell sees none.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "node_fixture.h"

namespace {

using namespace baton::net;
using namespace baton::net::test;

// The socket fds of this process, by fd number, with their inode.
std::set<std::pair<int, ino_t>> open_sockets() {
  std::set<std::pair<int, ino_t>> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    out.insert({std::stoi(entry.path().filename().string()), st.st_ino});
  }
  return out;
}

}  // namespace

TEST_CASE("node: listening, accepted and connected sockets are close-on-exec", "[net]") {
  const auto before = open_sockets();
  EchoServer server(node_options("server", AuthConfig::with_secret(kSecret)));
  InboxNode client(node_options("client", AuthConfig::with_secret(kSecret), Role::kCoordinator));
  auto c = client.node->connect("127.0.0.1", server.port);
  REQUIRE(c);
  REQUIRE(eventually([&] { return server.accepted().size() == 1; }));

  std::vector<std::pair<int, ino_t>> fresh;
  for (const auto& s : open_sockets())
    if (!before.count(s)) fresh.push_back(s);
  CHECK(fresh.size() >= 3);  // listener, accepted, connected
  for (const auto& [fd, inode] : fresh) {
    INFO("fd " << fd);
    const int flags = ::fcntl(fd, F_GETFD);
    CHECK(flags >= 0);
    CHECK((flags & FD_CLOEXEC) != 0);
  }

  // A child process: none of them open there.
  FILE* p = ::popen("ls -l /proc/self/fd 2>/dev/null", "r");
  REQUIRE(p);
  std::string listing;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) listing.append(buf, n);
  ::pclose(p);
  for (const auto& [fd, inode] : fresh) {
    INFO(listing);
    CHECK(listing.find("socket:[" + std::to_string(inode) + "]") == std::string::npos);
  }
}
