// Frame header bytes -> Message: the FlatBuffers Verifier, then conversion to the plain structs
// of net/messages.h, then check_message(); never throws or aborts on remote bytes. Encoding is
// in codec_encode.cpp.
#include "net/codec.h"

#include <fmt/format.h>

#include <algorithm>

#include "baton_generated.h"

namespace baton::net {

namespace fb = flatbuffers;
namespace w = baton::wire;

namespace {

// Input already passed the Verifier: pointers are in bounds, but may be null.

std::string read_str(const fb::String* s) { return s ? s->str() : std::string(); }

template <size_t N>
bool read_bytes(const fb::Vector<uint8_t>* v, std::array<uint8_t, N>& out) {
  if (!v || v->size() != N) return false;
  std::copy(v->begin(), v->end(), out.begin());
  return true;
}

size_t size_of(const fb::Vector<uint8_t>* v) { return v ? v->size() : 0; }

std::vector<TokenInfo> read_tokens(const fb::Vector<const w::Token*>* v) {
  std::vector<TokenInfo> out;
  if (!v) return out;
  out.reserve(v->size());
  for (const w::Token* t : *v) out.push_back({t->seq_id(), t->pos(), t->output()});
  return out;
}

std::vector<StageTiming> read_timings(const fb::Vector<const w::StageTiming*>* v) {
  std::vector<StageTiming> out;
  if (!v) return out;
  out.reserve(v->size());
  for (const w::StageTiming* t : *v)
    out.push_back({t->residence_ms(), t->compute_ms(), t->bytes_out(), t->hop_in_ms(), t->hop_in_error_ms()});
  return out;
}

TensorRef read_tensor(const w::TensorRef* t) {
  TensorRef out;
  out.dtype = static_cast<DType>(t->dtype());
  if (t->shape()) out.shape.assign(t->shape()->begin(), t->shape()->end());
  out.offset = t->offset();
  out.bytes = t->bytes();
  return out;
}

NodeStatus read_status(const w::NodeStatus* s) {
  NodeStatus out;
  out.node_id = read_str(s->node_id());
  out.host = read_str(s->host());
  out.port = s->port();
  out.memory_total = s->memory_total();
  out.memory_free = s->memory_free();
  out.threads = s->threads();
  out.isa = read_str(s->isa());
  out.load = s->load();
  if (s->layers())
    for (const w::LayerRange* r : *s->layers()) out.layers.push_back({r->first(), r->last()});
  out.model_identity = read_str(s->model_identity());
  out.speed = s->speed();
  if (s->readings())
    for (const w::StatEntry* e : *s->readings()) out.readings.push_back({read_str(e->name()), e->value()});
  return out;
}

// Lists are bounded before converting so a hostile count costs nothing.
template <class V>
std::optional<std::string> too_many(std::string_view field, const V* v, size_t max) {
  if (v && v->size() > max) return fmt::format("{}: {} items, at most {} allowed", field, v->size(), max);
  return std::nullopt;
}

Result<Message> convert(const w::Header* header) {
  auto bad = [](std::string text) { return Result<Message>(DecodeError{std::move(text)}); };
  // The Verifier accepts a union type whose value is absent; every case below needs it.
  if (header->message_type() != w::Message_NONE && header->message() == nullptr)
    return bad(
        fmt::format("header: message type {} without a message table", static_cast<int>(header->message_type())));
  switch (header->message_type()) {
    case w::Message_NONE: return bad("header: no message (union type NONE)");
    case w::Message_Hello: {
      auto* m = header->message_as_Hello();
      Hello out;
      out.protocol_version = m->protocol_version();
      out.features = m->features();
      out.node_id = read_str(m->node_id());
      out.role = static_cast<Role>(m->role());
      out.auth = static_cast<AuthMode>(m->auth());
      return Message(std::move(out));
    }
    case w::Message_AuthChallenge: {
      AuthChallenge out;
      auto* v = header->message_as_AuthChallenge()->nonce();
      if (!read_bytes(v, out.nonce))
        return bad(fmt::format("AuthChallenge.nonce: {} bytes, expected {}", size_of(v), kNonceBytes));
      return Message(out);
    }
    case w::Message_AuthResponse: {
      auto* m = header->message_as_AuthResponse();
      AuthResponse out;
      if (!read_bytes(m->mac(), out.mac))
        return bad(fmt::format("AuthResponse.mac: {} bytes, expected {}", size_of(m->mac()), kMacBytes));
      if (m->counter_nonce()) {
        Nonce n;
        if (!read_bytes(m->counter_nonce(), n))
          return bad(fmt::format("AuthResponse.counter_nonce: {} bytes, expected {}", size_of(m->counter_nonce()),
                                 kNonceBytes));
        out.counter_nonce = n;
      }
      return Message(out);
    }
    case w::Message_Prepare: {
      auto* m = header->message_as_Prepare();
      if (auto p = too_many("Prepare.options", m->options(), kMaxListItems)) return bad(*p);
      Prepare out;
      out.load_id = m->load_id();
      out.model_identity = read_str(m->model_identity());
      out.model_path_hint = read_str(m->model_path_hint());
      out.layer_first = m->layer_first();
      out.layer_last = m->layer_last();
      if (auto* hop = m->next_hop())
        out.next_hop = NextHop{read_str(hop->host()), hop->port(), read_str(hop->node_id())};
      out.activation_dtype = static_cast<DType>(m->activation_dtype());
      if (m->options())
        for (const w::KeyValue* kv : *m->options()) out.options.push_back({read_str(kv->key()), read_str(kv->value())});
      out.n_ctx = m->n_ctx();
      out.max_sequences = m->max_sequences();
      return Message(std::move(out));
    }
    case w::Message_Ready: {
      auto* m = header->message_as_Ready();
      return Message(Ready{m->load_id(), m->memory_bytes(), m->load_ms()});
    }
    case w::Message_Failed: {
      auto* m = header->message_as_Failed();
      return Message(Failed{m->load_id(), read_str(m->reason())});
    }
    case w::Message_Commit: return Message(Commit{header->message_as_Commit()->load_id()});
    case w::Message_Rollback: return Message(Rollback{header->message_as_Rollback()->load_id()});
    case w::Message_Forward: {
      auto* m = header->message_as_Forward();
      if (auto p = too_many("Forward.tokens", m->tokens(), kMaxTokens)) return bad(*p);
      if (auto p = too_many("Forward.hidden.shape", m->hidden()->shape(), kMaxTensorRank)) return bad(*p);
      if (auto p = too_many("Forward.row_hints", m->row_hints(), kMaxTokens)) return bad(*p);
      if (auto p = too_many("Forward.timings", m->timings(), kMaxStageTimings)) return bad(*p);
      std::vector<uint8_t> hints;
      if (m->row_hints()) hints.assign(m->row_hints()->begin(), m->row_hints()->end());
      return Message(Forward{m->micro_batch_id(), read_tokens(m->tokens()), read_tensor(m->hidden()), std::move(hints),
                             m->sent_ns(), read_timings(m->timings())});
    }
    case w::Message_Hidden: {
      auto* m = header->message_as_Hidden();
      if (auto p = too_many("Hidden.tokens", m->tokens(), kMaxTokens)) return bad(*p);
      if (auto p = too_many("Hidden.hidden.shape", m->hidden()->shape(), kMaxTensorRank)) return bad(*p);
      if (auto p = too_many("Hidden.timings", m->timings(), kMaxStageTimings)) return bad(*p);
      return Message(Hidden{m->micro_batch_id(), read_tokens(m->tokens()), read_tensor(m->hidden()), m->sent_ns(),
                            read_timings(m->timings())});
    }
    case w::Message_ResetSequence: {
      auto* m = header->message_as_ResetSequence();
      if (auto p = too_many("ResetSequence.seq_ids", m->seq_ids(), kMaxListItems)) return bad(*p);
      ResetSequence out;
      if (m->seq_ids()) out.seq_ids.assign(m->seq_ids()->begin(), m->seq_ids()->end());
      out.all = m->all();
      return Message(std::move(out));
    }
    case w::Message_Register: {
      auto* s = header->message_as_Register()->status();
      if (auto p = too_many("Register.status.layers", s->layers(), kMaxListItems)) return bad(*p);
      if (auto p = too_many("Register.status.readings", s->readings(), kMaxListItems)) return bad(*p);
      return Message(Register{read_status(s)});
    }
    case w::Message_Heartbeat: {
      auto* s = header->message_as_Heartbeat()->status();
      if (auto p = too_many("Heartbeat.status.layers", s->layers(), kMaxListItems)) return bad(*p);
      if (auto p = too_many("Heartbeat.status.readings", s->readings(), kMaxListItems)) return bad(*p);
      return Message(Heartbeat{read_status(s)});
    }
    case w::Message_StatsRequest: return Message(StatsRequest{});
    case w::Message_Stats: {
      auto* m = header->message_as_Stats();
      if (auto p = too_many("Stats.entries", m->entries(), kMaxListItems)) return bad(*p);
      Stats out;
      if (m->entries())
        for (const w::StatEntry* e : *m->entries()) out.entries.push_back({read_str(e->name()), e->value()});
      return Message(std::move(out));
    }
    case w::Message_ErrorReport: {
      auto* m = header->message_as_ErrorReport();
      std::optional<uint64_t> about;
      if (m->micro_batch_id()) about = *m->micro_batch_id();
      return Message(ErrorReport{static_cast<ErrorCode>(m->code()), read_str(m->message()), about});
    }
    case w::Message_Goodbye: return Message(Goodbye{read_str(header->message_as_Goodbye()->reason())});
    case w::Message_ClockPing: return Message(ClockPing{header->message_as_ClockPing()->sent_ns()});
    case w::Message_ClockPong: {
      auto* m = header->message_as_ClockPong();
      return Message(ClockPong{m->ping_sent_ns(), m->ping_received_ns(), m->sent_ns()});
    }
  }
  return bad(fmt::format("header: unknown message type {} (newest known: {}; a newer peer?)",
                         static_cast<int>(header->message_type()), static_cast<int>(w::Message_MAX)));
}

}  // namespace

Result<Message> decode_header(std::span<const uint8_t> header, uint64_t body_bytes) {
  if (header.size() < kMinHeaderBytes || header.size() >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return DecodeError{fmt::format("header: {} bytes, expected {}..{}", header.size(), kMinHeaderBytes,
                                   FLATBUFFERS_MAX_BUFFER_SIZE - 1)};
  // FlatBuffers reads 64-bit fields in place and checks their alignment only relative to the
  // buffer's start: a header at an address that is not 8-aligned is decoded from a copy
  // (found by fuzz_wire; tests/fuzz/corpus/wire/misaligned-u64-vector).
  if (reinterpret_cast<uintptr_t>(header.data()) % 8 != 0)
    return decode_header(std::vector<uint8_t>(header.begin(), header.end()), body_bytes);
  if (!w::HeaderBufferHasIdentifier(header.data())) return DecodeError{"header: missing file identifier \"BTN1\""};
  fb::Verifier::Options options;
  options.max_depth = 16;
  options.max_tables = 1u << 20;
  fb::Verifier verifier(header.data(), header.size(), options);
  if (!w::VerifyHeaderBuffer(verifier))
    return DecodeError{fmt::format("header: {} bytes fail FlatBuffers verification", header.size())};
  Result<Message> message = convert(w::GetHeader(header.data()));
  if (!message) return message;
  if (auto problem = check_message(*message, body_bytes)) return DecodeError{fmt::format("{}", *problem)};
  return message;
}

Result<DecodedFrame> decode_frame(std::span<const uint8_t> frame, const FrameLimits& limits) {
  if (frame.size() < kPrefixBytes)
    return DecodeError{fmt::format("frame: {} bytes, shorter than the {}-byte prefix", frame.size(), kPrefixBytes)};
  auto prefix = parse_prefix(frame.first<kPrefixBytes>(), limits);
  if (!prefix) return prefix.error();
  if (prefix->flags & kFlagSealed)  // needs the connection's key and counter (net/wire_crypto.h)
    return DecodeError{"frame: sealed (encrypted) frame; only plaintext frames decode here"};
  uint64_t expected = uint64_t{kPrefixBytes} + prefix->header_bytes + prefix->body_bytes;
  if (frame.size() != expected)
    return DecodeError{fmt::format("frame: {} bytes, prefix announces {} (16 + {} + {})", frame.size(), expected,
                                   prefix->header_bytes, prefix->body_bytes)};
  auto header = frame.subspan(kPrefixBytes, prefix->header_bytes);
  auto message = decode_header(header, prefix->body_bytes);
  if (!message) return message.error();
  return DecodedFrame{std::move(*message), frame.subspan(kPrefixBytes + prefix->header_bytes)};
}

}  // namespace baton::net
