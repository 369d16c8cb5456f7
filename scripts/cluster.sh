#!/usr/bin/env bash
# Three mure nodes on 127.0.0.1 (client API ports 7946, 7956, 7966), data
# under ./data/n{1,2,3}, sharing a front door on 127.0.0.1:7940 (opened by
# the dispatcher role's holder) and serving the CGI programs of scripts/cgi.
# Ctrl-C stops them all.
set -euo pipefail
cd "$(dirname "$0")/.."
# serve takes MURE_TOKEN as a static admin token (deprecated): one exported
# in this shell from an earlier tour must not become the new nodes' credential
unset MURE_TOKEN
go build -o bin/mure ./cmd/mure
mkdir -p data
pids=()
common=(--front 127.0.0.1:7940 --cgi-dir scripts/cgi)
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT INT TERM
bin/mure serve --data data/n1 --http 127.0.0.1:7946 --peer 127.0.0.1:7947 "${common[@]}" & pids+=($!)
for _ in $(seq 100); do [ -f data/n1/admin.token ] && curl -sf localhost:7946/readyz >/dev/null 2>&1 && break; sleep 0.1; done
echo "admin credential: export MURE_TOKEN=\$(cat data/n1/admin.token)   # then mure ... or curl -H \"Authorization: Bearer \$MURE_TOKEN\""
bin/mure serve --data data/n2 --http 127.0.0.1:7956 --peer 127.0.0.1:7957 "${common[@]}" --join 127.0.0.1:7947 --key-file data/n1/cluster.key & pids+=($!)
bin/mure serve --data data/n3 --http 127.0.0.1:7966 --peer 127.0.0.1:7967 "${common[@]}" --join 127.0.0.1:7947 --key-file data/n1/cluster.key & pids+=($!)
wait
