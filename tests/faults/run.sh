#!/usr/bin/env bash
# Faults and serving modes against the running stack (tests/e2e/run.sh runs it last: it stops
# and restarts MariaDB).
#   privileges   workers of a root supervisor run as the unprivileged [api] user
#   kill -9      workers killed at random while clients create environments: every create a
#                client saw answered 200 exists; rows no client was told about are requests that
#                were in flight (counted); the supervisor restores the pool
#   database     MariaDB stopped and restarted under load: 503 overloaded_error with retry-after
#                and x-should-retry: true, never a hang; the recovery time is measured
#   slow client  a request whose headers never end is cut off after nginx's 10 s limit
#   stored data  rows the code does not expect (a config that does not parse, a credential's
#                principal longer than its buffer): 500 and a log line naming the row
#   CGI, fd 0    the same binary serving one request as plain CGI, and a worker loop on a socket
#                handed over on fd 0 by spawn-fcgi
#   socket       the FastCGI socket's path swapped for a symlink after the bind: its target keeps
#                its group and mode, the supervisor refuses to serve (build/socket_swap.so)
#   nginx again  an nginx that bound its unix sockets and then failed on a taken port starts
#                on the next try (the e2e harness's retry with other ports)
# Needs (from tests/e2e/run.sh): TERRARIUM_RUN, TERRARIUM_URL (the "local" API), KEY.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
e2e_part
API="$ROOT/$BUILD/terrarium-api"
NAME=${FAULT_API:-local}
KILL_SECONDS=${KILL_SECONDS:-6}
DB_DOWN_SECONDS=${DB_DOWN_SECONDS:-3}
workers() { pgrep -P "$(cat "$RUN/$NAME.pid")" | wc -l; }
want_workers=$(workers)

# ---- privileges ----
if [ "$(id -u)" -eq 0 ]; then
	users=$(ps -o user= --ppid "$(cat "$RUN/$NAME.pid")" | sort -u | tr '\n' ' ')
	check "workers of a root supervisor are unprivileged ($users)" \
		bash -c '[ -n "$1" ] && ! grep -qw root <<<"$1"' _ "$users"
	dbuser=$(ps -o user= -p "$(cat "$RUN/mariadb.pid")")
	check "MariaDB of a root stack runs as mysql ($dbuser)" test "$dbuser" = mysql
	check "the runtime directory stays closed to other users ($(stat -c %a "$RUN"))" \
		test "$(stat -c %a "$RUN")" = 710
else
	echo "ok - privileges # SKIP not started as root"
fi

# load.mjs MODE for KILL_SECONDS while a random worker is killed (-9) every PAUSE seconds;
# sets kills
load_under_kills() { # MODE PAUSE OUT TAG
	local load end victim
	node "$ROOT/tests/faults/load.mjs" "$1" "$URL" "$KEY" "$KILL_SECONDS" 8 "$3" "$4" &
	load=$!
	kills=0
	end=$((SECONDS + KILL_SECONDS - 1))
	while [ $SECONDS -lt $end ]; do
		sleep "$2"
		# the API's workers, not the long-poll pool's (terrarium-poll)
		victim=$(pgrep -P "$(cat "$RUN/$NAME.pid")" -x terrarium-api | shuf -n 1)
		[ -n "$victim" ] && kill -9 "$victim" 2>/dev/null && kills=$((kills + 1))
	done
	wait "$load"
}

# ---- kill -9 of workers while creating environments ----
tag="fault-kill-$$-$RANDOM"
load_under_kills create 0.3 "$RUN/kill.json" "$tag"
e2e_sql "SELECT name, id FROM environments WHERE name LIKE '$tag-%'" | sort >"$RUN/kill.rows"
jq -r '.[] | select(.status == 200) | "\(.name)\t\(.id)"' "$RUN/kill.json" | sort >"$RUN/kill.seen"
total=$(jq length "$RUN/kill.json")
ok200=$(wc -l <"$RUN/kill.seen")
failed_reqs=$(jq '[.[] | select(.status != 200)] | length' "$RUN/kill.json")
missing=$(comm -23 "$RUN/kill.seen" "$RUN/kill.rows" | wc -l)
unseen=$(comm -13 "$RUN/kill.seen" "$RUN/kill.rows" | wc -l)
echo "  $kills workers killed; $total creates: $ok200 answered 200, $failed_reqs failed;" \
	"$unseen rows the client was not told about (in flight)"
