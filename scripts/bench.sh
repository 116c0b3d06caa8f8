#!/usr/bin/env bash
# `make bench`: terrarium's API against bare FastCGI, measured in one run (issue 7).
#
# Starts, in a temporary directory and on free loopback ports: MariaDB, the API (backend local,
# the default worker count) and one nginx with three servers: the API, and the two reference
# responders of bench/ (bench-ref-select: one primary-key SELECT of an environment row, and
# for the list route one SELECT of the 100 newest rows on the same index, and for the update
# route that SELECT then one compare-and-set UPDATE; bench-ref-insert: one single-row INSERT),
# with as many workers as the API, on the same MariaDB. Seeds 10,000 environments across 2 workspaces (two made through the API, the rest
# copied from them by SQL, so every row looks exactly like an API-created one), then runs wrk
# (bench/wrk.lua) for each route at c=1 and c=32, BENCH_RUNS times each, interleaving the API
# and the references so drift on a noisy machine hits both alike, and reports the medians:
#
#   route, concurrency, req/s, p50, p99, the reference and the ratio to it (the median of the
#   per-run ratios), then each API worker's RSS (from /proc) and the issue's targets.
#
# The table goes to stdout and OUT/table.txt, the raw wrk outputs to OUT/raw/, where OUT is
# BENCH_OUT (default var/bench/<UTC time>). Then scripts/bench-reconciler.sh runs (BENCH_RECONCILER=0
# skips it), then scripts/bench-work.sh (the work queue's long polls; BENCH_WORK=0 skips it), then
# scripts/bench-streams.sh (1,000 event streams; BENCH_STREAMS=0 skips it), then
# scripts/bench-runner.sh (the runner against the fake model; BENCH_RUNNER=0 skips it), each
# into OUT (reconciler.txt, work.txt, streams.txt, runner.txt), and a summary of the targets each
# result file missed; the exit status is non-zero when one of them failed. Every load run is
# bounded (wrk -d plus a timeout). Not part of `make test`.
#
# Environment: BENCH_DURATION (seconds per run, default 3), BENCH_RUNS (default 5),
# BENCH_ENVS (default 10000), BENCH_WORKERS (API workers, default 0 = 2 x cores),
# BENCH_CONCURRENCY (default "1 32"), BENCH_MAX_REQUESTS ([api] max_requests, default 1000000:
# workers are not recycled during the run, so their RSS is that of long-lived workers),
# BENCH_NGINX_KEEPALIVE=N (nginx keeps N FastCGI connections to each server's workers, with
# fastcgi_keep_conn on, for the API and the references alike; default 0), BUILD_DIR, KEEP_RUN=1.
set -uo pipefail

# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-stack.sh" && bench_init bench || exit 1

DURATION=${BENCH_DURATION:-3}
RUNS=${BENCH_RUNS:-5}
NENVS=${BENCH_ENVS:-10000}
read -ra CONCS <<<"${BENCH_CONCURRENCY:-1 32}"
BENCH_WARMUP_S=2
BENCH_TARGET_RATIO=0.8     # GET, create and update against their references
BENCH_TARGET_UPDATE_INSERT=0.85 # update against the INSERT reference (issue 14)
BENCH_TARGET_LIST=3        # a list of 100 costs at most 3 GETs
BENCH_TARGET_P99_MS=10     # at c=32
BENCH_TARGET_RSS_KIB=8192  # per API worker


for bin in terrarium-api bench-ref-select bench-ref-insert; do
	[ -x "$BUILD/$bin" ] || die "$BUILD/$bin is not built (run make bench)"
done
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
command -v curl >/dev/null || die "curl not found"
command -v jq >/dev/null || die "jq not found"

