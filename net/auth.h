// Cluster authentication: the shared secret, HMAC-SHA256 proofs and nonces (OpenSSL).
//
// Handshake on every connection (driven by net/detail/session), after Hello both ways:
//   server -> client  AuthChallenge{server_nonce}
//   client -> server  AuthResponse{mac = proof(kClient), counter_nonce = client_nonce}
//   server            checks the mac (constant time); wrong -> logs and closes, answers nothing
//   server -> client  AuthResponse{mac = proof(kServer)}
//   client            checks the mac; wrong -> closes
// Both proofs cover both nonces and both Hello node ids; the side label stops a proof from
// being reflected back. The secret itself never crosses the wire. Peers that both chose
// insecure mode skip these steps; a mix of secure and insecure is refused.
#pragma once

#include <string>
#include <string_view>

#include "net/messages.h"

namespace baton::net {

// Either a non-empty cluster secret or an explicit insecure mode; there is no default.
class AuthConfig {
 public:
  // Throws baton::Error if `secret` is empty.
  static AuthConfig with_secret(std::string secret);
  static AuthConfig insecure();

  AuthMode mode() const { return mode_; }
  const std::string& secret() const { return secret_; }

 private:
  AuthConfig(AuthMode mode, std::string secret) : mode_(mode), secret_(std::move(secret)) {}
  AuthMode mode_;
  std::string secret_;
};

// Reads a secret file and strips trailing "\n" / "\r\n". Throws baton::Error naming the path
// if it cannot be read or is empty after trimming; logs a warning if others can read it.
std::string load_secret_file(const std::string& path);

// 32 bytes from the OpenSSL CSPRNG (RAND_bytes); throws baton::Error if it fails.
Nonce random_nonce();

enum class AuthSide : uint8_t { kClient, kServer };

// HMAC-SHA256(secret, "baton-auth-v1" | side | server_nonce | client_nonce | client_id |
// server_id), each variable field length-prefixed. Throws baton::Error only if OpenSSL fails.
Mac auth_proof(std::string_view secret, AuthSide prover, const Nonce& server_nonce, const Nonce& client_nonce,
               std::string_view client_node_id, std::string_view server_node_id);

// Constant-time comparison (CRYPTO_memcmp).
bool macs_equal(const Mac& a, const Mac& b);

}  // namespace baton::net
