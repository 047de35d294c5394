#!/usr/bin/env bash
# The 39-laptop simulation of issue 29, on loopback and bounded in time (2-4 minutes): one
# engine-coordinator with `nodes: auto` and 39 real engine-worker processes --join'ing it (default
# 1 s heartbeats against the default 3 s timeout), a 78-layer random model (engine-gguf synth,
# n_embd 64, the stories260K vocabulary) spread over the 39 workers. It measures:
#   - time to serve (coordinator start -> "listening on"), and the progress /health answered meanwhile;
#   - heartbeat log lines over an idle window and during a stream (issue 29 saw 281-520 in 30-41 s);
#   - that a second coordinator (engine-run --config naming one of the workers) is refused,
#     naming the holder, without --take-over (and the cluster keeps serving);
#   - an undisturbed greedy stream: the reference text and token pace;
#   - kill -9 of 2 workers mid-stream, once KILL_AT tokens have arrived: kill -> `offline` ->
#     re-plan (kept / reloaded ranges) -> load committed, the stream's gap (last token before the
#     kill -> first token after the resume, SSE arrival times), and that the stream completes
#     with the reference's text;
#   - the same with 1 worker SIGSTOPped (frozen: connections open, found by the heartbeat timeout).
# Usage: bench/sim39.sh [BUILD_DIR]   env: PORT (default 45100; control = PORT+1), IDLE_S (20),
#   KILL_AT (20). Exits 1 if a check fails (take-over not refused, a stream incomplete or its text
#   different from the undisturbed run's).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
B="${1:-$ROOT/build-dev}/bin"
SHARED="${BATON_SHARED_DIR:-/work/shared}"
PORT="${PORT:-45100}"
IDLE_S="${IDLE_S:-20}"
KILL_AT="${KILL_AT:-20}"
N=39
T="$(mktemp -d /tmp/baton-sim39.XXXXXX)"
pids=()
cleanup() {
  kill "${watchdog:-0}" 2>/dev/null || true
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap "exit 124" TERM INT
( sleep 300 >/dev/null 2>&1; echo "sim39: over 300 s, stopping" >&2; kill -TERM $$ ) &
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
hb_idle_nodes=$(grep "event=heartbeat-missed" "$T/coordinator.err" | sed -n 's/.*count=\([0-9]*\).*/\1/p' | awk '{s+=$1} END {print s+0}' || true)

# A second coordinator against one of the serving cluster's workers, without --take-over: refused.
victim_port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/node-05.out" "$T/node-05.err" | head -1 || true)
cat >"$T/second.yaml" <<EOF
model: $T/m78.gguf
cluster:
  insecure: true
  connect_timeout: 5
  load_timeout: 20
  nodes:
    - { id: node-05, host: 127.0.0.1, port: $victim_port, layers: [0, 77] }
EOF
set +e
timeout 60 "$B/engine-run" --config "$T/second.yaml" -t 1 -n 4 --temp 0 -p 'Once upon a time' >"$T/second.out" 2>&1
second_rc=$?
set -e
if [ "$second_rc" -ne 0 ] && grep -q "belongs to coordinator" "$T/second.out"; then
  takeover="refused (exit $second_rc): $(grep -o "node node-05 belongs to coordinator '[^']*'" "$T/second.out" | head -1 || true)"
else
  takeover="NOT refused (exit $second_rc): $(tail -2 "$T/second.out" | tr '\n' ' ')"
fi

# One greedy stream; at its KILL_AT-th token the client itself signals the given workers, so the
# signal falls mid-stream and its time is taken on the same clock as the tokens' arrival.
stream() { # OUT SIGNAL PIDS...
  python3 - "$PORT" "$KILL_AT" "$@" <<'PY'
import json, os, sys, time, http.client
port, kill_at, out, sig = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
pids = [int(p) for p in sys.argv[5:]]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
body = json.dumps({"prompt": "Once upon a time", "max_tokens": 160, "temperature": 0, "stream": True,
                   "cache_prompt": False})
c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
r = c.getresponse()
stamps, text, finish, t_kill, error = [], "", None, None, None
for line in r:
    if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
        continue
    ev = json.loads(line[6:])
    if "error" in ev:
        error = ev["error"]
        continue
    ch = ev["choices"][0]
    if ch.get("text"):
        stamps.append(time.time() * 1000)
        text += ch["text"]
    finish = ch.get("finish_reason") or finish
    if pids and t_kill is None and len(stamps) >= kill_at:
        t_kill = time.time() * 1000
        for p in pids:
            os.kill(p, {"KILL": 9, "STOP": 19}[sig])
json.dump({"status": r.status, "stamps": stamps, "text": text, "finish": finish, "t_kill": t_kill,
           "error": error}, open(out, "w"))
PY
}

