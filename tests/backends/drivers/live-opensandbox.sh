# shellcheck shell=bash
# Opt-in: a real OpenSandbox server. TERRARIUM_LIVE_OPENSANDBOX_URL (lifecycle base URL, without
# /v1), TERRARIUM_LIVE_OPENSANDBOX_KEY_FILE, optional TERRARIUM_LIVE_OPENSANDBOX_IMAGE (an image
# with sh, seq and printenv; default python:3.11-slim).
driver_setup() { # DIR
	live_require TERRARIUM_LIVE_OPENSANDBOX_URL TERRARIUM_LIVE_OPENSANDBOX_KEY_FILE || return 2
	driver_config "$1" opensandbox url="$TERRARIUM_LIVE_OPENSANDBOX_URL" \
		api_key_file="$TERRARIUM_LIVE_OPENSANDBOX_KEY_FILE" \
		image="${TERRARIUM_LIVE_OPENSANDBOX_IMAGE:-python:3.11-slim}" timeout_seconds=60
}
