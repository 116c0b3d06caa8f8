#!/usr/bin/env bash
# End-to-end tests against the real binaries (`make test` runs this after the unit tests).
#
# Starts, in a temporary directory: MariaDB on its own socket, one API supervisor per sandbox
# backend (local opensandbox docker bwrap srt, 2 workers each) and one nginx with a loopback port per
# backend (and three unix sockets for its own error-page checks). Creates the keys and workspaces
# the tests use, then runs
#   tests/reconciler/run.sh        the reconciler with the local and bwrap backends
#   tests/srt/run.sh               the srt backend: allowlists, registries, MCP hosts, escapes
#   tests/backends/run.sh          driver conformance (fakes), opensandbox through API + reconciler
#   build/e2e-runner tests/cases   the data-driven HTTP cases
#   tests/sdk/run.sh               the official SDK suite (when present)
#   tests/vaults/run.sh            vault secrets at rest, and credentials opened with the vault key
#   tests/mcp-turn/run.sh          MCP servers and vault credentials in the turn: a runner, the
#                                  fake model and an MCP server on the official SDK, driven
#                                  through the official SDK (confirm, deny, credential errors,
#                                  timeout, kill -9, no secret anywhere)
#   tests/events/run.sh            event streams: framing (nchan and the workers' fallback),
#                                  kill -9 while events are written, 1,000 streams held
#   tests/race/race.mjs            session creation racing environment delete and archive
#   tests/seeds/run.sh             the seed pages' curl examples (when present)
#   tests/runtime/run.sh           sessions that run: the runners (started there), the agent
#                                  toolset, crashes, self-hosted workers, against the fake model
# Everything goes on even when a part fails; the exit status is non-zero if any part failed.
# Everything started is stopped by PID on exit and the directory removed (KEEP_RUN=1 keeps it
# and prints where it is; the processes are stopped either way).
#
# What the parts receive in the environment:
#   TERRARIUM_URL                  nginx -> API with backend local
#   TERRARIUM_URL_<backend>        one per backend, e.g. TERRARIUM_URL_bwrap (also in upper case)
#   TERRARIUM_BACKEND=local        the backend behind TERRARIUM_URL
#   KEY          TERRARIUM_KEY     workspace ws-main, account acct-a
#   KEY_ACCT2    TERRARIUM_KEY_ACCT2  workspace ws-main, account acct-b
#   KEY2         TERRARIUM_KEY2    workspace ws-other
#   KEY_REVOKED  TERRARIUM_KEY_REVOKED  made in ws-main, then revoked
#   WORKSPACE_ID WORKSPACE2_ID     ids of ws-main and ws-other
#   TERRARIUM_RUN TERRARIUM_CONFIG the runtime directory and the local API's configuration
#   FAKE_MODEL_URL                 the scripted fake model (tests/fake-model) every API's
#                                  [model] base_url names, with short retries (RUN/operator.ini)
#
# Under a sanitizer build (BUILD_DIR=build-asan) any ASan/LSan/UBSan report fails the run.
# Environment: BUILD_DIR (default build), E2E_ONLY ('A|B': only the parts whose names hold A or B),
# E2E_BACKENDS (default "local opensandbox docker bwrap srt"),
# KEEP_RUN=1.
# shellcheck disable=SC2317 # functions run through `part` and the EXIT trap
set -uo pipefail

# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib-stack.sh" && script_init e2e || exit 1

read -ra BACKENDS <<<"${E2E_BACKENDS:-local opensandbox docker bwrap srt}"
BUILD=$(stack_build_dir)

section() {
	printf '\n==== %s ====\n' "$*"
}

scratch_before_stop() {
	local pid
	section "teardown"
	if declare -F short_stop >/dev/null; then short_stop; fi
	if pid=$(stack_running "$RUN/fake-model.pid" fake-model.mjs); then kill "$pid"; fi
	rm -f "$RUN/fake-model.pid"
}
scratch_after_stop() { # a sanitizer report fails the run
	if sanitizer_reports; then
		echo "e2e: FAILED: sanitizer reports in $SAN_DIR (above)" >&2
		return 1
	fi
}
stack_scratch e2e || die "cannot make a runtime directory"

