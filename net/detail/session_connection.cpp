// Session, the Connection methods any thread may call (send, close, on_closed, is_open,
// close_info): they take mutex_ and reach the I/O thread through asio::post (wake()).
#include <fmt/format.h>

#include "net/detail/asio_util.h"
#include "net/detail/session.h"

namespace baton::net::detail {

void Session::wake() {
  {
    std::lock_guard lock(mutex_);
    wake_posted_ = false;
    if (close_requested_ && !close_deadline_) close_deadline_ = Clock::now() + config_.close_linger;
  }
  if (wake_timer_) wake_timer_->cancel();
  if (watchdog_timer_) watchdog_timer_->cancel();
}

bool Session::send(const Message& message, Payload body) {
  FrameHead head = encode_frame_head(message, body.size());  // throws on a local bug
  OutFrame frame{std::move(head), std::move(body), std::nullopt};
  size_t bytes = frame.bytes();
  bool overflow = false;
  {
    std::lock_guard lock(mutex_);
    if (!serving_ || io_released_ || close_info_ || close_requested_) return false;
    if (outbox_bytes_ + bytes > config_.max_outbox_bytes) {
      overflow = true;
    } else {
      outbox_bytes_ += bytes;
      outbox_.push_back(std::move(frame));
      if (!wake_posted_) {
        wake_posted_ = true;
        asio::post(executor_, [self = shared_from_this()] { self->wake(); });
      }
    }
  }
  if (overflow) {  // no linger: the peer is not reading, waiting for it would not help
    CloseInfo info{CloseKind::kLocal, fmt::format("outbox to {} exceeded {} bytes (the peer does not keep up)", who(),
                                                  config_.max_outbox_bytes)};
    std::lock_guard lock(mutex_);
    if (!io_released_) asio::post(executor_, [self = shared_from_this(), info] { self->abort(info); });
    return false;
  }
  return true;
}

void Session::close(std::string reason) {
  std::lock_guard lock(mutex_);
  if (!serving_ || io_released_ || close_info_ || close_requested_) return;
  close_requested_ = std::move(reason);
  asio::post(executor_, [self = shared_from_this()] { self->wake(); });
}

void Session::on_closed(std::function<void(const CloseInfo&)> callback) {
  std::optional<CloseInfo> already;
  {
    std::lock_guard lock(mutex_);
    if (finished_ || io_released_) {
      already = close_info_;
    } else {
      on_closed_ = std::move(callback);
      return;
    }
  }
  if (callback && already) callback(*already);
}

bool Session::is_open() const {
  std::lock_guard lock(mutex_);
  return serving_ && !close_info_ && !close_requested_;
}

std::optional<CloseInfo> Session::close_info() const {
  std::lock_guard lock(mutex_);
  return close_info_;
}

}  // namespace baton::net::detail
