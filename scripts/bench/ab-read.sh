#!/usr/bin/env bash
# Two mure binaries (A and B: two commits) side by side on loopback, one
# node each, the same file in each, wrk -t2 -c64 on each in turn, ROUNDS
# times per size: each run's req/s and the CPU time the node spent per
# request (user + system from /proc/PID/stat around the run, divided by
# the requests wrk counted; on loopback it includes the kernel's delivery
# of the bytes to wrk). On a shared machine the CPU per request is the
# figure to compare; req/s follows the neighbours. Extra serve flags for
# both nodes in $AB_ARGS (e.g. --cache 0). AB_FAST=1 starts each node with
# --http-fast and measures the reads there (the fast read lane). Needs wrk.
#   scripts/bench/ab-read.sh BIN_A BIN_B [ROUNDS] [DURATION] [SIZE...]
#   (default 3 rounds of 4s, sizes 20480 32768 65536)
# Ports: $AB_PORT (8300 by default) and the next 11.
set -euo pipefail
a=$1 b=$2
rounds=${3:-3} dur=${4:-4s}
shift 2
shift $(($# < 2 ? $# : 2))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(20480 32768 65536)
base=${AB_PORT:-8300}
work=$(mktemp -d)
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' /proc/"$1"/stat; }
declare -A bin pid tok addr
bin[A]=$a bin[B]=$b
trap 'kill ${pid[@]} 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT INT TERM
declare -A raddr
port=$base
for k in A B; do
  addr[$k]=127.0.0.1:$port raddr[$k]=127.0.0.1:$port
  fast=()
  if [ -n "${AB_FAST:-}" ]; then
    raddr[$k]=127.0.0.1:$((port + 2)) fast=(--http-fast "${raddr[$k]}")
  fi
  # shellcheck disable=SC2086 # AB_ARGS is a list of flags
  env -u MURE_TOKEN "${bin[$k]}" serve --data "$work/$k" --http "${addr[$k]}" --peer 127.0.0.1:$((port + 1)) "${fast[@]}" ${AB_ARGS:-} --log-level error >"$work/$k.log" 2>&1 &
  pid[$k]=$!
  port=$((port + 10))
done
for k in A B; do
  for _ in $(seq 50); do curl -sf "${addr[$k]}/readyz" >/dev/null && break; sleep 0.1; done
  for _ in $(seq 50); do [ -f "$work/$k/admin.token" ] && break; sleep 0.1; done
  tok[$k]=$(cat "$work/$k/admin.token")
done
echo "A: $a"
echo "B: $b ${AB_ARGS:-}"
echo "load before: $(uptime)"
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf "%-7s %9s %9s %8s %8s   %s\n" size "A req/s" "B req/s" "A µs" "B µs" "rounds (A req/s, µs | B req/s, µs)"
for size in "${sizes[@]}"; do
  head -c "$size" /dev/urandom >"$work/f"
  for k in A B; do
    curl -H "Authorization: Bearer ${tok[$k]}" -sf -X PUT --data-binary @"$work/f" "${addr[$k]}/files/bench/f$size" >/dev/null
    cmp <(curl -H "Authorization: Bearer ${tok[$k]}" -sf "${addr[$k]}/files/bench/f$size") "$work/f"
  done
  declare -A rps=() us=()
  all=""
  for _ in $(seq "$rounds"); do
    for k in A B; do
      t0=$(ticks "${pid[$k]}")
      out=$(wrk -H "Authorization: Bearer ${tok[$k]}" -t2 -c64 -d"$dur" "http://${raddr[$k]}/files/bench/f$size")
      n=$(awk '/requests in/ {print $1}' <<<"$out")
      r=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
      u=$(echo "($(ticks "${pid[$k]}") - $t0) * 1000000 / $hz / $n" | bc -l)
      rps[$k]="${rps[$k]:-} $r" us[$k]="${us[$k]:-} $u"
      all="$all ${r%.*}, $(printf %.1f "$u") |"
    done
  done
  # shellcheck disable=SC2086 # word lists
  printf "%-7s %9.0f %9.0f %8.1f %8.1f  %s\n" "$size" "$(med ${rps[A]})" "$(med ${rps[B]})" "$(med ${us[A]})" "$(med ${us[B]})" "$all"
done
echo "load after: $(uptime)"
