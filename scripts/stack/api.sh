# shellcheck shell=bash
# scripts/stack/api.sh (sourced by scripts/lib-stack.sh): API supervisors (`terrarium-api
# serve`, FastCGI on RUN/NAME.sock and its long polls on RUN/NAME-poll.sock), their configuration,
# the command line, the reconciler in --loop mode, and the API call of scripts and tests.
#
# Environment:
#   WORKERS, MAX_REQUESTS, POLL_WORKERS, LOG_LEVEL   [api] workers, max_requests, poll_workers
#                   and [log] level written by api_config (unset: the binary's defaults)
#   DB_ADDR         HOST:PORT: api_config writes a TCP [database] host/port instead of RUN's
#                   socket (scripts/cluster.sh: an API host talks to its own Galera node)
#   API_LISTEN      HOST:PORT: api_config makes the supervisor listen there (FastCGI over TCP)
#                   instead of RUN/NAME.sock, and api_start waits for that port
#   API_POLL_LISTEN HOST:PORT: api_config writes it as [api] poll_socket instead of
#                   RUN/NAME-poll.sock, and api_start waits for that port too
#   KEY             the API key of api and api_ok

STACK_CONFIG_CHANGED=0 # set to 1 by api_config when NAME.ini changed

# api_config RUN NAME BACKEND: write RUN/NAME.ini (mode 0600) for an API supervisor listening
# on RUN/NAME.sock, group = the nginx workers' group, mode 0660, with the database password from
# RUN/db-password (db_start first). Only what differs from terrarium-api's own defaults is
# written (_stack_ini_minimal). Sets STACK_CONFIG_CHANGED=1 when the file changed.
# With STACK_DOCKER_SOCKET set (docker_engine), a [docker] section names that socket and
# STACK_DOCKER_IMAGE. The operator's own settings live in RUN/operator.ini, appended verbatim
# after the generated ones: a key set there wins (the reader keeps a key's last value), and
# no run of `make up` touches that file.
api_config() {
	local run=$1 name=$2 backend=$3 ini tmp vault_key
	STACK_CONFIG_CHANGED=0
	_stack_check_run "$run" || return 1
	_stack_check_name "$name" || return 1
	if [ -z "$backend" ]; then
		_stack_err "api_config: no backend given"
		return 1
	fi
	if [ ! -s "$run/db-password" ]; then
		_stack_err "$run/db-password missing: run db_start first"
		return 1
	fi
	_stack_check_socket_len "$run/$name.sock" || return 1
	_stack_check_socket_len "$run/$name-poll.sock" || return 1
	vault_key=$(_stack_vault_key "$run") || return 1
	ini="$run/$name.ini"
	tmp="$ini.tmp"
	(
		umask 077
		set -o pipefail
		{
			echo "; written by scripts/lib-stack.sh (api_config), rewritten by every \`make up\`:"
			echo "; what differs from terrarium-api's defaults (\`config dump\` prints them all);"
			echo "; put your own settings in $run/operator.ini (appended below, where they win)"
			echo "[database]"
			if [ -n "${DB_ADDR:-}" ]; then
				_stack_ini_line host "${DB_ADDR%:*}"
				_stack_ini_line port "${DB_ADDR##*:}"
			else
				_stack_ini_line socket "$run/mysql.sock"
			fi
			_stack_ini_line user "$STACK_DB_USER"
			_stack_ini_line password "$(cat "$run/db-password")"
			_stack_ini_line name "$STACK_DB_NAME"
			printf '\n[api]\n'
			_stack_ini_line socket "${API_LISTEN:-$run/$name.sock}"
			_stack_ini_line socket_group "$(stack_nginx_group)"
			_stack_ini_line socket_mode 0660
			_stack_ini_line workers "${WORKERS:-}"
			_stack_ini_line max_requests "${MAX_REQUESTS:-}"
			_stack_ini_line poll_socket "${API_POLL_LISTEN:-$run/$name-poll.sock}"
			_stack_ini_line poll_workers "${POLL_WORKERS:-}"
			printf '\n[sandbox]\n'
			_stack_ini_line backend "$backend"
			_stack_ini_line root "$run/sandboxes"
			printf '\n[vault]\n'
			_stack_ini_line key_file "$vault_key"
			printf '\n[model]\n'
			_stack_ini_line base_url "${MODEL_BASE_URL:-}"
			# RUNNER_HOST_TOOLS=1: the model's tools may run as host processes (local)
			printf '\n[runner]\n'
			_stack_ini_line host_tools "${RUNNER_HOST_TOOLS:-}"
			# RUNNER_MCP_LOCAL=1: agents' MCP servers may be on this machine
			_stack_ini_line mcp_local_addresses "${RUNNER_MCP_LOCAL:-}"
			# one tailer per nginx (docs/events.md): API_TAILER=0 for the other
			# supervisors behind it on the same database
			printf '\n[stream]\n'
			if [ "${API_TAILER:-1}" = 1 ] && stack_nchan_modules >/dev/null; then
				_stack_ini_line publish_socket "$run/events-pub.sock"
			fi
			printf '\n[log]\n'
			_stack_ini_line level "${LOG_LEVEL:-}"
			if [ -n "$STACK_DOCKER_SOCKET" ]; then
				printf '\n[docker]\n'
				_stack_ini_line socket "$STACK_DOCKER_SOCKET"
				_stack_ini_line image "${STACK_DOCKER_IMAGE:?docker image not set}"
			fi
		} | _stack_ini_minimal >"$tmp" || exit 1
		if [ -f "$run/operator.ini" ]; then
			printf '\n; ---- %s (the operator'"'"'s settings; they win) ----\n' \
				"$run/operator.ini" >>"$tmp"
			cat "$run/operator.ini" >>"$tmp"
		fi
	) || {
		rm -f "$tmp"
		return 1
	}
	if [ -f "$ini" ] && cmp -s "$tmp" "$ini"; then
		rm -f "$tmp"
	else
		mv -f "$tmp" "$ini" || return 1
		# shellcheck disable=SC2034 # read by callers
		STACK_CONFIG_CHANGED=1
	fi
}

