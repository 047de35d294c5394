#include "net/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/base/error.h"

namespace baton::net {

AuthConfig AuthConfig::with_secret(std::string secret) {
  if (secret.empty()) fail("net: the cluster secret is empty (use an explicit insecure mode to run without one)");
  return AuthConfig(AuthMode::kHmacSha256, std::move(secret));
}

AuthConfig AuthConfig::insecure() { return AuthConfig(AuthMode::kInsecure, {}); }

std::string load_secret_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read cluster secret file '{}': {}", path, std::strerror(errno));
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) fail("cannot read cluster secret file '{}': read error", path);
  std::string secret = content.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) fail("cluster secret file '{}' is empty", path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    spdlog::warn(
        "cluster secret file '{}' is accessible by group/others (mode {:o}); "
        "chmod 600 it",
        path, st.st_mode & 0777);
  return secret;
}

Nonce random_nonce() {
  Nonce n;
  if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) fail("net: OpenSSL RAND_bytes failed to produce a nonce");
  return n;
}

namespace {

void append_field(std::string& out, std::string_view field) {
  uint32_t n = static_cast<uint32_t>(field.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(n >> (8 * i)));
  out.append(field);
}

std::string_view as_view(const Nonce& n) { return {reinterpret_cast<const char*>(n.data()), n.size()}; }

}  // namespace

Mac auth_proof(std::string_view secret, AuthSide prover, const Nonce& server_nonce, const Nonce& client_nonce,
               std::string_view client_node_id, std::string_view server_node_id) {
  std::string transcript = "baton-auth-v1";
  append_field(transcript, prover == AuthSide::kClient ? "client" : "server");
  append_field(transcript, as_view(server_nonce));
  append_field(transcript, as_view(client_nonce));
  append_field(transcript, client_node_id);
  append_field(transcript, server_node_id);
  Mac mac{};
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(transcript.data()), transcript.size(), mac.data(), &len) ||
      len != mac.size())
    fail("net: OpenSSL HMAC-SHA256 failed");
  return mac;
}

bool macs_equal(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

}  // namespace baton::net
