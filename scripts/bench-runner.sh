#!/usr/bin/env bash
# The runner's figures (issue 25, "Performance"; `make bench` runs it after
# scripts/bench-streams.sh), against the fake model (tests/fake-model/fake-model.mjs) answering at
# once unless said otherwise. The client is bench/runner.mjs: every session's stream is open
# (nginx's nchan, the API's tailer) and a turn is over when its session.status_idle frame came.
#  1. user.message -> session.status_running: BENCH_RUNNER_SAMPLES (200) messages one at a time
#     over 20 sessions (a one-request turn each, the next sent when the turn is idle), from just
#     before the send to the receipt of the status_running frame on the session's stream.
#     Target: p99 <= 50 ms. The API commits the status_running with the message (one
#     transaction, docs/events.md), so this is the send plus the tailer's delivery: the runner is
#     not on this path, and its claim poll ([runner] poll_ms) is not either. Beside it (no
#     target): the send's own answer time, and the turn's start, from the user.message's
#     created_at to the runner's span.model_request_start's (the claim poll and the turn
#     process's start: what a wake-up of the runner would shorten).
#  2. Runner overhead per model round trip, the model's own time excluded: 4 sessions, one
#     after another, each a turn of BENCH_RUNNER_ROUNDS (50) tool-free rounds (the model calls a
#     tool the agent does not offer: the runner answers it with an error result in the reply's
#     own transaction; nothing runs in a sandbox) and a text at the end. The round's period is
#     the time between two consecutive span.model_request_start events of the turn (their
#     created_at, microseconds): one model call plus everything the runner does between two
#     (stream parsed, reply committed, history read, the next span committed, the request
#     built). The model's own time is measured in the same run: the requests the runner sent,
#     replayed with curl (one connection, as the runner's libcurl keeps it) against the fake
#     answering them with the same replies. A round's overhead is its period minus its own
#     request's replay time; the figure is the median over the rounds (the mean and p99 beside:
#     a loaded machine's scheduling delays land in them). Target: <= 5 ms (and its ratio to the
#     model's round trip).
#  3. `bash true` round trip, from the agent.tool_use's created_at to its agent.tool_result's
#     (each is its transaction's time, taken as it starts, before its lock: this spans the tool
#     use's lock, appends and commit, the runner's loop, the tool's start record and the command
#     in the sandbox, but not the result's own lock, appends and commit): 4 sessions, each first a
#     warm-up turn (one bash call: it provisions the sandbox, not counted), then a turn of
#     BENCH_RUNNER_ROUNDS `bash true` calls, one session after another. Targets: p99 <= 15 ms
#     local, <= 40 ms bwrap (when bwrap works here), <= 150 ms docker (when a Docker Engine
#     answers, or one can be started as tests/docker/run.sh does, and the default sandbox image
#     is there: sandbox-image/build.sh; else skipped with a note). Beside it: `bash -c true`
#     started by this script, the floor of any tool.
#  4. 100 sessions (BENCH_RUNNER_CONC_SESSIONS) with 10 tool round trips each at once (the
#     first provisions the session's sandbox) on one runner ([runner] max_turns 128), the fake
#     taking BENCH_RUNNER_DELAY_MS (200) before each answer: every turn ends end_turn with its 10
#     results, and the wall time from the first send to the last idle frame is at most
#     BENCH_RUNNER_CONC_FACTOR (2) x what it cannot beat: the model's time of one turn (11
#     requests x the delay), or, when more, the CPU time the stack used meanwhile (runner, turns,
#     tools, MariaDB, API, nginx, fake: /proc/PID/stat) spread over every core. A turn that
#     waited for another's model call would take up to 100 x the model's time; the model
#     requests in flight at once (from the fake's record) are shown beside it. The runner's
#     memory is sampled every 100 ms meanwhile: the PSS (/proc/PID/smaps_rollup) summed over the
#     runner and its turn processes (the tools' processes not counted) must stay <= 16 MiB + 2
#     MiB per turn process of the sample; the summed RSS (pages shared with the runner counted in
#     every process) is shown beside it.
# Starts its own stack in a temporary directory: MariaDB, the fake model, an API supervisor per
# backend measured (one tailer), nginx with nchan, and the runner (one at a time: each backend's
# figures with a runner of that backend's configuration). Output: stdout and
# BENCH_OUT/runner.txt (BENCH_OUT default var/bench/<UTC time>), raw outputs in
# BENCH_OUT/runner/. Exits 1 when a target is missed or a run fails.
# Environment: BENCH_RUNNER_SAMPLES, BENCH_RUNNER_ROUNDS, BENCH_RUNNER_CONC_SESSIONS,
# BENCH_RUNNER_DELAY_MS, BENCH_RUNNER_BACKENDS (default "local bwrap docker"), BENCH_WORKERS,
# BUILD_DIR, KEEP_RUN=1.
set -uo pipefail

# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-stack.sh" && bench_init bench-runner || exit 1

bench_env SAMPLES=BENCH_RUNNER_SAMPLES:200 ROUNDS=BENCH_RUNNER_ROUNDS:50 \
	CONC_SESSIONS=BENCH_RUNNER_CONC_SESSIONS:100 DELAY_MS=BENCH_RUNNER_DELAY_MS:200
read -ra BACKENDS <<<"${BENCH_RUNNER_BACKENDS:-local bwrap docker}"
BENCH_RUNNER_STATUS_SESSIONS=20  # figure 1: the samples go round these
BENCH_RUNNER_SEQ_SESSIONS=4      # figures 2 and 3: sessions, one after another
BENCH_RUNNER_CONC_TOOLS=10       # figure 4: tool round trips of each turn
BENCH_RUNNER_CONC_FACTOR=2       # figure 4: wall time over one turn's model time, at most
BENCH_RUNNER_MAX_TURNS=128       # [runner] max_turns: room for the 100 turns
BENCH_RUNNER_MAX_ROUND_TRIPS=1000 # [runner] max_round_trips: room for the long turns
BENCH_RUNNER_RSS_EVERY_S=0.1     # figure 4: memory sampled this often
BENCH_RUNNER_FLOOR_RUNS=200      # figure 3's floor: bash -c true this many times
BENCH_RUNNER_TARGET_STATUS_MS=50
BENCH_RUNNER_TARGET_OVERHEAD_MS=5
BENCH_RUNNER_TARGET_MEM_BASE_KIB=16384
BENCH_RUNNER_TARGET_MEM_TURN_KIB=2048
declare -A BENCH_RUNNER_TARGET_TOOL_MS=([local]=15 [bwrap]=40 [docker]=150)

for bin in terrarium-api terrarium-runner; do
	[ -x "$BUILD/$bin" ] || die "$BUILD/$bin is not built (run make)"
done
for cmd in node jq curl; do
	command -v "$cmd" >/dev/null || die "$cmd not found"
done
stack_nchan_modules >/dev/null ||
	die "nginx's nchan and headers-more modules are missing (scripts/install-deps.sh installs them)"
for b in "${BACKENDS[@]}"; do
	[ -n "${BENCH_RUNNER_TARGET_TOOL_MS[$b]:-}" ] ||
		die "BENCH_RUNNER_BACKENDS: '$b' is not one of ${!BENCH_RUNNER_TARGET_TOOL_MS[*]}"
done

FAKE_PID='' SAMPLER_PID='' DOCKER_SHARED=0
scratch_before_stop() {
	[ -z "$SAMPLER_PID" ] || kill "$SAMPLER_PID" 2>/dev/null
	runner_stop "$RUN"
	[ -z "$FAKE_PID" ] || kill "$FAKE_PID" 2>/dev/null
}
scratch_after_stop() {
	[ "$DOCKER_SHARED" = 0 ] || docker_engine_release
	return 0
}
stack_scratch bench-runner || die "cannot make a runtime directory"
RAW=$OUT/runner
mkdir -p "$RAW" || die "cannot create $RAW"
bad=0
NOTES=()

# ---- the stack ----
# shellcheck disable=SC2153 # RUN: set by stack_scratch
node "$ROOT/tests/fake-model/fake-model.mjs" --port-file "$RUN/fake.port" >"$RAW/fake.log" 2>&1 &
FAKE_PID=$!
for _ in $(seq 100); do
	[ -s "$RUN/fake.port" ] && break
	sleep 0.1
done
[ -s "$RUN/fake.port" ] || die "the fake model did not start: $(cat "$RAW/fake.log")"
FAKE=http://127.0.0.1:$(cat "$RUN/fake.port")

