// Message -> frame header bytes (FlatBuffers), and the frames built from them. Decoding is in
// codec_decode.cpp; these two are the only files that include the generated wire code.
#include "net/codec.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "baton_generated.h"
#include "engine/base/error.h"

namespace baton::net {

namespace fb = flatbuffers;
namespace w = baton::wire;

namespace {

class Encoder {
 public:
  explicit Encoder(fb::FlatBufferBuilder& fbb) : fbb_(fbb) {}

  using Out = std::pair<w::Message, fb::Offset<void>>;

  Out operator()(const Hello& m) {
    auto node_id = str(m.node_id);
    auto o = w::CreateHello(fbb_, m.protocol_version, m.features, node_id, static_cast<w::Role>(m.role),
                            static_cast<w::AuthMode>(m.auth));
    return {w::Message_Hello, o.Union()};
  }
  Out operator()(const AuthChallenge& m) {
    auto nonce = fbb_.CreateVector(m.nonce.data(), m.nonce.size());
    return {w::Message_AuthChallenge, w::CreateAuthChallenge(fbb_, nonce).Union()};
  }
  Out operator()(const AuthResponse& m) {
    auto mac = fbb_.CreateVector(m.mac.data(), m.mac.size());
    fb::Offset<fb::Vector<uint8_t>> counter;
    if (m.counter_nonce) counter = fbb_.CreateVector(m.counter_nonce->data(), m.counter_nonce->size());
    return {w::Message_AuthResponse, w::CreateAuthResponse(fbb_, mac, counter).Union()};
  }
  Out operator()(const Prepare& m) {
    auto identity = str(m.model_identity);
    auto path = str(m.model_path_hint);
    fb::Offset<w::NextHop> hop;
    if (m.next_hop) {
      auto host = str(m.next_hop->host);
      auto node = str(m.next_hop->node_id);
      hop = w::CreateNextHop(fbb_, host, m.next_hop->port, node);
    }
    fb::Offset<fb::Vector<fb::Offset<w::KeyValue>>> options;
    if (!m.options.empty()) {
      std::vector<fb::Offset<w::KeyValue>> kvs;
      for (const KeyValue& kv : m.options) {
        auto key = str(kv.key);
        auto value = str(kv.value);
        kvs.push_back(w::CreateKeyValue(fbb_, key, value));
      }
      options = fbb_.CreateVector(kvs);
    }
    auto o = w::CreatePrepare(fbb_, m.load_id, identity, path, m.layer_first, m.layer_last, hop,
                              static_cast<w::DType>(m.activation_dtype), options, m.n_ctx, m.max_sequences);
    return {w::Message_Prepare, o.Union()};
  }
  Out operator()(const Ready& m) {
    return {w::Message_Ready, w::CreateReady(fbb_, m.load_id, m.memory_bytes, m.load_ms).Union()};
  }
  Out operator()(const Failed& m) {
    auto reason = str(m.reason);
    return {w::Message_Failed, w::CreateFailed(fbb_, m.load_id, reason).Union()};
  }
  Out operator()(const Commit& m) { return {w::Message_Commit, w::CreateCommit(fbb_, m.load_id).Union()}; }
  Out operator()(const Rollback& m) { return {w::Message_Rollback, w::CreateRollback(fbb_, m.load_id).Union()}; }
  Out operator()(const Forward& m) {
    auto tokens = token_vector(m.tokens);
    auto hidden = tensor(m.hidden);
    auto hints = m.row_hints.empty() ? 0 : fbb_.CreateVector(m.row_hints);
    auto timings = timing_vector(m.timings);
    return {w::Message_Forward,
            w::CreateForward(fbb_, m.micro_batch_id, tokens, hidden, hints, m.sent_ns, timings).Union()};
  }
  Out operator()(const Hidden& m) {
    auto tokens = token_vector(m.tokens);
    auto hidden = tensor(m.hidden);
    auto timings = timing_vector(m.timings);
    return {w::Message_Hidden, w::CreateHidden(fbb_, m.micro_batch_id, tokens, hidden, m.sent_ns, timings).Union()};
  }
  Out operator()(const ResetSequence& m) {
    fb::Offset<fb::Vector<uint32_t>> ids;
    if (!m.seq_ids.empty()) ids = fbb_.CreateVector(m.seq_ids);
    return {w::Message_ResetSequence, w::CreateResetSequence(fbb_, ids, m.all).Union()};
  }
  Out operator()(const Register& m) {
    auto status = node_status(m.status);
    return {w::Message_Register, w::CreateRegister(fbb_, status).Union()};
  }
  Out operator()(const Heartbeat& m) {
    auto status = node_status(m.status);
    return {w::Message_Heartbeat, w::CreateHeartbeat(fbb_, status).Union()};
  }
  Out operator()(const StatsRequest&) { return {w::Message_StatsRequest, w::CreateStatsRequest(fbb_).Union()}; }
  Out operator()(const Stats& m) {
    auto entries = stat_entries(m.entries);
    return {w::Message_Stats, w::CreateStats(fbb_, entries).Union()};
  }
  Out operator()(const ErrorReport& m) {
    auto message = str(m.message);
    fb::Optional<uint64_t> about;  // absent on the wire when the report is about no pass
    if (m.micro_batch_id) about = *m.micro_batch_id;
    return {w::Message_ErrorReport,
            w::CreateErrorReport(fbb_, static_cast<w::ErrorCode>(m.code), message, about).Union()};
  }
  Out operator()(const ClockPing& m) { return {w::Message_ClockPing, w::CreateClockPing(fbb_, m.sent_ns).Union()}; }
  Out operator()(const ClockPong& m) {
    return {w::Message_ClockPong, w::CreateClockPong(fbb_, m.ping_sent_ns, m.ping_received_ns, m.sent_ns).Union()};
  }
  Out operator()(const Goodbye& m) {
    auto reason = str(m.reason);
    return {w::Message_Goodbye, w::CreateGoodbye(fbb_, reason).Union()};
  }

