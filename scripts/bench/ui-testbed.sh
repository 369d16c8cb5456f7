#!/usr/bin/env bash
# The dashboard's answer time while its node is driven past its capacity
# (issue 23), on the emulated-host testbed (root). One server host (0.2 core,
# 100 Mbit/s, the node's data on tmpfs), the load generator on client host
# c1 (an open loop at twice the node's sustainable rate of 1 KiB reads, at
# most 4096 outstanding), and the dashboard's data — /ui/api/view (what the
# page draws from), /history (a peer's or a restarted page's backfill) and
# /metrics (a scraper) — asked from client host c2 every 200 ms during the
# overload. Prints the sustainable rate, what the overloaded node admitted,
# the reads the front answered and refused, the Go runtime's GC cycles,
# pauses, goroutines and heap at the scrapes, and the probes' p50, p99 and
# max; the target is p99 <= 200 ms.
# The view is also asked every 200 ms on one kept-alive connection, and
# the page's event stream is kept open, to show what a browser sees; the
# target is the fresh connections' p99.
#   scripts/bench/ui-testbed.sh [DURATION]    (default 20s; about 2 minutes)
# Testbed nodes run without authentication, so the probes need no session.
# Environment:
#   UI=port   the probes ask the node's monitoring port (--ui-addr, port
#             7948; the default); UI=http: its client port, as before
#             decision 0044
#   NODE_ARGS more flags of the node (e.g. --max-inflight 16)
#   NODE_ENV  environment of the node (e.g. GOGC=400), through testbed up
#   MURE_BIN  a binary to run instead of building this tree (to compare
#             two versions in one go; an older one needs UI=http)
#   TRACE=DIR keep in DIR what tells where a slow probe waited: each
#             probe's start and curl's connect, request-sent and
#             first-byte times, the node's log, the probes' packets at
#             both ends (tcpdump, when installed), the TCP counters of
#             both hosts (nstat: retransmits, listen queue overflows),
#             the links' queue drops (tc -s) and the node's CFS
#             throttling (cpu.stat), before and after the overload;
#             with GOTRACE=SECONDS also a Go execution trace of the node
#             that long from 5 s into the overload (go tool trace)
set -euo pipefail
cd "$(dirname "$0")/../.."
dur=${1:-20s}
secs=${dur%s}
ui=${UI:-port}
work=$(mktemp -d /var/tmp/mure-ui-testbed.XXXXXX)
bin=$work/mure
if [ -n "${MURE_BIN:-}" ]; then
  cp "$MURE_BIN" "$bin"
else
  go build -o "$bin" ./cmd/mure
fi
cleanup() {
  "$bin" testbed down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
"$bin" testbed down >/dev/null 2>&1 || true
node=10.77.0.11:7946
case $ui in
port) probe=10.77.0.11:7948 nodeargs="--ui-addr $probe" ;;
http) probe=$node nodeargs= ;;
*) echo "UI is port or http (got $ui)" >&2; exit 2 ;;
esac
[ -z "${TRACE:-}" ] || [ -z "${GOTRACE:-}" ] || nodeargs="$nodeargs --pprof 10.77.0.11:6060" # the trace is taken with TRACE only
env ${NODE_ENV:-} "$bin" testbed up --servers 1 --clients 2 --server-cpu 0.2 --client-cpu 0.6 \
  --server-link 100mbit --client-link 100mbit --disk tmpfs --data-size 2000 --node-args "$nodeargs ${NODE_ARGS:-}" >"$work/up.log"
