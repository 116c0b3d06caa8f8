#!/usr/bin/env bash
# Session event streams (issue 24; `make bench` runs it after scripts/bench-work.sh): nginx's
# nchan holds the streams, the API's tailer publishes to them (docs/events.md). With
# BENCH_STREAMS_N (1,000) streams open on this host (tests/events/streams.mjs, one node process,
# a connection each, BENCH_STREAMS_N / 10 sessions):
#  1. Memory per idle stream: the summed PSS (/proc/PID/smaps_rollup) of nginx (master and
#     workers) and of the API (supervisor, workers, long-poll workers, tailer), with the streams
#     open and idle minus before they were opened (measured first: nginx's workers keep the
#     memory of streams they held before), over their number (the client not counted).
#     Target: <= 64 KiB.
#  2. The streams held BENCH_STREAMS_HOLD_S (the issue's 60 s): the supervisor's worker counts
#     unchanged, no FastCGI connection open to the API, GET answering while they are held; then
#     each stream gets the event sent to its session.
#  3. GET /v1/environments/{id} (wrk, c=BENCH_STREAMS_CONC, default 32) without the streams and
#     with them, interleaved BENCH_RUNS times (default 5) for BENCH_DURATION seconds (default 5):
#     the median over the runs of "with" req/s over "without" req/s of the same run.
#     Target: >= 0.8.
#  4. Delivery latency: 50 sessions x 20 watchers, BENCH_STREAMS_ROUNDS (10) rounds of one event
#     to each session, from each send's answer (the event committed) to each watcher's receipt.
#     Target: p99 <= 100 ms.
# Starts its own stack (MariaDB, the API with its tailer, nginx with nchan) in a temporary
# directory. Output: stdout and BENCH_OUT/streams.txt (BENCH_OUT default var/bench/<UTC time>),
# raw outputs in BENCH_OUT/streams/. Exits 1 when a target is missed or a run fails.
# Environment: BENCH_RUNS, BENCH_DURATION, BENCH_STREAMS_CONC, BENCH_STREAMS_N,
# BENCH_STREAMS_HOLD_S, BENCH_STREAMS_ROUNDS, BENCH_WORKERS, BUILD_DIR, KEEP_RUN=1.
set -uo pipefail

# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-stack.sh" && bench_init bench-streams || exit 1

bench_env RUNS=BENCH_RUNS:5 DURATION=BENCH_DURATION:5 CONC=BENCH_STREAMS_CONC:32 \
	NSTREAMS=BENCH_STREAMS_N:1000 HOLD_S=BENCH_STREAMS_HOLD_S:60 ROUNDS=BENCH_STREAMS_ROUNDS:10
BENCH_STREAMS_PER_SESSION=10     # the held streams: ten watchers on each session
BENCH_LAT_SESSIONS=50            # the latency runs: 50 sessions x 20 watchers
BENCH_LAT_WATCHERS=20
BENCH_STREAMS_SETTLE_S=3         # after the streams opened, before their memory is read
BENCH_GET_PROBES=200             # GETs one after another while the streams are held
BENCH_STREAMS_TARGET_RATIO=0.8
BENCH_STREAMS_TARGET_P99_MS=100
BENCH_STREAMS_TARGET_KIB=64

STREAMS_JS=$ROOT/tests/events/streams.mjs
bad=0
[ -x "$BUILD/terrarium-api" ] || die "$BUILD/terrarium-api is not built (run make)"
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
command -v node >/dev/null || die "node not found"
stack_nchan_modules >/dev/null ||
	die "nginx's nchan and headers-more modules are missing (scripts/install-deps.sh installs them)"
HOLDER_PID=
scratch_before_stop() {
	[ -z "$HOLDER_PID" ] || kill "$HOLDER_PID" 2>/dev/null
}
mkdir -p "$OUT/streams" || die "cannot create $OUT"
bench_stack bench-streams
# shellcheck disable=SC2153 # RUN: set by bench_stack (stack_scratch)
SUP=$(cat "$RUN/api.pid")
NGX=$(cat "$RUN/nginx.pid")
[ -n "$(pgrep -P "$SUP" -x terrarium-tail)" ] || die "the API runs no tailer ($RUN/api.ini)"

ENV_ID=$(curl -sS --max-time 10 "$URL/v1/environments" -H "x-api-key: $KEY" \
	-H 'anthropic-beta: managed-agents-2026-04-01' -H 'content-type: application/json' \
	-d '{"name":"bench-streams-get"}' | jq -r .id) || die "create failed"
echo "$ENV_ID" >"$RUN/ids.txt"

get_wrk() { bench_get_wrk "$URL" "$KEY" "$RUN/ids.txt" "$CONC" "$DURATION" "$1"; } # OUTFILE

