#!/usr/bin/env bash
# pjdfstest (the Rust POSIX file system test suite, from crates.io) on a
# FUSE mount of a one-node cluster. Installs pjdfstest with cargo when it
# is missing (a few minutes of compiling), starts a node and a mount in a
# temporary directory, runs every test, then counts the tests that apply
# to a network file system without modes, owners, times, links or special
# files (docs/access.md lists the rules and the result). Needs root,
# /dev/fuse.
#   scripts/mount-posix.sh
set -euo pipefail
cd "$(dirname "$0")/.."
pjd=$(command -v pjdfstest || echo "$HOME/.cargo/bin/pjdfstest")
[ -x "$pjd" ] || cargo install pjdfstest --locked
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
mkdir -p "$work/data" "$work/mnt"
port=$((20000 + RANDOM % 20000))
"$bin" serve --data "$work/data" --http 127.0.0.1:$port --peer 127.0.0.1:$((port + 1)) --auth=false >"$work/node.log" 2>&1 &
node_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
"$bin" mount "$work/mnt" --node 127.0.0.1:$port --spool "$work" --op-timeout 10s >"$work/mount.log" 2>&1 &
mount_pid=$!
for _ in $(seq 50); do mountpoint -q "$work/mnt" && break; sleep 0.2; done
nogroup=$(getent group nogroup >/dev/null && echo nogroup || echo nobody)
cat >"$work/pjdfstest.toml" <<TOML
[settings]
naptime = 0.001
allow_remount = false
[dummy_auth]
entries = [["nobody", "$nogroup"], ["daemon", "daemon"]]
TOML
(cd "$work/mnt" && timeout 900 "$pjd" -c "$work/pjdfstest.toml" -p "$work/mnt" >"$work/all.log" 2>&1) || true
grep -E '^Summary' "$work/all.log"
# The tests that apply: calls the mount offers (open, truncate, ftruncate,
# mkdir, rmdir, unlink, rename) on regular files and folders; not special
# files or symlinks (block, char, fifo, socket, symlink, eloop, nofollow),
# hard links (linked, link_parent), times (time), modes, owners and other users
# (permission, uid_gid, write_access, preserve_metadata, and
# ftruncate::affected_create_flags_only, which runs as another user),
# exec (etxtbsy). open::open_trunc checks times only.
grep -E '^(open|truncate|ftruncate|mkdir|rmdir|unlink|rename)::[^ ]+ +(ok|FAILED)$' "$work/all.log" |
  grep -vE 'block|char|fifo|socket|symlink|eloop|nofollow|linked|link_parent|time|permission|uid_gid|write_access|preserve_metadata|etxtbsy' |
  grep -vE '^(ftruncate::affected_create_flags_only|open::open_trunc) ' \
    >"$work/applies.log" || true
pass=$(grep -c ' ok$' "$work/applies.log" || true)
total=$(wc -l <"$work/applies.log")
echo "applicable: $pass of $total passed"
awk '{print "  " ($NF == "ok" ? "ok:     " : "FAILED: ") $1}' "$work/applies.log"
