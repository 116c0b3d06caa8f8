#!/usr/bin/env bash
# The reconciler's benchmark (issue 7; `make bench` runs it after scripts/bench.sh):
# BENCH_INTENTS (default 10,000) pending provisioning intents on the `local` backend with the
# install step empty (sessions of a cloud environment without packages), drained by
# BENCH_RECONCILERS (default 4) `terrarium-reconciler --once --limit 100000` started together.
#
# Starts its own stack in a temporary directory: MariaDB, the API and nginx on a free port. One
# agent, one environment and one session are made through the API; the other sessions and
# their intents are SQL copies of that session's rows with new ids (made like the API's), so
# every intent is exactly what the API writes. Reports intents per second (all intents over the
# wall time from the first reconciler's start to the last one's exit) and checks that none was
# claimed twice:
#   - every session has exactly one "session ... ready" log line across all reconcilers;
#   - the "sandbox" step counts in the reconcilers' --metrics-file files sum to the number of
#     intents, and so do their attempts (claims);
#   - the database holds one session_sandboxes row per session, every intent is done after
#     exactly one attempt.
# Output goes to stdout and BENCH_OUT/reconciler.txt (BENCH_OUT default var/bench/<UTC time>),
# the reconcilers' logs and metrics to BENCH_OUT/reconciler/. Exits 1 when a check fails or a
# reconciler fails; every run is bounded (BENCH_RECON_TIMEOUT seconds, default 300).
# Environment: BENCH_INTENTS, BENCH_RECONCILERS, BENCH_OUT, BENCH_RECON_TIMEOUT, BUILD_DIR,
# KEEP_RUN=1.
set -uo pipefail

# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-stack.sh" && bench_init bench-reconciler || exit 1

bench_env NINTENTS=BENCH_INTENTS:10000 NRECON=BENCH_RECONCILERS:4 TIMEOUT=BENCH_RECON_TIMEOUT:300
BENCH_TARGET_RATE=500 # intents per second


for bin in terrarium-api terrarium-reconciler; do
	[ -x "$BUILD/$bin" ] || die "$BUILD/$bin is not built (run make)"
done
command -v jq >/dev/null || die "jq not found"

RECON_PIDS=()
scratch_before_stop() {
	local p
	for p in "${RECON_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
}
stack_scratch bench-recon || die "cannot make a runtime directory"
mkdir -p "$OUT/reconciler" || die "cannot create $OUT"

db_init "$RUN" || die "db_init failed"
db_start "$RUN" || die "db_start failed"
api_config "$RUN" api local || die "api_config failed"
api_cli "$RUN" api migrate "$ROOT/sql" >/dev/null || die "migrate failed"
# shellcheck disable=SC2034 # read by api_ok
KEY=$(api_cli "$RUN" api key create bench-recon bench) || die "key create failed"
api_start "$RUN" api || die "api_start failed"
started=0
for _ in 1 2 3; do
	PORT=$(stack_free_port) || die "no free port"
	if nginx_start "$RUN" "$PORT:api"; then
		started=1
		break
	fi
	nginx_stop "$RUN"
done
[ $started = 1 ] || die "nginx did not start"
URL="http://127.0.0.1:$PORT"

AGENT=$(api_ok "$URL" POST /v1/agents '{"name":"bench-recon","model":"claude-sonnet-4-5"}' | jq -r .id) ||
	die "agent create failed"
ENV=$(api_ok "$URL" POST /v1/environments \
	'{"name":"bench-recon","config":{"type":"cloud","networking":{"type":"unrestricted"}}}' |
	jq -r .id) || die "environment create failed"
TMPL=$(api_ok "$URL" POST /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$ENV\"}" | jq -r .id) ||
	die "session create failed"

say "seeding $NINTENTS pending intents (session $TMPL and $((NINTENTS - 1)) SQL copies)"
{
	echo "CREATE TEMPORARY TABLE bench_seed (n INT NOT NULL PRIMARY KEY,"
	echo " id VARCHAR(40) NOT NULL) ENGINE=MEMORY;"
	head -c $((NINTENTS * 120 + 4096)) /dev/urandom | LC_ALL=C tr -dc 'A-Za-z0-9' |
		fold -w 24 | head -n $((NINTENTS - 1)) |
		awk '{ printf "%s(%d,\x27sesn_%s\x27)", (NR % 1000 == 1 ? "INSERT INTO bench_seed VALUES " : ","), NR, $0;
		       if (NR % 1000 == 0) print ";" } END { if (NR % 1000) print ";" }'
	cat <<SQL
INSERT INTO sessions (id, workspace_id, environment_id, environment_revision, environment_config,
  agent_id, agent_version, agent_snapshot, mcp_servers, status, title, metadata, created_at,
  updated_at, archived_at, deleted_at)
SELECT s.id, t.workspace_id, t.environment_id, t.environment_revision, t.environment_config,
  t.agent_id, t.agent_version, t.agent_snapshot, t.mcp_servers, t.status, t.title, t.metadata,
  t.created_at - INTERVAL s.n * 1000 MICROSECOND, t.updated_at - INTERVAL s.n * 1000 MICROSECOND,
  t.archived_at, t.deleted_at
