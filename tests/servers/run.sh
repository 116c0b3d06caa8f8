#!/usr/bin/env bash
# The HTTP suite through Apache (mod_fcgid) and lighttpd (mod_fastcgi) instead of nginx
# (`make test-servers`; docs/hosting.md). Starts MariaDB in a temporary directory, then for each
# server in SERVERS (default "apache lighttpd") the server on a free loopback port, running the
# API binary itself on fd 0, and runs:
#   the server's own errors      2 MiB body -> 413, malformed URI -> 400 (Apache), a path the
#                                server refuses: JSON envelope with a request-id
#   build/e2e-runner tests/cases the data-driven HTTP cases (minus tests/servers/skip-SERVER)
#   tests/sdk/run.sh             the official SDK suite
# and then the shared-hosting setup (hosting/apache/htaccess.in, api.fcgi.in) in a per-user
# directory of an Apache configured like a shared host (tests/servers/shared-host.conf.in): the
# SDK suite against http://127.0.0.1:PORT/~alice/terrarium/api.fcgi. Before that, `make up`
# with SERVER=apache (scripts/up.sh and down.sh, nothing left running).
# Everything started is stopped by PID; the last line is "N passed, N failed".
# Environment: BUILD_DIR, SERVERS, KEEP_RUN=1 (keep the directory).
# shellcheck disable=SC2317 # functions run through `part` and the EXIT trap
set -uo pipefail

# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib-stack.sh" && script_init servers || exit 1

read -ra SERVERS <<<"${SERVERS:-apache lighttpd}"
BUILD=$(stack_build_dir)
passed=0
failed=0
failures=()

die() {
	printf 'servers: %s\n' "$*" >&2
	echo "$passed passed, $((failed + 1)) failed"
	exit 1
}

stack_scratch servers || die "cannot make a runtime directory"

