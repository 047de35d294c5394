#!/bin/bash
# Speculative decoding under load: aggregate tokens/s of C concurrent streams (bench/http_load.py)
# against engine-coordinator with --spec off and --spec ngram, alternated per round; prints the
# median aggregate of each, their ratio (median of per-round ratios) and the drafts sent/kept
# (from /metrics). Speculation must not cost a loaded server more than a few percent.
# usage: bench/spec_load_bench.sh MODEL [ROUNDS=3] [CLIENTS=4] [TOKENS=64] [OUTDIR=/tmp/spec-load]
#   env: BATON_BIN (dir of the tools, default build/bin), PORT (default 18591), THREADS (default 2),
#        TEMP (request temperature, default 0.8)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
B=${BATON_BIN:-$ROOT/build/bin}
M=${1:?usage: bench/spec_load_bench.sh MODEL [ROUNDS] [CLIENTS] [TOKENS] [OUTDIR]}
ROUNDS=${2:-3}; C=${3:-4}; N=${4:-64}; OUT=${5:-/tmp/spec-load}
PORT=${PORT:-18591}; THREADS=${THREADS:-2}; TEMP=${TEMP:-0.8}
mkdir -p "$OUT"
pid=
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; pid=; }
trap cleanup EXIT
run() {  # $1 = spec mode, $2 = round
  "$B/engine-coordinator" -m "$M" --port "$PORT" -t "$THREADS" --slots "$C" --spec "$1" 2>"$OUT/$1-$2.err" &
  pid=$!
  for _ in $(seq 1 200); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
  python3 "$ROOT/bench/http_load.py" --url "http://127.0.0.1:$PORT" -c "$C" -n "$N" --temperature "$TEMP" --json \
    > "$OUT/$1-$2.json"
  curl -sf "http://127.0.0.1:$PORT/metrics" | grep '^baton_spec_' > "$OUT/$1-$2.metrics" || true
  cleanup
}
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >&2
  run off "$r"
  run ngram "$r"
done
python3 - "$OUT" "$ROUNDS" "$C" "$N" "$M" <<'PY'
import json, statistics, sys
out, rounds, c, n, model = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
agg = lambda mode, r: json.load(open(f"{out}/{mode}-{r}.json"))["aggregate_tok_s"]
off = [agg("off", r) for r in range(1, rounds + 1)]
on = [agg("ngram", r) for r in range(1, rounds + 1)]
ratio = statistics.median(b / a for a, b in zip(off, on))
metrics = dict(l.split() for l in open(f"{out}/ngram-{rounds}.metrics") if l.strip())
print(f"{model}: {c} clients x {n} tokens: aggregate off {statistics.median(off):.1f} tok/s, ngram "
      f"{statistics.median(on):.1f} tok/s, ratio {ratio:.3f}; last round drafts kept "
      f"{float(metrics.get('baton_spec_accepted_tokens_total', 0)):.0f}/{float(metrics.get('baton_spec_draft_tokens_total', 0)):.0f}")
PY
