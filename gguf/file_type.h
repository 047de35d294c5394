// llama.cpp's file types (llama_ftype, written as general.file_type): the one table of their
// names. The quantizer (engine/quantize), GET /v1/models and engine-bench all name them from here.
#pragma once

#include <cstdint>
#include <string_view>

namespace baton::gguf {

// "Q4_K_M" for 15, ...; "" for an id llama.cpp does not define (or has retired, like 4..6).
std::string_view file_type_name(uint64_t ftype);

}  // namespace baton::gguf
