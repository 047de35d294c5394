#include "net/messages.h"

#include <fmt/format.h>

#include <cmath>

#include "engine/base/checked_math.h"

namespace baton::net {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kI32: return 4;
  }
  return 0;
}

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
  }
  return "unknown-dtype";
}

std::string_view to_string(Role role) {
  switch (role) {
    case Role::kUnknown: return "unknown";
    case Role::kCoordinator: return "coordinator";
    case Role::kWorker: return "worker";
    case Role::kClient: return "client";
  }
  return "unknown";
}

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kUnknown: return "unknown";
    case ErrorCode::kForwardFailed: return "forward failed";
    case ErrorCode::kNotServing: return "not serving";
    case ErrorCode::kBadRequest: return "bad request";
    case ErrorCode::kNextHop: return "next hop unreachable";
    case ErrorCode::kTakenOver: return "taken over";
  }
  return "unknown";
}

namespace {

constexpr std::string_view kNames[] = {"Hello",         "AuthChallenge", "AuthResponse", "Prepare",      "Ready",
                                       "Failed",        "Commit",        "Rollback",     "Forward",      "Hidden",
                                       "ResetSequence", "Register",      "Heartbeat",    "StatsRequest", "Stats",
                                       "ErrorReport",   "Goodbye",       "ClockPing",    "ClockPong"};
static_assert(std::size(kNames) == std::variant_size_v<Message>);

using Problem = std::optional<std::string>;

Problem check_string(std::string_view field, const std::string& s, size_t max) {
  if (s.size() > max) return fmt::format("{}: {} bytes, at most {} allowed", field, s.size(), max);
  return std::nullopt;
}

Problem check_count(std::string_view field, size_t n, size_t max) {
  if (n > max) return fmt::format("{}: {} items, at most {} allowed", field, n, max);
  return std::nullopt;
}

Problem check_float(std::string_view field, double v) {
  if (!std::isfinite(v) || v < 0) return fmt::format("{}: {} is not a finite value >= 0", field, v);
  return std::nullopt;
}

Problem check_dtype(std::string_view field, DType d) {
  if (dtype_size(d) == 0) return fmt::format("{}: unknown dtype {}", field, static_cast<int>(d));
  return std::nullopt;
}

std::string shape_string(const std::vector<uint64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Problem check_tensor(std::string_view field, const TensorRef& t, uint64_t body_bytes) {
  if (auto p = check_dtype(fmt::format("{}.dtype", field), t.dtype)) return p;
  if (t.shape.empty() || t.shape.size() > kMaxTensorRank)
    return fmt::format("{}.shape: rank {}, expected 1..{}", field, t.shape.size(), kMaxTensorRank);
  uint64_t elem = dtype_size(t.dtype);
  std::optional<uint64_t> expected = elem;
  for (uint64_t d : t.shape) expected = expected ? checked_mul(*expected, d) : std::nullopt;
  if (!expected)
    return fmt::format("{}: shape {} x {} overflows 64 bits", field, shape_string(t.shape), to_string(t.dtype));
  if (*expected != t.bytes)
    return fmt::format("{}: shape {} x {} ({} bytes) = {} bytes but bytes = {}", field, shape_string(t.shape),
                       to_string(t.dtype), elem, *expected, t.bytes);
  if (t.offset % elem != 0)
    return fmt::format("{}: offset {} is not a multiple of the {} element size {}", field, t.offset, to_string(t.dtype),
                       elem);
  auto end = checked_add(t.offset, t.bytes);
  if (!end || *end > body_bytes)
    return fmt::format("{}: bytes [{}, {} + {}) lie outside the {}-byte body", field, t.offset, t.offset, t.bytes,
                       body_bytes);
  return std::nullopt;
}

template <class M>
Problem check_batch(std::string_view name, const M& m, uint64_t body_bytes) {
  if (auto p = check_count(fmt::format("{}.tokens", name), m.tokens.size(), kMaxTokens)) return p;
  if (auto p = check_tensor(fmt::format("{}.hidden", name), m.hidden, body_bytes)) return p;
  if (m.hidden.shape.size() != 2)
    return fmt::format("{}.hidden: rank {}, expected 2 ([n_tokens, n_embd])", name, m.hidden.shape.size());
  if (m.hidden.shape[0] != m.tokens.size())
    return fmt::format("{}.hidden: {} rows but {} tokens", name, m.hidden.shape[0], m.tokens.size());
  return std::nullopt;
}

// The send time and the per-stage records of a Forward/Hidden (protocol 4's timing fields).
template <class M>
Problem check_timings(std::string_view name, const M& m) {
  if (m.sent_ns < 0)
    return fmt::format("{}.sent_ns: {} is negative (a steady clock reading, 0: not stamped)", name, m.sent_ns);
  if (auto p = check_count(fmt::format("{}.timings", name), m.timings.size(), kMaxStageTimings)) return p;
  for (size_t i = 0; i < m.timings.size(); ++i) {
    const StageTiming& t = m.timings[i];
    if (auto p = check_float(fmt::format("{}.timings[{}].residence_ms", name, i), t.residence_ms)) return p;
    if (auto p = check_float(fmt::format("{}.timings[{}].compute_ms", name, i), t.compute_ms)) return p;
    if (auto p = check_float(fmt::format("{}.timings[{}].bytes_out", name, i), t.bytes_out)) return p;
    if (!std::isfinite(t.hop_in_ms))
      return fmt::format("{}.timings[{}].hop_in_ms: {} is not finite", name, i, t.hop_in_ms);
    if (!std::isfinite(t.hop_in_error_ms))
      return fmt::format("{}.timings[{}].hop_in_error_ms: {} is not finite (< 0: not measured)", name, i,
                         t.hop_in_error_ms);
  }
  return std::nullopt;
}

Problem check_status(std::string_view name, const NodeStatus& s) {
  if (auto p = check_string(fmt::format("{}.node_id", name), s.node_id, kMaxNameBytes)) return p;
  if (auto p = check_string(fmt::format("{}.host", name), s.host, kMaxNameBytes)) return p;
  if (auto p = check_string(fmt::format("{}.isa", name), s.isa, kMaxNameBytes)) return p;
  if (auto p = check_string(fmt::format("{}.model_identity", name), s.model_identity, kMaxTextBytes)) return p;
  if (auto p = check_float(fmt::format("{}.load", name), s.load)) return p;
  if (auto p = check_float(fmt::format("{}.speed", name), s.speed)) return p;
  if (auto p = check_count(fmt::format("{}.layers", name), s.layers.size(), kMaxListItems)) return p;
  for (const LayerRange& r : s.layers)
    if (r.first > r.last) return fmt::format("{}.layers: range [{}, {}] has first > last", name, r.first, r.last);
  if (auto p = check_count(fmt::format("{}.readings", name), s.readings.size(), kMaxListItems)) return p;
  for (const StatEntry& e : s.readings) {
    if (auto p = check_string(fmt::format("{}.readings.name", name), e.name, kMaxNameBytes)) return p;
    if (!std::isfinite(e.value)) return fmt::format("{}.readings: value of '{}' is not finite", name, e.name);
  }
  return std::nullopt;
}

struct Checker {
  uint64_t body_bytes;

  Problem operator()(const Hello& m) const { return check_string("Hello.node_id", m.node_id, kMaxNameBytes); }
  Problem operator()(const AuthChallenge&) const { return std::nullopt; }
  Problem operator()(const AuthResponse&) const { return std::nullopt; }
  Problem operator()(const Prepare& m) const {
    if (auto p = check_string("Prepare.model_identity", m.model_identity, kMaxTextBytes)) return p;
    if (auto p = check_string("Prepare.model_path_hint", m.model_path_hint, kMaxTextBytes)) return p;
    if (m.layer_first > m.layer_last)
      return fmt::format("Prepare: layer_first {} > layer_last {}", m.layer_first, m.layer_last);
    if (m.next_hop) {
      if (auto p = check_string("Prepare.next_hop.host", m.next_hop->host, kMaxNameBytes)) return p;
      if (auto p = check_string("Prepare.next_hop.node_id", m.next_hop->node_id, kMaxNameBytes)) return p;
    }
    if (auto p = check_dtype("Prepare.activation_dtype", m.activation_dtype)) return p;
    if (auto p = check_count("Prepare.options", m.options.size(), kMaxListItems)) return p;
    for (const KeyValue& kv : m.options) {
      if (auto p = check_string("Prepare.options.key", kv.key, kMaxNameBytes)) return p;
      if (auto p = check_string("Prepare.options.value", kv.value, kMaxTextBytes)) return p;
    }
    if (m.n_ctx > kMaxContext)
      return fmt::format("Prepare.n_ctx: {} is outside 0..{} (0: the model's context)", m.n_ctx, kMaxContext);
    if (m.max_sequences < 1 || m.max_sequences > kMaxSequences)
      return fmt::format("Prepare.max_sequences: {} is outside 1..{}", m.max_sequences, kMaxSequences);
    return std::nullopt;
  }
  Problem operator()(const Ready&) const { return std::nullopt; }
  Problem operator()(const Failed& m) const { return check_string("Failed.reason", m.reason, kMaxTextBytes); }
  Problem operator()(const Commit&) const { return std::nullopt; }
  Problem operator()(const Rollback&) const { return std::nullopt; }
  Problem operator()(const Forward& m) const {
    if (auto p = check_batch("Forward", m, body_bytes)) return p;
    if (!m.row_hints.empty() && m.row_hints.size() != m.tokens.size())
      return fmt::format("Forward.row_hints: {} hints for {} tokens", m.row_hints.size(), m.tokens.size());
    for (size_t i = 0; i < m.row_hints.size(); ++i)
      if (m.row_hints[i] >= kMaxRowHint)
        return fmt::format("Forward.row_hints[{}]: {} is not a row hint (< {})", i, m.row_hints[i], kMaxRowHint);
    return check_timings("Forward", m);
  }
  Problem operator()(const Hidden& m) const {
    if (auto p = check_batch("Hidden", m, body_bytes)) return p;
    return check_timings("Hidden", m);
  }
  Problem operator()(const ResetSequence& m) const {
    return check_count("ResetSequence.seq_ids", m.seq_ids.size(), kMaxListItems);
  }
  Problem operator()(const Register& m) const { return check_status("Register.status", m.status); }
  Problem operator()(const Heartbeat& m) const { return check_status("Heartbeat.status", m.status); }
  Problem operator()(const StatsRequest&) const { return std::nullopt; }
  Problem operator()(const Stats& m) const {
    if (auto p = check_count("Stats.entries", m.entries.size(), kMaxListItems)) return p;
    for (const StatEntry& e : m.entries) {
      if (auto p = check_string("Stats.entries.name", e.name, kMaxNameBytes)) return p;
      if (!std::isfinite(e.value)) return fmt::format("Stats.entries: value of '{}' is not finite", e.name);
    }
    return std::nullopt;
  }
  Problem operator()(const ErrorReport& m) const {
    const auto code = static_cast<uint32_t>(m.code);
    if (code > static_cast<uint32_t>(kLastErrorCode))
      return fmt::format("ErrorReport.code: {} is not a known error code (0..{}, a newer peer?)", code,
                         static_cast<uint32_t>(kLastErrorCode));
    return check_string("ErrorReport.message", m.message, kMaxTextBytes);
  }
  Problem operator()(const Goodbye& m) const { return check_string("Goodbye.reason", m.reason, kMaxTextBytes); }
  Problem operator()(const ClockPing&) const { return std::nullopt; }
  Problem operator()(const ClockPong&) const { return std::nullopt; }
};

}  // namespace

std::string_view message_name(const Message& message) { return kNames[message.index()]; }

std::optional<std::string> check_message(const Message& message, uint64_t body_bytes) {
  if (auto p = std::visit(Checker{body_bytes}, message)) return p;
  bool carries_tensor = std::holds_alternative<Forward>(message) || std::holds_alternative<Hidden>(message);
  if (!carries_tensor && body_bytes != 0)
    return fmt::format("{}: carries no tensor but the frame has a {}-byte body", message_name(message), body_bytes);
  return std::nullopt;
}

}  // namespace baton::net
