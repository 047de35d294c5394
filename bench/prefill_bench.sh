#!/bin/bash
# Pipelined prefill: prompt tokens/s and time to first token of one process at 1 thread vs a
# cluster of W workers x 1 thread on loopback (optionally through delay relays, 0.2 ms each way),
# engine-bench -p 128,512,2048 -n 0, runs alternated per round; prints the median ratio per length.
# usage: bench/prefill_bench.sh [ROUNDS=3] [WORKERS=2] [DELAY_MS=0] [OUTDIR=/tmp/prefill-bench]
#   env: BATON_BIN (dir of the tools), MODEL (gguf; default the 1.1B-shaped Q4_K_M of
#   bench/run_comparison.sh), PROMPTS (default 128,512,2048), CHUNK (--prefill-chunk, default auto),
#   MAX_IN_FLIGHT (--max-in-flight: passes in flight, default the chain's one per stage),
#   WORKER_LOG_LEVEL (debug: per-pass times for bench/scripts/pass_costs.py),
#   PORT (first worker port, default 18461; relays at PORT+20..)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
B=${BATON_BIN:-$ROOT/build/bin}
M=${MODEL:-/work/models/tinyllama-Q4_K_M.gguf}
ROUNDS=${1:-3}; W=${2:-2}; DELAY=${3:-0}; OUT=${4:-/tmp/prefill-bench}
PROMPTS=${PROMPTS:-128,512,2048}
CHUNK=${CHUNK:-0}
PORT=${PORT:-18461}
MAX_IN_FLIGHT=${MAX_IN_FLIGHT:-0}
WORKER_LOG_LEVEL=${WORKER_LOG_LEVEL:-info}
mkdir -p "$OUT"
n_layer=$("$B/engine-gguf" info "$M" 2>/dev/null | awk '/block_count/{n=$NF} END{print n}')
[ -n "$n_layer" ] || { echo "cannot read the layer count of $M" >&2; exit 1; }
{
  echo "model: $M"; echo "cluster:"; echo "  insecure: true"; echo "  nodes:"
  for i in $(seq 0 $((W - 1))); do
    first=$((i * n_layer / W)); last=$(((i + 1) * n_layer / W - 1))
    port=$((PORT + i)); if [ "$DELAY" != 0 ]; then port=$((PORT + 20 + i)); fi
    echo "    - { id: node-0$((i + 1)), host: 127.0.0.1, port: $port, layers: [$first, $last] }"
  done
} > "$OUT/cluster.yaml"
pids=()
cleanup() { if [ ${#pids[@]} -gt 0 ]; then kill "${pids[@]}" 2>/dev/null || true; fi; wait 2>/dev/null || true; }
trap cleanup EXIT
cluster_run() {  # $1 = tag
  pids=()
  for i in $(seq 0 $((W - 1))); do
    "$B/engine-worker" --host 127.0.0.1 --port $((PORT + i)) --node-id node-0$((i + 1)) --model "$M" --threads 1 \
      --insecure --log-level "$WORKER_LOG_LEVEL" >/dev/null 2>"$OUT/w$i-$1.log" & pids+=($!)
    if [ "$DELAY" != 0 ]; then
      python3 "$ROOT/bench/scripts/delay_relay.py" $((PORT + 20 + i)) $((PORT + i)) "$DELAY" & pids+=($!)
    fi
  done
  sleep 1
  "$B/engine-bench" --config "$OUT/cluster.yaml" -p "$PROMPTS" -n 0 -r 2 -t 1 --prefill-chunk "$CHUNK" \
    --max-in-flight "$MAX_IN_FLIGHT" -o json > "$OUT/$1.json" 2>"$OUT/$1.err"
  cleanup; pids=()
}
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/log"
  "$B/engine-bench" -m "$M" -p "$PROMPTS" -n 0 -r 2 -t 1 -o json > "$OUT/single-$r.json" 2>"$OUT/single-$r.err"
  cluster_run "cluster-$r"
done
echo "done $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT/log"
python3 - "$OUT" "$ROUNDS" "$W" "$DELAY" <<'PY'
import json, statistics, sys
out, rounds, w, delay = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def load(name):
    return {r["test"]: r["avg_ts"] for r in json.load(open(f"{out}/{name}.json"))}
single = [load(f"single-{r}") for r in range(1, rounds + 1)]
cluster = [load(f"cluster-{r}") for r in range(1, rounds + 1)]
print(f"| prompt | one process t=1 (t/s) | {w} workers x 1 thread{' + ' + delay + ' ms relays' if delay != '0' else ''} (t/s) | ratio (median of per-round) | TTFT one / cluster (ms) |")
print("| --- | ---: | ---: | ---: | ---: |")
for test in single[0]:
    s = statistics.median(x[test] for x in single)
    c = statistics.median(x[test] for x in cluster)
    ratio = statistics.median(cl[test] / si[test] for si, cl in zip(single, cluster))
    n = int(test[2:].split()[0])
    print(f"| {test} | {s:.1f} | {c:.1f} | {ratio:.2f} | {1000*n/s:.0f} / {1000*n/c:.0f} |")
PY