tx() { "$bin" testbed exec "$@"; }
state=/run/mure-testbed/state.json
host() { jq -r --arg h "$1" ".hosts[] | select(.name == \$h) | .$2" "$state"; }
snap() { # NAME: the counters TRACE keeps, before and after the overload
  [ -n "${TRACE:-}" ] || return 0
  local s1 c2
  s1=$(host s1 netns) c2=$(host c2 netns)
  { echo "== $1 $(date +%s.%N)"
    for ns in "$s1" "$c2"; do echo "-- nstat $ns"; ip netns exec "$ns" nstat -az | grep -E 'Retrans|ListenOverflows|ListenDrops|TCPTimeouts|LossProbe|SynRetrans|TCPBacklogDrop|TCPReqQFull|TCPAbort' || true; done
    echo "-- tc $s1"; ip netns exec "$s1" tc -s qdisc show
    echo "-- tc root"; tc -s qdisc show dev "$(host s1 veth)"; tc -s qdisc show dev "$(host c2 veth)"
    echo "-- cpu.stat"; cat "$(host s1 cgroup.cpu)/cpu.stat"
    echo "-- ss $s1"; ip netns exec "$s1" ss -lnt
  } >>"$TRACE/counters"
}
if [ -n "${TRACE:-}" ]; then
  mkdir -p "$TRACE"
  trap 'cp "$(host s1 log)" "$TRACE/node.log" 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; cleanup' EXIT INT TERM
fi
bench() { # json flags...
  local json=$1
  shift
  tx c1 -- "$bin" bench replicated-io --node $node --clients 64 --files 20 --sizes 1K \
    --op read --timeout 10s --json "$json" "$@" >"$json.txt"
}
field() { jq -r ".groups[0].runs[0].$2 // 0" "$1"; }

bench "$work/closed.json" --duration 10s --warmup 2s
sust=$(field "$work/closed.json" ops_per_s)
rate=$(awk -v s="$sust" 'BEGIN {printf "%d", 2 * s}')

# the probes: curl from c2, one path after the other, every 200 ms, for the
# overload's duration (bounded by count), each on a new connection
n=$((secs * 5))
snap before
if [ -n "${TRACE:-}" ] && command -v tcpdump >/dev/null; then
  c2addr=$(host c2 addr)
  ip netns exec "$(host c2 netns)" timeout $((secs + 30)) tcpdump -nn -tt -i any -w "$TRACE/c2.pcap" "tcp and host ${probe%:*}" 2>/dev/null &
  ip netns exec "$(host s1 netns)" timeout $((secs + 30)) tcpdump -nn -tt -i any -w "$TRACE/s1.pcap" "tcp and host $c2addr" 2>/dev/null &
  sleep 1
fi
tx c2 -- sh -c "for i in \$(seq $n); do
  for p in /ui/api/view /history /metrics; do
    out=/dev/null; [ \$p = /metrics ] && out=$work/metrics.\$i
    t=\$(date +%s.%N)
    curl -s -o \$out -w \"\$p %{http_code} %{time_total} %{time_connect} %{time_pretransfer} %{time_starttransfer} \$t %{local_port}\n\" --max-time 5 http://$probe\$p || echo \"\$p 000 5 5\"
  done
  sleep 0.2
done" >"$work/probes" &
prober=$!
# the view again, every 200 ms on one kept-alive connection, as a browser
# asks (curl reuses its connection between serial transfers; %{num_connects}
# says when it had to open a new one)
urls=$(for i in $(seq $n); do printf -- '-o /dev/null http://%s/ui/api/view ' "$probe"; done)
tx c2 -- curl -s --rate 5/s -w '%{http_code} %{time_total} %{num_connects}\n' --max-time 5 $urls >"$work/kept" 2>/dev/null &
keeper=$!
# the page's event stream, kept open as a browser keeps it: when each
# update arrives (the monitor publishes on each whole second of the clock,
# and the hosts share the machine's clock; grep, not awk: mawk holds lines
# back until its input buffer fills)
printf '%s\n' "curl -sN --max-time $((secs + 2)) http://$probe/ui/api/events | grep --line-buffered '^event:' | while read -r e; do date +%s.%N; done" >"$work/events.sh"
tx c2 -- sh "$work/events.sh" >"$work/events" 2>/dev/null &
streamer=$!
if [ -n "${TRACE:-}" ] && [ -n "${GOTRACE:-}" ]; then
  (sleep 5; tx c2 -- curl -s -o "$TRACE/go.trace" "http://10.77.0.11:6060/debug/pprof/trace?seconds=$GOTRACE") &
fi
bench "$work/open.json" --rate "$rate" --outstanding 4096 --duration "$dur"
wait $prober
wait $keeper || true
wait $streamer || true
snap after
[ -z "${TRACE:-}" ] || cp "$work/probes" "$work/kept" "$work/events" "$TRACE/"

