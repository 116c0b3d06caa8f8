#!/usr/bin/env bash
# The work queue's long polls (issue 12; `make bench` runs it after scripts/bench.sh):
#  1. GET /v1/environments/{id} (wrk, c=BENCH_WORK_CONC, default 32) without pollers and with
#     16 pollers (wrk -c16, BENCH_MODE=poll) polling an empty self_hosted queue at block_ms=999,
#     interleaved BENCH_RUNS times (default 5) for BENCH_DURATION seconds (default 5): the
#     median over the runs of "with pollers" req/s over "without" req/s of the same run.
#     Target: >= 0.8 (the polls run on their own workers, [api] poll_socket; they hold no CPU).
#  2. Wake-up latency (bench/work-wake.mjs): 8 pollers blocked at block_ms=999, 200 sessions
#     created one at a time; from each create's answer to a poll answering with its item.
#     Target: p99 <= 50 ms.
# Starts its own stack (MariaDB, the API with its poll pool, nginx) in a temporary directory.
# Output: stdout and BENCH_OUT/work.txt (BENCH_OUT default var/bench/<UTC time>), raw wrk
# outputs in BENCH_OUT/work/. Exits 1 when a target is missed or a run fails.
# Environment: BENCH_RUNS, BENCH_DURATION, BENCH_WORK_CONC, BENCH_WORKERS, BUILD_DIR, KEEP_RUN=1.
set -uo pipefail

# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-stack.sh" && bench_init bench-work || exit 1

bench_env RUNS=BENCH_RUNS:5 DURATION=BENCH_DURATION:5 CONC=BENCH_WORK_CONC:32
BENCH_WORK_POLLERS=16          # the issue's 16 pollers
BENCH_WORK_POLL_WORKERS=24     # [api] poll_workers: more than the pollers
BENCH_WORK_TARGET_RATIO=0.8
BENCH_WORK_TARGET_P99_MS=50


[ -x "$BUILD/terrarium-api" ] || die "$BUILD/terrarium-api is not built (run make)"
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
command -v node >/dev/null || die "node not found"
scratch_before_stop() {
	[ -z "${POLL_PID:-}" ] || kill "$POLL_PID" 2>/dev/null
}
mkdir -p "$OUT/work" || die "cannot create $OUT"
POLL_WORKERS=$BENCH_WORK_POLL_WORKERS bench_stack bench-work

CLOUD=$(api_ok "$URL" POST /v1/environments '{"name":"bench-get"}' | jq -r .id) || die "create failed"
SH=$(api_ok "$URL" POST /v1/environments '{"name":"bench-queue","config":{"type":"self_hosted"}}' | jq -r .id) ||
	die "create failed"
AGENT=$(api_ok "$URL" POST /v1/agents '{"name":"bench","model":"claude-sonnet-4-5"}' | jq -r .id) || die "agent failed"
# shellcheck disable=SC2153 # RUN: set by bench_stack (stack_scratch)
ENV_KEY=$(api_cli "$RUN" api key create-environment "$SH") || die "key create-environment failed"
echo "$CLOUD" >"$RUN/ids.txt"

get_wrk() { bench_get_wrk "$URL" "$KEY" "$RUN/ids.txt" "$CONC" "$DURATION" "$1"; } # OUTFILE

say "warming up"
get_wrk "$OUT/work/warmup.txt"
poll_reqs=() bad=0
with_pollers() { # OUTFILE RUN: GET while 16 pollers are blocked
	local polls="$OUT/work/pollers-run$2.txt" rc=0
	BENCH_MODE=poll BENCH_KEY=$ENV_KEY BENCH_ENV=$SH timeout $((DURATION + 20)) \
		wrk -t1 -c$BENCH_WORK_POLLERS -d"$((DURATION + 3))s" --timeout 5s -s "$ROOT/bench/wrk.lua" \
		"$URL" >"$polls" 2>&1 &
	POLL_PID=$!
	sleep 1.5 # every poller is blocked in its first poll
	get_wrk "$1" || rc=1
	wait "$POLL_PID"
	POLL_PID=
	poll_reqs+=("$(awk '/requests in/ { print $1 }' "$polls")")
	say "run $2: the pollers answered ${poll_reqs[-1]}"
	[ "$(bench_errs "$polls")" = 0 ] || { say "errors in $polls"; rc=1; }
	return $rc
}
bench_beside "$RUNS" "$OUT/work" get get_wrk with_pollers "16 pollers"
[ "$BENCH_BAD" = 0 ] || bad=1
ratio=$(bench_median "${BENCH_RATIOS[@]}")

