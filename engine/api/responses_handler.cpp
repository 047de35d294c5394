// POST /v1/responses: the request becomes a chat completion (the model's chat template), run
// and answered in the Responses shapes, whole or as the Responses event stream.
#include "engine/api/extra_routes.h"
#include "engine/api/openai_response.h"
#include "engine/api/request_runner.h"
#include "engine/api/responses_request.h"
#include "engine/api/responses_response.h"

namespace baton::api {
namespace {

class ResponsesStream : public StreamFormat {
 public:
  explicit ResponsesStream(ResponsesBuilder builder) : builder_(std::move(builder)) {}
  std::string start() override { return builder_.opening(); }
  std::string token(const serving::TokenEvent& event) override { return builder_.delta(event.text); }
  std::string finish(const serving::CompletionSummary& summary) override { return builder_.closing(summary); }
  std::string fail(const ApiError& error) override { return builder_.failed(error); }

 private:
  ResponsesBuilder builder_;
};

void handle_responses(HttpServer::Impl& server, const httplib::Request& req, httplib::Response& res) {
  ResponsesRequest r = parse_responses_request(req.body, random_request_seed());
  const ChatTemplate* tmpl = server.model.chat_template();
  if (!tmpl)
    throw ApiError(400, "invalid_request_error",
                   "this model's chat template is not supported: " + server.model.chat_template_error(), "input");
  serving::CompletionRequest engine = r.generation.engine;
  const std::string prompt = tmpl->apply(r.generation.messages, /*add_generation_prompt=*/true);
  engine.prompt = server.model.tokenizer().encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  auto handle = submit_request(server, std::move(engine), res, "input");
  ResponsesBuilder builder(std::move(r.echo), server.model.info().id);
  if (r.generation.stream) {
    stream_request(server, res, std::move(handle), std::make_shared<ResponsesStream>(std::move(builder)));
    return;
  }
  FinishedRequest done = collect_request(server, req, handle);
  std::string text;
  for (const auto& ev : done.events) text += ev.text;
  send_json(res, builder.body(text, done.summary));
}

}  // namespace

void install_responses_routes(HttpServer::Impl& server) {
  HttpServer::Impl* s = &server;
  server.server.Post("/v1/responses", guarded_handler([s](const httplib::Request& req, httplib::Response& res) {
                       handle_responses(*s, req, res);
                     }));
}

}  // namespace baton::api
