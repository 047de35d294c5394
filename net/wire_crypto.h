// Frame protection after an authenticated handshake (OpenSSL EVP). Pure functions and small
// stateful ciphers, no I/O.
//
// Keys: HKDF-SHA256(ikm = cluster secret, salt = server_nonce | client_nonce,
//                   info = "baton-wire-v3" | direction | client Hello | server Hello)
// (every Hello field, so a Hello altered on the way gives the two sides different keys)
// gives one 32-byte AES-256-GCM key per direction (fresh nonces on every connection, so every
// connection has its own keys). A sealed frame is
//   prefix (flags has kFlagSealed; lengths are the plaintext lengths)
//   | AES-256-GCM(header | body) | 16-byte tag
// with the 16-byte prefix as associated data and a 96-bit nonce of four zero bytes and the
// direction's 64-bit frame counter (little-endian), which starts at 0 and is never sent: a
// frame that is altered, replayed, reordered, cut or missing fails the tag of the receiver's
// next expected counter value.
#pragma once

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "net/auth.h"
#include "net/frame.h"

namespace baton::net {

inline constexpr size_t kWireKeyBytes = 32;
inline constexpr size_t kWireTagBytes = 16;
using WireKey = std::array<uint8_t, kWireKeyBytes>;

struct SessionKeys {
  WireKey client_to_server{};
  WireKey server_to_client{};
};

// Throws baton::Error only if OpenSSL fails.
SessionKeys derive_session_keys(std::string_view secret, const Nonce& server_nonce, const Nonce& client_nonce,
                                const Hello& client_hello, const Hello& server_hello);

// One direction of one connection: the sender's or the receiver's half. Not thread-safe; the
// session's single writer (or reader) owns it.
class FrameCipher {
 public:
  explicit FrameCipher(const WireKey& key);
  FrameCipher(FrameCipher&&) noexcept;
  FrameCipher& operator=(FrameCipher&&) noexcept;
  ~FrameCipher();

  // Frames sealed or opened so far (the next frame's counter).
  uint64_t counter() const { return counter_; }

  // Sender: encrypts `header` then `body` into `out` (header.size() + body.size() +
  // kWireTagBytes bytes), authenticating `prefix` too, and advances the counter. Throws
  // baton::Error if OpenSSL fails or the counter is exhausted.
  void seal(std::span<const uint8_t, kPrefixBytes> prefix, std::span<const uint8_t> header,
            std::span<const uint8_t> body, std::span<uint8_t> out);

  // Receiver: decrypts `header` and `body` in place and checks `tag` against `prefix` and the
  // next counter value; false (contents unspecified) if the frame is not the authentic next
  // one. Advances the counter only on success.
  bool open(std::span<const uint8_t, kPrefixBytes> prefix, std::span<uint8_t> header, std::span<uint8_t> body,
            std::span<const uint8_t, kWireTagBytes> tag);

 private:
  struct CtxFree {
    void operator()(EVP_CIPHER_CTX* ctx) const { EVP_CIPHER_CTX_free(ctx); }
  };
  std::unique_ptr<EVP_CIPHER_CTX, CtxFree> ctx_;
  WireKey key_{};
  uint64_t counter_ = 0;
  // Sets key, nonce (from counter_) and direction, then feeds `prefix` as associated data.
  void begin(bool encrypt, std::span<const uint8_t, kPrefixBytes> prefix);
};

}  // namespace baton::net
