# Sourced, from the repository's root, by the scripts that run something
# on a FUSE mount of a one-node cluster (scripts/mount-posix.sh,
# scripts/bench/mount-fio.sh). mount_node [MOUNT FLAGS...] makes a
# temporary directory $work, builds mure into $bin, starts a node there
# (loopback, authentication off; its log in $work/node.log) and mounts it
# at $work/mnt (extra flags go to mure mount; its log in $work/mount.log);
# at exit both are stopped and $work removed. Needs root (or fusermount3)
# and /dev/fuse.
mount_node() {
  work=$(mktemp -d)
  node_pid= mount_pid=
  trap mount_node_cleanup EXIT
  bin=$work/mure
  go build -o "$bin" ./cmd/mure
  mkdir -p "$work/data" "$work/mnt"
  local port=$((20000 + RANDOM % 20000))
  "$bin" serve --data "$work/data" --http 127.0.0.1:$port --peer 127.0.0.1:$((port + 1)) --auth=false >"$work/node.log" 2>&1 &
  node_pid=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.2; done
  "$bin" mount "$work/mnt" --node 127.0.0.1:$port --spool "$work" "$@" >"$work/mount.log" 2>&1 &
  mount_pid=$!
  for _ in $(seq 50); do mountpoint -q "$work/mnt" && break; sleep 0.2; done
}

mount_node_cleanup() {
  [ -n "$mount_pid" ] && kill -INT "$mount_pid" 2>/dev/null && wait "$mount_pid" 2>/dev/null || true
  fusermount3 -uz "$work/mnt" 2>/dev/null || umount -l "$work/mnt" 2>/dev/null || true
  [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null && wait "$node_pid" 2>/dev/null || true
  rm -rf "$work"
}
