// libFuzzer target: the HTTP front door's request handling. The bytes are one connection's input
// to an in-process HttpServer with every real route (completions, chat, responses, tokenize,
// models, health, metrics, the web UI, CORS, the API key check) over a real model
// ($BATON_FUZZ_MODEL, default stories260K of the shared fixtures, loaded once per process),
// served through cpp-httplib's process_request as a kept-alive connection's requests are
// (HttpServer::serve_bytes: a memory stream in place of the socket, the way cpp-httplib fuzzes
// its own server). The first byte picks the server: even, no API key and CORS for any origin;
// odd, API key "fuzz-key" and one allowed origin. The property: no crash, sanitizer report or
// escaping exception; whatever the server writes starts with a valid HTTP/1.1 status line and
// a complete header block.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "engine/api/http_server.h"
#include "engine/api/served_model.h"

#ifndef BATON_FUZZ_DEFAULT_MODEL
#define BATON_FUZZ_DEFAULT_MODEL "/work/shared/models/stories260K.gguf"
#endif

namespace {

struct FuzzHttpServers {
  std::unique_ptr<baton::api::ServedModel> model;
  std::unique_ptr<baton::api::HttpServer> open;   // no key, CORS "*"
  std::unique_ptr<baton::api::HttpServer> keyed;  // API key, one origin
};

FuzzHttpServers& fuzz_http_servers() {
  static FuzzHttpServers s = [] {
    spdlog::set_level(spdlog::level::off);  // an access line per request would dominate the run
    const char* path = std::getenv("BATON_FUZZ_MODEL");
    baton::api::ServeOptions so;
    so.threads = 1;
    so.n_ctx = 64;
    // At most 2 tokens a request (the first from the prompt's pass, one decode step): the routes,
    // parsers, streaming and the scheduler's admission all run as for a longer answer, and the
    // executions go to them instead of to generating (docs/FUZZING.md).
    so.scheduler.n_predict = 2;
    FuzzHttpServers f;
    f.model = baton::api::ServedModel::open_local(path ? path : BATON_FUZZ_DEFAULT_MODEL, so);
    baton::api::ServerOptions open;
    open.cors_origins = {"*"};
    f.open = std::make_unique<baton::api::HttpServer>(*f.model, open);
    baton::api::ServerOptions keyed;
    keyed.api_key = "fuzz-key";
    keyed.cors_origins = {"http://app.example"};
    f.keyed = std::make_unique<baton::api::HttpServer>(*f.model, keyed);
    return f;
  }();
  return s;
}

bool fuzz_http_is_digit(char c) { return c >= '0' && c <= '9'; }

// "HTTP/1.1 NNN Reason\r\n...\r\n\r\n" with 100 <= NNN <= 599.
bool fuzz_http_valid_response_start(std::string_view out) {
  if (!out.starts_with("HTTP/1.1 ") || out.size() < 13) return false;
  if (!fuzz_http_is_digit(out[9]) || !fuzz_http_is_digit(out[10]) || !fuzz_http_is_digit(out[11]) || out[12] != ' ')
    return false;
  const int status = (out[9] - '0') * 100 + (out[10] - '0') * 10 + (out[11] - '0');
  if (status < 100 || status > 599) return false;
  const size_t line_end = out.find("\r\n");
  return line_end != std::string_view::npos && out.find("\r\n\r\n") != std::string_view::npos;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto& servers = fuzz_http_servers();
  auto& server = (data[0] & 1) ? *servers.keyed : *servers.open;
  const std::string out = server.serve_bytes(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  if (std::getenv("BATON_FUZZ_HTTP_PRINT"))  // to see what a corpus entry gets back
    std::fprintf(stderr, "%.*s\n----\n", static_cast<int>(std::min<size_t>(out.size(), 2048)), out.data());
  if (!out.empty() && !fuzz_http_valid_response_start(out)) {
    std::fprintf(stderr, "the server wrote no valid status line and header block:\n%.*s\n",
                 static_cast<int>(std::min<size_t>(out.size(), 512)), out.data());
    std::abort();
  }
  return 0;
}
