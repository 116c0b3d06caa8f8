#!/usr/bin/env bash
# The curl examples of the seed pages (/work/shared/seeds: 000 product page, 002/003 cloud
# environment setup), run against a live terrarium and checked with jq.
#
#   TERRARIUM_URL              base URL of the API (replaces http://localhost:38080), required
#   TERRARIUM_KEY              API key (replaces $OMA_API_KEY / $JUGLOW_API_KEY), required
#   TERRARIUM_BACKEND          sandbox backend behind TERRARIUM_URL, default "local"
#   TERRARIUM_URL_docker       optional: a deployment whose backend admits packages
#   TERRARIUM_URL_opensandbox  optional: a deployment that admits packages and limited networking
#   TERRARIUM_HAS_SESSIONS     optional: set once /v1/sessions and /v1/agents exist
#
# Seed 002 uses vendor header names (juglow-version, juglow-beta); they are sent here as
# anthropic-version / anthropic-beta, as in seed 003. Where the seeds disagree, 000 wins.
# Prints "N passed, M failed" and exits non-zero when anything failed.
set -uo pipefail

: "${TERRARIUM_URL:?TERRARIUM_URL must be set}"
: "${TERRARIUM_KEY:?TERRARIUM_KEY must be set}"
command -v jq >/dev/null || { echo "jq is required (scripts/install-deps.sh installs it)" >&2; exit 2; }

URL=${TERRARIUM_URL%/}
BACKEND=${TERRARIUM_BACKEND:-local}
URL_DOCKER=${TERRARIUM_URL_docker:-}
URL_OPENSANDBOX=${TERRARIUM_URL_opensandbox:-}
RUN=seed-$(date +%s)-$$

# The headers of every example: the key, the version and the beta.
API=(-H "x-api-key: $TERRARIUM_KEY" -H "anthropic-version: 2023-06-01"
	-H "anthropic-beta: managed-agents-2026-04-01")

tmp=$(mktemp -d)
passed=0
failed=0
cleanup_ids=()   # "base-url env-id" pairs deleted on exit

