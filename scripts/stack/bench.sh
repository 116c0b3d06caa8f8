# shellcheck shell=bash
# scripts/stack/bench.sh (sourced by scripts/lib-stack.sh): what the benchmark scripts share.
#
# Environment: BENCH_OUT (bench_init: where the results go).

# bench_init NAME [PREFIX]: what a benchmark script starts with: script_init NAME, BUILD (the
# binaries: stack_build_dir) and OUT, where its results go: BENCH_OUT, default
# ROOT/var/bench/PREFIX<UTC time>.
bench_init() {
	script_init "$1"
	# shellcheck disable=SC2034 # read by callers
	BUILD=$(stack_build_dir)
	# shellcheck disable=SC2034
	OUT=${BENCH_OUT:-$ROOT/var/bench/${2:-}$(date -u +%Y%m%dT%H%M%SZ)}
}

# bench_env NAME=VARIABLE:DEFAULT...: the settings a benchmark script reads from its environment
# (its header lists them): each NAME set to $VARIABLE, or to DEFAULT when that is unset or empty.
bench_env() {
	local _bench_a _bench_name _bench_var
	for _bench_a; do
		case $_bench_a in
		?*=?*:*) ;;
		*) die "bench_env: '$_bench_a' is not NAME=VARIABLE:DEFAULT" ;;
		esac
		_bench_name=${_bench_a%%=*} _bench_var=${_bench_a#*=}
		_bench_var=${_bench_var%%:*}
		printf -v "$_bench_name" '%s' "${!_bench_var:-${_bench_a#*:}}"
	done
}

# bench_stack NAME: the stack a benchmark of one API measures, in a scratch directory
# (stack_scratch NAME: RUN): MariaDB, the API supervisor `api` (backend local, BENCH_WORKERS
# workers, 1,000,000 requests a worker; api_config reads what else the caller's environment
# sets), migrated, a key KEY, and nginx without rate limits on a free loopback port: URL. Dies
# on a failure.
# shellcheck disable=SC2034 # KEY, URL: read by the caller
bench_stack() {
	local port
	stack_scratch "$1" || die "cannot make a runtime directory"
	db_init "$RUN" || die "db_init failed"
	db_start "$RUN" || die "db_start failed"
	WORKERS=${BENCH_WORKERS:-0} MAX_REQUESTS=1000000 api_config "$RUN" api local ||
		die "api_config failed"
	api_cli "$RUN" api migrate "$ROOT/sql" >/dev/null || die "migrate failed"
	KEY=$(api_cli "$RUN" api key create "$1" bench) || die "key create failed"
	api_start "$RUN" api || die "api_start failed"
	export NGINX_RATE=1000000 NGINX_BURST=1000000
	port=$(stack_free_port) || die "no free port"
	nginx_start "$RUN" "$port:api" || die "nginx did not start"
	URL="http://127.0.0.1:$port"
}

# median: the median of the numbers on stdin, one a line (the mean of the two middle ones for an
# even count); 0 when there are none.
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print 0
		else if (NR % 2) print v[(NR + 1) / 2]
		else print (v[NR / 2] + v[NR / 2 + 1]) / 2
	}'
}

# bench_median N...: the median of its arguments (median, above).
bench_median() { printf '%s\n' "$@" | median; }

# bench_get_wrk URL KEY IDS CONC SECONDS OUT: wrk (bench/wrk.lua) GETs /v1/environments/{id} of
# ids picked at random from the file IDS, with CONC connections, for SECONDS; its output in OUT.
bench_get_wrk() {
	BENCH_MODE=get BENCH_KEY=$2 BENCH_IDS=$3 timeout $(($5 + 15)) \
		wrk -t2 -c"$4" -d"$5s" --timeout 5s --latency -s "$STACK_ROOT/bench/wrk.lua" "$1" >"$6" 2>&1
}

# bench_rps OUT: the req/s of a wrk output; bench_errs OUT: its non-2xx answers and socket errors.
bench_rps() { awk '/^Requests\/sec:/ { print $2 }' "$1"; }
bench_errs() {
	awk '/Non-2xx or 3xx responses:/ { e += $NF }
		/Socket errors:/ { gsub(",", ""); e += $4 + $6 + $8 + $10 } END { print e + 0 }' "$1"
}

# bench_beside RUNS DIR TAG ALONE WITH WHAT: a load measured alone and beside something else, RUNS
# times interleaved, the order alternating so that a machine that slows down or speeds up favours
# neither: `ALONE DIR/TAG-alone-runR.txt` and `WITH DIR/TAG-with-runR.txt R` each run the load
# (and WITH what goes beside it) into that wrk output. Sets BENCH_ALONE and BENCH_WITH (req/s)
# and BENCH_RATIOS (with over alone, per run), and BENCH_BAD=1 when a run failed or had errors.
# shellcheck disable=SC2034 # BENCH_*: read by the caller
bench_beside() {
	local runs=$1 dir=$2 tag=$3 alone=$4 with=$5 what=$6 r a w f
	BENCH_ALONE=() BENCH_WITH=() BENCH_RATIOS=() BENCH_BAD=0
	for ((r = 1; r <= runs; r++)); do
		a="$dir/$tag-alone-run$r.txt" w="$dir/$tag-with-run$r.txt"
		if [ $((r % 2)) = 1 ]; then
			"$alone" "$a" || BENCH_BAD=1
			"$with" "$w" "$r" || BENCH_BAD=1
		else
			"$with" "$w" "$r" || BENCH_BAD=1
			"$alone" "$a" || BENCH_BAD=1
		fi
		BENCH_ALONE+=("$(bench_rps "$a")") BENCH_WITH+=("$(bench_rps "$w")")
		BENCH_RATIOS+=("$(awk -v a="${BENCH_WITH[-1]:-0}" -v b="${BENCH_ALONE[-1]:-0}" \
			'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')")
		for f in "$a" "$w"; do
			[ "$(bench_errs "$f")" = 0 ] || { say "errors in $f"; BENCH_BAD=1; }
		done
		say "run $r: alone ${BENCH_ALONE[-1]} req/s, with $what ${BENCH_WITH[-1]} req/s (${BENCH_RATIOS[-1]})"
	done
}