# Sanitizer builds (make test-asan: BUILD_DIR=build-asan): every ASan, LeakSanitizer and UBSan
# report of any process started from here goes to a file under $RUN/sanitizer/ (world-writable:
# workers started as root run as [api] user), errors and leaks are fatal, and any report fails
# the run. Checked at teardown, once the processes have exited and written their leak reports.
# Other builds ignore these variables.
SAN_DIR=$RUN/sanitizer
if ! mkdir -p "$SAN_DIR" || ! chmod 1777 "$SAN_DIR"; then
	die "cannot make $SAN_DIR"
fi
export ASAN_OPTIONS="log_path=$SAN_DIR/asan:detect_leaks=1:halt_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="log_path=$SAN_DIR/ubsan:halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

sanitizer_reports() {
	local f found=1
	for f in "$SAN_DIR"/*; do
		[ -f "$f" ] || continue
		found=0
		printf -- '--- sanitizer report %s (first 80 lines) ---\n' "${f##*/}" >&2
		head -n 80 "$f" >&2
	done
	return "$found"
}


# Logs worth reading when a part failed.
show_logs() {
	local f
	for f in "$RUN"/*.log; do
		[ -s "$f" ] || continue
		case "$f" in */mariadb-install.log | */nginx-access.log) continue ;; esac
		printf -- '--- %s (last 40 lines) ---\n' "$f" >&2
		tail -n 40 "$f" >&2
	done
}

section "stack in $RUN"
for bin in terrarium-api terrarium-reconciler e2e-runner; do
	[ -x "$BUILD/$bin" ] || die "$BUILD/$bin is not built (run make)"
done

# The scripted fake of the Messages API (tests/fake-model/README.md) for the runners: every
# API's configuration names it, with retries short enough for tests (the operator's settings:
# scripts/lib-stack.sh api_config appends RUN/operator.ini).
node "$ROOT/tests/fake-model/fake-model.mjs" --port-file "$RUN/fake-model.port" \
	</dev/null >"$RUN/fake-model.log" 2>&1 &
echo $! >"$RUN/fake-model.pid"
for _ in $(seq 100); do
	[ -s "$RUN/fake-model.port" ] && break
	sleep 0.1
done
[ -s "$RUN/fake-model.port" ] || die "the fake model did not start: $(cat "$RUN/fake-model.log")"
FAKE_MODEL_URL="http://127.0.0.1:$(cat "$RUN/fake-model.port")"
export FAKE_MODEL_URL MODEL_BASE_URL=$FAKE_MODEL_URL
# the local backend's runners run the model's tools as host processes: allowed here, for tests
# ([runner] host_tools, docs/runner.md); tests/runtime checks the refusal without it
export RUNNER_HOST_TOOLS=1
printf '[model]\nbackoff_ms = 100\nbackoff_cap_ms = 400\nidle_timeout_seconds = 10\n' \
	>"$RUN/operator.ini" || die "cannot write $RUN/operator.ini"

db_init "$RUN" || die "db_init failed"
db_start "$RUN" || die "db_start failed"
# one tailer publishes the database's events to nginx's streams: the first API's
tailer=1
for b in "${BACKENDS[@]}"; do
	API_TAILER=$tailer WORKERS=2 api_config "$RUN" "$b" "$b" || die "api_config $b failed"
	tailer=0
done
api_cli "$RUN" "${BACKENDS[0]}" migrate "$ROOT/sql" || die "migrate failed"

