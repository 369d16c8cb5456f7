#!/usr/bin/env bash
# Paper 003, issue 22 item 1: the caching proxy's hit path beside Varnish
# (Debian's 7.1.1, malloc storage), both in front of the same nginx origin
# on loopback, wrk -t2 -c64, 4 KiB and 100 KiB objects already cached (hits
# only); mure on its net/http listener (--proxy) and on its fast lane
# (--proxy-fast). The three are measured in turn, ROUNDS times, so that a
# neighbour's load falls on all; the table gives each one's median req/s
# and p99, the ratios of the medians, and each server's CPU time per request
# (utime+stime from /proc/PID/stat before and after each run, all of
# Varnish's processes), which depends less on the neighbours than req/s.
# Needs nginx, wrk and varnish (apt-get install nginx-light wrk varnish).
#   scripts/bench/003-varnish.sh [DURATION] [ROUNDS]   (default 5s, 3 rounds)
# MURE_BIN runs that binary instead of building this tree (before/after).
# SIZES lists the object sizes in bytes (default "4096 102400").
set -euo pipefail
cd "$(dirname "$0")/../.."
dur=${1:-5s}
rounds=${2:-3}
work=$(mktemp -d)
chmod 755 "$work" # nginx workers and varnish's child run as other users
bin=${MURE_BIN:-$work/mure}
[ -n "${MURE_BIN:-}" ] || go build -o "$bin" ./cmd/mure
mkdir -p "$work/www" "$work/nginx" "$work/varnish"
sed -e "s#NGINX_ROOT#$work/www#; s#NGINX_PORT#7980#; s#NGINX_DIR#$work/nginx#g" \
  -e 's#root .*;#&\n\t\texpires 1h;#' scripts/bench/nginx.conf >"$work/nginx.conf"
nginx -c "$work/nginx.conf" &
npid=$!
varnishd -F -a 127.0.0.1:7981 -b 127.0.0.1:7980 -s malloc,256m -n "$work/varnish" >"$work/varnish.log" 2>&1 &
vpid=$!
env -u MURE_TOKEN "$bin" serve --data "$work/data" --http 127.0.0.1:7990 --peer 127.0.0.1:7991 \
  --proxy 127.0.0.1:7982 --proxy-fast 127.0.0.1:7983 --proxy-origin http://127.0.0.1:7980 --proxy-memory 256MiB --log-level error >"$work/mure.log" 2>&1 &
mpid=$!
trap 'kill $mpid $npid $vpid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT INT TERM
for _ in $(seq 100); do curl -sf 127.0.0.1:7990/readyz >/dev/null && curl -so /dev/null 127.0.0.1:7981/ && break; sleep 0.1; done
tck=$(getconf CLK_TCK)
# cpu PID...: the clock ticks (user + system) the processes and their
# children (Varnish's worker is the manager's child) have used so far.
cpu() {
  local t=0 p
  for p in "$@" $(pgrep -P "$1" || true); do
    [ -r /proc/$p/stat ] && t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat)))
  done
  echo $t
}
# run URL PID: one wrk run; prints req/s, p99 (ms) and CPU µs per request.
run() {
  local c0 c1 out
  c0=$(cpu "$2")
  out=$(wrk -t2 -c64 -d"$dur" --latency "$1")
  c1=$(cpu "$2")
  awk -v ticks=$((c1 - c0)) -v tck="$tck" '
    /Requests\/sec/ {rps = $2}
    / requests in / {n = $1}
    /^ +99%/ {p = $2; if (p ~ /us$/) p = p / 1000; else if (p ~ /ms$/) p = p + 0; else if (p ~ /s$/) p = p * 1000}
    END {printf "%s %.2f %.1f\n", rps, p, ticks * 1e6 / tck / n}' <<<"$out"
}
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "load before: $(uptime)"
printf "%-5s %11s %11s %11s %6s %6s %9s %9s %9s %8s %8s %8s  %s\n" size "varnish r/s" "mure r/s" "fast r/s" mure/v fast/v "v p99 ms" "m p99 ms" "f p99 ms" "v µs/req" "m µs/req" "f µs/req" "rounds (varnish/mure/fast r/s)"
for size in ${SIZES:-4096 102400}; do
  f=$work/www/f$size
  head -c $size /dev/urandom >"$f" && chmod 644 "$f"
  for port in 7981 7982 7983; do # fill, then check that it is a hit and whole
    curl -sf 127.0.0.1:$port/f$size >/dev/null
    cmp <(curl -sf 127.0.0.1:$port/f$size) "$f"
  done
  for port in 7982 7983; do
    curl -sfI 127.0.0.1:$port/f$size | grep -qi '^cache-status: mure; hit' || { echo "mure: /f$size is not a hit on $port" >&2; exit 1; }
  done
  curl -sfI 127.0.0.1:7981/f$size | grep -qi '^age: [0-9]' || { echo "varnish: /f$size is not a hit" >&2; exit 1; }
  vr=() mr=() vp=() mp=() vc=() mc=() fr=() fp=() fc=() all=""
  for _ in $(seq "$rounds"); do
    read -r r p c < <(run http://127.0.0.1:7981/f$size $vpid)
    vr+=("$r") vp+=("$p") vc+=("$c")
    read -r r2 p c < <(run http://127.0.0.1:7982/f$size $mpid)
    mr+=("$r2") mp+=("$p") mc+=("$c")
    read -r r3 p c < <(run http://127.0.0.1:7983/f$size $mpid)
    fr+=("$r3") fp+=("$p") fc+=("$c")
    all="$all ${r%.*}/${r2%.*}/${r3%.*}"
  done
  v=$(med "${vr[@]}") m=$(med "${mr[@]}") f=$(med "${fr[@]}")
  printf "%-5s %11.0f %11.0f %11.0f %6.2f %6.2f %9.2f %9.2f %9.2f %8.1f %8.1f %8.1f  %s\n" $((size / 1024))K "$v" "$m" "$f" \
    "$(echo "$m / $v" | bc -l)" "$(echo "$f / $v" | bc -l)" "$(med "${vp[@]}")" "$(med "${mp[@]}")" "$(med "${fp[@]}")" \
    "$(med "${vc[@]}")" "$(med "${mc[@]}")" "$(med "${fc[@]}")" "$all"
done
echo "load after: $(uptime)"
