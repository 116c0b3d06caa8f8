#!/usr/bin/env bash
# Floods against the defences of docs/limits.md (issue 15), measured: another workspace's GET
# latency while one client floods, against the same GET with nothing else running, in one run.
#
# Starts its own stack (temporary directory, free loopback ports; MariaDB, the API with the
# default worker count, nginx with the default heavy budget and unknown-key guard; the per-key
# rate is lifted so that the victim's own load is not what gets limited), seeds the attacker's
# workspace with FLOOD_ENVS environments (so a page of 1000 is full), then, FLOOD_RUNS times:
#   quiet     the victim alone: wrk c=FLOOD_VICTIM_C GETs of its own environments
#   list1000  the same, while the attacker's key floods GET /v1/environments?limit=1000
#   randkey   the same, while the attacker floods requests each with a new random key
# Each flood runs wrk at c=FLOOD_ATTACK_C from the same address. Reported: the victim's median
# p99 in each condition and its ratio to quiet (the issue's target: within 2x), plus what the
# attacker got (its statuses). Bounded: every wrk has -d and a timeout. Not part of `make test`.
#
# Environment: FLOOD_SECONDS (per measurement, default 5), FLOOD_RUNS (default 3),
# FLOOD_ENVS (default 1000), FLOOD_VICTIM_C (default 2), FLOOD_ATTACK_C (default 16),
# BUILD_DIR, KEEP_RUN=1. Output: stdout and var/flood/<UTC time>/ (raw wrk outputs).
set -uo pipefail

# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-stack.sh" && script_init flood || exit 1

SECS=${FLOOD_SECONDS:-5}
RUNS=${FLOOD_RUNS:-3}
NENVS=${FLOOD_ENVS:-1000}
VICTIM_C=${FLOOD_VICTIM_C:-2}
ATTACK_C=${FLOOD_ATTACK_C:-16}
FLOOD_TARGET_RATIO=2 # the victim's p99 under a flood, at most this times its quiet p99
OUT=${FLOOD_OUT:-$ROOT/var/flood/$(date -u +%Y%m%dT%H%M%SZ)}


command -v wrk >/dev/null || die "wrk not found (scripts/install-deps.sh installs it)"
[ -x "$(stack_build_dir)/terrarium-api" ] || die "terrarium-api is not built (run make)"
stack_scratch flood || die "cannot make a runtime directory"
mkdir -p "$OUT/raw" || die "cannot create $OUT"

# shellcheck disable=SC2153 # RUN: set by stack_scratch
db_init "$RUN" && db_start "$RUN" || die "MariaDB did not start"
api_config "$RUN" api local && api_cli "$RUN" api migrate "$ROOT/sql" >/dev/null || die "setup failed"
KEY_V=$(api_cli "$RUN" api key create flood-victim 2>/dev/null) || die "key create failed"
KEY_A=$(api_cli "$RUN" api key create flood-attacker 2>/dev/null) || die "key create failed"
api_start "$RUN" api || die "api_start failed"
export NGINX_RATE=1000000 NGINX_BURST=1000000
PORT=$(stack_free_port) || die "no free port"
nginx_start "$RUN" "$PORT:api" || die "nginx did not start"
URL="http://127.0.0.1:$PORT"

wrk_run() { # MODE KEY CONC SECONDS OUT
	BENCH_MODE=$1 BENCH_KEY=$2 BENCH_IDS="$RUN/ids.txt" timeout $(($4 + 15)) \
		wrk -t2 -c"$3" -d"$4"s --timeout 10s --latency -s "$ROOT/bench/wrk.lua" "$URL" >"$5" 2>&1
}
# p99 of a wrk --latency output, in ms
p99_ms() {
	awk '$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
		if (u == "us") v /= 1000; else if (u == "s") v *= 1000; printf "%.2f\n", v }' "$1"
}

say "seeding: $NENVS environments for the attacker, 100 for the victim"
: >"$RUN/ids.txt"
for i in $(seq 100); do
	curl -sS "$URL/v1/environments" -H "x-api-key: $KEY_V" -H 'anthropic-beta: managed-agents-2026-04-01' \
		-H 'content-type: application/json' -d "{\"name\":\"victim-$i\"}" | jq -r .id >>"$RUN/ids.txt"
done
WS_A=$(api_cli "$RUN" api workspace id flood-attacker) || die "workspace id failed"
for _ in $(seq 30); do
	have=$(db_query "$RUN" \
		"SELECT COUNT(*) FROM environments WHERE workspace_id = '$WS_A'") || die "count failed"
	[ "$have" -ge "$NENVS" ] && break
	wrk_run create "$KEY_A" 4 2 "$RUN/seed.txt"
done
[ "$have" -ge "$NENVS" ] || die "seeding made only $have environments"
# the heavy budget the seeding loop spent refills before the first measurement
sleep 3

declare -A p99
for run in $(seq "$RUNS"); do
	for cond in quiet list1000 randkey; do
		attacker=
		if [ "$cond" != quiet ]; then
			wrk_run "$cond" "$KEY_A" "$ATTACK_C" $((SECS + 2)) "$OUT/raw/attack-$cond-$run.txt" &
			attacker=$!
			sleep 1
		fi
		wrk_run get "$KEY_V" "$VICTIM_C" "$SECS" "$OUT/raw/victim-$cond-$run.txt"
		[ -n "$attacker" ] && wait "$attacker"
		p99[$cond]+="$(p99_ms "$OUT/raw/victim-$cond-$run.txt") "
		say "run $run $cond: victim p99 $(p99_ms "$OUT/raw/victim-$cond-$run.txt") ms"
		sleep 2
	done
done

quiet=$(tr ' ' '\n' <<<"${p99[quiet]}" | grep . | median)
fails=0
{
	printf '%-10s %12s %10s %s\n' condition "victim p99" ratio "attacker (wrk summary)"
	for cond in quiet list1000 randkey; do
		m=$(tr ' ' '\n' <<<"${p99[$cond]}" | grep . | median)
		ratio=$(awk -v a="$m" -v b="$quiet" 'BEGIN { printf "%.2f", a / b }')
		att=
		[ "$cond" != quiet ] && att=$(grep -h "Requests/sec\|Non-2xx" "$OUT/raw/attack-$cond-1.txt" | tr -s ' \n' ' ')
		printf '%-10s %9s ms %10s %s\n' "$cond" "$m" "$ratio" "$att"
		awk -v r="$ratio" -v t="$FLOOD_TARGET_RATIO" 'BEGIN { exit !(r > t) }' && fails=$((fails + 1))
	done
	echo "(median over $RUNS runs of ${SECS}s; victim c=$VICTIM_C, attacker c=$ATTACK_C; target: ratio <= $FLOOD_TARGET_RATIO)"
} >"$OUT/table.txt" # not through a pipe: fails is counted in this shell
cat "$OUT/table.txt"
[ "$fails" -eq 0 ]
