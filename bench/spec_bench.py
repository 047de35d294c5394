#!/usr/bin/env python3
"""Speculative decoding (n-gram drafts): one stream's generated tokens/s with --spec ngram vs
--spec off, on one process or a cluster of W workers on loopback (optionally each behind a
delay relay adding DELAY_MS each way), through engine-run --json. Runs alternate off/on per
round; prints the median tokens/s of each, their ratio (median of the per-round ratios), the
draft acceptance rate and the tokens per trip through the layers. Checks that both runs give the
same tokens (speculation is exact): a difference fails the script.

Prompts: "quote" repeats a passage and asks for it again (the continuation is in the prompt:
what editing code or quoting a document looks like), "fresh" is a list of unrelated words (no
repetition to find). --prompt-file adds one of your own.

  bench/spec_bench.py --model M.gguf [--workers 2] [--delay-ms 0.2] [--rounds 3] [-n 128]
Environment: BATON_BIN (default build/bin). Ports 18561.. (workers) and 18581.. (relays).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("BATON_BIN", os.path.join(ROOT, "build", "bin"))

PASSAGE = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
           "friends. One day, she saw a big red ball under a tree. She ran to the ball and picked it up. It was "
           "shiny and new. Lily wanted to show it to her mom, so she ran home as fast as she could. ")
WORDS = ("river candle orbit walnut fabric ledger violet piston harbor meadow quartz saddle tunnel vessel "
         "glacier lantern mosaic pepper rocket summit thimble velvet willow zephyr anchor basket cobalt").split()


def prompts(args):
    rng = random.Random(7)
    out = {"quote": PASSAGE * 3 + PASSAGE[:60],
           "fresh": " ".join(rng.choice(WORDS) for _ in range(60))}
    if args.prompt_file:
        out[os.path.basename(args.prompt_file)] = open(args.prompt_file).read()
    return out


def n_layer_of(model):
    info = subprocess.run([os.path.join(BIN, "engine-gguf"), "info", model], capture_output=True, text=True).stdout
    for line in info.splitlines():
        if "block_count" in line:
            return int(line.split()[-1])
    raise SystemExit(f"cannot read the layer count of {model}")


class Cluster:
    def __init__(self, args, tmp):
        self.args, self.procs = args, []
        n = n_layer_of(args.model)
        w = args.workers
        lines = [f"model: {args.model}", "cluster:", "  insecure: true", "  nodes:"]
        for i in range(w):
            port = (18581 if args.delay_ms else 18561) + i
            lines.append(f"    - {{ id: node-0{i + 1}, host: 127.0.0.1, port: {port}, "
                         f"layers: [{i * n // w}, {(i + 1) * n // w - 1}] }}")
        self.config = os.path.join(tmp, "cluster.yaml")
        open(self.config, "w").write("\n".join(lines) + "\n")

    def start(self):
        for i in range(self.args.workers):
            self.procs.append(subprocess.Popen(
                [os.path.join(BIN, "engine-worker"), "--host", "127.0.0.1", "--port", str(18561 + i), "--node-id",
                 f"node-0{i + 1}", "--model", self.args.model, "--threads", str(self.args.threads), "--insecure"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            if self.args.delay_ms:
                self.procs.append(subprocess.Popen(
                    [sys.executable, os.path.join(ROOT, "bench", "scripts", "delay_relay.py"), str(18581 + i),
                     str(18561 + i), str(self.args.delay_ms)]))
        time.sleep(1.0)

    def stop(self):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        self.procs = []


def run(args, where, prompt, spec):
    cmd = [os.path.join(BIN, "engine-run"), *where, "-p", prompt, "-n", str(args.n_predict), "--temp", "0",
           "--ignore-eos", "--json", "--top-logprobs", "0", "--spec", spec, "--draft-max", str(args.draft_max),
           "-t", str(args.threads)]
    if spec == "draft":
        cmd += ["--model-draft", args.model_draft]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"engine-run failed ({out.returncode}): {out.stderr[-500:]}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--workers", type=int, default=0, help="0: one process")
    ap.add_argument("--delay-ms", type=float, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", "--n-predict", type=int, default=128)
    ap.add_argument("--draft-max", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt-file")
    ap.add_argument("--model-draft", help="also run --spec draft with this draft model (run by engine-run itself)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(args, tmp) if args.workers > 0 else None
        where = ["--config", cluster.config] if cluster else ["-m", args.model]
        modes = ["off", "ngram"] + (["draft"] if args.model_draft else [])
        results = {name: {m: [] for m in modes} for name in prompts(args)}
        # The workers stay up for every run (each engine-run loads them anew and lets them go).
        if cluster:
            cluster.start()
        try:
            for r in range(args.rounds):
                print(f"round {r + 1} {time.strftime('%H:%M:%S', time.gmtime())} load {os.getloadavg()[0]:.1f}",
                      file=sys.stderr)
                for name, prompt in prompts(args).items():
                    for spec in modes:
                        results[name][spec].append(run(args, where, prompt, spec))
        finally:
            if cluster:
                cluster.stop()
        setting = f"{args.workers} workers" if args.workers else "one process"
        if args.delay_ms:
            setting += f" + {args.delay_ms} ms relays"
        print(f"model {os.path.basename(args.model)}, {setting}, {args.threads} thread(s) each, "
              f"greedy, {args.n_predict} tokens, draft-max {args.draft_max}")
        if args.model_draft:
            print(f"draft model {os.path.basename(args.model_draft)}")
        print("| prompt | mode | off (t/s) | on (t/s) | ratio | drafts kept | tokens per trip |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
        failed = False
        rate = lambda x: x["timings"]["generated_tokens_per_second"]
        for name, runs in results.items():
            for mode in modes[1:]:
                for off, on in zip(runs["off"], runs[mode]):
                    if off["tokens"] != on["tokens"]:
                        print(f"MISMATCH on {name} ({mode}): speculation changed the tokens", file=sys.stderr)
                        failed = True
                t_off = statistics.median(rate(x) for x in runs["off"])
                t_on = statistics.median(rate(x) for x in runs[mode])
                ratio = statistics.median(rate(b) / rate(a) for a, b in zip(runs["off"], runs[mode]))
                last = runs[mode][-1]["timings"]
                kept = f"{last['draft_n_accepted']}/{last['draft_n']}" if last["draft_n"] else "0/0"
                trip = (len(runs[mode][-1]["tokens"]) - 1) / max(1, last["decode_passes"])
                print(f"| {name} | {mode} | {t_off:.1f} | {t_on:.1f} | {ratio:.2f} | {kept} | {trip:.2f} |")
        sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
