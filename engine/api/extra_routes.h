// Routes kept out of http_server.cpp, each installed by its own file: the Responses API
// (responses_handler.cpp), llama-server's native endpoints (native_completion.cpp) and the
// model and server descriptions (model_routes.cpp). Called from install_routes().
#pragma once

#include "engine/api/http_server.h"

namespace baton::api {

void install_responses_routes(HttpServer::Impl& server);          // POST /v1/responses
void install_native_completion_routes(HttpServer::Impl& server);  // POST /completion
// GET /v1/models, /models, /v1/models/{id}, /props (POST: 501), /slots.
void install_model_routes(HttpServer::Impl& server);

}  // namespace baton::api
