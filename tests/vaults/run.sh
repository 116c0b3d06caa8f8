#!/usr/bin/env bash
# Vault secrets at rest (docs/vaults.md), against the running stack of tests/e2e/run.sh:
#   - tokens sent through every route that takes one (a credential's create, its token update,
#     an idempotent create and its replay, bodies that are refused) are found nowhere in clear
#     under the run directory: logs, the database's files, configurations. A marker stored in
#     clear beside them (a display name) is found in the database's files, so the search does
#     reach what the database wrote;
#   - the stored value is a sealed one (v1.<key id>.<...>);
#   - the runner's path (`terrarium-api vault check`, vaultdb_session_secrets) opens the
#     session's credentials with the key, and with a wrong, short or missing key says so, naming
#     the file, rather than yield an empty token.
# The Docker Engine's own storage (RUN/docker, when the e2e run started one) is left out of the
# search: no vault secret goes to a sandbox. Needs TERRARIUM_URL, KEY, TERRARIUM_RUN,
# TERRARIUM_CONFIG. Last line: "N passed, N failed".
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN=${TERRARIUM_RUN:?}
URL=${TERRARIUM_URL:?}
CONFIG=${TERRARIUM_CONFIG:?}
: "${KEY:?}"
API=("$ROOT/${BUILD_DIR:-build}/terrarium-api")
# shellcheck source=tests/lib-check.sh
. "$ROOT/tests/lib-check.sh"

T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"; rm -f "$RUN"/vault-probe-*' EXIT

call() { # METHOD PATH [BODY [HEADER]] -> status; body in $T/body
	curl -sS -o "$T/body" -w '%{http_code}' -X "$1" "$URL$2" -H "x-api-key: $KEY" \
		-H "anthropic-beta: managed-agents-2026-04-01" ${3:+-H "content-type: application/json" --data "$3"} \
		${4:+-H "$4"}
}
rand() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }

tok1=tok_atrest_$(rand) # created
tok2=tok_atrest_$(rand) # its update
tok3=tok_atrest_$(rand) # an idempotent create, sent twice
tok4=tok_atrest_$(rand) # only in refused bodies
mark=vault-marker-$(rand)
tokens=("$tok1" "$tok2" "$tok3" "$tok4")

st=$(call POST /v1/vaults "{\"display_name\":\"$mark\"}")
vault=$(jq -r .id "$T/body")
check "a vault ($vault)" test "$st" = 200
st=$(call POST "/v1/vaults/$vault/credentials" \
	"{\"auth\":{\"type\":\"static_bearer\",\"token\":\"$tok1\",\"mcp_server_url\":\"https://at-rest.example.com/mcp\"},\"display_name\":\"$mark\"}")
cred=$(jq -r .id "$T/body")
check "a credential ($cred)" test "$st" = 200
st=$(call POST "/v1/vaults/$vault/credentials/$cred" \
	"{\"auth\":{\"type\":\"static_bearer\",\"token\":\"$tok2\"}}")
check "its token updated" test "$st" = 200
body="{\"auth\":{\"type\":\"static_bearer\",\"token\":\"$tok3\",\"mcp_server_url\":\"https://at-rest-2.example.com/mcp\"}}"
st=$(call POST "/v1/vaults/$vault/credentials" "$body" "Idempotency-Key: at-rest-$mark")
cred2=$(jq -r .id "$T/body")
st2=$(call POST "/v1/vaults/$vault/credentials" "$body" "Idempotency-Key: at-rest-$mark")
check "an idempotent create and its replay ($st $st2, one credential)" \
	test "$st" = 200 -a "$st2" = 200 -a "$(jq -r .id "$T/body")" = "$cred2"
