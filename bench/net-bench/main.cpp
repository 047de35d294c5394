// net-bench: loopback round-trip latency and one-way throughput of the Baton wire layer
// (authenticated Node on 127.0.0.1), one row per case. Throughput is also shown against this
// machine's memcpy bandwidth, the ceiling for a loopback copy.
// Usage: net-bench [--rounds 2000] [--stream-mib 1024] [--seal [--n-embd 2048]]
// --seal: only the cost of the sealed wire vs --insecure (seal_cost.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

#include "engine/base/aligned_buffer.h"
#include "net/inbox.h"
#include "net/node.h"
#include "seal_cost.h"

namespace {

using namespace baton::net;
using Clock = std::chrono::steady_clock;

NodeOptions options(const char* id) {
  NodeOptions o;
  o.node_id = id;
  o.auth = AuthConfig::with_secret("net-bench secret");
  o.limits.max_body_bytes = 256u << 20;
  return o;
}

std::pair<Forward, Payload> forward(uint32_t n_tokens, uint32_t n_embd) {
  Forward f;
  for (uint32_t i = 0; i < n_tokens; ++i) f.tokens.push_back({0, i, i + 1 == n_tokens});
  uint64_t bytes = uint64_t{n_tokens} * n_embd * 4;
  f.hidden = TensorRef{DType::kF32, {n_tokens, n_embd}, 0, bytes};
  Payload body = Payload::allocate(bytes);
  std::memset(body.mutable_bytes().data(), 1, bytes);
  return {f, body};
}

double memcpy_gbs() {
  const size_t n = size_t{256} << 20;
  baton::AlignedBuffer a(n), b(n);
  std::memset(a.data(), 1, n);
  std::memset(b.data(), 2, n);
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), n);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, n / s / 1e9);
  }
  return best;
}

void print_header() {
  fmt::print("{:<10} {:<26} {:>8} {:>11} {:>11} {:>11} {:>9} {:>7}\n", "case", "shape", "frames", "median_us", "p99_us",
             "total_ms", "GB/s", "%memcpy");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    CLI::App app{"Baton net benchmark: loopback latency and throughput"};
    int rounds = 2000;
    int stream_mib = 1024;
    app.add_option("--rounds", rounds, "round trips per latency case");
    app.add_option("--stream-mib", stream_mib, "MiB streamed per throughput case");
    bool seal = false;
    int n_embd = 2048;
    app.add_flag("--seal", seal, "only the per-hop cost of sealed frames vs --insecure");
    app.add_option("--n-embd", n_embd, "activation width for --seal (2048: TinyLlama 1.1B)");
    CLI11_PARSE(app, argc, argv);
    if (seal) {
      baton::bench::run_seal_cost(rounds, n_embd);
      return 0;
    }

    const double peak = memcpy_gbs();
    fmt::print("memcpy bandwidth (256 MiB, best of 5): {:.2f} GB/s\n", peak);

    // Echo server: every message goes straight back.
    Node server(options("bench-server"), [](Incoming&& in) { in.connection->send(in.message, in.body); });
    uint16_t port = server.listen("127.0.0.1", 0);
    Inbox inbox;
    Node client(options("bench-client"), inbox.handler());
    ConnectionPtr c = client.connect("127.0.0.1", port);
    print_header();

    struct LatencyCase {
      const char* name;
      uint32_t n_tokens, n_embd;  // 0 tokens: a Commit with no body
    };
    for (LatencyCase lc : {LatencyCase{"rtt", 0, 0}, LatencyCase{"rtt", 1, 4096}, LatencyCase{"rtt", 1, 8192},
                           LatencyCase{"rtt", 32, 4096}, LatencyCase{"rtt", 512, 4096}}) {
      Message m = Commit{1};
      Payload body;
      if (lc.n_tokens) std::tie(m, body) = forward(lc.n_tokens, lc.n_embd);
      std::vector<double> us;
      int n = lc.n_tokens >= 512 ? std::max(20, rounds / 20) : rounds;
      auto t_all = Clock::now();
      for (int i = 0; i < n; ++i) {
        auto t0 = Clock::now();
        c->send(m, body);
        if (!inbox.pop(std::chrono::seconds(30))) throw std::runtime_error("echo timed out");
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      double total = std::chrono::duration<double>(Clock::now() - t_all).count();
      std::sort(us.begin(), us.end());
      double gbs = 2.0 * body.size() * n / total / 1e9;
      std::string shape =
          lc.n_tokens ? fmt::format("Forward [{}, {}] f32", lc.n_tokens, lc.n_embd) : std::string("Commit, no body");
      fmt::print("{:<10} {:<26} {:>8} {:>11.1f} {:>11.1f} {:>11.1f} {:>9.2f} {:>7.1f}\n", lc.name, shape, n,
                 us[us.size() / 2], us[us.size() * 99 / 100], total * 1e3, gbs, 100 * gbs / peak);
    }

    // One-way streams: the client sends, the server counts and acknowledges the last frame.
    for (uint32_t frame_mib : {1u, 16u, 64u}) {
      std::mutex mu;
      std::condition_variable cv;
      size_t received = 0;
      Node sink(options("bench-sink"), [&](Incoming&&) {
        std::lock_guard lock(mu);
        ++received;
        cv.notify_one();
      });
      uint16_t sink_port = sink.listen("127.0.0.1", 0);
      Inbox unused;
      Node source(options("bench-source"), unused.handler());
      ConnectionPtr s = source.connect("127.0.0.1", sink_port);
      auto [f, body] = forward(frame_mib, 1u << 18);  // rows of 1 MiB
      size_t frames = std::max<size_t>(4, size_t(stream_mib) / frame_mib);
      auto t0 = Clock::now();
      for (size_t i = 0; i < frames; ++i) {
        if (!s->send(f, body)) throw std::runtime_error("send refused");
        // Keep at most ~256 MiB queued so the outbox limit is never the bottleneck's story.
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return (i + 1 - received) * frame_mib <= 256; });
      }
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return received == frames; });
      }
      double total = std::chrono::duration<double>(Clock::now() - t0).count();
      double gbs = double(body.size()) * frames / total / 1e9;
      fmt::print("{:<10} {:<26} {:>8} {:>11} {:>11} {:>11.1f} {:>9.2f} {:>7.1f}\n", "stream",
                 fmt::format("Forward {} MiB body", frame_mib), frames, "-", "-", total * 1e3, gbs, 100 * gbs / peak);
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