FROM bench_seed s JOIN sessions t ON t.id = '$TMPL';
INSERT INTO provisioning_intents (session_id, workspace_id, kind, state, spec, steps_done, attempts,
  next_attempt_at, lease_owner, lease_expires_at, last_error, sandbox_id, created_at, updated_at)
SELECT s.id, i.workspace_id, i.kind, i.state, i.spec, i.steps_done, i.attempts,
  i.next_attempt_at - INTERVAL s.n * 1000 MICROSECOND, i.lease_owner, i.lease_expires_at,
  i.last_error, i.sandbox_id, i.created_at - INTERVAL s.n * 1000 MICROSECOND,
  i.updated_at - INTERVAL s.n * 1000 MICROSECOND
FROM bench_seed s JOIN provisioning_intents i ON i.session_id = '$TMPL';
SQL
} | db_sql "$RUN" "$STACK_DB_NAME" || die "seeding failed"

sql1() {
	db_query "$RUN" "$1"
}
due=$(sql1 "SELECT COUNT(*) FROM provisioning_intents WHERE state = 'pending'")
[ "$due" = "$NINTENTS" ] || die "$due intents pending, expected $NINTENTS"
api_ok "$URL" GET "/v1/sessions/$TMPL" >/dev/null || die "the template session does not answer"

say "draining with $NRECON reconcilers (--once --limit 100000)"
CFG="$RUN/api.ini"
t0=$(date +%s.%N)
for ((i = 1; i <= NRECON; i++)); do
	timeout "$TIMEOUT" "$BUILD/terrarium-reconciler" -c "$CFG" --once --limit 100000 \
		--metrics-file "$OUT/reconciler/recon-$i.prom" >"$OUT/reconciler/recon-$i.log" 2>&1 &
	RECON_PIDS+=($!)
done
rc=0
for p in "${RECON_PIDS[@]}"; do
	wait "$p" || rc=1
done
RECON_PIDS=()
t1=$(date +%s.%N)
secs=$(echo "$t1 - $t0" | bc -l)

# ---- checks ----------------------------------------------------------------------------------
check() { # OK TEXT
	if [ "$1" = 1 ]; then
		printf '  ok     %s\n' "$2"
	else
		printf '  FAILED %s\n' "$2"
	fi
}
metric_sum() { # NAME (with labels as written)
	cat "$OUT"/reconciler/recon-*.prom 2>/dev/null |
		awk -v m="$1" 'index($0, m " ") == 1 { s += $NF } END { print s + 0 }'
}
ready=$(cat "$OUT"/reconciler/recon-*.log | grep -o "session sesn_[0-9A-Za-z]* ready" |
	sort | uniq -c)
nready=$(grep -c . <<<"$ready")
twice=$(awk '$1 != 1' <<<"$ready" | grep -c .)
sandbox=$(metric_sum 'terrarium_reconciler_step_seconds_count{step="sandbox"}')
claims=$(metric_sum terrarium_reconciler_attempts_total)
done_n=$(metric_sum terrarium_reconciler_done_total)
lost=$(metric_sum terrarium_reconciler_leases_lost_total)
failures=$(metric_sum terrarium_reconciler_failures_total)
bound=$(sql1 "SELECT COUNT(*), COUNT(DISTINCT session_id) FROM session_sandboxes")
idone=$(sql1 "SELECT SUM(state = 'done'), MAX(attempts) FROM provisioning_intents")
rate=$(awk -v n="$NINTENTS" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
per=$(for f in "$OUT"/reconciler/recon-*.prom; do
	awk '/^terrarium_reconciler_done_total / { printf "%s ", $2 }' "$f"
done)

{
	printf 'reconciler bench: %s, %d cores, %d intents (local backend, no packages), %d reconcilers\n' \
		"$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "$NINTENTS" "$NRECON"
	printf '  %d intents in %.2f s: %s intents/s (per reconciler: %s)\n' "$NINTENTS" "$secs" \
		"$rate" "$per"
	check "$([ $rc = 0 ] && echo 1 || echo 0)" "every reconciler exited 0"
	check "$([ "$rate" -ge $BENCH_TARGET_RATE ] && echo 1 || echo 0)" \
		"rate: $rate intents/s (>= $BENCH_TARGET_RATE)"
	check "$([ "$nready" = "$NINTENTS" ] && [ "$twice" = 0 ] && echo 1 || echo 0)" \
		"ready log lines: $nready sessions, $twice of them more than once"
	check "$([ "$sandbox" = "$NINTENTS" ] && [ "$claims" = "$NINTENTS" ] && echo 1 || echo 0)" \
		"metrics: sandbox step ran $sandbox times, $claims claims, $done_n done, $lost leases lost, $failures failures"
	check "$([ "$bound" = "$NINTENTS	$NINTENTS" ] && [ "$idone" = "$NINTENTS	1" ] && echo 1 || echo 0)" \
		"database: session_sandboxes (rows, sessions) = $(tr '\t' ' ' <<<"$bound"); intents done, max attempts = $(tr '\t' ' ' <<<"$idone")"
} | tee "$OUT/reconciler.txt"
! grep -q FAILED "$OUT/reconciler.txt"
