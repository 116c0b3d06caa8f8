#!/usr/bin/env bash
# Idempotency-Key beyond what the HTTP cases can show: concurrent first uses of one key create
# one environment; a key past its 24 hours is free again (the row's expiry is moved back in the
# database) and the reconciler's run removes expired keys.
# Needs (from tests/e2e/run.sh): TERRARIUM_URL, KEY, TERRARIUM_RUN, TERRARIUM_CONFIG.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
e2e_part
PARALLEL=${PARALLEL:-10}
post() { # KEY BODY -> "STATUS ID"
	local out="$RUN/idem.$BASHPID" status
	status=$(curl -sS -o "$out" -w '%{http_code}' "$URL/v1/environments" \
		-H "x-api-key: $KEY" -H "anthropic-beta: managed-agents-2026-04-01" \
		-H "content-type: application/json" -H "Idempotency-Key: $1" --data "$2")
	# one write per line: the parallel callers share the output file
	printf '%s %s\n' "$status" "$(jq -r '.id // .error.type' "$out")"
	rm -f "$out"
}

tag="idem-par-$$-$RANDOM"
for _ in $(seq 1 "$PARALLEL"); do post "$tag" "{\"name\":\"$tag\"}" & done >"$RUN/idem-par.out"
wait
rows=$(e2e_sql "SELECT COUNT(*) FROM environments WHERE name = '$tag'")
check "$PARALLEL concurrent first uses of one key: one environment ($rows)" test "$rows" = 1
ids=$(awk '$1 == 200 {print $2}' "$RUN/idem-par.out" | sort -u | wc -l)
others=$(awk '$1 != 200 && $1 != 409' "$RUN/idem-par.out" | wc -l)
check "every 200 names that one environment (the others waited and replayed it), no error" \
	test "$ids" = 1 -a "$others" = 0

# A worker killed in the middle of a keyed create, made certain: the environments table is
# locked so the create waits, every worker of the API is killed (-9), the lock goes, and the key
# is retried as the SDK retries (409 and 5xx) for up to 15 s. The claim and the create share a
# transaction, so the kill left no object and a free key: the retry creates exactly one. (When
# the claim was committed on its own, the key stayed "in progress" for 120 s.)
# IDEM_KILL=0 (the Galera cluster's suite): API hosts run in their own namespaces and a table
# lock on one node does not hold writes on the others; the cluster's own fault tests kill hosts.
if [ "${IDEM_KILL:-1}" = 1 ]; then
	NAME=${TERRARIUM_BACKEND:-local}
	tag="idem-kill-$$-$RANDOM"
	e2e_sql "LOCK TABLES environments READ; SELECT SLEEP(4); UNLOCK TABLES;" >/dev/null &
	locker=$!
	sleep 0.5
	post "$tag" "{\"name\":\"$tag\"}" >"$RUN/idem-kill.first" &
	first=$!
	sleep 1.5
	killed=0
	for w in $(pgrep -P "$(cat "$RUN/$NAME.pid")"); do kill -9 "$w" && killed=$((killed + 1)); done
	wait "$first"
	wait "$locker"
	end=$((SECONDS + 15))
	while :; do
		again=$(post "$tag" "{\"name\":\"$tag\"}")
		case "${again%% *}" in 409 | 5*) [ $SECONDS -lt $end ] && sleep 0.5 && continue ;; esac
		break
	done
	rows=$(e2e_sql "SELECT COUNT(*) FROM environments WHERE name = '$tag'")
	first_status=$(cut -d' ' -f1 "$RUN/idem-kill.first")
	# the kill must have happened while the create waited: a first answer of 200 means it was not
	# interrupted, and the rest proves nothing
	check "killed mid-create: workers were killed ($killed) and the first answer was not a 200 ($first_status)" \
		test "$killed" -gt 0 -a -n "$first_status" -a "$first_status" != 200
	check "killed mid-create: the retry gets 200 ($again)" test "${again%% *}" = 200
	check "killed mid-create: one environment for the key ($rows)" test "$rows" = 1
	rm -f "$RUN/idem-kill.first"
else
	echo "# killed mid-create: not run here (IDEM_KILL=0)"
fi

tag="idem-exp-$$-$RANDOM"
first=$(post "$tag" "{\"name\":\"$tag\"}")
e2e_sql "UPDATE idempotency_keys SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE idem_key = '$tag'"
second=$(post "$tag" "{\"name\":\"$tag\"}")
check "an expired key is free again ($first, then $second)" \
	test "${first%% *}" = 200 -a "${second%% *}" = 200 -a "${first#* }" != "${second#* }"
e2e_sql "UPDATE idempotency_keys SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE idem_key = '$tag'"
"$ROOT/$BUILD/terrarium-reconciler" -c "$TERRARIUM_CONFIG" --dry-run >/dev/null 2>&1
left=$(e2e_sql "SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = '$tag'")
check "a dry run leaves expired keys alone" test "$left" = 1
"$ROOT/$BUILD/terrarium-reconciler" -c "$TERRARIUM_CONFIG" --once --limit 1 >/dev/null 2>&1
left=$(e2e_sql "SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = '$tag'")
check "the reconciler's run removes expired keys" test "$left" = 0
check_summary
