# shellcheck shell=bash
# Docker against its protocol fake on a unix socket.
driver_setup() { # DIR
	start_bg "$1/fake.log" node "$HERE/fake-docker.mjs" --socket "$1/docker.sock" || return 1
	wait_for "$1/docker.sock" || return 1
	FAKE_LOG="unix:$1/docker.sock"
	driver_config "$1" docker socket="$1/docker.sock" image=debian:12-slim timeout_seconds=10
}
# What the suite cannot see from the driver's side.
driver_check() { # DIR
	local log
	log=$(fake_log "$FAKE_LOG")
	check "docker: every container was created without a network, named and labelled as terrarium's" \
		test "$(jq -c '[.created[] | [.networkMode, .labels["terrarium.managed"], (.name == "/terrarium-" + .labels["terrarium.session"])]] | unique' <<<"$log")" \
		= '[["none","true",true]]'
	check "docker: the missing image was pulled once, then the create repeated" \
		test "$(jq -c '[.calls[] | select(.path | test("^/(containers|images)/create$")) | "\(.path) \(.status)"][0:3]' <<<"$log")" \
		= '["/containers/create 404","/images/create 200","/containers/create 201"]'
}
