// libFuzzer target: any byte string as the body of the OpenAI-compatible endpoints (JSON ->
// request; engine/api/openai_request.cpp). The first byte picks the parser; the rest is the
// body. baton::api::ApiError (an HTTP 400 for the client) is the expected refusal; any other
// exception, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/api/api_error.h"
#include "engine/api/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace baton::api;
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    switch (data[0] % 4) {
      case 0: (void)parse_generation_request(body, Endpoint::kCompletions, 7); break;
      case 1: (void)parse_generation_request(body, Endpoint::kChat, 7); break;
      case 2: (void)parse_tokenize_request(body); break;
      default: (void)parse_detokenize_request(body); break;
    }
  } catch (const ApiError&) {
  }
  return 0;
}
