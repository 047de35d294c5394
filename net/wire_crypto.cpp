#include "net/wire_crypto.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include <limits>
#include <string>

#include "engine/base/error.h"

namespace baton::net {

namespace {

void append_field(std::string& out, std::string_view field) {
  uint32_t n = static_cast<uint32_t>(field.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(n >> (8 * i)));
  out.append(field);
}

WireKey hkdf_sha256(std::string_view secret, std::string_view salt, std::string_view info) {
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  if (!kdf) fail("net: OpenSSL has no HKDF");
  EVP_KDF_CTX* ctx = EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (!ctx) fail("net: OpenSSL cannot create an HKDF context");
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<char*>(secret.data()), secret.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<char*>(salt.data()), salt.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<char*>(info.data()), info.size()),
      OSSL_PARAM_construct_end()};
  WireKey key{};
  const int ok = EVP_KDF_derive(ctx, key.data(), key.size(), params);
  EVP_KDF_CTX_free(ctx);
  if (ok != 1) fail("net: OpenSSL HKDF-SHA256 failed");
  return key;
}

void append_hello(std::string& out, const Hello& h) {
  append_field(out, std::to_string(h.protocol_version));
  append_field(out, std::to_string(h.features));
  append_field(out, h.node_id);
  append_field(out, std::to_string(static_cast<int>(h.role)));
  append_field(out, std::to_string(static_cast<int>(h.auth)));
}

}  // namespace

SessionKeys derive_session_keys(std::string_view secret, const Nonce& server_nonce, const Nonce& client_nonce,
                                const Hello& client_hello, const Hello& server_hello) {
  std::string salt(reinterpret_cast<const char*>(server_nonce.data()), server_nonce.size());
  salt.append(reinterpret_cast<const char*>(client_nonce.data()), client_nonce.size());
  auto info = [&](std::string_view direction) {
    std::string out = "baton-wire-v3";
    append_field(out, direction);
    append_hello(out, client_hello);
    append_hello(out, server_hello);
    return out;
  };
  return {hkdf_sha256(secret, salt, info("client->server")), hkdf_sha256(secret, salt, info("server->client"))};
}

FrameCipher::FrameCipher(const WireKey& key) : ctx_(EVP_CIPHER_CTX_new()), key_(key) {
  if (!ctx_) fail("net: OpenSSL cannot create a cipher context");
}
FrameCipher::FrameCipher(FrameCipher&&) noexcept = default;
FrameCipher& FrameCipher::operator=(FrameCipher&&) noexcept = default;
FrameCipher::~FrameCipher() { OPENSSL_cleanse(key_.data(), key_.size()); }

void FrameCipher::begin(bool encrypt, std::span<const uint8_t, kPrefixBytes> prefix) {
  if (counter_ == std::numeric_limits<uint64_t>::max()) fail("net: the frame counter of this connection is exhausted");
  std::array<uint8_t, 12> iv{};
  for (int i = 0; i < 8; ++i) iv[4 + i] = static_cast<uint8_t>(counter_ >> (8 * i));
  int len = 0;
  if (EVP_CipherInit_ex(ctx_.get(), EVP_aes_256_gcm(), nullptr, key_.data(), iv.data(), encrypt ? 1 : 0) != 1 ||
      EVP_CipherUpdate(ctx_.get(), nullptr, &len, prefix.data(), static_cast<int>(prefix.size())) != 1)
    fail("net: OpenSSL AES-256-GCM setup failed");
}

namespace {

// EVP lengths are int: feed big bodies in pieces.
bool update(EVP_CIPHER_CTX* ctx, const uint8_t* in, uint8_t* out, size_t n) {
  constexpr size_t kStep = size_t{1} << 30;
  while (n > 0) {
    const size_t step = std::min(n, kStep);
    int len = 0;
    if (EVP_CipherUpdate(ctx, out, &len, in, static_cast<int>(step)) != 1 || static_cast<size_t>(len) != step)
      return false;
    in += step;
    out += step;
    n -= step;
  }
  return true;
}

}  // namespace

void FrameCipher::seal(std::span<const uint8_t, kPrefixBytes> prefix, std::span<const uint8_t> header,
                       std::span<const uint8_t> body, std::span<uint8_t> out) {
  if (out.size() != header.size() + body.size() + kWireTagBytes)
    fail("net: sealed frame buffer of {} bytes, expected {}", out.size(), header.size() + body.size() + kWireTagBytes);
  begin(true, prefix);
  int len = 0;
  uint8_t* tag = out.data() + header.size() + body.size();
  if (!update(ctx_.get(), header.data(), out.data(), header.size()) ||
      !update(ctx_.get(), body.data(), out.data() + header.size(), body.size()) ||
      EVP_EncryptFinal_ex(ctx_.get(), tag, &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx_.get(), EVP_CTRL_GCM_GET_TAG, kWireTagBytes, tag) != 1)
    fail("net: OpenSSL AES-256-GCM encryption failed");
  ++counter_;
}

bool FrameCipher::open(std::span<const uint8_t, kPrefixBytes> prefix, std::span<uint8_t> header,
                       std::span<uint8_t> body, std::span<const uint8_t, kWireTagBytes> tag) {
  begin(false, prefix);
  int len = 0;
  uint8_t final_block[16];
  if (!update(ctx_.get(), header.data(), header.data(), header.size()) ||
      !update(ctx_.get(), body.data(), body.data(), body.size()) ||
      EVP_CIPHER_CTX_ctrl(ctx_.get(), EVP_CTRL_GCM_SET_TAG, kWireTagBytes, const_cast<uint8_t*>(tag.data())) != 1 ||
      EVP_DecryptFinal_ex(ctx_.get(), final_block, &len) != 1)
    return false;
  ++counter_;
  return true;
}

}  // namespace baton::net
