#!/usr/bin/env python3
"""engine-bench vs llama.cpp on the same GGUF files.

The llama.cpp reference (--reference):
  bench  llama.cpp's own llama-bench (--llama-bench BIN, built by bench/scripts/llama_build.sh from
         the release node-llama-cpp ships, linked against its prebuilt libraries). Default when
         --llama-bench is given.
  node   bench/llamacpp/bench.mjs through node-llama-cpp (same prebuilt libraries; its decode loop
         runs through the Node binding and understates llama.cpp's token generation).
Runs are ALTERNATED (baton, llama.cpp, baton, ...) with one repetition per process (each tool does
its own warm-up first), so drifting load on a shared machine hits both alike; the table shows the
median over runs and each process's peak RSS (/usr/bin/time). GB/s for llama.cpp uses the
layer-weight bytes per token that engine-bench reports (same file, same bytes per generated token).
Usage: compare.py --engine-bench BIN [--llama-bench BIN [--llama-args '--poll 0'] | --reference node]
                  --models A.gguf ... [-t 2] [-p 128] [-n 64] [-r 3] [--raw runs.json]
"""
import argparse, json, os, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_BENCH = os.path.join(HERE, "..", "llamacpp", "bench.mjs")


def run(cmd):
    """Runs cmd, returns (stdout, peak RSS MiB, seconds); raises with stderr on failure."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {err.strip()[-2000:]}")
    return out, err, time.time() - t0


def timed(cmd):
    """Wraps cmd in /usr/bin/time -f to get its peak RSS in KiB on the last stderr line."""
    out, err, secs = run(["/usr/bin/time", "-f", "MAXRSS_KB=%M"] + cmd)
    rss = None
    for line in err.splitlines():
        if line.startswith("MAXRSS_KB="):
            rss = int(line.split("=")[1]) / 1024
    return out, rss, secs


def baton_once(args, model):
    out, rss, _ = timed([args.engine_bench, "-m", model, "-p", str(args.p), "-n", str(args.n),
                         "-t", str(args.t), "-r", "1", "-o", "json"])
    res = {r["test"]: r for r in json.loads(out)}
    pp, tg = res[f"pp{args.p}"], res[f"tg{args.n}"]
    gb_per_token = tg["layer_weight_gbps"] / tg["avg_ts"]
    return {"pp": pp["avg_ts"], "tg": tg["avg_ts"], "rss": rss, "gb_per_token": gb_per_token,
            "size": pp["size"]}


def llama_bench_once(args, model):
    """One llama-bench process, one repetition of pp and tg (after llama-bench's own warm-up)."""
    out, rss, _ = timed([args.llama_bench, "-m", model, "-p", str(args.p), "-n", str(args.n),
                         "-t", str(args.t), "-r", "1", "-o", "json"] + args.llama_args.split())
    res = {}
    for e in json.loads(out):
        test = f"pp{e['n_prompt']}" if e.get("n_prompt") else f"tg{e['n_gen']}"
        res[test] = e["avg_ts"]
    return {"pp": res[f"pp{args.p}"], "tg": res[f"tg{args.n}"], "rss": rss}


def node_once(args, model):
    out, rss, _ = timed(["node", NODE_BENCH, "-m", model, "-p", str(args.p), "-n", str(args.n),
                         "-t", str(args.t), "-r", "1", "--warmup", "1"])
    j = json.loads(out.strip().splitlines()[-1])
    return {"pp": j[f"pp{args.p}"]["median"], "tg": j[f"tg{args.n}"]["median"], "rss": rss}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine-bench", required=True)
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--reference", choices=["bench", "node"],
                    help="llama.cpp reference: llama-bench (default with --llama-bench) or node-llama-cpp")
    ap.add_argument("--llama-bench", help="llama-bench binary (bench/scripts/llama_build.sh bench)")
    ap.add_argument("--llama-args", default="",
                    help="extra llama-bench arguments, e.g. '--poll 0' (threads sleep instead of spinning)")
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("-p", type=int, default=128)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--raw", help="write every run as JSON here")
    args = ap.parse_args()
    if args.reference is None:
        args.reference = "bench" if args.llama_bench else "node"
    if args.reference == "bench" and not (args.llama_bench and os.access(args.llama_bench, os.X_OK)):
        ap.error(f"--reference bench needs an executable --llama-bench (got {args.llama_bench!r})")
    llama_once = llama_bench_once if args.reference == "bench" else node_once
    ref = "llama-bench" if args.reference == "bench" else "node-llama-cpp"
    print(f"# llama.cpp reference: {ref} {args.llama_args}", file=sys.stderr, flush=True)

    raw, rows = {}, []
    for model in args.models:
        b, l = [], []
        for rep in range(args.r):
            b.append(baton_once(args, model))
            print(f"# {os.path.basename(model)} run {rep + 1}: baton pp {b[-1]['pp']:.2f} tg {b[-1]['tg']:.2f}",
                  file=sys.stderr, flush=True)
            l.append(llama_once(args, model))
            print(f"# {os.path.basename(model)} run {rep + 1}: {ref} pp {l[-1]['pp']:.2f} tg {l[-1]['tg']:.2f}", file=sys.stderr, flush=True)
        raw[model] = {"baton": b, ref: l}
        med = lambda runs, k: statistics.median(r[k] for r in runs)
        gbt = b[0]["gb_per_token"]
        rows.append((os.path.basename(model), b[0]["size"] / 2**30,
                     med(b, "pp"), med(l, "pp"), med(b, "tg"), med(l, "tg"),
                     med(b, "tg") * gbt, med(l, "tg") * gbt, max(r["rss"] for r in b) / 1024,
                     max(r["rss"] for r in l) / 1024))
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(raw, f, indent=1)
    print(f"| model | size GiB | pp{args.p} baton | pp{args.p} {ref} | pp ratio | tg{args.n} baton | "
          f"tg{args.n} {ref} | tg ratio | tg GB/s baton | tg GB/s {ref} | peak RSS baton GiB | "
          f"peak RSS {ref} GiB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for (name, size, pb, pl, tb, tl, gb, gl, rb, rl) in rows:
        print(f"| {name} | {size:.2f} | {pb:.2f} | {pl:.2f} | {pb / pl:.2f} | {tb:.2f} | {tl:.2f} | {tb / tl:.2f} | "
              f"{gb:.1f} | {gl:.1f} | {rb:.2f} | {rl:.2f} |")


if __name__ == "__main__":
    main()
