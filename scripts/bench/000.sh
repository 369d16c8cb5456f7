#!/usr/bin/env bash
# Paper 000's experiment on the emulated-host testbed (root): 1, 2 and 4
# server hosts, 4 client hosts, each host with its own link and CPU quota.
#   scripts/bench/000.sh quick   # 4K, 64K, 1M; 3 runs each (~12 minutes)
#   scripts/bench/000.sh full    # 1K..4M; 8 runs at 4K/64K/1M, 3 at the others (~1 hour)
# Results: docs/bench/000/*.json, charts in docs/img/000-*.png.
# The nodes' data are on one shared tmpfs (--disk tmpfs), as when the figures in
# docs/benchmarks.md were measured; DISK=loop gives each server a disk of its own
# (docs/testbed.md), and scripts/bench/000-disk.sh compares the two.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-quick}
case $mode in
  quick) passes=("4K,64K,1M 3"); wpasses=("64K,1M 3"); dur=4s ;;
  full)  passes=("4K,64K,1M 8" "1K,16K,256K,4M 3"); wpasses=("${passes[@]}"); dur=8s ;;
  *) echo "usage: $0 quick|full" >&2; exit 2 ;;
esac
servers=${SERVERS:-"1 2 4"}
out=docs/bench/000; mkdir -p "$out" docs/img
bin=$(mktemp -d)/mure
go build -o "$bin" ./cmd/mure
trap '"$bin" testbed down >/dev/null 2>&1 || true' EXIT INT TERM

# Per host: servers 100 Mbit/s and 0.2 core, clients 150 Mbit/s and 0.2
# core (4 clients: 600 Mbit/s >= 1.5 x 4 servers' 400; CPU 1.6 cores at 4).
up() {
  "$bin" testbed down >/dev/null 2>&1 || true
  "$bin" testbed up --servers "$1" --clients 4 --server-link 100mbit --client-link 150mbit \
    --server-cpu 0.2 --client-cpu 0.2 --disk "${DISK:-tmpfs}" --data-size 12000
  "$bin" config set durability "$2" --node 10.77.0.11:7946
  "$bin" config set replication.rate 0 --node 10.77.0.11:7946 # the links are the limit here
}

run() { # label json-name extra-flags...
  local label=$1 name=$2; shift 2
  local ps=("${passes[@]}")
  [ "$name" = "${name#servers}" ] && ps=("${wpasses[@]}")
  for pass in "${ps[@]}"; do
    read -r sizes reps <<<"$pass"
    local f="$out/$name-${sizes//,/_}.json"
    "$bin" testbed bench --clients 16 --files 50 --sizes "$sizes" --reps "$reps" \
      --duration "$dur" --warmup 1s --label "$label" --json "$f" "$@"
  done
}

for n in $servers; do
  up "$n" local
  run "$n srv" "servers-$n" --op read,write --sets own,common
done
"$bin" bench combine --label "paper 000 on the testbed: reads and writes (durability local)" \
  --chart docs/img/000-scaleout.png --json "$out/scaleout.json" $(ls "$out"/servers-*.json)

# Write variants on 2 servers: two-copy durability, and the resumption policies.
up 2 two
run "two" "durability-two" --op write --sets own,common
for policy in idle immediate reads; do
  up 2 local
  "$bin" config set resume "$policy" --node 10.77.0.11:7946
  run "$policy" "resume-$policy" --op write,read --sets own,common
done
"$bin" bench combine --label "paper 000, 2 servers: durability two; resumption policies" \
  --chart docs/img/000-writes.png --json "$out/writes.json" "$out"/durability-two-*.json "$out"/resume-*.json
"$bin" testbed down
