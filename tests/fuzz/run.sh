#!/usr/bin/env bash
# Run libFuzzer targets for a bounded time each (`make fuzz`, `make fuzz-short`).
#
#   tests/fuzz/run.sh SECONDS BIN...
#
# For each BIN (build/fuzz/fuzz_<target>): replays the committed seed corpus
# tests/fuzz/corpus/<target>/ (crash regressions included) and the inputs found by earlier runs
# (build/fuzz/work/<target>/corpus/, where new ones are written: the committed corpus is never
# modified), then fuzzes for SECONDS with the dictionary tests/fuzz/<target>.dict when there
# is one. Prints executions, coverage and corpus size per target. A crash, a sanitizer report,
# a timeout or a leak fails the run: the input is kept in build/fuzz/work/<target>/ and the
# output's tail is printed with the command that reproduces it.
# Environment: FUZZ_MAX_LEN (default 16384), FUZZ_CORPUS_MAX (found inputs kept before they are
# merged down to those adding coverage; default 5000), FUZZ_ARGS (more libFuzzer flags).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1

[ $# -ge 2 ] || {
	echo "usage: $0 SECONDS BIN..." >&2
	exit 2
}
seconds=$1
shift
case "$seconds" in '' | *[!0-9]*) echo "fuzz: SECONDS must be a number" >&2 && exit 2 ;; esac

failed=()
total=0
printf '%-16s %12s %8s %6s %10s %7s\n' target executions exec/s cov corpus seeds
for bin in "$@"; do
	name=$(basename "$bin")
	target=${name#fuzz_}
	seeds="tests/fuzz/corpus/$target"
	work="$(dirname "$bin")/work/$target"
	log="$work/fuzz.log"
	[ -x "$bin" ] || {
		echo "fuzz: $bin is not built (make fuzz builds it)" >&2
		failed+=("$target")
		continue
	}
	[ -d "$seeds" ] || {
		echo "fuzz: no seed corpus $seeds" >&2
		failed+=("$target")
		continue
	}
	mkdir -p "$work/corpus"
	# keep the replay short: past FUZZ_CORPUS_MAX inputs, keep only those that add coverage
	if [ "$(find "$work/corpus" -type f | wc -l)" -gt "${FUZZ_CORPUS_MAX:-5000}" ]; then
		rm -rf "$work/merged" && mkdir -p "$work/merged" &&
			"$bin" -merge=1 -max_len="${FUZZ_MAX_LEN:-16384}" "$work/merged" "$work/corpus" \
				>"$work/merge.log" 2>&1 &&
			rm -rf "$work/corpus" && mv "$work/merged" "$work/corpus"
	fi
	rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$work"/slow-unit-*
	args=(-max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
		-max_len="${FUZZ_MAX_LEN:-16384}" -artifact_prefix="$work/")
	[ -f "tests/fuzz/$target.dict" ] && args+=(-dict="tests/fuzz/$target.dict")
	# shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
	"$bin" "${args[@]}" ${FUZZ_ARGS:-} "$work/corpus" "$seeds" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
	ncorpus=$(find "$work/corpus" -type f | wc -l)
	nseeds=$(find "$seeds" -type f | wc -l)
	printf '%-16s %12s %8s %6s %10s %7s\n' "$target" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
		"$ncorpus" "$nseeds"
	total=$((total + ${execs:-0}))
	if [ $rc -ne 0 ]; then
		failed+=("$target")
		echo "---- $target FAILED (exit $rc); last lines of $log:" >&2
		tail -n 60 "$log" >&2
		for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
			[ -f "$a" ] || continue
			echo "  input: $a (reproduce: $bin $a)" >&2
		done
	fi
done
echo "fuzz: $total executions in all, $seconds s per target"
if [ ${#failed[@]} -ne 0 ]; then
	echo "fuzz: FAILED: ${failed[*]}" >&2
	exit 1
fi
