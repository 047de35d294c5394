#!/usr/bin/env bash
# Differential check against llama.cpp on any GGUF: for each model and prompt, Baton's
# engine-run --json (greedy) and llama.cpp's AVX2 CPU build (node-llama-cpp's prebuilt
# libggml-cpu-haswell.so, the only CPU variant in a private copy) are fed the same prompt token
# ids (Baton's tokenizer), and the top-1 log-probability of each of the first N_STEPS steps is
# compared. Prints one line per (model, prompt) with the largest difference and whether the greedy
# tokens agree. Use it on shapes and types the golden files do not cover (see docs/NUMERICS.md,
# "node-llama-cpp as an oracle", for what it showed and the one known difference).
# Usage: bench/scripts/llama_oracle.sh MODEL.gguf... [-- PROMPT...]
# env: BUILD (default build), N_STEPS (4), THREADS (Baton and llama.cpp, default 1),
#      ORACLE_DIR (default /tmp/llama-oracle: the private node-llama-cpp copy, made once)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build}"
N_STEPS="${N_STEPS:-4}"
THREADS="${THREADS:-1}"
ORACLE_DIR="${ORACLE_DIR:-/tmp/llama-oracle}"
models=() prompts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do models+=("$1"); shift; done
[ $# -gt 0 ] && shift
prompts=("$@")
[ ${#prompts[@]} -gt 0 ] || prompts=("Once upon a time there was a little" "The quick brown fox jumps over the lazy dog")
[ ${#models[@]} -gt 0 ] || { echo "usage: $0 MODEL.gguf... [-- PROMPT...]" >&2; exit 2; }

[ -x "$BUILD/bin/engine-run" ] || cmake --build "$BUILD" -j2 --target engine-run
if [ ! -d "$ORACLE_DIR/node_modules/node-llama-cpp" ]; then
  ( cd "$ROOT/bench/llamacpp" && [ -d node_modules/node-llama-cpp ] || npm ci --ignore-scripts ) >&2
  mkdir -p "$ORACLE_DIR"
  # node_modules without the GPU and non-x64 packages, then only the haswell CPU variant
  ( cd "$ROOT/bench/llamacpp" && tar --exclude='node_modules/@node-llama-cpp/linux-x64-cuda*' \
      --exclude='node_modules/@node-llama-cpp/linux-x64-vulkan' --exclude='node_modules/@node-llama-cpp/linux-arm*' \
      -cf - package.json node_modules ) | ( cd "$ORACLE_DIR" && tar xf - )
  for f in "$ORACLE_DIR"/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-*.so; do
    [ "$(basename "$f")" = libggml-cpu-haswell.so ] || rm -f "$f"
  done
fi
cp "$ROOT/bench/llamacpp/oracle.mjs" "$ORACLE_DIR/oracle.mjs"  # always the repo's current one

for m in "${models[@]}"; do
  for p in "${prompts[@]}"; do
    ids="$("$BUILD/bin/engine-run" -m "$m" -p "$p" --tokenize | tr -d '[] \n')"
    baton="$("$BUILD/bin/engine-run" -m "$m" -p "$p" -n "$N_STEPS" --temp 0 -t "$THREADS" --json)"
    llama="$(cd "$ORACLE_DIR" && ORACLE_THREADS="$THREADS" node oracle.mjs "$m" "$N_STEPS" "$ids" 2>/dev/null || true)"
    python3 - "$m" "$p" "$baton" "$llama" <<'EOF'
import json, os, sys
model, prompt, baton, llama = sys.argv[1:5]
b = json.loads(baton)["steps"]
o = [json.loads(line) for line in llama.splitlines() if line.strip()]
n = min(len(b), len(o))
same_tokens = all(b[i]["token"] == o[i]["token"] for i in range(n))
diff = max((abs(b[i]["top"][0][1] - o[i]["top"][0][1]) for i in range(n) if b[i]["top"][0][0] == o[i]["top"][0][0]), default=0.0)
print("%-28s %-45s steps %d/%d  greedy %s  max |top-1 logprob diff| %.2g" % (
    os.path.basename(model), json.dumps(prompt[:43]), n, len(b), "same" if same_tokens else "DIFFERENT", diff))
EOF
  done
done
