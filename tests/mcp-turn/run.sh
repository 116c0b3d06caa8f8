#!/usr/bin/env bash
# MCP servers and vault credentials in the turn (docs/runner.md "MCP servers", docs/vaults.md),
# end to end against the stack of tests/e2e/run.sh: its API (the "local" backend) and MariaDB,
# with what this part starts on loopback and stops by PID:
#   - the MCP test server on the official TypeScript SDK (tests/mcp/server.mjs: /mcp-auth wants
#     a random bearer, its GET /__log says what it saw, never the token);
#   - the scripted fake model (tests/fake-model/fake-model.mjs);
#   - terrarium-runner on the stack's configuration plus [model] base_url (the fake),
#     [runner] lease_seconds and mcp_call_timeout_seconds of a few seconds (RUN/mcp-turn.ini).
# tests/mcp-turn/turn.mjs drives it through the unchanged official SDK (vaults, credentials,
# agents, sessions, their events sent, streamed and listed):
#   allow        agent.mcp_tool_use (ask) -> requires_action -> allow -> agent.mcp_tool_result
#                with the sum -> agent.message -> end_turn; the stream carries the list's events
#   deny         the model gets an error result with the deny_message; the server saw no call
#   wrong / no credential, unreachable server: session.error mcp_authentication_failed_error /
#                mcp_connection_failed_error naming the server, the turn goes on without it
#   hang         the call times out after mcp_call_timeout_seconds, the server gets a cancel, the
#                model an error result, the turn ends
#   echo         a tool echoing the Authorization it got: the model sees "Bearer ***"
#   collide      a custom tool named as an MCP tool would be: the MCP tool's other name is the one
#                the model's history calls it by
#   env          the bash tool's `env` in the session's sandbox holds no token
#   demo         the README's walk-through (tests/mcp-turn/demo.mjs), its output as the README says
#   kill -9      of the runner while a call hangs at the server: the next runner ends the turn
#                with an error result saying the outcome is unknown; the server counted one call
#   local        a runner without [runner] mcp_local_addresses: the server (on loopback) is
#                refused, a session.error mcp_connection_failed_error names the address and the
#                setting, nothing reaches the server
#   secrets      no token in any API answer (vaults and credentials retrieved and listed), event,
#                request to the model; then `grep -r` over the run directory (logs of the API,
#                the runner, nginx, the fakes; MariaDB's general log, on for this part, the
#                stack's API restarted so that its statements show their values there; the
#                database's files, binary ones too) finds neither token, while a marker stored
#                in clear beside them is found in the database's files
# A vault of another workspace at session create (404) is tests/cases/sessions/
# create-vault-ids-other-workspace and tests/sdk/vaults.test.mjs ("another workspace").
# Needs (from tests/e2e/run.sh): TERRARIUM_RUN, TERRARIUM_URL, TERRARIUM_CONFIG, KEY.
# Last line: "N passed, N failed".
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
# shellcheck source=tests/lib-npm.sh
. "$ROOT/tests/lib-npm.sh"
e2e_part
CONFIG=${TERRARIUM_CONFIG:?}
HERE=$ROOT/tests/mcp-turn
NAME=mcp-turn             # RUN/NAME.ini: the runner's configuration
API_NAME=$(basename "$CONFIG" .ini) # the stack's API supervisor behind URL (restarted)
LEASE_S=5                 # [runner] lease_seconds: a killed runner's turn is taken up after it
CALL_TIMEOUT_S=5          # [runner] mcp_call_timeout_seconds
START_S=10                # a fake server writes its port within this
STOP_S=10                 # a killed runner's turn processes are gone within this
DEMO_S=60                 # the README's walk-through ends within this