check "kill -9: every create answered 200 exists ($missing missing)" test "$missing" -eq 0
check "kill -9: rows nobody was told about are at most the failed requests" \
	test "$unseen" -le "$failed_reqs"
check "kill -9: failed requests are nginx's 502 JSON, never a hang" \
	test "$(jq '[.[] | select(.status != 200 and .status != 502)] | length' "$RUN/kill.json")" -eq 0
sleep 1
check "kill -9: the supervisor restored the pool ($(workers)/$want_workers)" test "$(workers)" -eq "$want_workers"

# ---- kill -9 of workers during keyed creates, every key retried as the SDK retries ----
# Claim, create and stored response share one transaction: a kill leaves no object (the key is
# free at once) or the object and its response (the retry replays it). Never two objects for a
# key, and no key stuck "in progress".
tag="fault-idem-$$-$RANDOM"
load_under_kills keyed 0.2 "$RUN/idem.json" "$tag"
keys=$(jq length "$RUN/idem.json")
retried=$(jq '[.[] | select(.attempts > 1)] | length' "$RUN/idem.json")
replays=$(jq '[.[] | select(.replayed)] | length' "$RUN/idem.json")
not200=$(jq '[.[] | select(.status != 200)] | length' "$RUN/idem.json")
e2e_sql "SELECT name, COUNT(*), MIN(id) FROM environments WHERE name LIKE '$tag-%' GROUP BY name" \
	| sort >"$RUN/idem.rows"
dups=$(awk '$2 > 1' "$RUN/idem.rows" | wc -l)
jq -r '.[] | select(.status == 200) | "\(.name)\t1\t\(.id)"' "$RUN/idem.json" | sort >"$RUN/idem.seen"
mismatch=$(comm -3 "$RUN/idem.seen" "$RUN/idem.rows" | wc -l)
echo "  $kills workers killed; $keys keys: $retried retried, $replays answered by a replay," \
	"$not200 not 200 in the end; $dups with more than one environment"
check "keyed creates under kill -9: some requests were retried ($retried)" test "$retried" -gt 0
check "keyed creates under kill -9: every key ends in 200 ($not200 did not)" test "$not200" -eq 0
check "keyed creates under kill -9: 0 keys with two environments ($dups)" test "$dups" -eq 0
check "keyed creates under kill -9: each key's one environment is the one its 200 named" \
	test "$mismatch" -eq 0
sleep 1

# ---- a supervisor of our own: scrubbed environment, RSS recycling, death of the supervisor ----
# (one worker, so the worker that served a request is the one whose PID is checked)
hwm_mb() { awk '/^VmHWM/ {print int($2 / 1024) + 1}' "/proc/$1/status"; }
one_worker() { pgrep -P "$(cat "$RUN/$1.pid")" -x terrarium-api | head -1; }
WORKERS=1 api_config "$RUN" rss local >/dev/null 2>&1 && api_start "$RUN" rss >/dev/null 2>&1
nginx_conf_ok=$?
rssurl() { REQUEST_METHOD=${2:-GET} REQUEST_URI=$1 HTTP_X_API_KEY="$KEY" CONTENT_TYPE=application/json \
	HTTP_ANTHROPIC_BETA=managed-agents-2026-04-01 cgi-fcgi -bind -connect "$RUN/rss.sock" >/dev/null 2>&1; }
check "own supervisor started" test "$nginx_conf_ok" -eq 0
w=$(one_worker rss)
check "a worker keeps nothing of the operator's environment" \
	bash -c '[ -n "$1" ] && ! tr "\0" "\n" <"/proc/$1/environ" | grep -q =' _ "$w"
check "(the supervisor's environment is not empty: the check can see variables)" \
	bash -c 'tr "\0" "\n" <"/proc/$1/environ" | grep -q =' _ "$(cat "$RUN/rss.pid")"
for _ in $(seq 20); do rssurl /v1/environments; done
base=$(hwm_mb "$(one_worker rss)")
limit=$((base + 12))
api_stop "$RUN" rss >/dev/null 2>&1
printf '\n[api]\nmax_rss_mb = %s\n' "$limit" >>"$RUN/rss.ini"
api_start "$RUN" rss >/dev/null 2>&1
w=$(one_worker rss) # before the requests: the same worker must serve them all and stay
for _ in $(seq 20); do rssurl /v1/environments; done
check "small requests keep the worker (peak RSS ${base} MiB, limit ${limit} MiB; $w)" \
	test -n "$w" -a "$(one_worker rss)" = "$w"
