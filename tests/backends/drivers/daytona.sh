# Daytona against its protocol fake (sandbox API and toolbox execute), under /api as the real
# service serves it: sandbox lists as a plain array, execute answering {exitCode, result}.
driver_setup() { # DIR: start the fake, write $CONFIG, set $FAKE_LOG
	local dir=$1
	printf 'dtn_%s\n' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$dir/api.key"
	start_bg "$dir/fake.log" node "$HERE/fake-daytona.mjs" --port-file "$dir/port" \
		--api-key-file "$dir/api.key" || return 1
	wait_for "$dir/port" || return 1
	FAKE_URL="http://127.0.0.1:$(cat "$dir/port")"
	FAKE_LOG="$FAKE_URL/__fake/log"
	CONFIG=$dir/conformance.ini
	cat >"$CONFIG" <<INI
[sandbox]
backend = daytona
[daytona]
url = $FAKE_URL/api
api_key_file = $dir/api.key
timeout_seconds = 10
INI
}
# Checks past the suite: time limits, unknown commands, networkBlockAll, stopped sandboxes,
# empty arguments.
driver_check() { # DIR
	"$ROOT/$BUILD/test_remote_extra" -c "$CONFIG" -f "$FAKE_URL"
}
