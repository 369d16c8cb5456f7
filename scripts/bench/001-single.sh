#!/usr/bin/env bash
# Paper 001's single-address mode on the emulated-host testbed (root):
# 3 server hosts of 0.3 core, 2 client hosts, a hub. For each SYN path:
#  - connect latency (SYN sent → established) through the cluster address
#    vs straight to a node's own address (same link shaping), open loop at
#    100 new connections/s, 2 clients, DURATION per target and round;
#  - new connections per second through the cluster address (closed loop,
#    32 clients per client host, /healthz) vs one node straight;
#  - SYN placement rate of the master: raw SYNs blasted from a client host
#    (scripts/bench/synblast.py), SYNs placed per second by the master.
# isn-hash (no master: each node takes the SYNs whose ISN modulo 3 is its
# rank) is the same segment without the master's hop: the fair baseline.
# QUICK=1 measures the latency only; ROUNDS (4) latency rounds.
# Writes JSON reports and a summary into OUT.
#   scripts/bench/001-single.sh [OUT] [DURATION] [PATHS]
#   (default docs/bench/001-single, 10s, "kernel user isn-hash")
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/bench/001-single}
dur=${2:-10s}
paths=${3:-kernel user isn-hash}
mkdir -p "$out"
. scripts/bench/testbed.sh mb1s-
status() { curl -sf "http://10.77.0.1$1:7946/status"; }
master() { # prints the server number (1..3) of the SYN master
  for i in 1 2 3; do
    status "$i" | python3 -c 'import json,sys; d=json.load(sys.stdin)["dispatch"].get("single_address") or {}; sys.exit(0 if d.get("master") else 1)' && { echo "$i"; return; }
  done
  return 1
}
pct() { # $1 json file, $2 conn kind, $3 field
  python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["groups"][0]; print(round(g["conn"][sys.argv[2]][sys.argv[3]]*1000))' "$@"
}
rate() { python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["groups"][0]; print(round(g["ops_per_s"]["mean"]), g["errors"])' "$1"; }

summary=$out/summary.txt
: >"$summary"
for path in $paths; do
  tb down >/dev/null 2>&1 || true
  tb up --hub --servers 3 --clients 2 --server-cpu 0.3 --client-cpu 0.3 --server-link 100mbit --client-link 500mbit \
    --data-size 256 --node-args "--front $cip:8080 --front-mode single-address --front-vip $cip/24 --front-iface eth1 --front-policy round-robin --front-syn-path $path" >/dev/null
  m=
  if [ "$path" != isn-hash ]; then
    for _ in $(seq 100); do m=$(master) && break; sleep 0.2; done
  fi
  sleep 2 # every node's filter set up (ranks, tags)
  echo "== $path: master s${m:-(none)}" | tee -a "$summary"
  # The testbed's latency drifts run to run by tens of µs: the two targets
  # alternate, ROUNDS times, and each round's difference is reported.
  deltas=()
  for r in $(seq "${ROUNDS:-4}"); do
    for target in cluster direct; do
      url=http://$cip:8080/healthz
      [ "$target" = direct ] && url=http://10.77.0.12:7946/healthz
      f=$out/latency-$path-$target-r$r.json
      tb exec c1 -- "$bin" bench conn-rate --url "$url" --node 10.77.0.11:7946 --rate 100 --clients 2 \
        --duration "$dur" --timeout 5s --label "$path $target round $r" --json "$f" >/dev/null
      echo "round $r connect $target: p50 $(pct "$f" connect p50_ms) µs, p90 $(pct "$f" connect p90_ms) µs, p99 $(pct "$f" connect p99_ms) µs" | tee -a "$summary"
    done
    deltas+=($(($(pct "$out/latency-$path-cluster-r$r.json" connect p50_ms) - $(pct "$out/latency-$path-direct-r$r.json" connect p50_ms))))
  done
  echo "added p50 per round: ${deltas[*]} µs; median $(printf '%s\n' "${deltas[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}') µs" | tee -a "$summary"
  [ "${QUICK:-}" = 1 ] && continue
  for target in cluster direct; do
    url=http://$cip:8080/healthz
    [ "$target" = direct ] && url=http://10.77.0.12:7946/healthz
    for c in c1 c2; do
      tb exec $c -- "$bin" bench conn-rate --url "$url" --node 10.77.0.11:7946 --clients 32 --duration "$dur" \
        --timeout 5s --label "$path $target $c" --json "$out/capacity-$path-$target-$c.json" >/dev/null &
    done
    wait
    echo "capacity $target: c1 $(rate "$out/capacity-$path-$target-c1.json") c2 $(rate "$out/capacity-$path-$target-c2.json") (conn/s, errors)" | tee -a "$summary"
  done
  [ -z "$m" ] && continue
  before=$(status "$m" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dispatch"]["single_address"]["tapped"])')
  t0=$(date +%s.%N)
  tb exec c1 -- python3 scripts/bench/synblast.py 10.77.1.101 "$cip" 8080 50000 >"$work/blast.txt"
  sleep 1 # the last SYNs placed
  after=$(status "$m" | python3 -c 'import json,sys; print(json.load(sys.stdin)["dispatch"]["single_address"]["tapped"])')
  echo "SYN blast: $(cat "$work/blast.txt"); the master placed $((after - before)) ($path path)" | tee -a "$summary"
done
