# shellcheck shell=bash
# Opt-in: the real E2B service. TERRARIUM_LIVE_E2B_URL (API base, e.g. https://api.e2b.app),
# TERRARIUM_LIVE_E2B_KEY_FILE (a file holding the API key), optional TERRARIUM_LIVE_E2B_TEMPLATE
# (default base: it has sh, seq and printenv). Sandboxes are killed by the suite's destroys.
driver_setup() { # DIR
	live_require TERRARIUM_LIVE_E2B_URL TERRARIUM_LIVE_E2B_KEY_FILE || return 2
	driver_config "$1" e2b url="$TERRARIUM_LIVE_E2B_URL" api_key_file="$TERRARIUM_LIVE_E2B_KEY_FILE" \
		image="${TERRARIUM_LIVE_E2B_TEMPLATE:-base}" timeout_seconds=60
}