# a 1 MiB body of 500,000 numbers: the parsed value takes tens of MiB
{ printf '{"name":"x","n":['; head -c 524200 /dev/zero | tr '\0' '0' | sed 's/0/0,/g'; printf '0]}'; } >"$RUN/big.json"
# shellcheck disable=SC2094 # big.json is only read, for its size and as the body
REQUEST_METHOD=POST REQUEST_URI=/v1/environments HTTP_X_API_KEY="$KEY" CONTENT_TYPE=application/json \
	CONTENT_LENGTH=$(stat -c %s "$RUN/big.json") HTTP_ANTHROPIC_BETA=managed-agents-2026-04-01 \
	cgi-fcgi -bind -connect "$RUN/rss.sock" <"$RUN/big.json" >/dev/null 2>&1
sleep 0.5
w2=$(one_worker rss)
check "a worker whose RSS passed max_rss_mb is recycled ($w -> $w2)" \
	bash -c '[ -n "$2" ] && [ "$1" != "$2" ] && grep -q "peak RSS passed" "$3"' _ "$w" "$w2" "$RUN/rss.log"
kill -9 "$(cat "$RUN/rss.pid")"
for _ in $(seq 30); do kill -0 "$w2" 2>/dev/null || break; sleep 0.1; done
check "workers die with their supervisor (kill -9 of the supervisor)" bash -c '! kill -0 "$1" 2>/dev/null' _ "$w2"
api_stop "$RUN" rss >/dev/null 2>&1
rm -f "$RUN/big.json" "$RUN/rss.ini"
# stack_stop_all stops what remains of a process group whose leader is gone
_stack_spawn "$RUN/orphan.pid" "$RUN/orphan.log" bash -c \
	'(exec -a terrarium-orphan-test sleep 300) & (exec -a terrarium-orphan-test sleep 300) & wait'
leader=$(cat "$RUN/orphan.pid")
sleep 0.3
kill -9 "$leader"
sleep 0.2
left=$(_stack_group_members "$leader" terrarium-orphan-test | wc -l)
_stack_stop "$RUN/orphan.pid" terrarium TERM 5 orphan-test 2>/dev/null
after=$(_stack_group_members "$leader" terrarium-orphan-test | wc -l)
check "the stop of a gone leader stops its group ($left left behind, $after after)" \
	test "$left" -eq 2 -a "$after" -eq 0

# ---- MariaDB stopped and restarted under load ----
env_id=$(curl -sS "$URL/v1/environments" -H "x-api-key: $KEY" -H "content-type: application/json" \
	-H "anthropic-beta: managed-agents-2026-04-01" -d '{"name":"fault-db"}' | jq -r .id)
node "$ROOT/tests/faults/load.mjs" get "$URL" "$KEY" $((DB_DOWN_SECONDS + 8)) 4 "$RUN/db.json" \
	"/v1/environments/$env_id" &
load=$!
sleep 2
db_stop "$RUN" >/dev/null 2>&1
ready=$(curl -sS -o /dev/null -D - "$URL/readyz" | tr -d '\r')
sleep "$DB_DOWN_SECONDS"
started_ms=$(date +%s%3N)
db_start "$RUN" >/dev/null 2>&1
wait "$load"
check "database down: /readyz answers 503 with retry-after" \
	bash -c 'grep -q "^HTTP/1.1 503" <<<"$1" && grep -qi "^retry-after: " <<<"$1"' _ "$ready"
n503=$(jq '[.[] | select(.status == 503)] | length' "$RUN/db.json")
bad503=$(jq '[.[] | select(.status == 503 and (.retry != "true" or .retryAfter == null or .type != "overloaded_error"))] | length' "$RUN/db.json")
other=$(jq '[.[] | select(.status != 200 and .status != 503)] | length' "$RUN/db.json")
slowest=$(jq '[.[].ms] | max' "$RUN/db.json")
recovered=$(jq --argjson s "$started_ms" '[.[] | select(.status == 200 and .at > $s) | .at] | min // empty' "$RUN/db.json")
echo "  $(jq length "$RUN/db.json") requests: $n503 answered 503; slowest ${slowest} ms"
check "database down: requests get 503 ($n503)" test "$n503" -gt 0
check "database down: every 503 is overloaded_error with retry-after and x-should-retry: true" \
	test "$bad503" -eq 0
check "database down: no other failure and no hang (other: $other, slowest ${slowest} ms)" \
	test "$other" -eq 0 -a "$slowest" -lt 30000
