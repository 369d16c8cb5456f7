#!/usr/bin/env bash
# fio on a FUSE mount of a one-node cluster beside the same jobs on the
# node's own disk: sequential 1 MiB write and read, random 4 KiB read.
# Starts a node (auth off, loopback) and a mount in a temporary directory,
# removes both at the end. Needs root (or fusermount3), /dev/fuse and fio.
#   scripts/bench/mount-fio.sh [SIZE]     # SIZE of the file, default 256M
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${1:-256M}
. scripts/mount-node.sh
mount_node
mkdir -p "$work/local"
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
