#!/usr/bin/env python3
"""Send N raw TCP SYNs from SRC to DST:PORT as fast as one process can, each
from its own source port (1024 + i), and print how long that took.
Used by scripts/bench/001-single.sh to measure the SYN master's placement
rate. Needs root (a raw socket); bounded by N.
    synblast.py SRC DST PORT N
"""
import socket
import struct
import sys
import time


def fold(x):
    while x >> 16:
        x = (x & 0xFFFF) + (x >> 16)
    return x


def main():
    src, dst, dport, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    srcb, dstb = socket.inet_aton(src), socket.inet_aton(dst)
    seq = 0x01020304
    # The TCP checksum with source port 0; each packet adds its port.
    tcp0 = struct.pack("!HHIIBBHHH", 0, dport, seq, 0, 5 << 4, 0x02, 64240, 0, 0)
    pseudo = srcb + dstb + struct.pack("!BBH", 0, 6, len(tcp0))
    data = pseudo + tcp0
    base = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, 0, 0x4000, 64, 6, 0, srcb, dstb)
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    t0 = time.monotonic()
    for i in range(n):
        sport = 1024 + i % 64000
        c = (~fold(base + sport)) & 0xFFFF
        tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, 0x02, 64240, c, 0)
        s.sendto(ip + tcp, (dst, 0))
    dt = time.monotonic() - t0
    print("%d SYNs in %.2f s (%.0f/s)" % (n, dt, n / dt))


if __name__ == "__main__":
    main()
