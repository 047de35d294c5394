#include "net/payload.h"

#include <cstring>

#include "engine/base/aligned_buffer.h"
#include "engine/base/error.h"

namespace baton::net {

Payload Payload::allocate(size_t bytes) {
  Payload p;
  if (bytes == 0) return p;
  auto buffer = std::make_shared<AlignedBuffer>(bytes);
  p.data_ = static_cast<const uint8_t*>(buffer->data());
  p.size_ = bytes;
  p.owner_ = std::move(buffer);
  p.writable_ = true;
  return p;
}

Payload Payload::copy_of(std::span<const uint8_t> bytes) {
  Payload p = allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(p.mutable_bytes().data(), bytes.data(), bytes.size());
  return p;
}

Payload Payload::borrow(std::shared_ptr<const void> owner, std::span<const uint8_t> bytes) {
  Payload p;
  p.owner_ = std::move(owner);
  p.data_ = bytes.data();
  p.size_ = bytes.size();
  return p;
}

std::span<uint8_t> Payload::mutable_bytes() {
  if (size_ == 0) return {};
  if (!writable_) fail("net::Payload::mutable_bytes: the payload borrows bytes it does not own");
  return {const_cast<uint8_t*>(data_), size_};
}

}  // namespace baton::net
