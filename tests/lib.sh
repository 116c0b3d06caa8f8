# Helpers shared by the shell test scripts that call the API (source it): the check counters
# of tests/lib-check.sh (check, ok, not_ok; a script ends with
# echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]) and
#   api_to URL METHOD PATH [BODY]   an API call with $KEY and the version and beta headers
# shellcheck shell=bash
# shellcheck source=tests/lib-check.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-check.sh"

api_to() { # api_to URL METHOD PATH [BODY]
	local url=$1 method=$2 path=$3
	shift 3
	curl -sS -X "$method" "$url$path" -H "x-api-key: $KEY" \
		-H "anthropic-version: 2023-06-01" -H "anthropic-beta: managed-agents-2026-04-01" \
		${1:+-H "content-type: application/json" --data "$1"}
}
