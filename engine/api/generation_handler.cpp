// POST /v1/completions and /v1/chat/completions: parse, build the prompt tokens, submit to the
// scheduler, then either collect the whole completion or stream it as server-sent events.
// A streaming client that disconnects (a failed write, an unwritable socket, or httplib
// reporting an unsuccessful response) cancels the request; so does a non-streaming client whose
// connection the PeerProbe sees closed, and stopping the server.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <limits>
#include <set>

#include "engine/api/access_log.h"
#include "engine/api/constrained_generation.h"
#include "engine/api/http_server_impl.h"
#include "engine/api/structured_request.h"
#include "engine/api/openai_response.h"
#include "engine/api/peer_probe.h"
#include "engine/api/request_runner.h"

namespace baton::api {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::milliseconds kPoll{50};

// Everything a streaming response needs after the handler has returned.
struct Stream {
  Stream(std::shared_ptr<serving::RequestHandle> h, ResponseBuilder b, bool is_chat, bool usage, bool lp, TokenClock c)
      : handle(std::move(h)), builder(std::move(b)), chat(is_chat), include_usage(usage), logprobs(lp), clock(c) {}
  std::shared_ptr<serving::RequestHandle> handle;
  ResponseBuilder builder;
  bool chat = false;
  bool include_usage = false;
  bool logprobs = false;
  bool role_sent = false;
  bool finished = false;
  // With tools the reply is held back and parsed for calls at the end (constrained_generation.h).
  const GenerationRequest* tools_request = nullptr;
  std::optional<ChatTemplate> tools_template;
  std::string held;
  TokenClock clock;
  std::atomic<bool> abandoned{false};

  // The client went away (or the server is stopping) before the end: count it once, then free
  // the slot (counted first, so whoever sees the slot free also sees the count).
  void abandon(HttpMetrics& metrics) {
    if (finished || abandoned.exchange(true)) return;
    metrics.count_stream_cancelled();
    handle->cancel();
    spdlog::info("{}: client disconnected, request cancelled", builder.id());
  }
};

}  // namespace

