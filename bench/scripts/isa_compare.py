#!/usr/bin/env python3
"""engine-bench under several BATON_ISA tiers (and optionally one llama-bench) on the same GGUF files.

Runs are ALTERNATED per model (tier A, tier B, ..., llama-bench, then again), one repetition per
process, so drifting load on a shared machine hits every column alike; the table shows medians and
each column's ratio to the first tier's. Used by bench/vnni_comparison.sh (avxvnni vs avx2 vs
llama.cpp's alderlake CPU backend).
Usage: isa_compare.py --engine-bench BIN --isas avxvnni,avx2 [--llama-bench BIN [--llama-name N]]
                      --models A.gguf ... [-t 2] [-p 128] [-n 64] [-r 5] [--raw runs.json]
"""
import argparse, json, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import baton_once, llama_bench_once  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine-bench", required=True)
    ap.add_argument("--isas", required=True, help="comma-separated BATON_ISA values; the first is the base")
    ap.add_argument("--llama-bench", help="a llama-bench binary to alternate with (e.g. one CPU variant)")
    ap.add_argument("--llama-name", default="llama.cpp")
    ap.add_argument("--llama-args", default="")
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("-p", type=int, default=128)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("--raw", help="write every run as JSON here")
    args = ap.parse_args()
    isas = args.isas.split(",")
    cols = [f"baton {i}" for i in isas] + ([args.llama_name] if args.llama_bench else [])

    raw, rows = {}, []
    for model in args.models:
        runs = {c: [] for c in cols}
        for rep in range(args.r):
            for isa in isas:
                os.environ["BATON_ISA"] = isa
                runs[f"baton {isa}"].append(baton_once(args, model))
            os.environ.pop("BATON_ISA", None)
            if args.llama_bench:
                runs[args.llama_name].append(llama_bench_once(args, model))
            print(f"# {os.path.basename(model)} run {rep + 1}: " +
                  ", ".join(f"{c} pp {runs[c][-1]['pp']:.2f} tg {runs[c][-1]['tg']:.2f}" for c in cols),
                  file=sys.stderr, flush=True)
        raw[model] = runs
        med = {c: (statistics.median(r["pp"] for r in runs[c]), statistics.median(r["tg"] for r in runs[c]))
               for c in cols}
        rows.append((os.path.basename(model), med))
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(raw, f, indent=1)
    base = cols[0]
    head = ["model"] + [f"pp{args.p} {c}" for c in cols] + [f"pp {base} / {c}" for c in cols[1:]] + \
           [f"tg{args.n} {c}" for c in cols] + [f"tg {base} / {c}" for c in cols[1:]]
    print("| " + " | ".join(head) + " |")
    print("| --- |" + " ---: |" * (len(head) - 1))
    for name, med in rows:
        cells = [name] + [f"{med[c][0]:.2f}" for c in cols] + [f"{med[base][0] / med[c][0]:.2f}" for c in cols[1:]] + \
                [f"{med[c][1]:.2f}" for c in cols] + [f"{med[base][1] / med[c][1]:.2f}" for c in cols[1:]]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
