#!/usr/bin/env bash
# The robustness runs (make test-robustness): randomized fault schedules
# (kill -9 and restart, SIGSTOP, cut off from the peers) of 20 s each on
# three spawned nodes while six clients read, write, compare-and-set,
# create and delete; every history is checked for linearizability
# (internal/lincheck, porcupine). A failing seed prints its replay command.
#
#   scripts/robustness.sh [fast|default|all] [SEEDS]
#
# fast: the test clusters' fast timings (the fault run, and the same
# through forwarding); default: the production timings (decision 0017),
# where elections and lease expiries take longer. SEEDS defaults to 20 per
# test; one seed of each takes about 30-60 s on 2 cores.
#
# The checker must still bite: MURE_NODE_ARGS=--debug-unsafe-reads starts
# the nodes with a deliberately broken protocol (reads without the lease
# and fence checks), and every run should then fail (docs/reliability.md).
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-all}
seeds=${2:-20}
case "$which" in
fast | default | all) ;;
*)
  echo "usage: $0 [fast|default|all] [SEEDS]" >&2
  exit 2
  ;;
esac
if [ "$which" != default ]; then
  MURE_ROBUSTNESS_RUNS=$seeds go test -count=1 -timeout 60m -v \
    -run '^(TestLinearizabilityUnderFaults|TestLinearizabilityThroughForwarding)$' ./systest
fi
if [ "$which" != fast ]; then
  MURE_ROBUSTNESS_RUNS=$seeds go test -count=1 -timeout 40m -v \
    -run '^TestLinearizabilityDefaultTimings$' ./systest
fi
