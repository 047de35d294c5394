#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds Release and an ASan+UBSan build,
# runs every test in the first, the gguf/net/engine tests in the second, and the kernel and
# engine tests once more with the scalar kernels forced (and with the AVX-VNNI tier where the CPU
# has AVX-VNNI).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup-deps.sh
jobs=${BATON_JOBS:-$(nproc)}
shared=${BATON_SHARED:-$root/../shared}
# The openai npm client test (ctest label api) runs the package pinned in its package-lock.json.
if [ ! -d tests/openai_client/node_modules ]; then
  (cd tests/openai_client && npm ci --no-audit --no-fund)
fi
# The web UI test (ctest label webui) drives Chromium with the puppeteer-core of its package-lock.json.
if [ ! -d tests/webui/node_modules ]; then
  (cd tests/webui && npm ci --no-audit --no-fund)
fi
# The Responses / LangChain / AI SDK client test (tests/responses_client), likewise.
if [ ! -d tests/responses_client/node_modules ]; then
  (cd tests/responses_client && npm ci --no-audit --no-fund)
fi

# Unity builds: each target's files compile in batches (docs/DECISIONS.md, "Build").
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBATON_UNITY_BUILD=ON -DBATON_SHARED_DIR="$shared"
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs" --timeout 600)

(cd build && BATON_ISA=scalar ctest --output-on-failure -j "$jobs" -L 'kernels|engine' --timeout 600)
# The AVX-VNNI tier (Intel 12th-gen+ laptops) under the engine's golden tests, where the CPU has
# AVX-VNNI; an AVX-512 machine picks avx512 by itself, so the tier runs only when asked for.
if grep -qw avx_vnni /proc/cpuinfo; then
  (cd build && BATON_ISA=avxvnni ctest --output-on-failure -j "$jobs" -L 'kernels|engine' --timeout 600)
fi

# -O0 without debug info (the kernels stay at -O1, kernels/CMakeLists.txt): the sanitizers need
# no more; against -O1 it compiles ~40 % faster and the tests run ~30 s longer.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O0" -DBATON_SANITIZE=ON \
  -DBATON_UNITY_BUILD=ON -DBATON_SHARED_DIR="$shared"
asan_targets=$(cd build-asan && ninja -t targets all | sed -n 's/^\(test_\(base\|gguf\|net\|engine\|tokenizer\|serving\|api\|pipeline\)\):.*/\1/p' | sort -u)
# The process tests run the tools of the same tree, so they are sanitized too.
cmake --build build-asan -j "$jobs" --target $asan_targets engine-gguf engine-coordinator engine-worker engine-run engine-bench
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest --output-on-failure -j "$jobs" -L 'base|gguf|net|engine|tokenizer|serving|api|pipeline' --timeout 900)
echo "all test stages passed"
