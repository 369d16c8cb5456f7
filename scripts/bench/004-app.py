# An application of paper 004's experiment (scripts/bench/004.sh), started
# with mure run inside a simulated user's desktop session:
#   python3 004-app.py cpu|mem UPFILE
# It writes the time it started (ms since the epoch) to UPFILE first, so the
# driver can tell how long the start took; then it loads (cpu: a second of
# CPU, then 0.4 s every 4 s, like an office suite's background work; mem:
# 70 MB touched and held, the paper's per-user cost) and echoes what is
# typed into it (cpu: 0.2 s of CPU per line).
import sys
import threading
import time

kind, upfile = sys.argv[1], sys.argv[2]
with open(upfile, "w") as f:
    f.write(str(int(time.time() * 1000)))
print(kind, "app up", flush=True)


def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


held = None
if kind == "mem":
    held = bytearray(70 << 20)
    for i in range(0, len(held), 4096):
        held[i] = 1
else:
    burn(1.0)

    def background():
        while True:
            time.sleep(4)
            burn(0.4)

    threading.Thread(target=background, daemon=True).start()
print(kind, "app loaded", flush=True)
for line in sys.stdin:
    if kind == "cpu":
        burn(0.2)
    print("typed:", line.strip(), flush=True)
while True:
    time.sleep(3600)
