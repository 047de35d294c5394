// The committed seed corpora of the libFuzzer targets (tests/fuzz/corpus/<target>/) replayed
// through the very same harnesses in the normal suite (built with g++, no libFuzzer): each
// harness aborts on a property violation and lets an unexpected exception escape, so a
// corpus entry that once crashed a parser fails this test. docs/FUZZING.md has the runs.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

// Each harness defines LLVMFuzzerTestOneInput: renamed per target so they share one binary.
#define LLVMFuzzerTestOneInput fuzz_wire_one
#include "fuzz/fuzz_wire.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_openai_request_one
#include "fuzz/fuzz_openai_request.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_cluster_config_one
#include "fuzz/fuzz_cluster_config.cpp"
#undef LLVMFuzzerTestOneInput
#define BATON_FUZZ_DEFAULT_VOCAB BATON_SHARED_DIR_DEFAULT "/models/vocab/ggml-vocab-llama-spm.gguf"
#define LLVMFuzzerTestOneInput fuzz_tokenizer_one
#include "fuzz/fuzz_tokenizer.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_chat_template_one
#include "fuzz/fuzz_chat_template.cpp"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_grammar_one
#include "fuzz/fuzz_grammar.cpp"
#undef LLVMFuzzerTestOneInput
#define BATON_FUZZ_DEFAULT_MODEL BATON_SHARED_DIR_DEFAULT "/models/stories260K.gguf"
#define LLVMFuzzerTestOneInput fuzz_http_one
#include "fuzz/fuzz_http.cpp"
#undef LLVMFuzzerTestOneInput

namespace {

namespace fs = std::filesystem;

// Runs every file of tests/fuzz/corpus/<target> through `harness`; returns how many.
size_t replay(const std::string& target, int (*harness)(const uint8_t*, size_t)) {
  // BATON_SOURCE_DIR from the build (tests/CMakeLists.txt): __FILE__ is relative under ccache's CCACHE_BASEDIR.
  const fs::path dir = fs::path(BATON_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / target;
  if (!fs::is_directory(dir)) FAIL("fuzz corpus directory missing: " << dir);
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    INFO(entry.path());
    std::ifstream in(entry.path(), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(harness(bytes.data(), bytes.size()) == 0);
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("fuzz corpus: wire frames decode, round-trip or are refused") { CHECK(replay("wire", fuzz_wire_one) >= 10); }
TEST_CASE("fuzz corpus: OpenAI request bodies parse or are refused with an ApiError") {
  CHECK(replay("openai_request", fuzz_openai_request_one) >= 5);
}
TEST_CASE("fuzz corpus: cluster YAML parses or is refused with a baton::Error") {
  CHECK(replay("cluster_config", fuzz_cluster_config_one) >= 4);
}
TEST_CASE("fuzz corpus: the tokenizer encodes every input to ids in range") {
  CHECK(replay("tokenizer", fuzz_tokenizer_one) >= 10);
}
TEST_CASE("fuzz corpus: chat templates detect and render or refuse a role") {
  CHECK(replay("chat_template", fuzz_chat_template_one) >= 4);
}
TEST_CASE("fuzz corpus: JSON schemas compile to GBNF that parses, GBNF parses or is refused") {
  CHECK(replay("grammar", fuzz_grammar_one) >= 10);
}
TEST_CASE("fuzz corpus: the grammar that took the matcher 37 s runs in well under a second") {
  // fuzz_grammar's slow unit of issue 24 (docs/FUZZING.md): about 100 empty alternatives in a
  // group repeated {4,4}, each path to the same parse state followed again.
  const fs::path seed =
      fs::path(BATON_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "grammar" / "slow-empty-alternatives-37s";
  std::ifstream in(seed, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() == 214);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(fuzz_grammar_one(bytes.data(), bytes.size()) == 0);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 2.0);
}
TEST_CASE("fuzz corpus: the HTTP harness's server generates at most 2 tokens a request (n_predict)") {
  // SchedulerOptions::n_predict cuts a larger or unlimited max_tokens, as llama-server's -n does.
  for (const std::string body : {R"({"prompt": "Once upon a time", "max_tokens": 16, "ignore_eos": true})",
                                 R"({"prompt": "Once upon a time", "max_tokens": -1, "ignore_eos": true})",
                                 R"({"prompt": "Once upon a time", "max_tokens": 1})"}) {
    const std::string out = fuzz_http_servers().open->serve_bytes(
        "POST /v1/completions HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
    INFO(out);
    REQUIRE(out.starts_with("HTTP/1.1 200"));
    const bool one = body.find("\"max_tokens\": 1}") != std::string::npos;
    CHECK(out.find(one ? "\"completion_tokens\":1" : "\"completion_tokens\":2") != std::string::npos);
  }
}
TEST_CASE("fuzz corpus: HTTP connections get valid responses from the real routes") {
  CHECK(replay("http", fuzz_http_one) >= 20);
}
TEST_CASE("fuzz corpus: the HTTP harness serves a connection's pipelined requests in order") {
  // serve_bytes must behave as a kept-alive connection: every complete request answered, in
  // order, and nothing after one that closes the connection.
  const std::string three =
      "GET /health HTTP/1.1\r\nHost: h\r\n\r\n"
      "POST /tokenize HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: "
      "15\r\n\r\n{\"content\":\"a\"}"
      "GET /nope HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string out = fuzz_http_servers().open->serve_bytes(three);
  const size_t first = out.find("HTTP/1.1 200");
  const size_t second = out.find("HTTP/1.1 200", first + 1);
  const size_t third = out.find("HTTP/1.1 404", second + 1);
  CHECK(first == 0);
  CHECK(second != std::string::npos);
  CHECK(out.find("\"tokens\"", second) != std::string::npos);
  CHECK(third != std::string::npos);
  const std::string closing =
      "GET /health HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /health HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string once = fuzz_http_servers().open->serve_bytes(closing);
  CHECK(once.find("HTTP/1.1 200") == 0);
  CHECK(once.find("HTTP/1.1", 1) == std::string::npos);
  // The key-checking server refuses a request without the key.
  CHECK(
      fuzz_http_servers().keyed->serve_bytes("GET /v1/models HTTP/1.1\r\nHost: h\r\n\r\n").starts_with("HTTP/1.1 401"));
}
