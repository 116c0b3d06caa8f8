#!/usr/bin/env bash
# Runs the official-SDK suite against a running terrarium.
#   TERRARIUM_URL   base URL of the API (e.g. http://127.0.0.1:8080), required
#   TERRARIUM_KEY   an API key, required
#   TERRARIUM_KEY2  optional: a key of another workspace (enables the isolation tests)
#   TERRARIUM_BACKEND, TERRARIUM_URL_docker, TERRARIUM_URL_opensandbox, TERRARIUM_HAS_SESSIONS:
#                   optional, see the top of environments.test.mjs (and of sessions.test.mjs,
#                   whose packages + limited networking scenario needs TERRARIUM_URL_opensandbox)
#   TERRARIUM_RUN   optional: the stack's runtime directory (its RUN/mysql.sock): events.test.mjs
#                   writes the agent's events of its answer tests with SQL there
# Installs the locked dependencies (npm ci) when node_modules is missing or older than the lock.
# Exits non-zero when a test fails.
set -euo pipefail

cd "$(dirname "$0")"

: "${TERRARIUM_URL:?TERRARIUM_URL must be set}"
: "${TERRARIUM_KEY:?TERRARIUM_KEY must be set}"

# shellcheck source=tests/lib-npm.sh
. ../lib-npm.sh
npm_locked .

# The SDK reads ANTHROPIC_* variables (base URL, keys, profiles, custom headers, logging):
# keep them out so only the TERRARIUM_* settings apply.
while IFS= read -r var; do
	unset "$var"
done < <(env | sed -n 's/^\(ANTHROPIC_[A-Za-z0-9_]*\)=.*/\1/p')

exec node --test --test-concurrency=1 "$@" environments.test.mjs agents.test.mjs sessions.test.mjs \
	vaults.test.mjs events.test.mjs
