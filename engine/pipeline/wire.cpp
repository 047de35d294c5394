#include "engine/pipeline/wire.h"

#include <cstring>
#include <limits>

#include "engine/base/error.h"

namespace baton::pipeline {

std::vector<net::TokenInfo> to_wire(const TokenBatch& batch) {
  std::vector<net::TokenInfo> out;
  out.reserve(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch.seq_ids[i] > std::numeric_limits<uint32_t>::max())
      fail("sequence id {} does not fit the wire's 32 bits", batch.seq_ids[i]);
    if (batch.positions[i] < 0) fail("token {} has negative position {}", i, batch.positions[i]);
    out.push_back({static_cast<uint32_t>(batch.seq_ids[i]), static_cast<uint32_t>(batch.positions[i]),
                   batch.output[i] != 0});
  }
  return out;
}

TokenBatch from_wire(std::span<const net::TokenInfo> tokens) {
  TokenBatch batch;
  for (const auto& t : tokens) {
    if (t.pos > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
      fail("position {} does not fit int32", t.pos);
    batch.add(t.seq_id, static_cast<int32_t>(t.pos), t.output);
  }
  return batch;
}

WireTensor make_f32_tensor(const float* rows, size_t n_rows, size_t n_embd) {
  WireTensor t;
  const size_t bytes = n_rows * n_embd * sizeof(float);
  t.body = net::Payload::allocate(bytes);
  if (bytes) std::memcpy(t.body.mutable_bytes().data(), rows, bytes);
  t.ref.dtype = net::DType::kF32;
  t.ref.shape = {n_rows, n_embd};
  t.ref.offset = 0;
  t.ref.bytes = bytes;
  return t;
}

void read_f32_tensor(const net::TensorRef& ref, const net::Payload& body, size_t n_rows, size_t n_embd,
                     std::vector<float>& out, const char* what) {
  if (ref.dtype != net::DType::kF32)
    fail("{}: hidden tensor has dtype {}, expected f32", what, net::to_string(ref.dtype));
  if (ref.shape.size() != 2 || ref.shape[0] != n_rows || ref.shape[1] != n_embd)
    fail("{}: hidden tensor shape does not match [{}, {}]", what, n_rows, n_embd);
  if (ref.offset + ref.bytes > body.size() || ref.bytes != n_rows * n_embd * sizeof(float))
    fail("{}: hidden tensor bytes {} at offset {} do not fit a body of {} bytes", what, ref.bytes, ref.offset,
         body.size());
  out.resize(n_rows * n_embd);
  if (ref.bytes) std::memcpy(out.data(), body.data() + ref.offset, ref.bytes);
}

}  // namespace baton::pipeline
