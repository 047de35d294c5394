#!/usr/bin/env bash
# ctest driver for the openai npm client test: starts engine-coordinator --model stories260K on a
# free port with an API key, runs `node test.mjs BASE_URL KEY`, stops the server (SIGTERM, and
# checks it exits 0); then the same against a cluster of two engine-worker processes
# (coordinator --config): chat, tools, forced tool calls and response_format through the chain.
# Usage: run.sh BIN_DIR SHARED_DIR (the environment's BATON_SHARED wins)
set -euo pipefail
bin=$1
model=${BATON_SHARED:-$2}/models/stories260K.gguf
command -v node >/dev/null || { echo "node is not installed (Node 20 is needed for this test)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules/openai" ]; then
  echo "tests/openai_client/node_modules is missing: run 'npm ci' there (scripts/test.sh does)" >&2
  exit 1
fi
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
key="openai-client-test-key"

# The port a process printed after `prefix` in its log ($1 log, $2 prefix, $3 pid).
wait_port() {
  local port=""
  for _ in $(seq 1 400); do
    port=$(sed -n "s|.*$2\([0-9]*\).*|\1|p" "$1" | head -1)
    [ -n "$port" ] && { echo "$port"; return 0; }
    kill -0 "$3" 2>/dev/null || { cat "$1" >&2; echo "process $3 exited" >&2; return 1; }
    sleep 0.05
  done
  cat "$1" >&2
  echo "no port in $1" >&2
  return 1
}
# SIGTERM, and the coordinator must exit 0.
stop_coordinator() {
  kill -TERM "$1"
  local rc=0
  wait "$1" || rc=$?
  if [ $rc -ne 0 ]; then
    cat "$2" >&2
    echo "engine-coordinator exited with $rc after SIGTERM" >&2
    exit 1
  fi
}

"$bin/engine-coordinator" --model "$model" --host 127.0.0.1 --port 0 -t 1 --api-key "$key" >"$work/local.log" 2>&1 &
local_pid=$!
pids+=($local_pid)
port=$(wait_port "$work/local.log" "listening on http://127.0.0.1:" $local_pid)
timeout 60 node "$here/test.mjs" "http://127.0.0.1:$port/v1" "$key"
stop_coordinator $local_pid "$work/local.log"

# --- a cluster of two workers ---
for id in node-01 node-02; do
  "$bin/engine-worker" --host 127.0.0.1 --port 0 --node-id "$id" --model "$model" --threads 1 --insecure \
    >"$work/$id.log" 2>&1 &
  pids+=($!)
done
p1=$(wait_port "$work/node-01.log" "listening on 127.0.0.1:" "${pids[-2]}")
p2=$(wait_port "$work/node-02.log" "listening on 127.0.0.1:" "${pids[-1]}")
cat >"$work/cluster.yaml" <<YAML
model: $model
cluster:
  insecure: true
  connect_timeout: 5
  load_timeout: 20
  nodes:
    - { id: node-01, host: 127.0.0.1, port: $p1, layers: [0, 1] }
    - { id: node-02, host: 127.0.0.1, port: $p2, layers: [2, 4] }
YAML
"$bin/engine-coordinator" --config "$work/cluster.yaml" --host 127.0.0.1 --port 0 -t 1 --api-key "$key" \
  >"$work/cluster.log" 2>&1 &
cluster_pid=$!
pids+=($cluster_pid)
port=$(wait_port "$work/cluster.log" "listening on http://127.0.0.1:" $cluster_pid)
timeout 120 node "$here/test.mjs" "http://127.0.0.1:$port/v1" "$key"
stop_coordinator $cluster_pid "$work/cluster.log"
echo "ok - the openai client against one process and against a 2-worker cluster"
