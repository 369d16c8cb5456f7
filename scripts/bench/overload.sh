#!/usr/bin/env bash
# One node process at twice its sustainable request rate (issue 3, overload).
#  1. closed loop (64 clients, 1 KiB files): the sustainable GET and PUT rates;
#  2. open loop at 2x each rate for DURATION (at most 4096 outstanding, so the
#     node's own limits, not the generator, decide what is refused), while
#     /healthz, /metrics, /status and the dashboard's data (/ui/api/view,
#     with a session cookie) are probed every 200 ms and the node's
#     RSS and open file descriptors are sampled every 200 ms.
# Prints, per operation: sustainable rate, what was offered, admitted p50/p99/
# max (from the scheduled time), 503s (and how many the node's admission
# counted), max RSS, max fds, max goroutines, probe answers and their worst
# latency, and the dashboard probes' p99. Loopback, generator and node on the same machine; the node is held
# to NODE_CPU cores (default 0.25, a cgroup CPU quota; 0: no limit) so that the
# generator, with the rest, can offer twice what the node sustains. Default
# node limits (256 in flight, 1024 waiting, 2 s wait), fsync on.
#   scripts/bench/overload.sh [DURATION]   (default 20s; about 3 minutes in all)
# OPS=write measures writes only. NODE_FLAGS adds serve flags (e.g. "--max-inflight 32 --max-queue 128").
# Needs root for the CPU quota, curl and jq. OUT=DIR keeps the reports and
# samples there.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/admin.sh
dur=${1:-20s}
closed=${CLOSED:-10s}
addr=127.0.0.1:7986
while [ -e /tmp/bench.lock ]; do sleep 10; done # another benchmark runs
work=$(mktemp -d)
node= samp= prob= cg=
cleanup() {
  kill $samp $prob $node 2>/dev/null || true
  wait 2>/dev/null || true
  [ -z "$cg" ] || rmdir "$cg" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
# limit_cpu PID CORES: a CPU quota over a 10 ms period (cgroup v1 or v2).
limit_cpu() {
  local q
  q=$(awk -v c="$2" 'BEGIN {printf "%d", c * 10000}')
  if [ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    cg=/sys/fs/cgroup/cpu/mure-overload-$$
    mkdir "$cg" && echo 10000 >"$cg/cpu.cfs_period_us" && echo "$q" >"$cg/cpu.cfs_quota_us" && echo "$1" >"$cg/cgroup.procs"
  elif grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
    cg=/sys/fs/cgroup/mure-overload-$$
    mkdir "$cg" && echo "$q 10000" >"$cg/cpu.max" && echo "$1" >"$cg/cgroup.procs"
  else
    echo "no cgroup CPU controller: the node runs without a CPU limit" >&2
  fi
}
bin=$work/mure
go build -o "$bin" ./cmd/mure
# shellcheck disable=SC2086 # NODE_FLAGS is a list of flags
env -u MURE_TOKEN "$bin" serve --data "$work/data" --http $addr --peer 127.0.0.1:7987 --log-level error ${NODE_FLAGS:-} >"$work/node.log" 2>&1 &
node=$!
cpu=${NODE_CPU:-0.25}
[ "$cpu" = 0 ] || limit_cpu $node "$cpu"
for _ in $(seq 100); do curl -sf "http://$addr/readyz" >/dev/null && break; sleep 0.1; done
curl -sf "http://$addr/readyz" >/dev/null || { echo "node not ready" >&2; cat "$work/node.log" >&2; exit 1; }
use_admin "$work/data"
# the dashboard's session, for its probes (a token login)
curl -s -o /dev/null -c "$work/ui.cookies" --data-urlencode "token=${MURE_TOKEN:-}" "http://$addr/ui/login" || true

bench() { # op json extra-flags...
  local op=$1 json=$2
  shift 2
  timeout 600 "$bin" bench replicated-io --node $addr --clients 64 --files 20 --sizes 1K \
    --op "$op" --timeout 10s --json "$json" "$@" >"$json.txt"
}
# sample FILE: "rss_kB fds" of the node every 200 ms.
sample() {
  while kill -0 "$node" 2>/dev/null; do
    echo "$(awk '/^VmRSS/ {print $2}' /proc/$node/status) $(ls /proc/$node/fd | wc -l)"
    sleep 0.2
  done >"$1"
}
# probe FILE: "path status seconds [goroutines]" every 200 ms.
probe() {
  while :; do
    for p in /healthz /metrics /status /ui/api/view; do
      r=$(curl "${auth[@]}" -b "$work/ui.cookies" -s -o "$1.body" -w '%{http_code} %{time_total}' --max-time 5 "http://$addr$p" || true)
      g=
      [ $p = /metrics ] && g=$(awk '/^go_goroutines / {print $2}' "$1.body" 2>/dev/null || true)
      echo "$p ${r:-000 5} $g"
    done
    sleep 0.2
  done >"$1"
}
rejected() { # the node's admission refusals so far
  curl "${auth[@]}" -s "http://$addr/metrics" | awk '/^mure_(write_)?admission_rejected_total/ {s += $2} END {print s + 0}'
}
field() { jq -r ".groups[0].runs[0].$2 // 0" "$1"; }
quantile() { # Q FILE: the Q-th percentile of FILE's sorted numbers
  awk -v q="$1" '{a[NR] = $1} END {if (!NR) {print "-"; exit} i = int(NR * q / 100 + 0.999); if (i > NR) i = NR; printf "%.1f", a[i]}' "$2"
}

printf "%-4s %9s %9s %9s %8s %8s %8s %7s %7s %7s %8s %7s %6s %6s %9s\n" \
  op "sust/s" "offered/s" "admit/s" "p50 ms" "p99 ms" "max ms" "503" "counted" "other" "RSS MiB" "fds" "gor" probes "probe ms"
for op in ${OPS:-read write}; do
  bench $op "$work/$op-closed.json" --duration "$closed" --warmup 2s
  sust=$(field "$work/$op-closed.json" ops_per_s)
  rate=$(awk -v s="$sust" 'BEGIN {printf "%d", 2 * s}')
  before=$(rejected)
  sample "$work/$op.samples" &
  samp=$!
  probe "$work/$op.probes" &
  prob=$!
  bench $op "$work/$op-open.json" --rate "$rate" --outstanding 4096 --duration "$dur"
  kill $samp $prob 2>/dev/null || true
  wait $samp $prob 2>/dev/null || true
  samp= prob=
  counted=$(($(rejected) - before))
  j=$work/$op-open.json
  n503=$(field "$j" 'error_kinds.http_503')
  other=$(($(field "$j" errors) - n503))
  read -r rss fds < <(awk 'BEGIN {r = 0; f = 0} {if ($1 > r) r = $1; if ($2 > f) f = $2} END {printf "%.0f %d\n", r / 1024, f}' "$work/$op.samples")
  read -r probes bad worst gor < <(awk '{n++; if ($2 != 200) b++; if ($3 > w) w = $3; if ($4 > g) g = $4} END {printf "%d %d %.0f %d\n", n, b, w * 1000, g}' "$work/$op.probes")
  printf "%-4s %9.0f %9.0f %9.0f %8.1f %8.1f %8.1f %7d %7d %7d %8s %7s %6s %6s %9s\n" \
    $op "$sust" "$(field "$j" rate)" "$(field "$j" ops_per_s)" \
    "$(field "$j" latency.p50_ms)" "$(field "$j" latency.p99_ms)" "$(field "$j" latency.max_ms)" \
    "$n503" "$counted" "$other" "$rss" "$fds" "$gor" "$probes/$((probes - bad))ok" "$worst"
  ui=$work/$op.ui-ms
  awk '$1 == "/ui/api/view" && $2 == 200 {print $3 * 1000}' "$work/$op.probes" | sort -n >"$ui"
  echo "     dashboard (/ui/api/view): $(wc -l <"$ui") of $(grep -c '^/ui/api/view ' "$work/$op.probes") probes answered 200; p50 $(quantile 50 "$ui") ms, p99 $(quantile 99 "$ui") ms"
  echo "     open loop: $(field "$j" requests) sent, $(field "$j" ok) ok, $(field "$j" dropped) dropped by the generator; errors: $(jq -c '.groups[0].runs[0].error_kinds // {}' "$j")"
done
echo "node CPU limit: ${cpu} cores (0: none), flags: ${NODE_FLAGS:-none}; peak RSS of the node over the whole script: $(awk '/^VmHWM/ {printf "%.0f MiB", $2 / 1024}' /proc/$node/status)"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$work"/*.json "$work"/*.samples "$work"/*.probes "$OUT"/; fi
