#!/usr/bin/env bash
# `make up`: install what is missing, build, and run the local stack under RUNDIR (default
# ./var): MariaDB on RUNDIR/mysql.sock, the API (sandbox backend $BACKEND, default local) on
# RUNDIR/api.sock, nginx on 127.0.0.1:$PORT (default 8080). Prints the base URL and an API key
# of workspace $WORKSPACE (default "default"), kept in RUNDIR/api-key.
#
# Running it again is safe: what runs is left running, a changed backend or port is applied
# (API restarted, nginx reloaded), the key is kept while it still authenticates.
# `make down` (scripts/down.sh) stops everything.
#
# SERVER=apache or SERVER=lighttpd runs that web server on the same port instead of nginx, which
# then starts the API binary itself (mod_fcgid, mod_fastcgi; docs/hosting.md) instead of the
# supervisor; switching servers stops the other one.
#
# BACKEND=docker also finds or starts a Docker Engine and builds the default sandbox image
# (docs/docker.md): DOCKER_SOCKET names an Engine to use, DOCKER_DATA_ROOT the data root of a
# dockerd started here (default RUNDIR/docker), SANDBOX_IMAGE an image of your own.
# Settings of your own go in RUNDIR/operator.ini (kept; they override the generated ones).
#
# The runner (terrarium-runner --loop, docs/runner.md) runs sessions' turns: MODEL_BASE_URL sets
# [model] base_url (default the Anthropic API), whose key the runner takes from
# ANTHROPIC_API_KEY in this environment or [model] api_key_file in RUNDIR/operator.ini.
#
# Environment: RUNDIR PORT BACKEND WORKSPACE WORKERS LOG_LEVEL BUILD_DIR SERVER MODEL_BASE_URL,
# RECONCILER=1 to also run the reconciler in --loop mode in the background, RUNNER=0 to leave
# the runner out, RUNNER_MCP_LOCAL=1 to let agents' MCP servers be on this machine ([runner]
# mcp_local_addresses: the README's walk-through), and SKIP_INSTALL_DEPS=1 to skip
# scripts/install-deps.sh.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

PORT=${PORT:-8080}
SERVER=${SERVER:-nginx}
case "$SERVER" in
nginx | apache | lighttpd) ;;
*)
	echo "up: SERVER must be nginx, apache or lighttpd (got '$SERVER')" >&2
	exit 1
	;;
esac
BACKEND=${BACKEND:-local}
WORKSPACE=${WORKSPACE:-default}
RUN=${RUNDIR:-$ROOT/var}
mkdir -p "$RUN"
RUN=$(cd "$RUN" && pwd)

# shellcheck source=scripts/lib-stack.sh
. "$ROOT/scripts/lib-stack.sh"

if [ "${SKIP_INSTALL_DEPS:-0}" != 1 ]; then
	bash "$ROOT/scripts/install-deps.sh"
fi
make -C "$ROOT"

db_init "$RUN"
db_created=$STACK_DB_CREATED
db_start "$RUN"

if [ "$BACKEND" = docker ]; then
	# a running Docker Engine, else our own dockerd under RUN (docker_engine); then the
	# default sandbox image unless the operator names one (SANDBOX_IMAGE)
	docker_engine "$RUN"
	if [ -n "${SANDBOX_IMAGE:-}" ]; then
		STACK_DOCKER_IMAGE=$SANDBOX_IMAGE
	else
		# shellcheck disable=SC2034 # read by api_config
		STACK_DOCKER_IMAGE=$(DOCKER_SOCKET=$STACK_DOCKER_SOCKET "$ROOT/sandbox-image/build.sh")
	fi
fi
api_config "$RUN" api "$BACKEND"
config_changed=$STACK_CONFIG_CHANGED
api_cli "$RUN" api migrate "$ROOT/sql"

# A key made for an earlier database is worthless.
if [ "$db_created" = 1 ]; then
	rm -f "$RUN/api-key"
fi

new_key() {
	local key
	key=$(api_cli "$RUN" api key create "$WORKSPACE")
	case "$key" in
	'' | *[[:space:]]*)
		echo "up: 'key create' printed no single-line key" >&2
		return 1
		;;
	esac
	(umask 077 && printf '%s\n' "$key" >"$RUN/api-key.tmp") && mv -f "$RUN/api-key.tmp" "$RUN/api-key"
	echo "up: new API key for workspace '$WORKSPACE' in $RUN/api-key" >&2
}

