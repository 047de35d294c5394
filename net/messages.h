// The messages of the Baton wire protocol as plain structs (no FlatBuffers, no Asio).
// net/codec turns them into frame headers and back; tensors travel in the frame body and are
// described here by TensorRef. net/ knows nothing of layers or models: these are plain data.
// The schema (net/schema/baton.fbs) documents each field and the evolution rules.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace baton::net {

// Bumped when an old peer could misread a new frame; peers with different versions refuse
// each other in the handshake, naming both versions. 2: ClockPing/ClockPong, and the
// pipeline's timing trailer with send timestamps and per-hop times. 3: every frame after a
// secure handshake is sealed with AES-256-GCM (net/wire_crypto.h), and Forward.row_hints (an
// older worker would ignore them and compute a pipelined prompt's rows with other numerics).
// 4: typed fields for what travelled as text or hand-packed bytes: ErrorReport.micro_batch_id
// and its ErrorCode, Prepare.n_ctx / max_sequences (no longer string options), and the timing
// trailer as Forward/Hidden.sent_ns and .timings (an older peer would drop the timings).
inline constexpr uint32_t kProtocolVersion = 4;

enum class Role : uint8_t { kUnknown = 0, kCoordinator = 1, kWorker = 2, kClient = 3 };
enum class AuthMode : uint8_t { kHmacSha256 = 0, kInsecure = 1 };
enum class DType : uint8_t { kF32 = 0, kF16 = 1, kBF16 = 2, kI32 = 3 };
// What an ErrorReport is about (schema enum ErrorCode); check_message refuses a value above
// kLastErrorCode.
enum class ErrorCode : uint32_t {
  kUnknown = 0,        // no code given (a default-constructed report); no sender uses it
  kForwardFailed = 1,  // the stage refused the batch (position outside the context, cache full)
  kNotServing = 2,     // Forward before Commit or after Rollback
  kBadRequest = 3,     // a message the receiver refuses (tensor that does not fit, unknown load, bad record)
  kNextHop = 4,        // the result could not be sent to the next hop
  kTakenOver = 5,      // another coordinator took the worker over (--take-over); the connection closes next
};
inline constexpr ErrorCode kLastErrorCode = ErrorCode::kTakenOver;

// Bytes per element; 0 for a value that is not a known DType.
size_t dtype_size(DType dtype);
std::string_view to_string(DType dtype);
std::string_view to_string(Role role);
std::string_view to_string(ErrorCode code);  // "forward failed", "taken over", ...

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

// Bounds every decoded message must respect (checked by check_message).
inline constexpr size_t kMaxNameBytes = 256;    // node ids, hosts, ISA names, keys, stat names
inline constexpr size_t kMaxTextBytes = 16384;  // reasons, messages, paths, identities, values
inline constexpr size_t kMaxTensorRank = 4;
inline constexpr size_t kMaxTokens = 1u << 20;       // per Forward/Hidden
inline constexpr size_t kMaxListItems = 65536;       // seq ids, options, stats entries, layer ranges
inline constexpr size_t kMaxStageTimings = 4096;     // timing records per Forward/Hidden
inline constexpr uint64_t kMaxContext = 0x7fffffff;  // Prepare.n_ctx: positions are int32 inside
inline constexpr uint32_t kMaxSequences = 65536;     // Prepare.max_sequences

// A tensor stored in the frame body at [offset, offset + bytes); shape outermost first.
struct TensorRef {
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  bool operator==(const TensorRef&) const = default;
};

struct TokenInfo {
  uint32_t seq_id = 0;
  uint32_t pos = 0;
  bool output = false;
  bool operator==(const TokenInfo&) const = default;
};

// What one stage measured for one micro-batch, in ms of its own clock (the hop into it: of the
// link's clock estimate); plain data to net/, meaning owned by the pipeline (engine/pipeline/wire.h).
struct StageTiming {
  double residence_ms = 0;      // >= 0
  double compute_ms = 0;        // >= 0
  double bytes_out = 0;         // >= 0
  double hop_in_ms = 0;         // finite, may be slightly < 0
  double hop_in_error_ms = -1;  // finite; < 0: not measured
  bool operator==(const StageTiming&) const = default;
};

struct LayerRange {  // inclusive
  uint32_t first = 0;
  uint32_t last = 0;
  bool operator==(const LayerRange&) const = default;
};

struct KeyValue {
  std::string key;
  std::string value;
  bool operator==(const KeyValue&) const = default;
};

struct NextHop {
  std::string host;
  uint16_t port = 0;
  std::string node_id;
  bool operator==(const NextHop&) const = default;
};

// First message on every connection, both ways. Frozen shape.
struct Hello {
  uint32_t protocol_version = kProtocolVersion;
  uint64_t features = 0;  // capability bits, meaning owned by the engine
  std::string node_id;
  Role role = Role::kUnknown;
  AuthMode auth = AuthMode::kHmacSha256;
  bool operator==(const Hello&) const = default;
};

struct AuthChallenge {
  Nonce nonce{};
  bool operator==(const AuthChallenge&) const = default;
};

// Client: proof + counter_nonce; server: proof only.
struct AuthResponse {
  Mac mac{};
  std::optional<Nonce> counter_nonce;
  bool operator==(const AuthResponse&) const = default;
};

