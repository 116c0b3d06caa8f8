# Opt-in: the real Daytona service. TERRARIUM_LIVE_DAYTONA_URL (API base including /api, e.g.
# https://app.daytona.io/api), TERRARIUM_LIVE_DAYTONA_KEY_FILE (a file holding the API key),
# optional TERRARIUM_LIVE_DAYTONA_SNAPSHOT (default: the organisation's default snapshot).
driver_setup() { # DIR: write $CONFIG
	if [ -z "${TERRARIUM_LIVE_DAYTONA_URL:-}" ] || [ -z "${TERRARIUM_LIVE_DAYTONA_KEY_FILE:-}" ]; then
		SKIP_REASON="TERRARIUM_LIVE_DAYTONA_URL and TERRARIUM_LIVE_DAYTONA_KEY_FILE are not set"
		return 2
	fi
	CONFIG=$1/conformance.ini
	cat >"$CONFIG" <<INI
[sandbox]
backend = daytona
[daytona]
url = $TERRARIUM_LIVE_DAYTONA_URL
api_key_file = $TERRARIUM_LIVE_DAYTONA_KEY_FILE
image = ${TERRARIUM_LIVE_DAYTONA_SNAPSHOT:-}
timeout_seconds = 60
INI
}
