// The raw body of a frame: shared, immutable-once-sent bytes, 64-byte aligned when allocated
// here (tensors are read straight into it and used in place).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace baton::net {

// Cheap to copy (shares the bytes). Not synchronised: fill it on one thread before sending or
// sharing it; after that treat it as read-only.
class Payload {
 public:
  Payload() = default;  // empty body

  // `bytes` uninitialised bytes, 64-byte aligned.
  static Payload allocate(size_t bytes);
  // A 64-byte aligned copy of `bytes`.
  static Payload copy_of(std::span<const uint8_t> bytes);
  // Wraps bytes owned by someone else without copying; `owner` keeps them alive.
  static Payload borrow(std::shared_ptr<const void> owner, std::span<const uint8_t> bytes);

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Writable view; only for payloads made by allocate() or copy_of() (throws baton::Error
  // for borrowed ones).
  std::span<uint8_t> mutable_bytes();

 private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool writable_ = false;
};

}  // namespace baton::net
