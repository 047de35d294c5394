// libFuzzer target: any byte string through the GGUF parser. Refusals (baton::Error) are the
// expected outcome for most inputs; a crash, a sanitizer report, another exception type, a
// hang or an out-of-memory is a bug. Accepted inputs also have their tensor views and the
// model identity computed, so the validated offsets are exercised.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/base/error.h"
#include "gguf/gguf_file.h"
#include "gguf/model_identity.h"
#include "gguf/shard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto f = baton::gguf::GgufFile::from_bytes(std::span<const uint8_t>(data, size), "fuzz.gguf");
    uint64_t sum = 0;
    for (const auto& t : f->tensors()) {
      auto d = f->tensor_data(t);
      if (!d.empty()) sum += d.front() + d.back();
      sum += t.n_rows() + t.row_bytes();
    }
    if (f->metadata().find("general.architecture")) {
      sum += baton::gguf::model_identity(*f).size();
      sum += baton::gguf::held_layers(*f).n_layer;
    }
    volatile uint64_t sink = sum;
    (void)sink;
  } catch (const baton::Error&) {
  }
  return 0;
}
