// The generation endpoints over real HTTP on 127.0.0.1 against an in-process server with
// stories260K: greedy results equal the Generator's, streaming (SSE) equals non-streaming,
// logprobs shapes and values, stop strings, usage, concurrency, cancellation on disconnect
// (streaming and not), and overload.
#include <catch2/catch.hpp>
#include <httplib.h>

#include <future>
#include <thread>

#include "api_test_util.h"

namespace {

using nlohmann::json;
using namespace baton::test;

const std::string kPrompt = "Once upon a time, there was a little";

json post_json(int port, const std::string& path, const json& body, int want_status = 200) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(20);
  auto res = c.Post(path.c_str(), body.dump(), "application/json");
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == want_status);
  return json::parse(res->body);
}

std::string text_of(const std::vector<baton::GeneratedStep>& steps, const baton::tokenizer::Tokenizer& tok) {
  std::vector<int32_t> ids;
  for (const auto& s : steps) ids.push_back(s.token);
  return tok.decode(ids);
}

}  // namespace

TEST_CASE("a greedy completion equals the Generator's, as text and as token ids, with usage", "[api]") {
  LocalServer s;
  const auto& tok = s.model->tokenizer();
  auto prompt = tok.encode(kPrompt, true, true);
  auto want = reference_steps(prompt, 12);
  REQUIRE(want.size() == 12);

  json r = post_json(s.port(), "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 12}, {"temperature", 0}});
  CHECK(r["object"] == "text_completion");
  CHECK(r["model"] == "stories260K");
  CHECK(r["id"].get<std::string>().rfind("cmpl-", 0) == 0);
  CHECK(r["choices"][0]["text"] == text_of(want, tok));
  CHECK(r["choices"][0]["finish_reason"] == "length");
  CHECK(r["usage"]["prompt_tokens"] == prompt.size());
  CHECK(r["usage"]["completion_tokens"] == 12);
  CHECK(r["usage"]["total_tokens"] == prompt.size() + 12);

  // The same prompt as token ids, and as a list of one prompt.
  json ids = post_json(s.port(), "/v1/completions", {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}});
  CHECK(ids["choices"][0]["text"] == r["choices"][0]["text"]);
  json listed = post_json(s.port(), "/v1/completions", {{"prompt", {kPrompt}}, {"max_tokens", 12}, {"temperature", 0}});
  CHECK(listed["choices"][0]["text"] == r["choices"][0]["text"]);
}

