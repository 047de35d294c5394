#!/bin/bash
# Alternating single-process vs 2-worker (11/11 on loopback) engine-bench runs on tinyllama Q4_K_M.
# usage: bench/pipeline_bench.sh ROUNDS OUTDIR   (BATON_BIN=dir of the tools, MODEL=gguf; ports 18411-18412)
set -u
B=${BATON_BIN:-/work/main/build/bin}
M=${MODEL:-/work/models/tinyllama-Q4_K_M.gguf}
ROUNDS=${1:-3}; OUT=${2:-/tmp/pipeline-bench}; mkdir -p $OUT
ARGS="-p 128 -n 64 -r 3 -o json"
cat > $OUT/cluster.yaml <<Y
model: $M
cluster:
  insecure: true
  nodes:
    - { id: node-01, host: 127.0.0.1, port: 18411, layers: [0, 10] }
    - { id: node-02, host: 127.0.0.1, port: 18412, layers: [11, 21] }
Y
cluster_run() {  # $1 = worker threads, $2 = coordinator threads, $3 = tag
  $B/engine-worker --host 127.0.0.1 --port 18411 --node-id node-01 --model $M --threads $1 --insecure >/dev/null 2>$OUT/w1.log & local p1=$!
  $B/engine-worker --host 127.0.0.1 --port 18412 --node-id node-02 --model $M --threads $1 --insecure >/dev/null 2>$OUT/w2.log & local p2=$!
  sleep 0.5
  $B/engine-bench --config $OUT/cluster.yaml $ARGS -t $2 > $OUT/$3.json 2>$OUT/$3.err
  kill $p1 $p2; wait $p1 $p2 2>/dev/null
}
for r in $(seq 1 $ROUNDS); do
  echo "round $r $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
  $B/engine-bench -m $M $ARGS -t 2 > $OUT/single-t2-$r.json 2>&1
  cluster_run 1 2 cluster-w1-$r
  $B/engine-bench -m $M $ARGS -t 1 > $OUT/single-t1-$r.json 2>&1
  cluster_run 2 2 cluster-w2-$r
done
echo "done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log
