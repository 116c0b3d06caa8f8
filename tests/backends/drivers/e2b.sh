# shellcheck shell=bash
# E2B against its protocol fake: the API and envd (the in-sandbox daemon) on one loopback port.
# The fake answers "domain": "localhost:PORT", so the driver reaches envd at
# http://49983-<id>.localhost:PORT (sandbox/e2b.c, envd address).
driver_setup() { # DIR
	start_http_fake "$1" fake-e2b.mjs e2b_ || return 1
	driver_config "$1" e2b url="$FAKE_URL" api_key_file="$1/api.key" image=base timeout_seconds=10
}
# Checks past the suite: time limits, unknown commands, network at create, paused sandboxes.
driver_check() { remote_extra_check; }