TEST_CASE("logit_bias bans or favours tokens of a greedy completion, and unknown ids are a 400", "[api]") {
  LocalServer s;
  const auto& tok = s.model->tokenizer();
  auto prompt = tok.encode(kPrompt, true, true);
  auto want = reference_steps(prompt, 4);
  REQUIRE(want.size() == 4);
  const std::string first = std::to_string(want[0].token);
  // Banned (OpenAI's -100 and llama-server's false): the first token changes.
  for (const json& ban : {json(-100), json(false)}) {
    json r = post_json(s.port(), "/v1/completions",
                       {{"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}, {"logit_bias", {{first, ban}}}});
    CHECK(r["choices"][0]["text"] != text_of({want[0]}, tok));
  }
  // A token favoured by +100 is chosen.
  const int32_t other = want[0].token == 100 ? 101 : 100;
  json r = post_json(s.port(), "/v1/completions",
                     {{"prompt", prompt},
                      {"max_tokens", 1},
                      {"temperature", 0},
                      {"logit_bias", json::array({json::array({other, 100})})}});
  CHECK(r["choices"][0]["text"] == tok.decode(std::vector<int32_t>{other}));
  json bad = post_json(s.port(), "/v1/completions",
                       {{"prompt", prompt}, {"max_tokens", 1}, {"logit_bias", {{"99999999", 1}}}}, 400);
  CHECK(bad["error"]["param"] == "logit_bias");
  // Banning the whole vocabulary is the request's error (400), not a failed generation (502).
  json all = json::object();
  for (int32_t id = 0; id < tok.n_vocab(); ++id) all[std::to_string(id)] = false;
  bad = post_json(s.port(), "/v1/completions", {{"prompt", prompt}, {"max_tokens", 1}, {"logit_bias", all}}, 400);
  CHECK(bad["error"]["message"].get<std::string>().find("every token") != std::string::npos);
}

TEST_CASE("completion logprobs have OpenAI's legacy shape and the Generator's values", "[api]") {
  LocalServer s;
  const auto& tok = s.model->tokenizer();
  auto prompt = tok.encode(kPrompt, true, true);
  auto want = reference_steps(prompt, 6, 3);
  json r = post_json(s.port(), "/v1/completions",
                     {{"prompt", kPrompt}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 3}});
  const json& lp = r["choices"][0]["logprobs"];
  REQUIRE(lp["tokens"].size() == 6);
  REQUIRE(lp["token_logprobs"].size() == 6);
  REQUIRE(lp["top_logprobs"].size() == 6);
  REQUIRE(lp["text_offset"].size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CHECK(lp["tokens"][i] == tok.token_to_piece(want[i].token));
    CHECK(lp["token_logprobs"][i].get<float>() == want[i].logprob);  // bitwise through JSON
    CHECK(lp["top_logprobs"][i].size() == 3);
    CHECK(lp["top_logprobs"][i][tok.token_to_piece(want[i].top[0].id)].get<float>() == want[i].top[0].logprob);
  }
  CHECK(lp["text_offset"][0] == 0);
}

TEST_CASE("chat completions apply the model's template and report chat logprobs", "[api]") {
  LocalServer s;
  const auto& tok = s.model->tokenizer();
  std::vector<baton::ChatMessage> msgs = {{"system", "You tell stories."}, {"user", "Tell me about a cat."}};
  auto prompt = tok.encode(s.model->chat_template()->apply(msgs, true), true, true);
  auto want = reference_steps(prompt, 8, 2);

  json body = {{"messages",
                {{{"role", "system"}, {"content", "You tell stories."}},
                 {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Tell me about a cat."}}}}}}},
               {"max_completion_tokens", 8},
               {"temperature", 0},
               {"logprobs", true},
               {"top_logprobs", 2}};
  json r = post_json(s.port(), "/v1/chat/completions", body);
  CHECK(r["object"] == "chat.completion");
  CHECK(r["choices"][0]["message"]["role"] == "assistant");
  CHECK(r["choices"][0]["message"]["content"] == text_of(want, tok));
  CHECK(r["usage"]["prompt_tokens"] == prompt.size());
  const json& content = r["choices"][0]["logprobs"]["content"];
  REQUIRE(content.size() == 8);
  CHECK(content[0]["token"] == tok.token_to_piece(want[0].token));
  CHECK(content[0]["logprob"].get<float>() == want[0].logprob);
  CHECK(content[0]["top_logprobs"].size() == 2);
  CHECK(content[0]["bytes"].is_array());
}

TEST_CASE("streaming sends SSE chunks that add up to the non-streamed text, then usage and [DONE]", "[api]") {
  LocalServer s;
  json req = {{"prompt", kPrompt}, {"max_tokens", 10}, {"temperature", 0}};
  json whole = post_json(s.port(), "/v1/completions", req);

  req["stream"] = true;
  req["stream_options"] = {{"include_usage", true}};
  RawResponse r = raw_request(s.port(), "POST", "/v1/completions", req.dump());
  REQUIRE(r.status == 200);
  CHECK(r.headers.find("text/event-stream") != std::string::npos);
  auto events = sse_payloads(r.body);
  REQUIRE(events.size() >= 4);
  CHECK(events.back() == "[DONE]");
  std::string text;
  json final_chunk, usage_chunk;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json e = json::parse(events[i]);
    CHECK(e["object"] == "text_completion");
    if (e.contains("usage")) {
      usage_chunk = e;
      continue;
    }
    text += e["choices"][0]["text"].get<std::string>();
    if (!e["choices"][0]["finish_reason"].is_null()) final_chunk = e;
  }
  CHECK(text == whole["choices"][0]["text"]);
  CHECK(final_chunk["choices"][0]["finish_reason"] == "length");
  CHECK(usage_chunk["usage"]["completion_tokens"] == 10);
  CHECK(usage_chunk["choices"].empty());
}

TEST_CASE("chat streaming sends the role first, then content deltas, then finish_reason", "[api]") {
  LocalServer s;
  json req = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 6}, {"temperature", 0}};
  json whole = post_json(s.port(), "/v1/chat/completions", req);
  req["stream"] = true;
  RawResponse r = raw_request(s.port(), "POST", "/v1/chat/completions", req.dump());
  REQUIRE(r.status == 200);
  auto events = sse_payloads(r.body);
  REQUIRE(events.size() >= 3);
  CHECK(events.back() == "[DONE]");
  json first = json::parse(events[0]);
  CHECK(first["object"] == "chat.completion.chunk");
  CHECK(first["choices"][0]["delta"]["role"] == "assistant");
  std::string text;
  for (size_t i = 1; i + 2 < events.size(); ++i) {
    json e = json::parse(events[i]);
    CHECK_FALSE(e["choices"][0]["delta"].contains("role"));
    text += e["choices"][0]["delta"]["content"].get<std::string>();
  }
  CHECK(text == whole["choices"][0]["message"]["content"]);
  json last = json::parse(events[events.size() - 2]);
  CHECK(last["choices"][0]["finish_reason"] == "length");
  CHECK(last["choices"][0]["delta"].empty());
}

TEST_CASE("a stop string ends the completion before it, with finish_reason stop", "[api]") {
  LocalServer s;
  json whole = post_json(s.port(), "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 24}, {"temperature", 0}});
  std::string text = whole["choices"][0]["text"];
  // A word from the middle of the greedy text.
  auto at = text.find(' ', text.size() / 2);
  REQUIRE(at != std::string::npos);
  std::string stop = text.substr(at, 4);
  for (bool stream : {false, true}) {
    json req = {
        {"prompt", kPrompt}, {"max_tokens", 24}, {"temperature", 0}, {"stop", {"zzzz", stop}}, {"stream", stream}};
    std::string got;
    std::string reason;
    if (!stream) {
      json r = post_json(s.port(), "/v1/completions", req);
      got = r["choices"][0]["text"];
      reason = r["choices"][0]["finish_reason"];
    } else {
      RawResponse r = raw_request(s.port(), "POST", "/v1/completions", req.dump());
      for (const auto& e : sse_payloads(r.body)) {
        if (e == "[DONE]") continue;
        json j = json::parse(e);
        got += j["choices"][0]["text"].get<std::string>();
        if (!j["choices"][0]["finish_reason"].is_null()) reason = j["choices"][0]["finish_reason"];
      }
    }
    INFO("stream " << stream << " stop '" << stop << "'");
    CHECK(got == text.substr(0, text.find(stop)));
    CHECK(reason == "stop");
  }
}

TEST_CASE("four parallel requests each get their own correct greedy completion", "[api]") {
  LocalServer s;
  const auto& tok = s.model->tokenizer();
  const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Lily and Tom went to the",
                                            "One day, a big bird"};
  std::vector<std::string> want;
  for (const auto& p : prompts) want.push_back(text_of(reference_steps(tok.encode(p, true, true), 16), tok));
  std::vector<std::future<std::string>> got;
  for (size_t i = 0; i < prompts.size(); ++i)
    got.push_back(std::async(std::launch::async, [&, i] {
      httplib::Client c("127.0.0.1", s.port());
      c.set_read_timeout(20);
      json body = {{"prompt", prompts[i]}, {"max_tokens", 16}, {"temperature", 0}, {"stream", i % 2 == 1}};
      if (i % 2 == 1) return std::string(raw_request(s.port(), "POST", "/v1/completions", body.dump()).body);
      auto res = c.Post("/v1/completions", body.dump(), "application/json");
      return res ? res->body : std::string("no response");
    }));
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::string body = got[i].get();
    std::string text;
    if (i % 2 == 1) {
      for (const auto& e : sse_payloads(body))
        if (e != "[DONE]") text += json::parse(e)["choices"][0]["text"].get<std::string>();
    } else {
      text = json::parse(body)["choices"][0]["text"];
    }
    INFO("prompt " << i);
    CHECK(text == want[i]);
  }
}

TEST_CASE("a client that disconnects mid-stream cancels its request and frees the slot", "[api]") {
  LocalServer s;
  auto& sched = s.model->scheduler();
  {
    RawConnection c(s.port());
    // Up to the whole context: seconds of work if nobody cancels it.
    json req = {{"prompt", kPrompt}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}};
    c.send_request("POST", "/v1/completions", req.dump());
    REQUIRE(c.read_until("data: "));
    REQUIRE(sched.stats().active == 1);
  }  // closed
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (sched.stats().active != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto st = sched.stats();
  CHECK(st.active == 0);
  CHECK(st.queued == 0);
  CHECK(st.generated_tokens < 2000);  // it stopped early
  // The metrics count it, and the freed slot serves the next request.
  httplib::Client c("127.0.0.1", s.port());
  auto m = c.Get("/metrics");
  REQUIRE(m);
  CHECK(m->body.find("baton_streams_cancelled_total 1") != std::string::npos);
  json r = post_json(s.port(), "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 4}});
  CHECK(r["usage"]["completion_tokens"] == 4);
}

TEST_CASE("with every slot busy and the queue full a request gets 503", "[api]") {
  baton::api::ServeOptions so;
  so.scheduler.slots = 1;
  so.scheduler.queue_limit = 0;
  LocalServer s(so);
  RawConnection busy(s.port());
  json req = {{"prompt", kPrompt}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}};
  busy.send_request("POST", "/v1/completions", req.dump());
  REQUIRE(busy.read_until("data: "));
  json r = post_json(s.port(), "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 4}}, 503);
  CHECK(r["error"]["code"] == 503);
  CHECK(r["error"]["type"] == "unavailable_error");
  CHECK(s.model->scheduler().stats().rejected == 1);
}

TEST_CASE("stopping the server ends open streams and waiting requests promptly", "[api]") {
  LocalServer s;
  RawConnection c(s.port());
  c.send_request("POST", "/v1/completions",
                 json{{"prompt", kPrompt}, {"max_tokens", 2000}, {"ignore_eos", true}, {"stream", true}}.dump());
  REQUIRE(c.read_until("data: "));
  auto t0 = std::chrono::steady_clock::now();
  s.server->stop();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
  c.read_all();  // the connection is closed, not left hanging
  CHECK(c.received().find("[DONE]") == std::string::npos);
}

TEST_CASE("a non-streaming client that disconnects cancels its request and frees the slot", "[api]") {
  baton::api::ServeOptions so;
  so.scheduler.slots = 1;
  so.n_ctx = 8192;  // room for seconds of generation if nobody cancels it
  LocalServer s(so);
  auto& sched = s.model->scheduler();
  {
    RawConnection c(s.port());
    json req = {{"prompt", kPrompt}, {"max_tokens", 8000}, {"ignore_eos", true}, {"temperature", 0}};
    c.send_request("POST", "/v1/completions", req.dump());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (sched.stats().generated_tokens == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(sched.stats().active == 1);  // generating, and far from done
    REQUIRE(sched.stats().generated_tokens > 0);
  }  // closed before any answer
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (sched.stats().active != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto st = sched.stats();
  CHECK(st.active == 0);
  CHECK(st.generated_tokens < 8000);  // it stopped early

  // /health and /metrics show the slot free and count the disconnect; the slot serves the next request.
  httplib::Client c("127.0.0.1", s.port());
  auto h = c.Get("/health");
  REQUIRE(h);
  CHECK(json::parse(h->body)["slots_active"] == 0);
  auto m = c.Get("/metrics");
  REQUIRE(m);
  CHECK(m->body.find("baton_requests_disconnected_total 1") != std::string::npos);
  CHECK(m->body.find("baton_active_slots 0") != std::string::npos);
  json r = post_json(s.port(), "/v1/completions", {{"prompt", kPrompt}, {"max_tokens", 4}});
  CHECK(r["usage"]["completion_tokens"] == 4);
}

TEST_CASE("a non-streaming request whose client stays connected is not cancelled by the probe", "[api]") {
  LocalServer s;
  // Long enough to span several probe intervals (50 ms).
  json r = post_json(s.port(), "/v1/completions",
                     {{"prompt", kPrompt}, {"max_tokens", 200}, {"ignore_eos", true}, {"temperature", 0}});
  CHECK(r["usage"]["completion_tokens"] == 200);
  httplib::Client c("127.0.0.1", s.port());
  auto m = c.Get("/metrics");
  REQUIRE(m);
  CHECK(m->body.find("baton_requests_disconnected_total 0") != std::string::npos);
}
