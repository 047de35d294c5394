// Session handshake: Hello both ways, then HMAC-SHA256 challenge-response (see net/auth.h for
// the exchange). Every failure is a CloseInfo value; nothing after a failed proof is answered.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "net/detail/asio_util.h"
#include "net/detail/session.h"

namespace baton::net::detail {

using namespace asio::experimental::awaitable_operators;

namespace {

// Handshake frames are small and never carry a body.
constexpr FrameLimits kHandshakeLimits{4096, 0};

std::string_view mode_name(AuthMode mode) {
  switch (mode) {
    case AuthMode::kHmacSha256: return "the cluster secret (HMAC-SHA256)";
    case AuthMode::kInsecure: return "insecure mode (no secret)";
  }
  return "an unknown authentication mode";
}

// Why a peer whose Hello is `peer` cannot talk to us, or nothing when it can.
std::optional<CloseInfo> hello_mismatch(const Hello& peer, const Hello& ours, AuthMode our_mode,
                                        const std::string& who) {
  if (peer.protocol_version != ours.protocol_version)
    return CloseInfo{CloseKind::kVersion,
                     fmt::format("protocol version mismatch: {} speaks version {}, this node speaks version {}", who,
                                 peer.protocol_version, ours.protocol_version)};
  if (peer.auth != our_mode)
    return CloseInfo{CloseKind::kAuth, fmt::format("authentication mismatch: {} uses {}, this node requires {}", who,
                                                   mode_name(peer.auth), mode_name(our_mode))};
  return std::nullopt;
}

}  // namespace

asio::awaitable<std::optional<CloseInfo>> Session::handshake(AuthSide side, std::chrono::milliseconds timeout) {
  auto self = shared_from_this();
  co_await asio::this_coro::throw_if_cancelled(false);
  is_client_ = side == AuthSide::kClient;
  std::optional<CloseInfo> result;
  try {
    auto raced = co_await (run_handshake(side) || sleep_for(timeout));
    if (raced.index() == 0) result = std::get<0>(std::move(raced));
    else
      result = CloseInfo{CloseKind::kTimeout,
                         fmt::format("handshake with {} not finished within {} ms", who(), timeout.count())};
  } catch (const std::exception& e) {
    result = CloseInfo{CloseKind::kLocal, fmt::format("handshake with {} failed: {}", who(), e.what())};
  }
  if (result) {
    record_close(*result);
    std::error_code ignored;
    if (socket_) socket_->close(ignored);
  }
  co_return result;
}

asio::awaitable<std::optional<CloseInfo>> Session::run_handshake(AuthSide side) {
  co_await asio::this_coro::throw_if_cancelled(false);
  if (side == AuthSide::kServer) co_return co_await server_handshake();
  co_return co_await client_handshake();
}

asio::awaitable<std::optional<CloseInfo>> Session::write_now(const Message& message) {
  FrameHead head = encode_frame_head(message, 0);
  std::array<asio::const_buffer, 2> buffers{asio::buffer(head.prefix), asio::buffer(head.header)};
  auto [ec, n] = co_await asio::async_write(*socket_, buffers, kNoThrow);
  if (ec)
    co_return CloseInfo{CloseKind::kIoError, fmt::format("{}: {} while sending {} during the handshake", who(),
                                                         ec.message(), message_name(message))};
  co_return std::nullopt;
}

namespace {

// Reads the next handshake frame and requires it to be an M.
template <class M, class ReadFrame>
asio::awaitable<Expected<M, CloseInfo>> expect(ReadFrame&& read, std::string peer) {
  auto frame = co_await read();
  if (!frame) co_return frame.error();
  if (!std::holds_alternative<M>(frame->message))
    co_return CloseInfo{CloseKind::kProtocol, fmt::format("{} sent {} during the handshake, expected {}", peer,
                                                          message_name(frame->message), message_name(Message(M{})))};
  co_return std::get<M>(std::move(frame->message));
}

}  // namespace

asio::awaitable<std::optional<CloseInfo>> Session::server_handshake() {
  auto read = [this] { return read_frame(kHandshakeLimits); };
  auto hello = co_await expect<Hello>(read, who());
  if (!hello) co_return hello.error();
  peer_.hello = std::move(*hello);
  handshake_progress_ = 1;
  // Our Hello goes out even on a mismatch, so the peer can name both versions too.
  if (auto err = co_await write_now(config_.hello)) co_return err;
  if (auto mismatch = hello_mismatch(peer_.hello, config_.hello, config_.auth.mode(), who())) co_return mismatch;
  if (config_.auth.mode() == AuthMode::kInsecure) co_return std::nullopt;

  Nonce server_nonce = random_nonce();
  if (auto err = co_await write_now(AuthChallenge{server_nonce})) co_return err;
  auto response = co_await expect<AuthResponse>(read, who());
  if (!response) co_return response.error();
  if (!response->counter_nonce)
    co_return CloseInfo{CloseKind::kProtocol,
                        fmt::format("{} sent an AuthResponse without a counter-challenge", who())};
  const Nonce& client_nonce = *response->counter_nonce;
  const std::string& secret = config_.auth.secret();
  Mac expected =
      auth_proof(secret, AuthSide::kClient, server_nonce, client_nonce, peer_.hello.node_id, config_.hello.node_id);
  if (!macs_equal(expected, response->mac))
    co_return CloseInfo{CloseKind::kAuth, fmt::format("authentication failed: {} does not know the cluster "
                                                      "secret (wrong proof)",
                                                      who())};
  Mac proof =
      auth_proof(secret, AuthSide::kServer, server_nonce, client_nonce, peer_.hello.node_id, config_.hello.node_id);
  if (auto err = co_await write_now(AuthResponse{proof, std::nullopt})) co_return err;
  start_sealing(derive_session_keys(secret, server_nonce, client_nonce, peer_.hello, config_.hello), AuthSide::kServer);
  co_return std::nullopt;
}

asio::awaitable<std::optional<CloseInfo>> Session::client_handshake() {
  auto read = [this] { return read_frame(kHandshakeLimits); };
  if (auto err = co_await write_now(config_.hello)) co_return err;
  auto hello = co_await expect<Hello>(read, who());
  if (!hello) co_return hello.error();
  peer_.hello = std::move(*hello);
  if (auto mismatch = hello_mismatch(peer_.hello, config_.hello, config_.auth.mode(), who())) co_return mismatch;
  if (config_.auth.mode() == AuthMode::kInsecure) co_return std::nullopt;

  auto challenge = co_await expect<AuthChallenge>(read, who());
  if (!challenge) co_return challenge.error();
  Nonce client_nonce = random_nonce();
  const std::string& secret = config_.auth.secret();
  Mac proof =
      auth_proof(secret, AuthSide::kClient, challenge->nonce, client_nonce, config_.hello.node_id, peer_.hello.node_id);
  if (auto err = co_await write_now(AuthResponse{proof, client_nonce})) co_return err;
  auto response = co_await expect<AuthResponse>(read, who());
  if (!response) {
    CloseInfo info = response.error();
    if (info.kind == CloseKind::kPeerClosed || info.kind == CloseKind::kIoError)
      info = {CloseKind::kAuth, fmt::format("authentication failed: {} closed the connection after our proof "
                                            "(do the cluster secrets differ?): {}",
                                            who(), info.reason)};
    co_return info;
  }
  Mac expected =
      auth_proof(secret, AuthSide::kServer, challenge->nonce, client_nonce, config_.hello.node_id, peer_.hello.node_id);
  if (!macs_equal(expected, response->mac))
    co_return CloseInfo{CloseKind::kAuth, fmt::format("authentication failed: {} could not prove it knows the "
                                                      "cluster secret (wrong proof)",
                                                      who())};
  start_sealing(derive_session_keys(secret, challenge->nonce, client_nonce, config_.hello, peer_.hello),
                AuthSide::kClient);
  co_return std::nullopt;
}

}  // namespace baton::net::detail