cli() {
	api_cli "$RUN" "${BACKENDS[0]}" "$@"
}
KEY=$(cli key create ws-main acct-a) || die "key create ws-main acct-a failed"
KEY_ACCT2=$(cli key create ws-main acct-b) || die "key create ws-main acct-b failed"
KEY2=$(cli key create ws-other) || die "key create ws-other failed"
KEY_REVOKED=$(cli key create ws-main acct-a) || die "key create (to revoke) failed"
printf '%s\n' "$KEY_REVOKED" | cli key revoke || die "key revoke failed"
WORKSPACE_ID=$(cli workspace id ws-main) || die "workspace id ws-main failed"
WORKSPACE2_ID=$(cli workspace id ws-other) || die "workspace id ws-other failed"
for v in KEY KEY_ACCT2 KEY2 KEY_REVOKED WORKSPACE_ID WORKSPACE2_ID; do
	case "${!v}" in
	'' | *[[:space:]]*) die "$v: the CLI printed '${!v}', not one word" ;;
	esac
done
export KEY KEY_ACCT2 KEY2 KEY_REVOKED WORKSPACE_ID WORKSPACE2_ID
export TERRARIUM_KEY=$KEY TERRARIUM_KEY_ACCT2=$KEY_ACCT2 TERRARIUM_KEY2=$KEY2
export TERRARIUM_KEY_REVOKED=$KEY_REVOKED
export TERRARIUM_WORKSPACE_ID=$WORKSPACE_ID TERRARIUM_WORKSPACE2_ID=$WORKSPACE2_ID

for b in "${BACKENDS[@]}"; do
	api_start "$RUN" "$b" || { show_logs; die "api_start $b failed"; }
done

# Free ports are picked by probing; another process may take one before nginx binds it, so
# a failed start is retried with new ports. Three more servers, which only this script calls,
# listen on unix sockets in RUN (curl --unix-socket): one proxies to a socket no API listens on
# ("absent"), for nginx's own 502; one is the first backend with a rate limit of 1
# request/minute, bursts of 2; one the first backend with a heavy budget of 1 request/minute,
# bursts of 1 (limit > 100).
# The load parts send thousands of requests a second with one key: only the servers made for the
# rate-limit checks limit it.
export NGINX_RATE=${NGINX_RATE:-1000000} NGINX_BURST=${NGINX_BURST:-1000000}
export NGINX_HEAVY_RATE=${NGINX_HEAVY_RATE:-1000000} NGINX_HEAVY_BURST=${NGINX_HEAVY_BURST:-1000000}
SOCK_ABSENT=$RUN/http-absent.sock SOCK_LIMITED=$RUN/http-limited.sock SOCK_HEAVY=$RUN/http-heavy.sock
URL_SOCK=http://localhost # the URL curl is given with --unix-socket
started=0
for attempt in 1 2 3; do
	specs=()
	ports=()
	for b in "${BACKENDS[@]}"; do
		p=$(stack_free_port "${ports[@]}") || die "no free port"
		ports+=("$p")
		specs+=("$p:$b")
	done
	specs+=("$SOCK_ABSENT:absent" "$SOCK_LIMITED:${BACKENDS[0]}:1r/m:2"
		"$SOCK_HEAVY:${BACKENDS[0]}:1000r/s:1000:1r/m:1")
	if nginx_start "$RUN" "${specs[@]}"; then
		started=1
		break
	fi
	nginx_stop "$RUN"
	echo "e2e: nginx start failed (attempt $attempt), retrying with other ports" >&2
done
[ $started = 1 ] || die "nginx did not start"

for i in "${!BACKENDS[@]}"; do
	b=${BACKENDS[$i]}
	url="http://127.0.0.1:${ports[$i]}"
	export "TERRARIUM_URL_$b=$url"
	upper=$(printf '%s' "$b" | tr 'a-z-' 'A-Z_')
	export "TERRARIUM_URL_$upper=$url"
	echo "  $b: $url"
done
export TERRARIUM_URL="http://127.0.0.1:${ports[0]}"
export TERRARIUM_BACKEND=${BACKENDS[0]}
export TERRARIUM_RUN=$RUN
export TERRARIUM_CONFIG="$RUN/${BACKENDS[0]}.ini"
export TERRARIUM_HAS_SESSIONS=1

