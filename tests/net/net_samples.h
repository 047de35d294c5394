// Test helpers for tests/net: one fully populated sample of every message type, hex helpers
// and a wall-clock bound for network tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/messages.h"
#include "net/payload.h"

namespace baton::net::test {

// A Forward of `n_tokens` x `n_embd` f32 rows whose body is filled with a known pattern.
inline std::pair<Forward, Payload> sample_forward(uint32_t n_tokens, uint32_t n_embd, uint64_t micro_batch_id) {
  Forward f;
  f.micro_batch_id = micro_batch_id;
  for (uint32_t i = 0; i < n_tokens; ++i) f.tokens.push_back({i % 3, 100 + i, i + 1 == n_tokens});
  uint64_t bytes = uint64_t{n_tokens} * n_embd * 4;
  f.hidden = TensorRef{DType::kF32, {n_tokens, n_embd}, 0, bytes};
  Payload body = Payload::allocate(bytes);
  auto span = body.mutable_bytes();
  for (size_t i = 0; i < span.size(); ++i) span[i] = static_cast<uint8_t>((i * 2654435761u + micro_batch_id) >> 7);
  return {f, body};
}

inline Nonce pattern_nonce(uint8_t start) {
  Nonce n;
  for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<uint8_t>(start + i);
  return n;
}

inline NodeStatus sample_status() {
  NodeStatus s;
  s.node_id = "w1";
  s.host = "10.0.0.7";
  s.port = 9001;
  s.memory_total = 32ull << 30;
  s.memory_free = 20ull << 30;
  s.threads = 8;
  s.isa = "avx2";
  s.load = 0.5f;
  s.layers = {{0, 15}};
  s.model_identity = "llama-7b-q4_0:abcd";
  s.speed = 120.25f;
  return s;
}

// One message of every type, in variant order, with a body where the type carries a tensor.
struct Sample {
  Message message;
  std::vector<uint8_t> body;
};

inline std::vector<Sample> all_samples() {
  std::vector<Sample> out;
  out.push_back({Hello{kProtocolVersion, 0x5, "coord", Role::kCoordinator, AuthMode::kHmacSha256}, {}});
  out.push_back({AuthChallenge{pattern_nonce(1)}, {}});
  out.push_back({AuthResponse{pattern_nonce(100), pattern_nonce(200)}, {}});
  Prepare prepare;
  prepare.load_id = 7;
  prepare.model_identity = "llama-7b-q4_0:abcd";
  prepare.model_path_hint = "/models/llama.gguf";
  prepare.layer_first = 16;
  prepare.layer_last = 31;
  prepare.next_hop = NextHop{"127.0.0.1", 9002, "w2"};
  prepare.activation_dtype = DType::kF16;
  prepare.options = {{"coordinator", "engine-coordinator pid 7 on h"}, {"threads", "8"}};
  prepare.n_ctx = 4096;
  prepare.max_sequences = 4;
  out.push_back({prepare, {}});
  out.push_back({Ready{7, 4ull << 30, 1234}, {}});
  out.push_back({Failed{7, "layer 17: tensor blk.17.attn_q.weight missing"}, {}});
  out.push_back({Commit{7}, {}});
  out.push_back({Rollback{7}, {}});
  Forward forward;
  forward.micro_batch_id = 42;
  forward.tokens = {{0, 5, false}, {1, 9, true}};
  forward.hidden = TensorRef{DType::kF32, {2, 4}, 0, 32};
  forward.row_hints = {6, 1};
  forward.sent_ns = 1234567890123;
  forward.timings = {{1.5, 1.25, 64, 0.125, 0.0625}};
  std::vector<uint8_t> fbody(32);
  for (size_t i = 0; i < fbody.size(); ++i) fbody[i] = static_cast<uint8_t>(i);
  out.push_back({forward, fbody});
  Hidden hidden;
  hidden.micro_batch_id = 42;
  hidden.tokens = {{1, 9, true}};
  hidden.hidden = TensorRef{DType::kBF16, {1, 4}, 8, 8};
  hidden.sent_ns = 1234567899999;
  hidden.timings = {{1.5, 1.25, 64, 0.125, 0.0625}, {2.5, 2.0, 16, 0.25, -1}};
  std::vector<uint8_t> hbody(16, 0xAB);
  out.push_back({hidden, hbody});
  out.push_back({ResetSequence{{3, 4, 5}, false}, {}});
  out.push_back({Register{sample_status()}, {}});
  out.push_back({Heartbeat{sample_status()}, {}});
  out.push_back({StatsRequest{}, {}});
  out.push_back({Stats{{{"tokens_per_s", 12.5}, {"queue_depth", 3}}}, {}});
  out.push_back({ErrorReport{ErrorCode::kBadRequest, "sequence 9 unknown", 42}, {}});
  out.push_back({Goodbye{"shutting down"}, {}});
  out.push_back({ClockPing{1234567890123}, {}});
  out.push_back({ClockPong{1234567890123, -987654321, -987000000}, {}});
  return out;
}

inline std::string to_hex(const std::vector<uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s.push_back(digits[b >> 4]);
    s.push_back(digits[b & 15]);
  }
  return s;
}

inline std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// Kills the test process if a network test runs longer than its bound (a hang is a failure,
// not a stuck CI job).
class WallClockBound {
 public:
  explicit WallClockBound(std::chrono::seconds limit, std::string name)
      : name_(std::move(name)), watcher_([this, limit] {
          std::unique_lock lock(mutex_);
          if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "test '%s' exceeded its wall-clock bound of %llds\n", name_.c_str(),
                         static_cast<long long>(limit.count()));
            std::_Exit(3);
          }
        }) {}
  ~WallClockBound() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_one();
    watcher_.join();
  }

 private:
  std::string name_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread watcher_;
};

}  // namespace baton::net::test