if [ -n "$recovered" ]; then
	echo "  recovery: first 200 $((recovered - started_ms)) ms after MariaDB was started again"
fi
check "database back: requests succeed again without restarting the API" test -n "$recovered"

# ---- stored data the code does not expect ----
# A self_hosted environment whose stored config was made JSON null behind the API's back (the
# column only checks that it is JSON): its work queue answers 500 and the log names the row and
# the column, instead of a 400 blaming the request for an environment that is "not self_hosted".
sh_id=$(api "$URL" POST /v1/environments \
	'{"name":"fault-corrupt","config":{"type":"self_hosted"}}' | jq -r .id)
e2e_sql "UPDATE environments SET config = 'null' WHERE id = '$sh_id'"
code=$(curl -sS -o "$RUN/corrupt.json" -w '%{http_code}' "$URL/v1/environments/$sh_id/work" \
	-H "x-api-key: $KEY" -H "anthropic-version: 2023-06-01" \
	-H "anthropic-beta: managed-agents-2026-04-01")
check "stored config that does not parse: the work queue answers 500 api_error ($code)" \
	bash -c '[ "$1" = 500 ] && jq -e ".error.type == \"api_error\"" "$2" >/dev/null' _ "$code" \
	"$RUN/corrupt.json"
check "stored config that does not parse: the log names the row and the column" \
	grep -q "environment $sh_id: stored config does not parse" "$RUN/$NAME.log"
api "$URL" DELETE "/v1/environments/$sh_id" >/dev/null

# A credential whose stored principal is longer than the buffer it is read into (the account
# column widened behind the API's back, then a 300-character account): an environment key of
# that environment answers 500 and the log says why, rather than opening the environment as
# the account's first 255 characters (another account, when one has that name).
ek_id=$(api_ok "$URL" POST /v1/environments \
	'{"name":"fault-long-account","config":{"type":"self_hosted"}}' | jq -r .id)
ek=$(api_cli "$RUN" "$NAME" key create-environment "$ek_id" 2>/dev/null)
long_account=$(printf 'a%.0s' $(seq 1 300))
e2e_sql "ALTER TABLE environments MODIFY account_id VARCHAR(300) NOT NULL;
	UPDATE environments SET account_id = '$long_account' WHERE id = '$ek_id'"
code=$(curl -sS -o "$RUN/corrupt.json" -w '%{http_code}' "$URL/v1/environments/$ek_id/work/stats" \
	-H "x-api-key: $ek" -H "anthropic-version: 2023-06-01" \
	-H "anthropic-beta: managed-agents-2026-04-01")
check "a stored account longer than its buffer: the environment key is refused with 500 ($code)" \
	bash -c '[ "$1" = 500 ] && jq -e ".error.type == \"api_error\"" "$2" >/dev/null' _ "$code" \
	"$RUN/corrupt.json"
check "a stored account longer than its buffer: the log says which credential" \
	grep -q "credential for $ek_id: column 3 of the stored row is longer than its buffer" \
	"$RUN/$NAME.log"
e2e_sql "DELETE FROM environment_keys WHERE environment_id = '$ek_id';
	DELETE FROM environments WHERE id = '$ek_id';
	ALTER TABLE environments MODIFY account_id VARCHAR(255) NOT NULL"

