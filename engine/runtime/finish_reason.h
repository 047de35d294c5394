// Why a generation ended, as a type: the scheduler, the generator and the HTTP layer decide on
// the value, never on its text. to_string() is llama.cpp's / OpenAI's spelling, which the API
// and the logs print.
#pragma once

#include <cstdint>
#include <string_view>

namespace baton {

enum class FinishReason : uint8_t {
  kNone,       // not ended yet
  kStop,       // end of generation, a stop string or the caller stopped it
  kLength,     // the token limit or the context is full
  kCancelled,  // the client went away or the server cancelled the request
  kError,      // a failure ended it (CompletionSummary::error says what, error_kind which kind)
};

constexpr std::string_view to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "";
}

// The generation ran to its end (stop or length) rather than being cancelled or failing.
constexpr bool completed(FinishReason reason) {
  return reason == FinishReason::kStop || reason == FinishReason::kLength;
}

// A reason equals its spelling ("stop", "length", ...): checks and tests read as the API says it.
constexpr bool operator==(FinishReason reason, std::string_view name) { return to_string(reason) == name; }

}  // namespace baton