db_init "$RUN" || die "db_init failed"
db_start "$RUN" || die "db_start failed"
cat >"$RUN/operator.ini" <<EOF
[runner]
max_turns = $BENCH_RUNNER_MAX_TURNS
max_round_trips = $BENCH_RUNNER_MAX_ROUND_TRIPS
EOF

# the backends measured here: local always; bwrap when it runs a command; docker when an Engine
# and the default sandbox image are there
bwrap_works() {
	command -v bwrap >/dev/null &&
		bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent true 2>/dev/null
}
docker_ready() {
	local tag
	[ "$(id -u)" = 0 ] || { NOTES+=("docker: skipped, not root (dockerd needs root)"); return 1; }
	tag=$("$ROOT/sandbox-image/build.sh" --print-tag) || return 1
	if [ ! -s "${CACHE_DIR:-/var/cache/terrarium}/terrarium-sandbox-${tag#*:}.tar" ] &&
		! { [ -n "${DOCKER_SOCKET:-}" ] && docker -H "unix://$DOCKER_SOCKET" image inspect "$tag" >/dev/null 2>&1; }; then
		NOTES+=("docker: skipped, the default sandbox image $tag is not built (make sandbox-image)")
		return 1
	fi
	DOCKER_SHARED=1
	docker_engine_shared || { NOTES+=("docker: skipped, no Docker Engine answers or starts"); return 1; }
	# shellcheck disable=SC2034 # read by api_config
	STACK_DOCKER_IMAGE=$(DOCKER_SOCKET=$STACK_DOCKER_SOCKET "$ROOT/sandbox-image/build.sh") || {
		NOTES+=("docker: skipped, the default sandbox image could not be had")
		return 1
	}
}
MEASURED=()
for b in "${BACKENDS[@]}"; do
	case $b in
	local) MEASURED+=(local) ;;
	bwrap) if bwrap_works; then MEASURED+=(bwrap); else NOTES+=("bwrap: skipped, bwrap cannot run a command here"); fi ;;
	docker) docker_ready && MEASURED+=(docker) ;;
	esac
done
[ "${MEASURED[0]:-}" = local ] || die "BENCH_RUNNER_BACKENDS must hold local (figures 1, 2 and 4)"

# an API supervisor per backend (NAME = the backend), the first one with the tailer
export MODEL_BASE_URL=$FAKE
tailer=1
for b in "${MEASURED[@]}"; do
	# local runs the model's tools as host processes: only with [runner] host_tools
	host_tools=; [ "$b" = local ] && host_tools=1
	RUNNER_HOST_TOOLS=$host_tools API_TAILER=$tailer WORKERS=${BENCH_WORKERS:-0} \
		MAX_REQUESTS=1000000 api_config "$RUN" "$b" "$b" ||
		die "api_config $b failed"
	tailer=0
done
api_cli "$RUN" local migrate "$ROOT/sql" >/dev/null || die "migrate failed"
KEY=$(api_cli "$RUN" local key create bench-runner bench) || die "key create failed"
servers=() ports=()
for b in "${MEASURED[@]}"; do
	api_start "$RUN" "$b" || die "api_start $b failed"
	p=$(stack_free_port "${ports[@]}") || die "no free port"
	ports+=("$p") servers+=("$p:$b")
done
export NGINX_RATE=1000000 NGINX_BURST=1000000
nginx_start "$RUN" "${servers[@]}" || die "nginx did not start"
declare -A URLS
for i in "${!MEASURED[@]}"; do
	URLS[${MEASURED[$i]}]=http://127.0.0.1:${ports[$i]}
done

# use_runner BACKEND: the runner, alone, with that backend's configuration
use_runner() {
	runner_stop "$RUN" >/dev/null 2>&1
	runner_start "$RUN" "$1" || die "the runner ($1) did not start"
}

# client NAME BACKEND VAR=VALUE...: bench/runner.mjs against BACKEND's API; its JSON line in
# RAW/NAME.json (stderr in RAW/NAME.err), printed; 1 when it failed
client() {
	local name=$1 b=$2
	shift 2
	env URL="${URLS[$b]}" KEY="$KEY" FAKE="$FAKE" "$@" timeout 900 node "$ROOT/bench/runner.mjs" \
		>"$RAW/$name.json" 2>"$RAW/$name.err" &&
		jq -e . "$RAW/$name.json" >/dev/null 2>&1 || {
		say "$name: the client failed: $(tail -n 3 "$RAW/$name.err")"
		return 1
	}
	cat "$RAW/$name.json"
}

