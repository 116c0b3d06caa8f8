#!/usr/bin/env bash
# The work queue example of docs/work-queue.md (and the README), run as written: its shell part
# (a self_hosted environment, an environment key from the CLI, an agent, a session) against the
# running stack, then its Node script (the SDK's WorkPoller with the environment key) taken
# verbatim from the first ```js block of docs/work-queue.md. Checks what the script prints:
# the item of that session, a lease, the item stopped, and stats agreeing at each step.
# Needs (from tests/e2e/run.sh): TERRARIUM_URL, TERRARIUM_KEY, TERRARIUM_CONFIG, TERRARIUM_RUN.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${TERRARIUM_URL:?}" "${TERRARIUM_KEY:?}" "${TERRARIUM_CONFIG:?}" "${TERRARIUM_RUN:?}"
BUILD=${BUILD_DIR:-build}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
passed=0 failed=0
check() {
	local name=$1
	shift
	if "$@"; then passed=$((passed + 1)); echo "ok - $name"; else failed=$((failed + 1)); echo "not ok - $name"; fi
}

URL=$TERRARIUM_URL KEY=$TERRARIUM_KEY
H=(-H "x-api-key: $KEY" -H "anthropic-beta: managed-agents-2026-04-01" -H "content-type: application/json")
# shellcheck disable=SC2086 # the lines of docs/work-queue.md, as a user types them
{
	ENV=$(curl -s $URL/v1/environments "${H[@]}" -d '{"name":"my-fleet","config":{"type":"self_hosted"}}' | jq -r .id)
	ENV_KEY=$("$BUILD/terrarium-api" -c "$TERRARIUM_CONFIG" key create-environment $ENV)
	AGENT=$(curl -s $URL/v1/agents "${H[@]}" -d '{"name":"coder","model":"claude-sonnet-4-5"}' | jq -r .id)
	SESSION=$(curl -s $URL/v1/sessions "${H[@]}" -d "{\"agent\":\"$AGENT\",\"environment_id\":\"$ENV\"}" | jq -r .id)
}
check "setup: environment, environment key, session" bash -c '[[ $1 == env_* && $2 == trmenv_* && $3 == sesn_* ]]' _ "$ENV" "$ENV_KEY" "$SESSION"

dir=$TERRARIUM_RUN/work-example
mkdir -p "$dir" && ln -sfn "$ROOT/tests/sdk/node_modules" "$dir/node_modules"
awk '/^```js$/ && !done { on = 1; next } /^```$/ && on { on = 0; done = 1 } on' \
	"$ROOT/docs/work-queue.md" >"$dir/worker.mjs"
check "the example script was extracted" grep -q "work.poller" "$dir/worker.mjs"
# the README shows the same script (after its one comment line)
awk '/^## Self-hosted environments/ { sec = 1 } sec && /^```js$/ && !done { on = 1; getline; next }
	/^```$/ && on { on = 0; done = 1 } on' "$ROOT/README.md" >"$dir/readme.mjs"
check "the README's example is the one tested" cmp -s "$dir/worker.mjs" "$dir/readme.mjs"
out=$(cd "$dir" && URL=$URL KEY=$KEY ENV=$ENV ENV_KEY=$ENV_KEY timeout 60 node worker.mjs 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/    /'
check "the script exits 0" test $rc = 0
line() { printf '%s\n' "$out" | grep -- "^$1"; }
check "before: depth 1, pending 0" bash -c 'grep -q "\"depth\":1,\"pending\":0" <<<"$1"' _ "$(line before:)"
check "it receives the session's item" bash -c 'grep -q "for session $2" <<<"$1"' _ "$out" "$SESSION"
check "acknowledged: depth 0, pending 0" bash -c 'grep -q "\"depth\":0,\"pending\":0" <<<"$1"' _ "$(line acknowledged:)"
check "it holds a lease" bash -c 'grep -Eq "^lease active [0-9T:.-]+Z 60$" <<<"$1"' _ "$out"
check "the item is stopped" bash -c 'grep -qx stopped <<<"$1"' _ "$out"
check "after: depth 0, pending 0, no oldest" bash -c 'grep -q "\"depth\":0,\"pending\":0,\"oldest_queued_at\":null" <<<"$1"' _ "$(line after:)"
st=$(curl -s "$URL/v1/environments/$ENV/work/stats" "${H[@]}")
check "GET .../work/stats agrees afterwards" bash -c 'jq -e ".depth == 0 and .pending == 0 and .workers_polling == 1" <<<"$1" >/dev/null' _ "$st"
rm -rf "$dir"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
