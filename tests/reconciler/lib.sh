# Shared by tests/reconciler/*.sh: pass/fail counters and the API call.
# shellcheck shell=bash
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

api() { # api URL METHOD PATH [BODY]
	local url=$1 method=$2 path=$3
	shift 3
	curl -sS -X "$method" "$url$path" -H "x-api-key: $KEY" \
		-H "anthropic-version: 2023-06-01" -H "anthropic-beta: managed-agents-2026-04-01" \
		${1:+-H "content-type: application/json" --data "$1"}
}
