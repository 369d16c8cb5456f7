#!/usr/bin/env bash
# Paper 002's experiment (shared file systems for IaaS clouds) on the
# emulated-host testbed (root): N client hosts each write, then read, a
# file of their own; aggregate MB/s against N, in three arrangements:
#   gfarm  every client host runs a node and writes and reads through it
#          (S3 to its own node: the write is local, the read finds the
#          local copy);
#   pvfs   2 fixed server hosts; the clients run no node; client i's file
#          is on server 1 + (i-1) mod 2 (S3 to that server);
#   s3fs   servers as in pvfs; s3fs-fuse on every client host, mounted
#          through the front door (proxy mode, its VIP 10.77.0.10:8080),
#          which hands each connection to a server in round robin.
# Every host has a disk of its own whose rate is the limit (DISK MB/s read
# and write), a memory limit (MEM MiB, page cache included) a quarter of the
# file or less, and a CPU quota (CPU cores). Replica count 1, durability
# local. Every request is signed S3 (curl --aws-sigv4, s3fs).
#   scripts/bench/002.sh                       # all, N = 1 2 4 8 (~10 minutes)
#   ARRS=gfarm NS="1 2" scripts/bench/002.sh   # a part
# Run it under the testbed lock: flock -w 1800 /work/notes/testbed.lock ...
# Results: docs/bench/002/results.tsv (one line per arrangement, N and
# phase, appended with the date and load average); the chart:
# go run ./scripts/bench/002chart (docs/img/002-aggregate.png).
set -euo pipefail
cd "$(dirname "$0")/../.."
arrs=${ARRS:-"gfarm pvfs s3fs"} ns=${NS:-"1 2 4 8"}
size=${SIZE:-256} mem=${MEM:-64} disk=${DISK:-20} cpu=${CPU:-0.15} link=${LINK:-400mbit}
maxn=$(tr ' ' '\n' <<<"$ns" | sort -n | tail -1)
if [ "$size" -lt $((4 * mem)) ] && [ -z "${SMOKE:-}" ]; then
  echo "a file of $size MiB is less than 4x a host's $mem MiB: the page cache would serve the reads (SMOKE=1 to allow)" >&2
  exit 2
fi
for hosts in "$maxn" $((maxn + 2)); do # gfarm; pvfs and s3fs
  if [ "$(echo "$hosts * $cpu > 1.6" | bc -l)" = 1 ]; then
    echo "$hosts hosts at $cpu cores are more than the testbed's 1.6 cores: lower CPU or NS" >&2
    exit 2
  fi
done
out=docs/bench/002; mkdir -p "$out"
res=${RES:-$out/results.tsv}
[ -f "$res" ] || printf 'date\tarrangement\tclients\tphase\tMB_per_s\tseconds\tclient_MB_per_s_min\tclient_MB_per_s_max\tfailed\tplacement\tload\n' >"$res"
. scripts/bench/testbed.sh mtb2-
. scripts/bench/admin.sh
# the nodes' and s3fs's logs are kept in $LOGS (default /tmp/002-logs)
logs=${LOGS:-/tmp/002-logs}
cur=none
save_logs() { mkdir -p "$logs/$cur"; cp -r "$work"/tb/logs/. "$work"/s3fs*.log "$logs/$cur"/ 2>/dev/null || true; }
trap 'for m in "$work"/mnt/*; do fusermount -u "$m" 2>/dev/null || true; done; save_logs; tb down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT INT TERM
vip=10.77.0.10
n1=10.77.0.11:7946
addr() { echo "10.77.0.$1"; } # 11.. servers, 101.. clients

