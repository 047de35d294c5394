#!/bin/sh
# The tier cpuid picks on a CPU without AVX-512: runs test_kernels' hidden [cpuid-mask] case under
# the shared fixtures' cpuid-mask tool, which makes CPUID report no AVX-512 (MODE --keep-vnni: an
# Intel 12th-gen laptop, expect avxvnni; --no-vnni: AVX2 only, expect avx2).
# Usage: cpuid_mask_isa.sh CPUID_MASK MODE TEST_KERNELS EXPECTED_ISA
# Exit 77 (ctest: skipped) where the tool cannot run: it needs cpuid faulting (cpuid_fault in
# /proc/cpuinfo), which many VMs lack.
set -u
mask=$1 mode=$2 tests=$3 want=$4
"$mask" "$mode" -- true 2>/dev/null
if [ $? -eq 2 ]; then
  echo "cpuid-mask cannot run here (no cpuid faulting?): skipped" >&2
  exit 77
fi
BATON_EXPECT_ISA=$want exec "$mask" "$mode" -- "$tests" "[cpuid-mask]"
