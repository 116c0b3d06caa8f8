# shellcheck shell=bash
# Opt-in: the real Daytona service. TERRARIUM_LIVE_DAYTONA_URL (API base including /api, e.g.
# https://app.daytona.io/api), TERRARIUM_LIVE_DAYTONA_KEY_FILE (a file holding the API key),
# optional TERRARIUM_LIVE_DAYTONA_SNAPSHOT (default: the organisation's default snapshot).
driver_setup() { # DIR
	live_require TERRARIUM_LIVE_DAYTONA_URL TERRARIUM_LIVE_DAYTONA_KEY_FILE || return 2
	driver_config "$1" daytona url="$TERRARIUM_LIVE_DAYTONA_URL" \
		api_key_file="$TERRARIUM_LIVE_DAYTONA_KEY_FILE" image="${TERRARIUM_LIVE_DAYTONA_SNAPSHOT:-}" \
		timeout_seconds=60
}
