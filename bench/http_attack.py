#!/usr/bin/env python3
"""What the HTTP front door withstands (docs/SECURITY.md): run against a live engine-coordinator.

  bench/http_attack.py --port 8021 --pid $(pidof engine-coordinator) [--slow 1000] [--burst 200]

1. slowloris: --slow connections each trickle a header byte every second; meanwhile GET /health
   and a 4-token completion are timed 5 times (median), and the slow connections still open
   are counted;
2. a chunked POST of --chunked-mib MiB: the status and the coordinator's VmRSS before/after;
3. a burst of --burst simultaneous completions: the statuses, and connection resets;
4. three pipelined requests in one write: the answers.
Standard library only.
"""
import argparse
import socket
import statistics
import threading
import time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def request(port, raw, timeout=30):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(raw)
    out = b""
    while True:
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            s.close()
            return out, "reset"
        except TimeoutError:
            s.close()
            return out, "timeout"
        if not d:
            break
        out += d
    s.close()
    return out, None


def completion(n_tokens=4):
    body = b'{"prompt": "Once upon a time", "max_tokens": %d}' % n_tokens
    return (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


HEALTH = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def slowloris(port, n):
    socks = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\n")
            s.setblocking(False)
            socks.append(s)
        except OSError:
            break
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            for s in socks:
                try:
                    s.send(b"X")
                except OSError:
                    pass
            stop.wait(1.0)

    t = threading.Thread(target=trickle)
    t.start()
    time.sleep(2)
    health, gen = [], []
    for _ in range(5):
        t0 = time.monotonic()
        out, err = request(port, HEALTH, timeout=10)
        health.append((time.monotonic() - t0, out[9:12] or (err or "none").encode()))
        t0 = time.monotonic()
        out, err = request(port, completion(), timeout=10)
        gen.append((time.monotonic() - t0, out[9:12] or (err or "none").encode()))
    open_now = 0
    for s in socks:
        try:
            d = s.recv(1)
            open_now += 0 if d == b"" else 1
        except BlockingIOError:
            open_now += 1
        except OSError:
            pass
    stop.set()
    t.join()
    for s in socks:
        s.close()
    print(f"slowloris: {len(socks)} slow connections opened, {open_now} still open after the measurements")
    print(f"  GET /health during it: median {statistics.median(x for x, _ in health) * 1000:.0f} ms, statuses {[s.decode() for _, s in health]}")
    print(f"  4-token completion during it: median {statistics.median(x for x, _ in gen) * 1000:.0f} ms, statuses {[s.decode() for _, s in gen]}")


def chunked(port, pid, mib):
    before = rss_kb(pid) if pid else 0
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
    sent = 0
    try:
        for _ in range(mib * 16):
            s.sendall(chunk)
            sent += 0x10000
        s.sendall(b"0\r\n\r\n")
    except OSError:
        pass
    try:
        reply = s.recv(4096)
    except OSError as e:
        reply = str(e).encode()
    s.close()
    after = rss_kb(pid) if pid else 0
    print(f"chunked body of {mib} MiB: sent {sent >> 20} MiB before the server stopped reading; reply {reply[:12]!r}; "
          f"VmRSS {before // 1024} -> {after // 1024} MiB")


def burst(port, n):
    results = [None] * n
    go = threading.Barrier(n)

    def client(i):
        go.wait()
        try:
            out, err = request(port, completion(), timeout=120)
            results[i] = err or out[9:12].decode() or "empty"
        except OSError as e:
            results[i] = type(e).__name__

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = {}
    for r in results:
        counts[r] = counts.get(r, 0) + 1
    print(f"burst of {n} simultaneous completions: {counts}")


def pipelined(port):
    out, _ = request(port, HEALTH.replace(b"Connection: close\r\n", b"") * 2 + HEALTH)
    print(f"3 pipelined requests in one write: {out.count(b'HTTP/1.1 200')} answers")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8021)
    ap.add_argument("--pid", type=int, default=0)
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--burst", type=int, default=200)
    ap.add_argument("--chunked-mib", type=int, default=600)
    a = ap.parse_args()
    slowloris(a.port, a.slow)
    chunked(a.port, a.pid, a.chunked_mib)
    burst(a.port, a.burst)
    pipelined(a.port)


if __name__ == "__main__":
    main()
