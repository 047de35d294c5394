#!/usr/bin/env bash
# ctest driver for the openai npm client test: starts engine-coordinator --model stories260K on a
# free port with an API key, runs `node test.mjs BASE_URL KEY`, stops the server (SIGTERM, and
# checks it exits 0).  Usage: run.sh BIN_DIR SHARED_DIR (the environment's BATON_SHARED wins)
set -euo pipefail
bin=$1
model=${BATON_SHARED:-$2}/models/stories260K.gguf
command -v node >/dev/null || { echo "node is not installed (Node 20 is needed for this test)" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules/openai" ]; then
  echo "tests/openai_client/node_modules is missing: run 'npm ci' there (scripts/test.sh does)" >&2
  exit 1
fi
out=$(mktemp)
key="openai-client-test-key"
"$bin/engine-coordinator" --model "$model" --host 127.0.0.1 --port 0 -t 1 --api-key "$key" >"$out" 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null || true; rm -f "$out"' EXIT
port=""
for _ in $(seq 1 200); do
  port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$out" | head -1)
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { cat "$out" >&2; echo "engine-coordinator exited" >&2; exit 1; }
  sleep 0.05
done
[ -n "$port" ] || { cat "$out" >&2; echo "engine-coordinator did not start" >&2; exit 1; }
status=0
timeout 60 node "$here/test.mjs" "http://127.0.0.1:$port/v1" "$key" || status=$?
kill -TERM $pid
rc=0
wait $pid || rc=$?
if [ $rc -ne 0 ]; then
  cat "$out" >&2
  echo "engine-coordinator exited with $rc after SIGTERM" >&2
  status=1
fi
exit $status
