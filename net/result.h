// A value or an error, for code that must not throw on remote input (C++20 has no
// std::expected). Used by net/frame and net/codec to report malformed or hostile bytes.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace baton::net {

// Why some bytes were rejected, in words that name the field and expected vs actual.
struct DecodeError {
  std::string message;
};

template <class T, class E = DecodeError>
class Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Expected(E error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // Precondition: ok() (value) / !ok() (error); checked, std::bad_variant_access otherwise.
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const E& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, E> v_;
};

template <class T>
using Result = Expected<T, DecodeError>;

}  // namespace baton::net
