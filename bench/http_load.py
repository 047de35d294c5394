#!/usr/bin/env python3
"""Load generator for any OpenAI-compatible server: N concurrent streaming clients.

Every client sends POST /v1/completions with "stream": true (or /v1/chat/completions with
--chat), reads the server-sent events as they arrive and times them. All clients start together
(a barrier); each sends --requests requests one after the other. Prints, over all requests:

  aggregate tok/s   all completion tokens / wall time (first request sent -> last [DONE])
  per-client tok/s  per request: (tokens - 1) / (last token - first token), median over requests
  TTFT p50/p95      request sent -> first token event
  ITL p50/p95       gaps between consecutive token events (all requests pooled)

Every request asks for exactly max_tokens: "ignore_eos": true (Baton, llama-server and
bench/llamacpp/server.mjs all honour it; --stop-at-eos drops it) and "cache_prompt": false (see
run_request). "short_completions" counts requests that still got fewer tokens.
Tokens are counted from "usage" (stream_options.include_usage) when the server sends it, else
one per event that carries text (Baton and llama-server send one event per token; an event that
releases no text - a partial character, a possible stop string - is not sent, so without usage
the count can be low). Python 3 standard library only.

  bench/http_load.py --url http://127.0.0.1:8021 --clients 8 --max-tokens 64 [--json]
"""
import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse

STORY = ("Once upon a time, in a small village by the sea, there lived an old fisherman and his "
         "granddaughter. Every morning they walked to the harbour, mended the nets and watched the "
         "boats come in. One day a storm came from the west and the sky turned dark as night. ")


