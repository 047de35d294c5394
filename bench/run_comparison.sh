#!/usr/bin/env bash
# Reproduces the tables of docs/BENCHMARKS.md: builds the tools, makes the TinyLlama-shaped
# random-weight model and its quantizations in $MODELS (never in the repo), installs node-llama-cpp
# 3.21.1 (prebuilt CPU libraries + the sources of its llama.cpp release), builds llama.cpp's
# llama-bench from those sources against those libraries (bench/scripts/llama_build.sh, ~2 min,
# in /tmp/llama.cpp-build), then runs engine-bench and the llama.cpp reference alternately on each
# file (bench/scripts/compare.py), the same for the AVX2 builds (BATON_ISA=avx2 against llama.cpp's
# haswell CPU backend, with the prebuilt libraries), and kernel-bench's matvec cases.
# Usage: bench/run_comparison.sh [--reference bench|node] [THREADS=2] [REPS=3]   (env: MODELS, BUILD,
#        LLAMA_BENCH_ARGS e.g. "--poll 0", and LLAMA_SRC / LLAMA_BUILD / LLAMA_LIBS of llama_build.sh)
#   --reference bench  llama.cpp's llama-bench (default; falls back to node if it cannot be built)
#   --reference node   bench/llamacpp/bench.mjs through node-llama-cpp (understates llama.cpp decode)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REFERENCE=bench
if [ "${1:-}" = "--reference" ]; then REFERENCE="${2:?--reference bench|node}"; shift 2; fi
case "$REFERENCE" in bench|node) ;; *) echo "--reference bench|node, not '$REFERENCE'" >&2; exit 1;; esac
THREADS="${1:-2}"
REPS="${2:-3}"
MODELS="${MODELS:-/work/models}"
BUILD="${BUILD:-$ROOT/build}"
mkdir -p "$MODELS"

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target engine-gguf engine-bench kernel-bench

( cd "$ROOT/bench/llamacpp" && [ -d node_modules/node-llama-cpp ] || npm ci --ignore-scripts )
ref_args=(--reference node)
if [ "$REFERENCE" = bench ]; then
  source "$ROOT/bench/scripts/llama_build.sh"
  if llama_build bench; then
    ref_args=(--reference bench --llama-bench "$LLAMA_BENCH" --llama-args "${LLAMA_BENCH_ARGS:-}")
  else
    echo "WARNING: llama-bench could not be built; falling back to --reference node" >&2
  fi
fi

F16="$MODELS/tinyllama-f16.gguf"
if [ ! -f "$F16" ]; then
  "$BUILD/bin/engine-gguf" synth --arch llama --n-embd 2048 --n-layer 22 --n-head 32 --n-head-kv 4 \
    --n-ff 5632 --vocab-from "$ROOT/../shared/models/llama-2-tiny-random.gguf" --type f16 -o "$F16"
fi
files=()
for type in Q4_0 Q4_K_M Q8_0 Q5_K_M; do
  out="$MODELS/tinyllama-$type.gguf"
  [ -f "$out" ] || "$BUILD/bin/engine-gguf" quantize -q -t "$THREADS" "$F16" "$out" "$type"
  files+=("$out")
done

echo "## engine-bench vs llama.cpp (${ref_args[1]}; t=$THREADS, pp128/tg64, median of $REPS alternated runs; load $(cut -d' ' -f1-3 /proc/loadavg))"
python3 "$ROOT/bench/scripts/compare.py" --engine-bench "$BUILD/bin/engine-bench" "${ref_args[@]}" --models "${files[@]}" \
  -t "$THREADS" -r "$REPS" --raw "$MODELS/comparison-runs.json"

if [ "$REFERENCE" = bench ] && [ "${LLAMA_LIBS:-prebuilt}" = prebuilt ] && [ "${ref_args[1]}" = bench ] &&
   llama_cpu_variant haswell; then
  echo "## AVX2: BATON_ISA=avx2 engine-bench vs llama-bench with the haswell CPU backend (t=$THREADS)"
  BATON_ISA=avx2 python3 "$ROOT/bench/scripts/compare.py" --engine-bench "$BUILD/bin/engine-bench" --reference bench \
    --llama-bench "$LLAMA_BENCH_VARIANT" --llama-args "${LLAMA_BENCH_ARGS:-}" --models "${files[@]}" -t "$THREADS" \
    -r "$REPS" --raw "$MODELS/comparison-runs-avx2.json"
fi

echo "## kernel-bench matvec"
"$BUILD/bin/kernel-bench" --sections membw,matvec --types q4_0,q4_K,q6_K,q8_0,f16 --threads 1,"$THREADS" --reps 11
