# shellcheck shell=bash
# lib-check.sh: the pass/fail counting of the shell test scripts (sourced).
#   check NAME CMD...   runs CMD; prints "ok - NAME" or "not ok - NAME" and counts it in
#                       $passed / $failed, which the script reports as "N passed, N failed";
#                       its status is CMD's (so `check ... || show_more` works)
#   ok NAME / not_ok NAME   count a result decided by hand
#   CHECK_QUIET=1       print only the failures (scripts with hundreds of probes)
passed=0
failed=0
ok() {
	passed=$((passed + 1))
	[ "${CHECK_QUIET:-0}" = 1 ] || echo "ok - $*"
}
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $*"
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
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