failed=()

part() {
	local name=$1 rc
	shift
	# E2E_ONLY='A|B' runs only the parts whose name contains A or B (while working on them)
	if [ -n "${E2E_ONLY:-}" ]; then
		local pat want=0
		IFS='|' read -ra pats <<<"$E2E_ONLY"
		for pat in "${pats[@]}"; do
			[[ $name == *"$pat"* ]] && want=1
		done
		[ $want -eq 1 ] || return 0
	fi
	section "$name"
	local t0=$SECONDS
	"$@"
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "e2e: $name passed ($((SECONDS - t0)) s)"
	else
		echo "e2e: $name FAILED (exit $rc, $((SECONDS - t0)) s)" >&2
		failed+=("$name")
	fi
}

# nginx's own errors (nginx/server.conf.in): JSON envelope, status kept, request-id header equal
# to the body's request_id, x-should-retry. The API's errors are the cases' business.
resp_header() { # NAME: a header of the last check_nginx_error response
	tr -d '\r' <"$RUN/check.headers" | sed -n "s/^$1: //Ip" | tail -n 1
}

# Check the response in $RUN/check.headers + check.body: STATUS, JSON envelope of TYPE, request-id
# header equal to the body's request_id, x-should-retry RETRY.
check_nginx_response() { # NAME STATUS TYPE RETRY GOT
	local name=$1 want=$2 type=$3 retry=$4 got=$5 body rid
	body=$(cat "$RUN/check.body" 2>/dev/null)
	rid=$(resp_header request-id)
	if [ "$got" = "$want" ] &&
		[ "$(resp_header content-type)" = application/json ] &&
		[ "$(resp_header x-should-retry)" = "$retry" ] &&
		[[ $rid =~ ^req_[0-9A-Za-z]{24}$ ]] &&
		jq -e --arg t "$type" --arg rid "$rid" \
			'.type == "error" and .error.type == $t and (.error.message | length > 0)
			 and .request_id == $rid' <<<"$body" >/dev/null 2>&1; then
		echo "ok   $name"
		return 0
	fi
	echo "FAIL $name: status $got (want $want), request-id '$rid', body: ${body:0:300}"
	tr -d '\r' <"$RUN/check.headers" | sed 's/^/     /'
	return 1
}

check_nginx_error() { # NAME STATUS TYPE RETRY CURL-ARGS...
	local name=$1 want=$2 type=$3 retry=$4 got
	shift 4
	got=$(curl -sS -o "$RUN/check.body" -D "$RUN/check.headers" -w '%{http_code}' "$@") || got=000
	check_nginx_response "$name" "$want" "$type" "$retry" "$got"
}

