#!/usr/bin/env bash
# Paper 004's experiment on the emulated-host testbed (docs/benchmarks.md, 004):
# simulated users log in one every INTERVAL seconds, each following a script
# like the paper's table 2 in a tmux window driving mure session attach — log
# in (a desk session, placed on the node with the fewest sessions); from
# inside it start a compute-heavy and a memory-heavy application with
# mure run (placed by the app kind's policy) and type into each; log out
# (the session runs on); log in again and resume; log out. Every second it
# records each server's /status (CPU, CPU pressure, memory); for every
# application it records how long the start took (from the desk shell's
# clock before mure run to the application's first line) and how many
# users were logged in. Configurations: 1 server, then 2 (most-free-memory,
# then least-load for applications). Needs root, tmux, jq, python3.
#
# Run ONLY under the shared testbed lock (docs: /work/notes/common.md):
#   flock -w 1800 /work/notes/testbed.lock timeout 600 bash scripts/bench/004.sh [OUTDIR]
# Then the charts: go run scripts/bench/004-chart.go OUTDIR docs/img
# Env: USERS (12), INTERVAL (5 s), CPU (0.4 cores per server), MEM (1024 MB
# per server), AWAY (8 s logged out before resuming),
# CONFIGS ("1:most-free-memory 2:most-free-memory 2:least-load").
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(realpath -m "${1:-docs/bench/004}")
mkdir -p "$out"
USERS=${USERS:-12} INTERVAL=${INTERVAL:-5} CPU=${CPU:-0.4} MEM=${MEM:-1024} AWAY=${AWAY:-8}
CONFIGS=${CONFIGS:-"1:most-free-memory 2:most-free-memory 2:least-load"}
for t in tmux jq python3 useradd; do command -v $t >/dev/null || { echo "004.sh: needs $t" >&2; exit 1; }; done

. scripts/bench/testbed.sh m004-
chmod 755 "$work" # the users' accounts run $work/mure and $work/app.py
install -m 644 scripts/bench/004-app.py "$work/app.py"
sock=m004-$$
tmx() { tmux -L "$sock" "$@"; }
ms() { date +%s%3N; }
accounts=()
finish() {
	tmx kill-server 2>/dev/null || true
	[ -n "${mon:-}" ] && kill "$mon" 2>/dev/null || true
	tb down >/dev/null 2>&1 || true
	for a in "${accounts[@]}"; do
		pkill -KILL -u "$a" 2>/dev/null || true
		userdel -r -f "$a" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap finish EXIT INT TERM
for i in $(seq "$USERS"); do
	a=mure-p4u$i
	id "$a" >/dev/null 2>&1 || useradd -m -s /bin/bash "$a"
	accounts+=("$a")
done
tmx new-session -d -s keep "sleep 100000" # the tmux server outlives the users' windows

# pane NAME TEXT: wait (up to 60 s) until window NAME shows TEXT.
pane() {
	for _ in $(seq 600); do
		tmx capture-pane -p -t "$1" 2>/dev/null | grep -qF -- "$2" && return 0
		sleep 0.1
	done
	echo "004.sh: window $1 never showed '$2'" >&2
	return 1
}

# app USER N KIND: from USER's desk shell, start application N with mure
# run, type into it, detach; record its start time.
app() {
	local u=$1 n=$2 kind=$3 home=/home/mure-$1
	rm -f "$home/up-$n" "$home/t0-$n"
	tmx send-keys -t "$u" "date +%s%3N > ~/t0-$n; $work/mure run -- python3 $work/app.py $kind ~/up-$n" Enter
	for _ in $(seq 1200); do [ -s "$home/up-$n" ] && break; sleep 0.05; done
	if [ -s "$home/up-$n" ] && [ -s "$home/t0-$n" ]; then
		echo "$(ms),$u,$kind,$(($(cat "$home/up-$n") - $(cat "$home/t0-$n"))),$(cat "$cfgdir/logged-in")" >>"$cfgdir/starts.csv"
	else
		echo "$(ms),$u,$kind,-1,$(cat "$cfgdir/logged-in")" >>"$cfgdir/starts.csv"
	fi
	pane "$u" "$kind app loaded" || true
	tmx send-keys -t "$u" "a line typed into the $kind app" Enter
	pane "$u" "typed: a line" || true
	sleep 1
	tmx send-keys -t "$u" C-]
	pane "$u" "[detached from session" || true
}

