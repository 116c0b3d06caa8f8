#!/usr/bin/env bash
# Isolation and secrets, against the running stack:
#   every authenticated route of the route table (read from handlers/routes.c, so a new route is
#   probed without editing this file) with another workspace's key and this workspace's ids:
#   404 (and lists and creates show nothing of the other workspace); with a revoked key: 401;
#   scope: account environments hidden from another account of the same workspace;
#   API keys never stored or logged in clear.
# Needs (from tests/e2e/run.sh): TERRARIUM_URL, KEY, KEY2, KEY_ACCT2, KEY_REVOKED, TERRARIUM_RUN.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN=${TERRARIUM_RUN:?}
URL=${TERRARIUM_URL:?}
: "${KEY:?}" "${KEY2:?}" "${KEY_ACCT2:?}" "${KEY_REVOKED:?}"
# shellcheck disable=SC2034 # read by check (tests/lib-check.sh)
CHECK_QUIET=1 # over a hundred probes: only the failures are printed
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
call() { # KEY METHOD PATH [BODY] -> status, body in $RUN/sec.body
	curl -sS -o "$RUN/sec.body" -w '%{http_code}' -X "$2" "$URL$3" -H "x-api-key: $1" \
		-H "anthropic-beta: managed-agents-2026-04-01" ${4:+-H "content-type: application/json" --data "$4"}
}

agent=$(api "$URL" POST /v1/agents '{"name":"sec","model":"claude-sonnet-4-5"}' | jq -r .id)
env=$(api "$URL" POST /v1/environments '{"name":"sec"}' | jq -r .id)
session=$(api "$URL" POST /v1/sessions "{\"agent\":\"$agent\",\"environment_id\":\"$env\"}" | jq -r .id)
vault=$(api "$URL" POST /v1/vaults '{"display_name":"sec"}' | jq -r .id)
cred=$(api "$URL" POST "/v1/vaults/$vault/credentials" \
	'{"auth":{"type":"static_bearer","token":"sec-token","mcp_server_url":"https://sec.example.com/"}}' |
	jq -r .id)
id_for() {
	case "$1" in
	/v1/environments*) echo "$env" ;;
	/v1/agents*) echo "$agent" ;;
	/v1/sessions*) echo "$session" ;;
	/v1/vaults*) echo "$vault" ;;
	esac
}

# { { "METHOD", "/pattern" }, handler, FLAGS } entries; continuation lines joined
routes=$(sed -n '/^static const struct api_route routes/,/^};/p' "$ROOT/handlers/routes.c" | tr -d '\n\t' |
	grep -o '{ *{ *"[A-Z]*", *"[^"]*" *}, *[a-z_]*, *[^}]*}' | grep ROUTE_AUTH |
	sed -E 's/\{ *\{ *"([A-Z]+)", *"([^"]+)".*/\1 \2/')