refused=0
for b in "{\"auth\":{\"type\":\"static_bearer\",\"token\":\"$tok4 x\",\"mcp_server_url\":\"https://r.example.com/\"}}" \
	"{\"auth\":{\"type\":\"mcp_oauth\",\"access_token\":\"$tok4\",\"mcp_server_url\":\"https://r.example.com/\"}}" \
	"{\"auth\":{\"type\":\"static_bearer\",\"token\":\"$tok4\",\"mcp_server_url\":\"ftp://r.example.com/\"}}" \
	"{\"auth\":{\"type\":\"static_bearer\",\"token\":\"$tok4\",\"mcp_server_url\":\"https://at-rest.example.com/mcp\"}}"; do
	st=$(call POST "/v1/vaults/$vault/credentials" "$b")
	[ "$st" = 400 ] || [ "$st" = 409 ] && refused=$((refused + 1))
done
check "bodies with a bad token, another auth type, a bad URL, a taken URL: refused ($refused of 4)" \
	test "$refused" = 4

# a session with the vault, and what its turns would present
agent=$(call POST /v1/agents '{"name":"at-rest","model":"claude-opus-5-5"}' >/dev/null && jq -r .id "$T/body")
env=$(call POST /v1/environments '{"name":"at-rest","config":{"type":"self_hosted"}}' >/dev/null &&
	jq -r .id "$T/body")
st=$(call POST /v1/sessions "{\"agent\":\"$agent\",\"environment_id\":\"$env\",\"vault_ids\":[\"$vault\"]}")
session=$(jq -r .id "$T/body")
check "a session with the vault ($session)" test "$st" = 200 -a "$(jq -c .vault_ids "$T/body")" = "[\"$vault\"]"
"${API[@]}" -c "$CONFIG" vault check "$session" >"$T/check.out" 2>"$T/check.err"
rc=$?
check "vault check opens both credentials (exit $rc)" test "$rc" = 0
check "... the updated token (${#tok2} bytes), not the first" \
	grep -qx "$vault $cred https://at-rest.example.com/mcp ok (${#tok2} bytes)" "$T/check.out"
check "... and the idempotent one" \
	grep -qx "$vault $cred2 https://at-rest-2.example.com/mcp ok (${#tok3} bytes)" "$T/check.out"
check "... naming the key it used" grep -q "^vault key .*vault.key: id [0-9a-f]\{16\}$" "$T/check.err"

# keys that do not open them: said so, naming the file, exit 1
probe() { # NAME KEY-FILE-CONTENT-COMMAND WANT
	local ini="$RUN/vault-probe-$1.ini" key="$RUN/vault-probe-$1.key"
	rm -f "$key"
	[ -n "$2" ] && (umask 077 && eval "$2" >"$key")
	{
		cat "$CONFIG"
		printf '\n[vault]\nkey_file = %s\n' "$key"
	} >"$ini"
	"${API[@]}" -c "$ini" vault check "$session" >"$T/probe.out" 2>&1
	rc=$?
	check "$1 key: vault check exits 1 ($rc)" test "$rc" = 1
	check "$1 key: says '$3', naming $key" \
		bash -c 'grep -q -- "$1" "$3" && grep -q -- "$2" "$3"' _ "$3" "$key" "$T/probe.out"
	check "$1 key: no credential opens" not_opened
}
not_opened() { ! grep -q " ok (" "$T/probe.out"; }
probe wrong "head -c 32 /dev/urandom" "wrong vault key"
probe short "head -c 16 /dev/urandom" "holds 16 bytes"
probe missing "" "No such file"

# at rest: the marker is in the database's files, no token is anywhere under RUN
check "the stored secrets are sealed values (v1.<key id>.)" test "$(mariadb --no-defaults \
	--socket="$RUN/mysql.sock" --user="$(id -un)" -N terrarium -e \
	"SELECT COUNT(*) FROM vault_credentials WHERE vault_id = '$vault' AND secret LIKE 'v1.%'")" = 2
search() { grep -r -l -F -D skip --exclude-dir=docker --exclude-dir=docker-exec -- "$1" "$RUN" 2>/dev/null; }
found=$(search "$mark" | grep -c "^$RUN/db/")
check "the clear marker beside the tokens is in the database's files ($found): the search reaches them" \
	test "$found" -ge 1
for t in "${tokens[@]}"; do
	where=$(search "$t")
	check "token ${t:0:16}... is nowhere in clear under $RUN${where:+ (found in: $where)}" test -z "$where"
done
check_summary
