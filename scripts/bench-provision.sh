#!/usr/bin/env bash
# Provisioning benchmark (issue 11; `make bench-provision`, not part of `make test`): in one run,
# on a stack of its own (MariaDB, the API with backends docker and bwrap, nginx) and the Docker
# Engine tests/docker/run.sh uses:
#
#   1. session create -> ready, first install vs package cache hit, docker (apt jq + npm
#      is-number) and bwrap (npm is-number), each the median of BENCH_REPEAT environments; the
#      ratio hit / first. Measured twice: intent claimed -> session ready, from the reconciler's
#      log lines (the provisioning itself: what the cache saves; how long an intent waits for
#      its claim is part 3's figure); and from the create request to the API's first "ready"
#      (polled while a --once run works: its start-up and housekeeping are included);
#      and, for the hit, to the end of a first `--exec -- true` started once ready (a docker
#      container from the cache is started after the binding: the first command may wait
#      for the rest of its start).
#   2. sandboxes created and destroyed per second, docker, no packages, BENCH_SANDBOXES sessions
#      with 4 reconcilers (--once) at once, then their teardown the same way.
#   3. with the reconciler in --loop (what RECONCILER=1 make up runs): session create -> intent
#      claimed (the session leaves "pending"), p50 and p99 over BENCH_LATENCY samples, each
#      created at a random moment once the loop is idle again (the previous session ready and
#      its container started: a loop provisions one intent at a time, so under a queue the wait
#      is the queue's); and what
#      the idle loop costs MariaDB (statements per second, from the server's Questions counter
#      over BENCH_IDLE_S seconds with nothing due).
#
# The table goes to stdout and OUT/table.txt (OUT: BENCH_OUT, default var/bench/provision-<time>).
# Environment: BENCH_PARTS (default "1 2 3"), BENCH_REPEAT (3), BENCH_SANDBOXES (40),
# BENCH_LATENCY (100), BENCH_IDLE_S (10), BUILD_DIR, KEEP_RUN=1. Every wait is bounded.
set -uo pipefail

# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-stack.sh" && bench_init bench-provision provision- || exit 1
RECON="$BUILD/terrarium-reconciler"
bench_env PARTS=BENCH_PARTS:"1 2 3" REPEAT=BENCH_REPEAT:3 NSBX=BENCH_SANDBOXES:40 \
	NLAT=BENCH_LATENCY:100 IDLE_S=BENCH_IDLE_S:10
PARTS=" $PARTS "
BENCH_WAIT_S=900          # longest wait for one session to be ready
BENCH_POLL_S=0.01         # status polling interval of the latency samples
mkdir -p "$OUT"

[ "$(id -u)" -eq 0 ] || die "needs root (dockerd, bwrap sandboxes as in make test)"

docker_engine_shared || die "no Docker Engine"
SOCK=$STACK_DOCKER_SOCKET
IMAGE=$(DOCKER_SOCKET=$SOCK "$ROOT/sandbox-image/build.sh") || die "no sandbox image"

RUN=$(mktemp -d /tmp/terrarium-bench-prov.XXXXXX) || exit 1
SESSIONS_FILE=$RUN/sessions # every session made (session() runs in a subshell)
cleanup() {
	local sid
	recon_stop "$RUN" 2>/dev/null
	while read -r sid; do
		docker -H "unix://$SOCK" ps -aq --filter "label=terrarium.session=$sid" |
			xargs -r docker -H "unix://$SOCK" rm -f >/dev/null 2>&1
	done < <(cat "$SESSIONS_FILE" 2>/dev/null)
	db_query "$RUN" "SELECT cache_key FROM sandbox_cache WHERE backend = 'docker'" \
		2>/dev/null | sed 's/^/terrarium-cache:/' | xargs -r docker -H "unix://$SOCK" rmi >/dev/null 2>&1
	stack_stop_all "$RUN" 2>/dev/null
	docker_engine_release 2>/dev/null
	[ "${KEEP_RUN:-0}" = 1 ] && echo "kept $RUN" || rm -rf "$RUN"
}
trap cleanup EXIT

