# shellcheck shell=bash
# OpenSandbox against its protocol fake (lifecycle, execd and egress sidecar in one server); its
# API key file ends in a newline, as editors leave it.
driver_setup() { # DIR
	start_http_fake "$1" fake-opensandbox.mjs "" || return 1
	printf '\n' >>"$1/api.key"
	driver_config "$1" opensandbox url="$FAKE_URL" api_key_file="$1/api.key" \
		image=python:3.11-slim timeout_seconds=10
}
# What the suite cannot see from the driver's side.
driver_check() { # DIR
	local log
	log=$(fake_log "$FAKE_LOG")
	check "opensandbox: every create was deny-by-default with an empty allowlist, and named" \
		test "$(jq -c '[.created[] | [.networkPolicy, (.metadata | has("terrarium.name"))]] | unique' <<<"$log")" \
		= '[[{"defaultAction":"deny","egress":[]},true]]'
	check "opensandbox: the fake's one-time 503 on the first lookup was retried" \
		test "$(jq -c '[.calls[] | select(.method == "GET" and .path == "/v1/sandboxes") | .status][0:2]' <<<"$log")" = "[503,200]"
	# execd and the sidecar listen inside the sandbox, behind the server's proxy, which passes
	# on every header but host, hop-by-hop ones, authorization and cookie
	inside_check opensandbox "$log"
}
