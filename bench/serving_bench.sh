#!/usr/bin/env bash
# Serving throughput, Baton vs llama.cpp. The servers (SERVERS) are started in turn, REPS times
# alternately, and bench/http_load.py drives each with 1 and 8 concurrent streaming clients
# (/v1/completions, max_tokens N_GEN with ignore_eos, cache_prompt false: every request generates
# N_GEN tokens and recomputes its prompt on every server):
#   baton           engine-coordinator -m MODEL --slots SLOTS -c CTX -t THREADS
#   llama-server    llama.cpp's server, -np SLOTS -c SLOTS*CTX --cont-batching -t THREADS, built by
#                   bench/scripts/llama_build.sh from node-llama-cpp's llama.cpp release against its
#                   prebuilt libraries (LLAMA_LIBS=source: full -march=native build); ~15 min once
#   node-llama-cpp  bench/llamacpp/server.mjs: one llama.cpp context with SLOTS sequences through
#                   node-llama-cpp (the old reference; "llamacpp" is accepted as its old name)
# Prints every run and a median table (markdown) with the load average at the time, the completion
# tokens per request, the server's CPU time (tokens per CPU-second of the server process: less
# sensitive to a shared machine), the read bandwidth measured before each server's runs, and the
# N-vs-1-client ratio both of the medians and within each rep (adjacent runs, then the median).
# Usage: bench/serving_bench.sh [MODEL=/work/models/tinyllama-Q4_K_M.gguf] [REPS=3] [THREADS=2]
# env: BUILD (default build), CLIENTS ("1 8"), N_GEN (64), PROMPT_WORDS (24), SLOTS (8), CTX (512),
#      OUT (raw JSON lines, default /tmp/serving_bench.jsonl), SERVERS ("baton llama-server"),
#      LLAMA_SERVER_ARGS (extra llama-server arguments, e.g. "--poll 0"),
#      LLAMA_BAN_TOKENS ("3-258"): token ids llama-server's requests ban with logit_bias. Its final
#      output parse (a PEG "content-only" parser) rejects text with invalid UTF-8 and ends the stream
#      with an HTTP-500 error event; the random-weight models' byte tokens <0x00>..<0xFF> (ids 3-258 of
#      the llama vocab) produce such text in ~1 of 3 64-token requests. Empty: ban nothing.
#      LLAMA_SRC / LLAMA_BUILD / LLAMA_LIBS (see bench/scripts/llama_build.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODEL="${1:-/work/models/tinyllama-Q4_K_M.gguf}"
REPS="${2:-3}"
THREADS="${3:-2}"
BUILD="${BUILD:-$ROOT/build}"
CLIENTS="${CLIENTS:-1 8}"
N_GEN="${N_GEN:-64}"
PROMPT_WORDS="${PROMPT_WORDS:-24}"
SLOTS="${SLOTS:-8}"
CTX="${CTX:-512}"
OUT="${OUT:-/tmp/serving_bench.jsonl}"
SERVERS="${SERVERS:-baton llama-server}"
PORT=$((20000 + RANDOM % 20000))

[ -x "$BUILD/bin/engine-coordinator" ] || cmake --build "$BUILD" -j2 --target engine-coordinator
[ -x "$BUILD/bin/kernel-bench" ] || cmake --build "$BUILD" -j2 --target kernel-bench
( cd "$ROOT/bench/llamacpp" && [ -d node_modules/node-llama-cpp ] || npm ci --ignore-scripts )
SERVERS="$(echo "$SERVERS" | sed 's/\bllamacpp\b/node-llama-cpp/g')"
for server in $SERVERS; do
  case "$server" in baton|llama-server|node-llama-cpp) ;;
    *) echo "unknown server '$server' (baton llama-server node-llama-cpp)" >&2; exit 1;; esac
done
if [[ " $SERVERS " == *" llama-server "* ]]; then
  source "$ROOT/bench/scripts/llama_build.sh"
  llama_build server || exit 1
fi
: > "$OUT"

server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT
trap "exit 130" INT TERM

start_server() {  # $1 = baton | llama-server | node-llama-cpp; waits until /health answers 200
  local log="/tmp/serving_bench_$1.log"
  PORT=$((PORT + 1))  # a fresh port each time: the previous server's port may still be held
  case "$1" in
    baton)
      "$BUILD/bin/engine-coordinator" -m "$MODEL" -t "$THREADS" --slots "$SLOTS" -c "$CTX" --port "$PORT" >"$log" 2>&1 &;;
    llama-server)  # /health answers 503 while the model loads
      "$LLAMA_SERVER" -m "$MODEL" -t "$THREADS" -np "$SLOTS" -c $((SLOTS * CTX)) --cont-batching \
        ${LLAMA_SERVER_ARGS:-} --host 127.0.0.1 --port "$PORT" >"$log" 2>&1 &;;
    node-llama-cpp)
      node "$ROOT/bench/llamacpp/server.mjs" -m "$MODEL" -t "$THREADS" --parallel "$SLOTS" -c "$CTX" --port "$PORT" >"$log" 2>&1 &;;
  esac
  server_pid=$!
  for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then return 0; fi
    kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; echo "$1 server exited" >&2; exit 1; }
    sleep 0.2
  done
  echo "$1 server did not become ready" >&2
  exit 1
}

