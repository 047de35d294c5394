#!/usr/bin/env bash
# The AVX-VNNI tier's figures in docs/BENCHMARKS.md: engine-bench pp128/tg64 with BATON_ISA=avxvnni
# against BATON_ISA=avx2 and (when it can be built) llama.cpp's AVX-VNNI CPU backend, the
# `alderlake` variant of node-llama-cpp's prebuilt libraries (bench/scripts/llama_build.sh), on the
# TinyLlama-shaped random-weight model of bench/run_comparison.sh in Q4_0, Q4_K_M, Q8_0 and Q6_K.
# Runs alternate per model (bench/scripts/isa_compare.py); medians. On an AVX-512 machine with
# AVX-VNNI (Zen 4/5, Sapphire Rapids) the tier runs by lowering the ISA, and llama.cpp's alderlake
# backend is loaded alone, so it runs its AVX-VNNI code too.
# Usage: bench/vnni_comparison.sh [THREADS=2] [REPS=5]   (env: MODELS, BUILD, NO_LLAMA=1 to skip
#        llama.cpp, and LLAMA_SRC / LLAMA_BUILD of llama_build.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
THREADS="${1:-2}"
REPS="${2:-5}"
MODELS="${MODELS:-/work/models}"
BUILD="${BUILD:-$ROOT/build}"
mkdir -p "$MODELS"
grep -qw avx_vnni /proc/cpuinfo || { echo "this CPU has no AVX-VNNI" >&2; exit 1; }

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target engine-gguf engine-bench

F16="$MODELS/tinyllama-f16.gguf"
if [ ! -f "$F16" ]; then
  "$BUILD/bin/engine-gguf" synth --arch llama --n-embd 2048 --n-layer 22 --n-head 32 --n-head-kv 4 \
    --n-ff 5632 --vocab-from "$ROOT/../shared/models/llama-2-tiny-random.gguf" --type f16 -o "$F16"
fi
files=()
for type in Q4_0 Q4_K_M Q8_0 Q6_K; do
  out="$MODELS/tinyllama-$type.gguf"
  [ -f "$out" ] || "$BUILD/bin/engine-gguf" quantize -q -t "$THREADS" "$F16" "$out" "$type"
  files+=("$out")
done

llama_args=()
if [ -z "${NO_LLAMA:-}" ]; then
  ( cd "$ROOT/bench/llamacpp" && [ -d node_modules/node-llama-cpp ] || npm ci --ignore-scripts )
  source "$ROOT/bench/scripts/llama_build.sh"
  if LLAMA_LIBS=prebuilt llama_build bench && llama_cpu_variant alderlake; then
    llama_args=(--llama-bench "$LLAMA_BENCH_VARIANT" --llama-name "llama.cpp alderlake" \
                --llama-args "${LLAMA_BENCH_ARGS:-}")
  else
    echo "WARNING: no llama-bench with the alderlake backend; baton tiers only" >&2
  fi
fi

echo "## AVX-VNNI tier: BATON_ISA=avxvnni vs avx2 ${llama_args:+vs llama.cpp alderlake} (t=$THREADS, pp128/tg64, median of $REPS alternated runs; $(lscpu | sed -n 's/^Model name: *//p'); load $(cut -d' ' -f1-3 /proc/loadavg))"
python3 "$ROOT/bench/scripts/isa_compare.py" --engine-bench "$BUILD/bin/engine-bench" --isas avxvnni,avx2 \
  "${llama_args[@]}" --models "${files[@]}" -t "$THREADS" -r "$REPS" --raw "$MODELS/vnni-runs.json"
