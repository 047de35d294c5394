#!/bin/bash
# Time to first token of every turn of one growing chat (bench/chat_ttft_bench.py --only-reuse:
# each turn sent once with cache_prompt: true, as a chat client does), Baton's engine-coordinator
# against llama-server on the same GGUF, threads and context, alternated per round; prints the
# per-turn medians and Baton / llama-server (issue 23: ours <= theirs on every turn).
#   bench/chat_ttft_compare.sh MODEL.gguf [ROUNDS=3] [THREADS=2] [TURNS=10]
# llama-server comes from bench/scripts/llama_build.sh (LLAMA_SERVER=path overrides it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=$1 rounds=${2:-3} threads=${3:-2} turns=${4:-10}
bin=${BATON_BIN:-$root/build/bin}
if [ -z "${LLAMA_SERVER:-}" ]; then
  source "$root/bench/scripts/llama_build.sh"
  llama_build server >&2
fi
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT
port=8431
wait_ready() {
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"ok"' && return 0
    sleep 0.2
  done
  echo "server did not become ready" >&2; return 1
}
run() {  # run NAME ROUND: one server, one chat
  local name=$1 r=$2
  if [ "$name" = baton ]; then
    "$bin/engine-coordinator" --model "$model" --port $port -t "$threads" -c 4096 -np 1 --log-level warn &
  else
    "$LLAMA_SERVER" -m "$model" --port $port -t "$threads" -c 4096 -np 1 --log-disable >/dev/null 2>&1 &
  fi
  local pid=$!
  wait_ready
  python3 "$root/bench/chat_ttft_bench.py" --url "http://127.0.0.1:$port" --turns "$turns" --only-reuse --json \
    > "$out/$name-$r.json"
  kill $pid; wait $pid 2>/dev/null || true
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then run baton "$r"; run llama "$r"; else run llama "$r"; run baton "$r"; fi
  echo "round $r done ($(uptime | sed 's/.*load/load/'))" >&2
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
load = lambda n, r: json.load(open(f"{d}/{n}-{r}.json"))
b = [load("baton", r) for r in range(1, rounds + 1)]
l = [load("llama", r) for r in range(1, rounds + 1)]
print("| turn | prompt tokens (Baton / llama) | cached (Baton / llama) | TTFT Baton ms | TTFT llama-server ms | Baton / llama |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
for t in range(len(b[0])):
    tb = statistics.median(x[t]["ttft_reuse_ms"] for x in b)
    tl = statistics.median(x[t]["ttft_reuse_ms"] for x in l)
    print(f"| {t+1} | {b[0][t]['prompt_tokens']} / {l[0][t]['prompt_tokens']} | "
          f"{b[0][t]['cached_tokens']} / {l[0][t]['cached_tokens']} | {tb:.0f} | {tl:.0f} | {tb/tl:.2f} |")
PY
