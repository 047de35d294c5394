#include "seal_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <vector>

#include "net/codec.h"
#include "net/inbox.h"
#include "net/node.h"
#include "net/wire_crypto.h"

namespace baton::bench {

namespace {

using namespace baton::net;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::pair<Forward, Payload> activations(uint32_t n_tokens, uint32_t n_embd) {
  Forward f;
  for (uint32_t i = 0; i < n_tokens; ++i) f.tokens.push_back({0, i, i + 1 == n_tokens});
  const uint64_t bytes = uint64_t{n_tokens} * n_embd * 4;
  f.hidden = TensorRef{DType::kF32, {n_tokens, n_embd}, 0, bytes};
  Payload body = Payload::allocate(bytes);
  auto span = body.mutable_bytes();
  for (size_t i = 0; i < span.size(); ++i) span[i] = static_cast<uint8_t>(i * 7);
  return {f, body};
}

// This thread's CPU time: on a shared machine the wall time of a short computation also counts
// the time other processes held the core.
double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct CipherCost {
  double wall_us, cpu_us;  // medians
};

// Seal + open of one frame (one hop's cryptographic work).
CipherCost cipher_us(const Forward& f, const Payload& body, int rounds) {
  WireKey key{};
  key[0] = 1;
  FrameCipher tx(key), rx(key);
  FrameHead head = encode_frame_head(f, body.size());
  head.prefix =
      encode_prefix({static_cast<uint32_t>(head.header.size()), kFlagSealed, static_cast<uint32_t>(body.size())});
  std::vector<uint8_t> sealed(head.header.size() + body.size() + kWireTagBytes);
  std::vector<double> us, cpu;
  for (int i = 0; i < rounds; ++i) {
    auto t0 = Clock::now();
    const double c0 = thread_cpu_us();
    tx.seal(head.prefix, head.header, body.bytes(), sealed);
    std::array<uint8_t, kWireTagBytes> tag;
    std::memcpy(tag.data(), sealed.data() + sealed.size() - kWireTagBytes, kWireTagBytes);
    std::span<uint8_t> all(sealed);
    if (!rx.open(head.prefix, all.subspan(0, head.header.size()), all.subspan(head.header.size(), body.size()), tag))
      throw std::runtime_error("seal-cost: a frame did not open");
    cpu.push_back(thread_cpu_us() - c0);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  return {median(us), median(cpu)};
}

NodeOptions options(const char* id, bool sealed) {
  NodeOptions o;
  o.node_id = id;
  o.auth = sealed ? AuthConfig::with_secret("net-bench secret") : AuthConfig::insecure();
  o.limits.max_body_bytes = 256u << 20;
  return o;
}

// An echo server and a client connected to it.
struct EchoPair {
  Node server;
  Inbox inbox;
  Node client;
  ConnectionPtr c;
  explicit EchoPair(bool sealed)
      : server(options("seal-server", sealed), [](Incoming&& in) { in.connection->send(in.message, in.body); }),
        client(options("seal-client", sealed), inbox.handler()) {
    c = client.connect("127.0.0.1", server.listen("127.0.0.1", 0));
  }
  double round_trip_us(const Forward& f, const Payload& body) {
    auto t0 = Clock::now();
    c->send(f, body);
    if (!inbox.pop(std::chrono::seconds(30))) throw std::runtime_error("seal-cost: echo timed out");
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
};

}  // namespace

void run_seal_cost(int rounds, int n_embd) {
  EchoPair sealed(true), plain(false);
  fmt::print("{:<14} {:>9} {:>12} {:>11} {:>9} {:>13} {:>14} {:>13}\n", "shape (f32)", "bytes", "seal+open_us",
             "cpu_us", "cpu_GB/s", "rtt_plain_us", "rtt_sealed_us", "hop_delta_us");
  for (uint32_t n_tokens : {1u, 512u}) {
    auto [f, body] = activations(n_tokens, static_cast<uint32_t>(n_embd));
    const int n = n_tokens >= 512 ? std::max(20, rounds / 20) : rounds;
    const CipherCost crypto = cipher_us(f, body, n);
    std::vector<double> rtt_plain, rtt_sealed;
    for (int i = 0; i < 3; ++i) {  // warm up both connections
      plain.round_trip_us(f, body);
      sealed.round_trip_us(f, body);
    }
    const int block = std::max(1, n / 10);  // alternate in blocks: both see the same load
    for (int done = 0; done < n; done += block)
      for (int i = 0; i < block; ++i) {
        rtt_plain.push_back(plain.round_trip_us(f, body));
        rtt_sealed.push_back(sealed.round_trip_us(f, body));
      }
    const double p = median(rtt_plain), s = median(rtt_sealed);
    fmt::print("{:<14} {:>9} {:>12.1f} {:>11.1f} {:>9.2f} {:>13.1f} {:>14.1f} {:>13.1f}\n",
               fmt::format("[{}, {}]", n_tokens, n_embd), body.size(), crypto.wall_us, crypto.cpu_us,
               body.size() / crypto.cpu_us / 1e3, p, s, (s - p) / 2);
  }
  fmt::print(
      "seal+open: one hop's cipher work in-process, wall and thread CPU time (medians); "
      "hop_delta: half the difference of the median round trips (a round trip is two hops)\n");
}

}  // namespace baton::bench