W=$RUN/mcp-turn           # the fakes' logs: searched for the tokens with everything else
T=$(mktemp -d) || exit 1  # what the driver's halves share (no secret)
mkdir -p "$W" || exit 1
PIDS=()
GENERAL_LOG=$RUN/db/mcp-turn-general.log
cleanup() {
	local p
	runner_stop "$RUN" >/dev/null 2>&1
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	e2e_sql "SET GLOBAL general_log = 0" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

rand() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
TAG=$(rand | head -c 12)
TOKEN=$(rand)$(rand) # the bearer /mcp-auth wants, in the vault
WRONG=$(rand)$(rand) # another one, in a second vault

# start_fake NAME PORT_FILE CMD...: a fake server in the background, its output in W/NAME.log;
# its PID joins PIDS. 1 when it wrote no port within START_S.
start_fake() {
	local name=$1 port_file=$2 n
	shift 2
	"$@" >"$W/$name.log" 2>&1 &
	PIDS+=($!)
	for ((n = START_S * 10; n > 0; n--)); do
		[ -s "$port_file" ] && return 0
		sleep 0.1
	done
	return 1
}

for d in tests/sdk tests/mcp; do
	if ! npm_locked "$ROOT/$d"; then
		not_ok "npm ci in $d"
		check_exit 1
	fi
done
start_fake mcp "$T/mcp.port" node "$ROOT/tests/mcp/server.mjs" --token "$TOKEN" \
	--port-file "$T/mcp.port" || { not_ok "the MCP server starts: $(cat "$W/mcp.log")"; check_exit 1; }
start_fake model "$T/model.port" node "$ROOT/tests/fake-model/fake-model.mjs" \
	--port-file "$T/model.port" || { not_ok "the fake model starts: $(cat "$W/model.log")"; check_exit 1; }
MCP=http://127.0.0.1:$(cat "$T/mcp.port")
FAKE=http://127.0.0.1:$(cat "$T/model.port")
DEAD=http://127.0.0.1:$(stack_free_port "$(cat "$T/mcp.port")" "$(cat "$T/model.port")")/mcp
echo "  MCP server $MCP, fake model $FAKE, nothing at $DEAD"

# the runner: the stack's configuration, then what this part changes (a key's last value wins)
(
	umask 077
	cat "$CONFIG"
	printf '\n; tests/mcp-turn/run.sh\n[model]\nbase_url = %s\n' "$FAKE"
	# host_tools: the sandbox check runs `env` with bash on the stack's local backend;
	# mcp_local_addresses: the MCP server is on loopback
	printf '\n[runner]\nlease_seconds = %s\nmcp_call_timeout_seconds = %s\nhost_tools = 1\n' \
		"$LEASE_S" "$CALL_TIMEOUT_S"
	printf 'mcp_local_addresses = 1\n'
) >"$RUN/$NAME.ini" || exit 1
check "[runner] mcp_call_timeout_seconds reads back as $CALL_TIMEOUT_S" \
	test "$(api_setting "$RUN" "$NAME" runner mcp_call_timeout_seconds)" = "$CALL_TIMEOUT_S"
# MariaDB's general log: every statement the API and the runner send, searched below. A
# statement shows its values there only when it was prepared while the log was on: the stack's
# API restarts (its workers prepare theirs again), the runner starts after.
e2e_sql "SET GLOBAL general_log_file = '$GENERAL_LOG'; SET GLOBAL general_log = 1" ||
	not_ok "MariaDB's general log on"
api_stop "$RUN" "$API_NAME" && api_start "$RUN" "$API_NAME" ||
	{ not_ok "the API restarts"; check_exit 1; }

(runner_start "$RUN" "$NAME") || { not_ok "the runner starts"; check_exit 1; }

# driver SUBCOMMAND: turn.mjs with the tokens in its environment only; its "ok" / "not ok"
# lines are counted here
driver() {
	local line rc
	while IFS= read -r line; do
		case "$line" in
		"ok - "*) ok "${line#ok - }" ;;
		"not ok - "*) not_ok "${line#not ok - }" ;;
		*) printf '%s\n' "$line" ;;
		esac
	done < <(TERRARIUM_KEY=$KEY MCP_URL=$MCP MCP_DEAD_URL=$DEAD FAKE_URL=$FAKE MCP_TOKEN=$TOKEN \
		MCP_WRONG_TOKEN=$WRONG MCP_TURN_TAG=$TAG MCP_TURN_STATE=$T/state \
		MCP_CALL_TIMEOUT_S=$CALL_TIMEOUT_S node "$HERE/turn.mjs" "$1" 2>&1)
	wait $! 2>/dev/null
	rc=$?
	[ "$rc" = 0 ] || not_ok "turn.mjs $1 exited $rc"
}

driver main

