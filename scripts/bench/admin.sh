# Sourced by the benchmarks that start mure nodes on loopback. Defines
# use_admin DIR: later requests carry the admin credential that the node
# with data directory DIR wrote there at its first start: auth (header
# flags for curl and wrk) and MURE_TOKEN, exported for mure's own clients.
# A binary older than authentication writes none: both are cleared.
# Start every node as `env -u MURE_TOKEN BIN serve ...`: serve takes
# MURE_TOKEN as a static admin token (deprecated; the only credential of a
# binary older than authentication), so a credential exported here for the
# clients must not reach a node started after it.
#   . scripts/bench/admin.sh
auth=()
use_admin() {
  local f=$1/admin.token
  for _ in $(seq 50); do [ -f "$f" ] && break; sleep 0.1; done
  [ -f "$f" ] || { auth=(); unset MURE_TOKEN; return 0; }
  MURE_TOKEN=$(cat "$f")
  export MURE_TOKEN
  auth=(-H "Authorization: Bearer $MURE_TOKEN")
}