# sql_in JSON-FILE: the sessions of a client's output as an SQL list ('a','b',...)
sql_in() { jq -r '[.sessions[] | "\u0027\(.)\u0027"] | join(",")' "$1"; }

# the numbers on stdin -> "n p50 p99 max mean" (nearest rank), in their unit
stats() {
	sort -g | awk '{ v[NR] = $1; s += $1 } END {
		if (!NR) { print "0 0 0 0 0"; exit }
		p50 = int(NR * 0.5); if (p50 < NR * 0.5) p50++
		p99 = int(NR * 0.99); if (p99 < NR * 0.99) p99++
		printf "%d %.2f %.2f %.2f %.3f\n", NR, v[p50], v[p99], v[NR], s / NR }'
}

verdict() { # OK TEXT
	if [ "$1" = 1 ]; then echo "  met    $2"; else echo "  MISSED $2"; fi
}
le() { awk -v a="$1" -v b="$2" 'BEGIN { print (a != "" && a <= b) ? 1 : 0 }'; } # A <= B -> 1

use_runner local

# ---- 1. user.message -> session.status_running ----
declare -A LOAD # the 1-minute load average as each figure starts
load() { cut -d' ' -f1 /proc/loadavg; }
LOAD[1]=$(load)
say "1. user.message -> status_running: $SAMPLES samples"
st=$(client status local MODE=status SESSIONS=$BENCH_RUNNER_STATUS_SESSIONS SAMPLES="$SAMPLES") || bad=1
st=${st:-'{}'}
# the turn's start: the user.message's created_at to the span the runner opened for it
read -r _ start_p50 start_p99 start_max _ < <(db_query "$RUN" "
	SELECT TIMESTAMPDIFF(MICROSECOND, m.created_at, MIN(s.created_at)) / 1000
	FROM session_events m JOIN session_events s ON s.session_id = m.session_id
	  AND s.type = 'span.model_request_start' AND s.seq > m.seq
	WHERE m.type = 'user.message' AND m.session_id IN ($(sql_in "$RAW/status.json" 2>/dev/null || echo "''"))
	GROUP BY m.id" | stats)

# ---- 2. runner overhead per model round trip ----
LOAD[2]=$(load)
say "2. overhead: $BENCH_RUNNER_SEQ_SESSIONS turns of $ROUNDS tool-free rounds"
free_steps=$(jq -cn --argjson n "$ROUNDS" \
	'[{tool_use: {name: "bench_not_offered", input: {}}, repeat: $n}, {text: "done"}]')
ov=$(client overhead local MODE=turns SESSIONS=$BENCH_RUNNER_SEQ_SESSIONS STEPS="$free_steps") || bad=1
ov=${ov:-'{}'}
# per session: the periods between its spans (in its order) beside the same requests replayed
# with curl against the fake giving the same replies (the turn's requests but its last, answered
# with the text): "period replay" a round
curl -sS --max-time 30 "$FAKE/__fake/requests" >"$RAW/fake-requests.json" || bad=1
mkdir -p "$RAW/replay"
: >"$RAW/overhead-rounds.txt"
for ((i = 0; i < BENCH_RUNNER_SEQ_SESSIONS; i++)); do
	sid=$(jq -r ".sessions[$i] // empty" "$RAW/overhead.json" 2>/dev/null)
	tok=$(jq -r ".tokens[$i] // empty" "$RAW/overhead.json" 2>/dev/null)
	[ -n "$sid" ] && [ -n "$tok" ] || { bad=1; break; }
	db_query "$RUN" "
		SELECT TIMESTAMPDIFF(MICROSECOND, LAG(created_at) OVER (ORDER BY ord), created_at) / 1000
		FROM session_events WHERE type = 'span.model_request_start' AND session_id = '$sid'
		ORDER BY ord" | grep -v NULL >"$RAW/replay/$tok-periods.txt"
	: >"$RAW/replay/$tok.curl"
	k=0
	while IFS= read -r body; do
		k=$((k + 1))
		printf '%s' "$body" >"$RAW/replay/$tok-$k.json"
		# "next" between entries, not after the last: a trailing one is an entry without a
		# URL, which makes curl exit 2 (and the pipeline below fail) after every request ran
		[ "$k" = 1 ] || echo next >>"$RAW/replay/$tok.curl"
		printf 'url = "%s/v1/messages"\nheader = "content-type: application/json"\nheader = "anthropic-version: 2023-06-01"\ndata-binary = "@%s"\noutput = "/dev/null"\nwrite-out = "%%{time_total}\\n"\n' \
			"$FAKE" "$RAW/replay/$tok-$k.json" >>"$RAW/replay/$tok.curl"
	done < <(jq -c --arg t "$tok" '[.requests[] | select(.path == "/v1/messages"
		and (.body | tostring | contains($t))) | .body] | .[:-1][]' "$RAW/fake-requests.json")
	curl -sS --max-time 10 "$FAKE/__fake/script" -d "$(jq -cn --arg t "$tok" --argjson s "$free_steps" \
		'{match: $t, steps: $s}')" >/dev/null || bad=1
	curl -sS -K "$RAW/replay/$tok.curl" 2>>"$RAW/replay.err" | awk '{ print $1 * 1000 }' |
		paste "$RAW/replay/$tok-periods.txt" - >>"$RAW/overhead-rounds.txt" || bad=1