void HttpServer::Impl::handle_generation(const httplib::Request& req, httplib::Response& res, Endpoint endpoint) {
  TokenClock clock;
  GenerationRequest r = parse_generation_request(req.body, endpoint, random_request_seed());
  const auto& tok = model.tokenizer();
  const char* prompt_param = endpoint == Endpoint::kChat ? "messages" : "prompt";

  // The prompt tokens: chat template + BOS per the model, or the text / ids as given.
  serving::CompletionRequest engine = r.engine;
  if (endpoint == Endpoint::kChat) {
    const ChatTemplate* tmpl = model.chat_template();
    if (!tmpl)
      throw ApiError(400, "invalid_request_error",
                     "this model's chat template is not supported: " + model.chat_template_error(), "messages");
    std::string text = chat_prompt_text(r, *tmpl);
    engine.prompt = tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
  } else if (r.prompt.is_text) {
    engine.prompt = tok.encode(r.prompt.text, /*add_special=*/true, /*parse_special=*/true);
  } else {
    engine.prompt = r.prompt.tokens;
  }

  engine.constraint = build_constraint(r, endpoint == Endpoint::kChat ? model.chat_template() : nullptr, tok);

  std::set<int32_t> banned;
  for (const auto& [id, bias] : engine.sampling.logit_bias) {
    if (id >= tok.n_vocab())
      throw bad_request("logit_bias", fmt::format("'logit_bias' token {} is outside the vocabulary (n_vocab = {})", id,
                                                  tok.n_vocab()));
    if (bias == -std::numeric_limits<float>::infinity()) banned.insert(id);
  }
  if (static_cast<int64_t>(banned.size()) == tok.n_vocab())
    throw bad_request("logit_bias", "'logit_bias' bans every token of the vocabulary: nothing could be generated");

  std::shared_ptr<serving::RequestHandle> handle;
  try {
    handle = model.scheduler().submit(std::move(engine));
  } catch (const serving::OverloadedError& e) {
    res.set_header("Retry-After", "1");
    throw ApiError(503, "unavailable_error", e.what());
  } catch (const Error& e) {
    // Empty prompt, prompt longer than the context, token id outside the vocabulary, bad
    // sampling parameters: the scheduler's message says which.
    throw bad_request(prompt_param, e.what());
  }

  if (!r.stream) {
    ResponseBuilder builder(r, tok, model.info().id);
    // The client is looked at every kPoll while the answer is being generated: gone -> cancel.
    const PeerProbe peer(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
    auto next_look = Clock::now() + kPoll;
    bool disconnected = false;
    serving::TokenEvent ev;
    for (;;) {
      auto poll = handle->next(ev, kPoll);
      if (poll == serving::RequestHandle::Poll::kToken) {
        clock.tick(metrics);
        builder.add(ev);
      } else if (poll == serving::RequestHandle::Poll::kDone) {
        break;
      }
      if (stopping) handle->cancel();
      if (!disconnected && Clock::now() >= next_look) {
        next_look = Clock::now() + kPoll;
        if (peer.peer_closed()) {
          // Counted before the slot is freed: whoever sees the slot free also sees the count.
          disconnected = true;
          metrics.count_request_disconnected();
          handle->cancel();
          spdlog::info("{}: client disconnected, request cancelled", builder.id());
        }
      }
    }
    serving::CompletionSummary s = handle->summary();
    note_access_tokens(s);
    if (!completed(s.finish_reason)) throw failure_of(s, stopping);
    json body = builder.body(s);
    if (endpoint == Endpoint::kChat) attach_tool_calls(body, r, *model.chat_template());
    send_json(res, body);
    return;
  }

  auto st = std::make_shared<Stream>(handle, ResponseBuilder(r, tok, model.info().id), endpoint == Endpoint::kChat,
                                     r.include_usage, r.logprobs, clock);
  auto request = std::make_shared<GenerationRequest>(std::move(r));
  if (endpoint == Endpoint::kChat && uses_tools(*request)) {
    st->tools_request = request.get();
    st->tools_template = *model.chat_template();
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, st, request](size_t, httplib::DataSink& sink) -> bool {
        if (st->chat && !st->role_sent) {
          st->role_sent = true;
          std::string chunk = sse_event(st->builder.role_chunk());
          return sink.write(chunk.data(), chunk.size());
        }
        serving::TokenEvent ev;
        auto poll = st->handle->next(ev, kPoll);
        if (poll == serving::RequestHandle::Poll::kTimeout) {
          if (stopping || !sink.is_writable()) {
            st->abandon(metrics);
            return false;
          }
          return true;
        }
        if (poll == serving::RequestHandle::Poll::kToken) {
          st->clock.tick(metrics);
          if (st->tools_request) {
            st->held += ev.text;
            return true;
          }
          if (ev.text.empty() && !st->logprobs) return true;  // text held back (partial character, stop prefix)
          std::string chunk = sse_event(st->builder.token_chunk(ev));
          if (sink.write(chunk.data(), chunk.size())) return true;
          st->abandon(metrics);
          return false;
        }
        // Done: the final chunk (or an error event), usage, [DONE].
        st->finished = true;
        serving::CompletionSummary s = st->handle->summary();
        note_access_tokens(s);
        std::string out;
        if (completed(s.finish_reason)) {
          if (st->tools_request) {
            for (const json& c :
                 tool_stream_chunks(st->held, st->builder.final_chunk(s), *st->tools_request, *st->tools_template))
              out += sse_event(c);
          } else {
            out += sse_event(st->builder.final_chunk(s));
          }
          if (st->include_usage) out += sse_event(st->builder.usage_chunk(s));
          out += kSseDone;
        } else {
          out += sse_event(error_body(failure_of(s, stopping)));
        }
        bool ok = sink.write(out.data(), out.size());
        sink.done();
        return ok;
      },
      // Called when httplib is done with the response; unfinished means the stream broke off.
      [this, st](bool) { st->abandon(metrics); });
}

}  // namespace baton::api
