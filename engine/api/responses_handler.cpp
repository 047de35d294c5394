// POST /v1/responses: the request becomes a chat completion (the model's chat template, tools
// described in its syntax, a grammar for text.format json or a forced call), run and answered
// in the Responses shapes, whole or as the Responses event stream. With tools the reply is
// parsed for calls at the end (a stream holds it back until then, as chat completions do).
#include "engine/api/constrained_generation.h"
#include "engine/api/extra_routes.h"
#include "engine/api/openai_response.h"
#include "engine/api/request_runner.h"
#include "engine/api/responses_request.h"
#include "engine/api/responses_response.h"
#include "engine/api/structured_request.h"

namespace baton::api {
namespace {

// The reply split into text and calls (no calls unless tools are in use).
ParsedToolOutput responses_reply(const std::string& text, const GenerationRequest& r, const ChatTemplate& tmpl) {
  if (!uses_tools(r)) return ParsedToolOutput{text, {}};
  return parse_tool_output(tool_syntax_for(tmpl.format()), text, r.tools);
}

class ResponsesStream : public StreamFormat {
 public:
  ResponsesStream(ResponsesBuilder builder, std::shared_ptr<const GenerationRequest> request, ChatTemplate tmpl)
      : builder_(std::move(builder)),
        request_(std::move(request)),
        template_(std::move(tmpl)),
        hold_(uses_tools(*request_)) {}
  std::string start() override {
    std::string out = builder_.opening();  // first: the events are numbered in order
    if (!hold_) out += builder_.open_message();
    return out;
  }
  std::string token(const serving::TokenEvent& event) override {
    if (!hold_) return builder_.delta(event.text);
    held_ += event.text;
    return {};
  }
  std::string finish(const serving::CompletionSummary& summary) override {
    if (!hold_) return builder_.closing(summary);
    ParsedToolOutput reply = responses_reply(held_, *request_, template_);
    std::string out;
    if (!reply.content.empty()) {
      out += builder_.open_message();
      out += builder_.delta(reply.content);
    }
    return out + builder_.closing(summary, reply.calls);
  }
  std::string fail(const ApiError& error) override { return builder_.failed(error); }

 private:
  ResponsesBuilder builder_;
  std::shared_ptr<const GenerationRequest> request_;
  ChatTemplate template_;
  bool hold_;
  std::string held_;
};

void handle_responses(HttpServer::Impl& server, const httplib::Request& req, httplib::Response& res) {
  ResponsesRequest r = parse_responses_request(req.body, random_request_seed());
  const ChatTemplate* tmpl = server.model.chat_template();
  if (!tmpl)
    throw ApiError(400, "invalid_request_error",
                   "this model's chat template is not supported: " + server.model.chat_template_error(), "input");
  serving::CompletionRequest engine = r.generation.engine;
  engine.prompt = server.model.tokenizer().encode(chat_prompt_text(r.generation, *tmpl), /*add_special=*/true,
                                                  /*parse_special=*/true);
  engine.constraint = build_constraint(r.generation, tmpl, server.model.tokenizer());
  auto handle = submit_request(server, std::move(engine), res, "input");
  ResponsesBuilder builder(std::move(r.echo), server.model.info().id);
  if (r.generation.stream) {
    auto request = std::make_shared<const GenerationRequest>(std::move(r.generation));
    stream_request(server, res, std::move(handle),
                   std::make_shared<ResponsesStream>(std::move(builder), request, *tmpl));
    return;
  }
  FinishedRequest done = collect_request(server, req, handle);
  std::string text;
  for (const auto& ev : done.events) text += ev.text;
  ParsedToolOutput reply = responses_reply(text, r.generation, *tmpl);
  send_json(res, builder.body(reply.content, done.summary, reply.calls));
}

}  // namespace

void install_responses_routes(HttpServer::Impl& server) {
  HttpServer::Impl* s = &server;
  server.server.Post("/v1/responses", guarded_handler([s](const httplib::Request& req, httplib::Response& res) {
                       handle_responses(*s, req, res);
                     }));
}

}  // namespace baton::api