done
read -r n_periods _ _ _ period_mean < <(cut -f1 "$RAW/overhead-rounds.txt" | stats)
read -r n_replay model_p50 _ _ model_mean < <(cut -f2 "$RAW/overhead-rounds.txt" | grep . | stats)
read -r _ overhead overhead_p99 _ overhead_mean < <(awk -F'\t' '$1 != "" && $2 != "" { print $1 - $2 }' \
	"$RAW/overhead-rounds.txt" | stats)
[ "$n_replay" = "$n_periods" ] && [ "$n_periods" = $((BENCH_RUNNER_SEQ_SESSIONS * ROUNDS)) ] || {
	say "2.: $n_periods periods, $n_replay replayed requests (expected $((BENCH_RUNNER_SEQ_SESSIONS * ROUNDS)) each)"
	bad=1
}

# ---- 3. bash true round trip, per backend ----
bash_steps=$(jq -cn --argjson n "$ROUNDS" \
	'[{tool_use: {name: "bash", input: {command: "true"}}, repeat: $n}, {text: "done"}]')
declare -A TOOL
tool_rt() { # BACKEND: the client, then "n p50 p99 max mean errors" into TOOL[BACKEND]
	local b=$1 in errs
	LOAD[3$b]=$(load)
	say "3. bash true round trip ($b): $BENCH_RUNNER_SEQ_SESSIONS turns of $ROUNDS"
	[ "$b" = local ] || use_runner "$b"
	client "tool-$b" "$b" MODE=turns WARM=1 SESSIONS=$BENCH_RUNNER_SEQ_SESSIONS STEPS="$bash_steps" \
		WAIT_MS=300000 >/dev/null || { TOOL[$b]="0 0 0 0 0 0"; return 1; }
	in=$(sql_in "$RAW/tool-$b.json")
	# every tool use but each session's first (the warm-up's, which provisioned the sandbox)
	db_query "$RUN" "
		SELECT TIMESTAMPDIFF(MICROSECOND, u.created_at, r.created_at) / 1000,
		  JSON_EXTRACT(r.body, '\$.is_error') FROM (
		    SELECT id, session_id, created_at,
		      ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY ord) AS n
		    FROM session_events WHERE type = 'agent.tool_use' AND session_id IN ($in)) u
		  JOIN session_events r ON r.session_id = u.session_id AND r.ref_id = u.id
		    AND r.type = 'agent.tool_result'
		WHERE u.n > 1" >"$RAW/tool-$b.txt"
	errs=$(db_query "$RUN" "SELECT COUNT(*) FROM session_events WHERE type = 'agent.tool_result'
		AND JSON_EXTRACT(body, '\$.is_error') = 'true' AND session_id IN ($in)")
	TOOL[$b]="$(cut -f1 "$RAW/tool-$b.txt" | stats) $errs"
	[ "$errs" = 0 ] || {
		say "3. $b: $errs tool results are errors: $(db_query "$RUN" "SELECT body FROM session_events
			WHERE type = 'agent.tool_result' AND session_id IN ($in) LIMIT 1")"
		return 1
	}
}
floor=$(for _ in $(seq $BENCH_RUNNER_FLOOR_RUNS); do
	s=$EPOCHREALTIME
	bash -c true
	echo "$s $EPOCHREALTIME"
done | awk '{ print ($2 - $1) * 1000 }' | stats)
read -r _ floor_p50 floor_p99 _ _ <<<"$floor"
tool_rt local || bad=1