quantile() { # Q: the Q-th percentile (ms) of the numbers on stdin
  sort -n | awk -v q="$1" '{a[NR] = $1 * 1000} END {if (!NR) {print "-"; exit} i = int(NR * q / 100 + 0.999); if (i > NR) i = NR; printf "%.1f", a[i]}'
}
echo "probes on $ui ($probe), node flags: ${nodeargs:-none} ${NODE_ARGS:-} ${NODE_ENV:-}; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'reads: sustainable %.0f/s, offered %.0f/s, admitted %.0f/s, admitted p99 %.1f ms, 503s %s\n' \
  "$sust" "$(field "$work/open.json" rate)" "$(field "$work/open.json" ops_per_s)" \
  "$(field "$work/open.json" latency.p99_ms)" "$(field "$work/open.json" 'error_kinds.http_503')"
# the Go runtime at the scrapes: GC cycles and their pauses in the run,
# the most goroutines and heap in use
gofig() { for i in $(seq $n); do awk -v m="$1" '$1 == m {print $2}' "$work/metrics.$i" 2>/dev/null || true; done; }
gc=$(gofig go_gc_duration_seconds_count | sort -g | awk 'NR == 1 {a = $1} {b = $1} END {print b - a}')
pause=$(gofig go_gc_duration_seconds_sum | sort -g | awk 'NR == 1 {a = $1} {b = $1} END {printf "%.1f", (b - a) * 1000}')
gor=$(gofig go_goroutines | sort -g | tail -1)
heap=$(gofig go_memstats_heap_inuse_bytes | sort -g | tail -1 | awk '{printf "%.0f", $1 / 1048576}')
api=$(tx c2 -- curl -s --max-time 5 http://$probe/status | jq -c '.services.api | {front_served, front_refused, prompted_accepts}' 2>/dev/null || true)
echo "client API after the run: ${api:--}"
echo "go runtime at the scrapes: ${gc:--} GC cycles, pauses ${pause:--} ms in all, at most ${gor:--} goroutines and ${heap:--} MiB heap in use"
for p in /ui/api/view /history /metrics; do
  ok=$(awk -v p="$p" '$1 == p && $2 == 200' "$work/probes" | wc -l)
  all=$(awk -v p="$p" '$1 == p' "$work/probes" | wc -l)
  printf '%-14s %d/%d answered 200   p50 %s ms   p99 %s ms   max %s ms   (connected: p99 %s ms)\n' "$p" "$ok" "$all" \
    "$(awk -v p="$p" '$1 == p {print $3}' "$work/probes" | quantile 50)" \
    "$(awk -v p="$p" '$1 == p {print $3}' "$work/probes" | quantile 99)" \
    "$(awk -v p="$p" '$1 == p {print $3}' "$work/probes" | quantile 100)" \
    "$(awk -v p="$p" '$1 == p {print $4}' "$work/probes" | quantile 99)"
done
printf '%-14s %d/%d answered 200   p50 %s ms   p99 %s ms   max %s ms   (%d new connections)\n' "view kept-alive" \
  "$(awk '$1 == 200' "$work/kept" | wc -l)" "$(wc -l <"$work/kept")" \
  "$(awk '{print $2}' "$work/kept" | quantile 50)" "$(awk '{print $2}' "$work/kept" | quantile 99)" \
  "$(awk '{print $2}' "$work/kept" | quantile 100)" "$(awk '{s += $3} END {print s + 0}' "$work/kept")"
# an update's lateness: its arrival after the whole second it was published
# on (the first, sent on connecting, left out); a gap over 1.5 s between
# two is a second whose update came more than half a second late or never
awk 'NR > 1 {printf "%.6f\n", $1 - int($1)}' "$work/events" >"$work/late"
printf '%-14s %d updates   late p50 %s ms   p99 %s ms   max %s ms   (%d gaps over 1.5 s)\n' "view stream" \
  "$(wc -l <"$work/late")" "$(quantile 50 <"$work/late")" "$(quantile 99 <"$work/late")" "$(quantile 100 <"$work/late")" \
  "$(awk 'NR > 1 && $1 - p > 1.5 {n++} {p = $1} END {print n + 0}' "$work/events")"
