#!/usr/bin/env bash
# Sandbox backend drivers: the conformance suite against every driver, then the end-to-end check
# of the OpenSandbox driver through the API and the reconciler.
#
# 1. Conformance (build/test_conformance): for each tests/backends/drivers/NAME.sh, in order.
#    A driver file defines driver_setup DIR, which may start a protocol fake with start_bg (it is
#    stopped by PID at exit) and wait_for, writes the configuration to $CONFIG, and may set
#    $FAKE_LOG to the fake's log ("http://HOST:PORT/__fake/log" or "unix:SOCKET", served at
#    /__fake/log): the fake must have recorded no violations, and an HTTP log also lets the suite
#    check the egress policy sequence. driver_setup returns 2 with $SKIP_REASON to skip (the
#    live-*.sh drivers do when their TERRARIUM_LIVE_* variables are unset). A driver file may
#    also define driver_check DIR, run after the suite (same "N passed, N failed" output) for
#    checks of its own. driver_setup may set DRIVER_AS to a command prefix the suite runs under
#    (srt: `runuser -u USER --` when root). $HERE is this directory. Adding a driver = adding
#    a file.
# 2. End to end (needs tests/e2e/run.sh's stack: TERRARIUM_RUN, TERRARIUM_URL_opensandbox, KEY):
#    an agent with an MCP server, a limited environment with pip packages, a session; one
#    `terrarium-reconciler --once` with backend opensandbox against a fresh fake -> the session
#    is ready, and the fake saw the sidecar policy go to final + registry hosts, then to final.
#    Then a failing install (rescheduling, last_error without the API key) and a teardown.
# 3. The same for e2b, cube and daytona against their fakes (e2e-remote.sh, sourced).
#
# Prints "N passed, N failed"; exits non-zero on any failure. KEEP_BACKENDS_TEST=1 keeps the
# working directory.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${BUILD_DIR:-build}
CONF="$ROOT/$BUILD/test_conformance"
RECON="$ROOT/$BUILD/terrarium-reconciler"
if [ -n "${TERRARIUM_RUN:-}" ]; then
	T="$TERRARIUM_RUN/backends-test"
	rm -rf "$T"
	mkdir -p "$T"
else
	T=$(mktemp -d "${TMPDIR:-/tmp}/terrarium-backends.XXXXXX")
fi
PIDS=()

# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"

cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	if [ "${KEEP_BACKENDS_TEST:-0}" = 1 ]; then
		echo "backends: working directory kept: $T" >&2
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT

start_bg() { # start_bg LOGFILE COMMAND...: run in the background, stopped by PID at exit
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	PIDS+=($!)
}

wait_for() { # wait_for PATH: until it exists (a port file, a socket), at most 10 s
	local i
	for i in $(seq 1 100); do
		[ -s "$1" ] || [ -S "$1" ] && return 0
		sleep 0.1
	done
	echo "backends: $1 did not appear" >&2
	return 1
}

fake_log() { # fake_log LOG: the fake's /__fake/log document
	case "$1" in
	unix:*) curl -sS --max-time 10 --unix-socket "${1#unix:}" http://localhost/__fake/log ;;
	*) curl -sS --max-time 10 "$1" ;;
	esac
}

for bin in "$CONF" "$RECON"; do
	if [ ! -x "$bin" ]; then
		echo "backends: $bin is not built (run make)" >&2
		exit 1
	fi
done
command -v node >/dev/null || {
	echo "backends: node is required for the protocol fakes" >&2
	exit 1
}