# ---- a client that never finishes its request is cut off ----
hostport=${URL#http://}
t0=$SECONDS
(
	exec 3<>"/dev/tcp/${hostport%:*}/${hostport#*:}" || exit 1
	printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n' >&3 # and nothing more
	timeout 20 cat <&3 >/dev/null
)
held=$((SECONDS - t0))
check "an unfinished request is cut off by the header time limit (after ${held}s)" \
	test "$held" -ge 9 -a "$held" -le 15

# ---- plain CGI and a worker loop on fd 0 ----
out=$(GATEWAY_INTERFACE=CGI/1.1 REQUEST_METHOD=POST REQUEST_URI=/v1/environments \
	CONTENT_LENGTH=20 CONTENT_TYPE=application/json HTTP_X_API_KEY="$KEY" \
	HTTP_ANTHROPIC_BETA=managed-agents-2026-04-01 TERRARIUM_CONFIG="$RUN/$NAME.ini" \
	"$API" <<<'{"name":"cgi-made"}' 2>/dev/null)
check "CGI: one request served" bash -c 'head -1 <<<"$1" | grep -q "^Status: 200" &&
	grep -q "\"name\":\"cgi-made\"" <<<"$1"' _ "$out"
rm -f "$RUN/spawned.sock"
TERRARIUM_CONFIG="$RUN/$NAME.ini" spawn-fcgi -s "$RUN/spawned.sock" -P "$RUN/spawned.pid" \
	-- "$API" >/dev/null 2>&1
out=$(REQUEST_METHOD=GET REQUEST_URI=/readyz cgi-fcgi -bind -connect "$RUN/spawned.sock" 2>&1)
check "fd 0: a worker loop on the socket spawn-fcgi handed over" grep -q '"status":"ready"' <<<"$out"
out=$(REQUEST_METHOD=GET REQUEST_URI="/v1/environments/$env_id" HTTP_X_API_KEY="$KEY" \
	HTTP_ANTHROPIC_BETA=managed-agents-2026-04-01 cgi-fcgi -bind -connect "$RUN/spawned.sock" 2>&1)
check "fd 0: it serves the API" grep -q "\"id\":\"$env_id\"" <<<"$out"
[ -s "$RUN/spawned.pid" ] && kill "$(cat "$RUN/spawned.pid")" 2>/dev/null
rm -f "$RUN/spawned.sock" "$RUN/spawned.pid"

# ---- the FastCGI socket's group and mode reach only the socket ----
# socket_swap.so replaces the socket path with a symlink to a file of ours between the bind and
# the supervisor's next step, as anyone able to write the socket's directory could: the
# supervisor refuses to serve it, and the file keeps its group and mode (a chown or chmod by
# path, followed as root, would give any file to the web server's group).
SWAP=$RUN/swap
rm -rf "$SWAP" && mkdir -p "$SWAP"
echo "not the socket" >"$SWAP/victim"
chmod 0600 "$SWAP/victim"
before=$(stat -c '%a %G' "$SWAP/victim")
{
	cat "$RUN/$NAME.ini"
	printf '\n[api]\nsocket = %s\npoll_socket = %s\nsocket_mode = 0666\nworkers = 1\n' \
		"$SWAP/api.sock" "$SWAP/poll.sock"
} >"$SWAP/api.ini"
LD_PRELOAD="$ROOT/$BUILD/socket_swap.so" SOCKET_SWAP_TARGET="$SWAP/victim" \
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	timeout 10 "$API" -c "$SWAP/api.ini" serve >"$SWAP/serve.log" 2>&1
rc=$?
check "a socket path swapped for a symlink after the bind: the shim moved the socket aside" \
	test -S "$SWAP/api.sock.moved"
check "... the supervisor refuses to serve it (exit $rc)" test "$rc" -ne 0 -a "$rc" -ne 124
check "... and says why" grep -q "is no longer the socket just bound" "$SWAP/serve.log"
check "... the symlink's target keeps its mode and group ($before -> $(stat -c '%a %G' "$SWAP/victim"))" \
	test "$(stat -c '%a %G' "$SWAP/victim")" = "$before"
rm -rf "$SWAP"

# ---- nginx starts again after a start that failed on a taken port ----
# nginx binds the event publisher's unix socket, fails on the port another process holds and
# exits without removing the socket; the next start (other ports) must not fail on it.
AGAIN=$RUN/again
rm -rf "$AGAIN" && mkdir -p "$AGAIN" && ln -s "$RUN/$NAME.sock" "$AGAIN/$NAME.sock"
held=$(stack_free_port) && port=$(stack_free_port "$held") || die "no free port"
timeout 30 python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
time.sleep(30)' "$held" &
holder=$!
for _ in $(seq 50); do ss -Hltn "sport = :$held" | grep -q . && break; sleep 0.1; done
nginx_start "$AGAIN" "$held:$NAME" >"$AGAIN/first.log" 2>&1
rc=$?
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
check "nginx on a taken port fails to start (exit $rc)" test "$rc" -ne 0
if stack_nchan_modules >/dev/null; then
	check "... leaving its event publisher's socket behind" test -S "$AGAIN/events-pub.sock"
fi
nginx_start "$AGAIN" "$port:$NAME" >"$AGAIN/second.log" 2>&1
rc=$?
check "... and starts on the next try (exit $rc)" test "$rc" -eq 0
check "... serving the API" bash -c 'curl -sf "http://127.0.0.1:$1/readyz" >/dev/null' _ "$port"
nginx_stop "$AGAIN"
rm -rf "$AGAIN"

check_summary
