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
env ${NODE_ENV:-} "$bin" testbed up --servers 1 --clients 2 --server-cpu 0.2 --client-cpu 0.6 \
  --server-link 100mbit --client-link 100mbit --disk tmpfs --data-size 2000 --node-args "$nodeargs ${NODE_ARGS:-}" >"$work/up.log"
tx() { "$bin" testbed exec "$@"; }
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
# overload's duration (bounded by count)
n=$((secs * 5))
tx c2 -- sh -c "for i in \$(seq $n); do
  for p in /ui/api/view /history /metrics; do
    out=/dev/null; [ \$p = /metrics ] && out=$work/metrics.\$i
    curl -s -o \$out -w \"\$p %{http_code} %{time_total} %{time_connect}\n\" --max-time 5 http://$probe\$p || echo \"\$p 000 5 5\"
  done
  sleep 0.2
done" >"$work/probes" &
prober=$!
bench "$work/open.json" --rate "$rate" --outstanding 4096 --duration "$dur"
wait $prober

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
api=$(tx c2 -- curl -s --max-time 5 http://$probe/status | jq -c '.services.api | {front_served, front_refused}' 2>/dev/null || true)
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
