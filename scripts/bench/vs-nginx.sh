#!/usr/bin/env bash
# A mure node's read path beside nginx (Debian's), one run, loopback, same
# files, wrk -t2 -c64: 4 KiB, 64 KiB and 1 MiB, on the main port and on the
# fast read lane (--http-fast). Needs nginx and wrk
# (apt-get install nginx-light wrk). Prints a table of req/s and the ratio.
#   scripts/bench/vs-nginx.sh [DURATION]   (default 10s per measurement)
set -euo pipefail
cd "$(dirname "$0")/../.."
dur=${1:-10s}
work=$(mktemp -d)
chmod 755 "$work" # nginx workers run as nobody
bin=$work/mure
go build -o "$bin" ./cmd/mure
mkdir -p "$work/www/files/bench" "$work/nginx"
sed -e "s#NGINX_ROOT#$work/www#; s#NGINX_PORT#7980#; s#NGINX_DIR#$work/nginx#g" scripts/bench/nginx.conf >"$work/nginx.conf"
"$bin" serve --data "$work/data" --http 127.0.0.1:7990 --http-fast 127.0.0.1:7992 --peer 127.0.0.1:7991 --log-level error >"$work/mure.log" 2>&1 &
mpid=$!
nginx -c "$work/nginx.conf" &
npid=$!
trap 'kill $mpid $npid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT INT TERM
for i in $(seq 50); do curl -sf 127.0.0.1:7990/readyz >/dev/null && break; sleep 0.1; done
printf "%-6s %12s %16s %16s %7s %7s\n" size "nginx req/s" "mure main req/s" "mure fast req/s" main/ng fast/ng
for size in 4096 65536 1048576; do
  f=$work/www/files/bench/f$size
  head -c $size /dev/urandom >"$f" && chmod 644 "$f"
  curl -sf -X PUT --data-binary @"$f" 127.0.0.1:7990/files/bench/f$size >/dev/null
  cmp <(curl -sf 127.0.0.1:7990/files/bench/f$size) "$f"
  cmp <(curl -sf 127.0.0.1:7980/files/bench/f$size) "$f"
  cmp <(curl -sf 127.0.0.1:7992/files/bench/f$size) "$f"
  rps() { wrk -t2 -c64 -d"$dur" "$1" | awk '/Requests\/sec/ {print $2}'; }
  n=$(rps http://127.0.0.1:7980/files/bench/f$size)
  m=$(rps http://127.0.0.1:7990/files/bench/f$size)
  q=$(rps http://127.0.0.1:7992/files/bench/f$size)
  printf "%-6s %12.0f %16.0f %16.0f %7.2f %7.2f\n" $((size / 1024))K "$n" "$m" "$q" "$(echo "$m / $n" | bc -l)" "$(echo "$q / $n" | bc -l)"
done
