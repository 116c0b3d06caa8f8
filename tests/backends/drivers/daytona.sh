# shellcheck shell=bash
# Daytona against its protocol fake (sandbox API and toolbox execute), under /api as the real
# service serves it: sandbox lists as a plain array, execute answering {exitCode, result}.
driver_setup() { # DIR
	start_http_fake "$1" fake-daytona.mjs dtn_ || return 1
	driver_config "$1" daytona url="$FAKE_URL/api" api_key_file="$1/api.key" timeout_seconds=10
}
# Checks past the suite: time limits, unknown commands, networkBlockAll, stopped sandboxes,
# empty arguments; the daemon inside never saw the API key.
driver_check() { # DIR
	remote_extra_check
	# the daemon listens inside the sandbox: commands reach it with the sandbox's token only
	inside_check daytona "$(fake_log "$FAKE_LOG")"
}