stack_prepare "$RUN" && db_init "$RUN" && db_start "$RUN" || die "MariaDB did not start"
# shellcheck disable=SC2034 # read by api_config
STACK_DOCKER_IMAGE=$IMAGE
# debug: the claim and ready lines of part 1 (claim -> ready from the reconciler's own clock)
printf '[reconciler]\nbackoff_base_seconds = 0\n[log]\nlevel = debug\n' >"$RUN/operator.ini"
api_config "$RUN" docker docker && api_config "$RUN" bwrap bwrap || die "config"
api_cli "$RUN" docker migrate "$ROOT/sql" >/dev/null || die "migrate"
# shellcheck disable=SC2034 # read by api
KEY=$(api_cli "$RUN" docker key create ws-bench) || die "key"
PD=$(stack_free_port) && PB=$(stack_free_port "$PD") || die "ports"
api_start "$RUN" docker && api_start "$RUN" bwrap && nginx_start "$RUN" "$PD:docker" "$PB:bwrap" ||
	die "stack"

UD=http://127.0.0.1:$PD UB=http://127.0.0.1:$PB # the docker and bwrap APIs
status() { api "http://127.0.0.1:$1" GET "/v1/sessions/$2" | jq -r .provisioning.status; }
now() { date +%s.%N; }
calc() { awk "BEGIN { print $* }"; }
AGENT_D=$(api "$UD" POST /v1/agents '{"name":"bench","model":"claude-sonnet-4-5"}' | jq -r .id)
AGENT_B=$(api "$UB" POST /v1/agents '{"name":"bench","model":"claude-sonnet-4-5"}' | jq -r .id)
session() { # session PORT AGENT ENV -> id
	local sid
	sid=$(api "http://127.0.0.1:$1" POST /v1/sessions "{\"agent\":\"$2\",\"environment_id\":\"$3\"}" | jq -r .id)
	echo "$sid" >>"$SESSIONS_FILE"
	echo "$sid"
}
pct() { sort -g | awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p/100+0.999); if(i<1)i=1; print a[i]}'; }

# create -> ready for one session of ENV through PORT with config NAME: seconds from the create
# request until the API answers "ready" (polled every BENCH_POLL_S while reconciler
# runs work: it may publish ready before its run ends, docker starting the container after the
# binding). Also appends to OUT/exec-NAME the seconds from the create until a first command
# (`--exec -- true`, started once ready) has run in the sandbox.
ready_time() { # ready_time PORT AGENT ENV NAME
	local t0 sid n rpid tr
	t0=$(now)
	sid=$(session "$1" "$2" "$3")
	"$RECON" -c "$RUN/$4.ini" --once >>"$OUT/recon-$4.log" 2>&1 &
	rpid=$!
	n=$(calc "int($BENCH_WAIT_S / $BENCH_POLL_S)")
	until [ "$(status "$1" "$sid")" = ready ]; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || die "session $sid not ready (see $OUT/recon-$4.log)"
		if ! kill -0 "$rpid" 2>/dev/null; then
			wait "$rpid"
			"$RECON" -c "$RUN/$4.ini" --once >>"$OUT/recon-$4.log" 2>&1 &
			rpid=$!
		fi
		sleep "$BENCH_POLL_S"
	done
	tr=$(now)
	"$RECON" -c "$RUN/$4.ini" --exec "$sid" -- true >>"$OUT/recon-$4.log" 2>&1 ||
		die "session $sid: the first command failed (see $OUT/recon-$4.log)"
	calc "$(now) - $t0" >>"$OUT/exec-$4"
	wait "$rpid"
	log_span "$OUT/recon-$4.log" "claimed intent .* (session $sid)" "session $sid ready" >>"$OUT/prov-$4"
	calc "$tr - $t0"
}

# log_span LOG FROM TO: seconds between the last lines of LOG matching FROM and TO (their
# timestamps, the reconciler's clock)
log_span() {
	local a b
	a=$(grep -e "$2" "$1" | tail -1) && b=$(grep -e "$3" "$1" | tail -1) || die "no '$2' or '$3' in $1"
	calc "$(date -d "${b%% *}" +%s.%N) - $(date -d "${a%% *}" +%s.%N)"
}

