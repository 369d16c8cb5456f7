#!/usr/bin/env bash
# Paper 003's experiment (issue 22 item 4) on the emulated-host testbed
# (root): one cache node (s1) whose host has a memory limit (MEM MiB, page
# cache included) below its disk tier's contents and a throttled disk
# (DISKR MB/s read), an nginx origin on its own host (c1), and two load
# generators on hosts of their own: c2 runs wrk over a catalogue of OBJS
# objects of KIB KiB (64) (random paths, larger than the memory tier and than
# the host's memory, so most requests read the disk tier), c3 runs wrk -c2
# on one hot object (always in memory) whose p99 is read on its own.
# Offered load is stepped by c2's connections (closed loop: wrk2 is not
# installed, so no fixed rate), STEPS, each for DUR; both generators run
# together. Twice: --proxy-bypass=false (paper 003's behaviour, every
# request waits for the disk) and --proxy-bypass (decision 0042: a busy
# disk's requests go to the origin). The disk tier is filled first by one
# ordered pass over the catalogue (FILL seconds).
#   scripts/bench/003.sh                  # ~3 minutes
# MEM is 128 (MiB) by default, below the disk tier's 250 MiB as the
# experiment wants (at 400 the host's page cache held much of the disk
# tier). BYPASS_MAX sets --proxy-bypass-max (decision 0055: relays to the
# origin in flight, halved while the host's CPU quota runs out); the
# requests shed beyond it (503, retried by c2 after Retry-After) are the
# shed column; bound is mure_cache_bypass_limit during the step (min/mean).
#   STEPS="4 16" DUR=5s scripts/bench/003.sh
# Paper 003's tuning table on mure's knobs (docs/benchmarks.md, paper 003):
# PMEM (--proxy-memory, 16MiB), DISK (the testbed's --disk: loop, a throttled
# disk of the host's own, or tmpfs, the node's data on a RAM disk charged to
# the host's memory), NODE_ARGS (more mure serve flags). Every line records
# them in the column config, e.g.
#   MODES=false PMEM=64MiB scripts/bench/003.sh
# FILLMBPS: the loop disk's rate during the fill (mure testbed slow-disk),
# back to DISKR/40 MB/s afterwards. By default the fill runs at those rates:
# its later passes wait for reads at 4 MB/s, and a catalogue of 6,000
# objects was not half on disk after 50 s (the rest were misses).
# GOML: the node's GOMEMLIMIT (60% of MEM by default), e.g. to keep it when
# MEM grows by a tmpfs disk tier's size.
# HOT_RETRY=1: the hot generator (c3) runs the Lua script too (MODE=hot), so
# it waits for a refusal's Retry-After as c2 does; plain wrk reconnects at
# once after a refusal (e.g. --max-conns) and floods the node with them.
# Column ok_req_per_s: the random generator's 2xx/3xx answers a second
# (wrk's req/s counts refusals too, e.g. with NODE_ARGS="--max-conns 16").
# Charts and the tuning table from the results: go run ./scripts/bench/003chart
# Run it under the testbed lock: flock -w 1800 /work/notes/testbed.lock ...
# Results: docs/bench/003/results.tsv (one line per mode and step, with
# the date and the load average).
set -euo pipefail
cd "$(dirname "$0")/../.."
modes=${MODES:-"false true"} steps=${STEPS:-"2 8 32 96"} dur=${DUR:-8s}
objs=${OBJS:-4000} kib=${KIB:-64} mem=${MEM:-128} bmax=${BYPASS_MAX:-32} diskr=${DISKR:-4} fill=${FILL:-50}
pmem=${PMEM:-16MiB} disk=${DISK:-loop} nargs=${NODE_ARGS:-} fillmbps=${FILLMBPS:-} goml=${GOML:-$((mem * 6 / 10))MiB}
config="mem=${mem}MB${GOML:+ gomemlimit=$GOML} pmem=$pmem disk=$disk"
[ "$disk" = loop ] && config+=":${diskr}MB/s${fillmbps:+ fill:${fillmbps}MB/s}"
[ -z "$nargs" ] || config+=" $nargs"
[ -z "${HOT_RETRY:-}" ] || config+=" hot-retry"
out=docs/bench/003; mkdir -p "$out"
res=${RES:-$out/results.tsv}
[ -f "$res" ] || printf 'date\tbypass\tconns\treq_per_s\tp50_ms\tp99_ms\thot_req_per_s\thot_p50_ms\thot_p99_ms\thits_mem\thits_disk\toverload\tmiss\terrors\tload\tshed\tconfig\tok_req_per_s\tbound\n' >"$res"
lua=$PWD/scripts/bench/003-random.lua
. scripts/bench/testbed.sh mtb3-
chmod 755 "$work" # nginx's workers run as www-data
cache=10.77.0.11 origin=10.77.0.101
# the nodes' logs are kept in $LOGS (default /tmp/003-logs)
logs=${LOGS:-/tmp/003-logs}
cleanup() {
  mkdir -p "$logs" && cp -r "$work"/tb/logs/. "$logs"/ 2>/dev/null || true
  echo "host after the steps: $(curl -s -m 5 "$cache:7946/status" | jq -c '.host | {memory_bytes, memory_limit_bytes, page_cache_bytes}')"
  [ -f "$work/nginx/nginx.pid" ] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null || true
  tb down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# the origin's catalogue: OBJS files of KIB KiB and one hot object
mkdir -p "$work/www/o" "$work/nginx"
head -c $((objs * kib * 1024)) /dev/urandom | split -b $((kib * 1024)) -a 5 -d - "$work/www/o/"
head -c $((kib * 1024)) /dev/urandom >"$work/www/hot"
chmod -R a+rX "$work/www"
sed -e "s#NGINX_ROOT#$work/www#; s#127.0.0.1:NGINX_PORT#8000#; s#NGINX_DIR#$work/nginx#g" \
  -e 's#root .*;#&\n\t\texpires 1h;#' scripts/bench/nginx.conf >"$work/nginx.conf"

# counts: the proxy's results so far, "hit overload miss error shed", and the
# bytes served from its memory and disk tiers (0 when it does not answer)
counts() {
  local m t
  m=$(curl -s -m 5 "$cache:7946/metrics" | awk '
    /^mure_cache_requests_total\{result="hit"\}/ {h = $2}
    /^mure_cache_requests_total\{result="overload"\}/ {o = $2}
    /^mure_cache_requests_total\{result="miss"\}/ {m = $2}
    /^mure_cache_requests_total\{result="error"\}/ {e = $2}
    /^mure_cache_requests_total\{result="shed"\}/ {s = $2}
    END {printf "%d %d %d %d %d", h, o, m, e, s}')
  t=$(curl -s -m 5 "$cache:7946/status" | jq -r '.services.proxy.counts | "\(.cache_memory_bytes // 0) \(.cache_disk_bytes // 0)"' 2>/dev/null || true)
  echo "$m ${t:-0 0}"
}
# okrate FILE: the 2xx/3xx answers a second of one wrk output
okrate() {
  awk '/requests in/ {n = $1; d = $4; sub(/s,?$/, "", d)} /Non-2xx/ {bad = $NF}
    END {if (d > 0) printf "%.1f", (n - bad) / d; else printf "0.0"}' "$1"
}
# wrkout FILE: req/s, p50 and p99 in ms of one wrk --latency output
wrkout() {
  awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec/ {r = $2} /^ +50%/ {p50 = ms($2)} /^ +99%/ {p99 = ms($2)}
    END {printf "%.1f %.2f %.2f", r, p50, p99}' "$1"
}

for bypass in $modes; do
  echo "== bypass=$bypass $config: up ($(uptime))"
  tb down >/dev/null 2>&1 || true
  GOMEMLIMIT=$goml tb up --servers 1 --clients 3 --unbalanced --server-link 1gbit --client-link 1gbit \
    --server-cpu 0.4 --client-cpu 0.2 --memory "$mem" --disk "$disk" --disk-size 1024 \
    --disk-read "$diskr" --disk-write 40 \
    --node-args "--proxy :8080 --proxy-origin http://$origin:8000 --proxy-memory $pmem --proxy-disk 512MiB --proxy-bypass=$bypass --proxy-bypass-max $bmax${nargs:+ $nargs}" >/dev/null
  tb exec c1 -- nginx -c "$work/nginx.conf" >"$work/nginx.out" 2>&1 &
  npid=$!
  for _ in $(seq 100); do tb exec c2 -- curl -sfo /dev/null "http://$origin:8000/hot" 2>/dev/null && break; sleep 0.1; done
  tb exec c3 -- curl -sfo /dev/null "http://$cache:8080/hot"
  # fill: one ordered pass (and more) over the catalogue
  [ -z "$fillmbps" ] || [ "$disk" != loop ] || tb slow-disk s1 "$fillmbps" >/dev/null
  tb exec c2 -- env N="$objs" MODE=seq wrk -t1 -c2 -d"${fill}s" -s "$lua" "http://$cache:8080" >"$work/fill" 2>&1
  [ -z "$fillmbps" ] || [ "$disk" != loop ] || tb slow-disk s1 0 >/dev/null
  echo "filled: $(wrkout "$work/fill") (req/s p50 p99); objects: $(curl -s -m 5 "$cache:7946/status" | jq -c '.services.proxy.tiers'); host: $(curl -s -m 5 "$cache:7946/status" | jq -c '.host | {memory_bytes, memory_limit_bytes, page_cache_bytes}')"
  if ! curl -sf -m 5 -o /dev/null "$cache:7946/healthz"; then
    echo "the cache node does not answer after the fill (its memory limit? dmesg | grep oom); its log: $logs" >&2
    exit 1
  fi
  for c in $steps; do
    read -r _ o0 m0 e0 s0 bm0 bd0 < <(counts)
    la=$(cut -d' ' -f1 /proc/loadavg)
    tb exec c2 -- env N="$objs" wrk -t2 -c"$c" -d"$dur" --timeout 10s --latency -s "$lua" "http://$cache:8080" >"$work/r" 2>&1 &
    rp=$!
    # the bypass bound (mure_cache_bypass_limit) twice a second: "min/mean"
    (while kill -0 "$rp" 2>/dev/null; do
      curl -s -m 1 "$cache:7946/metrics" | awk '/^mure_cache_bypass_limit / {print $2}'
      sleep 0.5
    done) >"$work/bound" &
    bp=$!
    if [ -n "${HOT_RETRY:-}" ]; then
      tb exec c3 -- env MODE=hot wrk -t1 -c2 -d"$dur" --timeout 10s --latency -s "$lua" "http://$cache:8080" >"$work/h" 2>&1 || true
    else
      tb exec c3 -- wrk -t1 -c2 -d"$dur" --timeout 10s --latency "http://$cache:8080/hot" >"$work/h" 2>&1 || true
    fi
    wait "$rp" || true
    wait "$bp" || true
    bound=$(awk 'NR == 1 || $1 < m {m = $1} {s += $1} END {if (NR) printf "%d/%.1f", m, s / NR; else print "-"}' "$work/bound")
    read -r _ o1 m1 e1 s1 bm1 bd1 < <(counts)
    line=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$(date -u +%FT%TZ)" "$bypass" "$c" \
      "$(wrkout "$work/r" | tr ' ' '\t')" "$(wrkout "$work/h" | tr ' ' '\t')" \
      $(((bm1 - bm0) / (kib * 1024))) $(((bd1 - bd0) / (kib * 1024))) $((o1 - o0)) $((m1 - m0)) $((e1 - e0)) "$la" $((s1 - s0)) "$config" "$(okrate "$work/r")" "$bound")
    echo "$line" | tee -a "$res"
  done
  [ -f "$work/nginx/nginx.pid" ] && kill "$(cat "$work/nginx/nginx.pid")" 2>/dev/null || true
  wait "$npid" 2>/dev/null || true
done
echo "load after: $(uptime)"