# shellcheck disable=SC2317 # called by stack_scratch's stop, not from here
scratch_before_stop() {
	# shellcheck disable=SC2153 # RUN: set by stack_scratch
	_stack_stop "$RUN/refsel.pid" bench-ref-select TERM 10 "reference select"
	_stack_stop "$RUN/refins.pid" bench-ref-insert TERM 10 "reference insert"
}
stack_scratch bench || die "cannot make a runtime directory"
mkdir -p "$OUT/raw" || die "cannot create $OUT"

# ---- the stack -------------------------------------------------------------------------------

db_init "$RUN" || die "db_init failed"
db_start "$RUN" || die "db_start failed"
WORKERS=${BENCH_WORKERS:-0} MAX_REQUESTS=${BENCH_MAX_REQUESTS:-1000000} \
	api_config "$RUN" api local || die "api_config failed"
api_cli "$RUN" api migrate "$ROOT/sql" >/dev/null || die "migrate failed"
KEY_A=$(api_cli "$RUN" api key create bench-a bench) || die "key create failed"
# shellcheck disable=SC2034 # read as ${!key} by the seeding loop
KEY_B=$(api_cli "$RUN" api key create bench-b bench) || die "key create failed"
api_cli "$RUN" api key create bench-ref bench >/dev/null || die "key create failed"
WS_A=$(api_cli "$RUN" api workspace id bench-a) || die "workspace id failed"
WS_REF=$(api_cli "$RUN" api workspace id bench-ref) || die "workspace id failed"
api_start "$RUN" api || die "api_start failed"

api_workers() { # PIDs of the API supervisor's request workers (not its long-poll pool's)
	local sup p out=() kids=()
	sup=$(stack_running "$RUN/api.pid" terrarium-api) || return 0
	read -ra kids <"/proc/$sup/task/$sup/children" 2>/dev/null
	for p in "${kids[@]}"; do
		# the pools' process names: SERVE_WORKER_NAME, SERVE_POLL_WORKER_NAME (fcgi/serve.h)
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = terrarium-api ] && out+=("$p")
	done
	echo "${out[*]}"
}
read -ra pids <<<"$(api_workers)"
NWORKERS=${#pids[@]}
[ "$NWORKERS" -gt 0 ] || die "the API has no workers"

# The references: same worker count, same database, same nginx. Their rows go to a third
# workspace that no benchmarked request reads.
start_ref() { # NAME PROGRAM
	_stack_spawn "$RUN/$1.pid" "$RUN/$1.log" env REF_SOCKET="$RUN/$1.sock" \
		REF_SOCKET_GROUP="$(stack_nginx_group)" REF_WORKERS="$NWORKERS" \
		REF_DB_SOCKET="$RUN/mysql.sock" REF_DB_USER="$STACK_DB_USER" \
		REF_DB_PASSWORD_FILE="$RUN/db-password" REF_DB_NAME="$STACK_DB_NAME" \
		REF_WORKSPACE_ID="$WS_REF" REF_LIST_WORKSPACE_ID="$WS_A" "$BUILD/$2" ||
		die "$2 did not start"
	local n=100
	until [ -S "$RUN/$1.sock" ]; do
		n=$((n - 1))
		[ $n -gt 0 ] || { _stack_tail "$RUN/$1.log"; die "$2: no socket"; }
		sleep 0.1
	done
}
start_ref refsel bench-ref-select
start_ref refins bench-ref-insert

# nginx: a failed start (a port taken meanwhile) is retried with other ports. The per-key
# rate limit is lifted: the load comes from one key.
export NGINX_RATE=${BENCH_NGINX_RATE:-1000000} NGINX_BURST=${BENCH_NGINX_BURST:-1000000}
export NGINX_KEEPALIVE=${BENCH_NGINX_KEEPALIVE:-0}
started=0
for attempt in 1 2 3; do
	if ! P_API=$(stack_free_port) || ! P_SEL=$(stack_free_port "$P_API") ||
		! P_INS=$(stack_free_port "$P_API" "$P_SEL"); then
		die "no free port"
	fi
	if nginx_start "$RUN" "$P_API:api" "$P_SEL:refsel" "$P_INS:refins"; then
		started=1
		break
	fi
	nginx_stop "$RUN"
	say "nginx start failed (attempt $attempt); retrying with other ports"
done
[ $started = 1 ] || die "nginx did not start"
URL_API="http://127.0.0.1:$P_API"

# ---- seed ------------------------------------------------------------------------------------

BODY_TEMPLATE='{"name":"bench-seed-0","description":"benchmark environment created by wrk","metadata":{"team":"bench","tier":"gold","run":"0"},"config":{"type":"cloud","networking":{"type":"unrestricted"}}}'

# SQL copies of TEMPLATE_ID: COUNT rows, ids made like the API's (env_ + 24 of [0-9A-Za-z]),
# created_at one millisecond apart before the template's.
seed_copies() { # TEMPLATE_ID COUNT
	local tmpl=$1 count=$2
	{
		echo "CREATE TEMPORARY TABLE bench_seed (n INT NOT NULL PRIMARY KEY,"
		echo " id VARCHAR(40) NOT NULL) ENGINE=MEMORY;"
		head -c $((count * 120 + 4096)) /dev/urandom | LC_ALL=C tr -dc 'A-Za-z0-9' |
			fold -w 24 | head -n "$count" |
			awk '{ printf "%s(%d,\x27env_%s\x27)", (NR % 1000 == 1 ? "INSERT INTO bench_seed VALUES " : ","), NR, $0;
			       if (NR % 1000 == 0) print ";" } END { if (NR % 1000) print ";" }'
		cat <<SQL
INSERT INTO environments (id, workspace_id, account_id, name, description, metadata, type, scope,
  config, revision, created_at, updated_at, archived_at)
SELECT s.id, t.workspace_id, t.account_id, CONCAT('bench-seed-', s.n), t.description, t.metadata,
  t.type, t.scope, t.config, t.revision, t.created_at - INTERVAL s.n * 1000 MICROSECOND,
  t.created_at - INTERVAL s.n * 1000 MICROSECOND, t.archived_at
FROM bench_seed s JOIN environments t ON t.id = '$tmpl';
SQL
	} | db_sql "$RUN" "$STACK_DB_NAME"
}

