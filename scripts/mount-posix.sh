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
. scripts/mount-node.sh
mount_node --op-timeout 10s
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
