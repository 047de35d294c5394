#include "kernels/core/isa.h"

#include <cpuid.h>

#include <cstdlib>
#include <string>

#include <spdlog/spdlog.h>

namespace baton::kernels {
namespace {

bool os_saves_zmm() {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0xE6) == 0xE6;  // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM state
}

bool os_saves_ymm() {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0x6) == 0x6;
}

CpuFeatures read_cpu() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  bool osxsave = c & (1u << 27);
  f.fma = c & (1u << 12);
  f.f16c = c & (1u << 29);
  if (!osxsave || !os_saves_ymm()) return CpuFeatures{};
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  f.avx2 = b & (1u << 5);
  const unsigned max_subleaf = a;  // subleaf 0's EAX
  if (os_saves_zmm()) {
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512vnni = c & (1u << 11);
  }
  // AVX-VNNI (VEX-encoded vpdpbusd / vpdpwssd on ymm): leaf 7 subleaf 1, EAX bit 4.
  if (max_subleaf >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avxvnni = a & (1u << 4);
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = read_cpu();
  return f;
}

bool isa_supported(const CpuFeatures& f, Isa isa) {
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return avx2;
    case Isa::kAvxVnni: return avx2 && f.avxvnni;
    case Isa::kAvx512: return avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  }
  return false;
}

Isa best_isa(const CpuFeatures& f) {
  for (Isa isa : {Isa::kAvx512, Isa::kAvxVnni, Isa::kAvx2})
    if (isa_supported(f, isa)) return isa;
  return Isa::kScalar;
}

Isa lowered_isa(const CpuFeatures& f, Isa wanted) {
  Isa isa = static_cast<int>(wanted) < static_cast<int>(best_isa(f)) ? wanted : best_isa(f);
  while (!isa_supported(f, isa)) isa = static_cast<Isa>(static_cast<int>(isa) - 1);
  return isa;
}

bool isa_supported(Isa isa) { return isa_supported(cpu_features(), isa); }

Isa detected_isa() { return best_isa(cpu_features()); }

bool has_avx512_vnni() { return detected_isa() == Isa::kAvx512 && cpu_features().avx512vnni; }

Isa active_isa() {
  static const Isa isa = [] {
    const Isa best = detected_isa();
    const char* env = std::getenv("BATON_ISA");
    if (!env || !*env) return best;
    const auto wanted = parse_isa(env);
    if (!wanted) {
      spdlog::warn("BATON_ISA={} is not one of scalar, avx2, avxvnni, avx512; using {}", env, isa_name(best));
      return best;
    }
    const Isa chosen = lowered_isa(cpu_features(), *wanted);
    if (chosen != *wanted) spdlog::warn("BATON_ISA={}: this CPU does not run it; using {}", env, isa_name(chosen));
    return chosen;
  }();
  return isa;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvxVnni: return "avxvnni";
    case Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

std::optional<Isa> parse_isa(std::string_view name) {
  if (name == "scalar") return Isa::kScalar;
  if (name == "avx2") return Isa::kAvx2;
  if (name == "avxvnni") return Isa::kAvxVnni;
  if (name == "avx512") return Isa::kAvx512;
  return std::nullopt;
}

}  // namespace baton::kernels