part() { # NAME CMD...: run CMD, count it
	local name=$1
	shift
	printf '\n==== %s ====\n' "$name"
	if "$@"; then
		passed=$((passed + 1))
		echo "servers: $name passed"
	else
		failed=$((failed + 1))
		failures+=("$name")
		echo "servers: $name FAILED" >&2
		for f in "$RUN"/apache-error.log "$RUN"/lighttpd-error.log; do
			[ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
		done
	fi
}

[ -x "$BUILD/terrarium-api" ] && [ -x "$BUILD/e2e-runner" ] || die "$BUILD is not built (run make)"
db_init "$RUN" || die "db_init failed"
db_start "$RUN" || die "db_start failed"
# 6 API processes under Apache and lighttpd: the SDK suite holds two event streams at once (each
# a process for its whole life, docs/events.md) while it sends through others
WORKERS=6 api_config "$RUN" api local || die "api_config failed"
api_cli "$RUN" api migrate "$ROOT/sql" || die "migrate failed"
cli() { api_cli "$RUN" api "$@"; }
KEY=$(cli key create ws-main acct-a) && KEY_ACCT2=$(cli key create ws-main acct-b) &&
	KEY2=$(cli key create ws-other) && KEY_REVOKED=$(cli key create ws-main acct-a) &&
	printf '%s\n' "$KEY_REVOKED" | cli key revoke && WORKSPACE_ID=$(cli workspace id ws-main) &&
	WORKSPACE2_ID=$(cli workspace id ws-other) || die "keys and workspaces"
export KEY KEY_ACCT2 KEY2 KEY_REVOKED WORKSPACE_ID WORKSPACE2_ID
export TERRARIUM_KEY=$KEY TERRARIUM_KEY2=$KEY2 TERRARIUM_KEY_ACCT2=$KEY_ACCT2
export TERRARIUM_BACKEND=local TERRARIUM_HAS_SESSIONS=1

# start_server SERVER: on a free port (retried: another process may take a probed port)
start_server() {
	local server=$1 attempt
	for attempt in 1 2 3; do
		PORT=$(stack_free_port) || return 1
		if WORKERS=2 SERVER=$server stack_server_start "$RUN" "$PORT" api; then
			return 0
		fi
		echo "servers: $server did not start on $PORT (attempt $attempt)" >&2
	done
	return 1
}

header() { tr -d '\r' <"$RUN/check.headers" | sed -n "s/^$1: //Ip" | tail -n 1; }

# check_error NAME STATUS TYPE CURL-ARGS...: the server's (or the API's) JSON error envelope
check_error() {
	local name=$1 want=$2 type=$3 got rid
	shift 3
	got=$(curl -sS -o "$RUN/check.body" -D "$RUN/check.headers" -w '%{http_code}' "$@") || got=000
	rid=$(header request-id)
	if [ "$got" = "$want" ] && [ "$(header content-type)" = application/json ] &&
		[[ $rid =~ ^req_[0-9A-Za-z]{24}$ ]] && [ -n "$(header x-should-retry)" ] &&
		jq -e --arg t "$type" --arg rid "$rid" '.type == "error" and .error.type == $t
			and (.error.message | length > 0) and .request_id == $rid' \
			"$RUN/check.body" >/dev/null 2>&1; then
		echo "ok   $name"
		return 0
	fi
	echo "FAIL $name: status $got (want $want), request-id '$rid', body: $(head -c 300 "$RUN/check.body")"
	return 1
}

server_errors() { # SERVER URL
	local server=$1 url=$2 rc=0
	check_error "$server: 413 for a 2 MiB body" 413 request_too_large \
		-X POST "$url/v1/environments" -H "x-api-key: $KEY" \
		-H 'content-type: application/json' --data-binary @"$RUN/big.body" || rc=1
	if [ "$server" = apache ]; then
		check_error "$server: 400 for a malformed URI" 400 invalid_request_error \
			"$url/v1/environments/%zz" || rc=1
	fi
	# no heavy budget behind this server (docs/limits.md): pages of 1000 rows are served one
	# after another (nginx's default heavy burst is 10), and without nginx's TERRARIUM_HEAVY the
	# API does not refuse a limit whose name nginx could not have read
	local codes=() _
	for _ in $(seq 12); do
		codes+=("$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/environments?limit=1000" \
			-H "x-api-key: $KEY" -H "anthropic-beta: managed-agents-2026-04-01")")
	done
	codes+=("$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/environments?%6Cimit=1000" \
		-H "x-api-key: $KEY" -H "anthropic-beta: managed-agents-2026-04-01")")
	if [ "$(printf '%s\n' "${codes[@]}" | sort -u)" = 200 ]; then
		echo "ok   $server: no heavy budget (12 pages of limit=1000 and an encoded limit: 200)"
	else
		echo "FAIL $server: pages of limit=1000 answered ${codes[*]} (want 200 each: no heavy budget)"
		rc=1
	fi
	# the error pages' path is the API's like any other: its own 404 from outside
	check_error "$server: /__terrarium_error/ from outside is a 404" 404 not_found_error \
		"$url/__terrarium_error/413" || rc=1
	return $rc
}

# The cases, less those tests/servers/skip-SERVER lists (a path and why, one per line).
run_cases() { # SERVER URL
	local server=$1 skip="$ROOT/tests/servers/skip-$1" tree="$RUN/cases-$1" c
	rm -rf "$tree"
	mkdir -p "$tree"
	(cd "$ROOT/tests/cases" && find . -mindepth 2 -maxdepth 2 -type d) | sort | while read -r c; do
		c=${c#./}
		if [ -f "$skip" ] && grep -q "^$c " "$skip"; then
			echo "skip $c: $(sed -n "s|^$c ||p" "$skip")"
			continue
		fi
		mkdir -p "$tree/$(dirname "$c")"
		ln -s "$ROOT/tests/cases/$c" "$tree/$c"
	done
	TERRARIUM_URL=$2 "$BUILD/e2e-runner" "$tree"
}

head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$RUN/big.body"

for server in "${SERVERS[@]}"; do
	if ! start_server "$server"; then
		failed=$((failed + 1))
		failures+=("$server: start")
		continue
	fi
	url="http://127.0.0.1:$PORT"
	part "$server: the server's own errors" server_errors "$server" "$url"
	part "$server: HTTP cases (e2e-runner tests/cases)" run_cases "$server" "$url"
	part "$server: official SDK (tests/sdk/run.sh)" env TERRARIUM_URL="$url" \
		bash "$ROOT/tests/sdk/run.sh"
	case "$server" in
	apache) apache_stop "$RUN" ;;
	lighttpd) lighttpd_stop "$RUN" ;;
	esac
done