if [ ! -s "$RUN/api-key" ]; then
	new_key
fi
chmod 0600 "$RUN/api-key"

# srt runs every command as the reconciler's user (docs/srt.md): a backend whose self-test fails
# would fail every session, so make up fails here, before any server starts
srt_note=""
if [ "$BACKEND" = srt ]; then
	recon_bin="$(dirname "$(_stack_api_bin)")/terrarium-reconciler"
	if ! out=$("$recon_bin" -c "$RUN/api.ini" --check 2>&1); then
		printf '%s\n' "$out" | tail -n 5 | sed 's/^/  /' >&2
		echo "up: BACKEND=srt does not work here: the reconciler's srt self-test failed" \
			"($recon_bin -c $RUN/api.ini --check, above; docs/srt.md); no server was" \
			"(re)started, MariaDB is left running (make down stops it)" >&2
		exit 1
	fi
	srt_note="srt self-test passed (terrarium-reconciler --check)"
fi

if [ "$SERVER" = nginx ]; then
	stack_servers_stop "$RUN"
	if [ "$config_changed" = 1 ]; then
		api_stop "$RUN" api
	fi
	api_start "$RUN" api
	nginx_start "$RUN" "$PORT:api"
else
	# Apache or lighttpd runs the API binary itself: no supervisor, no nginx
	nginx_stop "$RUN"
	api_stop "$RUN" api
	[ "$SERVER" = apache ] && lighttpd_stop "$RUN"
	[ "$SERVER" = lighttpd ] && apache_stop "$RUN"
	stack_server_start "$RUN" "$PORT" api
fi
if [ "${RECONCILER:-0}" = 1 ]; then
	[ "$config_changed" = 1 ] && recon_stop "$RUN"
	recon_start "$RUN" api
fi
# the runner runs sessions' turns (docs/runner.md); RUNNER=0 leaves it out
if [ "${RUNNER:-1}" = 1 ]; then
	[ "$config_changed" = 1 ] && runner_stop "$RUN"
	runner_start "$RUN" api
fi

URL="http://127.0.0.1:$PORT"
KEY=$(cat "$RUN/api-key")
if [ "$SERVER" = nginx ]; then
	LOGS="$RUN/api.log $RUN/nginx-error.log $RUN/nginx-access.log"
else
	LOGS="$RUN/$SERVER-error.log (the API's lines too) $RUN/$SERVER-access.log"
fi

# The key was kept from an earlier run: make sure it still authenticates.
status=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 "$URL/v1/environments?limit=1" \
	-H "x-api-key: $KEY" -H 'anthropic-version: 2023-06-01' \
	-H 'anthropic-beta: managed-agents-2026-04-01') || status=000
if [ "$status" = 401 ]; then
	echo "up: the saved API key is no longer valid; making a new one" >&2
	new_key
	KEY=$(cat "$RUN/api-key")
elif [ "$status" != 200 ]; then
	echo "up: warning: GET $URL/v1/environments answered $status (see $LOGS)" >&2
fi

cat <<EOF

terrarium is up (backend: $BACKEND, server: $SERVER)
  base URL  $URL
  API key   $KEY    (also in $RUN/api-key)
  logs      $LOGS $RUN/mariadb.log

  curl -s $URL/v1/environments -H "x-api-key: \$(cat $RUN/api-key)" \\
       -H "anthropic-beta: managed-agents-2026-04-01"

  runner      $( [ "${RUNNER:-1}" = 1 ] && echo "running (--loop), log $RUN/runner.log, model ${MODEL_BASE_URL:-https://api.anthropic.com}" || echo "not started (RUNNER=0)")
  reconciler  $( [ "${RECONCILER:-0}" = 1 ] && echo "running (--loop), log $RUN/reconciler.log" || echo "build/terrarium-reconciler -c $RUN/api.ini --once   (or RECONCILER=1 make up)")${srt_note:+
              $srt_note}

  settings  $RUN/api.ini (generated; your own settings go in $RUN/operator.ini)
  make down    stops it
EOF