# The coordinator's log lines start with their UTC time (2026-12-02T10:48:08.066+00:00, the
# log format of every tool): the first line at or after $2 (epoch ms) matching $1 -> epoch ms.
line_ms() {
  grep "$1" "$T/coordinator.err" | while read -r l; do
    ts=$(echo "$l" | sed -n 's/^\([0-9-]*T[0-9:.]*[+-][0-9:]*\) .*/\1/p')
    [ -n "$ts" ] || continue
    ms=$(date -d "$ts" +%s%3N 2>/dev/null) || continue
    if [ "$ms" -ge "$2" ]; then echo "$ms"; break; fi
  done || true
}
replan_after() { # the counts of the first `event=re-plan nodes=` line at or after $1 (epoch ms)
  grep "event=re-plan nodes=" "$T/coordinator.err" | while read -r l; do
    ts=$(echo "$l" | sed -n 's/^\([0-9-]*T[0-9:.]*[+-][0-9:]*\) .*/\1/p')
    ms=$(date -d "$ts" +%s%3N 2>/dev/null) || continue
    if [ "$ms" -ge "$1" ]; then
      echo "$l" | sed -n 's/.*\(event=re-plan nodes=[0-9]* kept=[0-9]* reloaded=[0-9]*\).*/\1/p'
      break
    fi
  done || true
}
wait_serving() { # until /health is 200 again (at most 30 s)
  for _ in $(seq 1 300); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' -m 1 "http://127.0.0.1:$PORT/health")" = 200 ] && return 0
    sleep 0.1
  done
  return 1
}
report() { # NAME JSON: the phase's figures, from the client's and the coordinator's clocks
  local name=$1 json=$2 tk t_off t_rp t_lc
  tk=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["t_kill"] or 0))' "$json")
  t_off=$(line_ms "event=offline" "$((tk - 2))")
  t_rp=$(line_ms "event=re-plan nodes=" "$((tk - 2))")
  t_lc=$(line_ms "event=load-committed" "$((tk - 2))")
  python3 - "$T/ref.json" "$json" "$name" "${t_off:-0}" "${t_rp:-0}" "${t_lc:-0}" "$(replan_after "$((tk - 2))")" <<'PY'
import json, sys
ref, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
name, t_off, t_rp, t_lc, replan = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
tk, ev = s["t_kill"], s["stamps"]
if tk is None:
    print(f"{name}: the signal was never sent ({len(ev)} tokens, HTTP {s['status']}, error {s['error']})")
    sys.exit(1)
before, after = [e for e in ev if e <= tk], [e for e in ev if e > tk]
rg = sorted(b - a for a, b in zip(ref["stamps"], ref["stamps"][1:]))
ms = lambda a, b: f"{b - a:.0f} ms" if a and b else "n/a"
print(f"{name}: signal after token {len(before)}; kill -> offline {ms(tk, t_off)}, offline -> re-plan "
      f"{ms(t_off, t_rp)}, re-plan -> load committed {ms(t_rp, t_lc)} ({replan or 'no re-plan line'})")
print(f"{name}: stream gap (last token before -> first after) "
      f"{ms(before[-1], after[0]) if before and after else 'n/a'} (signal -> first token after "
      f"{ms(tk, after[0]) if after else 'n/a'}; undisturbed median gap {rg[len(rg) // 2] if rg else 0:.0f} ms)")
same = s["text"] == ref["text"]
print(f"{name}: HTTP {s['status']}, {len(ev)} tokens, finish {s['finish']}, error {s['error']}, text "
      f"{'EQUAL to' if same else 'DIFFERENT from'} the undisturbed run's ({len(ref['stamps'])} tokens, "
      f"finish {ref['finish']})")
sys.exit(0 if same and s["status"] == 200 and s["finish"] and not s["error"] and ref["status"] == 200 else 1)
PY
}

stream "$T/ref.json" none
lines_before=$(wc -l <"$T/coordinator.err")
hb_before_kill=$(grep -c "event=heartbeat-" "$T/coordinator.err" || true)
stream "$T/kill.json" KILL "$(worker_pid 10)" "$(worker_pid 25)"
wait_serving || echo "sim39: not serving 30 s after the kills" >&2
stream "$T/stop.json" STOP "$(worker_pid 17)"
wait_serving || echo "sim39: not serving 30 s after the stop" >&2
sleep 1
hb_total=$(grep -c "event=heartbeat-" "$T/coordinator.err" || true)
lines_faults=$(($(wc -l <"$T/coordinator.err") - lines_before))
t_end=$(now_ms)

echo "serve: $((t_serving - t_start)) ms from start to 'listening' ($N workers joined, planned, loaded)"
echo "/health while loading: ${health_loading:-none seen}"
echo "takeover without --take-over: $takeover"
echo "heartbeat log lines: $hb_idle in ${IDLE_S} s idle (nodes named in missed lines: ${hb_idle_nodes:-0}), $hb_total in the whole run ($(((t_end - t_serving) / 1000)) s serving), $((hb_total - hb_before_kill)) from the first kill on"
echo "coordinator log: $lines_faults lines from the first kill to the end, $(wc -l <"$T/coordinator.err") in all"
failed=0
case "$takeover" in refused*) ;; *) failed=1 ;; esac
report "kill -9 x2" "$T/kill.json" || failed=1
report "SIGSTOP x1" "$T/stop.json" || failed=1
echo "logs: $T"
[ "$failed" = 0 ] && echo "sim39: every check passed" || echo "sim39: a check FAILED" >&2
exit "$failed"
