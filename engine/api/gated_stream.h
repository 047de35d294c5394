// One request of one connection, as cpp-httplib reads and writes it (httplib::Stream), with the
// deadlines and the body limit that httplib's own socket stream lacks: its reads time out per
// recv() only, it buffers a chunked body whole, and it drops bytes read past the request (so
// pipelined requests were lost).
//
// The connection gate hands over a complete request line and headers already read; every byte
// read after them counts toward `max_body_bytes`, whatever the framing (chunked framing
// included), and must arrive before `timeout` has passed since the hand-over. A write waits at
// most `timeout` for the client to take the bytes. Bytes read past the end of this request are
// kept (leftover()) for the next one. Internal to engine/api; one worker thread uses it.
#pragma once

#include <httplib.h>

#include <chrono>
#include <string>

namespace baton::api {

class GatedStream final : public httplib::Stream {
 public:
  // `buffered` starts with the request line and ends its headers with "\r\n\r\n" (plus maybe
  // body bytes or further requests).
  GatedStream(int fd, std::string buffered, size_t max_body_bytes, std::chrono::milliseconds timeout);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override;

  // The body went past max_body_bytes: reading stopped there (the rest was never read).
  bool body_over_limit() const { return over_limit_; }
  // A read or write failed, timed out or met the end of the stream.
  bool failed() const { return failed_; }
  // Bytes received past this request: the next pipelined request(s).
  std::string leftover() const { return buf_.substr(pos_); }

 private:
  bool fill();  // reads more from the socket before the deadline; false: EOF, error or timeout

  int fd_;
  std::string buf_;
  size_t pos_ = 0;        // next byte of buf_ to deliver
  size_t delivered_ = 0;  // bytes delivered to httplib so far
  size_t header_bytes_;   // the request line and headers, "\r\n\r\n" included
  size_t max_body_bytes_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point read_deadline_;
  bool over_limit_ = false;
  mutable bool failed_ = false;
};

}  // namespace baton::api
