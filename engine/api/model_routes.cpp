// What the server says about its model and slots: OpenAI's GET /v1/models and
// /v1/models/{id} (the SDKs' models.retrieve; an unknown id is a 404), and llama-server's
// GET /models (the same list), GET /props (POST /props: 501, as llama-server without --props)
// and GET /slots (501 with --no-slots; ?fail_on_no_slot=1: 503 while every slot is busy).
// Baton's scheduler does not pin requests to numbered slots: /slots shows `slots` entries, the
// first `slots_active` of them processing, each with the server's default parameters.
#include <fmt/format.h>

#include "engine/api/extra_routes.h"
#include "engine/api/native_completion.h"
#include "engine/api/request_runner.h"

namespace baton::api {

using nlohmann::json;

namespace {

json model_entry(const ModelInfo& m) {
  return json{{"id", m.id},
              {"object", "model"},
              {"created", m.created},
              {"owned_by", m.owned_by},
              {"size", m.size_bytes},
              {"quantization", m.quantization},
              {"n_ctx", m.n_ctx},
              {"n_ctx_train", m.n_ctx_train},
              {"n_params", m.n_params},
              {"n_layer", m.n_layer},
              {"n_vocab", m.n_vocab},
              {"architecture", m.arch}};
}

// One slot as llama-server shows it; `busy` when it holds a running request.
json slot_json(HttpServer::Impl& s, int id, bool busy) {
  serving::CompletionRequest defaults;
  defaults.max_tokens = -1;
  const int64_t n_ctx = s.model.scheduler().n_ctx();
  return json{
      {"id", id},
      {"id_task", -1},
      {"n_ctx", n_ctx},
      {"speculative", s.model.scheduler().options().speculation.enabled()},  // --spec (ngram by default)
      {"is_processing", busy},
      {"params", native_generation_settings(defaults, false, 0, n_ctx, s.model.info().id)},
      {"prompt", ""},
      {"next_token",
       {{"has_next_token", busy}, {"has_new_line", false}, {"n_remain", -1}, {"n_decoded", 0}, {"stopping_word", ""}}}};
}

void handle_props(HttpServer::Impl& s, httplib::Response& res) {
  const ChatTemplate* tmpl = s.model.chat_template();
  send_json(res, json{{"default_generation_settings", slot_json(s, 0, false)},
                      {"total_slots", s.model.scheduler().options().slots},
                      {"model_alias", s.model.info().id},
                      {"model_path", s.model.info().path},
                      {"chat_template", tmpl ? std::string(tmpl->name()) : std::string()},
                      {"chat_template_caps", json::object()},
                      {"modalities", {{"vision", false}, {"audio", false}}},
                      {"build_info", "baton"},
                      {"is_sleeping", false}});
}

void handle_slots(HttpServer::Impl& s, const httplib::Request& req, httplib::Response& res) {
  if (!s.options.slots_endpoint)
    throw ApiError(501, "not_supported_error",
                   "This server does not support slots endpoint (started with --no-slots).");
  const int slots = s.model.scheduler().options().slots;
  const int active = s.model.scheduler().stats().active;
  if (req.get_param_value("fail_on_no_slot") == "1" && active >= slots)
    throw ApiError(503, "unavailable_error", "no slot available");
  json out = json::array();
  for (int i = 0; i < slots; ++i) out.push_back(slot_json(s, i, i < active));
  send_json(res, out);
}

}  // namespace

void install_model_routes(HttpServer::Impl& server) {
  using httplib::Request;
  using httplib::Response;
  HttpServer::Impl* s = &server;
  const auto list = guarded_handler([s](const Request&, Response& res) {
    send_json(res, json{{"object", "list"}, {"data", json::array({model_entry(s->model.info())})}});
  });
  server.server.Get("/v1/models", list);
  server.server.Get("/models", list);
  server.server.Get(
      R"(/v1/models/(.+))", guarded_handler([s](const Request& req, Response& res) {
        const std::string id = req.matches[1];
        if (id != s->model.info().id)
          throw ApiError(404, "invalid_request_error",
                         fmt::format("The model '{}' does not exist (this server serves '{}')", id, s->model.info().id),
                         "model");
        send_json(res, model_entry(s->model.info()));
      }));
  server.server.Get("/props", guarded_handler([s](const Request&, Response& res) { handle_props(*s, res); }));
  server.server.Post("/props", guarded_handler([](const Request&, Response&) {
                       throw ApiError(501, "not_supported_error",
                                      "This server does not support changing global properties.");
                     }));
  server.server.Get("/slots", guarded_handler([s](const Request& req, Response& res) { handle_slots(*s, req, res); }));
}

}  // namespace baton::api
