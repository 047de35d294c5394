#!/usr/bin/env bash
# Quick start: builds Baton, starts two engine-workers on loopback, and generates a completion
# with `engine-run --config` across them (layers split between the two workers), printing the
# text and its tokens/s; then serves the same cluster with engine-coordinator's OpenAI-compatible
# HTTP API and asks it for a completion with curl. Everything is stopped on exit.
# Model: the first argument if given, else ../shared/models/stories260K.gguf when it exists,
# else a small random model made with `engine-gguf synth`.
# --serve: skip the demo; keep the cluster up behind engine-coordinator (port BATON_PORT, default
# 8021) until Ctrl-C, and print the URL of its chat page and dashboard.
set -euo pipefail
serve=0
args=()
for a in "$@"; do
  if [ "$a" = --serve ]; then serve=1; else args+=("$a"); fi
done
set -- "${args[@]+"${args[@]}"}"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/setup-deps.sh
jobs=${BATON_JOBS:-$(nproc)}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# Every tool the README lists in build/bin.
cmake --build build -j "$jobs" --target engine-run engine-gguf engine-worker engine-coordinator engine-ctl engine-bench

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
model=$(cd "$(dirname "$model")" && pwd)/$(basename "$model")
prompt=${BATON_PROMPT:-"Once upon a time"}
echo "model: $model"

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# A fresh random cluster secret, readable only by us.
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/cluster.secret")

ports=()
for i in 1 2; do
  build/bin/engine-worker --host 127.0.0.1 --port 0 --node-id "node-0$i" --model "$model" \
    --secret-file "$work/cluster.secret" >"$work/node-0$i.out" 2>"$work/node-0$i.log" &
  pids+=($!)
done
for i in 1 2; do
  for _ in $(seq 100); do
    grep -q "listening on" "$work/node-0$i.out" 2>/dev/null && break
    sleep 0.1
  done
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/node-0$i.out")
  [ -n "$port" ] || { echo "node-0$i did not start:"; cat "$work/node-0$i.log"; exit 1; }
  ports+=("$port")
done

cat > "$work/cluster.yaml" <<YAML
model: $model
cluster:
  secret_file: cluster.secret
  connect_timeout: 10
  nodes:
    - { id: node-01, host: 127.0.0.1, port: ${ports[0]}, layers: auto }
    - { id: node-02, host: 127.0.0.1, port: ${ports[1]}, layers: auto }
YAML
echo "cluster: node-01 on 127.0.0.1:${ports[0]}, node-02 on 127.0.0.1:${ports[1]}"
if [ "$serve" = 1 ]; then
  build/bin/engine-coordinator --config "$work/cluster.yaml" --port "${BATON_PORT:-8021}" &
  pids+=($!)
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:${BATON_PORT:-8021}/health" >/dev/null 2>&1 && break
    kill -0 "${pids[-1]}" 2>/dev/null || { echo "engine-coordinator did not start"; exit 1; }
    sleep 0.1
  done
  echo
  echo "Open http://127.0.0.1:${BATON_PORT:-8021}/ to chat, http://127.0.0.1:${BATON_PORT:-8021}/dashboard to watch the two workers."
  echo "Ctrl-C stops the cluster."
  wait "${pids[-1]}" || true
  exit 0
fi
build/bin/engine-run --config "$work/cluster.yaml" -p "$prompt" -n "${BATON_N:-64}"

# The same cluster behind the OpenAI-compatible HTTP API, asked with curl.
build/bin/engine-coordinator --config "$work/cluster.yaml" --port 0 >"$work/coordinator.out" 2>"$work/coordinator.log" &
pids+=($!)
url=""
for _ in $(seq 300); do
  url=$(sed -n 's/^listening on \(http:[^ ]*\).*/\1/p' "$work/coordinator.out")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "engine-coordinator did not start:"; cat "$work/coordinator.log"; exit 1; }
echo
echo "engine-coordinator serving the cluster at $url; POST /v1/completions:"
curl -sS "$url/v1/completions" -H 'Content-Type: application/json' \
  -d "{\"prompt\": \"$prompt\", \"max_tokens\": 32, \"temperature\": 0}"
echo