# ---- 1. conformance, one driver file at a time ----
for f in "$HERE"/drivers/*.sh; do
	name=$(basename "$f" .sh)
	dir="$T/$name"
	mkdir -p "$dir"
	unset -f driver_setup driver_check
	CONFIG="" FAKE_LOG="" SKIP_REASON=""
	DRIVER_AS=() # driver_setup may name a user to run the suite as (runuser -u USER --)
	# shellcheck source=/dev/null
	. "$f"
	echo "# conformance: $name"
	driver_setup "$dir"
	rc=$?
	if [ $rc -eq 2 ]; then
		echo "skipped: $name ($SKIP_REASON)"
		continue
	fi
	if [ $rc -ne 0 ] || [ ! -f "$CONFIG" ]; then
		not_ok "$name: driver setup"
		[ -f "$dir/fake.log" ] && tail -n 20 "$dir/fake.log"
		continue
	fi
	log_url=""
	case "$FAKE_LOG" in http://*) log_url=$FAKE_LOG ;; esac
	CONFORMANCE_FAKE_LOG=$log_url "${DRIVER_AS[@]}" "$CONF" -c "$CONFIG" -n "$name" \
		>"$dir/conformance.out" 2>&1
	rc=$?
	sed 's/^/    /' "$dir/conformance.out"
	counts=$(tail -n 1 "$dir/conformance.out")
	if [[ $counts =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		passed=$((passed + BASH_REMATCH[1]))
		failed=$((failed + BASH_REMATCH[2]))
		[ $rc -eq 0 ] || [ "${BASH_REMATCH[2]}" -gt 0 ] || not_ok "$name: suite exit status $rc"
	else
		not_ok "$name: the suite did not finish (exit $rc)"
	fi
	# optional driver_check DIR: the driver's own checks past the suite, same output format
	if declare -F driver_check >/dev/null; then
		driver_check "$dir" >"$dir/check.out" 2>&1
		rc=$?
		sed 's/^/    /' "$dir/check.out"
		counts=$(tail -n 1 "$dir/check.out")
		if [[ $counts =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
			passed=$((passed + BASH_REMATCH[1]))
			failed=$((failed + BASH_REMATCH[2]))
			[ $rc -eq 0 ] || [ "${BASH_REMATCH[2]}" -gt 0 ] || not_ok "$name: checks exit status $rc"
		else
			not_ok "$name: the driver checks did not finish (exit $rc)"
		fi
	fi
	if [ -n "$FAKE_LOG" ]; then
		v=$(fake_log "$FAKE_LOG" | jq -c .violations)
		check "$name: the fake recorded no protocol violations ($v)" test "$v" = "[]"
	fi
done

# ---- 2. end to end: API -> intent -> reconciler -> OpenSandbox fake ----
if [ -z "${TERRARIUM_URL_opensandbox:-}" ] || [ -z "${TERRARIUM_RUN:-}" ] || [ -z "${KEY:-}" ]; then
	echo "skipped: end to end (needs tests/e2e/run.sh: TERRARIUM_RUN, TERRARIUM_URL_opensandbox, KEY)"
	echo "$passed passed, $failed failed"
	[ $failed -eq 0 ]
	exit
fi
echo "# end to end: backend opensandbox through the API and the reconciler"
URL=$TERRARIUM_URL_opensandbox
E="$T/e2e"
mkdir -p "$E"

api() { api_to "$URL" "$@"; } # api METHOD PATH [BODY]
provisioning() { # SESSION -> {p: provisioning, s: status}
	api GET "/v1/sessions/$1" | jq -c '{p: .provisioning, s: .status}'
}

head -c 18 /dev/urandom | base64 | tr -d '\n' >"$E/api.key"
start_bg "$E/fake.log" node "$HERE/fake-opensandbox.mjs" --port-file "$E/port" \
	--api-key-file "$E/api.key"
wait_for "$E/port" || exit 1
FAKE="http://127.0.0.1:$(cat "$E/port")"
{
	sed -n '/^\[database\]/,/^$/p' "$TERRARIUM_RUN/local.ini"
	printf '[sandbox]\nbackend = opensandbox\n\n'
	printf '[opensandbox]\nurl = %s\napi_key_file = %s\nimage = python:3.11-slim\ntimeout_seconds = 10\n\n' \
		"$FAKE" "$E/api.key"
	printf '[reconciler]\nbackoff_base_seconds = 0\n\n[log]\nlevel = info\n'
} >"$E/reconciler.ini"

AGENT=$(api POST /v1/agents '{"name":"backends-e2e","model":"claude-sonnet-4-5","mcp_servers":[{"type":"url","name":"docs","url":"https://mcp.example.com/sse"}]}' | jq -r .id)
ENV=$(api POST /v1/environments '{"name":"backends-e2e-limited","config":{"type":"cloud","networking":{"type":"limited","allowed_hosts":["api.example.com"],"allow_mcp_servers":true},"packages":{"pip":["requests"]}}}' | jq -r .id)
SID=$(api POST /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$ENV\"}" | jq -r .id)
check "e2e: agent, limited environment and session created ($AGENT $ENV $SID)" \
	bash -c '[[ $1 != null && $2 == env_* && $3 == sesn_* ]]' _ "$AGENT" "$ENV" "$SID"
check "e2e: session pending before the run" test "$(provisioning "$SID" | jq -r .p.status)" = pending

"$RECON" -c "$E/reconciler.ini" --dry-run >"$E/due.log" 2>&1
others=$(grep -c '^would ' "$E/due.log" | tr -d ' ')
mine=$(grep -c "session $SID " "$E/due.log" | tr -d ' ')
check "e2e: the session's intent is due ($mine of $others due)" test "$mine" = 1
"$RECON" -c "$E/reconciler.ini" --once >"$E/once.log" 2>&1
rc=$?
if [ "$others" -le 1 ]; then
	check "e2e: reconciler --once exits 0" test $rc -eq 0
else
	echo "note: $((others - 1)) other due intents went through the fake too; exit status $rc not checked"
fi
p=$(provisioning "$SID")
check "e2e: session ready ($p)" test "$(jq -r .p.status <<<"$p")" = ready
[ "$(jq -r .p.status <<<"$p")" = ready ] || sed 's/^/    /' "$E/once.log"

LOG=$(fake_log "$FAKE/__fake/log")
SBX=$(jq -r --arg s "$SID" '[.sandboxes[] | select(.name == $s)] | if length == 1 then .[0].id else "none" end' <<<"$LOG")
check "e2e: one sandbox in the fake carries the session's name ($SBX)" test "$SBX" != none
REGISTRIES='["deb.debian.org","security.debian.org","archive.ubuntu.com","security.ubuntu.com","ports.ubuntu.com","snapshot.debian.org","crates.io","index.crates.io","static.crates.io","rubygems.org","index.rubygems.org","api.rubygems.org","proxy.golang.org","sum.golang.org","storage.googleapis.com","registry.npmjs.org","pypi.org","files.pythonhosted.org"]'
want=$(jq -cn --argjson r "$REGISTRIES" '["api.example.com","mcp.example.com"] as $f | [($f + $r | sort), ($f | sort)]')
got=$(jq -c --arg id "$SBX" '.policies[$id] // []' <<<"$LOG")
check "e2e: the sidecar policy went to final + registries, then to final" test "$got" = "$want"
[ "$got" = "$want" ] && echo "    $got"
[ "$got" = "$want" ] || echo "    got  $got"$'\n'"    want $want"
check "e2e: the sandbox was created deny-all (empty allowlist)" \
	test "$(jq -c --arg id "$SBX" '.initialPolicies[$id]' <<<"$LOG")" = "[]"
check "e2e: pip install requests ran in the sandbox" \
	test "$(jq -c --arg id "$SBX" '[.installs[] | select(.sandbox == $id) | .argv[0], .argv[-1]]' <<<"$LOG")" = '["pip","requests"]'
out=$("$RECON" -c "$E/reconciler.ini" --exec "$SID" -- echo "hello from" "'the sandbox'" 2>&1)
check "e2e: --exec runs in the bound sandbox ($out)" test "$out" = "hello from 'the sandbox'"

# a failing install: rescheduling, the cause in last_error, never the credential
ENV_F=$(api POST /v1/environments '{"name":"backends-e2e-failing","config":{"type":"cloud","networking":{"type":"limited","allowed_hosts":["api.example.com"]},"packages":{"pip":["fail-install-pkg"]}}}' | jq -r .id)
SID_F=$(api POST /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$ENV_F\"}" | jq -r .id)
"$RECON" -c "$E/reconciler.ini" --once >"$E/fail.log" 2>&1
check "e2e: a failed install exits non-zero" test $? -ne 0
p=$(provisioning "$SID_F")
check "e2e: failing session rescheduling ($(jq -c '{s, status: .p.status}' <<<"$p"))" \
	test "$(jq -r '.s + " " + .p.status' <<<"$p")" = "rescheduling failed"
err=$(jq -r .p.last_error <<<"$p")
check "e2e: last_error names the manager and keeps the output ($err)" \
	bash -c 'grep -q "pip install: exit status 1" <<<"$1" && grep -q "could not install" <<<"$1"' _ "$err"
check "e2e: the API key is in no last_error and no reconciler log" \
	bash -c '! grep -qF -- "$(cat "$1")" <<<"$2" && ! grep -qF -- "$(cat "$1")" "$3"/*.log' _ "$E/api.key" "$err" "$E"

# teardown: deleting the ready session removes its sandbox
api DELETE "/v1/sessions/$SID" >/dev/null
api DELETE "/v1/sessions/$SID_F" >/dev/null
"$RECON" -c "$E/reconciler.ini" --once >"$E/teardown.log" 2>&1
LOG=$(fake_log "$FAKE/__fake/log")
check "e2e: deleting the session terminated its sandbox" \
	test "$(jq -r --arg id "$SBX" '.sandboxes[] | select(.id == $id) | .state' <<<"$LOG")" = Terminated
check "e2e: the fake's one-time 503 on the first lookup was retried" \
	test "$(jq -c '[.calls[] | select(.method == "GET" and .path == "/v1/sandboxes") | .status][0:2]' <<<"$LOG")" = "[503,200]"
v=$(jq -c .violations <<<"$LOG")
check "e2e: the fake recorded no protocol violations ($v)" test "$v" = "[]"

# ---- 3. end to end for e2b, cube and daytona (their own file) ----
# shellcheck source=e2e-remote.sh
. "$HERE/e2e-remote.sh"

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
