// Which instruction-set variant of each kernel runs. cpuid decides once; the environment
// variable BATON_ISA=scalar|avx2|avxvnni|avx512 may only lower that choice (never raise it).
#pragma once

#include <optional>
#include <string_view>

namespace baton::kernels {

// Ordered: a tier may only be lowered. avxvnni sits between avx2 and avx512: the AVX2 kernels
// built with -mavxvnni (the 256-bit vpdpbusd of Intel's 12th-gen-and-later laptops, which have
// no AVX-512).
enum class Isa { kScalar = 0, kAvx2 = 1, kAvxVnni = 2, kAvx512 = 3 };

// What cpuid (and XCR0) say about the features the tiers need.
struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, avxvnni = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512vnni = false;
};
const CpuFeatures& cpu_features();  // this CPU's, read once

// avx2 = AVX2+FMA+F16C; avxvnni = avx2 + AVX-VNNI (cpuid 7.1 EAX bit 4); avx512 = avx2 + AVX-512
// F/BW/VL/DQ (AVX512-VNNI is used when has_avx512_vnni()). An AVX-512 CPU without AVX-VNNI
// (Skylake-SP, Ice Lake) does not support avxvnni.
bool isa_supported(const CpuFeatures& f, Isa isa);
Isa best_isa(const CpuFeatures& f);
// BATON_ISA=wanted on such a CPU: wanted when supported and not above best_isa(f), else the best
// supported tier below min(wanted, best_isa(f)).
Isa lowered_isa(const CpuFeatures& f, Isa wanted);

// The same for this CPU.
bool isa_supported(Isa isa);
Isa detected_isa();
bool has_avx512_vnni();
// detected_isa() lowered by BATON_ISA (lowered_isa); computed once.
Isa active_isa();
std::string_view isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);

}  // namespace baton::kernels
