// Running one generation request for the endpoints added after the OpenAI pair
// (/v1/responses, llama-server's /completion): submit it, then either wait for the whole answer
// (cancelling it when the client goes away) or stream it through a StreamFormat that turns
// engine events into the endpoint's server-sent events. The same rules as generation_handler.cpp:
// 503 when overloaded or stopping, 400 for a request the scheduler refuses, 502 for a pipeline
// failure, the latency histograms fed per token, a vanished client cancels its request.
// Internal to engine/api (includes httplib through http_server_impl.h).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/api/http_server_impl.h"

namespace baton::api {

// A handler whose escaped exceptions become error responses (an ApiError its own status, anything
// else a 500 naming it), never a dropped connection.
httplib::Server::Handler guarded_handler(std::function<void(const httplib::Request&, httplib::Response&)> handler);

// Request arrival -> first token, then between tokens, for the latency histograms.
struct TokenClock {
  std::chrono::steady_clock::time_point arrival = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last{};
  void tick(HttpMetrics& m) {
    const auto now = std::chrono::steady_clock::now();
    if (last == std::chrono::steady_clock::time_point{})
      m.observe_time_to_first_token(std::chrono::duration<double>(now - arrival).count());
    else m.observe_inter_token(std::chrono::duration<double>(now - last).count());
    last = now;
  }
};

// A random seed for a request that gives none.
uint32_t random_request_seed();

// The status and error for a request that ended without completing ("cancelled", "error").
ApiError failure_of(const serving::CompletionSummary& summary, bool stopping);

// Queues `request`. Throws ApiError: 503 (with Retry-After) when overloaded or unavailable, 400
// naming `param` for what the scheduler refuses (empty or too long prompt, bad ids).
std::shared_ptr<serving::RequestHandle> submit_request(HttpServer::Impl& server, serving::CompletionRequest request,
                                                       httplib::Response& res, const std::string& param);

struct FinishedRequest {
  std::vector<serving::TokenEvent> events;
  serving::CompletionSummary summary;  // finish_reason "stop" or "length"
};

// Waits for every event; a client whose connection closes meanwhile cancels the request.
// Throws failure_of() unless it ended with "stop" or "length".
FinishedRequest collect_request(HttpServer::Impl& server, const httplib::Request& req,
                                const std::shared_ptr<serving::RequestHandle>& handle);

// An endpoint's stream: the text written before the first token, per token, at the end, or
// instead of the end when the request failed. Called from one thread at a time.
class StreamFormat {
 public:
  virtual ~StreamFormat() = default;
  virtual std::string start() { return {}; }
  virtual std::string token(const serving::TokenEvent& event) = 0;
  virtual std::string finish(const serving::CompletionSummary& summary) = 0;
  virtual std::string fail(const ApiError& error) = 0;
};

// Answers with a text/event-stream fed by `format` (the handler returns at once; httplib pulls
// the content). A client that goes away cancels the request.
void stream_request(HttpServer::Impl& server, httplib::Response& res, std::shared_ptr<serving::RequestHandle> handle,
                    std::shared_ptr<StreamFormat> format);

}  // namespace baton::api
