#!/usr/bin/env bash
# One large object through S3 on a one-node cluster: aws cli uploads it
# (multipart, 64 MiB parts), heads it, downloads it and compares; prints the
# times and the node's peak memory (VmHWM), which stays bounded whatever
# the size. Starts a node (auth off, loopback) in a temporary directory
# and removes it at the end. Needs aws (pip install awscli) and about
# 4 x SIZE of free disk (the file, the parts, the object, the download).
#   scripts/bench/s3-large.sh [SIZE]     # default 5G (S3's largest single PUT; issue 18's size)
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${1:-5G}
work=$(mktemp -d)
bin=$work/mure
go build -o "$bin" ./cmd/mure
node_pid=
cleanup() {
  [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null && wait "$node_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/data"
port=$((20000 + RANDOM % 20000))
"$bin" serve --data "$work/data" --http 127.0.0.1:$port --peer 127.0.0.1:$((port + 1)) --s3 127.0.0.1:$((port + 2)) \
  --auth=false >"$work/node.log" 2>&1 &
node_pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$((port + 2))/" && break; sleep 0.2; done
curl -s -o /dev/null "http://127.0.0.1:$((port + 2))/" || { echo "the node's S3 port did not open:" >&2; cat "$work/node.log" >&2; exit 1; }
export AWS_CONFIG_FILE=$work/aws-config AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true
unset AWS_CA_BUNDLE
printf '[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n    multipart_chunksize = 64MB\n    max_concurrent_requests = 4\n' >"$AWS_CONFIG_FILE"
s3() { aws --no-sign-request --endpoint-url "http://127.0.0.1:$((port + 2))" "$@"; }
secs() { local t0=$1; echo "$(( $(date +%s%N) - t0 ))" | awk '{ printf "%.1f", $1 / 1e9 }'; }
head -c "$size" /dev/urandom >"$work/object"
bytes=$(stat -c %s "$work/object")
uptime
s3 s3 mb s3://big >/dev/null
t0=$(date +%s%N)
s3 s3 cp --only-show-errors "$work/object" s3://big/object
up=$(secs "$t0")
s3 s3api head-object --bucket big --key object | grep -E '"(ContentLength|ETag)"'
t0=$(date +%s%N)
s3 s3 cp --only-show-errors s3://big/object "$work/back"
down=$(secs "$t0")
cmp "$work/object" "$work/back" && echo "downloaded copy is identical"
awk -v b="$bytes" -v u="$up" -v d="$down" 'BEGIN { printf "%.0f bytes: upload %s s (%.0f MiB/s), download %s s (%.0f MiB/s)\n", b, u, b / 1048576 / u, d, b / 1048576 / d }'
grep VmHWM "/proc/$node_pid/status" | awk '{ printf "node peak memory (VmHWM): %d MiB\n", $2 / 1024 }'
uptime
