#!/usr/bin/env bash
# Paper 000's read experiment on 2 server hosts whose data are on one shared
# tmpfs (RAM disks, every file in memory) and on disks of their own (a loop
# image on this machine's disk per host, throttled; host memory bounded so
# the file set does not fit in its page cache), alternating the two in one
# run (root). docs/benchmarks.md says what each figure measures.
#   scripts/bench/000-disk.sh          # 3 rounds (tmpfs, disk, tmpfs, ...), ~10 minutes
#   ROUNDS=1 FILES=5 DUR=1s scripts/bench/000-disk.sh   # a smoke run
# Results: docs/bench/000-disk/<disk>-<round>-<set>-<size>.json and .../reads.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${ROUNDS:-3} files=${FILES:-30} dur=${DUR:-4s}
# the host disk: an HDD-like 100 MB/s and 150 random reads/s; the host's
# memory, page cache included, a quarter of the 1M file set each server holds
disk_flags=(--disk loop --disk-read 100 --disk-write 100 --disk-read-iops 150 --memory 128)
out=docs/bench/000-disk; mkdir -p "$out"
. scripts/bench/testbed.sh mtb0d-

up() { # disk
  tb down >/dev/null 2>&1 || true
  local flags=(--disk tmpfs --data-size 4000)
  [ "$1" = loop ] && flags=("${disk_flags[@]}")
  tb up --servers 2 --clients 4 --server-link 100mbit --client-link 150mbit \
    --server-cpu 0.2 --client-cpu 0.2 "${flags[@]}"
  "$bin" config set durability local --node 10.77.0.11:7946
  "$bin" config set replication.rate 0 --node 10.77.0.11:7946
}

# MB read from the servers' disks in all so far (/sys/block/loopN/stat: sectors read)
disk_reads() {
  { tb status | grep -o '/dev/loop[0-9]*' || true; } | while read -r d; do cat "/sys/block/${d#/dev/}/stat"; done |
    awk '{s += $3} END {printf "%.0f", s*512/1e6}'
}

for r in $(seq "$rounds"); do
  for disk in tmpfs loop; do
    up "$disk"
    for sets in own common; do
      for size in 64K 1M; do
        before=$(disk_reads)
        "$bin" testbed bench --dir "$work/tb" --clients 16 --files "$files" --sizes "$size" --op read --sets "$sets" \
          --reps 1 --duration "$dur" --warmup 1s --label "$disk, round $r" --json "$out/$disk-$r-$sets-$size.json"
        echo "$disk, round $r, $sets $size: $(( $(disk_reads) - before )) MB read from the servers' disks (the set's writing and the reads)"
      done
    done
    tb status
  done
done
tb down
"$bin" bench combine --label "paper 000 reads, 2 servers: tmpfs vs a disk per host" \
  --json "$out/reads.json" "$out"/tmpfs-*.json "$out"/loop-*.json
