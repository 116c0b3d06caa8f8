# Docker against its protocol fake on a unix socket.
driver_setup() { # DIR: start the fake, write $CONFIG, set $FAKE_LOG
	local dir=$1
	start_bg "$dir/fake.log" node "$HERE/fake-docker.mjs" --socket "$dir/docker.sock" || return 1
	wait_for "$dir/docker.sock" || return 1
	FAKE_LOG="unix:$dir/docker.sock"
	CONFIG=$dir/conformance.ini
	cat >"$CONFIG" <<INI
[sandbox]
backend = docker
[docker]
socket = $dir/docker.sock
image = debian:12-slim
timeout_seconds = 10
INI
}

driver_check() { # DIR: what the suite cannot see from the driver's side ("N passed, N failed")
	local log p=0 f=0
	log=$(fake_log "$FAKE_LOG")
	one() { if "${@:2}"; then echo "ok   $1"; p=$((p + 1)); else echo "FAIL $1"; f=$((f + 1)); fi; }
	one "every container was created without a network, named and labelled as terrarium's" \
		test "$(jq -c '[.created[] | [.networkMode, .labels["terrarium.managed"], (.name == "/terrarium-" + .labels["terrarium.session"])]] | unique' <<<"$log")" \
		= '[["none","true",true]]'
	one "the missing image was pulled once, then the create repeated" \
		test "$(jq -c '[.calls[] | select(.path | test("^/(containers|images)/create$")) | "\(.path) \(.status)"][0:3]' <<<"$log")" \
		= '["/containers/create 404","/images/create 200","/containers/create 201"]'
	echo "$p passed, $f failed"
	[ $f -eq 0 ]
}
