// The coordinator's HTTP port while it connects and loads: listens at once and answers every
// request 503 {"status": "loading", "progress": {...}} with Retry-After (llama-server answers
// /health 503 "Loading model" likewise), so a load balancer or `engine-ctl status` sees progress
// instead of a refused connection. Stopped just before the real HttpServer binds the same port.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/base/error.h"
#include "engine/pipeline/load_progress.h"

namespace baton::coordinator {

class LoadingServer {
 public:
  LoadingServer(std::shared_ptr<pipeline::LoadProgress> progress, const std::string& host, int port)
      : progress_(std::move(progress)) {
    // The real server's socket options (engine/api/gated_server.cpp): SO_REUSEADDR only, so a
    // second coordinator on this port fails with "address in use" already while this one loads
    // (cpp-httplib's default SO_REUSEPORT would let it share the port); the real server retries
    // its bind for a moment while this one's last connections close.
    server_.set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    // One request per connection: a kept-alive client connection (a load balancer polling
    // /health) would otherwise still hold the port when the real server binds it.
    server_.set_keep_alive_max_count(1);
    auto answer = [this](const httplib::Request&, httplib::Response& res) {
      nlohmann::json body = {{"status", "loading"}, {"progress", progress_->to_json()}};
      body["error"] = {
          {"code", 503}, {"message", "Loading model: " + progress_->line()}, {"type", "unavailable_error"}};
      res.status = 503;
      res.set_header("Retry-After", "1");
      res.set_content(body.dump(), "application/json");
    };
    server_.Get(R"(.*)", answer);
    server_.Post(R"(.*)", answer);
    port_ = port == 0 ? server_.bind_to_any_port(host) : (server_.bind_to_port(host, port) ? port : -1);
    if (port_ < 0) fail("cannot listen on {}:{}: address in use or not available", host, port);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LoadingServer() { stop(); }
  LoadingServer(const LoadingServer&) = delete;
  LoadingServer& operator=(const LoadingServer&) = delete;

  int port() const { return port_; }
  void stop() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }

 private:
  std::shared_ptr<pipeline::LoadProgress> progress_;
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
};

}  // namespace baton::coordinator