say "seeding $NENVS environments across 2 workspaces"
t0=$(date +%s.%N)
half=$((NENVS / 2))
for k in A B; do
	key=KEY_$k
	n=$half
	[ $k = B ] && n=$((NENVS - half))
	tmpl=$(KEY=${!key} api_ok "$URL_API" POST /v1/environments "$BODY_TEMPLATE" | jq -r .id) ||
		die "template create failed"
	seed_copies "$tmpl" $((n - 1)) || die "seeding failed"
done
db_query "$RUN" "ANALYZE TABLE environments" >/dev/null
db_query "$RUN" "SELECT id FROM environments WHERE workspace_id = '$WS_A'" \
	>"$RUN/ids-a.txt" || die "cannot list ids"
total=$(db_query "$RUN" "SELECT COUNT(*) FROM environments") || die "count failed"
say "seeded $total environments in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")s" \
	"($(wc -l <"$RUN/ids-a.txt") in workspace bench-a, which the benchmark's key reads)"
# a seeded row answers like one the API made
probe=$(head -n 2 "$RUN/ids-a.txt" | tail -n 1)
curl -sS --max-time 10 -o "$OUT/sample-get.json" "$URL_API/v1/environments/$probe" \
	-H "x-api-key: $KEY_A" -H 'anthropic-version: 2023-06-01' \
	-H 'anthropic-beta: managed-agents-2026-04-01' || die "probe failed"
jq -e '.type == "environment" and .config.type == "cloud"' "$OUT/sample-get.json" >/dev/null ||
	die "a seeded environment does not answer like an API one: $(cat "$OUT/sample-get.json")"

# ---- load ------------------------------------------------------------------------------------

# Targets: NAME PORT MODE. The references answer the same requests as the routes they stand for.
TARGETS=(
	"ref-select $P_SEL get"
	"get $P_API get"
	"ref-list $P_SEL list"
	"list $P_API list"
	"ref-insert $P_INS create"
	"create $P_API create"
	"ref-update $P_SEL update"
	"update $P_API update"
)

run_wrk() { # NAME PORT MODE CONC SECONDS OUTFILE
	local threads=$4
	[ "$threads" -gt 2 ] && threads=2
	BENCH_MODE=$3 BENCH_KEY=$KEY_A BENCH_IDS="$RUN/ids-a.txt" \
		timeout $(($5 + 15)) wrk -t"$threads" -c"$4" -d"$5"s --timeout 5s --latency \
		-s "$ROOT/bench/wrk.lua" "http://127.0.0.1:$2" >"$6" 2>&1
}

say "warming up (${BENCH_WARMUP_S}s per target)"
for t in "${TARGETS[@]}"; do
	read -r name port mode <<<"$t"
	run_wrk "$name" "$port" "$mode" 8 "$BENCH_WARMUP_S" "$OUT/raw/warmup-$name.txt"
done

say "measuring: ${#TARGETS[@]} targets x c=(${CONCS[*]}) x $RUNS runs x ${DURATION}s"
for ((r = 1; r <= RUNS; r++)); do
	for c in "${CONCS[@]}"; do
		for t in "${TARGETS[@]}"; do
			read -r name port mode <<<"$t"
			f="$OUT/raw/$name-c$c-run$r.txt"
			run_wrk "$name" "$port" "$mode" "$c" "$DURATION" "$f" ||
				say "wrk $name c=$c run $r exited non-zero (see $f)"
		done
	done
	say "run $r of $RUNS done"
done

# ---- report ----------------------------------------------------------------------------------

# One wrk output -> "rps p50_ms p99_ms errors" (errors: non-2xx responses + socket errors).
parse_wrk() {
	awk '
	function ms(v) {
		if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
		if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
		if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
		return v + 0
	}
	$1 == "50%" { p50 = ms($2) }
	$1 == "99%" { p99 = ms($2) }
	/^Requests\/sec:/ { rps = $2 }
	/Non-2xx or 3xx responses:/ { err += $NF }
	/Socket errors:/ { gsub(",", ""); err += $4 + $6 + $8 + $10 }
	END { printf "%s %s %s %d\n", (rps == "" ? 0 : rps), p50 + 0, p99 + 0, err }' "$1"
}

declare -A RPS P50 P99 ERR RUNRPS
for c in "${CONCS[@]}"; do
	for t in "${TARGETS[@]}"; do
		read -r name _ _ <<<"$t"
		rows=$(for ((r = 1; r <= RUNS; r++)); do parse_wrk "$OUT/raw/$name-c$c-run$r.txt"; done)
		RPS[$name,$c]=$(awk '{ print $1 }' <<<"$rows" | median)
		P50[$name,$c]=$(awk '{ print $2 }' <<<"$rows" | median)
		P99[$name,$c]=$(awk '{ print $3 }' <<<"$rows" | median)
		ERR[$name,$c]=$(awk '{ s += $4 } END { print s + 0 }' <<<"$rows")
		RUNRPS[$name,$c]=$(awk '{ print $1 }' <<<"$rows" | tr '\n' ' ')
	done
done

# Median over the runs of A's req/s over B's in the same run (A and B ran one after the other
# in every run, so slow drift of a shared machine cancels out of each pair).
paired_ratio() { # A B C
	local -a a b
	read -ra a <<<"${RUNRPS[$1,$3]}"
	read -ra b <<<"${RUNRPS[$2,$3]}"
	for ((i = 0; i < ${#a[@]}; i++)); do
		awk -v x="${a[$i]}" -v y="${b[$i]:-0}" 'BEGIN { if (y > 0) print x / y }'
	done | median | awk '{ printf "%.2f", $1 }'
}

rss_of() { # PID: VmRSS in KiB
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}
ref_workers() { # NAME
	local sup
	sup=$(stack_running "$RUN/$1.pid" "bench-ref") || return 0
	cat "/proc/$sup/task/$sup/children" 2>/dev/null
}
read -ra pids <<<"$(api_workers)"
rss_list="" rss_max=0
for p in "${pids[@]}"; do
	k=$(rss_of "$p") || continue
	[ -n "$k" ] || continue
	rss_list+="$(printf '%d:%.1f ' "$p" "$(echo "$k / 1024" | bc -l)")"
	[ "$k" -gt "$rss_max" ] && rss_max=$k
done
ref_rss=""
for p in $(ref_workers refsel) $(ref_workers refins); do
	k=$(rss_of "$p") && [ -n "$k" ] && ref_rss+="$(printf '%.1f ' "$(echo "$k / 1024" | bc -l)")"
done

ROUTES=(
	"get|GET /v1/environments/{id}|ref-select"
	"list|GET /v1/environments?limit=100|ref-list"
	"create|POST /v1/environments|ref-insert"
	"update|POST /v1/environments/{id}|ref-insert"
	"update|POST /v1/environments/{id}|ref-update"
)

{
	printf 'terrarium bench: %s, %d cores, %d API workers (references: %d each), %d environments,\n' \
		"$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "$NWORKERS" "$NWORKERS" "$total"
	printf 'wrk on loopback, %d runs of %ds each, medians; ratio: median over the runs of API req/s over\n' \
		"$RUNS" "$DURATION"
	printf 'the reference req/s in the same run (targets interleaved: ref, API, ref, API...)\n'
	[ "$NGINX_KEEPALIVE" -gt 0 ] &&
		printf 'nginx: fastcgi_keep_conn on, upstream keepalive %s\n' "$NGINX_KEEPALIVE"
	echo
	printf '%-34s %3s %9s %8s %8s  %-10s %9s %6s %5s\n' route c 'req/s' 'p50 ms' 'p99 ms' \
		reference 'ref req/s' ratio errs
	for c in "${CONCS[@]}"; do
		for rt in "${ROUTES[@]}"; do
			IFS='|' read -r key label ref <<<"$rt"
			printf '%-34s %3s %9.0f %8.2f %8.2f  %-10s %9.0f %6s %5s\n' "$label" "$c" \
				"${RPS[$key,$c]}" "${P50[$key,$c]}" "${P99[$key,$c]}" "$ref" \
				"${RPS[$ref,$c]}" "$(paired_ratio "$key" "$ref" "$c")" \
				"${ERR[$key,$c]}"
		done
	done
	echo
	printf 'references alone: '
	for c in "${CONCS[@]}"; do
		printf 'c=%s select %.0f req/s p99 %.2f ms, list %.0f req/s p99 %.2f ms, insert %.0f req/s p99 %.2f ms, update %.0f req/s p99 %.2f ms (errs %s); ' \
			"$c" "${RPS[ref-select,$c]}" "${P99[ref-select,$c]}" "${RPS[ref-list,$c]}" \
			"${P99[ref-list,$c]}" "${RPS[ref-insert,$c]}" "${P99[ref-insert,$c]}" \
			"${RPS[ref-update,$c]}" "${P99[ref-update,$c]}" \
			"$((${ERR[ref-select,$c]} + ${ERR[ref-list,$c]} + ${ERR[ref-insert,$c]} + ${ERR[ref-update,$c]}))"
	done
	echo
	printf 'API worker RSS (pid:MiB): %s\n' "$rss_list"
	printf 'reference worker RSS (MiB): %s\n' "$ref_rss"
	echo
	echo "targets:"
	verdict() { # OK TEXT
		if [ "$1" = 1 ]; then printf '  met    %s\n' "$2"; else printf '  MISSED %s\n' "$2"; fi
	}
	for c in "${CONCS[@]}"; do
		r=$(paired_ratio get ref-select "$c")
		verdict "$(awk -v r="$r" -v t=$BENCH_TARGET_RATIO 'BEGIN { print (r >= t) }')" \
			"GET by id c=$c: $r x the SELECT reference (>= $BENCH_TARGET_RATIO)"
		r=$(paired_ratio create ref-insert "$c")
		verdict "$(awk -v r="$r" -v t=$BENCH_TARGET_RATIO 'BEGIN { print (r >= t) }')" \
			"create c=$c: $r x the INSERT reference (>= $BENCH_TARGET_RATIO)"
		r=$(paired_ratio update ref-update "$c")
		verdict "$(awk -v r="$r" -v t=$BENCH_TARGET_RATIO 'BEGIN { print (r >= t) }')" \
			"update c=$c: $r x the update reference (>= $BENCH_TARGET_RATIO)"
		r=$(paired_ratio update ref-insert "$c")
		verdict "$(awk -v r="$r" -v t=$BENCH_TARGET_UPDATE_INSERT 'BEGIN { print (r >= t) }')" \
			"update c=$c: $r x the INSERT reference (>= $BENCH_TARGET_UPDATE_INSERT; the update reference itself: $(paired_ratio ref-update ref-insert "$c"))"
		r=$(paired_ratio get list "$c")
		verdict "$(awk -v r="$r" -v t=$BENCH_TARGET_LIST 'BEGIN { print (r <= t) }')" \
			"list of 100 c=$c: costs $r GETs (<= $BENCH_TARGET_LIST)"
	done
	c=${CONCS[${#CONCS[@]} - 1]}
	for key in get list create update; do
		verdict "$(awk -v p="${P99[$key,$c]}" -v t=$BENCH_TARGET_P99_MS 'BEGIN { print (p <= t) }')" \
			"p99 $key c=$c: ${P99[$key,$c]} ms (<= $BENCH_TARGET_P99_MS ms)"
	done
	verdict "$([ "$rss_max" -le $BENCH_TARGET_RSS_KIB ] && echo 1 || echo 0)" \
		"worker RSS: max $(printf '%.1f' "$(echo "$rss_max / 1024" | bc -l)") MiB (<= 8 MiB)"
	errs=0
	for c in "${CONCS[@]}"; do
		for key in get list create update ref-select ref-list ref-insert ref-update; do
			errs=$((errs + ${ERR[$key,$c]}))
		done
	done
	verdict "$([ $errs -eq 0 ] && echo 1 || echo 0)" "no errors (non-2xx, socket errors): $errs"
} | tee "$OUT/table.txt"
say "table: $OUT/table.txt; raw wrk outputs: $OUT/raw/"

# The other benchmarks, each on its stack, into the same OUT; a failed or missed one does not
# keep the next from running (the exit status says it).
rc=0
for sub in "reconciler BENCH_RECONCILER" "work BENCH_WORK" "streams BENCH_STREAMS" \
	"runner BENCH_RUNNER"; do
	read -r name var <<<"$sub"
	[ "${!var:-1}" = 1 ] || continue
	echo
	BENCH_OUT="$OUT" "$ROOT/scripts/bench-$name.sh" || rc=1
done

# the summary: each result file of OUT and what it missed
echo
say "results in $OUT:"
for f in table reconciler work streams runner; do
	[ -f "$OUT/$f.txt" ] || continue
	# a target's line: "  met ..." or "  MISSED ..." ("  ok ...", "  FAILED ..." in reconciler.txt)
	say "  $f.txt: $(grep -cE '^  (met|ok) ' "$OUT/$f.txt") targets met," \
		"$(grep -cE '^  (MISSED|FAILED) ' "$OUT/$f.txt") missed"
	grep -E '^  (MISSED|FAILED) ' "$OUT/$f.txt" | sed "s/^ */  $f: /" >&2
done
exit $rc