// Load phase 1 (a transaction, see ARCHITECTURE.md §4).
struct Prepare {
  uint64_t load_id = 0;
  std::string model_identity;
  std::string model_path_hint;
  uint32_t layer_first = 0;         // inclusive
  uint32_t layer_last = 0;          // inclusive
  std::optional<NextHop> next_hop;  // nullopt: results go back to the coordinator
  DType activation_dtype = DType::kF32;
  std::vector<KeyValue> options;
  uint64_t n_ctx = 0;          // positions per sequence, <= kMaxContext; 0: the model's (at most 4096)
  uint32_t max_sequences = 1;  // KV cache slots, 1..kMaxSequences
  bool operator==(const Prepare&) const = default;
};

struct Ready {
  uint64_t load_id = 0;
  uint64_t memory_bytes = 0;
  uint64_t load_ms = 0;
  bool operator==(const Ready&) const = default;
};

struct Failed {
  uint64_t load_id = 0;
  std::string reason;
  bool operator==(const Failed&) const = default;
};

struct Commit {
  uint64_t load_id = 0;
  bool operator==(const Commit&) const = default;
};

struct Rollback {
  uint64_t load_id = 0;
  bool operator==(const Rollback&) const = default;
};

// hidden: [tokens.size(), n_embd] in the body. row_hints: empty, or one byte per token below
// kMaxRowHint, opaque to net/ (the engine's per-row numerics choice; engine/model/row_hint.h).
// sent_ns: the sender's steady clock (ns, >= 0; 0: not stamped) when it handed the frame to its
// connection; timings: one record per stage already passed (at most kMaxStageTimings).
struct Forward {
  uint64_t micro_batch_id = 0;
  std::vector<TokenInfo> tokens;
  TensorRef hidden;
  std::vector<uint8_t> row_hints;
  int64_t sent_ns = 0;
  std::vector<StageTiming> timings{};
  bool operator==(const Forward&) const = default;
};
inline constexpr uint8_t kMaxRowHint = 8;

// Last stage -> coordinator: only the output tokens; hidden: [tokens.size(), n_embd].
struct Hidden {
  uint64_t micro_batch_id = 0;
  std::vector<TokenInfo> tokens;
  TensorRef hidden;
  int64_t sent_ns = 0;                 // as in Forward
  std::vector<StageTiming> timings{};  // every stage of the chain
  bool operator==(const Hidden&) const = default;
};

struct ResetSequence {
  std::vector<uint32_t> seq_ids;
  bool all = false;  // reset every sequence (seq_ids ignored)
  bool operator==(const ResetSequence&) const = default;
};

struct StatEntry {
  std::string name;
  double value = 0;
  bool operator==(const StatEntry&) const = default;
};

struct NodeStatus {
  std::string node_id;
  std::string host;
  uint16_t port = 0;
  uint64_t memory_total = 0;
  uint64_t memory_free = 0;
  uint32_t threads = 0;
  std::string isa;
  float load = 0;  // finite, >= 0
  std::vector<LayerRange> layers;
  std::string model_identity;
  float speed = 0;  // finite, >= 0; measured compute speed, unit owned by the engine
  // Machine readings by name (cpu_temperature_celsius, network_receive_bytes, ...: engine/registry/
  // node_readings.h); finite values, an unknown one absent. Added within protocol 3.
  std::vector<StatEntry> readings{};
  bool operator==(const NodeStatus&) const = default;
};

struct Register {
  NodeStatus status;
  bool operator==(const Register&) const = default;
};

struct Heartbeat {
  NodeStatus status;
  bool operator==(const Heartbeat&) const = default;
};

struct StatsRequest {
  bool operator==(const StatsRequest&) const = default;
};

struct Stats {
  std::vector<StatEntry> entries;
  bool operator==(const Stats&) const = default;
};

// "Error(code, message)" on the wire; named so it does not shadow baton::Error.
struct ErrorReport {
  ErrorCode code = ErrorCode::kUnknown;
  std::string message;
  std::optional<uint64_t> micro_batch_id{};  // the pass it is about; nullopt: none in particular
  bool operator==(const ErrorReport&) const = default;
};

struct Goodbye {
  std::string reason;
  bool operator==(const Goodbye&) const = default;
};

// Clock probes (net/clock_sync.h), handled inside net/ and never delivered to the handler:
// timestamps are ns of the writer's steady clock, set when the frame is actually written.
struct ClockPing {
  int64_t sent_ns = 0;  // t1
  bool operator==(const ClockPing&) const = default;
};
struct ClockPong {
  int64_t ping_sent_ns = 0;      // t1, echoed
  int64_t ping_received_ns = 0;  // t2: the ping was read whole
  int64_t sent_ns = 0;           // t3
  bool operator==(const ClockPong&) const = default;
};

// Alternatives in the order of the schema's Message union (index + 1 = union type id).
using Message =
    std::variant<Hello, AuthChallenge, AuthResponse, Prepare, Ready, Failed, Commit, Rollback, Forward, Hidden,
                 ResetSequence, Register, Heartbeat, StatsRequest, Stats, ErrorReport, Goodbye, ClockPing, ClockPong>;

// "Hello", "Forward", ... for logs and errors.
std::string_view message_name(const Message& message);

// Semantic check shared by encoder and decoder: strings and lists within the bounds above,
// known dtypes, every TensorRef inside a body of `body_bytes` with shape x dtype size ==
// bytes, token counts matching tensor rows, layer ranges ordered, floats finite, known error
// codes, n_ctx / max_sequences / sent_ns / timings within their ranges, and no body on messages
// that carry no tensor. Returns the first violation in words, or nullopt.
std::optional<std::string> check_message(const Message& message, uint64_t body_bytes);

}  // namespace baton::net
