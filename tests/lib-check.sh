# shellcheck shell=bash
# lib-check.sh: the pass/fail counting of the shell test scripts (sourced).
#   check NAME CMD...   runs CMD; prints "ok - NAME" or "not ok - NAME" and counts it in
#                       $passed / $failed, which the script reports as "N passed, N failed";
#                       its status is CMD's (so `check ... || show_more` works)
#   ok NAME / not_ok NAME   count a result decided by hand
#   skip NAME           a part that cannot run here: "skip - NAME", counted in $skipped
#   check_summary       prints "N passed, N failed" (", N skipped" when something was); 0 when
#                       nothing failed
#   check_exit RC       check_summary, then exits: 0 when nothing failed and RC (the status the
#                       script was leaving with, in an EXIT trap) is 0, else 1
#   CHECK_QUIET=1       print only the failures (scripts with hundreds of probes)
#   need_built FILE     the script ends (1) saying how to build FILE when it is not executable
passed=0
failed=0
skipped=0
ok() {
	passed=$((passed + 1))
	[ "${CHECK_QUIET:-0}" = 1 ] || echo "ok - $*"
}
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $*"
}
skip() {
	skipped=$((skipped + 1))
	echo "skip - $*"
}
check() { # check NAME COMMAND...
	local name=$1
	shift
	if "$@"; then
		ok "$name"
	else
		not_ok "$name"
		return 1
	fi
}
check_summary() {
	if [ "$skipped" -gt 0 ]; then
		echo "$passed passed, $failed failed, $skipped skipped"
	else
		echo "$passed passed, $failed failed"
	fi
	[ "$failed" -eq 0 ]
}
check_exit() { # check_exit RC
	check_summary && [ "$1" -eq 0 ] && exit 0
	exit 1
}
need_built() { # need_built FILE
	[ -x "$1" ] && return 0
	echo "$1 missing (make $1)"
	exit 1
}