part() { [[ $PARTS == *" $1 "* ]]; }
if part 1; then
	echo "# 1. create -> ready: first install vs cache hit" >&2
	# first_and_hit PORT AGENT NAME ENV-BODY: an environment of ENV-BODY through PORT, then two
	# sessions of it, config NAME: the first installs, the second is the cache's hit (its lines
	# are the second of OUT/exec-NAME and OUT/prov-NAME)
	first_and_hit() {
		local e
		truncate -s 0 "$OUT/exec-$3" "$OUT/prov-$3"
		e=$(api "http://127.0.0.1:$1" POST /v1/environments "$4" | jq -r .id)
		ready_time "$1" "$2" "$e" "$3" >>"$OUT/first-$3"
		ready_time "$1" "$2" "$e" "$3" >>"$OUT/hit-$3"
		sed -n 2p "$OUT/exec-$3" >>"$OUT/hit-exec-$3"
		sed -n 1p "$OUT/prov-$3" >>"$OUT/first-prov-$3"
		sed -n 2p "$OUT/prov-$3" >>"$OUT/hit-prov-$3"
	}
	for b in docker bwrap; do
		truncate -s 0 "$OUT/first-$b" "$OUT/hit-$b" "$OUT/hit-exec-$b" "$OUT/first-prov-$b" \
			"$OUT/hit-prov-$b"
	done
	for i in $(seq 1 "$REPEAT"); do
		first_and_hit "$PD" "$AGENT_D" docker "{\"name\":\"bench-d-$i\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},\"packages\":{\"apt\":[\"jq\"],\"npm\":[\"is-number@7.0.0\"]}}}"
		first_and_hit "$PB" "$AGENT_B" bwrap "{\"name\":\"bench-b-$i\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},\"packages\":{\"npm\":[\"is-number@7.0.0\"]}}}"
	done
	fd=$(median <"$OUT/first-docker") hd=$(median <"$OUT/hit-docker")
	fb=$(median <"$OUT/first-bwrap") hb=$(median <"$OUT/hit-bwrap")
	xd=$(median <"$OUT/hit-exec-docker") xb=$(median <"$OUT/hit-exec-bwrap")
	pfd=$(median <"$OUT/first-prov-docker") phd=$(median <"$OUT/hit-prov-docker")
	pfb=$(median <"$OUT/first-prov-bwrap") phb=$(median <"$OUT/hit-prov-bwrap")
fi

if part 2; then
	echo "# 2. sandboxes created and destroyed per second, 4 reconcilers, docker, no packages" >&2
	e=$(api "$UD" POST /v1/environments '{"name":"bench-empty","config":{"type":"cloud","networking":{"type":"unrestricted"}}}' | jq -r .id)
	mass=()
	for i in $(seq 1 "$NSBX"); do
		sid=$(session "$PD" "$AGENT_D" "$e")
		mass+=("$sid")
	done
	four() {
		local pids=()
		for _ in 1 2 3 4; do
			timeout "$BENCH_WAIT_S" "$RECON" -c "$RUN/docker.ini" --once >>"$OUT/recon-mass.log" 2>&1 &
			pids+=($!)
		done
		wait "${pids[@]}"
	}
	t0=$(now)
	four
	tc=$(calc "$(now) - $t0")
	nready=0
	for sid in "${mass[@]}"; do [ "$(status "$PD" "$sid")" = ready ] && nready=$((nready + 1)); done
	for sid in "${mass[@]}"; do api "$UD" DELETE "/v1/sessions/$sid" >/dev/null; done
	t0=$(now)
	four
	td=$(calc "$(now) - $t0")
	left=0
	for sid in "${mass[@]}"; do
		left=$((left + $(docker -H "unix://$SOCK" ps -aq --filter "label=terrarium.session=$sid" | wc -l)))
	done
fi

