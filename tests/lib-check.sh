# shellcheck shell=bash
# lib-check.sh: the pass/fail counting of the shell test scripts (sourced).
#   check NAME CMD...   runs CMD; prints "ok - NAME" or "not ok - NAME" and counts it in
#                       $passed / $failed, which the script reports as "N passed, N failed"
passed=0
failed=0
check() {
	local name=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
		echo "ok - $name"
	else
		failed=$((failed + 1))
		echo "not ok - $name"
	fi
}
