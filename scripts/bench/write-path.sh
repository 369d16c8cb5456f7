#!/usr/bin/env bash
# The write path against the disk (issue 16): one node process (fsync on,
# its data on this machine's disk), durable PUTs of fresh 4 KiB and 1 KiB
# files with 64 and 16 writers (wrk, scripts/bench/put.lua), alternated
# with fio's single-thread fsync'd 4 KiB writes to the same file system, in
# ROUNDS rounds. Prints each figure, the load average beside it, each
# PUT rate as a ratio of the fio rate of its round, and the node's CPU
# time (user + system, /proc) per PUT answered: the figure that holds
# when the machine is shared.
#   scripts/bench/write-path.sh           # 3 rounds of 10 s runs, ~4 minutes
#   ROUNDS=1 DUR=3 scripts/bench/write-path.sh   # a smoke run
# Needs wrk, fio and curl; no root. The node's admin credential is sent as
# the bearer token (none for a binary older than authentication). NODE_FLAGS adds serve flags;
# MURE_BIN runs that binary instead of building this tree (before/after).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/admin.sh
rounds=${ROUNDS:-3} dur=${DUR:-10}
addr=127.0.0.1:7996
while [ -e /tmp/bench.lock ]; do sleep 10; done # another benchmark runs
work=$(mktemp -d "${TMPDIR:-/var/tmp}/mure-write-path.XXXXXX")
node=
cleanup() {
  [ -z "$node" ] || kill "$node" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
bin=${MURE_BIN:-$work/mure}
[ -n "${MURE_BIN:-}" ] || go build -o "$bin" ./cmd/mure
# shellcheck disable=SC2086 # NODE_FLAGS is a list of flags
env -u MURE_TOKEN "$bin" serve --data "$work/data" --http $addr --peer 127.0.0.1:7997 --log-level error ${NODE_FLAGS:-} >"$work/node.log" 2>&1 &
node=$!
for _ in $(seq 100); do curl -sf "http://$addr/readyz" >/dev/null && break; sleep 0.1; done
curl -sf "http://$addr/readyz" >/dev/null || { echo "node not ready" >&2; cat "$work/node.log" >&2; exit 1; }
use_admin "$work/data"

fio_rate() { # single-thread fsync'd 4 KiB writes, per second
  fio --name=w --directory="$work" --rw=write --bs=4k --fsync=1 --size=64m \
    --runtime="$dur" --time_based --numjobs=1 --output-format=json 2>/dev/null |
    python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["write"]["iops"]))'
  rm -f "$work"/w.*
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$node/stat"; } # the node's user+system CPU
tick_us=$((1000000 / $(getconf CLK_TCK)))

put_rate() { # size conns → "PUTs/s CPU-µs-per-PUT" (errors are reported)
  local out t0 t1
  t0=$(cpu_ticks)
  out=$(SIZE=$1 wrk -t2 -c"$2" -d"${dur}s" "${auth[@]}" -s scripts/bench/put.lua "http://$addr/" 2>&1)
  t1=$(cpu_ticks)
  if grep -q "Non-2xx" <<<"$out"; then
    echo "PUT $1 B x$2: $(grep 'Non-2xx' <<<"$out")" >&2
  fi
  awk -v t=$((t1 - t0)) -v us="$tick_us" '/ requests in / {n = $1} /^Requests\/sec/ {r = $2}
    END {printf "%d %d", r, n ? t * us / n : 0}' <<<"$out"
}

load() { cut -d' ' -f1 /proc/loadavg; }

printf '%-6s %-10s %10s %8s %10s %6s\n' round run rate/s ratio cpu-us/PUT load
for r in $(seq "$rounds"); do
  f=$(fio_rate)
  printf '%-6s %-10s %10s %8s %10s %6s\n' "$r" "fio 4K" "$f" "1.00" "" "$(load)"
  for run in "4096 64" "4096 16" "1024 64" "1024 16"; do
    set -- $run
    read -r p c <<<"$(put_rate "$1" "$2")"
    printf '%-6s %-10s %10s %8s %10s %6s\n' "$r" "PUT $(( $1 / 1024 ))K x$2" "$p" \
      "$(awk -v p="$p" -v f="$f" 'BEGIN {printf "%.2f", p / f}')" "$c" "$(load)"
  done
done
