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

# median: the median of the numbers on stdin, one a line (the mean of the two middle ones for an
# even count); 0 when there are none.
median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) print 0
		else if (NR % 2) print v[(NR + 1) / 2]
		else print (v[NR / 2] + v[NR / 2 + 1]) / 2
	}'
}
