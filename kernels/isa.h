// Which instruction-set variant of each kernel runs. cpuid decides once; the environment
// variable BATON_ISA=scalar|avx2|avx512 may only lower that choice (never raise it).
#pragma once

#include <optional>
#include <string_view>

namespace baton::kernels {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// avx2 = AVX2+FMA+F16C; avx512 = AVX-512 F/BW/VL/DQ (VNNI is used when has_avx512_vnni()).
Isa detected_isa();
bool has_avx512_vnni();
// detected_isa() lowered by BATON_ISA; computed once.
Isa active_isa();
std::string_view isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);

}  // namespace baton::kernels
