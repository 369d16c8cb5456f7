#!/usr/bin/env bash
# The front door's cost and capacity (paper 001, issue 5), on loopback:
#  - capacity in new connections per second (wrk, "Connection: close" on
#    every request, a 1 KiB file): a node directly; the front door in proxy
#    mode over 2 nodes; HAProxy (Debian's) round robin over the same 2 nodes
#    in tcp and http mode; the front door in redirect mode (its 307s alone);
#  - added latency (httperf, the paper's tool, 2000 connections at 200/s, no
#    queueing): connect and reply time through each vs a node directly.
# Needs wrk, httperf, haproxy (apt-get install wrk httperf haproxy).
#   scripts/bench/001-door.sh [DURATION] [CONNS]   (default 10s, wrk -c32)
set -euo pipefail
cd "$(dirname "$0")/../.."
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
    "$bin" serve --data "$work/d$i" --http 127.0.0.1:787$((2 * i)) --peer 127.0.0.1:787$((2 * i + 1)) \
      --front 127.0.0.1:7880 --front-mode "$1" --front-policy round-robin --unsafe-no-fsync \
      --max-inflight 1024 --log-level error "${extra[@]}" >>"$work/n$i.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do curl -sf 127.0.0.1:787$((2 * i))/readyz >/dev/null && break; sleep 0.1; done
  done
  for _ in $(seq 100); do
    curl -sf 127.0.0.1:7870/status | grep -q '"active": true' && break
    curl -sf 127.0.0.1:7872/status | grep -q '"active": true' && break
    sleep 0.1
  done
}
stop_nodes() { kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true; pids=(); }

start_nodes proxy
head -c 1024 /dev/urandom >"$work/f1k"
curl -sf -X PUT --data-binary immediate 127.0.0.1:7870/config/resume >/dev/null
curl -sf -X PUT --data-binary @"$work/f1k" 127.0.0.1:7870/files/bench/f1k >/dev/null
for _ in $(seq 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:7872/files/bench/f1k)" = 200 ] && break
  sleep 0.1
done
cmp <(curl -sf 127.0.0.1:7880/files/bench/f1k) "$work/f1k"

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
cmp <(curl -sf 127.0.0.1:7881/files/bench/f1k) "$work/f1k" || { cat "$work/haproxy.log"; exit 1; }

rps() { wrk -t1 -c"$conns" -d"$dur" -H "Connection: close" "$1" | awk '/Requests\/sec/ {print $2}'; }
lat() { # httperf: mean connect time and mean reply (response) time, ms
  httperf --hog --server 127.0.0.1 --port "$1" --uri /files/bench/f1k --num-conns 2000 --rate 200 2>/dev/null |
    awk '/^Connection time \[ms\]: min/ {c=$5} /^Connection time \[ms\]: connect/ {k=$5} /^Reply time \[ms\]: response/ {r=$5} /^Reply status/ {s=$0} END {printf "%s %s %s\n", k, r, c}'
}
printf "%-28s %14s %10s %10s %10s\n" path "new conn/s" "connect ms" "reply ms" "conn ms"
row() { read -r k r c <<<"$(lat "$3")"; printf "%-28s %14.0f %10s %10s %10s\n" "$1" "$(rps "$2")" "$k" "$r" "$c"; }
row "node directly" http://127.0.0.1:7870/files/bench/f1k 7870
row "front door, proxy" http://127.0.0.1:7880/files/bench/f1k 7880
row "haproxy tcp round robin" http://127.0.0.1:7881/files/bench/f1k 7881
row "haproxy http round robin" http://127.0.0.1:7882/files/bench/f1k 7882
stop_nodes
start_nodes redirect
row "front door, redirect (307)" http://127.0.0.1:7880/files/bench/f1k 7880
