#!/bin/bash
# Two builds of Baton side by side (e.g. main before and after a refactor): engine-bench pp and tg
# of one process and of a 2-worker loopback cluster (each build with its own engine-workers: the
# wire protocol may differ), runs alternated A/B per round; prints medians and B / A.
# usage: bench/build_ab.sh BIN_A BIN_B [ROUNDS=3] [MODEL=/work/models/tinyllama-Q4_K_M.gguf]
#   env: PP (prompt tokens, 128), TG (generated, 32), THREADS (one process, 1), ports 18561..
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-3} M=${4:-/work/models/tinyllama-Q4_K_M.gguf}
PP=${PP:-128} TG=${TG:-32} T=${THREADS:-1}
OUT=$(mktemp -d)
pids=()
cleanup() { if [ ${#pids[@]} -gt 0 ]; then kill "${pids[@]}" 2>/dev/null || true; fi; wait 2>/dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT
n_layer=$("$A/engine-gguf" info "$M" 2>/dev/null | awk '/block_count/{n=$NF} END{print n}')
half=$((n_layer / 2))
cat > "$OUT/cluster.yaml" <<YAML
model: $M
cluster:
  insecure: true
  nodes:
    - { id: node-01, host: 127.0.0.1, port: 18561, layers: [0, $((half - 1))] }
    - { id: node-02, host: 127.0.0.1, port: 18562, layers: [$half, $((n_layer - 1))] }
YAML
run() {  # run TAG BIN ROUND
  local tag=$1 bin=$2 r=$3
  "$bin/engine-bench" -m "$M" -p "$PP" -n "$TG" -r 1 -t "$T" -o json > "$OUT/$tag-local-$r.json" 2>/dev/null
  pids=()
  for i in 1 2; do
    "$bin/engine-worker" --host 127.0.0.1 --port $((18560 + i)) --node-id node-0$i --model "$M" --threads 1 \
      --insecure >/dev/null 2>&1 & pids+=($!)
  done
  sleep 1
  "$bin/engine-bench" --config "$OUT/cluster.yaml" -p "$PP" -n "$TG" -r 1 -t 1 -o json > "$OUT/$tag-cluster-$r.json" 2>/dev/null
  kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null || true; pids=()
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then run A "$A" "$r"; run B "$B" "$r"; else run B "$B" "$r"; run A "$A" "$r"; fi
  echo "round $r ($(uptime | sed 's/.*load/load/'))" >&2
done
python3 - "$OUT" "$ROUNDS" "$PP" "$TG" <<'PY'
import json, statistics, sys, glob
out, rounds, pp, tg = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def rates(tag, where):
    res = {"pp": [], "tg": []}
    for r in range(1, rounds + 1):
        for row in json.load(open(f"{out}/{tag}-{where}-{r}.json")):
            res[row["test"][:2]].append(row["avg_ts"])
    return res
print(f"| setup | test | A t/s (median, range) | B t/s (median, range) | B / A |")
print("| --- | --- | ---: | ---: | ---: |")
for where in ("local", "cluster"):
    a, b = rates("A", where), rates("B", where)
    for kind, n in (("pp", pp), ("tg", tg)):
        ma, mb = statistics.median(a[kind]), statistics.median(b[kind])
        print(f"| {where} | {kind}{n} | {ma:.2f} ({min(a[kind]):.1f}-{max(a[kind]):.1f}) | "
              f"{mb:.2f} ({min(b[kind]):.1f}-{max(b[kind]):.1f}) | {mb / ma:.3f} |")
PY