def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default); None for no values."""
    if not values:
        return None
    v = sorted(values)
    idx = p * (len(v) - 1)
    lo = int(idx)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (idx - lo)


def make_prompt(client, words):
    """About `words` words of the story, rotated per client so prompts differ."""
    ws = STORY.split()
    start = (client * 7) % len(ws)
    return " ".join(ws[(start + i) % len(ws)] for i in range(words))


class Result:
    def __init__(self):
        self.sent = None          # perf_counter at send
        self.token_times = []     # arrival time of each token event
        self.tokens = 0           # completion tokens (usage, else events)
        self.usage_tokens = None
        self.finish_reason = None
        self.error = None
        self.done = None          # [DONE] (or end of body)


def parse_sse(resp, on_event):
    """Calls on_event(data_string, arrival_time) for each 'data:' event of an SSE body."""
    buf = b""
    while True:
        chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
        now = time.perf_counter()
        if not chunk:
            break
        buf += chunk
        while True:
            sep = buf.find(b"\n\n")
            if sep < 0:
                break
            block, buf = buf[:sep], buf[sep + 2:]
            data = []
            for line in block.split(b"\n"):
                line = line.rstrip(b"\r")
                if line.startswith(b"data:"):
                    data.append(line[5:].lstrip(b" "))
            if data and on_event(b"\n".join(data).decode("utf-8", "replace"), now):
                return


def run_request(opts, client, result):
    url = urllib.parse.urlsplit(opts.url)
    conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=opts.timeout)
    body = {
        "model": opts.model,
        "max_tokens": opts.max_tokens,
        "temperature": opts.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
        "ignore_eos": not opts.stop_at_eos,
        # llama-server keeps each slot's prompt in its KV cache and skips the common prefix of the
        # next request (its default); Baton and server.mjs recompute every prompt, so by default ask
        # llama-server to do the same (other servers ignore the field).
        "cache_prompt": opts.cache_prompt,
    }
    if opts.seed is not None:
        body["seed"] = opts.seed + client
    if opts.ban_tokens:
        body["logit_bias"] = [[t, False] for t in opts.ban_tokens]
    prompt = make_prompt(client, opts.prompt_words)
    if opts.chat:
        path = "/v1/chat/completions"
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        path = "/v1/completions"
        body["prompt"] = prompt
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if opts.api_key:
        headers["Authorization"] = "Bearer " + opts.api_key
    result.sent = time.perf_counter()
    try:
        conn.request("POST", path, body=json.dumps(body), headers=headers)
        resp = conn.getresponse()
        if resp.status != 200:
            result.error = "HTTP %d: %s" % (resp.status, resp.read()[:300].decode("utf-8", "replace"))
            return

        def on_event(data, now):
            if data == "[DONE]":
                return True
            msg = json.loads(data)
            if "error" in msg:
                result.error = json.dumps(msg["error"])[:300]
                return True
            if msg.get("usage"):
                result.usage_tokens = msg["usage"].get("completion_tokens")
            for choice in msg.get("choices") or []:
                if choice.get("finish_reason"):
                    result.finish_reason = choice["finish_reason"]
                text = choice.get("text")
                if text is None:
                    text = (choice.get("delta") or {}).get("content")
                if text:
                    result.token_times.append(now)
            return False

        parse_sse(resp, on_event)
        result.done = time.perf_counter()
    except Exception as e:  # a load generator reports failures, it does not stop on them
        result.error = "%s: %s" % (type(e).__name__, e)
    finally:
        conn.close()
    result.tokens = result.usage_tokens if result.usage_tokens is not None else len(result.token_times)


def run(opts):
    barrier = threading.Barrier(opts.clients)
    results = [[Result() for _ in range(opts.requests)] for _ in range(opts.clients)]

    def client(c):
        barrier.wait()
        for r in range(opts.requests):
            run_request(opts, c, results[c][r])

    threads = [threading.Thread(target=client, args=(c,)) for c in range(opts.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    flat = [r for rs in results for r in rs]
    errors = [r.error for r in flat if r.error]
    ok = [r for r in flat if not r.error and r.token_times]
    t0 = min(r.sent for r in flat)
    t1 = max((r.done or r.sent) for r in flat)
    wall = t1 - t0
    total = sum(r.tokens for r in ok)
    ttft = [r.token_times[0] - r.sent for r in ok]
    itl = [b - a for r in ok for a, b in zip(r.token_times, r.token_times[1:])]
    per_client = [(len(r.token_times) - 1) / (r.token_times[-1] - r.token_times[0])
                  for r in ok if len(r.token_times) > 1 and r.token_times[-1] > r.token_times[0]]
    short = sum(1 for r in ok if r.tokens < opts.max_tokens)
    return {
        "url": opts.url, "clients": opts.clients, "requests": len(flat), "errors": len(errors),
        "error_samples": errors[:3], "max_tokens": opts.max_tokens, "short_completions": short,
        "completion_tokens": total, "wall_seconds": wall,
        "aggregate_tok_s": total / wall if wall > 0 else 0.0,
        "per_client_tok_s_p50": percentile(per_client, 0.5),
        "ttft_p50": percentile(ttft, 0.5), "ttft_p95": percentile(ttft, 0.95),
        "itl_p50": percentile(itl, 0.5), "itl_p95": percentile(itl, 0.95),
    }


def fmt(v, digits=3):
    return "-" if v is None else ("%.*f" % (digits, v))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8021", help="server base URL")
    ap.add_argument("-c", "--clients", type=int, default=8, help="concurrent streaming clients")
    ap.add_argument("-r", "--requests", type=int, default=1, help="requests per client, one after the other")
    ap.add_argument("-n", "--max-tokens", type=int, default=64, help="max_tokens of each request")
    ap.add_argument("-p", "--prompt-words", type=int, default=24, help="words in each prompt")
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=1, help="seed of client c is seed + c (-1: none)")
    ap.add_argument("--stop-at-eos", action="store_true", help="do not send ignore_eos")
    ap.add_argument("--cache-prompt", action="store_true",
                    help="send cache_prompt: true (llama-server's prompt-prefix reuse; default false)")
    ap.add_argument("--ban-tokens", default="",
                    help="FIRST-LAST: send logit_bias [[id, false], ...] banning these token ids (llama-server)")
    ap.add_argument("--chat", action="store_true", help="use /v1/chat/completions")
    ap.add_argument("--model", default="default", help="model field of the requests")
    ap.add_argument("--api-key", default="")
    ap.add_argument("--timeout", type=float, default=600.0, help="socket timeout, seconds")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    opts = ap.parse_args()
    if opts.seed is not None and opts.seed < 0:
        opts.seed = None
    if opts.ban_tokens:
        try:
            first, last = (int(x) for x in opts.ban_tokens.split("-"))
        except ValueError:
            ap.error("--ban-tokens must be FIRST-LAST, e.g. 3-258")
        opts.ban_tokens = list(range(first, last + 1))
    if opts.clients < 1 or opts.requests < 1 or opts.max_tokens < 1:
        ap.error("--clients, --requests and --max-tokens must be at least 1")

    s = run(opts)
    if opts.json:
        print(json.dumps(s))
    else:
        print("| clients | requests | errors | tokens | wall s | aggregate tok/s | per-client tok/s p50 "
              "| TTFT p50 s | TTFT p95 s | ITL p50 ms | ITL p95 ms |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        ms = lambda v: None if v is None else v * 1e3
        print("| %d | %d | %d | %d | %.2f | %.2f | %s | %s | %s | %s | %s |" % (
            s["clients"], s["requests"], s["errors"], s["completion_tokens"], s["wall_seconds"],
            s["aggregate_tok_s"], fmt(s["per_client_tok_s_p50"], 2), fmt(s["ttft_p50"]), fmt(s["ttft_p95"]),
            fmt(ms(s["itl_p50"]), 1), fmt(ms(s["itl_p95"]), 1)))
        for e in s["error_samples"]:
            print("error: " + e, file=sys.stderr)
        if s["short_completions"]:
            print("note: %d completions had fewer than %d tokens" % (s["short_completions"], opts.max_tokens),
                  file=sys.stderr)
    return 1 if s["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
