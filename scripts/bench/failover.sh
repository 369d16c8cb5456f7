#!/usr/bin/env bash
# Writes after kill -9 of the raft leader that holds the written file's
# right: three process nodes on loopback, default timings, N trials
# (default 20). Prints each trial and the distribution (min, median, p90,
# max) in seconds. docs/decisions/0017-failover-timings.md.
#   scripts/bench/failover.sh [TRIALS]
set -euo pipefail
cd "$(dirname "$0")/../.."
uptime
MURE_FAILOVER_TRIALS=${1:-20} go test ./systest -run '^TestFailoverTrials$' -count=1 -v -timeout 30m |
  grep -E 'trial|median|sorted|FAIL|ok'
uptime
