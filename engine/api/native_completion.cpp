// POST /completion: llama-server's native completion, whole or streamed.
#include "engine/api/native_completion.h"

#include <algorithm>
#include <cmath>

#include "engine/api/extra_routes.h"
#include "engine/api/openai_response.h"
#include "engine/api/request_runner.h"
#include "engine/tokenizer/utf8.h"

namespace baton::api {

using nlohmann::json;

namespace {

json piece_bytes_json(const std::string& s) {
  json a = json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

json timings_of(const serving::CompletionSummary& s) {
  const double prompt_ms = std::max(0.0, (s.time_to_first_token - s.queue_seconds) * 1e3);
  const double predicted_ms = s.generation_seconds * 1e3;
  const auto per = [](double ms, size_t n) { return n > 0 ? ms / static_cast<double>(n) : 0.0; };
  const auto rate = [](double ms, size_t n) { return ms > 0 ? 1e3 * static_cast<double>(n) / ms : 0.0; };
  // The first generated token comes with the prompt pass; the others are timed between tokens.
  const size_t decoded = s.completion_tokens > 0 ? s.completion_tokens - 1 : 0;
  json t{{"cache_n", s.cached_tokens},
         {"prompt_n", s.prompt_tokens},
         {"prompt_ms", prompt_ms},
         {"prompt_per_token_ms", per(prompt_ms, s.prompt_tokens)},
         {"prompt_per_second", rate(prompt_ms, s.prompt_tokens)},
         {"predicted_n", s.completion_tokens},
         {"predicted_ms", predicted_ms},
         {"predicted_per_token_ms", per(predicted_ms, decoded)},
         {"predicted_per_second", rate(predicted_ms, decoded)}};
  // llama-server reports these when it speculates.
  if (s.speculation.drafted > 0) {
    t["draft_n"] = s.speculation.drafted;
    t["draft_n_accepted"] = s.speculation.accepted;
  }
  return t;
}

// Everything a /completion answer carries besides its text and tokens.
struct NativeContext {
  NativeCompletionRequest request;
  std::vector<int32_t> prompt;
  HttpServer::Impl* server = nullptr;

  json final_fields(const std::string& content, const std::vector<int32_t>& tokens,
                    const serving::CompletionSummary& s) const {
    const auto& tok = server->model.tokenizer();
    const auto& e = request.generation.engine;
    const int64_t n_ctx = server->model.scheduler().n_ctx();
    const NativeEnd end = native_end(s.finish_reason, tokens, content, e.stop, tok, e.ignore_eos,
                                     static_cast<int64_t>(prompt.size()), n_ctx);
    return json{{"index", 0},
                {"id_slot", -1},
                {"stop", true},
                {"model", server->model.info().id},
                {"tokens_predicted", s.completion_tokens},
                {"tokens_evaluated", s.prompt_tokens},
                {"generation_settings", native_generation_settings(e, request.generation.stream, request.n_probs, n_ctx,
                                                                   server->model.info().id)},
                {"prompt", tok.decode(prompt, /*special=*/true)},
                {"has_new_line", content.find('\n') != std::string::npos},
                {"truncated", end.truncated},
                {"stop_type", end.stop_type},
                {"stopping_word", end.stopping_word},
                {"tokens_cached", 0},
                {"timings", timings_of(s)}};
  }
};

class NativeStream : public StreamFormat {
 public:
  explicit NativeStream(NativeContext ctx) : ctx_(std::move(ctx)) {}
  std::string token(const serving::TokenEvent& ev) override {
    content_ += ev.text;
    tokens_.push_back(ev.token);
    json j = {{"index", 0},
              {"content", ev.text},
              {"tokens", json::array({ev.token})},
              {"stop", false},
              {"id_slot", -1},
              {"tokens_predicted", tokens_.size()},
              {"tokens_evaluated", ctx_.prompt.size()}};
    if (ctx_.request.n_probs > 0)
      j["completion_probabilities"] = json::array({native_probabilities(ev, ctx_.server->model.tokenizer())});
    return sse_event(j);
  }
  std::string finish(const serving::CompletionSummary& s) override {
    json j = ctx_.final_fields(content_, tokens_, s);
    j["content"] = "";
    j["tokens"] = json::array();
    return sse_event(j);
  }
  std::string fail(const ApiError& error) override { return sse_event(error_body(error)); }

 private:
  NativeContext ctx_;
  std::string content_;
  std::vector<int32_t> tokens_;
};

void handle_completion(HttpServer::Impl& server, const httplib::Request& req, httplib::Response& res) {
  NativeContext ctx;
  ctx.server = &server;
  ctx.request = parse_native_completion(req.body, random_request_seed());
  const auto& tok = server.model.tokenizer();
  const PromptInput& p = ctx.request.generation.prompt;
  ctx.prompt = p.is_text ? tok.encode(p.text, /*add_special=*/true, /*parse_special=*/true) : p.tokens;
  serving::CompletionRequest engine = ctx.request.generation.engine;
  engine.prompt = ctx.prompt;
  auto handle = submit_request(server, std::move(engine), res, "prompt");
  if (ctx.request.generation.stream) {
    stream_request(server, res, std::move(handle), std::make_shared<NativeStream>(std::move(ctx)));
    return;
  }
  FinishedRequest done = collect_request(server, req, handle);
  std::string content;
  std::vector<int32_t> tokens;
  json probs = json::array();
  for (const auto& ev : done.events) {
    content += ev.text;
    tokens.push_back(ev.token);
    if (ctx.request.n_probs > 0) probs.push_back(native_probabilities(ev, tok));
  }
  json body = ctx.final_fields(content, tokens, done.summary);
  body["content"] = content;
  body["tokens"] = ctx.request.return_tokens ? json(tokens) : json::array();
  if (ctx.request.n_probs > 0) body["completion_probabilities"] = probs;
  send_json(res, body);
}

}  // namespace

json native_generation_settings(const serving::CompletionRequest& r, bool stream, size_t n_probs, int64_t n_ctx,
                                const std::string& model) {
  const auto& s = r.sampling;
  json bias = json::array();
  for (const auto& [id, b] : s.logit_bias) bias.push_back(json::array({id, std::isinf(b) ? json(false) : json(b)}));
  return json{{"n_ctx", n_ctx},
              {"model", model},
              {"n_predict", r.max_tokens},
              {"max_tokens", r.max_tokens},
              {"seed", s.seed},
              {"temperature", s.temperature},
              {"dynatemp_range", 0.0},
              {"dynatemp_exponent", 1.0},
              {"top_k", s.top_k},
              {"top_p", s.top_p},
              {"min_p", s.min_p},
              {"top_n_sigma", -1.0},
              {"xtc_probability", 0.0},
              {"xtc_threshold", 0.1},
              {"typical_p", 1.0},
              {"repeat_last_n", s.repeat_last_n},
              {"repeat_penalty", s.repeat_penalty},
              {"presence_penalty", s.presence_penalty},
              {"frequency_penalty", s.frequency_penalty},
              {"dry_multiplier", 0.0},
              {"mirostat", 0},
              {"stop", r.stop},
              {"n_keep", 0},
              {"n_discard", 0},
              {"ignore_eos", r.ignore_eos},
              {"stream", stream},
              {"logit_bias", bias},
              {"n_probs", n_probs},
              {"min_keep", 0},
              {"grammar", ""},
              {"samplers", json::array({"penalties", "top_k", "top_p", "min_p", "temperature"})},
              {"post_sampling_probs", false},
              {"timings_per_token", false},
              {"lora", json::array()}};
}

json native_probabilities(const serving::TokenEvent& ev, const tokenizer::Tokenizer& tok) {
  auto entry = [&](int32_t id, float logprob) {
    const std::string piece = tok.token_to_piece(id, true);
    return json{{"id", id},
                {"token", tokenizer::utf8_sanitize(piece)},
                {"logprob", logprob},
                {"bytes", piece_bytes_json(piece)}};
  };
  json top = json::array();
  for (const auto& t : ev.top) top.push_back(entry(t.id, t.logprob));
  json j = entry(ev.token, ev.logprob);
  j["top_logprobs"] = top;
  return j;
}

void install_native_completion_routes(HttpServer::Impl& server) {
  HttpServer::Impl* s = &server;
  server.server.Post("/completion", guarded_handler([s](const httplib::Request& q, httplib::Response& r) {
                       handle_completion(*s, q, r);
                     }));
}

}  // namespace baton::api
