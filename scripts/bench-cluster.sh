#!/usr/bin/env bash
# The cluster against one machine's stack, measured in the same run (issue 16; docs/cluster.md).
#
# Starts, in temporary directories: the single-node stack (MariaDB on its socket, one API with
# 2 x BENCH_WORKERS workers, nginx on a free loopback port) and the cluster of scripts/cluster.sh
# (three Galera nodes, two API hosts of BENCH_WORKERS workers each, nginx on a free loopback port;
# namespaces trmb-*, 10.213.9.0/24), both with the API's same total worker count. Through each
# nginx, wrk (bench/wrk.lua) runs GET /v1/environments/{id} (over BENCH_ENVS environments made
# through the API) and POST /v1/environments at BENCH_CONC connections for BENCH_DURATION seconds,
# BENCH_RUNS times, alternating single node and cluster, and reports the medians and the
# cluster / single-node ratio. Then, on the cluster, BENCH_SESSIONS sessions are made with the
# reconcilers stopped, the three reconcilers (one per host, each on its own node) started, and
# the intents provisioned per second (from the first to the last intent done) reported, with the
# double-claim checks: every intent done after one attempt, bound once across the three logs.
# Every load run is bounded (wrk -d plus a timeout); everything is stopped by PID at the end.
#
# Environment: BENCH_DURATION (default 5), BENCH_RUNS (3), BENCH_CONC (16), BENCH_ENVS (200),
# BENCH_WORKERS (API workers per cluster host, default 2), BENCH_SESSIONS (300), BUILD_DIR.
# Not part of any test target; needs root (namespaces, Galera as mysql).
set -uo pipefail

# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-stack.sh" && script_init bench-cluster || exit 1

bench_env DURATION=BENCH_DURATION:5 RUNS=BENCH_RUNS:3 CONC=BENCH_CONC:16 NENVS=BENCH_ENVS:200 \
	HOST_WORKERS=BENCH_WORKERS:2 NSESSIONS=BENCH_SESSIONS:300
BENCH_RECON_LIMIT_S=300 # the reconcilers' drain, at most
CLUSTER="$ROOT/scripts/cluster.sh"

[ "$(id -u)" -eq 0 ] || die "run as root (the cluster needs namespaces and the mysql user)"
command -v wrk >/dev/null || die "wrk not found (scripts/install-deps.sh installs it)"
make -C "$ROOT" >/dev/null || die "build failed"

SINGLE=$(mktemp -d /tmp/terrarium-bench1.XXXXXX) || die "mktemp failed"
CRUN=$(mktemp -d /tmp/terrarium-benchc.XXXXXX) || die "mktemp failed"
chmod 0711 "$CRUN"
export CLUSTER_RUN=$CRUN CLUSTER_PREFIX=trmb CLUSTER_NET=10.213.9 SKIP_INSTALL_DEPS=1
export NGINX_RATE=1000000 NGINX_BURST=1000000 CLUSTER_WORKERS=$HOST_WORKERS
cleanup() {
	"$CLUSTER" down >/dev/null 2>&1
	stack_stop_all "$SINGLE" >/dev/null 2>&1
	rm -rf "$SINGLE" "$CRUN"
}
stack_traps cleanup

say "single-node stack in $SINGLE"
db_init "$SINGLE" && db_start "$SINGLE" || die "single-node MariaDB failed"
WORKERS=$((2 * HOST_WORKERS)) api_config "$SINGLE" api local || die "api_config failed"
api_cli "$SINGLE" api migrate "$ROOT/sql" >/dev/null 2>&1 || die "migrate failed"
KEY1=$(api_cli "$SINGLE" api key create bench) || die "key create failed"
api_start "$SINGLE" api || die "api_start failed"
PORT1=$(stack_free_port) || die "no free port"
nginx_start "$SINGLE" "$PORT1:api" || die "nginx failed"

say "cluster in $CRUN"
CLUSTER_PORT=$(stack_free_port "$PORT1") || die "no free port"
export CLUSTER_PORT
"$CLUSTER" up >"$CRUN/up.log" 2>&1 || {
	tail -n 30 "$CRUN/up.log"
	die "cluster up failed"
}
KEYC=$(cat "$CRUN/api-key")

H=(-H "anthropic-version: 2023-06-01" -H "anthropic-beta: managed-agents-2026-04-01"
	-H "content-type: application/json")
seed() { # URL KEY IDSFILE
	seq "$NENVS" | xargs -P 4 -I{} curl -sS "$1/v1/environments" -H "x-api-key: $2" "${H[@]}" \
		-d '{"name":"bench-{}"}' | jq -r .id >"$3"
	[ "$(grep -c '^env_' "$3")" = "$NENVS" ]
}
seed "http://127.0.0.1:$PORT1" "$KEY1" "$SINGLE/ids" || die "seeding the single node failed"
seed "http://127.0.0.1:$CLUSTER_PORT" "$KEYC" "$CRUN/ids" || die "seeding the cluster failed"

