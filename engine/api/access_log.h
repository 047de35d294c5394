// One access line per HTTP request (docs/OPERATIONS.md "Access log"):
//   access id=req-1f3a9c0b2d4e method=POST path=/v1/completions status=200 prompt_tokens=5
//          generated_tokens=8 ms=41.2 client=127.0.0.1
// The record lives in the HTTP thread answering the request (httplib runs the routing, the
// handler, a streamed body's provider and the logger in one thread): the pre-routing handler
// begins it, the generation code notes tokens and failures, the logger writes and clears it.
// The id is the client's X-Request-Id when it sends a usable one, else a fresh one; it is sent
// back in X-Request-Id and named in the server's lines about that request.
// Internal to engine/api (includes httplib through http_server_impl.h).
#pragma once

#include <string>

#include "engine/api/http_server_impl.h"

namespace baton::api {

void begin_access_record(const httplib::Request& req, httplib::Response& res);
// The request this thread answers ("-" outside a request).
std::string current_request_id();
void note_access_tokens(const serving::CompletionSummary& summary);
// A request that failed after its status was sent (a stream's error event): shown as
// error_status=N, since the line's status is the HTTP one (200).
void note_access_failure(int status);
// Writes the line (info; debug for the polled routes /health, /metrics, /v1/cluster,
// /v1/dashboard and the web UI's files when they succeed) and clears the record.
void log_access(const httplib::Request& req, const httplib::Response& res);

}  // namespace baton::api