# `make up` itself with SERVER=apache: scripts/up.sh (its own MariaDB and Apache in RUN/up on
# a free port; dependencies not reinstalled), the README's curl example with the key it made,
# the SDK suite's environment tests (the whole suite ran above through apache_start, which
# up.sh calls too: here what up.sh adds is tested), then scripts/down.sh: every process up.sh
# started (its pid files and their descendants, by PID and start time) is gone.
procs_under() { # PID...: each PID and its descendants, as PID:STARTTIME
	local p c
	for p in "$@"; do
		[ -r "/proc/$p/stat" ] || continue
		echo "$p:$(awk '{ print $22 }' "/proc/$p/stat")"
		for c in $(ps -o pid= --ppid "$p"); do procs_under "$c"; done
	done
}
make_up() { # SERVER
	local dir="$RUN/up-$1" port key procs p rc=0
	port=$(stack_free_port) || return 1
	if ! RUNDIR=$dir PORT=$port SERVER=$1 SKIP_INSTALL_DEPS=1 WORKERS=2 \
		bash "$ROOT/scripts/up.sh" >"$RUN/up-$1.log" 2>&1; then
		tail -n 30 "$RUN/up-$1.log"
		RUNDIR=$dir bash "$ROOT/scripts/down.sh"
		return 1
	fi
	grep -q "terrarium is up (backend: local, server: $1)" "$RUN/up-$1.log" || rc=1
	key=$(cat "$dir/api-key")
	# shellcheck disable=SC2046 # one PID per pid file
	procs=$(procs_under $(cat "$dir"/*.pid))
	echo "make up ($1): processes $(tr '\n' ' ' <<<"$procs")"
	grep -q "^$(cat "$dir/$1.pid"):" <<<"$procs" || { echo "FAIL no $1 process"; rc=1; }
	[ "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/environments" \
		-H "x-api-key: $key" -H "anthropic-beta: managed-agents-2026-04-01")" = 200 ] ||
		{ echo "FAIL the README's curl example"; rc=1; }
	env -u TERRARIUM_KEY2 -u TERRARIUM_KEY_ACCT2 TERRARIUM_URL="http://127.0.0.1:$port" \
		TERRARIUM_KEY="$key" bash "$ROOT/tests/sdk/run.sh" --test-name-pattern='create and retrieve' || rc=1
	RUNDIR=$dir bash "$ROOT/scripts/down.sh" || rc=1
	for p in $procs; do
		if [ -r "/proc/${p%%:*}/stat" ] &&
			[ "$(awk '{ print $22 }' "/proc/${p%%:*}/stat")" = "${p#*:}" ]; then
			echo "FAIL still running after down.sh: pid ${p%%:*}: $(tr '\0' ' ' <"/proc/${p%%:*}/cmdline")"
			rc=1
		fi
	done
	stack_port_open "$port" && { echo "FAIL 127.0.0.1:$port still open"; rc=1; }
	return $rc
}
if [[ " ${SERVERS[*]} " == *" apache "* ]]; then
	part "make up: SERVER=apache scripts/up.sh, curl, SDK subset, scripts/down.sh" make_up apache
fi

# Shared hosting: what docs/hosting.md tells a user to do, in ~alice/public_html/terrarium.
shared_host() {
	local home="$RUN/home/alice" dir api
	dir="$home/public_html/terrarium"
	api=$(_stack_server_api) || return 1
	_stack_server_ini "$RUN" api || return 1
	mkdir -p "$dir" || return 1
	chmod 0755 "$home" "$home/public_html" "$dir"
	_stack_subst "$ROOT/hosting/apache/htaccess.in" BASE=/~alice/terrarium >"$dir/.htaccess" &&
		_stack_subst "$ROOT/hosting/apache/api.fcgi.in" API="$api" INI="$RUN/api.ini" \
			>"$dir/api.fcgi" && chmod 0755 "$dir/api.fcgi" && chmod 0644 "$dir/.htaccess" ||
		return 1
	PORT=$(stack_free_port) || return 1
	apache_start_conf "$RUN" "$PORT" "$ROOT/tests/servers/shared-host.conf.in"
}
if [ "${SERVERS[*]}" = "apache lighttpd" ] || [ -n "${SHARED:-}" ]; then
	if shared_host; then
		base="http://127.0.0.1:$PORT/~alice/terrarium/api.fcgi"
		part "shared host: other files refused" check_error "shared host: .htaccess" 403 \
			permission_error "http://127.0.0.1:$PORT/~alice/terrarium/.htaccess"
		# mod_fcgid's defaults buffer answers: the suite's live-stream tests are skipped there
		part "shared host: official SDK at $base" env TERRARIUM_URL="$base" \
			TERRARIUM_STREAMS_BUFFERED=1 bash "$ROOT/tests/sdk/run.sh"
		apache_stop "$RUN"
	else
		failed=$((failed + 1))
		failures+=("shared host: start")
	fi
fi

echo
[ ${#failures[@]} -eq 0 ] || printf 'servers: FAILED: %s\n' "${failures[@]}" >&2
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
