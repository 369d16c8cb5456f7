# Sourced by the testbed benchmarks: builds mure into a scratch folder and
# defines tb (mure testbed with this script's own PREFIX and state folder),
# torn down with the folder on exit. Sets work, bin and cip (the
# single-address cluster address on the hub).
#   . scripts/bench/testbed.sh PREFIX
work=$(mktemp -d)
bin=$work/mure
go build -o "$bin" ./cmd/mure
tb_prefix=$1
tb() { "$bin" testbed --prefix "$tb_prefix" --dir "$work/tb" "$@"; }
trap 'tb down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT INT TERM
cip=10.77.1.10
