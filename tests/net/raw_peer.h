// A blocking POSIX-socket peer for tests that must misbehave on purpose (garbage, huge
// prefixes, wrong versions, vanishing mid-frame). It speaks the protocol through net/codec,
// net/auth and net/wire_crypto so it can also get past the handshake and seal its frames.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "net/auth.h"
#include "net/codec.h"
#include "net/wire_crypto.h"

namespace baton::net::test {

class RawSocket {
 public:
  explicit RawSocket(int fd) : fd_(fd) { set_timeout(5000); }
  RawSocket(RawSocket&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)), send_(std::move(o.send_)), recv_(std::move(o.recv_)) {}
  RawSocket(const RawSocket&) = delete;
  ~RawSocket() { close(); }

  static RawSocket connect_to(uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      throw std::runtime_error("raw connect failed");
    }
    return RawSocket(fd);
  }

  void set_timeout(int ms) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }

  // False if the peer closed or reset the connection.
  bool send_bytes(const std::vector<uint8_t>& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }
  bool send_message(const Message& m, const std::vector<uint8_t>& body = {}) { return send_bytes(encode(m, body)); }

  // The bytes of a frame as this peer sends it: sealed after a secure handshake.
  std::vector<uint8_t> encode(const Message& m, const std::vector<uint8_t>& body = {}) {
    if (!send_) return encode_frame(m, body);
    FrameHead head = encode_frame_head(m, body.size());
    head.prefix =
        encode_prefix({static_cast<uint32_t>(head.header.size()), kFlagSealed, static_cast<uint32_t>(body.size())});
    std::vector<uint8_t> out(head.prefix.begin(), head.prefix.end());
    std::vector<uint8_t> sealed(head.header.size() + body.size() + kWireTagBytes);
    send_->seal(head.prefix, head.header, body, sealed);
    out.insert(out.end(), sealed.begin(), sealed.end());
    return out;
  }

  // Exactly n bytes, or nullopt on EOF / error / timeout.
  std::optional<std::vector<uint8_t>> recv_bytes(size_t n) {
    std::vector<uint8_t> out(n);
    size_t done = 0;
    while (done < n) {
      ssize_t got = ::recv(fd_, out.data() + done, n - done, 0);
      if (got <= 0) return std::nullopt;
      done += static_cast<size_t>(got);
    }
    return out;
  }

  std::optional<Message> recv_message() {
    auto f = recv_frame();
    if (!f) return std::nullopt;
    return std::move(f->first);
  }

  // The next frame's message and body bytes.
  std::optional<std::pair<Message, std::vector<uint8_t>>> recv_frame() {
    auto prefix = recv_bytes(kPrefixBytes);
    if (!prefix) return std::nullopt;
    auto p = parse_prefix(std::span<const uint8_t, kPrefixBytes>(prefix->data(), kPrefixBytes), FrameLimits{});
    if (!p) return std::nullopt;
    const bool sealed = (p->flags & kFlagSealed) != 0;
    if (sealed != recv_.has_value()) return std::nullopt;
    auto rest = recv_bytes(p->header_bytes + size_t{p->body_bytes} + (sealed ? kWireTagBytes : 0));
    if (!rest) return std::nullopt;
    if (sealed) {
      std::span<uint8_t> all(*rest);
      std::array<uint8_t, kWireTagBytes> tag;
      std::copy(rest->end() - kWireTagBytes, rest->end(), tag.begin());
      if (!recv_->open(std::span<const uint8_t, kPrefixBytes>(prefix->data(), kPrefixBytes),
                       all.subspan(0, p->header_bytes), all.subspan(p->header_bytes, p->body_bytes), tag))
        return std::nullopt;
      rest->resize(rest->size() - kWireTagBytes);
    }
    std::vector<uint8_t> header(rest->begin(), rest->begin() + p->header_bytes);
    auto m = decode_header(header, p->body_bytes);
    if (!m) return std::nullopt;
    return std::pair{std::move(*m), std::vector<uint8_t>(rest->begin() + p->header_bytes, rest->end())};
  }

  // True if the peer closes the connection within the receive timeout (data before the EOF
  // is discarded).
  bool closed_by_peer() {
    uint8_t buf[4096];
    for (;;) {
      ssize_t got = ::recv(fd_, buf, sizeof buf, 0);
      if (got == 0) return true;
      if (got < 0) return errno == ECONNRESET;
    }
  }

  // Client side of the handshake with `secret` (empty: insecure). True if authenticated.
  bool handshake(const std::string& node_id, const std::string& secret, uint32_t version = kProtocolVersion) {
    AuthMode mode = secret.empty() ? AuthMode::kInsecure : AuthMode::kHmacSha256;
    if (!send_message(Hello{version, 0, node_id, Role::kClient, mode})) return false;
    auto hello = recv_message();
    if (!hello || !std::holds_alternative<Hello>(*hello)) return false;
    if (secret.empty()) return true;
    auto challenge = recv_message();
    if (!challenge || !std::holds_alternative<AuthChallenge>(*challenge)) return false;
    Nonce ns = std::get<AuthChallenge>(*challenge).nonce;
    Nonce nc = random_nonce();
    const std::string& server_id = std::get<Hello>(*hello).node_id;
    Mac proof = auth_proof(secret, AuthSide::kClient, ns, nc, node_id, server_id);
    if (!send_message(AuthResponse{proof, nc})) return false;
    auto response = recv_message();
    if (!response || !std::holds_alternative<AuthResponse>(*response)) return false;
    if (!macs_equal(std::get<AuthResponse>(*response).mac,
                    auth_proof(secret, AuthSide::kServer, ns, nc, node_id, server_id)))
      return false;
    SessionKeys keys =
        derive_session_keys(secret, ns, nc, Hello{version, 0, node_id, Role::kClient, mode}, std::get<Hello>(*hello));
    send_.emplace(keys.client_to_server);
    recv_.emplace(keys.server_to_client);
    return true;
  }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const { return fd_; }

 private:
  int fd_;
  std::optional<FrameCipher> send_;  // set by a secure handshake
  std::optional<FrameCipher> recv_;
};

// A listening POSIX socket on 127.0.0.1 with an OS-chosen port.
class RawListener {
 public:
  RawListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 8) != 0)
      throw std::runtime_error("raw listen failed");
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~RawListener() { ::close(fd_); }
  uint16_t port() const { return port_; }
  int fd() const { return fd_; }
  RawSocket accept_one() { return RawSocket(::accept(fd_, nullptr, nullptr)); }

 private:
  int fd_;
  uint16_t port_;
};

// A server of a later protocol version: it answers one client's Hello with version 99 (as
// "future-server") and waits for the client to hang up. The thread is joined on destruction.
class FutureVersionServer {
 public:
  FutureVersionServer()
      : thread_([this] {
          RawSocket s = listener_.accept_one();
          s.recv_message();
          s.send_message(Hello{99, 0, "future-server", Role::kWorker, AuthMode::kHmacSha256});
          s.closed_by_peer();
        }) {}
  ~FutureVersionServer() { thread_.join(); }
  uint16_t port() const { return listener_.port(); }

 private:
  RawListener listener_;  // before thread_: listening before the thread accepts
  std::thread thread_;
};

}  // namespace baton::net::test
