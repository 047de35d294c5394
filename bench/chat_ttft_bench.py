#!/usr/bin/env python3
"""Time to first token of a growing multi-turn chat, with and without prompt-prefix reuse.

One conversation of --turns turns on POST /v1/chat/completions (streaming, greedy): each turn adds
a user message of about --new-tokens tokens, the server answers --reply tokens (ignore_eos), and
the answer joins the history. Every turn is sent twice, alternated: first with "cache_prompt":
false (the whole history is computed) and then with "cache_prompt": true (the KV of the last
turn is reused). Greedy replies are the same both ways (reuse is exact): the script checks it.
Prints per turn the prompt tokens, cached tokens, TTFT of both and their ratio.

  bench/chat_ttft_bench.py --url http://127.0.0.1:8021 [--turns 10] [--new-tokens 100] [--reply 32]
Works against llama-server too (same fields). Python 3 standard library only.
"""
import argparse
import http.client
import json
import random
import time
import urllib.parse

WORDS = ("the a little girl boy dog cat sun tree park ball red big happy sad ran saw found went played "
         "home mother father friend day night garden river bird song flower box toy cake rain wind").split()


def user_message(rng, n_words):
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "."


def chat(url, messages, reply, cache, api_key):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    body = json.dumps({"messages": messages, "max_tokens": reply, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True}, "ignore_eos": True, "cache_prompt": cache})
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    t0 = time.monotonic()
    conn.request("POST", "/v1/chat/completions", body, headers)
    resp = conn.getresponse()
    if resp.status != 200:
        raise SystemExit(f"HTTP {resp.status}: {resp.read()[:300]!r}")
    ttft, text, usage = None, "", {}
    for raw in resp:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        if ev.get("usage"):
            usage = ev["usage"]
        for ch in ev.get("choices", []):
            piece = ch.get("delta", {}).get("content")
            if piece:
                if ttft is None:
                    ttft = time.monotonic() - t0
                text += piece
    conn.close()
    return ttft, text, usage


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8021")
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--new-tokens", type=int, default=100, help="about this many tokens per user message")
    ap.add_argument("--reply", type=int, default=32)
    ap.add_argument("--api-key", default="")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only-reuse", action="store_true",
                    help="send each turn once, with cache_prompt: true (a real chat: only the previous turn is "
                         "cached; bench/chat_ttft_compare.sh uses it to compare servers)")
    a = ap.parse_args()
    rng = random.Random(7)
    messages, rows = [{"role": "system", "content": "You are a storyteller."}], []
    for turn in range(1, a.turns + 1):
        messages.append({"role": "user", "content": user_message(rng, int(a.new_tokens * 0.75))})
        if a.only_reuse:
            t_on, text_on, u_on = chat(a.url, messages, a.reply, True, a.api_key)
            t_off, text_off = t_on, text_on
        else:
            t_off, text_off, u_off = chat(a.url, messages, a.reply, False, a.api_key)
            t_on, text_on, u_on = chat(a.url, messages, a.reply, True, a.api_key)
        same = text_on == text_off
        cached = u_on.get("prompt_tokens_details", {}).get("cached_tokens", 0)
        rows.append({"turn": turn, "prompt_tokens": u_on.get("prompt_tokens"), "cached_tokens": cached,
                     "ttft_no_reuse_ms": 1000 * t_off, "ttft_reuse_ms": 1000 * t_on, "ratio": t_on / t_off,
                     "same_reply": same})
        messages.append({"role": "assistant", "content": text_on})
    if a.json:
        print(json.dumps(rows, indent=2))
        return
    print("| turn | prompt tokens | cached | TTFT without reuse (ms) | TTFT with reuse (ms) | ratio | same reply |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| {r['turn']} | {r['prompt_tokens']} | {r['cached_tokens']} | {r['ttft_no_reuse_ms']:.0f} | "
              f"{r['ttft_reuse_ms']:.0f} | {r['ratio']:.2f} | {'yes' if r['same_reply'] else 'NO'} |")


if __name__ == "__main__":
    main()