# user I: paper 004's table 2, scaled.
user() {
	[ -n "${TRACE:-}" ] && set -x
	local i=$1 u=p4u$1 tok node
	tok=$(cat "$toks/$i")
	node=${nodes[$((i % ${#nodes[@]}))]}
	# The user leaves by closing the window: Ctrl-] must reach mure run inside.
	local attach="env MURE_NODE=$node MURE_TOKEN=$tok $work/mure session attach --detach-key none"
	local desk
	desk=$(MURE_NODE=$node MURE_TOKEN=$tok "$work/mure" session new --kind desk --json | jq -r .id)
	flock "$cfgdir/logged-in" sh -c 'echo $(($(cat "$1") + 1)) > "$1"' sh "$cfgdir/logged-in"
	tmx new-session -d -s "$u" -x 100 -y 30 "$attach $desk; sleep 100000"
	tmx send-keys -t "$u" 'echo desk-$((1+1))ready' Enter
	pane "$u" desk-2ready
	app "$u" 1 cpu
	app "$u" 2 mem
	tmx kill-session -t "$u" # log out: the session and its applications run on
	sleep "$AWAY"
	local t0
	t0=$(ms)
	tmx new-session -d -s "$u" -x 100 -y 30 "$attach $desk; sleep 100000"
	# The desk's screen as left shows an application ("cpu app up", or
	# the mure run line).
	pane "$u" "app" && echo "$(ms),$u,resume,$(($(ms) - t0)),$(cat "$cfgdir/logged-in")" >>"$cfgdir/starts.csv"
	sleep 2
	tmx kill-session -t "$u"
}

# monitor: every second, each server's /status figures as one JSON line.
monitor() {
	[ -n "${TRACE:-}" ] && set -x
	while :; do
		for s in "${nodes[@]}"; do
			curl -s -m 2 -H "Authorization: Bearer $admin" "http://$s/status" |
				jq -c --arg s "$s" --argjson t "$(ms)" '. as $r | {t: $t, addr: $s, id: $r.node.id, host: $r.host,
					load: ([$r.members[] | select(.id == $r.node.id) | .load] | first),
					sessions: $r.services.sessions.running}' 2>/dev/null || true
		done >>"$cfgdir/status.jsonl"
		sleep 1
	done
}

for cfg in $CONFIGS; do
	servers=${cfg%%:*} policy=${cfg#*:}
	cfgdir=$out/${servers}-$policy
	rm -rf "$cfgdir" && mkdir -p "$cfgdir"
	printf 'session-kind = desk shell place=fewest-sessions\nsession-kind = app shell place=%s\n' "$policy" >"$work/kinds.conf"
	tb up --servers "$servers" --clients 1 --server-cpu "$CPU" --client-cpu 0.1 --memory "$MEM" \
		--disk tmpfs --data-size 512 --auth --unbalanced --node-args "--config $work/kinds.conf" >"$cfgdir/up.log" 2>&1
	mapfile -t nodes < <(jq -r '.hosts[] | select(.server) | .addr + ":7946"' "$work/tb/state.json")
	admin=$(cat "$(jq -r '.hosts[] | select(.name == "s1") | .data' "$work/tb/state.json")/admin.token")
	# The users' tokens: in $work (removed at exit, even an aborted run's),
	# not in OUTDIR, which is committed; readable by root only.
	toks=$work/tokens-$servers-$policy
	mkdir -m 700 "$toks"
	for i in $(seq "$USERS"); do
		MURE_NODE=${nodes[0]} MURE_TOKEN=$admin "$work/mure" user add "p4u$i" --no-password >/dev/null
		MURE_NODE=${nodes[0]} MURE_TOKEN=$admin "$work/mure" token create t --user "p4u$i" 2>/dev/null >"$toks/$i"
	done
	echo 0 >"$cfgdir/logged-in"
	echo "time_ms,user,what,start_ms,logged_in" >"$cfgdir/starts.csv"
	{ echo "# $(date -u +%FT%TZ) servers=$servers policy=$policy users=$USERS interval=${INTERVAL}s cpu=$CPU mem=${MEM}MB"; uptime; } >"$cfgdir/run.txt"
	monitor &
	mon=$!
	pids=()
	for i in $(seq "$USERS"); do
		user "$i" >>"$cfgdir/users.log" 2>&1 &
		pids+=($!)
		sleep "$INTERVAL"
	done
	for p in "${pids[@]}"; do wait "$p" || echo "a user's script failed (users.log)" >&2; done
	sleep 5
	kill "$mon"; mon=
	MURE_NODE=${nodes[0]} MURE_TOKEN=$admin "$work/mure" session ls --all --json >"$cfgdir/sessions.json"
	uptime >>"$cfgdir/run.txt"
	rm -rf "$toks" "$cfgdir/logged-in"
	tmx kill-server 2>/dev/null || true
	tmx new-session -d -s keep "sleep 100000"
	for a in "${accounts[@]}"; do pkill -KILL -u "$a" 2>/dev/null || true; done
	tb down >/dev/null 2>&1
	echo "004.sh: $servers server(s), $policy: $(($(wc -l <"$cfgdir/starts.csv") - 1)) starts in $cfgdir" >&2
done
