# E2B against its protocol fake: the API and envd (the in-sandbox daemon) on one loopback port.
# The fake answers "domain": "localhost:PORT", so the driver reaches envd at
# http://49983-<id>.localhost:PORT (reconciler/backends/e2b.c, envd address).
driver_setup() { # DIR: start the fake, write $CONFIG, set $FAKE_LOG
	local dir=$1
	printf 'e2b_%s\n' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$dir/api.key"
	start_bg "$dir/fake.log" node "$HERE/fake-e2b.mjs" --port-file "$dir/port" \
		--api-key-file "$dir/api.key" || return 1
	wait_for "$dir/port" || return 1
	FAKE_URL="http://127.0.0.1:$(cat "$dir/port")"
	FAKE_LOG="$FAKE_URL/__fake/log"
	CONFIG=$dir/conformance.ini
	cat >"$CONFIG" <<INI
[sandbox]
backend = e2b
[e2b]
url = $FAKE_URL
api_key_file = $dir/api.key
image = base
timeout_seconds = 10
INI
}
# Checks past the suite: time limits, unknown commands, network at create, paused sandboxes.
driver_check() { # DIR
	"$ROOT/$BUILD/test_remote_extra" -c "$CONFIG" -f "$FAKE_URL"
}
