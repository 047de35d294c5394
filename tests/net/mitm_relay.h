// A man in the middle on loopback for the wire-protection tests: accepts one connection,
// opens one to the real server, and forwards whole frames both ways on two threads. It keeps
// a copy of every byte it forwards (the tap) and lets a test rewrite the client-to-server
// frames that follow the handshake (the sealed ones, or every frame after the Hellos and
// challenge-response in insecure mode).
#pragma once

#include <sys/socket.h>

#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "raw_peer.h"

namespace baton::net::test {

using WireFrame = std::vector<uint8_t>;

// Called with each client-to-server data frame in order (index from 0) and every data frame
// seen so far; returns what to send upstream now (possibly nothing, possibly several).
// An empty frame in the result means: shut the upstream connection down after what came before.
using FrameRewriter = std::function<std::vector<WireFrame>(size_t index, const std::vector<WireFrame>& seen)>;

class MitmRelay {
 public:
  // `handshake_frames`: how many client-to-server frames are the handshake (passed through).
  MitmRelay(uint16_t server_port, size_t handshake_frames, FrameRewriter rewrite)
      : server_port_(server_port), handshake_frames_(handshake_frames), rewrite_(std::move(rewrite)) {
    thread_ = std::thread([this] { run(); });
  }
  ~MitmRelay() {
    stopping_ = true;
    if (client_fd_ >= 0) ::shutdown(client_fd_, SHUT_RDWR);
    if (server_fd_ >= 0) ::shutdown(server_fd_, SHUT_RDWR);
    ::shutdown(listener_.fd(), SHUT_RDWR);
    thread_.join();
  }
  uint16_t port() const { return listener_.port(); }

  // Every byte forwarded so far, both directions.
  std::vector<uint8_t> tapped() {
    std::lock_guard lock(mutex_);
    return tap_;
  }

 private:
  // One whole frame (prefix, header, body and the tag of a sealed one), or empty at EOF.
  static WireFrame read_frame(RawSocket& s) {
    auto prefix = s.recv_bytes(kPrefixBytes);
    if (!prefix) return {};
    auto p = parse_prefix(std::span<const uint8_t, kPrefixBytes>(prefix->data(), kPrefixBytes), FrameLimits{});
    if (!p) return {};
    size_t rest = p->header_bytes + size_t{p->body_bytes} + ((p->flags & kFlagSealed) ? kWireTagBytes : 0);
    auto tail = s.recv_bytes(rest);
    if (!tail) return {};
    prefix->insert(prefix->end(), tail->begin(), tail->end());
    return *prefix;
  }

  void forward(RawSocket& to, const WireFrame& frame) {
    {
      std::lock_guard lock(mutex_);
      tap_.insert(tap_.end(), frame.begin(), frame.end());
    }
    to.send_bytes(frame);
  }

  void run() {
    RawSocket client = listener_.accept_one();
    if (stopping_) return;
    RawSocket server = RawSocket::connect_to(server_port_);
    client.set_timeout(30000);
    server.set_timeout(30000);
    client_fd_ = client.fd();
    server_fd_ = server.fd();
    std::thread down([&] {  // server -> client, unchanged
      for (;;) {
        WireFrame f = read_frame(server);
        if (f.empty()) break;
        forward(client, f);
      }
      ::shutdown(client.fd(), SHUT_WR);
    });
    std::vector<WireFrame> seen;
    for (size_t n = 0;; ++n) {  // client -> server, rewritten after the handshake
      WireFrame f = read_frame(client);
      if (f.empty()) break;
      if (n < handshake_frames_) {
        forward(server, f);
        continue;
      }
      seen.push_back(f);
      bool cut = false;
      for (const auto& out : rewrite_(seen.size() - 1, seen)) {
        if (out.empty()) {
          ::shutdown(server.fd(), SHUT_WR);
          cut = true;
          break;
        }
        forward(server, out);
      }
      if (cut) break;
    }
    ::shutdown(server.fd(), SHUT_WR);
    down.join();
    client_fd_ = server_fd_ = -1;
  }

  RawListener listener_;
  uint16_t server_port_;
  size_t handshake_frames_;
  FrameRewriter rewrite_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> client_fd_{-1};
  std::atomic<int> server_fd_{-1};
  std::mutex mutex_;
  std::vector<uint8_t> tap_;
  std::thread thread_;
};

}  // namespace baton::net::test
