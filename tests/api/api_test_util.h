// Helpers for the HTTP API tests: an in-process server on a free port over stories260K, a raw
// socket HTTP/1.1 client (for streaming and for closing a connection mid-stream), SSE parsing,
// and greedy reference generations straight from the Generator.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/api/http_server.h"
#include "engine/api/served_model.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/local_model.h"
#include "fixtures.h"

namespace baton::test {

inline std::string stories_path() { return shared_path("models/stories260K.gguf"); }

struct LocalServer {
  explicit LocalServer(api::ServeOptions so = {}, api::ServerOptions ho = {}) {
    so.threads = 1;
    model = api::ServedModel::open_local(stories_path(), so);
    ho.port = 0;
    server = std::make_unique<api::HttpServer>(*model, ho);
    server->start();
  }
  int port() const { return server->port(); }
  std::unique_ptr<api::ServedModel> model;
  std::unique_ptr<api::HttpServer> server;
};

// A connection to 127.0.0.1:port; every read is bounded (throws after `timeout`).
class RawConnection {
 public:
  explicit RawConnection(int port, std::chrono::milliseconds timeout = std::chrono::seconds(20)) : timeout_(timeout) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("cannot connect to port " + std::to_string(port));
  }
  ~RawConnection() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  void send_request(const std::string& method, const std::string& path, const std::string& body,
                    const std::string& extra_headers = "", const std::string& content_type = "application/json") {
    std::string r = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra_headers;
    if (!body.empty() || method == "POST")
      r += "Content-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    r += "\r\n" + body;
    size_t off = 0;
    while (off < r.size()) {
      ssize_t n = ::send(fd_, r.data() + off, r.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send failed");
      off += static_cast<size_t>(n);
    }
  }
  // Reads until `marker` has been received (true) or the peer closed (false).
  bool read_until(const std::string& marker) {
    auto end = std::chrono::steady_clock::now() + timeout_;
    while (received_.find(marker) == std::string::npos) {
      if (!read_some(end)) return false;
    }
    return true;
  }
  // Reads until the peer closes.
  void read_all() {
    auto end = std::chrono::steady_clock::now() + timeout_;
    while (read_some(end)) {
    }
  }
  const std::string& received() const { return received_; }

 private:
  bool read_some(std::chrono::steady_clock::time_point end) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw std::runtime_error("timed out reading the response: " + received_.substr(0, 300));
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return true;
    char buf[8192];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    received_.append(buf, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  std::chrono::milliseconds timeout_;
  std::string received_;
};

struct RawResponse {
  int status = 0;
  std::string headers;
  std::string body;  // de-chunked
};

// Splits a complete HTTP/1.1 response (Connection: close) into status, headers and body.
inline RawResponse parse_response(const std::string& raw) {
  RawResponse r;
  auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos || raw.size() < 12) throw std::runtime_error("incomplete response: " + raw);
  r.status = std::stoi(raw.substr(9, 3));
  r.headers = raw.substr(0, head_end);
  std::string rest = raw.substr(head_end + 4);
  if (r.headers.find("Transfer-Encoding: chunked") == std::string::npos) {
    r.body = rest;
    return r;
  }
  size_t pos = 0;
  for (;;) {
    auto eol = rest.find("\r\n", pos);
    if (eol == std::string::npos) break;
    size_t len = std::stoul(rest.substr(pos, eol - pos), nullptr, 16);
    if (len == 0) break;
    r.body += rest.substr(eol + 2, len);
    pos = eol + 2 + len + 2;
  }
  return r;
}

inline RawResponse raw_request(int port, const std::string& method, const std::string& path, const std::string& body,
                               const std::string& extra_headers = "",
                               const std::string& content_type = "application/json") {
  RawConnection c(port);
  c.send_request(method, path, body, extra_headers, content_type);
  c.read_all();
  return parse_response(c.received());
}

// The "data: ..." payloads of an SSE body, in order ("[DONE]" included as text).
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    auto end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return out;
}

// Greedy generation of `prompt` straight from the Generator (one process, no scheduler).
inline std::vector<GeneratedStep> reference_steps(const std::vector<int32_t>& prompt, int n, size_t n_top = 0) {
  LocalModelOptions lo;
  lo.threads = 1;
  LocalModel m(stories_path(), lo);
  Generator g(m.head(), m.layers());
  GenerateOptions go;
  go.n_predict = n;
  go.sampling.temperature = 0;
  go.n_top_logprobs = n_top;
  const auto& tok = m.tokenizer();
  go.is_end_of_generation = [&tok](int32_t id) { return tok.is_eog(id); };
  return g.generate(1, prompt, go).steps;
}

}  // namespace baton::test
