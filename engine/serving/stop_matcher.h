// Stop strings over streamed text: text arrives in pieces (one per generated token) and the
// completion must end just before the first occurrence of any stop string. Text that could
// still become the start of a stop string is held back until the following pieces decide.
// Not thread-safe; one per stream.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace baton::serving {

class StopMatcher {
 public:
  // Empty stop strings are ignored. Stop strings are expected to be valid UTF-8, so that the
  // held-back suffix starts on a character boundary.
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends `text` and returns what can be released now. When a stop string is found, the text
  // before its first occurrence is returned, stopped() becomes true and everything after it is
  // dropped; later calls return "".
  std::string push(std::string_view text);
  // End of the stream without a stop: returns the held-back text and clears it.
  std::string flush();

  bool stopped() const { return stopped_; }
  size_t held_bytes() const { return pending_.size(); }

 private:
  // Length of the longest suffix of pending_ that is a proper prefix of some stop string.
  size_t partial_match_length() const;

  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace baton::serving
