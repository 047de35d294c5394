#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/serving/stop_matcher.h"

using baton::serving::StopMatcher;

namespace {
// Feeds `pieces` one by one; returns the released text pieces (flushed at the end unless stopped).
std::vector<std::string> feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  for (const auto& p : pieces) out.push_back(m.push(p));
  if (!m.stopped()) out.push_back(m.flush());
  return out;
}
}  // namespace

TEST_CASE("StopMatcher without stop strings releases everything at once") {
  StopMatcher m({});
  CHECK(feed(m, {"Hello", " world"}) == std::vector<std::string>{"Hello", " world", ""});
  CHECK_FALSE(m.stopped());
}

TEST_CASE("StopMatcher stops inside one piece and drops the rest") {
  StopMatcher m({"END"});
  CHECK(m.push("abcENDxyz") == "abc");
  CHECK(m.stopped());
  CHECK(m.push("more") == "");
  CHECK(m.flush() == "");
}

TEST_CASE("StopMatcher holds back a stop string spanning two pieces") {
  StopMatcher m({"lazy dog"});
  CHECK(m.push("the la") == "the ");
  CHECK(m.held_bytes() == 2);
  CHECK(m.push("zy dog barks") == "");
  CHECK(m.stopped());
}

TEST_CASE("StopMatcher releases held text when the stop string does not follow") {
  StopMatcher m({"time."});
  CHECK(m.push("once upon a ti") == "once upon a ");
  CHECK(m.push("me") == "");
  CHECK(m.held_bytes() == 4);
  CHECK(m.push(", there") == "time, there");
  CHECK_FALSE(m.stopped());
  CHECK(m.flush() == "");
}

TEST_CASE("StopMatcher: held text at the end of the stream is flushed") {
  StopMatcher m({"\n\n"});
  CHECK(m.push("line\n") == "line");
  CHECK(m.flush() == "\n");
}

TEST_CASE("StopMatcher picks the earliest of several stop strings") {
  StopMatcher m({"world", "lo w", "xyz"});
  CHECK(m.push("hello world") == "hel");
  CHECK(m.stopped());
}

TEST_CASE("StopMatcher holds the longest partial match among several stop strings") {
  StopMatcher m({"abcd", "bcx"});
  CHECK(m.push("zabc") == "z");  // "abc" could become "abcd"
  CHECK(m.push("x") == "a");     // "bcx" completes: text before it is "a"
  CHECK(m.stopped());
}

TEST_CASE("StopMatcher: a stop string repeated inside the held part") {
  StopMatcher m({"aab"});
  CHECK(m.push("a") == "");
  CHECK(m.push("a") == "");
  CHECK(m.push("a") == "a");  // "aaa": only the last "aa" can still start "aab"
  CHECK(m.push("b") == "");   // "aab" right after the released "a"
  CHECK(m.stopped());
}

TEST_CASE("StopMatcher keeps multi-byte characters whole") {
  StopMatcher m({"é!"});
  CHECK(m.push("caf\xC3\xA9") == "caf");
  CHECK(m.push("?") == "\xC3\xA9?");
  StopMatcher m2({"\xC3\xA9!"});
  CHECK(m2.push("caf\xC3\xA9") == "caf");
  CHECK(m2.push("!") == "");
  CHECK(m2.stopped());
}

TEST_CASE("StopMatcher ignores empty stop strings") {
  StopMatcher m({"", "zz"});
  CHECK(m.push("abc") == "abc");
  CHECK_FALSE(m.stopped());
}
