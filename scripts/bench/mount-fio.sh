#!/usr/bin/env bash
# fio on a FUSE mount of a one-node cluster beside the same jobs on the
# node's own disk: sequential 1 MiB write and read, random 4 KiB read.
# Starts a node (auth off, loopback) and a mount in a temporary directory,
# removes both at the end. Needs root (or fusermount3), /dev/fuse and fio.
#   scripts/bench/mount-fio.sh [SIZE]     # SIZE of the file, default 256M
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${1:-256M}
work=$(mktemp -d)
bin=$work/mure
go build -o "$bin" ./cmd/mure
node_pid= mount_pid=
cleanup() {
  [ -n "$mount_pid" ] && kill -INT "$mount_pid" 2>/dev/null && wait "$mount_pid" 2>/dev/null || true
  fusermount3 -uz "$work/mnt" 2>/dev/null || umount -l "$work/mnt" 2>/dev/null || true
  [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null && wait "$node_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/data" "$work/mnt" "$work/local"
port=$((20000 + RANDOM % 20000))
"$bin" serve --data "$work/data" --http 127.0.0.1:$port --peer 127.0.0.1:$((port + 1)) --auth=false >"$work/node.log" 2>&1 &
node_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
"$bin" mount "$work/mnt" --node 127.0.0.1:$port --spool "$work" >"$work/mount.log" 2>&1 &
mount_pid=$!
for _ in $(seq 50); do mountpoint -q "$work/mnt" && break; sleep 0.2; done
uptime
run() { # where, name, fio args...
  local dir=$1 name=$2
  shift 2
  fio --name="$name" --directory="$dir" --filename=fio.dat --size="$size" --ioengine=psync --invalidate=1 \
    --output-format=terse --terse-version=3 "$@" |
    awk -F';' -v n="$name" '{ printf "%-28s read %8.1f MiB/s %8d IOPS   write %8.1f MiB/s %8d IOPS\n", n, $7/1024, $8, $48/1024, $49 }'
}
for where in local mnt; do
  run "$work/$where" "$where seq write 1MiB" --rw=write --bs=1M --end_fsync=1
  run "$work/$where" "$where seq read 1MiB" --rw=read --bs=1M
  run "$work/$where" "$where rand read 4KiB" --rw=randread --bs=4k --runtime=10 --time_based
done
uptime