cleanup() {
	local pair
	for pair in "${cleanup_ids[@]}"; do
		curl -sS -o /dev/null -X DELETE "${pair% *}/v1/environments/${pair#* }" "${API[@]}" || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() {
	passed=$((passed + 1))
	printf 'ok   %s\n' "$1"
}

ko() {
	failed=$((failed + 1))
	printf 'FAIL %s\n' "$1"
	[ -z "${2:-}" ] || printf '     %s\n' "$(printf '%s' "$2" | head -c 800)"
}

# check NAME JSON FILTER: passes when `jq -e FILTER` is true for JSON.
check() {
	if jq -e "$3" >/dev/null 2>&1 <<<"$2"; then
		ok "$1"
	else
		ko "$1" "$2"
	fi
}

# call METHOD URL [BODY]: like the seed examples, without -f, for requests that must fail.
# Sets $status, $body and $headers (file).
call() {
	local method=$1 url=$2 data=${3-}
	local args=(-sS -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X "$method" "$url" "${API[@]}")
	[ -z "$data" ] || args+=(-H "content-type: application/json" --data "$data")
	status=$(curl "${args[@]}") || status=000
	body=$(cat "$tmp/body" 2>/dev/null)
	headers=$tmp/headers
}

header() { # header NAME: value of a response header from the last `call`
	tr -d '\r' <"$headers" | sed -n "s/^$1: //Ip" | tail -n 1
}

# expect_error NAME STATUS TYPE [ERROR_CODE]: checks the last `call` failed as described.
expect_error() {
	local name=$1 want=$2 type=$3 code=${4-}
	if [ "$status" != "$want" ]; then
		ko "$name (HTTP $status, want $want)" "$body"
		return
	fi
	local filter=".type == \"error\" and .error.type == \"$type\" and (.error.message | length > 0)
		and (.request_id | test(\"^req_[0-9A-Za-z]{24}$\"))"
	[ -z "$code" ] || filter+=" and .error.details.error_code == \"$code\""
	check "$name" "$body" "$filter"
	if [ "$(header x-should-retry)" = false ]; then
		ok "$name: x-should-retry: false"
	else
		ko "$name: x-should-retry: false" "x-should-retry: $(header x-should-retry)"
	fi
}

# The full response shape of seed 000 for a default cloud config.
DEFAULT_CONFIG='{"type":"cloud","networking":{"type":"unrestricted"},
	"packages":{"type":"packages","apt":[],"cargo":[],"gem":[],"go":[],"npm":[],"pip":[]}}'
ENV_SHAPE='(.id | test("^env_[0-9A-Za-z]{24}$")) and .type == "environment"
	and (keys - ["scope"] == ["archived_at","config","created_at","description","id","metadata","name","type","updated_at"])
	and (.created_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z$"))
	and (.updated_at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z$"))'

echo "# seeds against $URL (backend $BACKEND)"

# --- 002/003 "Create an environment" ------------------------------------------------------------
if environment=$(curl -fsS "$URL/v1/environments" "${API[@]}" \
	-H "content-type: application/json" \
	--data @- <<'EOF'
{
  "name": "python-dev",
  "config": {
    "type": "cloud",
    "networking": {"type": "unrestricted"}
  }
}
EOF
); then
	environment_id=$(jq -r '.id' <<<"$environment")
	echo "Environment ID: $environment_id"
	cleanup_ids+=("$URL $environment_id")
	check "create python-dev: environment object" "$environment" "$ENV_SHAPE"
	check "create python-dev: defaults (cloud, unrestricted, six empty package lists)" "$environment" \
		".name == \"python-dev\" and .description == null and .metadata == {} and .archived_at == null
		 and .config == $DEFAULT_CONFIG and (has(\"scope\") | not)"
else
	ko "create python-dev (curl -f failed)"
	environment_id=env_000000000000000000000000
fi

# --- 000 "Create" and "Response shape" ---------------------------------------------------------
if local_env=$(curl -fsS "$URL/v1/environments" "${API[@]}" \
	-H "content-type: application/json" \
	--data @- <<'EOF'
{
  "name": "local",
  "description": "Default analysis environment",
  "metadata": {"team": "data"},
  "config": {"type": "cloud"}
}
EOF
); then
	local_id=$(jq -r '.id' <<<"$local_env")
	cleanup_ids+=("$URL $local_id")
	check "000 create local: response shape" "$local_env" "$ENV_SHAPE and
		(del(.id, .created_at, .updated_at) == {\"type\":\"environment\",\"name\":\"local\",
		 \"description\":\"Default analysis environment\",\"metadata\":{\"team\":\"data\"},
		 \"config\":$DEFAULT_CONFIG,\"archived_at\":null})"
else
	ko "000 create local (curl -f failed)"
	local_id=env_000000000000000000000000
fi

# 000: "scope ... is rejected for cloud"
call POST "$URL/v1/environments" '{"name": "scoped", "config": {"type": "cloud"}, "scope": "organization"}'
expect_error "000 scope with cloud is rejected" 400 invalid_request_error

# --- 002/003 "Packages" --------------------------------------------------------------------------
packages_body=$(cat <<'EOF'
{
  "name": "data-analysis",
  "config": {
    "type": "cloud",
    "packages": {
      "pip": ["pandas", "numpy", "scikit-learn"],
      "npm": ["express"]
    },
    "networking": {"type": "unrestricted"}
  }
}
EOF
)
pkg_url=
if [ "$BACKEND" != local ]; then pkg_url=$URL
elif [ -n "$URL_DOCKER" ]; then pkg_url=${URL_DOCKER%/}
elif [ -n "$URL_OPENSANDBOX" ]; then pkg_url=${URL_OPENSANDBOX%/}
fi
if [ -n "$pkg_url" ]; then
	if environment_pkgs=$(curl -fsS "$pkg_url/v1/environments" "${API[@]}" \
		-H "content-type: application/json" \
		--data "$packages_body"); then
		cleanup_ids+=("$pkg_url $(jq -r .id <<<"$environment_pkgs")")
		check "create data-analysis ($pkg_url): packages stored, all six lists" "$environment_pkgs" "$ENV_SHAPE and
			.config.packages == {\"type\":\"packages\",\"apt\":[],\"cargo\":[],\"gem\":[],\"go\":[],
			 \"npm\":[\"express\"],\"pip\":[\"pandas\",\"numpy\",\"scikit-learn\"]}
			and .config.networking == {\"type\":\"unrestricted\"}"
	else
		ko "create data-analysis on $pkg_url (curl -f failed)"
	fi
fi
if [ "$BACKEND" = local ]; then
	# 000: "a deployment using the host-process local backend rejects non-empty package
	# configuration at admission".
	call POST "$URL/v1/environments" "$packages_body"
	expect_error "create data-analysis on the local backend: 422" 422 invalid_request_error
fi

# --- 002/003 "Networking" (limited) --------------------------------------------------------------
limited_body='{
      "name": "api-access",
      "config": {
        "type": "cloud",
        "networking": {
          "type": "limited",
          "allowed_hosts": ["api.example.com"],
          "allow_mcp_servers": true,
          "allow_package_managers": true
        }
      }
    }'
lim_url=
if [ "$BACKEND" = opensandbox ]; then lim_url=$URL
elif [ -n "$URL_OPENSANDBOX" ]; then lim_url=${URL_OPENSANDBOX%/}
fi
if [ -n "$lim_url" ]; then
	if environment_lim=$(curl -fsS "$lim_url/v1/environments" "${API[@]}" \
		-H "content-type: application/json" \
		-d "$limited_body"); then
		cleanup_ids+=("$lim_url $(jq -r .id <<<"$environment_lim")")
		check "create api-access ($lim_url): limited policy with all four fields" "$environment_lim" "$ENV_SHAPE and
			.config.networking == {\"type\":\"limited\",\"allowed_hosts\":[\"api.example.com\"],
			 \"allow_mcp_servers\":true,\"allow_package_managers\":true}"
	else
		ko "create api-access on $lim_url (curl -f failed)"
	fi
fi
if [ "$BACKEND" != opensandbox ]; then
	# 000: "Deployments using local, Docker, E2B, CubeSandbox, or Daytona return 422 for a
	# limited policy instead of storing unenforced intent."
	call POST "$URL/v1/environments" "$limited_body"
	expect_error "create api-access on the $BACKEND backend: 422" 422 invalid_request_error
fi

# --- 002/003 "Use the environment in a session" (once sessions exist) ----------------------------
if [ -n "${TERRARIUM_HAS_SESSIONS:-}" ]; then
	if agent=$(curl -fsS "$URL/v1/agents" "${API[@]}" \
		-H "content-type: application/json" \
		-d "{\"name\": \"$RUN-agent\", \"model\": \"claude-sonnet-4-5\"}"); then
		agent_id=$(jq -r .id <<<"$agent")
		if session=$(curl -fsS "$URL/v1/sessions" "${API[@]}" \
			-H "content-type: application/json" \
			--data @- <<EOF
{
  "agent": "$agent_id",
  "environment_id": "$local_id"
}
EOF
		); then
			session_id=$(jq -r .id <<<"$session")
			check "create session for the local environment" "$session" \
				"(.id | startswith(\"sesn_\")) and .type == \"session\" and .environment_id == \"$local_id\""
			# 000: "Deleting an environment referenced by a session returns 409."
			call DELETE "$URL/v1/environments/$local_id"
			expect_error "000 delete a referenced environment: 409" 409 conflict_error
			call DELETE "$URL/v1/sessions/$session_id"
			check "delete the session" "$body" ".type == \"session_deleted\""
		else
			ko "create session (curl -f failed)"
		fi
	else
		ko "create agent (curl -f failed)"
	fi
fi

# --- 002/003 "Manage environments" ---------------------------------------------------------------
# List environments
if environments=$(curl -fsS -D "$tmp/list-headers" "$URL/v1/environments" "${API[@]}"); then
	check "list: {data, next_page} with the new environments, newest first" "$environments" \
		"(keys == [\"data\",\"next_page\"]) and (.data | type == \"array\" and length <= 100)
		 and (.next_page == null or (.next_page | type == \"string\"))
		 and ([.data[].id] | index(\"$local_id\") != null and index(\"$environment_id\") != null)
		 and ([.data[].created_at] | . == (sort | reverse))
		 and (if $(jq .created_at <<<"$local_env") != $(jq .created_at <<<"$environment")
		      then [.data[].id] | index(\"$local_id\") < index(\"$environment_id\") else true end)"
	rid=$(tr -d '\r' <"$tmp/list-headers" | sed -n 's/^request-id: //Ip' | tail -n 1)
	ctype=$(tr -d '\r' <"$tmp/list-headers" | sed -n 's/^content-type: //Ip' | tail -n 1)
	if [[ $rid =~ ^req_[0-9A-Za-z]{24}$ && $ctype == application/json* ]]; then
		ok "list: request-id and content-type headers"
	else
		ko "list: request-id and content-type headers" "request-id: $rid; content-type: $ctype"
	fi
else
	ko "list (curl -f failed)"
fi

# Retrieve a specific environment
if env=$(curl -fsS "$URL/v1/environments/$environment_id" "${API[@]}"); then
	check "retrieve: same object as created" "$env" ". == $environment"
else
	ko "retrieve (curl -f failed)"
fi

# Archive an environment (read-only, existing sessions continue)
if archived=$(curl -fsS -X POST "$URL/v1/environments/$environment_id/archive" "${API[@]}"); then
	check "archive: archived_at set, rest unchanged" "$archived" \
		"$ENV_SHAPE and (.archived_at | type == \"string\")
		 and del(.archived_at, .updated_at) == ($environment | del(.archived_at, .updated_at))"
	# 000: "Archive is idempotent."
	if again=$(curl -fsS -X POST "$URL/v1/environments/$environment_id/archive" "${API[@]}"); then
		check "000 archive again: unchanged" "$again" ". == $archived"
	else
		ko "000 archive again (curl -f failed)"
	fi
	# 000: "Archived Environments are read-only."
	call POST "$URL/v1/environments/$environment_id" '{"name": "renamed"}'
	expect_error "000 update an archived environment" 400 invalid_request_error environment_archived
	# 000: "The list supports include_archived"
	call GET "$URL/v1/environments?limit=1000"
	check "000 list hides archived environments" "$body" "[.data[].id] | index(\"$environment_id\") == null"
	call GET "$URL/v1/environments?limit=1000&include_archived=true"
	check "000 list include_archived=true shows them" "$body" "[.data[].id] | index(\"$environment_id\") != null"
else
	ko "archive (curl -f failed)"
fi

# Delete an environment (only if no sessions reference it)
if deleted=$(curl -fsS -X DELETE "$URL/v1/environments/$environment_id" "${API[@]}"); then
	check "delete: environment_deleted" "$deleted" ". == {\"id\": \"$environment_id\", \"type\": \"environment_deleted\"}"
	call GET "$URL/v1/environments/$environment_id"
	expect_error "retrieve after delete: 404" 404 not_found_error
else
	ko "delete (curl -f failed)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