# What 16 blocked pollers cost by themselves: CPU time of the API's workers (both pools) and of
# MariaDB over DURATION seconds with nothing else running (a measure a noisy machine does not
# blur the way it blurs req/s).
cpu_ticks() { # PIDS...: utime + stime summed, in clock ticks
	local p t=0 f
	for p in "$@"; do
		f=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		f=${f##*) }
		read -ra a <<<"$f"
		t=$((t + a[11] + a[12]))
	done
	echo "$t"
}
sup=$(stack_running "$RUN/api.pid" terrarium-api)
read -ra kids <<<"$(cat "/proc/$sup/task/$sup/children" 2>/dev/null)"
dbpid=$(stack_running "$RUN/mariadb.pid" mariadbd)
BENCH_MODE=poll BENCH_KEY=$ENV_KEY BENCH_ENV=$SH timeout $((DURATION + 20)) \
	wrk -t1 -c$BENCH_WORK_POLLERS -d"$((DURATION + 3))s" --timeout 5s -s "$ROOT/bench/wrk.lua" \
	"$URL" >"$OUT/work/pollers-alone.txt" 2>&1 &
POLL_PID=$!
sleep 1.5
a0=$(cpu_ticks "${kids[@]}") d0=$(cpu_ticks "$dbpid") t0=$(date +%s.%N)
sleep "$DURATION"
a1=$(cpu_ticks "${kids[@]}") d1=$(cpu_ticks "$dbpid") t1=$(date +%s.%N)
wait "$POLL_PID"
POLL_PID=
hz=$(getconf CLK_TCK)
poll_cost=$(awk -v a=$((a1 - a0)) -v d=$((d1 - d0)) -v hz="$hz" -v t0="$t0" -v t1="$t1" \
	'BEGIN { s = t1 - t0; printf "API workers %.1f ms, MariaDB %.1f ms of CPU per second (%.1f%% of one core)", a * 1000 / hz / s, d * 1000 / hz / s, (a + d) * 100 / hz / s }')
say "16 blocked pollers alone: $poll_cost"

say "wake-up latency: 8 blocked pollers, 200 sessions"
wake=$(cd "$ROOT/tests/sdk" && URL=$URL KEY=$KEY ENV_KEY=$ENV_KEY ENV_ID=$SH AGENT_ID=$AGENT \
	timeout 120 node "$ROOT/bench/work-wake.mjs") || die "bench/work-wake.mjs failed"
p99=$(jq -r .p99_ms <<<"$wake")
missed=$(jq -r .missed <<<"$wake")

{
	printf 'work queue: %s, %s cores, [api] workers = %s (0: 2 x cores), %s poll workers\n' \
		"$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "$(api_setting "$RUN" api api workers)" \
		"$BENCH_WORK_POLL_WORKERS"
	printf 'GET /v1/environments/{id} c=%s, %d runs of %ds: alone %s req/s, with %d pollers (block_ms=999, empty queue) %s req/s (medians)\n' \
		"$CONC" "$RUNS" "$DURATION" "$(bench_median "${BENCH_ALONE[@]}")" $BENCH_WORK_POLLERS "$(bench_median "${BENCH_WITH[@]}")"
	printf '  per-run ratios: %s\n' "${BENCH_RATIOS[*]}"
	printf '16 blocked pollers alone: %s\n' "$poll_cost"
	printf 'wake-up: %s\n' "$wake"
	echo "targets:"
	if awk -v r="$ratio" -v t=$BENCH_WORK_TARGET_RATIO 'BEGIN { exit !(r >= t) }'; then
		echo "  met    GET with 16 blocked pollers: $ratio x without (>= $BENCH_WORK_TARGET_RATIO)"
	else
		echo "  MISSED GET with 16 blocked pollers: $ratio x without (>= $BENCH_WORK_TARGET_RATIO)"
		bad=1
	fi
	if [ "$missed" = 0 ] && awk -v p="$p99" -v t=$BENCH_WORK_TARGET_P99_MS 'BEGIN { exit !(p <= t) }'; then
		echo "  met    wake-up p99 $p99 ms (<= $BENCH_WORK_TARGET_P99_MS ms), every item delivered"
	else
		echo "  MISSED wake-up p99 $p99 ms (<= $BENCH_WORK_TARGET_P99_MS ms), $missed items not delivered"
		bad=1
	fi
} >"$OUT/work.txt" # not through a pipe: bad is set in this shell
cat "$OUT/work.txt"
[ $bad = 0 ]