up() { # SERVERS CLIENTS [NODE-ARGS]
  tb down >/dev/null 2>&1 || true
  # each server's disk holds the files it serves in every N's run (a
  # removed file's space was not back at once, 507 no_space on disks sized
  # for one run's files, before the fix of TestDeletedSpaceComesBack; the
  # margin stays), the raft log and room
  local dsize=512 n
  for n in $ns; do dsize=$((dsize + size * ((n + $1 - 1) / $1))); done
  tb up --auth --unbalanced --servers "$1" --clients "$2" --server-link "$link" --client-link "$link" \
    --server-cpu "$cpu" --client-cpu "$cpu" --memory "$mem" --disk loop --disk-size "$dsize" \
    --disk-read "$disk" --disk-write "$disk" --node-args "--s3 :9000 ${3:-}" >/dev/null
  use_admin "$work/tb/data/s1/node"
  "$bin" config set replication 1 --node "$n1" >/dev/null
  "$bin" config set durability local --node "$n1" >/dev/null
  local key
  key=$("$bin" s3 key create --json --node "$n1")
  ak=$(jq -r .access_key_id <<<"$key") sk=$(jq -r .secret_access_key <<<"$key")
  # The secret goes to curl in a file only root reads, not on its command
  # line (where ps would show it for the length of the run).
  (umask 077 && printf 'user = "%s:%s"\n' "$ak" "$sk" >"$work/curlrc" && printf '%s:%s\n' "$ak" "$sk" >"$work/passwd")
  sig=(--aws-sigv4 "aws:amz:us-east-1:s3" -K "$work/curlrc" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
  curl -sSf "${sig[@]}" -X PUT "http://$(addr 11):9000/bench" >/dev/null
  # node ID -> host name, for the placement of each file
  declare -gA hostOf=()
  local i
  for i in $(seq "$1"); do
    hostOf[$(curl -s "$(addr $((10 + i))):7946/healthz" | jq -r .node)]=s$i
  done
}

# s3fs_mount I: s3fs on client host cI, through the front door
s3fs_mount() {
  local m=$work/mnt/c$1
  mkdir -p "$m" "$work/s3fs-tmp"
  tb exec "c$1" -- s3fs bench "$m" -o "url=http://$vip:8080,use_path_request_style,passwd_file=$work/passwd,endpoint=us-east-1,nomultipart,tmpdir=$work/s3fs-tmp,stat_cache_expire=1,retries=2,readwrite_timeout=120,dbglevel=warn,logfile=$work/s3fs-c$1.log" \
    >>"$work/s3fs.log" 2>&1 || true
  for _ in $(seq 100); do mountpoint -q "$m" && return 0; sleep 0.1; done
  echo "s3fs on c$1 did not mount; its log:" >&2
  cat "$work/s3fs.log" "$work/s3fs-c$1.log" >&2
  return 1
}
s3fs_unmount() {
  local i
  for i in $(seq "$1"); do fusermount -u "$work/mnt/c$i"; done
  for _ in $(seq 100); do pgrep -x s3fs >/dev/null || return 0; sleep 0.1; done
}

# client ARR I PHASE: one client's write or read, inside its host; prints
# its seconds and the bytes moved
client() {
  local arr=$1 i=$2 phase=$3 host url
  case $arr in
    gfarm) host=s$i url=http://$(addr $((10 + i))):9000/bench/c$i ;;
    pvfs) host=c$i url=http://$(addr $((11 + (i - 1) % 2))):9000/bench/c$i ;;
    s3fs)
      local f=$work/mnt/c$i/c$i dd="dd if=$work/mnt/c$i/c$i of=/dev/null bs=1M status=none"
      [ "$phase" = write ] && dd="dd if=/dev/zero of=$f bs=1M count=$size status=none"
      # dd's close returns once s3fs has uploaded the file
      tb exec "c$i" -- sh -c "set -e; s=\$(date +%s.%N); $dd; e=\$(date +%s.%N); echo \"\$(echo \"\$e - \$s\" | bc -l) \$(stat -c %s $f)\""
      return ;;
  esac
  if [ "$phase" = write ]; then
    # the upload is chunked (its length is not known ahead): the bytes
    # stored are checked afterwards (placement)
    tb exec "$host" -- sh -c "head -c ${size}M /dev/zero | curl -sSf $(printf '%q ' "${sig[@]}") -T - $url -o /dev/null -w '%{time_total} $((size << 20))\n'"
  else
    tb exec "$host" -- curl -sSf "${sig[@]}" "$url" -o /dev/null -w '%{time_total} %{size_download}\n'
  fi
}

