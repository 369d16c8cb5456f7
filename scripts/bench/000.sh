#!/usr/bin/env bash
# Paper 000's experiment on the emulated-host testbed (root): 1, 2 and 4
# server hosts, 4 client hosts, each host with its own link and CPU quota.
#   scripts/bench/000.sh quick   # 4K, 64K, 1M; 3 runs each (~12 minutes)
#   scripts/bench/000.sh full    # 1K..4M; 8 runs at 4K/64K/1M, 3 at the others (~1 hour)
#   scripts/bench/000.sh writes  # own-set writes only, 4K and 64K (SIZES), servers
#                                # alternated 1,2,4,1,2,4... for ROUNDS rounds of REPS
#                                # runs each, a fresh testbed per size; prints MB/s, the
#                                # servers' CPU per write and the load average beside
#                                # each, and how many of the server hosts' 10 ms CPU
#                                # periods ran out of quota; TAG names the JSON
#                                # (writes-TAG-rR-sN-SIZE.json); RESUME=reads: no copies
# Results: docs/bench/000/*.json, charts in docs/img/000-*.png.
# The nodes' data are on one shared tmpfs (--disk tmpfs), as when the figures in
# docs/benchmarks.md were measured; DISK=loop gives each server a disk of its own
# (docs/testbed.md), and scripts/bench/000-disk.sh compares the two.
# NODE_ARGS adds `mure serve` flags on every server (e.g. "--pprof 127.0.0.1:6060",
# reachable inside the host: nsenter --net=/run/netns/mure-s1 curl ...).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-quick}
case $mode in
  quick) passes=("4K,64K,1M 3"); wpasses=("64K,1M 3"); dur=4s ;;
  full)  passes=("4K,64K,1M 8" "1K,16K,256K,4M 3"); wpasses=("${passes[@]}"); dur=8s ;;
  writes) dur=4s ;;
  *) echo "usage: $0 quick|full|writes" >&2; exit 2 ;;
esac
servers=${SERVERS:-"1 2 4"}
out=docs/bench/000; mkdir -p "$out" docs/img
bin=${MURE_BIN:-}  # MURE_BIN: a built mure to run (e.g. another commit's, for an A/B)
if [ -z "$bin" ]; then bin=$(mktemp -d)/mure; go build -o "$bin" ./cmd/mure; fi
trap '"$bin" testbed down >/dev/null 2>&1 || true' EXIT INT TERM

# Per host: servers 100 Mbit/s and 0.2 core, clients 150 Mbit/s and 0.2
# core (4 clients: 600 Mbit/s >= 1.5 x 4 servers' 400; CPU 1.6 cores at 4).
up() {
  "$bin" testbed down >/dev/null 2>&1 || true
  "$bin" testbed up --servers "$1" --clients 4 --server-link 100mbit --client-link 150mbit \
    --server-cpu 0.2 --client-cpu 0.2 --disk "${DISK:-tmpfs}" --data-size 12000 \
    ${NODE_ARGS:+--node-args "$NODE_ARGS"}
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

# throttled N: the server hosts' CPU periods (10 ms) and how many of them ran out of
# quota, summed (cpu.stat of the CPU cgroup the testbed recorded for each host, v1 or
# v2; "0 0" without one).
throttled() {
  local p=0 t=0 i f
  for i in $(seq "$1"); do
    f=$(jq -r --arg h "s$i" '.hosts[] | select(.name == $h) | .cgroup.cpu // empty' \
      /run/mure-testbed/state.json 2>/dev/null || true)/cpu.stat
    [ -f "$f" ] || continue
    p=$((p + $(awk '$1=="nr_periods"{print $2}' "$f")))
    t=$((t + $(awk '$1=="nr_throttled"{print $2}' "$f")))
  done
  echo "$p $t"
}

# figures N: the servers' CPU seconds (their hosts' cgroups) and writes taken, summed.
figures() {
  local cpu=0 w=0 i
  for i in $(seq "$1"); do
    cpu=$(echo "$cpu + $(curl -s -m 5 "10.77.0.1$i:7946/status" | jq '.host.cpu_seconds // 0')" | bc -l)
    w=$((w + $(curl -s -m 5 "10.77.0.1$i:7946/metrics" | awk '$1=="mure_files_writes_total"{print int($2)}')))
  done
  echo "$cpu $w"
}

if [ "$mode" = writes ]; then
  # Issue 16 item 2: durability local, resume idle (the default), replication all.
  for r in $(seq "${ROUNDS:-2}"); do
    for n in $servers; do
      for size in ${SIZES:-4K 64K}; do
        up "$n" local >/dev/null
        # RESUME=reads shows what a write costs when no copy is made (an
        # own-set write test never reads); the issue's setting is idle.
        [ -n "${RESUME:-}" ] && "$bin" config set resume "$RESUME" --node 10.77.0.11:7946 >/dev/null
        f="$out/writes-${TAG:-run}-r$r-s$n-$size.json"
        la0=$(cut -d' ' -f1 /proc/loadavg)
        read -r cpu0 w0 < <(figures "$n")
        read -r p0 t0 < <(throttled "$n")
        "$bin" testbed bench --clients 16 --files 50 --sizes "$size" --reps "${REPS:-2}" \
          --duration "$dur" --warmup 1s --label "$n srv" --json "$f" --op write --sets own >/dev/null
        read -r cpu1 w1 < <(figures "$n")
        read -r p1 t1 < <(throttled "$n")
        # CPU per write covers the whole bench (the sets written first too).
        jq -r --arg n "$n" --arg r "$r" --arg la "$la0-$(cut -d' ' -f1 /proc/loadavg)" \
          --arg thr "$((t1 - t0))/$((p1 - p0))" \
          --arg cpw "$(echo "scale=2; 1000 * ($cpu1 - $cpu0) / ($w1 - $w0)" | bc -l)" \
          '.groups[] | "round \($r)  \($n) srv  \(.size/1024)K  MB/s \(.mb_per_s.mean*1000|round/1000) (\(.mb_per_s.min*1000|round/1000)-\(.mb_per_s.max*1000|round/1000))  writes/s \(.ops_per_s.mean|round)  errors \(.errors)  servers CPU ms/write \($cpw)  throttled periods \($thr)  load \($la)"' "$f"
      done
    done
  done
  "$bin" testbed down
  exit 0
fi

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