# ---- 4. 100 sessions at once ----
LOAD[4]=$(load)
say "4. $CONC_SESSIONS sessions x $BENCH_RUNNER_CONC_TOOLS tool round trips at once, the model taking ${DELAY_MS} ms"
conc_steps=$(jq -cn --argjson n "$BENCH_RUNNER_CONC_TOOLS" --argjson d "$DELAY_MS" \
	'[{tool_use: {name: "bash", input: {command: "true"}}, delay_ms: $d, repeat: $n}, {text: "done", delay_ms: $d}]')
# mem_sample: every BENCH_RUNNER_RSS_EVERY_S "turns rss_kib pss_kib" of the runner and its turn
# processes (its children) until killed
mem_sample() {
	local sup pids
	sup=$(cat "$RUN/runner.pid")
	while :; do
		pids=$(pgrep -P "$sup" | tr '\n' ' ')
		# shellcheck disable=SC2086 # the PIDs, one word each
		set -- $pids
		printf '%d ' $#
		for p in "$sup" "$@"; do cat "/proc/$p/smaps_rollup"; done 2>/dev/null |
			awk '$1 == "Rss:" { r += $2 } $1 == "Pss:" { q += $2 } END { print r + 0, q + 0 }'
		sleep "$BENCH_RUNNER_RSS_EVERY_S"
	done
}
# stack_cpu: the CPU seconds the stack's processes used so far, with the children they reaped,
# as "runner mariadb api+nginx fake total": the runner (its turns and their tools), MariaDB, the
# API supervisors (workers, tailer) and nginx (each the leader of a session: RUN/*.pid), the fake
stack_cpu() {
	local f p pid sid cpu
	declare -A part=([runner]=0 [mariadb]=0 [api]=0 [fake]=0)
	declare -A of=(["$FAKE_PID"]=fake)
	for f in "$RUN"/*.pid; do
		read -r pid <"$f" 2>/dev/null || continue
		case $(basename "$f" .pid) in
		runner | mariadb) of[$pid]=$(basename "$f" .pid) ;;
		*) of[$pid]=api ;;
		esac
	done
	while read -r p sid; do
		[ -n "${of[$sid]:-}" ] || [ "$p" = "$FAKE_PID" ] || continue
		cpu=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$p/stat" 2>/dev/null) || continue
		f=${of[$sid]:-fake}
		part[$f]=$((part[$f] + ${cpu:-0}))
	done < <(ps -eo pid=,sid=)
	awk -v hz="$(getconf CLK_TCK)" -v r="${part[runner]}" -v m="${part[mariadb]}" \
		-v a="${part[api]}" -v f="${part[fake]}" \
		'BEGIN { printf "%.2f %.2f %.2f %.2f %.2f\n", r / hz, m / hz, a / hz, f / hz, (r + m + a + f) / hz }'
}
mem_sample >"$RAW/memory.txt" &
SAMPLER_PID=$!
read -ra cpu0 < <(stack_cpu)
cc=$(client concurrent local MODE=turns CONCURRENT=1 SESSIONS="$CONC_SESSIONS" \
	STEPS="$conc_steps" WAIT_MS=300000) || bad=1
read -ra cpu1 < <(stack_cpu)
cc_cpus=() # runner mariadb api+nginx fake total, used meanwhile
for i in 0 1 2 3 4; do
	cc_cpus+=("$(awk -v a="${cpu0[$i]:-0}" -v b="${cpu1[$i]:-0}" 'BEGIN { printf "%.2f", b - a }')")
done
cc_cpu=${cc_cpus[4]}
kill "$SAMPLER_PID" 2>/dev/null
wait "$SAMPLER_PID" 2>/dev/null
SAMPLER_PID=
cc=${cc:-'{}'}
cc_in=$(sql_in "$RAW/concurrent.json" 2>/dev/null || echo "''")
cc_results=$(db_query "$RUN" "SELECT COUNT(*) FROM session_events WHERE type = 'agent.tool_result'
	AND JSON_EXTRACT(body, '\$.is_error') = 'false' AND session_id IN ($cc_in)")
cc_expect=$((CONC_SESSIONS * BENCH_RUNNER_CONC_TOOLS))
cc_ideal=$(((BENCH_RUNNER_CONC_TOOLS + 1) * DELAY_MS))
# what the wall time cannot beat: the model's time of one turn, or the CPU the stack used spread
# over every core
cc_floor=$(awk -v i="$cc_ideal" -v c="$cc_cpu" -v n="$(nproc)" 'BEGIN { f = c * 1000 / n; printf "%d", (f > i ? f : i) }')
cc_wall=$(jq -r '.wall_ms // 0' <<<"$cc")
cc_ok=$(jq -r --argjson n "$CONC_SESSIONS" 'if .done == $n and .missed == 0 and .errors == 0 then 1 else 0 end' <<<"$cc")
[ "$cc_results" = "$cc_expect" ] || cc_ok=0
# the most turns at once, the memory's peak, and whether every sample kept within its bound
read -r mem_turns mem_rss mem_pss mem_ok < <(awk -v b=$BENCH_RUNNER_TARGET_MEM_BASE_KIB \
	-v t=$BENCH_RUNNER_TARGET_MEM_TURN_KIB '
	{ if ($1 > turns) turns = $1; if ($2 > rss) rss = $2; if ($3 > pss) pss = $3
	  if ($3 > b + t * $1) over++ }
	END { printf "%d %d %d %d\n", turns, rss, pss, (over == 0 && NR > 0) }' "$RAW/memory.txt")
# the model requests in flight at once (at least: those that arrived within the delay before
# another's arrival), from the fake's record of the phase's delayed requests
curl -sS --max-time 30 "$FAKE/__fake/requests" >"$RAW/fake-requests-concurrent.json" || bad=1
cc_inflight=$(jq -r --slurpfile c "$RAW/concurrent.json" '($c[0].tokens // []) as $t | .requests[]
	| select((.source // "") | startswith("script:")) | select(.source[7:] as $m | $t | index($m))
	| ((.at[0:19] + "Z" | fromdate) * 1000 + (.at[20:23] | tonumber))' \
	"$RAW/fake-requests-concurrent.json" 2>/dev/null | sort -n |
	awk -v d="$DELAY_MS" '{ t[NR] = $1; while (t[NR] - t[lo + 1] >= d) lo++; if (NR - lo > m) m = NR - lo }
	END { print m + 0 }')
mem_pss_turns=$(awk '{ if ($3 > p) { p = $3; t = $1 } } END { print t + 0 }' "$RAW/memory.txt")

# ---- 3. on the other backends ----
for b in "${MEASURED[@]:1}"; do
	tool_rt "$b" || bad=1
done

# ---- report ----
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
{
	printf 'runner: %s, %s cores, load average %s, fake model %s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" \
		"$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$FAKE"
	printf '1. user.message -> session.status_running on the stream, %s samples (load %s): %s\n' \
		"$SAMPLES" "${LOAD[1]}" "$(jq -c 'del(.sessions)' <<<"$st")"
	printf '   the turn'"'"'s start (user.message -> the runner'"'"'s span.model_request_start, [runner] poll_ms %s): p50 %s ms, p99 %s ms, max %s ms\n' \
		"$(api_setting "$RUN" local runner poll_ms)" "$start_p50" "$start_p99" "$start_max"
	printf '2. round trips of tool-free turns (load %s): %s periods, mean %s ms; the model alone (curl replay): mean %s ms, p50 %s ms\n' \
		"${LOAD[2]}" "$n_periods" "$period_mean" "$model_mean" "$model_p50"
	printf '   runner overhead per model round trip (period - replay, a round): median %s ms, mean %s ms, p99 %s ms (median %s x the model'"'"'s own round trip)\n' \
		"$overhead" "$overhead_mean" "$overhead_p99" \
		"$(awk -v o="$overhead" -v m="$model_p50" 'BEGIN { printf "%.2f", (m > 0 ? o / m : 0) }')"
	printf '3. bash -c true alone (this script): p50 %s ms, p99 %s ms\n' "$floor_p50" "$floor_p99"
	for b in "${MEASURED[@]}"; do
		read -r n p50 p99 max mean errs <<<"${TOOL[$b]}"
		printf '   %-6s bash true round trip (load %s): n %s, p50 %s ms, p99 %s ms, max %s ms, mean %s ms, error results %s (p50 %s x bash -c true)\n' \
			"$b" "${LOAD[3$b]}" "$n" "$p50" "$p99" "$max" "$mean" "$errs" \
			"$(awk -v a="$p50" -v f="$floor_p50" 'BEGIN { printf "%.1f", (f > 0 ? a / f : 0) }')"
	done
	printf '4. %s sessions x %s tool round trips at once, the model %s ms a request (load %s): %s\n' \
		"$CONC_SESSIONS" "$BENCH_RUNNER_CONC_TOOLS" "$DELAY_MS" "${LOAD[4]}" "$(jq -c 'del(.sessions, .tokens)' <<<"$cc")"
	printf '   tool results without error %s of %s; wall %s ms = %s x one turn'"'"'s model time (%s ms); model requests in flight at once: up to %s\n' \
		"$cc_results" "$cc_expect" "$cc_wall" \
		"$(awk -v w="$cc_wall" -v i="$cc_ideal" 'BEGIN { printf "%.2f", w / i }')" "$cc_ideal" "$cc_inflight"
	printf '   the stack'"'"'s CPU meanwhile: %s s (%s ms a tool round trip; spread over %s cores: %s ms): runner, turns and tools %s s, MariaDB %s s, API and nginx %s s, fake model %s s\n' \
		"$cc_cpu" "$(awk -v c="$cc_cpu" -v n="$cc_expect" 'BEGIN { printf "%.1f", c * 1000 / n }')" \
		"$(nproc)" "$(awk -v c="$cc_cpu" -v n="$(nproc)" 'BEGIN { printf "%d", c * 1000 / n }')" \
		"${cc_cpus[0]}" "${cc_cpus[1]}" "${cc_cpus[2]}" "${cc_cpus[3]}"
	printf '   runner memory: at most %s turn processes at once; peak PSS %s MiB (with %s turns), peak RSS summed %s MiB\n' \
		"$mem_turns" "$(mib "$mem_pss")" "$mem_pss_turns" "$(mib "$mem_rss")"
	for n in "${NOTES[@]}"; do
		echo "note: $n"
	done
	echo "targets:"
	verdict "$(jq -r --argjson t $BENCH_RUNNER_TARGET_STATUS_MS 'if .missed == 0 and .p99_ms != null and .p99_ms <= $t then 1 else 0 end' <<<"$st")" \
		"user.message -> status_running: p99 $(jq -r '.p99_ms // "none"' <<<"$st") ms (<= $BENCH_RUNNER_TARGET_STATUS_MS ms), $(jq -r '.missed // "?"' <<<"$st") missed"
	verdict "$(le "$overhead" $BENCH_RUNNER_TARGET_OVERHEAD_MS)" \
		"runner overhead per model round trip: median $overhead ms (<= $BENCH_RUNNER_TARGET_OVERHEAD_MS ms)"
	for b in "${MEASURED[@]}"; do
		read -r n _ p99 _ _ errs <<<"${TOOL[$b]}"
		ok=$(le "$p99" "${BENCH_RUNNER_TARGET_TOOL_MS[$b]}")
		[ "$n" -gt 0 ] && [ "$errs" = 0 ] || ok=0
		verdict "$ok" "bash true round trip $b: p99 $p99 ms (<= ${BENCH_RUNNER_TARGET_TOOL_MS[$b]} ms)"
	done
	verdict "$cc_ok" "$CONC_SESSIONS turns at once: all ended end_turn with their $BENCH_RUNNER_CONC_TOOLS tool results"
	verdict "$(le "$cc_wall" $((BENCH_RUNNER_CONC_FACTOR * cc_floor)))" \
		"$CONC_SESSIONS turns at once: wall $cc_wall ms (<= $BENCH_RUNNER_CONC_FACTOR x $cc_floor ms, the larger of the model's time and the CPU's: none waited for another's model call)"
	verdict "$mem_ok" \
		"runner memory: PSS within 16 MiB + 2 MiB a turn at every sample (peak $(mib "$mem_pss") MiB with $mem_pss_turns turns)"
} | tee "$OUT/runner.txt"
grep -q MISSED "$OUT/runner.txt" && exit 1
[ $bad = 0 ]
