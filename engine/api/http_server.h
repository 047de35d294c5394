// The OpenAI-compatible HTTP server (cpp-httplib: a thread pool, one thread per connection).
// Routes: POST /v1/completions, POST /v1/chat/completions (stream or not), GET /v1/models,
// GET /health, GET /v1/cluster, GET /metrics, POST /tokenize, POST /detokenize; the web UI
// (GET /, /dashboard, /webui/*, GET /v1/dashboard: webui_routes.cpp); and, installed by their own
// files (extra_routes.h), POST /v1/responses, GET /v1/models/{id}, llama-server's POST /completion,
// GET /props, GET /slots, GET /models; CORS per ServerOptions::cors_origins.
// Errors are OpenAI's {"error": {...}} with the status: 400 bad input (naming the field),
// 401 missing/wrong Bearer key (every route but /health, when a key is set), 404 unknown route,
// 408 headers too slow, 413 body over the limit (whatever its framing), 431 headers too large,
// 503 overloaded (with Retry-After) / not ready / shutting down, 502 pipeline failure.
// A streaming client that goes away cancels its request (RequestHandle::cancel()).
// See docs/API.md. Thread-safety: start()/stop() from one controlling thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/api/metrics.h"
#include "engine/api/served_model.h"

namespace baton::api {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8021;                   // 0: any free port (see port())
  std::string api_key;               // "" = no authentication
  size_t max_body_bytes = 8u << 20;  // larger bodies -> 413
  int threads = 0;                   // HTTP threads; <= 0: slots + queue limit + 8
  // The front door's limits (docs/SECURITY.md): a request's headers must arrive within
  // header_timeout_s of its first byte (else 408); its body within timeout_s (llama-server's
  // -to/--timeout), which also bounds each response write; at most max_connections open
  // connections (beyond: 503 with Retry-After, as for a full request queue).
  double header_timeout_s = 10;
  double timeout_s = 600;
  int max_connections = 1024;
  bool webui = true;                      // GET / chat page and dashboard (--no-webui: off)
  std::vector<std::string> cors_origins;  // --cors-origin: origins (or "*") browsers may call from
  bool slots_endpoint = true;             // GET /slots (false: 501, llama-server's --no-slots)
};

class HttpServer {
 public:
  // `model` must outlive the server.
  HttpServer(ServedModel& model, ServerOptions options);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds (throws baton::Error naming host:port when it cannot) and serves on a background
  // thread; returns once the socket accepts connections.
  void start();
  int port() const;
  // Stops accepting, cancels open streams and waiting requests, waits for every handler to
  // return. Idempotent.
  void stop();

  HttpMetrics& metrics();

  // The bytes of one connection served in memory on the calling thread, through the same routes
  // (start() not needed); returns what the server wrote. For the fuzz target (tests/fuzz/fuzz_http.cpp).
  std::string serve_bytes(std::string input);

  struct Impl;  // routes and handlers (http_server.cpp, generation_handler.cpp)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::api
