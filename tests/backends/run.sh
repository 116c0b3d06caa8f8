#!/usr/bin/env bash
# Sandbox backend drivers: the conformance suite against every driver, then the end-to-end check
# of the OpenSandbox driver through the API and the reconciler.
#
# 1. Conformance (build/test_conformance): for each tests/backends/drivers/NAME.sh, in order.
#    A driver file defines driver_setup DIR, which may start a protocol fake (start_http_fake, or
#    start_bg and wait_for; stopped by PID at exit), writes the configuration with driver_config
#    (to $CONFIG), and may set $FAKE_LOG to the fake's log ("http://HOST:PORT/__fake/log" or
#    "unix:SOCKET", served at /__fake/log): the fake must have recorded no violations, and an
#    HTTP log also lets the suite check the egress policy sequence. driver_setup returns 2 with
#    $SKIP_REASON to skip (the live-*.sh drivers do, through live_require, when their
#    TERRARIUM_LIVE_* variables are unset). A driver file may also define driver_check DIR, run
#    after the suite, for checks of its own (with check, or remote_extra_check). driver_setup may set DRIVER_AS to a command prefix the suite runs under
#    (srt: `runuser -u USER --` when root). $HERE is this directory. Adding a driver = adding
#    a file.
# 2. End to end (needs tests/e2e/run.sh's stack: TERRARIUM_RUN, TERRARIUM_URL_opensandbox, KEY):
#    an agent with an MCP server, a limited environment with pip packages, a session; one
#    `terrarium-reconciler --once` with backend opensandbox against a fresh fake -> the session
#    is ready, and the fake saw the sidecar policy go to final + registry hosts, then to final.
#    Then a failing install (rescheduling, last_error without the API key), a teardown (execd
#    and the sidecar, inside the sandbox behind the server's proxy, never saw the key), and the
#    sweep (sweep_e2e): a sandbox of ours that no session owns is removed, others are kept.
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
	for _ in $(seq 1 100); do
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

