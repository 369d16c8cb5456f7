#!/usr/bin/env bash
# The front door's cost and capacity (paper 001, issue 5), on loopback:
#  - capacity in new connections per second (wrk, "Connection: close" on
#    every request, a 1 KiB file): a node directly; the front door in proxy
#    mode over 2 nodes; HAProxy (Debian's) round robin over the same 2 nodes
#    in tcp and http mode; the front door in redirect mode (its 307s alone);
#  - added latency (mure bench conn-rate: new connections at 200/s for 10 s,
#    no queueing; HDR histograms): connection time (connect to the body's
#    end, a 1 KiB file) through each, median and p99, vs a node directly.
# Needs wrk and haproxy (apt-get install wrk haproxy).
#   scripts/bench/001-door.sh [DURATION] [CONNS]   (default 10s, wrk -c32)
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/admin.sh
dur=${1:-10s}
conns=${2:-32}
work=$(mktemp -d)
bin=$work/mure
go build -o "$bin" ./cmd/mure
pids=()
trap 'kill ${pids[@]} 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT INT TERM

start_nodes() { # $1: front door mode
  for i in 0 1; do
    extra=()
    [ "$i" = 1 ] && extra=(--join 127.0.0.1:7871 --key-file "$work/d0/cluster.key")
    env -u MURE_TOKEN "$bin" serve --data "$work/d$i" --http 127.0.0.1:787$((2 * i)) --peer 127.0.0.1:787$((2 * i + 1)) \
      --front 127.0.0.1:7880 --front-mode "$1" --front-policy round-robin --unsafe-no-fsync \
      --max-inflight 1024 --log-level error "${extra[@]}" >>"$work/n$i.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do curl -sf 127.0.0.1:787$((2 * i))/readyz >/dev/null && break; sleep 0.1; done
    if [ "$i" = 0 ]; then use_admin "$work/d0"; fi
  done
  for _ in $(seq 100); do
    curl "${auth[@]}" -sf 127.0.0.1:7870/status | grep -q '"active": true' && break
    curl "${auth[@]}" -sf 127.0.0.1:7872/status | grep -q '"active": true' && break
    sleep 0.1
  done
}
stop_nodes() { kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true; pids=(); }

start_nodes proxy
head -c 1024 /dev/urandom >"$work/f1k"
curl "${auth[@]}" -sf -X PUT --data-binary immediate 127.0.0.1:7870/config/resume >/dev/null
curl "${auth[@]}" -sf -X PUT --data-binary @"$work/f1k" 127.0.0.1:7870/files/bench/f1k >/dev/null
for _ in $(seq 100); do
  [ "$(curl "${auth[@]}" -s -o /dev/null -w '%{http_code}' 127.0.0.1:7872/files/bench/f1k)" = 200 ] && break
  sleep 0.1
done
cmp <(curl "${auth[@]}" -sf 127.0.0.1:7880/files/bench/f1k) "$work/f1k"

cat >"$work/haproxy.cfg" <<CFG
global
  maxconn 8000
  nbthread 2
defaults
  timeout connect 2s
  timeout client 30s
  timeout server 30s
frontend tcp_in
  mode tcp
  bind 127.0.0.1:7881
  default_backend tcp_nodes
backend tcp_nodes
  mode tcp
  balance roundrobin
  server n0 127.0.0.1:7870
  server n1 127.0.0.1:7872
frontend http_in
  mode http
  bind 127.0.0.1:7882
  default_backend http_nodes
backend http_nodes
  mode http
  balance roundrobin
  server n0 127.0.0.1:7870
  server n1 127.0.0.1:7872
CFG
haproxy -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf 127.0.0.1:7881/healthz >/dev/null && break; sleep 0.1; done
cmp <(curl "${auth[@]}" -sf 127.0.0.1:7881/files/bench/f1k) "$work/f1k" || { cat "$work/haproxy.log"; exit 1; }

rps() { wrk "${auth[@]}" -t1 -c"$conns" -d"$dur" -H "Connection: close" "$1" | awk '/Requests\/sec/ {print $2}'; }
lat() { # conn-rate at 200 new connections/s: connection time p50 and p99 in µs
  "$bin" bench conn-rate --node 127.0.0.1:7870 --url "$1" --rate 200 --clients 4 --duration 10s --warmup 1s \
    --json "$work/lat.json" >/dev/null 2>&1
  python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["groups"][0]; c=g["runs"][0]["conn"]["connection"]; print("%.0f %.0f %d" % (1000*c["p50_ms"], 1000*c["p99_ms"], g["errors"]))' "$work/lat.json"
}
printf "%-28s %12s %16s %16s %7s\n" path "new conn/s" "conn p50 µs" "conn p99 µs" errors
row() { read -r p50 p99 errs <<<"$(lat "$2")"; printf "%-28s %12.0f %16s %16s %7s\n" "$1" "$(rps "$2")" "$p50" "$p99" "$errs"; }
row "node directly" http://127.0.0.1:7870/files/bench/f1k
row "front door, proxy" http://127.0.0.1:7880/files/bench/f1k
row "haproxy tcp round robin" http://127.0.0.1:7881/files/bench/f1k
row "haproxy http round robin" http://127.0.0.1:7882/files/bench/f1k
stop_nodes
start_nodes redirect
# wrk does not follow redirects: its rate is the front door's 307s alone;
# conn-rate follows them, so its times include the node's answer.
row "front door, redirect" http://127.0.0.1:7880/files/bench/f1k
