#!/usr/bin/env python3
"""Per-pass costs of the pipeline stages, and what they allow for pipelined prefill.

Reads engine-worker logs written with --log-level debug (one line per pass: tokens, compute
wall time, thread CPU time, idle time before it; bench/prefill_bench.sh WORKER_LOG_LEVEL=debug)
and prints, per stage, the median CPU cost of a pass by its size and a least-squares fit
cost(c) = f + t * c. CPU time is what a loaded machine distorts least: on a shared 2-vCPU VM
the wall time of a pass was 3-5x its CPU time while other sessions built.

Then the ideal speedup of S such stages over one process for prompts of N tokens cut into
pieces of c: a flow shop with no wire, no wake-ups and no coordinator,
   one process:  sum over stages of cost_s(N)          (whole chunks: one pass per stage)
   pipeline:     makespan of the pieces through the stages (every piece c_i costs cost_s(c_i))
which for equal stages is sum_i cost(c_i) + max_i cost(c_i): the largest piece is paid twice,
so no taper of equal stages beats equal pieces; only the fixed cost f of a pass and the
largest piece stand between the pipeline and S x.

usage: pass_costs.py [--prompts 128,512,2048] [--pieces 8,16,32,64] STAGE0.log STAGE1.log ...
  (one log per stage, in chain order; several runs of a stage: join them with a comma).
  The fit uses the sizes seen in at least 8 passes; one process is cost(N) per stage by the fit.
"""
import argparse
import re
import statistics

LINE = re.compile(r"pass \d+: (\d+) tokens from position (\d+), compute ([\d.]+) ms, cpu ([\d.]+) ms")


def costs(paths):
    by_size = {}
    for path in paths.split(","):
        for line in open(path):
            m = LINE.search(line)
            if m and int(m[1]) > 1 and int(m[2]) < 128:  # prompt passes at short context: the matmuls
                by_size.setdefault(int(m[1]), []).append(float(m[4]))
    med = {c: statistics.median(v) for c, v in sorted(by_size.items())}
    fit = {c: v for c, v in med.items() if len(by_size[c]) >= 8}  # a size seen a few times is noise
    xs, ys = list(fit), list(fit.values())
    if not xs:
        raise SystemExit(f"{paths}: no size seen in 8 passes or more")
    if len(xs) == 1:  # one size: all of it per token
        return med, 0.0, ys[0] / xs[0], {c: len(v) for c, v in by_size.items()}
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    t = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return med, max(0.0, my - t * mx), t, {c: len(v) for c, v in by_size.items()}


def makespan(pieces, stage_costs):
    done = [0.0] * len(stage_costs)  # when each stage finishes its latest piece
    for c in pieces:
        ready = 0.0
        for s, (f, t) in enumerate(stage_costs):
            done[s] = max(done[s], ready) + f + t * c
            ready = done[s]
    return done[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompts", default="128,512,2048")
    ap.add_argument("--pieces", default="8,16,32,64")
    ap.add_argument("--one", help="log of one worker holding every layer: its fit is the one process (else the stages' sum)")
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args()
    stages = []
    for i, paths in enumerate(a.logs):
        med, f, t, n = costs(paths)
        stages.append((f, t))
        sizes = ", ".join(f"{c}: {v:.1f} ms ({v / c:.2f}/token, {n[c]} passes)" for c, v in med.items())
        print(f"stage {i}: {sizes}; fit f = {f:.2f} ms + t = {t:.3f} ms/token (f/t = {f / t:.2f} tokens)")
    one_fit = None
    if a.one:
        med, f, t, n = costs(a.one)
        one_fit = (f, t)
        print(f"one process (every layer): fit f = {f:.2f} ms + t = {t:.3f} ms/token")
    print(f"ideal speedup of {len(stages)} stages over one process (flow shop, CPU costs):")
    print("| prompt | " + " | ".join(f"pieces of {c}" for c in a.pieces.split(",")) + " |")
    print("| ---: |" + " ---: |" * len(a.pieces.split(",")))
    for n in map(int, a.prompts.split(",")):
        one = sum(f * -(-n // 512) + t * n for f, t in ([one_fit] if one_fit else stages))
        row = []
        for c in map(int, a.pieces.split(",")):
            pieces = [min(c, n - k) for k in range(0, n, c)]
            row.append(f"{one / makespan(pieces, stages):.2f}x")
        print(f"| {n} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
