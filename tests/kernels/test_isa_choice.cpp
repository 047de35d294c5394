// The tier cpuid picks and what BATON_ISA may lower it to, on the feature sets of the CPUs the
// tiers are for (the CPU running the test has one of them; these cover the others).
#include <catch2/catch.hpp>

#include <cstdlib>

#include "kernels/core/isa.h"

using baton::kernels::best_isa;
using baton::kernels::CpuFeatures;
using baton::kernels::Isa;
using baton::kernels::isa_supported;
using baton::kernels::lowered_isa;

namespace {

CpuFeatures avx2_only() {  // Haswell .. Comet Lake, Zen 1-3
  CpuFeatures f;
  f.avx2 = f.fma = f.f16c = true;
  return f;
}
CpuFeatures alder_lake() {  // 12th-14th gen, Core Ultra: AVX-VNNI, no AVX-512
  CpuFeatures f = avx2_only();
  f.avxvnni = true;
  return f;
}
CpuFeatures skylake_sp() {  // AVX-512 (+VNNI on Cascade Lake) but no AVX-VNNI
  CpuFeatures f = avx2_only();
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512vnni = true;
  return f;
}
CpuFeatures zen5() {  // both
  CpuFeatures f = skylake_sp();
  f.avxvnni = true;
  return f;
}

}  // namespace

TEST_CASE("cpuid picks avxvnni on an AVX-VNNI laptop without AVX-512, avx2 without AVX-VNNI") {
  CHECK(best_isa(alder_lake()) == Isa::kAvxVnni);
  CHECK(best_isa(avx2_only()) == Isa::kAvx2);
  CHECK(best_isa(skylake_sp()) == Isa::kAvx512);
  CHECK(best_isa(zen5()) == Isa::kAvx512);
  CHECK(best_isa(CpuFeatures{}) == Isa::kScalar);
  CpuFeatures no_fma = alder_lake();
  no_fma.fma = false;  // the AVX2 kernels need FMA: nothing but scalar
  CHECK(best_isa(no_fma) == Isa::kScalar);
}

TEST_CASE("BATON_ISA only lowers the tier, and never to one the CPU lacks") {
  CHECK(lowered_isa(zen5(), Isa::kAvxVnni) == Isa::kAvxVnni);
  CHECK(lowered_isa(zen5(), Isa::kAvx2) == Isa::kAvx2);
  CHECK(lowered_isa(alder_lake(), Isa::kAvx512) == Isa::kAvxVnni);  // never raised
  CHECK(lowered_isa(alder_lake(), Isa::kScalar) == Isa::kScalar);
  CHECK(lowered_isa(avx2_only(), Isa::kAvxVnni) == Isa::kAvx2);
  // An AVX-512 CPU without AVX-VNNI cannot run the avxvnni kernels: the tier below.
  CHECK_FALSE(isa_supported(skylake_sp(), Isa::kAvxVnni));
  CHECK(lowered_isa(skylake_sp(), Isa::kAvxVnni) == Isa::kAvx2);
}

TEST_CASE("this CPU's tier is the best one it supports") {
  const Isa best = baton::kernels::detected_isa();
  CHECK(isa_supported(best));
  CHECK(best == best_isa(baton::kernels::cpu_features()));
}

// Run by tests/kernels/cpuid_mask_isa.sh under the shared fixtures' cpuid-mask tool (a CPU without
// AVX-512, with or without AVX-VNNI): the tier cpuid picks there is BATON_EXPECT_ISA. Hidden: only
// meaningful under the mask.
TEST_CASE("under cpuid-mask, cpuid picks the expected tier", "[.cpuid-mask]") {
  const char* want = std::getenv("BATON_EXPECT_ISA");
  REQUIRE(want != nullptr);
  CHECK(baton::kernels::isa_name(baton::kernels::detected_isa()) == want);
}
