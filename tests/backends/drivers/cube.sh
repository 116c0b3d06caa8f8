# shellcheck shell=bash
# CubeSandbox (the E2B protocol at its own URL, settings in [cube]) against the E2B fake (e2b.sh).
driver_setup() { # DIR
	start_http_fake "$1" fake-e2b.mjs e2b_ || return 1
	driver_config "$1" cube url="$FAKE_URL" api_key_file="$1/api.key" image=cube-base timeout_seconds=10
}
driver_check() { remote_extra_check; }
