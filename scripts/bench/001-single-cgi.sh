#!/usr/bin/env bash
# Paper 001's CGI experiment through the single-address mode (testbed, root),
# the same setup as the L7 front door's runs in docs/benchmarks.md: 4 server
# hosts of 0.3 core, 3 client hosts, scripts/cgi/work.py?n=100000 at 21.8 new
# connections/s (85% of round robin's capacity) for DURATION after a 5 s
# warm-up. Round robin, least connections and p2c in the kernel path, the
# last two again through the user path, then the paper's own baseline on a
# fresh cluster: isn-hash (each node takes the SYNs whose ISN modulo 4 is
# its rank; no master).
#   scripts/bench/001-single-cgi.sh [OUT] [DURATION] [WHAT]
#   (default docs/bench/001-single, 60s, all; WHAT=isn-hash runs the baseline only)
# RATE (21.8) is the offered load: 85% of round robin's capacity, which drifts
# with the machine: measure it first (closed loop) and scale.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/bench/001-single}
dur=${2:-60s}
what=${3:-all}
mkdir -p "$out"
. scripts/bench/testbed.sh mb1c-
url="http://$cip:8080/cgi/work.py?n=100000"
up() { # $1: SYN path
  tb down >/dev/null 2>&1 || true
  tb up --hub --servers 4 --clients 3 --server-cpu 0.3 --client-cpu 0.1 --client-link 200mbit --data-size 256 \
    --node-args "--cgi-dir $PWD/scripts/cgi --front $cip:8080 --front-mode single-address --front-vip $cip/24 --front-iface eth1 --front-policy round-robin --front-syn-path $1" >/dev/null
  sleep 3 # the master elected, every node's filter set up
}
run() { # $1: series name
  "$bin" testbed bench conn-rate --dir "$work/tb" --url "$url" --rate "${RATE:-21.8}" --clients 6 --duration "$dur" --warmup 5s --timeout 30s \
    --policy "$1" --label "single-address, 4 nodes of 0.3 core" --json "$out/cgi-$1.json" | tail -n +1
}
if [ "$what" = all ]; then
  up auto # the kernel path, for these three policies
  run single-round-robin
  for p in least-connections p2c; do
    "$bin" config --node 10.77.0.11:7946 set dispatch.policy "$p" >/dev/null
    sleep 1
    run "single-$p"
  done
  up user # the same through user space
  for p in least-connections p2c; do
    "$bin" config --node 10.77.0.11:7946 set dispatch.policy "$p" >/dev/null
    sleep 1
    run "single-user-$p"
  done
fi
up isn-hash
run single-isn-hash
"$bin" bench combine "$out"/cgi-single-*.json --chart docs/img/001-single.png >/dev/null