# ini_backend BACKEND [KEY=VALUE...]: the [sandbox] section naming BACKEND, then a [BACKEND]
# section with the pairs; a key written sandbox.KEY goes to [sandbox] instead
ini_backend() {
	local b=$1 kv own=()
	shift
	printf '[sandbox]\nbackend = %s\n' "$b"
	for kv in "$@"; do
		case "$kv" in
		sandbox.*) kv=${kv#sandbox.} && printf '%s = %s\n' "${kv%%=*}" "${kv#*=}" ;;
		*) own+=("$kv") ;;
		esac
	done
	[ ${#own[@]} -eq 0 ] && return 0
	printf '[%s]\n' "$b"
	for kv in "${own[@]}"; do
		printf '%s = %s\n' "${kv%%=*}" "${kv#*=}"
	done
}

driver_config() { # DIR BACKEND [KEY=VALUE...]: the suite's configuration, in $CONFIG
	CONFIG=$1/conformance.ini
	ini_backend "${@:2}" >"$CONFIG"
}

# reconciler_config DIR BACKEND [KEY=VALUE...]: DIR/reconciler.ini, the e2e stack's database
reconciler_config() {
	{
		sed -n '/^\[database\]/,/^$/p' "$TERRARIUM_RUN/local.ini"
		ini_backend "${@:2}"
		printf '\n[reconciler]\nbackoff_base_seconds = 0\n\n[log]\nlevel = info\n'
	} >"$1/reconciler.ini"
}

# start_http_fake DIR SCRIPT KEY-PREFIX [ARGS...]: a protocol fake on a loopback port with a new
# API key in DIR/api.key; sets FAKE_URL and FAKE_LOG
start_http_fake() {
	local dir=$1 script=$2 prefix=$3
	shift 3
	printf '%s%s\n' "$prefix" "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$dir/api.key"
	start_bg "$dir/fake.log" node "$HERE/$script" --port-file "$dir/port" \
		--api-key-file "$dir/api.key" "$@" || return 1
	wait_for "$dir/port" || return 1
	FAKE_URL="http://127.0.0.1:$(cat "$dir/port")"
	FAKE_LOG="$FAKE_URL/__fake/log"
}

live_require() { # VAR...: 0 when all are set, else 1 with $SKIP_REASON naming them
	local v
	for v in "$@"; do
		if [ -z "${!v:-}" ]; then
			SKIP_REASON="$* must be set"
			return 1
		fi
	done
}

# count_run NAME OUT COMMAND...: runs COMMAND (output in OUT, shown indented), whose last line is
# "N passed, N failed", and adds those counts
count_run() {
	local name=$1 out=$2 rc counts
	shift 2
	"$@" >"$out" 2>&1
	rc=$?
	sed 's/^/    /' "$out"
	counts=$(tail -n 1 "$out")
	if [[ $counts =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		passed=$((passed + BASH_REMATCH[1]))
		failed=$((failed + BASH_REMATCH[2]))
		[ $rc -eq 0 ] || [ "${BASH_REMATCH[2]}" -gt 0 ] || not_ok "$name: exit status $rc"
	else
		not_ok "$name: did not finish (exit $rc)"
	fi
}

# inside_check WHAT LOG: the fake's log LOG (JSON) says that what listens inside its sandboxes
# (execd and the egress sidecar; Daytona's daemon) received calls, none carrying the API key
inside_check() {
	check "$1: nothing listening inside a sandbox saw the API key ($(jq -c .inside <<<"$2"))" \
		test "$(jq -r '.inside | .calls > 0 and .keySeen == 0' <<<"$2")" = true
}

remote_extra_check() { # the HTTP drivers' checks past the suite (tests/backends/remote_extra.c)
	count_run "$name: driver checks" "$dir/check.out" \
		"$ROOT/$BUILD/test_remote_extra" -c "$CONFIG" -f "$FAKE_URL"
}

# once_ready WHAT DIR SID: one `--once` with DIR/reconciler.ini makes session SID ready (its exit
# status counts only when SID's intent was the only one due)
once_ready() {
	local what=$1 dir=$2 sid=$3 due rc p
	"$RECON" -c "$dir/reconciler.ini" --dry-run >"$dir/due.log" 2>&1
	due=$(grep -c '^would ' "$dir/due.log" | tr -d ' ')
	check "$what: the session's intent is due ($(grep -c "session $sid " "$dir/due.log") of $due due)" \
		grep -q "session $sid " "$dir/due.log"
	"$RECON" -c "$dir/reconciler.ini" --once >"$dir/once.log" 2>&1
	rc=$?
	if [ "$due" -le 1 ]; then
		check "$what: reconciler --once exits 0" test $rc -eq 0
	else
		echo "note: $((due - 1)) other due intents went through the fake too; exit status $rc not checked"
	fi
	p=$(provisioning "$sid")
	check "$what: session ready ($p)" test "$(jq -r .p.status <<<"$p")" = ready
	[ "$(jq -r .p.status <<<"$p")" = ready ] || sed 's/^/    /' "$dir/once.log"
}

# once_failing WHAT DIR SID STATUS OUTPUT: one `--once` fails session SID's pip install: the run
# exits non-zero, the session is rescheduling, last_error has "pip install: exit status STATUS"
# and OUTPUT, and DIR/api.key is in no last_error and no log of DIR
once_failing() {
	local what=$1 dir=$2 sid=$3 p err
	"$RECON" -c "$dir/reconciler.ini" --once >"$dir/fail.log" 2>&1
	check "$what: a failed install exits non-zero" test $? -ne 0
	p=$(provisioning "$sid")
	check "$what: failing session rescheduling ($(jq -c '{s, status: .p.status}' <<<"$p"))" \
		test "$(jq -r '.s + " " + .p.status' <<<"$p")" = "rescheduling failed"
	err=$(jq -r .p.last_error <<<"$p")
	check "$what: last_error names the manager and keeps the output ($err)" \
		bash -c 'grep -q "pip install: exit status $2" <<<"$1" && grep -q "$3" <<<"$1"' _ "$err" "$4" "$5"
	check "$what: the API key is in no last_error and no reconciler log" \
		bash -c '! grep -qF -- "$(cat "$1")" <<<"$2" && ! grep -qF -- "$(cat "$1")" "$3"/*.log' _ "$dir/api.key" "$err" "$dir"
}

sql() { db_query "$TERRARIUM_RUN" "$1"; } # the e2e stack's database

# sweep_e2e WHAT DIR LOG-URL ALIVE-JQ: the sweep of sandboxes no session owns, through the
# reconciler of DIR and its fake (LOG-URL: its /__fake/log; ALIVE-JQ: a jq filter of that log,
# given $id, answering whether sandbox $id still exists). Three sessions of an unrestricted
# environment without packages are made ready: one while the database carried another
# deployment id (another stack on the same service), whose rows then go; one whose rows are
# deleted behind the API's back; one left alone. The next run removes the second's sandbox
# only, and logs it.
sweep_e2e() {
	local what=$1 dir=$2 log_url=$3 alive=$4 env mine live orphan other sb_live sb_orphan sb_other
	local log removed
	env=$(api "$URL" POST /v1/environments "{\"name\":\"sweep-$what\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"}}}" | jq -r .id)
	mine=$(sql "SELECT LOWER(HEX(secret)) FROM server_secrets WHERE name = 'deployment'")
	check "$what sweep: the database has a deployment id ($mine)" test "${#mine}" -eq 32
	other=$(api "$URL" POST /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$env\"}" | jq -r .id)
	sql "UPDATE server_secrets SET secret = UNHEX('0123456789abcdef0123456789abcdef') WHERE name = 'deployment'"
	once_ready "$what sweep: another deployment's session" "$dir" "$other"
	sql "UPDATE server_secrets SET secret = UNHEX('$mine') WHERE name = 'deployment'"
	live=$(api "$URL" POST /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$env\"}" | jq -r .id)
	orphan=$(api "$URL" POST /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$env\"}" | jq -r .id)
	once_ready "$what sweep: a session" "$dir" "$live"
	check "$what sweep: another session" test "$(provisioning "$orphan" | jq -r .p.status)" = ready
	sb_live=$(sql "SELECT sandbox_id FROM session_sandboxes WHERE session_id = '$live'")
	sb_orphan=$(sql "SELECT sandbox_id FROM session_sandboxes WHERE session_id = '$orphan'")
	sb_other=$(sql "SELECT sandbox_id FROM session_sandboxes WHERE session_id = '$other'")
	sql "DELETE FROM provisioning_intents WHERE session_id IN ('$orphan', '$other');
		DELETE FROM session_sandboxes WHERE session_id IN ('$orphan', '$other');
		DELETE FROM sessions WHERE id IN ('$orphan', '$other')"
	"$RECON" -c "$dir/reconciler.ini" --once >"$dir/sweep.log" 2>&1
	log=$(fake_log "$log_url")
	check "$what sweep: the sandbox whose session's rows were deleted is removed ($sb_orphan)" \
		test "$(jq --arg id "$sb_orphan" "$alive" <<<"$log")" = false
	check "$what sweep: its removal is logged" \
		grep -q "sweep: removed sandbox $sb_orphan: no session owns it (made for $orphan)" "$dir/sweep.log"
	removed=$(grep -c "sweep: removed" "$dir/sweep.log")
	check "$what sweep: nothing else was removed ($removed removals)" test "$removed" -eq 1
	check "$what sweep: another deployment's sandbox is kept ($sb_other)" \
		test "$(jq --arg id "$sb_other" "$alive" <<<"$log")" = true
	check "$what sweep: the live session's sandbox is kept ($sb_live)" \
		test "$(jq --arg id "$sb_live" "$alive" <<<"$log")" = true
	api "$URL" DELETE "/v1/sessions/$live" >/dev/null
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
	count_run "$name: suite" "$dir/conformance.out" \
		env CONFORMANCE_FAKE_LOG="$log_url" "${DRIVER_AS[@]}" "$CONF" -c "$CONFIG" -n "$name"
	# optional driver_check DIR: the driver's own checks past the suite
	if declare -F driver_check >/dev/null; then
		driver_check "$dir"
	fi
	if [ -n "$FAKE_LOG" ]; then
		v=$(fake_log "$FAKE_LOG" | jq -c .violations)
		check "$name: the fake recorded no protocol violations ($v)" test "$v" = "[]"
	fi
done

# ---- 2. end to end: API -> intent -> reconciler -> OpenSandbox fake ----
if [ -z "${TERRARIUM_URL_opensandbox:-}" ] || [ -z "${TERRARIUM_RUN:-}" ] || [ -z "${KEY:-}" ]; then
	echo "skipped: end to end (needs tests/e2e/run.sh: TERRARIUM_RUN, TERRARIUM_URL_opensandbox, KEY)"
	check_summary
	exit
fi
echo "# end to end: backend opensandbox through the API and the reconciler"
URL=$TERRARIUM_URL_opensandbox
E="$T/e2e"
mkdir -p "$E"

provisioning() { # SESSION -> {p: provisioning, s: status}
	api "$URL" GET "/v1/sessions/$1" | jq -c '{p: .provisioning, s: .status}'
}
# env_session ENV-BODY: an environment of ENV-BODY and a session of $AGENT in it; prints
# "ENV-ID SESSION-ID" (null for a create that failed)
env_session() {
	local env
	env=$(api "$URL" POST /v1/environments "$1" | jq -r .id)
	echo "$env $(api "$URL" POST /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$env\"}" | jq -r .id)"
}
# exec_hello NAME DIR SESSION: `--exec` (DIR/reconciler.ini) runs a command in the session's
# bound sandbox and hands back its output, quoting kept
exec_hello() {
	local out
	out=$("$RECON" -c "$2/reconciler.ini" --exec "$3" -- echo "hello from" "'the sandbox'" 2>&1)
	check "$1: --exec runs in the bound sandbox ($out)" test "$out" = "hello from 'the sandbox'"
}
# teardown_sessions DIR SESSION...: the sessions deleted through the API, then one `--once` run
# (DIR/reconciler.ini, log DIR/teardown.log) that removes their sandboxes
teardown_sessions() {
	local dir=$1 s
	shift
	for s in "$@"; do
		api "$URL" DELETE "/v1/sessions/$s" >/dev/null
	done
	"$RECON" -c "$dir/reconciler.ini" --once >"$dir/teardown.log" 2>&1
}

start_http_fake "$E" fake-opensandbox.mjs "" || exit 1
FAKE=$FAKE_URL
reconciler_config "$E" opensandbox url="$FAKE" api_key_file="$E/api.key" image=python:3.11-slim \
	timeout_seconds=10

AGENT=$(api "$URL" POST /v1/agents '{"name":"backends-e2e","model":"claude-sonnet-4-5","mcp_servers":[{"type":"url","name":"docs","url":"https://mcp.example.com/sse"}]}' | jq -r .id)
read -r ENV SID <<<"$(env_session '{"name":"backends-e2e-limited","config":{"type":"cloud","networking":{"type":"limited","allowed_hosts":["api.example.com"],"allow_mcp_servers":true},"packages":{"pip":["requests"]}}}')"
check "e2e: agent, limited environment and session created ($AGENT $ENV $SID)" \
	bash -c '[[ $1 != null && $2 == env_* && $3 == sesn_* ]]' _ "$AGENT" "$ENV" "$SID"
check "e2e: session pending before the run" test "$(provisioning "$SID" | jq -r .p.status)" = pending

once_ready e2e "$E" "$SID"

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
exec_hello e2e "$E" "$SID"

# a failing install: rescheduling, the cause in last_error, never the credential
read -r _ SID_F <<<"$(env_session '{"name":"backends-e2e-failing","config":{"type":"cloud","networking":{"type":"limited","allowed_hosts":["api.example.com"]},"packages":{"pip":["fail-install-pkg"]}}}')"
once_failing e2e "$E" "$SID_F" 1 "could not install"

# teardown: deleting the ready session removes its sandbox
teardown_sessions "$E" "$SID" "$SID_F"
LOG=$(fake_log "$FAKE/__fake/log")
check "e2e: deleting the session terminated its sandbox" \
	test "$(jq -r --arg id "$SBX" '.sandboxes[] | select(.id == $id) | .state' <<<"$LOG")" = Terminated
check "e2e: the fake's one-time 503 on the first lookup was retried" \
	test "$(jq -c '[.calls[] | select(.method == "GET" and .path == "/v1/sandboxes") | .status][0:2]' <<<"$LOG")" = "[503,200]"
v=$(jq -c .violations <<<"$LOG")
check "e2e: the fake recorded no protocol violations ($v)" test "$v" = "[]"
inside_check e2e "$LOG"

sweep_e2e e2e "$E" "$FAKE/__fake/log" '[.sandboxes[] | select(.id == $id and .state != "Terminated")] | length == 1'
v=$(fake_log "$FAKE/__fake/log" | jq -c .violations)
check "e2e: the fake recorded no protocol violations in the sweep ($v)" test "$v" = "[]"

# ---- 3. end to end for e2b, cube and daytona (their own file) ----
# shellcheck source=e2e-remote.sh
. "$HERE/e2e-remote.sh"

check_summary
