#include "kernels/isa.h"

#include <cpuid.h>

#include <cstdlib>
#include <string>

#include <spdlog/spdlog.h>

namespace baton::kernels {
namespace {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512vnni = false;
};

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
  if (os_saves_zmm()) {
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512vnni = c & (1u << 11);
  }
  return f;
}

const CpuFeatures& cpu() {
  static const CpuFeatures f = read_cpu();
  return f;
}

}  // namespace

Isa detected_isa() {
  const auto& f = cpu();
  if (f.avx2 && f.fma && f.f16c && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq) return Isa::kAvx512;
  if (f.avx2 && f.fma && f.f16c) return Isa::kAvx2;
  return Isa::kScalar;
}

bool has_avx512_vnni() { return detected_isa() == Isa::kAvx512 && cpu().avx512vnni; }

Isa active_isa() {
  static const Isa isa = [] {
    Isa best = detected_isa();
    const char* env = std::getenv("BATON_ISA");
    if (!env || !*env) return best;
    auto wanted = parse_isa(env);
    if (!wanted) {
      spdlog::warn("BATON_ISA={} is not one of scalar, avx2, avx512; using {}", env, isa_name(best));
      return best;
    }
    if (static_cast<int>(*wanted) > static_cast<int>(best)) {
      spdlog::warn("BATON_ISA={} is above what this CPU supports; using {}", env, isa_name(best));
      return best;
    }
    return *wanted;
  }();
  return isa;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

std::optional<Isa> parse_isa(std::string_view name) {
  if (name == "scalar") return Isa::kScalar;
  if (name == "avx2") return Isa::kAvx2;
  if (name == "avx512") return Isa::kAvx512;
  return std::nullopt;
}

}  // namespace baton::kernels