# wrk MODE URL KEY IDS: requests per second, and non-2xx answers, as "RPS ERRORS"
run_wrk() {
	local out
	out=$(BENCH_MODE=$1 BENCH_KEY=$3 BENCH_IDS=$4 timeout $((DURATION + 30)) \
		wrk -t 2 -c "$CONC" -d "${DURATION}s" -s "$ROOT/bench/wrk.lua" "$2" 2>&1)
	printf '%s %s\n' "$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")" \
		"$(sed -n 's/.*Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' <<<"$out" | grep . || echo 0)"
}

declare -A R
errors=0
for mode in get create; do
	for run in $(seq "$RUNS"); do
		for side in single cluster; do
			if [ $side = single ]; then
				read -r rps err < <(run_wrk $mode "http://127.0.0.1:$PORT1" "$KEY1" "$SINGLE/ids")
			else
				read -r rps err < <(run_wrk $mode "http://127.0.0.1:$CLUSTER_PORT" "$KEYC" "$CRUN/ids")
			fi
			say "$mode run $run $side: ${rps:-?} req/s, $err non-2xx"
			R[$mode.$side]+="${rps:-0} "
			errors=$((errors + ${err:-0}))
		done
	done
done

# ---- reconcilers: three hosts, three nodes ----
for i in 1 2 3; do recon_stop "$CRUN/h$i" >/dev/null 2>&1; done
csql() { db_query "$CRUN/h1" "$1"; }
U="http://127.0.0.1:$CLUSTER_PORT"
agent=$(curl -sS "$U/v1/agents" -H "x-api-key: $KEYC" "${H[@]}" \
	-d '{"name":"bench-agent","model":"claude-sonnet-4-5"}' | jq -r .id)
env=$(curl -sS "$U/v1/environments" -H "x-api-key: $KEYC" "${H[@]}" -d '{"name":"bench-env"}' | jq -r .id)
seq "$NSESSIONS" | xargs -P 8 -I{} curl -sS -o /dev/null "$U/v1/sessions" -H "x-api-key: $KEYC" \
	"${H[@]}" -d "{\"agent\":\"$agent\",\"environment_id\":\"$env\"}"
made=$(csql "SELECT COUNT(*) FROM provisioning_intents WHERE kind = 'provision' AND state = 'pending'")
say "$made intents pending; starting the three reconcilers"
"$CLUSTER" up >>"$CRUN/up.log" 2>&1 || die "restarting the reconcilers failed"
n=$((BENCH_RECON_LIMIT_S * 2))
until [ "$(csql "SELECT COUNT(*) FROM provisioning_intents WHERE kind = 'provision' AND state <> 'done'")" = 0 ]; do
	n=$((n - 1))
	[ $n -gt 0 ] || die "intents not done after ${BENCH_RECON_LIMIT_S}s"
	sleep 0.5
done
span_ms=$(csql "SELECT TIMESTAMPDIFF(MICROSECOND, MIN(updated_at), MAX(updated_at)) DIV 1000 FROM provisioning_intents WHERE kind = 'provision'")
rate=$(awk -v n="$made" -v ms="$span_ms" 'BEGIN { printf "%.0f", (ms > 0 ? (n - 1) * 1000 / ms : 0) }')
twice_attempts=$(csql "SELECT COUNT(*) FROM provisioning_intents WHERE attempts <> 1 AND kind = 'provision'")
twice_bound=$(cat "$CRUN"/h*/reconciler.log | sed -n 's/.*intent \([0-9]*\): session .* ready (sandbox .*/\1/p' | sort | uniq -d | wc -l)
per_host=$(for i in 1 2 3; do grep -c ' ready (sandbox ' "$CRUN/h$i/reconciler.log"; done | tr '\n' ' ')

echo
printf '%-8s %12s %12s %7s\n' route single_rps cluster_rps ratio
for mode in get create; do
	s=$(tr ' ' '\n' <<<"${R[$mode.single]}" | grep . | median)
	c=$(tr ' ' '\n' <<<"${R[$mode.cluster]}" | grep . | median)
	printf '%-8s %12.0f %12.0f %7.2f\n' "$mode" "$s" "$c" "$(awk -v a="$c" -v b="$s" 'BEGIN { print (b > 0 ? a / b : 0) }')"
done
echo "(wrk -c $CONC, ${DURATION}s x $RUNS runs each, medians; single node: $((2 * HOST_WORKERS)) workers; cluster: 2 hosts x $HOST_WORKERS; non-2xx answers: $errors)"
echo "reconcilers: $made intents in ${span_ms} ms by 3 reconcilers on 3 nodes: $rate intents/s (per host: $per_host)"
echo "double claims: intents with attempts <> 1: $twice_attempts; bound twice: $twice_bound"
[ "$twice_attempts" = 0 ] && [ "$twice_bound" = 0 ] && [ "$errors" = 0 ]
