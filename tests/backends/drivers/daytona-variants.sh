# shellcheck shell=bash
# Daytona against its protocol fake giving the other answer shapes deployments give: the sandbox
# list as a page ({items: [...]}, newer API servers) and execute's {code, result} (daemons before
# the exitCode rename). The driver reads both. Checks past the suite as daytona.sh.
driver_setup() { # DIR
	start_http_fake "$1" fake-daytona.mjs dtn_ --list-shape items --exit-field code || return 1
	driver_config "$1" daytona url="$FAKE_URL/api" api_key_file="$1/api.key" timeout_seconds=10
}
driver_check() { # DIR
	remote_extra_check
	# the daemon listens inside the sandbox: commands reach it with the sandbox's token only
	inside_check daytona-variants "$(fake_log "$FAKE_LOG")"
}
