#!/usr/bin/env bash
# Quick start: builds Baton and generates a completion with an embedded default model.
# Model: the first argument if given, else ../shared/models/stories260K.gguf when it exists,
# else a small random model made with `engine-gguf synth`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup-deps.sh
jobs=${BATON_JOBS:-$(nproc)}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs" --target engine-run engine-gguf

model=${1:-}
if [ -z "$model" ]; then
  shared=${BATON_SHARED:-$root/../shared}
  if [ -f "$shared/models/stories260K.gguf" ]; then
    model="$shared/models/stories260K.gguf"
  else
    model="$root/build/synthetic-llama.gguf"
    [ -f "$model" ] || build/bin/engine-gguf synth --arch llama --n-embd 256 --n-layer 4 \
      --n-head 8 --n-head-kv 4 --n-ff 768 -o "$model"
  fi
fi
prompt=${BATON_PROMPT:-"Once upon a time"}
echo "model: $model"
build/bin/engine-run -m "$model" -p "$prompt" -n "${BATON_N:-64}"
