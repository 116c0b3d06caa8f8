#!/usr/bin/env bash
# The self-hosted work queue (docs/work-queue.md) through the official SDK's WorkPoller and
# work.* methods: tests/sdk/work.test.mjs, against the running stack.
# Needs (from tests/e2e/run.sh): TERRARIUM_URL, TERRARIUM_KEY, TERRARIUM_KEY2, TERRARIUM_CONFIG
# (for `terrarium-api key create-environment`), TERRARIUM_RUN (its logs are searched for
# tokens); BUILD_DIR when the binaries are not in build/.
# Ends with "N passed, N failed"; exits non-zero when a test fails.
set -uo pipefail
cd "$(dirname "$0")/../sdk" || exit 1
: "${TERRARIUM_URL:?}" "${TERRARIUM_KEY:?}" "${TERRARIUM_KEY2:?}" "${TERRARIUM_CONFIG:?}" "${TERRARIUM_RUN:?}"
# shellcheck source=tests/lib-npm.sh
. ../lib-npm.sh
npm_locked . || exit 1
while IFS= read -r var; do
	unset "$var"
done < <(env | sed -n 's/^\(ANTHROPIC_[A-Za-z0-9_]*\)=.*/\1/p')

out=$(mktemp)
node --test --test-concurrency=1 --test-reporter=spec work.test.mjs 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
passed=$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$out" | tail -n 1)
failed=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$out" | tail -n 1)
rm -f "$out"
echo "${passed:-0} passed, ${failed:-?} failed"
exit "$rc"
