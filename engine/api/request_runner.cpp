#include "engine/api/request_runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <limits>
#include <mutex>
#include <random>
#include <set>

#include "engine/api/access_log.h"
#include "engine/api/peer_probe.h"

namespace baton::api {

using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::milliseconds kPoll{50};

// What a stream needs after the handler has returned.
struct StreamState {
  std::shared_ptr<serving::RequestHandle> handle;
  std::shared_ptr<StreamFormat> format;
  TokenClock timer;
  bool started = false;
  bool finished = false;
  std::atomic<bool> abandoned{false};

  void abandon(HttpMetrics& metrics) {
    if (finished || abandoned.exchange(true)) return;
    metrics.count_stream_cancelled();  // before the slot is freed: whoever sees it free sees the count
    handle->cancel();
    spdlog::info("streaming client disconnected, request cancelled");
  }
};

}  // namespace

httplib::Server::Handler guarded_handler(std::function<void(const httplib::Request&, httplib::Response&)> handler) {
  return [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    try {
      handler(req, res);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", req.method, req.path, e.what());
      send_error(res, ApiError(500, "server_error", e.what()));
    }
  };
}

uint32_t random_request_seed() {
  static std::mutex mutex;
  static std::mt19937 rng{std::random_device{}()};
  std::lock_guard lock(mutex);
  return rng();
}

ApiError failure_of(const serving::CompletionSummary& s, bool stopping) {
  if (s.finish_reason == FinishReason::kCancelled || stopping || s.error_kind == serving::ErrorKind::kShuttingDown) {
    note_access_failure(503);
    return ApiError(503, "unavailable_error", s.error.empty() ? "the server is shutting down" : s.error);
  }
  // The operator's line for a 502: which request, and what failed (the error names the node).
  note_access_failure(502);
  spdlog::warn("request {}: 502, generation failed: {}", current_request_id(), s.error);
  return ApiError(502, "server_error", fmt::format("generation failed: {}", s.error));
}

std::shared_ptr<serving::RequestHandle> submit_request(HttpServer::Impl& server, serving::CompletionRequest request,
                                                       httplib::Response& res, const std::string& param) {
  // The sampler would only meet an id outside the vocabulary mid-request (a 502): checked here.
  const int64_t n_vocab = server.model.tokenizer().n_vocab();
  std::set<int32_t> banned;
  for (const auto& [id, bias] : request.sampling.logit_bias) {
    if (id >= n_vocab)
      throw bad_request("logit_bias",
                        fmt::format("'logit_bias' token {} is outside the vocabulary (n_vocab = {})", id, n_vocab));
    if (bias == -std::numeric_limits<float>::infinity()) banned.insert(id);
  }
  if (static_cast<int64_t>(banned.size()) == n_vocab)
    throw bad_request("logit_bias", "'logit_bias' bans every token of the vocabulary: nothing could be generated");
  try {
    return server.model.scheduler().submit(std::move(request));
  } catch (const serving::OverloadedError& e) {
    res.set_header("Retry-After", "1");
    throw ApiError(503, "unavailable_error", e.what());
  } catch (const Error& e) {
    throw bad_request(param, e.what());
  }
}

FinishedRequest collect_request(HttpServer::Impl& server, const httplib::Request& req,
                                const std::shared_ptr<serving::RequestHandle>& handle) {
  FinishedRequest out;
  TokenClock timer;
  const PeerProbe peer(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
  auto next_look = Clock::now() + kPoll;
  bool disconnected = false;
  serving::TokenEvent ev;
  for (;;) {
    const auto poll = handle->next(ev, kPoll);
    if (poll == serving::RequestHandle::Poll::kToken) {
      timer.tick(server.metrics);
      out.events.push_back(std::move(ev));
    } else if (poll == serving::RequestHandle::Poll::kDone) {
      break;
    }
    if (server.stopping) handle->cancel();
    if (!disconnected && Clock::now() >= next_look) {
      next_look = Clock::now() + kPoll;
      if (peer.peer_closed()) {
        disconnected = true;
        server.metrics.count_request_disconnected();
        handle->cancel();
        spdlog::info("{} {}: client disconnected, request cancelled", req.method, req.path);
      }
    }
  }
  out.summary = handle->summary();
  note_access_tokens(out.summary);
  if (!completed(out.summary.finish_reason)) throw failure_of(out.summary, server.stopping);
  return out;
}

void stream_request(HttpServer::Impl& server, httplib::Response& res, std::shared_ptr<serving::RequestHandle> handle,
                    std::shared_ptr<StreamFormat> format) {
  auto st = std::make_shared<StreamState>();
  st->handle = std::move(handle);
  st->format = std::move(format);
  HttpServer::Impl* s = &server;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [s, st](size_t, httplib::DataSink& sink) -> bool {
        auto write = [&](const std::string& text) {
          if (text.empty() || sink.write(text.data(), text.size())) return true;
          st->abandon(s->metrics);
          return false;
        };
        if (!st->started) {
          st->started = true;
          return write(st->format->start());
        }
        serving::TokenEvent ev;
        const auto poll = st->handle->next(ev, kPoll);
        if (poll == serving::RequestHandle::Poll::kTimeout) {
          if (s->stopping || !sink.is_writable()) {
            st->abandon(s->metrics);
            return false;
          }
          return true;
        }
        if (poll == serving::RequestHandle::Poll::kToken) {
          st->timer.tick(s->metrics);
          return write(st->format->token(ev));
        }
        st->finished = true;
        const serving::CompletionSummary summary = st->handle->summary();
        note_access_tokens(summary);
        const bool ok = completed(summary.finish_reason);
        const std::string end = ok ? st->format->finish(summary) : st->format->fail(failure_of(summary, s->stopping));
        const bool written = end.empty() || sink.write(end.data(), end.size());
        sink.done();
        return written;
      },
      [s, st](bool) { st->abandon(s->metrics); });
}

}  // namespace baton::api