# the README's walk-through ("MCP servers and vault credentials"), as a new user runs it
DEMO_WANT='agent.mcp_tool_use calc add {"a":2,"b":3} ask
session.status_idle requires_action
agent.mcp_tool_result 5 ok
agent.message the sum is 5
session.status_idle end_turn'
demo=$(URL=$URL KEY=$KEY MCP_URL=$MCP MODEL_URL=$FAKE MCP_TOKEN=$TOKEN timeout "$DEMO_S" \
	node "$HERE/demo.mjs" 2>&1)
check "the README's walk-through (tests/mcp-turn/demo.mjs): the use asks, is allowed, 5, the answer" \
	test "$demo" = "$DEMO_WANT" || printf '%s\n' "$demo" | head -20

# kill -9 of the runner while an MCP call runs: its turn's process goes with it
# (PR_SET_PDEATHSIG), the next runner takes the turn up when the lease ends
driver kill-start
if [ -s "$T/state" ] && pid=$(stack_running "$RUN/runner.pid" terrarium-runner); then
	mapfile -t turns < <(pgrep -P "$pid")
	kill -KILL "$pid"
	gone=1
	for ((n = STOP_S * 10; n > 0; n--)); do
		gone=1
		for p in "$pid" "${turns[@]}"; do kill -0 "$p" 2>/dev/null && gone=0; done
		[ "$gone" = 1 ] && break
		sleep 0.1
	done
	check "kill -9 of the runner ($pid): its ${#turns[@]} turn process(es) died with it" \
		test "$gone" = 1 -a "${#turns[@]}" -ge 1
	rm -f "$RUN/runner.pid"
	(runner_start "$RUN" "$NAME") || not_ok "a runner starts again"
	driver kill-finish
else
	not_ok "the kill: no call running, or no runner"
fi

# the same runner without [runner] mcp_local_addresses: the MCP server on loopback is refused
runner_stop "$RUN"
# (its configuration without the setting: the default, not an explicit 0, is what is tried)
grep -v '^mcp_local_addresses' "$RUN/$NAME.ini" >"$RUN/$NAME-refuse.ini" || exit 1
check "the refusing runner's [runner] mcp_local_addresses is the default, 0" \
	test "$(api_setting "$RUN" "$NAME-refuse" runner mcp_local_addresses)" = 0
if (runner_start "$RUN" "$NAME-refuse"); then
	driver local
else
	not_ok "a runner without mcp_local_addresses starts"
fi

runner_stop "$RUN"
e2e_sql "SET GLOBAL general_log = 0" || not_ok "MariaDB's general log off"
check "MariaDB's general log holds the API's statements with their values (the vault's name)" \
	grep -qF "'mcp-turn-$TAG'" "$GENERAL_LOG"
check "... and the runner's (the echoed bearer, masked)" grep -qF 'you sent: Bearer ***' "$GENERAL_LOG"
check "the runner logged the turns" test -s "$RUN/runner.log"

# at rest: nowhere in clear under RUN (grep -l names a binary file holding the string too)
search() { grep -r -l -F -D skip --exclude-dir=docker --exclude-dir=docker-exec -e "$1" "$RUN" 2>/dev/null; }
found=$(search "mcp-turn-$TAG" | grep "^$RUN/db/" | grep -vc "^$GENERAL_LOG$")
check "a marker stored in clear (the vault's name) is in the database's files ($found): the search reaches them" \
	test "$found" -ge 1
read -r creds sealed < <(e2e_sql "SELECT COUNT(*), SUM(c.secret LIKE 'v1.%')
	FROM vault_credentials c JOIN vaults v ON v.id = c.vault_id
	WHERE v.display_name LIKE 'mcp-turn-%$TAG'")
check "the tokens are stored sealed (v1.<key id>.): $sealed of $creds credentials" \
	test "${creds:-0}" -ge 2 -a "$sealed" = "$creds"
for t in "$TOKEN" "$WRONG"; do
	where=$(search "$t")
	check "token ${t:0:8}... is nowhere in clear under RUN${where:+ (found in: $where)}" test -z "$where"
done
for p in "${PIDS[@]}"; do
	check "the fake $p did not crash" kill -0 "$p"
done
check "the MCP server logged no error" test "$(grep -cv '^listening ' "$W/mcp.log")" = 0
check_summary