 private:
  // Empty strings are left out (absent == empty), which keeps frames small and canonical.
  fb::Offset<fb::String> str(const std::string& s) {
    return s.empty() ? fb::Offset<fb::String>() : fbb_.CreateString(s);
  }

  fb::Offset<fb::Vector<const w::Token*>> token_vector(const std::vector<TokenInfo>& tokens) {
    if (tokens.empty()) return {};
    std::vector<w::Token> out;
    out.reserve(tokens.size());
    for (const TokenInfo& t : tokens) out.emplace_back(t.seq_id, t.pos, t.output);
    return fbb_.CreateVectorOfStructs(out);
  }

  fb::Offset<fb::Vector<const w::StageTiming*>> timing_vector(const std::vector<StageTiming>& timings) {
    if (timings.empty()) return {};
    std::vector<w::StageTiming> out;
    out.reserve(timings.size());
    for (const StageTiming& t : timings)
      out.emplace_back(t.residence_ms, t.compute_ms, t.bytes_out, t.hop_in_ms, t.hop_in_error_ms);
    return fbb_.CreateVectorOfStructs(out);
  }

  fb::Offset<w::TensorRef> tensor(const TensorRef& t) {
    auto shape = fbb_.CreateVector(t.shape);
    return w::CreateTensorRef(fbb_, static_cast<w::DType>(t.dtype), shape, t.offset, t.bytes);
  }

  fb::Offset<w::NodeStatus> node_status(const NodeStatus& s) {
    auto node_id = str(s.node_id);
    auto host = str(s.host);
    auto isa = str(s.isa);
    fb::Offset<fb::Vector<const w::LayerRange*>> layers;
    if (!s.layers.empty()) {
      std::vector<w::LayerRange> rs;
      for (const LayerRange& r : s.layers) rs.emplace_back(r.first, r.last);
      layers = fbb_.CreateVectorOfStructs(rs);
    }
    auto identity = str(s.model_identity);
    auto readings = stat_entries(s.readings);
    return w::CreateNodeStatus(fbb_, node_id, host, s.port, s.memory_total, s.memory_free, s.threads, isa, s.load,
                               layers, identity, s.speed, readings);
  }

  fb::Offset<fb::Vector<fb::Offset<w::StatEntry>>> stat_entries(const std::vector<StatEntry>& in) {
    fb::Offset<fb::Vector<fb::Offset<w::StatEntry>>> entries;
    if (!in.empty()) {
      std::vector<fb::Offset<w::StatEntry>> es;
      for (const StatEntry& e : in) {
        auto name = str(e.name);
        es.push_back(w::CreateStatEntry(fbb_, name, e.value));
      }
      entries = fbb_.CreateVector(es);
    }
    return entries;
  }

  fb::FlatBufferBuilder& fbb_;
};

}  // namespace

std::vector<uint8_t> encode_header(const Message& message, uint64_t body_bytes) {
  if (auto problem = check_message(message, body_bytes))
    fail("net: refusing to encode an invalid {}: {}", message_name(message), *problem);
  fb::FlatBufferBuilder fbb(256);
  Encoder encoder(fbb);
  auto [type, offset] = std::visit(encoder, message);
  w::FinishHeaderBuffer(fbb, w::CreateHeader(fbb, type, offset));
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

FrameHead encode_frame_head(const Message& message, uint64_t body_bytes) {
  if (body_bytes > std::numeric_limits<uint32_t>::max())
    fail("net: {} body of {} bytes does not fit a frame (at most {} bytes)", message_name(message), body_bytes,
         std::numeric_limits<uint32_t>::max());
  FrameHead head;
  head.header = encode_header(message, body_bytes);
  head.prefix = encode_prefix({static_cast<uint32_t>(head.header.size()), 0, static_cast<uint32_t>(body_bytes)});
  return head;
}

std::vector<uint8_t> encode_frame(const Message& message, std::span<const uint8_t> body) {
  FrameHead head = encode_frame_head(message, body.size());
  std::vector<uint8_t> out(kPrefixBytes + head.header.size() + body.size());
  std::memcpy(out.data(), head.prefix.data(), kPrefixBytes);
  std::memcpy(out.data() + kPrefixBytes, head.header.data(), head.header.size());
  if (!body.empty()) std::memcpy(out.data() + kPrefixBytes + head.header.size(), body.data(), body.size());
  return out;
}

}  // namespace baton::net
