#!/usr/bin/env bash
# ctest driver for the Responses / native / CORS client test (test.mjs, with tools.mjs: function
# tools, forced calls and structured output through the openai SDK, LangChain and the AI SDK): runs it against
# engine-coordinator --model stories260K (one process, with an API key and --cors-origin), checks
# the CORS answers with curl, then runs it again against a cluster of two engine-worker processes
# (coordinator --config) and checks both gave the same greedy texts. Stops every process it
# started (the coordinators by SIGTERM, checking they exit 0).
# Usage: run.sh BIN_DIR SHARED_DIR (the environment's BATON_SHARED wins)
set -euo pipefail
bin=$1
model=${BATON_SHARED:-$2}/models/stories260K.gguf
command -v node >/dev/null || { echo "node is not installed (Node 20 is needed for this test)" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is not installed" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules/@ai-sdk/openai" ]; then
  echo "tests/responses_client/node_modules is missing: run 'npm ci' there (scripts/test.sh does)" >&2
  exit 1
fi
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
key="responses-client-test-key"

# Waits for "$2" followed by a port in file $1 (written by process $3); prints the port.
wait_port() {
  local port=""
  for _ in $(seq 1 400); do
    port=$(sed -n "s|.*$2\([0-9]*\).*|\1|p" "$1" | head -1)
    [ -n "$port" ] && { echo "$port"; return 0; }
    kill -0 "$3" 2>/dev/null || { cat "$1" >&2; echo "process $3 exited" >&2; return 1; }
    sleep 0.05
  done
  cat "$1" >&2
  echo "no '$2' line in time" >&2
  return 1
}

stop_coordinator() {
  local rc=0
  kill -TERM "$1"
  wait "$1" || rc=$?
  if [ $rc -ne 0 ]; then cat "$2" >&2; echo "engine-coordinator exited with $rc after SIGTERM" >&2; return 1; fi
}

# --- one process ---
"$bin/engine-coordinator" --model "$model" --host 127.0.0.1 --port 0 -t 1 --api-key "$key" \
  --cors-origin http://app.example --cors-origin 'http://other.example, http://localhost:5173' >"$work/local.log" 2>&1 &
local_pid=$!
pids+=($local_pid)
port=$(wait_port "$work/local.log" "listening on http://127.0.0.1:" $local_pid)
url="http://127.0.0.1:$port"
timeout 120 node "$here/test.mjs" "$url/v1" "$key" "$work/local.json"

# CORS: an allowed origin's preflight needs no key and gets 204 with the Access-Control-* headers;
# its requests carry Access-Control-Allow-Origin; other origins get none.
pre=$(curl -s -i -X OPTIONS "$url/v1/responses" -H 'Origin: http://localhost:5173' \
        -H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: authorization, content-type, x-stainless-os')
echo "$pre" | grep -q '^HTTP/1.1 204' || { echo "preflight: $pre" >&2; exit 1; }
echo "$pre" | grep -qi '^Access-Control-Allow-Origin: http://localhost:5173' || { echo "preflight: $pre" >&2; exit 1; }
echo "$pre" | grep -qi '^Access-Control-Allow-Methods: .*POST' || { echo "preflight: $pre" >&2; exit 1; }
echo "$pre" | grep -qi '^Access-Control-Allow-Headers: Authorization, Content-Type, x-stainless-os' || { echo "preflight: $pre" >&2; exit 1; }
got=$(curl -s -i "$url/v1/models" -H "Authorization: Bearer $key" -H 'Origin: http://app.example')
echo "$got" | grep -qi '^Access-Control-Allow-Origin: http://app.example' || { echo "GET: $got" >&2; exit 1; }
other=$(curl -s -i "$url/v1/models" -H "Authorization: Bearer $key" -H 'Origin: http://evil.example')
if echo "$other" | grep -qi '^Access-Control-Allow-Origin'; then echo "other origin allowed: $other" >&2; exit 1; fi
# The native completion by curl, as llama-server's README shows it.
curl -s "$url/completion" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"prompt": "Once upon a time", "n_predict": 4}' | grep -q '"stop_type":"limit"' || { echo "curl /completion failed" >&2; exit 1; }
echo "ok - CORS preflight and headers, /completion by curl"
stop_coordinator $local_pid "$work/local.log"

# --- a cluster of two workers ---
start_worker() {
  "$bin/engine-worker" --host 127.0.0.1 --port 0 --node-id "$1" --model "$model" --threads 1 --insecure \
    >"$work/$1.log" 2>&1 &
  pids+=($!)
}
start_worker node-01
w1=${pids[-1]}
start_worker node-02
w2=${pids[-1]}
p1=$(wait_port "$work/node-01.log" "listening on 127.0.0.1:" $w1)
p2=$(wait_port "$work/node-02.log" "listening on 127.0.0.1:" $w2)
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
timeout 120 node "$here/test.mjs" "http://127.0.0.1:$port/v1" "$key" "$work/cluster.json"
stop_coordinator $cluster_pid "$work/cluster.log"
if ! diff "$work/local.json" "$work/cluster.json" >&2; then
  echo "the cluster's greedy texts differ from one process's" >&2
  exit 1
fi
echo "ok - the cluster gave the same greedy texts as one process"