# hold_streams OUT HOLD_S SESSIONS WATCHERS [ROUNDS]: streams.mjs in the background (HOLDER_PID)
# until it printed READY (its streams are open); 1 when they did not open.
hold_streams() {
	URL=$URL KEY=$KEY HOLD_S=$2 SESSIONS=$3 WATCHERS=$4 ROUNDS=${5:-1} node "$STREAMS_JS" \
		>"$1" 2>"$1.err" &
	HOLDER_PID=$!
	local n=1200
	until grep -qs '^READY' "$1"; do
		n=$((n - 1))
		if [ $n -le 0 ] || ! kill -0 "$HOLDER_PID" 2>/dev/null; then
			say "streams did not open: $(tail -n 3 "$1.err")"
			return 1
		fi
		sleep 0.1
	done
	[ "$(sed -n 's/^READY //p' "$1")" = "$(($3 * $4))" ] || { say "$(cat "$1")"; return 1; }
}
release_streams() {
	kill "$HOLDER_PID" 2>/dev/null
	wait "$HOLDER_PID"
	HOLDER_PID=
}

# ---- 1. and 2.: memory per idle stream, the streams held HOLD_S ----
# first, while nginx's workers have never held a stream (memory freed after the streams of
# another run stays in their heap, and would count as taken already)
procs() { # nginx master and workers, the API supervisor and its children
	echo "$NGX $(pgrep -P "$NGX" | tr '\n' ' ') $SUP $(pgrep -P "$SUP" | tr '\n' ' ')"
}
mem_kib() { # FIELD (Pss or Rss): summed over procs, KiB
	local p t=0 v
	for p in $(procs); do
		v=$(awk -v f="$1:" '$1 == f { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null)
		t=$((t + ${v:-0}))
	done
	echo "$t"
}
fastcgi_conns() {
	ss -xH 2>/dev/null | awk -v a="$RUN/api.sock" -v b="$RUN/api-poll.sock" \
		'$2 == "ESTAB" && ($5 == a || $5 == b)' | wc -l
}
count() { pgrep -P "$SUP" -x "$1" | wc -l; }
n_api=$(count terrarium-api) n_poll=$(count terrarium-poll)
SESSIONS=$((NSTREAMS / BENCH_STREAMS_PER_SESSION))
sleep 1
pss0=$(mem_kib Pss) rss0=$(mem_kib Rss)
say "holding $NSTREAMS streams for ${HOLD_S}s"
hold_streams "$OUT/streams/hold.txt" "$HOLD_S" "$SESSIONS" $BENCH_STREAMS_PER_SESSION || bad=1
t0=$SECONDS
sleep $BENCH_STREAMS_SETTLE_S
pss1=$(mem_kib Pss) rss1=$(mem_kib Rss)
conns=$(fastcgi_conns)
workers_same=0
[ "$(count terrarium-api)" = "$n_api" ] && [ "$(count terrarium-poll)" = "$n_poll" ] && workers_same=1
getbad=0 gets=()
for ((i = 0; i < BENCH_GET_PROBES; i++)); do
	read -r code t < <(curl -sS -o /dev/null -w '%{http_code} %{time_total}\n' --max-time 5 \
		"$URL/v1/environments/$ENV_ID" -H "x-api-key: $KEY" -H 'anthropic-beta: managed-agents-2026-04-01')
	[ "$code" = 200 ] || getbad=$((getbad + 1))
	gets+=("$t")
done
get_p99=$(printf '%s\n' "${gets[@]}" | sort -g | awk '{ v[NR] = $1 } END { printf "%.1f", v[int(NR * 0.99)] * 1000 }')
sleep $((HOLD_S - (SECONDS - t0) > 2 ? HOLD_S - (SECONDS - t0) - 2 : 0))
conns_late=$(fastcgi_conns)
[ "$(count terrarium-api)" = "$n_api" ] && [ "$(count terrarium-poll)" = "$n_poll" ] || workers_same=0
wait "$HOLDER_PID"
HOLDER_PID=
held=$(tail -n 1 "$OUT/streams/hold.txt")
jq -e . >/dev/null 2>&1 <<<"$held" || { held='{}'; bad=1; }
held_ok=$(jq -r --argjson n "$NSTREAMS" 'if .opened == $n and .ended_early == 0 and .missed == 0 then 1 else 0 end' <<<"$held")
[ "$conns" = 0 ] && [ "$conns_late" = 0 ] && [ $workers_same = 1 ] && [ $getbad = 0 ] || held_ok=0
per_stream=$(awk -v a="$pss0" -v b="$pss1" -v n="$NSTREAMS" 'BEGIN { printf "%.1f", (b - a) / n }')
per_stream_rss=$(awk -v a="$rss0" -v b="$rss1" -v n="$NSTREAMS" 'BEGIN { printf "%.1f", (b - a) / n }')

# ---- 3. GET with and without the streams ----
say "warming up"
get_wrk "$OUT/streams/warmup.txt"
with_streams() { # OUTFILE RUN: GET while the streams are open
	local rc=0
	hold_streams "$OUT/streams/holder-run$2.txt" -1 "$SESSIONS" $BENCH_STREAMS_PER_SESSION &&
		get_wrk "$1" || rc=1
	release_streams
	return $rc
}
bench_beside "$RUNS" "$OUT/streams" get get_wrk with_streams "$NSTREAMS streams"
[ "$BENCH_BAD" = 0 ] || bad=1
ratio=$(bench_median "${BENCH_RATIOS[@]}")

# ---- 4. delivery latency ----
say "latency: $BENCH_LAT_SESSIONS sessions x $BENCH_LAT_WATCHERS watchers, $ROUNDS rounds"
lat=$(URL=$URL KEY=$KEY SESSIONS=$BENCH_LAT_SESSIONS WATCHERS=$BENCH_LAT_WATCHERS HOLD_S=1 ROUNDS=$ROUNDS \
	timeout 300 node "$STREAMS_JS" 2>"$OUT/streams/latency.err" | tail -n 1)
jq -e . >/dev/null 2>&1 <<<"$lat" || { lat='{}'; bad=1; }
echo "$lat" >"$OUT/streams/latency.json"
p99=$(jq -r '.p99_ms // "none"' <<<"$lat")

{
	printf 'event streams: %s, %s cores, [api] workers = %s (0: 2 x cores), nginx with nchan, the API'"'"'s tailer\n' \
		"$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "$(sed -n 's/^workers = //p' "$RUN/api.ini")"
	printf 'GET /v1/environments/{id} c=%s, %d runs of %ds: alone %s req/s, with %d open streams %s req/s (medians)\n' \
		"$CONC" "$RUNS" "$DURATION" "$(bench_median "${BENCH_ALONE[@]}")" "$NSTREAMS" "$(bench_median "${BENCH_WITH[@]}")"
	printf '  per-run ratios: %s\n' "${BENCH_RATIOS[*]}"
	printf 'memory, nginx + API processes: PSS %d -> %d KiB with %d idle streams (RSS %d -> %d KiB): %s KiB PSS a stream (RSS %s)\n' \
		"$pss0" "$pss1" "$NSTREAMS" "$rss0" "$rss1" "$per_stream" "$per_stream_rss"
	printf 'held %ds: FastCGI connections to the API %s (near the end: %s), workers unchanged: %s, GET while held: %d of %d not 200, p99 %s ms\n' \
		"$HOLD_S" "$conns" "$conns_late" "$([ $workers_same = 1 ] && echo yes || echo NO)" \
		"$getbad" "$BENCH_GET_PROBES" "$get_p99"
	printf '  then one event a session: %s\n' "$held"
	printf 'latency, %d x %d watchers, %d rounds: %s\n' "$BENCH_LAT_SESSIONS" "$BENCH_LAT_WATCHERS" "$ROUNDS" "$lat"
	echo "targets:"
	verdict() { # OK TEXT
		if [ "$1" = 1 ]; then echo "  met    $2"; else echo "  MISSED $2"; fi
	}
	verdict "$(awk -v r="$ratio" -v t=$BENCH_STREAMS_TARGET_RATIO 'BEGIN { print (r >= t) }')" \
		"GET with $NSTREAMS open streams: $ratio x without (>= $BENCH_STREAMS_TARGET_RATIO)"
	verdict "$(jq -r --argjson t $BENCH_STREAMS_TARGET_P99_MS 'if .missed == 0 and .p99_ms != null and .p99_ms <= $t then 1 else 0 end' <<<"$lat")" \
		"event committed -> received by all its session's watchers: p99 $p99 ms (<= $BENCH_STREAMS_TARGET_P99_MS ms), $(jq -r '.missed // "?"' <<<"$lat") missed"
	verdict "$(awk -v k="$per_stream" -v t=$BENCH_STREAMS_TARGET_KIB 'BEGIN { print (k <= t) }')" \
		"memory per idle stream: $per_stream KiB across nginx and the API (<= $BENCH_STREAMS_TARGET_KIB KiB)"
	verdict "$held_ok" "$NSTREAMS streams held ${HOLD_S}s without a worker taken, each then got its event"
} | tee "$OUT/streams.txt"
grep -q MISSED "$OUT/streams.txt" && exit 1
[ $bad = 0 ]