nroutes=$(wc -l <<<"$routes")
check "the route table was read ($nroutes authenticated routes)" test "$nroutes" -ge 10
probes=0
while read -r method pattern; do
	id=$(id_for "$pattern")
	path=${pattern//\{id\}/$id}
	path=${path//\{credential_id\}/$cred}
	body=
	[ "$method" = POST ] && body='{}'
	# a revoked key is refused everywhere
	st=$(call "$KEY_REVOKED" "$method" "$path" "$body")
	check "revoked key: $method $path -> $st" test "$st" = 401
	probes=$((probes + 1))
	if [[ $pattern == *"{id}"* ]]; then
		st=$(call "$KEY2" "$method" "$path" "$body")
		check "other workspace: $method $path -> $st (want 404)" test "$st" = 404
		check "other workspace: $method $path answers not_found_error" \
			test "$(jq -r .error.type "$RUN/sec.body")" = not_found_error
	elif [ "$method" = GET ]; then
		st=$(call "$KEY2" GET "$path?limit=1000")
		check "other workspace: $method $path -> $st" test "$st" = 200
		check "other workspace: $path lists nothing of ours" \
			bash -c '! grep -qE "$1|$2|$3|$4" "$5"' _ "$env" "$agent" "$session" "$vault" "$RUN/sec.body"
	fi
	probes=$((probes + 1))
done <<<"$routes"
echo "  $probes probes over $nroutes routes"

# the other workspace's objects are untouched by all that
st=$(call "$KEY" GET "/v1/sessions/$session")
check "the probed session still exists for its owner" test "$st" = 200
st=$(call "$KEY" GET "/v1/agents/$agent")
check "the probed agent is unchanged (version 1)" test "$st" = 200 -a "$(jq .version "$RUN/sec.body")" = 1
st=$(call "$KEY" GET "/v1/vaults/$vault/credentials/$cred")
check "the probed vault credential is unchanged" test "$st" = 200 -a \
	"$(jq -c '[.display_name, .archived_at, .metadata]' "$RUN/sec.body")" = '[null,null,{}]'

# scope: account
acct=$(curl -sS "$URL/v1/environments" -H "x-api-key: $KEY" -H "anthropic-beta: managed-agents-2026-04-01" \
	-H "content-type: application/json" -d '{"name":"sec-acct","config":{"type":"self_hosted"},"scope":"account"}' | jq -r .id)
check "scope account: hidden from another account (GET)" test "$(call "$KEY_ACCT2" GET "/v1/environments/$acct")" = 404
check "scope account: hidden from another account (list)" bash -c \
	'[ "$(curl -sS "$1/v1/environments?limit=1000" -H "x-api-key: $2" -H "anthropic-beta: managed-agents-2026-04-01" | grep -c "$3")" = 0 ]' \
	_ "$URL" "$KEY_ACCT2" "$acct"
check "scope account: visible to its account" test "$(call "$KEY" GET "/v1/environments/$acct")" = 200
check "scope account: no session for another account" test \
	"$(call "$KEY_ACCT2" POST /v1/sessions "{\"agent\":\"$agent\",\"environment_id\":\"$acct\"}")" = 404

# scope: account reaches the sessions of an account-scoped environment (issue 15): another
# account of the workspace gets 404 on GET, list, archive, update and DELETE
acct_sess=$(curl -sS "$URL/v1/sessions" -H "x-api-key: $KEY" -H "anthropic-beta: managed-agents-2026-04-01" \
	-H "content-type: application/json" -d "{\"agent\":\"$agent\",\"environment_id\":\"$acct\"}" | jq -r .id)
check "scope account: its account made a session on it ($acct_sess)" test "${acct_sess#sesn_}" != "$acct_sess"
check "scope account: the session is hidden from another account (GET)" \
	test "$(call "$KEY_ACCT2" GET "/v1/sessions/$acct_sess")" = 404
check "scope account: the session is hidden from another account (list)" bash -c \
	'[ "$(curl -sS "$1/v1/sessions?limit=1000" -H "x-api-key: $2" -H "anthropic-beta: managed-agents-2026-04-01" | grep -c "$3")" = 0 ]' \
	_ "$URL" "$KEY_ACCT2" "$acct_sess"
check "scope account: another account cannot update the session" \
	test "$(call "$KEY_ACCT2" POST "/v1/sessions/$acct_sess" '{"title":"x"}')" = 404
check "scope account: another account cannot archive the session" \
	test "$(call "$KEY_ACCT2" POST "/v1/sessions/$acct_sess/archive" '{}')" = 404
check "scope account: another account cannot delete the session" \
	test "$(call "$KEY_ACCT2" DELETE "/v1/sessions/$acct_sess")" = 404
check "scope account: the session is still there for its account" \
	test "$(call "$KEY" GET "/v1/sessions/$acct_sess")" = 200 -a "$(jq -r .archived_at "$RUN/sec.body")" = null
check "scope account: its account lists the session" bash -c \
	'[ "$(curl -sS "$1/v1/sessions?limit=1000" -H "x-api-key: $2" -H "anthropic-beta: managed-agents-2026-04-01" | grep -c "$3")" = 1 ]' \
	_ "$URL" "$KEY" "$acct_sess"

# and the work items of an account-scoped self_hosted environment (issue 15): the session above
# queued one; another account of the workspace gets 404 on every work route, and its poll does
# not deliver the item
item=$(curl -sS "$URL/v1/environments/$acct/work" -H "x-api-key: $KEY" \
	-H "anthropic-beta: managed-agents-2026-04-01" | jq -r '.data[0].id // empty')
check "scope account: the session queued a work item ($item)" test -n "$item"
for probe in "GET /work" "GET /work/stats" "GET /work/poll" "GET /work/poll?block_ms=10" \
	"GET /work/$item" "POST /work/$item {\"metadata\":{\"k\":\"v\"}}" "POST /work/$item/ack {}" \
	"POST /work/$item/heartbeat {}" "POST /work/$item/stop {}"; do
	read -r method path body <<<"$probe"
	st=$(call "$KEY_ACCT2" "$method" "/v1/environments/$acct$path" "$body")
	check "scope account: another account's $method .../work${path#/work} -> $st (want 404)" \
		test "$st" = 404 -a "$(jq -r .error.type "$RUN/sec.body")" = not_found_error
done
st=$(call "$KEY" GET "/v1/environments/$acct/work/$item")
check "scope account: the item is untouched for its account (queued, never delivered, no metadata)" \
	test "$st" = 200 -a "$(jq -c '[.state, .latest_work_delivered_at, .metadata]' "$RUN/sec.body")" = '["queued",null,{}]'
st=$(call "$KEY" GET "/v1/environments/$acct/work/stats")
check "scope account: its account sees the item in the stats (depth $(jq .depth "$RUN/sec.body"))" \
	test "$st" = 200 -a "$(jq .depth "$RUN/sec.body")" = 1

# two accounts whose names share a 254-character prefix are two accounts (issue 14: the
# account was cut to 63 bytes when a key was looked up)
if [ -n "${TERRARIUM_CONFIG:-}" ]; then
	prefix=$(printf 'p%.0s' $(seq 254))
	api=("$ROOT/${BUILD_DIR:-build}/terrarium-api" -c "$TERRARIUM_CONFIG")
	key_a=$("${api[@]}" key create ws-main "${prefix}a" 2>/dev/null)
	key_b=$("${api[@]}" key create ws-main "${prefix}b" 2>/dev/null)
	long=$(curl -sS "$URL/v1/environments" -H "x-api-key: $key_a" -H "anthropic-beta: managed-agents-2026-04-01" \
		-H "content-type: application/json" -d '{"name":"sec-long","config":{"type":"self_hosted"},"scope":"account"}' | jq -r .id)
	check "long account names: the first account made a scoped environment ($long)" \
		test "${long#env_}" != "$long"
	check "long account names: visible to its account" test "$(call "$key_a" GET "/v1/environments/$long")" = 200
	check "long account names: hidden from the account sharing 254 characters" \
		test "$(call "$key_b" GET "/v1/environments/$long")" = 404
	check "long account names: not in the other account's list" bash -c \
		'[ "$(curl -sS "$1/v1/environments?limit=1000" -H "x-api-key: $2" -H "anthropic-beta: managed-agents-2026-04-01" | grep -c "$3")" = 0 ]' \
		_ "$URL" "$key_b" "$long"
fi

# key revoke never takes the secret as an argument (ps shows arguments to every local user):
# the key on stdin, or its id (printed by key create on stderr)
if [ -n "${TERRARIUM_CONFIG:-}" ]; then
	api=("$ROOT/${BUILD_DIR:-build}/terrarium-api" -c "$TERRARIUM_CONFIG")
	k1=$("${api[@]}" key create ws-main acct-a 2>/dev/null)
	k2=$("${api[@]}" key create ws-main acct-a 2>"$RUN/sec.keyid")
	k2id=$(sed -n 's/^key id: \(apikey_[0-9A-Za-z]*\).*/\1/p' "$RUN/sec.keyid")
	"${api[@]}" key revoke "$k1" 2>/dev/null
	rc=$?
	check "key revoke refuses the secret as an argument (exit $rc)" test "$rc" -ne 0
	check "... and the key stays valid" test "$(call "$k1" GET /v1/environments?limit=1)" = 200
	printf '%s\n' "$k1" | "${api[@]}" key revoke
	check "key revoke reads the key from stdin" test $? -eq 0
	"${api[@]}" key revoke "$k2id"
	check "key revoke takes a key id ($k2id)" test $? -eq 0
	sleep 1.1 # workers keep a found key for at most 1 s (AUTH_CACHE_TTL_MS)
	check "a key revoked through stdin is refused" test "$(call "$k1" GET /v1/environments?limit=1)" = 401
	check "a key revoked by id is refused" test "$(call "$k2" GET /v1/environments?limit=1)" = 401
	rm -f "$RUN/sec.keyid"
fi

# size budgets (docs/limits.md): an agent is at most 64 KiB, and a list page ends early with
# next_page rather than carry more than 1 MiB (20 agents and 20 sessions of ~60 KB each)
if [ -n "${TERRARIUM_CONFIG:-}" ]; then
	bkey=$("$ROOT/${BUILD_DIR:-build}/terrarium-api" -c "$TERRARIUM_CONFIG" key create "ws-budget-$$-$RANDOM" 2>/dev/null)
	sys60k=$(head -c 60000 /dev/zero | tr '\0' s)
	sys70k=$(head -c 70000 /dev/zero | tr '\0' s)
	st=$(call "$bkey" POST /v1/agents "{\"name\":\"big\",\"model\":\"claude-sonnet-4-5\",\"system\":\"$sys70k\"}")
	check "an agent over 64 KiB is refused ($st)" \
		bash -c '[ "$1" = 400 ] && grep -q "at most 65536" "$2"' _ "$st" "$RUN/sec.body"
	benv=$(curl -sS "$URL/v1/environments" -H "x-api-key: $bkey" -H "anthropic-beta: managed-agents-2026-04-01" \
		-H "content-type: application/json" -d '{"name":"budget","config":{"type":"self_hosted"}}' | jq -r .id)
	for i in $(seq 20); do
		a=$(curl -sS "$URL/v1/agents" -H "x-api-key: $bkey" -H "anthropic-beta: managed-agents-2026-04-01" \
			-H "content-type: application/json" \
			-d "{\"name\":\"big-$i\",\"model\":\"claude-sonnet-4-5\",\"system\":\"$sys60k\"}" | jq -r .id)
		curl -sS -o /dev/null "$URL/v1/sessions" -H "x-api-key: $bkey" -H "anthropic-beta: managed-agents-2026-04-01" \
			-H "content-type: application/json" -d "{\"agent\":\"$a\",\"environment_id\":\"$benv\"}"
	done
	for what in agents sessions; do
		page=
		pages=0
		seen=0
		biggest=0
		while :; do
			curl -sS -o "$RUN/sec.page" "$URL/v1/$what?limit=20${page:+&page=$page}" -H "x-api-key: $bkey" \
				-H "anthropic-beta: managed-agents-2026-04-01"
			n=$(jq '.data | length' "$RUN/sec.page")
			bytes=$(stat -c %s "$RUN/sec.page")
			[ "$bytes" -gt "$biggest" ] && biggest=$bytes
			seen=$((seen + n))
			pages=$((pages + 1))
			page=$(jq -r '.next_page // empty' "$RUN/sec.page")
			[ -n "$page" ] && [ "$pages" -lt 10 ] || break
		done
		check "$what: pages of limit=20 end early under 1 MiB ($pages pages, largest $biggest bytes)" \
			test "$pages" -ge 2 -a "$biggest" -le $((1024 * 1024 + 100 * 1024))
		check "$what: every one of the 20 is on some page ($seen)" test "$seen" = 20
	done
	rm -f "$RUN/sec.page"
fi

# random keys from one client address do not flood the database (handlers/auth_guard.h): past
# a burst of 20 and 10/s, unknown keys are answered 429 without a query; a key that works keeps
# working from that address, and a key made now works at once from another address
stmts() { db_sql "$RUN" -N -e "SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'" | awk '{print $2}'; }
now_ms() { date +%s%3N; }
# quiet MS: the statements the stack runs by itself in MS milliseconds with no request made (the
# event tailer reads the log every few ms, docs/events.md): what a count over a window of that
# length may hold beside the requests' own
quiet() {
	local b
	b=$(stmts)
	sleep "$(awk -v ms="$1" 'BEGIN { printf "%.3f", ms / 1000 }')"
	echo $(($(stmts) - b))
}
FLOOD_SECONDS=3
t0=$(now_ms)
before=$(stmts)
node "$ROOT/tests/faults/load.mjs" randkey "$URL" - "$FLOOD_SECONDS" 8 "$RUN/flood.json" /v1/environments &
flood=$!
good=()
while kill -0 "$flood" 2>/dev/null; do
	good+=("$(call "$KEY" GET /v1/environments?limit=1)")
	sleep 0.1
done
wait "$flood"
after=$(stmts)
bg=$(quiet $(($(now_ms) - t0)))
n401=$(jq '[.[] | select(.status == 401)] | length' "$RUN/flood.json")
n429=$(jq '[.[] | select(.status == 429)] | length' "$RUN/flood.json")
total=$(jq length "$RUN/flood.json")
echo "  random-key flood: $total requests, $n401 looked up (401), $n429 refused (429);" \
	"$((after - before)) statements executed ($bg in a quiet window as long); a valid key meanwhile: $(printf '%s\n' "${good[@]}" | sort | uniq -c | tr -s ' \n' ' ')"
check "random keys: past the budget they are refused with 429 ($n429)" test "$n429" -gt 0
check "random keys: at most burst + rate x time reach the database ($n401)" \
	test "$n401" -le $((20 + 10 * (FLOOD_SECONDS + 2)))
check "random keys: a refused key costs no statement ($((after - before)) for $n401 lookups, $bg by the stack itself)" \
	test $((after - before)) -le $((n401 + ${#good[@]} + 10 + bg * 12 / 10))
check "random keys: a valid key from the same address keeps working" \
	bash -c '! grep -qv "^200$" <<<"$1"' _ "$(printf '%s\n' "${good[@]}")"
if [ -n "${TERRARIUM_CONFIG:-}" ]; then
	fresh=$("$ROOT/${BUILD_DIR:-build}/terrarium-api" -c "$TERRARIUM_CONFIG" key create ws-main acct-a 2>/dev/null)
	st=$(curl -sS -o /dev/null -w '%{http_code}' --interface 127.0.0.2 "$URL/v1/environments?limit=1" \
		-H "x-api-key: $fresh" -H "anthropic-beta: managed-agents-2026-04-01")
	check "a key made during the negative cache's life works at once ($st)" test "$st" = 200
fi
bad="trm_not-a-key-$RANDOM"
t0=$(now_ms)
before=$(stmts)
for _ in $(seq 30); do call "$bad" GET /v1/environments >/dev/null; done
after=$(stmts)
bg=$(quiet $(($(now_ms) - t0)))
check "an unknown key asked 30 times is looked up once (negative cache: $((after - before)) statements, $bg by the stack itself)" \
	test $((after - before)) -le $((3 + 3 + bg * 12 / 10))
sleep 1 # the address's bucket refills for the parts after this one

# the application's database account has rows only; the schema belongs to a separate owner
if [ -s "$RUN/db-password" ]; then
	app_sql() { mariadb --no-defaults --socket="$RUN/mysql.sock" --user=terrarium \
		--password="$(cat "$RUN/db-password")" -N terrarium -e "$1" 2>&1; }
	grants=$(db_sql "$RUN" -N -e "SHOW GRANTS FOR 'terrarium'@'localhost'" |
		grep -v 'GRANT USAGE ON \*\.\*')
	check "the application account has SELECT, INSERT, UPDATE, DELETE on its schema only ($grants)" \
		test "$grants" = 'GRANT SELECT, INSERT, UPDATE, DELETE ON `terrarium`.* TO `terrarium`@`localhost`'
	check "the application account cannot create tables" \
		bash -c 'grep -q "denied" <<<"$1"' _ "$(app_sql 'CREATE TABLE sec_probe (a INT)')"
	check "the application account cannot drop tables" \
		bash -c 'grep -q "denied" <<<"$1"' _ "$(app_sql 'DROP TABLE api_keys')"
	check "the application account reads rows" test "$(app_sql 'SELECT COUNT(*) > 0 FROM api_keys')" = 1
	check "the migrations ran as the owner (owner.ini, mode 600)" \
		test "$(stat -c %a "$RUN/owner.ini" 2>/dev/null)" = 600
fi

# keys are stored as SHA-256 and never logged
mariadb-dump --no-defaults --socket="$RUN/mysql.sock" --user="$(id -un)" --skip-extended-insert \
	terrarium >"$RUN/sec.dump" 2>/dev/null
check "the database dump was read" grep -q "CREATE TABLE .api_keys" "$RUN/sec.dump"
for k in "$KEY" "$KEY2" "$KEY_ACCT2" "$KEY_REVOKED"; do
	check "a key is not in the database in clear" bash -c '! grep -qF "$1" "$2"' _ "$k" "$RUN/sec.dump"
	check "a key is not in any log" bash -c '! grep -rqF "$1" "$2"/*.log' _ "$k" "$RUN"
done
hashed=$(db_query "$RUN" "SELECT COUNT(*) FROM api_keys WHERE key_hash = UNHEX(SHA2('$KEY', 256))")
check "the key's SHA-256 is what is stored" test "$hashed" = 1

rm -f "$RUN/sec.dump" "$RUN/sec.body"
check_summary