cpu_ticks() {  # user + system clock ticks of the server process (all its threads)
  awk '{print $14 + $15}' "/proc/$server_pid/stat"
}

load="$ROOT/bench/http_load.py"
for rep in $(seq 1 "$REPS"); do
  for server in $SERVERS; do
    start_server "$server"
    extra=()
    [ "$server" = llama-server ] && [ -n "${LLAMA_BAN_TOKENS-3-258}" ] && extra=(--ban-tokens "${LLAMA_BAN_TOKENS-3-258}")
    python3 "$load" --url "http://127.0.0.1:$PORT" -c 1 -n 4 --json "${extra[@]}" >/dev/null  # warm-up: page in, start threads
    # The read bandwidth of the minute (kernel-bench's read-sum, THREADS threads, ~3 s): one
    # client's rate follows it.
    bw="$("$BUILD/bin/kernel-bench" --sections membw --threads "$THREADS" --reps 3 2>/dev/null | awk '/read-sum/ {print $9}')"
    for c in $CLIENTS; do
      la="$(cut -d' ' -f1 /proc/loadavg)"
      cpu0="$(cpu_ticks)"
      line="$(python3 "$load" --url "http://127.0.0.1:$PORT" -c "$c" -n "$N_GEN" -p "$PROMPT_WORDS" --json "${extra[@]}" || true)"
      cpu="$(( $(cpu_ticks) - cpu0 ))"
      echo "{\"server\": \"$server\", \"rep\": $rep, \"load\": $la, \"read_gbs\": ${bw:-null}, \"utc\": \"$(date -u +%H:%M)\", \"cpu_seconds\": $(python3 -c "print($cpu / $(getconf CLK_TCK))"), \"run\": $line}" >>"$OUT"
      echo "rep $rep $server clients $c load $la read-sum ${bw:-?} GB/s cpu ${cpu} ticks: $line"
    done
    stop_server
  done
done

python3 - "$OUT" "$MODEL" "$THREADS" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda xs: statistics.median(xs) if xs else None
f = lambda v, d=2: "-" if v is None else "%.*f" % (d, v)
print("\nmodel %s, %s threads, median of %d alternated runs" % (sys.argv[2], sys.argv[3], max(r["rep"] for r in rows)))
print("| server | clients | aggregate tok/s | ratio vs 1 client | ratio within a rep | per-client tok/s | TTFT p50 s | TTFT p95 s | ITL p50 ms | ITL p95 ms | tok per server CPU-s | tokens/request | errors | load avg | read-sum GB/s |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---|")
# The machine's memory bandwidth drifts by minutes, and one client is bandwidth bound while 8 are
# compute bound: the ratio of a rep's two adjacent runs (median over reps) is the steadier figure.
agg_of = {(r["server"], r["rep"], r["run"]["clients"]): r["run"]["aggregate_tok_s"] for r in rows}
def rep_ratio(server, c):
    rs = [agg_of[(server, rep, c)] / agg_of[(server, rep, 1)] for (s, rep, cc) in agg_of
          if s == server and cc == c and agg_of.get((server, rep, 1))]
    return "%.2fx" % statistics.median(rs) if rs else "-"
base = {}
for server in dict.fromkeys(r["server"] for r in rows):
    for c in sorted({r["run"]["clients"] for r in rows if r["server"] == server}):
        runs = [r for r in rows if r["server"] == server and r["run"]["clients"] == c]
        g = lambda k: med([r["run"][k] for r in runs if r["run"][k] is not None])
        agg = g("aggregate_tok_s")
        if c == 1: base[server] = agg
        ratio = "%.2fx" % (agg / base[server]) if base.get(server) else "-"
        ms = lambda v: None if v is None else v * 1e3
        loads = [r["load"] for r in runs]
        per_cpu = med([r["run"]["completion_tokens"] / r["cpu_seconds"] for r in runs if r.get("cpu_seconds")])
        # completion tokens per request over all runs (every request should get max_tokens)
        per_req = sorted({r["run"]["completion_tokens"] / max(1, r["run"]["requests"] - r["run"]["errors"]) for r in runs})
        short = sum(r["run"]["short_completions"] for r in runs)
        tpr = "/".join("%g" % x for x in per_req) + (" (%d short)" % short if short else "")
        bws = [r["read_gbs"] for r in runs if r.get("read_gbs")]
        bw = "%.0f-%.0f" % (min(bws), max(bws)) if bws else "-"
        print("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %.1f-%.1f | %s |" % (
            server, c, f(agg), ratio, rep_ratio(server, c), f(g("per_client_tok_s_p50")), f(g("ttft_p50"), 3), f(g("ttft_p95"), 3),
            f(ms(g("itl_p50")), 1), f(ms(g("itl_p95")), 1), f(per_cpu), tpr, sum(r["run"]["errors"] for r in runs),
            min(loads), max(loads), bw))
EOF