if part 3; then
	echo "# 3. --loop: create -> claimed, and the idle loop's cost" >&2
	e=$(api "$UD" POST /v1/environments '{"name":"bench-loop","config":{"type":"cloud","networking":{"type":"unrestricted"}}}' | jq -r .id)
	# the loop logs each claim at debug level: claim time from its log, creation time from the
	# API's created_at (one clock), so the HTTP client's own latency is not counted
	sed 's/^level = .*/level = debug/' "$RUN/docker.ini" >"$RUN/loop.ini"
	recon_start "$RUN" loop >/dev/null 2>&1 || die "reconciler --loop did not start"
	sleep 2
	: >"$OUT/claim"
	for i in $(seq 1 "$NLAT"); do
		sleep "0.$((RANDOM % 30))"
		resp=$(api "$UD" POST /v1/sessions "{\"agent\":\"$AGENT_D\",\"environment_id\":\"$e\"}")
		sid=$(jq -r .id <<<"$resp")
		created=$(jq -r .created_at <<<"$resp")
		echo "$sid" >>"$SESSIONS_FILE"
		n=$((BENCH_WAIT_S * 10))
		until line=$(grep -m1 "claimed intent .* (session $sid)" "$RUN/reconciler.log"); do
			n=$((n - 1))
			[ $n -gt 0 ] || die "session $sid never claimed"
			sleep 0.05
		done
		calc "$(date -d "${line%% *}" +%s.%N) - $(date -d "$created" +%s.%N)" >>"$OUT/claim"
		n=$((BENCH_WAIT_S * 10))
		# idle again: ready, and its container started (the loop starts it after the binding)
		until [ "$(status "$PD" "$sid")" = ready ] &&
			[ "$(docker -H "unix://$SOCK" inspect -f '{{.State.Running}}' "terrarium-$sid" 2>/dev/null)" = true ]; do
			n=$((n - 1))
			[ $n -gt 0 ] || die "session $sid never ready"
			sleep 0.1
		done
	done
	p50=$(pct 50 <"$OUT/claim") p99=$(pct 99 <"$OUT/claim")
	# nothing runs now but the loop (the polls above are over)
	sleep 3
	q() { db_sql "$RUN" -N -e "SHOW GLOBAL STATUS LIKE 'Questions'" | awk '{print $2}'; }
	q1=$(q)
	sleep "$IDLE_S"
	q2=$(q)
	qps=$(calc "($q2 - $q1 - 1) / $IDLE_S")
	recon_stop "$RUN" >/dev/null 2>&1
fi

r() { printf '%.3f' "$1"; }
{
	echo "provisioning benchmark, $(date -u +%FT%TZ), $(nproc) cores, docker image $IMAGE"
	if part 1; then
		echo
		echo "| measure | docker | bwrap |"
		echo "|---|---|---|"
		echo "| claimed -> ready, first install (s, median of $REPEAT; the reconciler's log) | $(r "$pfd") | $(r "$pfb") |"
		echo "| claimed -> ready, second session of the environment (cache hit, s) | $(r "$phd") | $(r "$phb") |"
		echo "| claimed -> ready: cache hit / first install | $(r "$(calc "$phd / $pfd")") | $(r "$(calc "$phb / $pfb")") |"
		echo "| create -> ready, first install (s, median of $REPEAT; through the API, a --once run) | $(r "$fd") | $(r "$fb") |"
		echo "| create -> ready, second session of the environment (cache hit, s) | $(r "$hd") | $(r "$hb") |"
		echo "| cache hit / first install | $(r "$(calc "$hd / $fd")") | $(r "$(calc "$hb / $fb")") |"
		echo "| create -> a first command (--exec true) has run, cache hit (s) | $(r "$xd") | $(r "$xb") |"
	fi
	if part 2; then
		echo
		echo "4 reconcilers, docker, no packages: $NSBX sandboxes created in $(r "$tc") s" \
			"($(r "$(calc "$NSBX / $tc")")/s, $nready ready), destroyed in $(r "$td") s" \
			"($(r "$(calc "$NSBX / $td")")/s, $left left); created+destroyed:" \
			"$(r "$(calc "2 * $NSBX / ($tc + $td)")") sandboxes/s"
	fi
	if part 3; then
		echo
		echo "--loop, session create -> claimed over $NLAT samples: p50 $(r "$p50") s, p99 $(r "$p99") s;" \
			"idle loop: $(r "$qps") statements/s to MariaDB"
	fi
} | tee "$OUT/table.txt"