# Send a request written byte for byte (what curl cannot send) on a connection of its own:
# REQUEST is printf'd with \r\n line ends already in it. What came back is in $RUN/check.raw,
# split into check.headers and check.body; the status is 124 when the server kept the
# connection open for 5 s.
send_raw() { # URL REQUEST
	local hostport=${1#http://} rc
	(
		exec 3<>"/dev/tcp/${hostport%:*}/${hostport#*:}" || exit 1
		printf '%b' "$2" >&3
		timeout 5 cat <&3
	) >"$RUN/check.raw" 2>/dev/null
	rc=$?
	sed -n '1,/^\r*$/p' "$RUN/check.raw" >"$RUN/check.headers"
	sed '1,/^\r*$/d' "$RUN/check.raw" >"$RUN/check.body"
	return "$rc"
}

# check_nginx_error for a request sent by send_raw.
check_nginx_raw() { # NAME STATUS TYPE RETRY URL REQUEST
	local got
	send_raw "$5" "$6"
	got=$(head -1 "$RUN/check.raw" | cut -d' ' -f2)
	check_nginx_response "$1" "$2" "$3" "$4" "$got"
}

check_nginx_errors() {
	local rc=0
	head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$RUN/big.body"
	check_nginx_error "413 for a 2 MiB body" 413 request_too_large false \
		-X POST "$TERRARIUM_URL/v1/environments" -H "x-api-key: $KEY" \
		-H 'content-type: application/json' --data-binary @"$RUN/big.body" || rc=1
	check_nginx_error "502 when no API listens" 502 api_error true \
		--unix-socket "$SOCK_ABSENT" "$URL_SOCK/v1/environments" -H "x-api-key: $KEY" || rc=1
	check_nginx_error "400 for a malformed request" 400 invalid_request_error false \
		"$TERRARIUM_URL/v1/environments/%zz" || rc=1
	# every other status nginx answers by itself (nginx/server.conf.in)
	check_nginx_error "405 for TRACE" 405 invalid_request_error false -X TRACE \
		"$TERRARIUM_URL/v1/environments" || rc=1
	check_nginx_raw "405 for CONNECT" 405 invalid_request_error false "$TERRARIUM_URL" \
		'CONNECT / HTTP/1.1\r\nHost: x\r\n\r\n' || rc=1
	check_nginx_error "501 for Transfer-Encoding: gzip" 501 invalid_request_error false \
		-X POST "$TERRARIUM_URL/v1/environments" -H "x-api-key: $KEY" \
		-H 'Transfer-Encoding: gzip' --data-binary x || rc=1
	check_nginx_raw "505 for an HTTP/2.0 request line" 505 invalid_request_error false \
		"$TERRARIUM_URL" 'GET /v1/environments HTTP/2.0\r\nHost: x\r\n\r\n' || rc=1
	check_nginx_raw "505 for an HTTP/3.0 request line" 505 invalid_request_error false \
		"$TERRARIUM_URL" 'GET /v1/environments HTTP/3.0\r\nHost: x\r\n\r\n' || rc=1
	# nginx never answers 411 (it has read chunked bodies since 1.3.9; docs/limits.md): a POST
	# with neither Content-Length nor Transfer-Encoding has no body and reaches the API
	check_nginx_raw "no 411: a POST without a length reaches the API" 400 invalid_request_error \
		false "$TERRARIUM_URL" "POST /v1/environments HTTP/1.1\r\nHost: x\r\nx-api-key: $KEY\r\nanthropic-beta: managed-agents-2026-04-01\r\ncontent-type: application/json\r\nConnection: close\r\n\r\n" || rc=1
	check_nginx_raw "400 for HTTP/1.0 with Transfer-Encoding" 400 invalid_request_error false \
		"$TERRARIUM_URL" 'POST /v1/environments HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n' || rc=1
	# (no body after the headers: nginx answers from the headers and closes; body bytes it never
	# read would make its close a reset that can discard the answer before the client reads it)
	check_nginx_error "414 for a 20 KiB URI" 414 invalid_request_error false \
		"$TERRARIUM_URL/v1/environments?x=$(head -c 20480 /dev/zero | tr '\0' a)" || rc=1
	check_nginx_error "400 for a 20 KiB header" 400 invalid_request_error false \
		"$TERRARIUM_URL/v1/environments" -H "x-big: $(head -c 20480 /dev/zero | tr '\0' a)" || rc=1
	# rate limit per key (1 request/minute, bursts of 2): 3 pass, then 429 with retry-after;
	# another key is unaffected.
	local codes
	# ten at once through xargs, which waits for its own children only
	seq 10 | xargs -P 10 -I{} curl -s -o /dev/null -w '%{http_code}\n' \
		--unix-socket "$SOCK_LIMITED" "$URL_SOCK/healthz" -H "x-api-key: $KEY" >"$RUN/ratelimit.codes"
	codes=$(sort "$RUN/ratelimit.codes" | uniq -c | tr -s ' \n' ' ')
	if grep -q 429 "$RUN/ratelimit.codes" && grep -q 200 "$RUN/ratelimit.codes" &&
		! grep -vqE '^(200|429)$' "$RUN/ratelimit.codes"; then
		echo "ok   rate limit: $codes"
	else
		echo "FAIL rate limit: statuses $codes (want some 200, then 429)"
		rc=1
	fi
	check_nginx_error "429 beyond the rate limit" 429 rate_limit_error true \
		--unix-socket "$SOCK_LIMITED" "$URL_SOCK/healthz" -H "x-api-key: $KEY" || rc=1
	if [ "$(resp_header retry-after)" = 1 ]; then echo "ok   429 carries retry-after: 1"; else
		echo "FAIL 429 without retry-after"
		rc=1
	fi
	check_nginx_error "another key is not limited by the first key's rate" 404 not_found_error \
		false --unix-socket "$SOCK_LIMITED" "$URL_SOCK/v1/nothing-here" -H "x-api-key: $KEY2" \
		-H "anthropic-beta: managed-agents-2026-04-01" || rc=1
	# one bucket per key whatever header carries it: x-api-key three times, then the same key
	# as "Authorization: bearer" is over the limit
	for _ in 1 2 3; do
		curl -s -o /dev/null --unix-socket "$SOCK_LIMITED" "$URL_SOCK/healthz" \
			-H "x-api-key: $KEY_ACCT2"
	done
	check_nginx_error "the same key as a Bearer credential shares its bucket" 429 rate_limit_error \
		true --unix-socket "$SOCK_LIMITED" "$URL_SOCK/healthz" \
		-H "Authorization: bearer $KEY_ACCT2" || rc=1
	# heavy budget (1/minute, bursts of 1): two pages of 1000, then the third is refused while
	# pages of 100 of the same key still pass
	local heavy=()
	for _ in 1 2 3; do
		heavy+=("$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK_HEAVY" \
			"$URL_SOCK/v1/environments?limit=1000" -H "x-api-key: $KEY2" \
			-H "anthropic-beta: managed-agents-2026-04-01")")
	done
	if [ "${heavy[*]}" = "200 200 429" ]; then echo "ok   heavy budget: ${heavy[*]}"; else
		echo "FAIL heavy budget: limit=1000 three times answered ${heavy[*]} (want 200 200 429)"
		rc=1
	fi
	check_nginx_error "an encoded limit spends the heavy budget too" 429 rate_limit_error true \
		--unix-socket "$SOCK_HEAVY" "$URL_SOCK/v1/environments?limit=%31000" -H "x-api-key: $KEY2" \
		-H "anthropic-beta: managed-agents-2026-04-01" || rc=1
	local light
	light=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK_HEAVY" \
		"$URL_SOCK/v1/environments?limit=100" -H "x-api-key: $KEY2" \
		-H "anthropic-beta: managed-agents-2026-04-01")
	if [ "$light" = 200 ]; then echo "ok   light pages pass while the heavy budget is spent"; else
		echo "FAIL a page of 100 answered $light while the heavy budget was spent (want 200)"
		rc=1
	fi
	check_nginx_error "a limit over 100 that nginx cannot read is refused by the API" 400 \
		invalid_request_error false --unix-socket "$SOCK_HEAVY" \
		"$URL_SOCK/v1/environments?%6Cimit=1000" \
		-H "x-api-key: $KEY2" -H "anthropic-beta: managed-agents-2026-04-01" || rc=1
	# a refused request writes no error-log line (a flood of them filled the disk); checked
	# before the logs rotate, with the 429s above in the file
	if grep -q "limiting requests" "$RUN/nginx-error.log"; then
		echo "FAIL 429s are written to the error log"
		rc=1
	else
		echo "ok   429s write no error-log line"
	fi
	# the logs rotate with the configuration in the runtime directory, and nginx reopens them
	if logrotate -f -s "$RUN/logrotate.state" "$RUN/logrotate.conf" 2>"$RUN/logrotate.err" &&
		[ -s "$RUN/nginx-access.log.1" ]; then
		local n=0
		while [ "$n" -lt 30 ] && [ ! -s "$RUN/nginx-access.log" ]; do
			curl -s -o /dev/null "$TERRARIUM_URL/healthz"
			sleep 0.1
			n=$((n + 1))
		done
		if [ -s "$RUN/nginx-access.log" ]; then echo "ok   logrotate rotated the logs, nginx reopened them"; else
			echo "FAIL nginx did not reopen its access log after logrotate"
			rc=1
		fi
	else
		echo "FAIL logrotate: $(cat "$RUN/logrotate.err")"
		rc=1
	fi
	return "$rc"
}

# nginx's own timeouts and failures, on a second nginx that nginx_start configures from the same
# templates with the client and FastCGI timeouts cut from 10 s and 30 s to 1 s, in front of
# SHORT/stall.sock: a socket that takes connections and never answers (socat -u reads what
# nginx sends and writes nothing back).
SHORT=$RUN/short
short_timeouts() { # RUN: the NGINX_CONF_EDIT of the second nginx
	sed -i -E 's/^(fastcgi_read_timeout) 30s;$/\1 1s;/' "$1/nginx-fastcgi.conf.new" &&
		sed -i -E 's/^(\s*client_(header|body)_timeout) 10s;$/\1 1s;/' "$1/nginx.conf.new" || return 1
	if [ "$(cat "$1/nginx-fastcgi.conf.new" "$1/nginx.conf.new" |
		grep -cE '^\s*(fastcgi_read|client_header|client_body)_timeout 1s;$')" != 3 ]; then
		echo "e2e: the timeouts of nginx/fastcgi.conf or terrarium.conf.in changed: update short_timeouts" >&2
		return 1
	fi
}
short_stop() {
	local pid
	[ -d "$SHORT" ] || return 0
	nginx_stop "$SHORT"
	if pid=$(stack_running "$SHORT/socat.pid" socat); then kill "$pid"; fi
	rm -f "$SHORT/socat.pid" "$SHORT/stall.sock"
}

# A request whose headers or body stop coming: nginx logs a 408 and closes the connection
# without sending anything (docs/limits.md). Anything it did send would have to be the envelope.
check_nginx_408() { # NAME URL REQUEST
	local rc
	send_raw "$2" "$3"
	rc=$?
	if [ "$rc" = 124 ]; then
		echo "FAIL $1: the connection was still open after 5 s (the client timeouts are 1 s)"
		return 1
	fi
	if [ -s "$RUN/check.raw" ]; then
		check_nginx_response "$1" 408 invalid_request_error true \
			"$(head -1 "$RUN/check.raw" | cut -d' ' -f2)"
		return
	fi
	if tail -n 1 "$SHORT/nginx-access.log" | grep -q '" 408 0 '; then
		echo "ok   $1: nginx logged 408 and closed the connection without a response"
	else
		echo "FAIL $1: the connection closed, but nginx did not log a 408:" \
			"$(tail -n 1 "$SHORT/nginx-access.log")"
		return 1
	fi
}

check_nginx_failures() {
	local rc=0 url port attempt started=0 chunk req
	stack_prepare "$SHORT" || return 1
	socat -u "UNIX-LISTEN:$SHORT/stall.sock,mode=0666,fork" OPEN:/dev/null,wronly \
		2>>"$SHORT/socat.log" &
	echo $! >"$SHORT/socat.pid"
	for attempt in 1 2 3; do
		port=$(stack_free_port "${ports[@]}") || return 1
		if NGINX_CONF_EDIT=short_timeouts nginx_start "$SHORT" "$port:stall"; then
			started=1
			break
		fi
		nginx_stop "$SHORT"
		echo "e2e: the second nginx did not start (attempt $attempt)" >&2
	done
	[ "$started" = 1 ] && [ -S "$SHORT/stall.sock" ] || return 1
	url="http://127.0.0.1:$port"
	check_nginx_error "504 when the API does not answer in time (fastcgi_read_timeout)" 504 \
		overloaded_error true "$url/v1/environments" -H "x-api-key: $KEY" || rc=1
	check_nginx_408 "408: headers that stop coming (client_header_timeout)" "$url" \
		'GET /v1/environments HTTP/1.1\r\nHost: x\r\n' || rc=1
	check_nginx_408 "408: a body that stops coming (client_body_timeout)" "$url" \
		'POST /v1/environments HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\nContent-Length: 10\r\n\r\n{"a' || rc=1
	# 500: nginx's own failure. A chunked body of small chunks fills nginx's 1 MiB body buffer
	# with chunk headers before its 1 MiB of data (so it is written to nginx-tmp/body), and the
	# directory is closed to nginx's workers as a full or broken disk would be.
	chunk=$(head -c 1000 /dev/zero | tr '\0' a)
	req='POST /v1/environments HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n'
	req+='Transfer-Encoding: chunked\r\n\r\n'
	req+=$(for _ in $(seq 1048); do printf '3e8\\r\\n%s\\r\\n' "$chunk"; done)
	req+='0\r\n\r\n'
	chmod 000 "$SHORT/nginx-tmp/body" || rc=1
	check_nginx_raw "500 when nginx cannot write a request body to its temp directory" 500 \
		api_error true "$url" "$req" || rc=1
	chmod 700 "$SHORT/nginx-tmp/body" || rc=1
	short_stop || rc=1
	return "$rc"
}

part "nginx error pages" check_nginx_errors
part "nginx timeouts and failures" check_nginx_failures
# first, while the only due intents are its own
part "reconciler (tests/reconciler/run.sh)" bash "$ROOT/tests/reconciler/run.sh"
part "sandbox backends: conformance + opensandbox end to end (tests/backends/run.sh)" \
	bash "$ROOT/tests/backends/run.sh"
if [ -n "${TERRARIUM_URL_srt:-}" ]; then
	part "srt backend (tests/srt/run.sh)" bash "$ROOT/tests/srt/run.sh"
fi
part "HTTP cases (e2e-runner tests/cases)" "$BUILD/e2e-runner" "$ROOT/tests/cases"
if [ -f "$ROOT/tests/sdk/run.sh" ]; then
	part "official SDK (tests/sdk/run.sh)" bash "$ROOT/tests/sdk/run.sh"
fi
part "event streams: framing, fallback, kill -9, 1,000 streams (tests/events/run.sh)" \
	bash "$ROOT/tests/events/run.sh"
part "self-hosted work queue through the SDK's WorkPoller (tests/work/run.sh)" \
	bash "$ROOT/tests/work/run.sh"
part "the work queue example of docs/work-queue.md (tests/work/example.sh)" \
	bash "$ROOT/tests/work/example.sh"
part "isolation and secrets (tests/security/run.sh)" bash "$ROOT/tests/security/run.sh"
part "vault secrets at rest and the vault key (tests/vaults/run.sh)" bash "$ROOT/tests/vaults/run.sh"
part "MCP servers and vault credentials in the turn (tests/mcp-turn/run.sh)" \
	bash "$ROOT/tests/mcp-turn/run.sh"
part "idempotency keys (tests/idempotency/run.sh)" bash "$ROOT/tests/idempotency/run.sh"
part "create-session races delete/archive-environment (tests/race/race.mjs)" \
	node "$ROOT/tests/race/race.mjs"
if [ -f "$ROOT/tests/seeds/run.sh" ]; then
	part "seed examples (tests/seeds/run.sh)" bash "$ROOT/tests/seeds/run.sh"
fi

# its runners take every pending turn of the database: they run only within the part
part "runtime: runners, the agent toolset, crashes, self-hosted workers (tests/runtime/run.sh)" \
	bash "$ROOT/tests/runtime/run.sh"

# last: it stops and restarts MariaDB
part "faults and serving modes (tests/faults/run.sh)" bash "$ROOT/tests/faults/run.sh"

section "summary"
if [ ${#failed[@]} -ne 0 ]; then
	show_logs
	printf 'e2e: FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "e2e: all parts passed"
exit 0
