#!/usr/bin/env bash
# The 39-laptop simulation of issue 29, on loopback and bounded in time (about 2 minutes): one
# engine-coordinator with `nodes: auto` and 39 real engine-worker processes --join'ing it (default
# 1 s heartbeats against the default 3 s timeout), a 78-layer random model (engine-gguf synth,
# n_embd 64, the stories260K vocabulary), so 2 layers per worker. It measures:
#   - time to serve (coordinator start -> "listening on"), and the progress /health answered meanwhile;
#   - heartbeat log lines over an idle window and during a stream (issue 29 saw 281-520 in 30-41 s);
#   - kill -9 of 2 workers mid-stream: detection (kill -> registry offline lines), the re-plan
#     (kept / reloaded ranges, from the coordinator's `event=re-plan` line) and the resume
#     (kill -> the stream's next token), and that the stream completes.
# Usage: bench/sim39.sh [BUILD_DIR]   env: PORT (default 45100; control = PORT+1), IDLE_S (20)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
B="${1:-$ROOT/build-dev}/bin"
SHARED="${BATON_SHARED_DIR:-/work/shared}"
PORT="${PORT:-45100}"
IDLE_S="${IDLE_S:-20}"
N=39
T="$(mktemp -d /tmp/baton-sim39.XXXXXX)"
pids=()
cleanup() {
  kill "${watchdog:-0}" 2>/dev/null || true
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
( sleep 200; echo "sim39: over 200 s, stopping" >&2; kill -TERM $$ ) 2>/dev/null &
watchdog=$!
now_ms() { date +%s%3N; }

"$B/engine-gguf" synth --arch llama --n-embd 64 --n-layer 78 --n-head 4 --n-ff 128 --ctx 512 \
  --vocab-from "$SHARED/models/stories260K.gguf" -o "$T/m78.gguf" >/dev/null
cat >"$T/cluster.yaml" <<EOF
model: $T/m78.gguf
cluster:
  master: { host: 127.0.0.1, port: $PORT }
  insecure: true
  nodes: auto
  min_nodes: $N
  join_timeout: 60
  registry_file: $T/nodes.json
EOF

t_start=$(now_ms)
"$B/engine-coordinator" --config "$T/cluster.yaml" -t 1 --slots 1 --ctx 256 \
  >"$T/coordinator.out" 2>"$T/coordinator.err" &
pids+=($!)
for i in $(seq -w 0 $((N - 1))); do
  "$B/engine-worker" --host 127.0.0.1 --port 0 --node-id "node-$i" --model "$T/m78.gguf" --threads 1 \
    --insecure --join "127.0.0.1:$((PORT + 1))" >"$T/node-$i.out" 2>"$T/node-$i.err" &
  pids+=($!)
done
worker_pid() { sed -n "$((10#$1 + 2))p" <(printf '%s\n' "${pids[@]}"); }

# While it waits and loads: /health answers 503 "loading" with progress.
health_loading=""
for _ in $(seq 1 900); do
  grep -q "listening on http://" "$T/coordinator.out" 2>/dev/null && break
  if [ -z "$health_loading" ]; then
    h=$(curl -s -m 1 "http://127.0.0.1:$PORT/health" || true)
    case "$h" in *'"loading"'*) health_loading="$h" ;; esac
  fi
  sleep 0.1
done
grep -q "listening on http://" "$T/coordinator.out" || { echo "the coordinator did not serve within 90 s" >&2; tail -5 "$T/coordinator.err" >&2; exit 1; }
t_serving=$(now_ms)

# Idle: heartbeats only.
hb_before=$(grep -c "event=heartbeat-" "$T/coordinator.err" || true)
sleep "$IDLE_S"
hb_idle=$(( $(grep -c "event=heartbeat-" "$T/coordinator.err" || true) - hb_before ))
hb_idle_nodes=$(grep "event=heartbeat-missed" "$T/coordinator.err" | sed -n 's/.*count=\([0-9]*\).*/\1/p' | awk '{s+=$1} END {print s+0}')

# A stream, and 2 workers killed in it.
python3 - "$PORT" "$T" <<'PY' &
import json, sys, time, http.client
port, tdir = int(sys.argv[1]), sys.argv[2]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
body = json.dumps({"prompt": "Once upon a time", "max_tokens": 160, "temperature": 0, "stream": True})
c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
r = c.getresponse()
stamps = []
for line in r:
    if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
        stamps.append(time.time() * 1000)
json.dump({"status": r.status, "events": stamps}, open(tdir + "/stream.json", "w"))
PY
stream_pid=$!
sleep 1.5
t_kill=$(now_ms)
kill -9 "$(worker_pid 10)" "$(worker_pid 25)"
wait "$stream_pid" || true
sleep 1

# The coordinator's log lines start with their UTC time (2026-12-02T10:48:08.066+00:00, the
# log format of every tool): turn the ones we need into epoch ms.
line_ms() { # first line after the kill matching $1 -> epoch ms
  grep "$1" "$T/coordinator.err" | while read -r l; do
    ts=$(echo "$l" | sed -n 's/^\([0-9-]*T[0-9:.]*[+-][0-9:]*\) .*/\1/p')
    [ -n "$ts" ] || continue
    ms=$(date -d "$ts" +%s%3N 2>/dev/null) || continue
    if [ "$ms" -ge "$((t_kill - 1000))" ]; then echo "$ms"; break; fi
  done || true
}
t_offline=$(line_ms "event=offline")
t_replan=$(line_ms "event=re-plan nodes=")
replan_line=$(grep "event=re-plan nodes=" "$T/coordinator.err" | tail -1)
hb_total=$(grep -c "event=heartbeat-" "$T/coordinator.err" || true)
t_end=$(now_ms)

python3 - "$T" "$t_kill" <<'PY'
import json, sys
tdir, t_kill = sys.argv[1], int(sys.argv[2])
try:
    s = json.load(open(tdir + "/stream.json"))
except OSError:
    print("stream: no result (the request failed)"); sys.exit(0)
ev = s["events"]
after = [e for e in ev if e > t_kill]
gaps = [b - a for a, b in zip(ev, ev[1:])]
print(f"stream: HTTP {s['status']}, {len(ev)} events, longest pause {max(gaps) if gaps else 0:.0f} ms, "
      f"first event after the kill {after[0] - t_kill if after else -1:.0f} ms after it")
PY
echo "serve: $((t_serving - t_start)) ms from start to 'listening' ($N workers joined, planned, loaded)"
echo "/health while loading: ${health_loading:-none seen}"
echo "heartbeat log lines: $hb_idle in ${IDLE_S} s idle (nodes named in missed lines: ${hb_idle_nodes:-0}), $hb_total in the whole run ($(( (t_end - t_serving) / 1000 )) s serving)"
echo "detection: kill -> first offline line $(( ${t_offline:-0} - t_kill )) ms; kill -> re-plan line $(( ${t_replan:-0} - t_kill )) ms"
echo "re-plan: $(echo "$replan_line" | sed -n 's/.*\(event=re-plan nodes=[0-9]* kept=[0-9]* reloaded=[0-9]*\).*/\1/p')"
echo "logs: $T"
