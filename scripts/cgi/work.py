#!/usr/bin/python3
"""A CPU-bound CGI program for paper 001's dynamic-content benchmark.

GET /cgi/work.py?n=N hashes a 32-byte value N times with SHA-256, each
round feeding the previous digest back in (a chain: no shortcut, no
caching), and answers with the final digest, the CPU time spent and the
node that ran it. Work grows linearly with N. Standard library only.

Measured through mure's /cgi/ (internal/apps, loopback, one request at
a time, median of 7) on the development machine: 2 x86-64 cores shared
with other work (load ~1), Python 3.11. cpu_ms is the program's own figure;
"request" is the client's time, so it includes fork/exec and Python's start-up
(~17 ms, the n=0 row):

       n     cpu_ms    request
       0        0.0    17.6 ms
  10 000        2.2    20.4 ms
 100 000       21.6    40.7 ms
 200 000       43.1    61.7 ms   (the default)
 1 000 000    213       232 ms
 5 000 000   1077      1109 ms

So one round costs ~0.21 us here (~4.6 million rounds per CPU-second),
and a request takes ~17 ms + n x 0.21 us on one core.

The interpreter is named by path, not found on PATH: a version manager's
shim there (pyenv) took start-up from 17 to 85 ms per request.
"""
import hashlib
import os
import sys
import time
from urllib.parse import parse_qs

DEFAULT_N = 200_000
MAX_N = 20_000_000  # ~4 s of CPU here: a bound on what one request may ask


def answer(status, body):
    sys.stdout.write(f"Status: {status}\r\nContent-Type: text/plain\r\n\r\n{body}\n")


def main():
    q = parse_qs(os.environ.get("QUERY_STRING", ""))
    raw = q.get("n", [str(DEFAULT_N)])[0]
    try:
        n = int(raw)
    except ValueError:
        n = -1
    if not 0 <= n <= MAX_N:
        answer("400 Bad Request", f"n must be an integer from 0 to {MAX_N}, not {raw!r}")
        return
    start = time.process_time()
    h = hashlib.sha256(b"mure paper 001").digest()
    sha = hashlib.sha256
    for _ in range(n):
        h = sha(h).digest()
    cpu = time.process_time() - start
    node = os.environ.get("MURE_NODE", "-")
    answer("200 OK", f"n={n} sha256={h.hex()} cpu_ms={cpu * 1000:.1f} node={node}")


if __name__ == "__main__":
    main()
