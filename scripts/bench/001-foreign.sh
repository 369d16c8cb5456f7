#!/usr/bin/env bash
# What the single-address mode costs the machine in traffic a node does not
# own (testbed, root; issue 6, the paper's ~25%): a client downloads a file
# file at its link's full rate, once through the cluster address (the hub
# floods the client's ACKs to every node, whose filters drop the ones they do
# not own, and the data frames to every port) and once straight from a node's
# own address on the learning bridge, alternating ROUNDS times. The machine's
# busy CPU time over each transfer is read from /proc/stat (on veth the
# receive softirq is not charged to the receiving namespace's cgroup).
# An idle interval as long as the transfer is measured too (the nodes'
# heartbeats and gossip): the transfers' own cost is busy minus idle.
#   scripts/bench/001-foreign.sh [OUT] [ROUNDS] [LINK] [MiB]
#   (default docs/bench/001-single, 3, 1gbit per server, 128 MiB)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-docs/bench/001-single}
rounds=${2:-3}
link=${3:-1gbit}
mib=${4:-128}
mkdir -p "$out"
. scripts/bench/testbed.sh mb1f-
tb down >/dev/null 2>&1 || true
tb up --hub --servers 3 --clients 1 --server-cpu 0.3 --client-cpu 0.3 --server-link "$link" --client-link 5gbit \
  --data-size $((4 * mib)) --node-args "--front $cip:8080 --front-mode single-address --front-vip $cip/24 --front-iface eth1 --front-policy round-robin --front-syn-path kernel" >/dev/null
sleep 3
head -c $((mib << 20)) /dev/urandom >"$work/big"
curl -sf -X PUT --data-binary @"$work/big" http://10.77.0.11:7946/files/bench/big >/dev/null
for i in 1 2 3; do # every node holds a copy (it serves the transfer itself)
  for _ in $(seq 300); do
    [ "$(curl -s -I -o /dev/null -w '%{http_code}' "http://10.77.0.1$i:7946/files/bench/big")" = 200 ] && break
    sleep 0.2
  done
done
busy() { awk '/^cpu / {print $2+$3+$4+$7+$8+$9}' /proc/stat; } # user nice system irq softirq steal, in jiffies
hz=$(getconf CLK_TCK)
summary=$out/foreign.txt
: >"$summary"
for r in $(seq "$rounds"); do
  for target in cluster direct; do
    url=http://$cip:8080/files/bench/big
    [ "$target" = direct ] && url=http://10.77.0.12:7946/files/bench/big
    b0=$(busy)
    res=$(tb exec c1 -- curl -sf -o /dev/null -w '%{size_download} %{time_total}' "$url")
    b1=$(busy)
    read -r size secs <<<"$res"
    cpu=$(echo "scale=3; ($b1 - $b0) / $hz" | bc)
    b0=$(busy)
    sleep "$secs"
    idle=$(echo "scale=3; ($(busy) - $b0) / $hz" | bc)
    echo "round $r $target: $size bytes in $secs s; machine busy $cpu CPU-s, idle for as long $idle CPU-s" | tee -a "$summary"
  done
done
