#!/usr/bin/env python3
"""How long a long prompt stalls the other streams: client A streams a long completion; once it
has produced --warmup tokens, client B sends a prompt of about --prompt-tokens tokens. Prints A's
inter-token gaps before B arrived (median) and while B's prompt was being computed (max), and B's
time to first token. Python 3 standard library only.

  bench/prefill_stall_bench.py --url http://127.0.0.1:8021 [--prompt-tokens 2048]
"""
import argparse
import http.client
import json
import statistics
import threading
import time
import urllib.parse

WORDS = "the little girl saw a big red ball in the park and ran home to tell her mother".split()


def stream(url, body, on_token):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=900)
    conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise SystemExit(f"HTTP {resp.status}: {resp.read()[:200]!r}")
    for raw in resp:
        line = raw.decode().strip()
        if line.startswith("data: {") and '"text"' in line:
            on_token(time.monotonic())
    conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8021")
    ap.add_argument("--prompt-tokens", type=int, default=2048)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=400, help="client A's completion length")
    a = ap.parse_args()
    a_times, b = [], {}
    started = threading.Event()

    def client_a():
        stream(a.url, {"prompt": "Once upon a time", "max_tokens": a.tokens, "temperature": 0, "stream": True,
                       "ignore_eos": True, "cache_prompt": False},
               lambda t: (a_times.append(t), len(a_times) == a.warmup and started.set()))

    def client_b():
        started.wait()
        prompt = " ".join(WORDS[i % len(WORDS)] for i in range(int(a.prompt_tokens * 0.95)))
        b["sent"] = time.monotonic()
        stream(a.url, {"prompt": prompt, "max_tokens": 1, "temperature": 0, "stream": True, "cache_prompt": False},
               lambda t: b.setdefault("first", t))

    ta, tb = threading.Thread(target=client_a), threading.Thread(target=client_b)
    ta.start(), tb.start()
    ta.join(), tb.join()
    gaps = [(t1 - t0, t1) for t0, t1 in zip(a_times, a_times[1:])]
    before = [g for g, t in gaps if t <= b["sent"]]
    during = [g for g, t in gaps if b["sent"] < t <= b["first"] + 0.001]
    print(f"A: median gap before B {1000 * statistics.median(before):.0f} ms; while B's prompt was computed: "
          f"{len(during)} tokens, max gap {1000 * max(during) if during else float('nan'):.0f} ms; "
          f"B: time to first token {1000 * (b['first'] - b['sent']):.0f} ms")


if __name__ == "__main__":
    main()
