# OpenSandbox against its protocol fake (lifecycle, execd and egress sidecar in one server).
driver_setup() { # DIR: start the fake, write $CONFIG, set $FAKE_LOG
	local dir=$1
	head -c 18 /dev/urandom | base64 | tr -d '\n' >"$dir/api.key"
	printf '\n' >>"$dir/api.key" # a trailing newline, as editors leave it
	start_bg "$dir/fake.log" node "$HERE/fake-opensandbox.mjs" --port-file "$dir/port" \
		--api-key-file "$dir/api.key" || return 1
	wait_for "$dir/port" || return 1
	FAKE_LOG="http://127.0.0.1:$(cat "$dir/port")/__fake/log"
	CONFIG=$dir/conformance.ini
	cat >"$CONFIG" <<INI
[sandbox]
backend = opensandbox
[opensandbox]
url = http://127.0.0.1:$(cat "$dir/port")
api_key_file = $dir/api.key
image = python:3.11-slim
timeout_seconds = 10
INI
}

driver_check() { # DIR: what the suite cannot see from the driver's side ("N passed, N failed")
	local log p=0 f=0
	log=$(fake_log "$FAKE_LOG")
	one() { if "${@:2}"; then echo "ok   $1"; p=$((p + 1)); else echo "FAIL $1"; f=$((f + 1)); fi; }
	one "every create was deny-by-default with an empty allowlist, and named" \
		test "$(jq -c '[.created[] | [.networkPolicy, (.metadata | has("terrarium.name"))]] | unique' <<<"$log")" \
		= '[[{"defaultAction":"deny","egress":[]},true]]'
	one "the fake's one-time 503 on the first lookup was retried" \
		test "$(jq -c '[.calls[] | select(.method == "GET" and .path == "/v1/sandboxes") | .status][0:2]' <<<"$log")" = "[503,200]"
	echo "$p passed, $f failed"
	[ $f -eq 0 ]
}
