#!/usr/bin/env bash
# A/B regression check of two mure binaries, alternating in one run on one
# machine (ABBA order per round, so drift over the run hits both alike):
#  - reads: wrk -t2 -c64 GETs of one 4 KiB, 64 KiB and 1 MiB file on a
#    single node's main port (data on the machine's disk, page cache warm);
#  - small ops: mure bench small-ops (16 clients, PUT then GET of new 4 KiB
#    files, fsync on);
#  - the front door's capacity: wrk -t1 -c32 with a new connection per
#    request (Connection: close) to the front door in proxy mode over two
#    nodes, a 1 KiB file.
# Prints each figure per round and the median ratio B/A. Needs wrk
# (apt-get install wrk). Loopback only; every load is bounded by DURATION.
#   scripts/bench/ab.sh OLD_BIN NEW_BIN [ROUNDS] [DURATION]
# Defaults: 3 rounds, 5s per measurement (about 2 minutes per round).
set -euo pipefail
. "$(dirname "$0")/admin.sh"
a=${1:?old binary}
b=${2:?new binary}
rounds=${3:-3}
dur=${4:-5s}
secs=${dur%s}
work=$(mktemp -d)
pids=()
trap 'kill ${pids[@]} 2>/dev/null || true; wait 2>/dev/null; rm -rf "$work"' EXIT INT TERM
out=$work/results.tsv
: >"$out"

wait_ready() { for _ in $(seq 100); do curl -sf "$1/readyz" >/dev/null && return 0; sleep 0.1; done; echo "not ready: $1" >&2; return 1; }
stop_all() { kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true; pids=(); }
rps() { wrk "${auth[@]}" "$@" | awk '/Requests\/sec/ {print $2}'; }
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$out"; } # label metric value

reads_and_small() { # $1 label, $2 binary
  local d=$work/r-$1-$RANDOM
  env -u MURE_TOKEN "$2" serve --data "$d" --http 127.0.0.1:7890 --peer 127.0.0.1:7891 --log-level error >"$d.log" 2>&1 &
  pids+=($!)
  wait_ready 127.0.0.1:7890
  use_admin "$d"
  for size in 4096 65536 1048576; do
    head -c $size /dev/urandom >"$work/f$size"
    curl "${auth[@]}" -sf -X PUT --data-binary @"$work/f$size" 127.0.0.1:7890/files/ab/f$size >/dev/null
    cmp <(curl "${auth[@]}" -sf 127.0.0.1:7890/files/ab/f$size) "$work/f$size"
    record "$1" "GET $((size / 1024))K req/s" "$(rps -t2 -c64 -d"$dur" http://127.0.0.1:7890/files/ab/f$size)"
  done
  "$2" bench small-ops --node 127.0.0.1:7890 --sizes 4K --duration "$dur" --warmup 1s --json "$d.json" >/dev/null
  python3 - "$d.json" "$1" >>"$out" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1]))
for g in rep["groups"]:
    print(f"{sys.argv[2]}\tsmall-ops {g['op']} {g['size']//1024}K ops/s\t{g['ops_per_s']['mean']}")
EOF
  stop_all
}

front_capacity() { # $1 label, $2 binary
  local d=$work/f-$1-$RANDOM
  for i in 0 1; do
    extra=()
    [ "$i" = 1 ] && extra=(--join 127.0.0.1:7871 --key-file "$d-0/cluster.key")
    env -u MURE_TOKEN "$2" serve --data "$d-$i" --http 127.0.0.1:787$((2 * i)) --peer 127.0.0.1:787$((2 * i + 1)) \
      --front 127.0.0.1:7880 --front-mode proxy --front-policy round-robin --unsafe-no-fsync \
      --max-inflight 1024 --log-level error "${extra[@]}" >>"$d-$i.log" 2>&1 &
    pids+=($!)
    wait_ready 127.0.0.1:787$((2 * i))
    if [ "$i" = 0 ]; then use_admin "$d-0"; fi
  done
  head -c 1024 /dev/urandom >"$work/f1k"
  curl "${auth[@]}" -sf -X PUT --data-binary @"$work/f1k" 127.0.0.1:7870/files/ab/f1k >/dev/null
  for _ in $(seq 100); do curl "${auth[@]}" -sf 127.0.0.1:7880/files/ab/f1k >/dev/null 2>&1 && break; sleep 0.1; done
  record "$1" "front door proxy conn/s" "$(rps -t1 -c32 -d"$dur" -H 'Connection: close' http://127.0.0.1:7880/files/ab/f1k)"
  stop_all
}

for r in $(seq "$rounds"); do
  order=(A B)
  [ $((r % 2)) = 0 ] && order=(B A)
  for x in "${order[@]}"; do
    bin=$a
    [ "$x" = B ] && bin=$b
    echo "round $r: $x" >&2
    reads_and_small "$x" "$bin"
    front_capacity "$x" "$bin"
  done
done

python3 - "$out" <<'EOF'
import collections, statistics, sys
vals = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    label, metric, v = line.rstrip("\n").split("\t")
    vals[metric][label].append(float(v or 0))
print(f"{'metric':32} {'A (each round)':>28} {'B (each round)':>28} {'B/A median':>10}")
for metric, by in vals.items():
    A, B = by.get("A", []), by.get("B", [])
    ratio = statistics.median(B) / statistics.median(A) if A and B and statistics.median(A) else float("nan")
    fa = " ".join(f"{x:.0f}" for x in A)
    fb = " ".join(f"{x:.0f}" for x in B)
    print(f"{metric:32} {fa:>28} {fb:>28} {ratio:10.3f}")
EOF
