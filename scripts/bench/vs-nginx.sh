#!/usr/bin/env bash
# A mure node's read path beside nginx (Debian's), loopback, same files,
# wrk -t2 -c64: 4 KiB, 64 KiB and 1 MiB, on the main client port (where the
# front answers plain reads, docs/decisions/0018-front.md) and on the
# optional fast read lane (--http-fast). The three servers are measured in
# turn, ROUNDS times, so that a neighbour's load falls on all of them; the
# table gives each one's median req/s and the ratios of the medians, and
# the load average before and after. On a shared machine req/s follows the
# neighbours' load; the CPU time each server spends per request (user +
# system, from /proc/PID/stat around each wrk run: mure's process, nginx's
# master and workers) follows it much less, so the table gives its median
# too. Each round also gives, for the main port, the share of wrk's requests
# the front answered itself (under 1: connections went to net/http), the
# node's GC cycles during the run, and the machine's idle share during nginx's
# and the main port's runs (more idle: a server that keeps wrk waiting). Needs nginx, wrk and jq (apt-get install
# nginx-light wrk jq).
#   scripts/bench/vs-nginx.sh [DURATION] [ROUNDS]   (default 5s, 3 rounds)
# Ports: nginx on BASE, mure on BASE+10 (client), +11 (peer), +12 (fast
# lane); BASE is $VS_NGINX_PORT, 7980 by default (set another when a
# neighbour's benchmark holds these). VS_NGINX_BIN runs a mure binary
# built before (an A/B of two commits) instead of building this tree.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/admin.sh
dur=${1:-5s}
rounds=${2:-3}
base=${VS_NGINX_PORT:-7980}
ng=127.0.0.1:$base main=127.0.0.1:$((base + 10)) peer=127.0.0.1:$((base + 11)) fast=127.0.0.1:$((base + 12))
work=$(mktemp -d)
chmod 755 "$work" # nginx workers run as nobody
bin=${VS_NGINX_BIN:-$work/mure}
[ -n "${VS_NGINX_BIN:-}" ] || go build -o "$bin" ./cmd/mure
mkdir -p "$work/www/files/bench" "$work/nginx"
sed -e "s#NGINX_ROOT#$work/www#; s#NGINX_PORT#$base#; s#NGINX_DIR#$work/nginx#g" scripts/bench/nginx.conf >"$work/nginx.conf"
env -u MURE_TOKEN "$bin" serve --data "$work/data" --http $main --http-fast $fast --peer $peer --log-level error >"$work/mure.log" 2>&1 &
mpid=$!
nginx -c "$work/nginx.conf" &
npid=$!
trap 'kill $mpid $npid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT INT TERM
for i in $(seq 50); do curl -sf $main/readyz >/dev/null && break; sleep 0.1; done
use_admin "$work/data"
echo "load before: $(uptime)"
hz=$(getconf CLK_TCK)
# ticks PID...: the CPU time the processes have used, in clock ticks.
ticks() { local p t=0; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' /proc/"$p"/stat))); done; echo $t; }
# cpustat: the machine's "idle total" clock ticks (/proc/stat).
cpustat() { awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
# run URL PID...: "req/s µs-of-CPU-per-request requests idle-%" of one wrk run
# (idle: the share of the machine's CPU time nobody used meanwhile; a server
# that keeps wrk waiting leaves more of it).
run() {
  local url=$1 t0 out n i0 i1
  shift
  t0=$(ticks "$@")
  i0=$(cpustat)
  out=$(wrk "${auth[@]}" -t2 -c64 -d"$dur" "$url")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  i1=$(cpustat)
  echo "$(awk '/Requests\/sec/ {print $2}' <<<"$out") $(echo "($(ticks "$@") - $t0) * 1000000 / $hz / $n" | bc -l) $n \
$(echo "$i0 $i1" | awk '{printf "%.0f", 100 * ($3 - $1) / ($4 - $2)}')"
}
# node: "front_served gc_cycles" of the node now (/status, /metrics): a round whose
# CPU per request jumps says whether the front handed connections to net/http
# (front share under 1) or the collector ran more.
node() {
  echo "$(curl "${auth[@]}" -sf $main/status | jq '[.. | .front_served? // empty] | add // 0') \
$(curl "${auth[@]}" -sf $main/metrics | awk '/^go_gc_duration_seconds_count/ {print $2}')"
}
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

printf "%-6s %12s %16s %16s %7s %7s %9s %9s %9s   %s\n" size "nginx req/s" "mure main req/s" "mure fast req/s" main/ng fast/ng "ng µs/req" "main µs" "fast µs" "rounds (nginx/main/fast req/s; µs of CPU per request)"
for size in 4096 65536 1048576; do
  f=$work/www/files/bench/f$size
  head -c $size /dev/urandom >"$f" && chmod 644 "$f"
  curl "${auth[@]}" -sf -X PUT --data-binary @"$f" $main/files/bench/f$size >/dev/null
  cmp <(curl "${auth[@]}" -sf $main/files/bench/f$size) "$f"
  cmp <(curl "${auth[@]}" -sf $ng/files/bench/f$size) "$f"
  cmp <(curl "${auth[@]}" -sf $fast/files/bench/f$size) "$f"
  npids=("$npid" $(pgrep -P "$npid")) # the master and its workers
  ns=() ms=() qs=() nc=() mc=() qc=() all=""
  for r in $(seq "$rounds"); do
    read -r n ncpu _ nidle < <(run http://$ng/files/bench/f$size "${npids[@]}")
    read -r fs0 gc0 < <(node)
    read -r m mcpu mn midle < <(run http://$main/files/bench/f$size "$mpid")
    read -r fs1 gc1 < <(node)
    read -r q qcpu _ _ < <(run http://$fast/files/bench/f$size "$mpid")
    ns+=("$n") ms+=("$m") qs+=("$q") nc+=("$ncpu") mc+=("$mcpu") qc+=("$qcpu")
    all="$all ${n%.*}/${m%.*}/${q%.*}; $(printf '%.1f/%.1f/%.1f' "$ncpu" "$mcpu" "$qcpu"); main: front $(echo "($fs1 - $fs0) / $mn" | bc -l | xargs printf %.2f), gc $((gc1 - gc0)), idle nginx/main ${nidle}/${midle}% |"
  done
  n=$(med "${ns[@]}") m=$(med "${ms[@]}") q=$(med "${qs[@]}")
  printf "%-6s %12.0f %16.0f %16.0f %7.2f %7.2f %9.1f %9.1f %9.1f  %s\n" $((size / 1024))K "$n" "$m" "$q" "$(echo "$m / $n" | bc -l)" "$(echo "$q / $n" | bc -l)" \
    "$(med "${nc[@]}")" "$(med "${mc[@]}")" "$(med "${qc[@]}")" "$all"
done
echo "load after: $(uptime)"