# placement N: where each client's file is (host of its valid copies)
placement() {
  local i ids p=""
  for i in $(seq "$1"); do
    local st
    st=$(curl -s "${auth[@]}" "$n1/status/files/bench/c$i")
    if [ "$(jq -r .size <<<"$st")" != $((size << 20)) ]; then
      p+="${p:+ }c$i:none"
      continue
    fi
    ids=$(jq -r '.valid[]?' <<<"$st")
    local hs="" id
    for id in $ids; do hs+="${hs:++}${hostOf[$id]:-$id}"; done
    p+="${p:+ }c$i:${hs:-none}"
  done
  echo "$p"
}

# phase ARR N PHASE: the N clients at once; appends the result line
phase() {
  local arr=$1 n=$2 ph=$3 i t0 t1 la pl=""
  la=$(cut -d' ' -f1 /proc/loadavg)
  t0=$(date +%s.%N)
  for i in $(seq "$n"); do client "$arr" "$i" "$ph" >"$work/r$i" 2>&1 & done
  if ! wait; then :; fi
  t1=$(date +%s.%N)
  local bytes=0 rates=()
  local failed=0
  for i in $(seq "$n"); do
    read -r secs b <"$work/r$i" || true
    if [ "${b:-0}" != $((size << 20)) ]; then # counted, as the paper counts S3FS's I/O errors
      echo "$arr N=$n $ph: client $i failed: $(tr '\n' ' ' <"$work/r$i")" >&2
      failed=$((failed + 1))
      continue
    fi
    bytes=$((bytes + b))
    rates+=("$(echo "$b / 1000000 / $secs" | bc -l)")
  done
  [ "${#rates[@]}" -gt 0 ] || rates=(0)
  local secs mbps lo hi
  secs=$(echo "$t1 - $t0" | bc -l)
  mbps=$(echo "$bytes / 1000000 / $secs" | bc -l)
  lo=$(printf '%s\n' "${rates[@]}" | sort -g | head -1)
  hi=$(printf '%s\n' "${rates[@]}" | sort -g | tail -1)
  if [ "$ph" = write ]; then
    pl=$(placement "$n")
    # a write that succeeded must have stored the whole file
    if [ "$(grep -o ':none' <<<"$pl" | wc -l)" != "$failed" ]; then
      echo "$arr N=$n: $failed writes failed, but the stored files are: $pl" >&2
      exit 1
    fi
  fi
  printf '%s\t%s\t%d\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%s\t%s-%s\n' "$(date -u +%FT%TZ)" "$arr" "$n" "$ph" "$mbps" "$secs" "$lo" "$hi" \
    "$failed" "$pl" "$la" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$res"
}

# run ARR: every N on one testbed (the files of the previous N removed)
run() {
  local arr=$1 n i
  for n in $ns; do
    for i in $(seq "$maxn"); do curl -sS "${sig[@]}" -X DELETE "http://$(addr 11):9000/bench/c$i" >/dev/null; done
    if [ "$arr" = s3fs ]; then for i in $(seq "$n"); do s3fs_mount "$i"; done; fi
    phase "$arr" "$n" write
    if [ "$arr" = s3fs ]; then # a fresh mount reads from the cluster, not s3fs's temporary file
      s3fs_unmount "$n"
      for i in $(seq "$n"); do s3fs_mount "$i"; done
    fi
    phase "$arr" "$n" read
    if [ "$arr" = s3fs ]; then s3fs_unmount "$n"; fi
  done
}

echo "002: files $size MiB, hosts with $mem MiB, $cpu cores, disks $disk MB/s, links $link; load $(cut -d' ' -f1-3 /proc/loadavg)"
for arr in $arrs; do
  cur=$arr
  case $arr in
    gfarm) up "$maxn" 0 ;;
    pvfs) up 2 "$maxn" ;;
    s3fs) up 2 "$maxn" "--front $vip:8080 --front-vip $vip/24 --front-iface eth0 --front-mode proxy --front-policy round-robin" ;;
    *) echo "unknown arrangement $arr (gfarm, pvfs, s3fs)" >&2; exit 2 ;;
  esac
  run "$arr"
  save_logs
done
tb down
