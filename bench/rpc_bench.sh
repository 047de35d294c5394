#!/bin/bash
# llama.cpp's RPC backend (2 ggml rpc-servers on loopback, layers split 11/11) vs Baton's
# 2-worker pipeline on the same split, plus single-process references of both (issue #5).
# tinyllama Q4_K_M, pp128 / tg64. Runs alternate per round; prints every run and the medians.
#
# usage: bench/rpc_bench.sh [ROUNDS=3] [OUTDIR=/tmp/rpc-bench]
# env:
#   LLAMA_SRC, LLAMA_BUILD, LLAMA_LIBS (prebuilt | source): how llama-bench and rpc-server are built,
#                see bench/scripts/llama_build.sh (default: prebuilt = node-llama-cpp's libraries of the
#                same release, binaries in /tmp/llama.cpp-build/prebuilt; logs in OUTDIR)
#   REPS         repetitions per process (default 3)
#   STAGE_THREADS threads per rpc-server / engine-worker, list (default "1 2")
#   BATON_BIN    dir of engine-bench / engine-worker (default /work/main/build/bin)
#   MODEL        gguf (default /work/models/tinyllama-Q4_K_M.gguf); ports 18451-18454
set -u
ROUNDS=${1:-3}; OUT=${2:-/tmp/rpc-bench}; mkdir -p "$OUT"
REPO=$(cd "$(dirname "$0")/.." && pwd)
STAGE_THREADS=${STAGE_THREADS:-1 2}
B=${BATON_BIN:-$REPO/build/bin}
M=${MODEL:-/work/models/tinyllama-Q4_K_M.gguf}
ARGS="-p 128 -n 64 -r ${REPS:-3} -o json"
# 22 repeating layers + the output layer = 23 "layers" for llama.cpp; layer i goes to the first
# device whose cumulative share exceeds i/23, so 10.5/12.5 puts blk 0-10 on RPC0, blk 11-21 and
# the output head on RPC1 (token embedding stays on the local CPU). Verified from the -v log below.
TS=10.5/12.5

# llama-bench and rpc-server (+ the ggml-rpc backend module): see bench/scripts/llama_build.sh
LLAMA_LOG=${LLAMA_LOG:-$OUT}
source "$REPO/bench/scripts/llama_build.sh"
llama_build bench rpc || exit 1

cat > "$OUT/cluster.yaml" <<Y
model: $M
cluster:
  insecure: true
  nodes:
    - { id: node-01, host: 127.0.0.1, port: 18453, layers: [0, 10] }
    - { id: node-02, host: 127.0.0.1, port: 18454, layers: [11, 21] }
Y
rpc_run() {  # $1 = rpc-server threads, $2 = tag, $3 = extra llama-bench args
  "$RPC_SERVER" -H 127.0.0.1 -p 18451 -t "$1" > "$OUT/rpc1.log" 2>&1 & local p1=$!
  "$RPC_SERVER" -H 127.0.0.1 -p 18452 -t "$1" > "$OUT/rpc2.log" 2>&1 & local p2=$!
  sleep 0.5
  "$LLAMA_BENCH" -m "$M" $ARGS -t 2 -ngl 99 -sm layer -ts $TS --rpc 127.0.0.1:18451,127.0.0.1:18452 $3 \
    > "$OUT/$2.json" 2> "$OUT/$2.err"
  kill $p1 $p2; wait $p1 $p2 2>/dev/null
}
cluster_run() {  # $1 = worker threads, $2 = tag
  "$B/engine-worker" --host 127.0.0.1 --port 18453 --node-id node-01 --model "$M" --threads "$1" --insecure >/dev/null 2>"$OUT/w1.log" & local p1=$!
  "$B/engine-worker" --host 127.0.0.1 --port 18454 --node-id node-02 --model "$M" --threads "$1" --insecure >/dev/null 2>"$OUT/w2.log" & local p2=$!
  sleep 0.5
  "$B/engine-bench" --config "$OUT/cluster.yaml" $ARGS -t 2 > "$OUT/$2.json" 2> "$OUT/$2.err"
  kill $p1 $p2; wait $p1 $p2 2>/dev/null
}

# One verbose RPC run (tiny sizes) to record which layers llama.cpp really put where.
ARGS_SAVE=$ARGS; ARGS="-p 8 -n 4 -r 1 -o json"; rpc_run 1 split-check -v; ARGS=$ARGS_SAVE
grep -E "assigned to device|model buffer size" "$OUT/split-check.err" > "$OUT/split.txt"
echo "llama.cpp layer placement:"; grep -c "RPC0" "$OUT/split.txt" | sed 's/^/  lines naming RPC0: /'
grep -E "layer +(0|10|11|21|22) |buffer size" "$OUT/split.txt" | sed 's/^/  /'

: > "$OUT/log"
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/log"
  "$LLAMA_BENCH" -m "$M" $ARGS -t 2 > "$OUT/llama-single-$r.json" 2> "$OUT/llama-single-$r.err"
  "$B/engine-bench" -m "$M" $ARGS -t 2 > "$OUT/baton-single-$r.json" 2> "$OUT/baton-single-$r.err"
  for t in $STAGE_THREADS; do
    rpc_run "$t" "llama-rpc-t$t-$r" ""
    cluster_run "$t" "baton-cluster-t$t-$r"
  done
done
echo "done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/log"
cat "$OUT/log"

python3 - "$OUT" <<'P'
import json, glob, os, re, statistics, sys
out = sys.argv[1]; rows = {}
for f in sorted(glob.glob(os.path.join(out, "*-[0-9]*.json"))):
    tag = re.sub(r"-\d+\.json$", "", os.path.basename(f))
    try: data = json.load(open(f))
    except Exception: print("unreadable:", f); continue
    for e in data:
        test = e.get("test") or ("pp%d" % e["n_prompt"] if e.get("n_prompt") else "tg%d" % e["n_gen"])
        rows.setdefault(tag, {}).setdefault(test, []).append(e["avg_ts"])
print("| configuration | pp128 t/s | tg64 t/s | runs (tg64) |\n| --- | ---: | ---: | --- |")
for tag in sorted(rows):
    pp, tg = rows[tag].get("pp128", []), rows[tag].get("tg64", [])
    med = lambda xs: "%.2f" % statistics.median(xs) if xs else "-"
    print("| %s | %s | %s | %s |" % (tag, med(pp), med(tg), ", ".join("%.2f" % x for x in tg)))
P
