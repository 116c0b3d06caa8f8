# shellcheck shell=bash
# lib-check.sh: the pass/fail counting of the test scripts. Source it, call ok/not_ok/check,
# end with `check_summary` (prints "N passed, N failed"; returns 1 when any failed).
passed=0
failed=0
ok() {
	passed=$((passed + 1))
	echo "ok - $*"
}
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $*"
}
check() { # check NAME COMMAND...
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}
check_summary() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