# api_cli RUN NAME ARGS...: run `terrarium-api -c RUN/NAME.ini ARGS...` in the foreground;
# `migrate` runs as the schema owner instead (RUN/owner.ini, written by db_start).
api_cli() {
	local run=$1 name=$2 api ini
	shift 2
	api=$(_stack_api_bin)
	if [ ! -x "$api" ]; then
		_stack_err "$api not built (run make)"
		return 1
	fi
	ini="$run/$name.ini"
	[ "${1:-}" = migrate ] && ini="$run/owner.ini"
	"$api" -c "$ini" "$@"
}

# api_setting RUN NAME SECTION KEY: the effective value of [SECTION] KEY in RUN/NAME.ini (its
# `config dump`: the binary's default when the file does not set it). The dump is read to its
# end: under pipefail, a reader that stops early would fail the pipe (SIGPIPE).
api_setting() {
	api_cli "$1" "$2" config dump | awk -v sec="[$3]" -v key="$4" '
		/^\[/ { in_sec = ($0 == sec) }
		!found && in_sec && $1 == key && $2 == "=" { sub(/^[^=]*= ?/, ""); print; found = 1 }
		END { exit !found }'
}

# api_start RUN NAME: start `terrarium-api -c RUN/NAME.ini serve` unless it already runs; wait
# (30 s at most) for RUN/NAME.sock, then check that nginx's workers may connect to it.
api_start() {
	local run=$1 name=$2 api pid sock
	_stack_check_run "$run" || return 1
	_stack_check_name "$name" || return 1
	api=$(_stack_api_bin)
	sock="$run/$name.sock"
	if pid=$(stack_running "$run/$name.pid" terrarium-api); then
		_stack_say "api $name already running (pid $pid)"
		return 0
	fi
	if [ ! -x "$api" ]; then
		_stack_err "$api not built (run make)"
		return 1
	fi
	if [ ! -f "$run/$name.ini" ]; then
		_stack_err "$run/$name.ini missing: run api_config first"
		return 1
	fi
	[ -n "${API_LISTEN:-}" ] && sock=$API_LISTEN
	rm -f "$run/$name.sock"
	_stack_say "starting api $name on $sock"
	_stack_spawn "$run/$name.pid" "$run/$name.log" "$api" -c "$run/$name.ini" serve || {
		_stack_err "api $name did not start"
		_stack_tail "$run/$name.log"
		return 1
	}
	pid=$STACK_SPAWNED_PID
	_stack_wait_ready "$run" "$name" "$pid" \
		"api $name on $sock${API_POLL_LISTEN:+ and $API_POLL_LISTEN}" 30 api_stop \
		_stack_api_listening "$sock" "${API_POLL_LISTEN:-}" || return 1
	if [ -z "${API_LISTEN:-}" ] && ! _stack_nginx_can -w "$sock"; then
		_stack_err "nginx workers ($(stack_nginx_user)) cannot write to $sock" \
			"($(stat -c '%U:%G %a' "$sock")): the supervisor must chown it to group" \
			"$(stack_nginx_group) and chmod it 0660, or every request is a 502"
		api_stop "$run" "$name"
		return 1
	fi
	_stack_say "api $name ready (pid $pid)"
}

# _stack_api_listening SOCKET [POLL_SOCKET]: the API listens on SOCKET and, when given, on
# POLL_SOCKET (its long-poll pool).
_stack_api_listening() {
	_stack_listening "$1" && { [ -z "${2:-}" ] || _stack_listening "$2"; }
}

# api_stop RUN NAME: SIGTERM (graceful: in-flight requests finish), wait up to 35 s (nginx
# gives a request 30 s), then SIGKILL the supervisor and its workers.
api_stop() {
	_stack_check_run "$1" || return 1
	_stack_check_name "$2" || return 1
	_stack_stop "$1/$2.pid" terrarium-api TERM 35 "api $2"
	rm -f "$1/$2.sock" "$1/$2-poll.sock"
}

# _stack_loop_start RUN NAME ID PROGRAM [ARG...]: PROGRAM (built beside terrarium-api) with
# NAME's configuration, --loop and ARGs, unless one already runs; pid RUN/ID.pid, log RUN/ID.log.
_stack_loop_start() {
	local run=$1 name=$2 id=$3 prog=$4 bin pid
	shift 4
	_stack_check_run "$run" || return 1
	_stack_check_name "$name" || return 1
	_stack_check_name "$id" || return 1
	bin="$(dirname "$(_stack_api_bin)")/$prog"
	if pid=$(stack_running "$run/$id.pid" "$prog"); then
		_stack_say "$id already running (pid $pid)"
		return 0
	fi
	[ -x "$bin" ] || {
		_stack_err "$bin not built (run make)"
		return 1
	}
	_stack_spawn "$run/$id.pid" "$run/$id.log" "$bin" -c "$run/$name.ini" --loop "$@" || {
		_stack_err "$id did not start"
		_stack_tail "$run/$id.log"
		return 1
	}
	_stack_say "$id running (pid $STACK_SPAWNED_PID, log $run/$id.log)"
}

# recon_start RUN NAME: the reconciler in --loop mode, reading NAME's configuration (the API's: same database, same
# backend and sandbox root). Pid RUN/reconciler.pid, log RUN/reconciler.log, Prometheus
# metrics RUN/reconciler.prom.
recon_start() {
	_stack_loop_start "$1" "$2" reconciler terrarium-reconciler --metrics-file "$1/reconciler.prom"
}

# recon_stop RUN: SIGTERM (the reconciler finishes its step), wait up to 35 s, then SIGKILL.
recon_stop() {
	_stack_check_run "$1" || return 1
	_stack_stop "$1/reconciler.pid" terrarium-reconciler TERM 35 reconciler
}

# runner_start RUN NAME [ID]: terrarium-runner --loop with NAME's configuration (docs/runner.md:
# it runs sessions' turns: the model ([model] base_url, MODEL_BASE_URL in api_config) and the
# tools in the sandboxes of NAME's backend). Its key, when the model needs one, comes from
# ANTHROPIC_API_KEY in the environment or [model] api_key_file (RUN/operator.ini), never from
# a command line. Pid RUN/ID.pid, log RUN/ID.log; ID (default runner) tells several runners of
# one RUN apart.
runner_start() {
	_stack_loop_start "$1" "$2" "${3:-runner}" terrarium-runner
}
# runner_stop RUN [ID]: SIGTERM (its turns end; the next runner takes them over), wait, SIGKILL.
runner_stop() {
	local id=${2:-runner}
	_stack_check_run "$1" || return 1
	_stack_check_name "$id" || return 1
	_stack_stop "$1/$id.pid" terrarium-runner TERM 35 "$id"
}


# ---------------------------------------------------------------------------------------------
# Calling the API, as the scripts and tests do

# api URL METHOD PATH [BODY [CURL_OPTION...]]: METHOD URL/PATH with $KEY and the version and beta
# headers; BODY, when given and not empty, is sent as JSON. Prints the response body; fails only
# when curl does (no answer).
api() {
	local url=$1 method=$2 path=$3 body=${4:-}
	shift $(($# < 4 ? $# : 4))
	curl -sS -X "$method" "$url$path" -H "x-api-key: $KEY" \
		-H "anthropic-version: 2023-06-01" -H "anthropic-beta: managed-agents-2026-04-01" \
		${body:+-H "content-type: application/json" --data "$body"} "$@"
}

# api_ok URL METHOD PATH [BODY]: api, with a 10 s limit, printing the body of a 200 only; any
# other answer fails, its status and body said on stderr.
api_ok() {
	local out code
	out=$(api "$1" "$2" "$3" "${4:-}" --max-time 10 -w '\n%{http_code}') || return 1
	code=${out##*$'\n'}
	if [ "$code" != 200 ]; then
		printf 'api: %s %s -> %s: %s\n' "$2" "$3" "$code" "${out%$'\n'*}" >&2
		return 1
	fi
	printf '%s\n' "${out%$'\n'*}"
}
