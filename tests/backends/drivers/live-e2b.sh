# Opt-in: the real E2B service. TERRARIUM_LIVE_E2B_URL (API base, e.g. https://api.e2b.app),
# TERRARIUM_LIVE_E2B_KEY_FILE (a file holding the API key), optional TERRARIUM_LIVE_E2B_TEMPLATE
# (default base: it has sh, seq and printenv). Sandboxes are killed by the suite's destroys.
driver_setup() { # DIR: write $CONFIG
	if [ -z "${TERRARIUM_LIVE_E2B_URL:-}" ] || [ -z "${TERRARIUM_LIVE_E2B_KEY_FILE:-}" ]; then
		SKIP_REASON="TERRARIUM_LIVE_E2B_URL and TERRARIUM_LIVE_E2B_KEY_FILE are not set"
		return 2
	fi
	CONFIG=$1/conformance.ini
	cat >"$CONFIG" <<INI
[sandbox]
backend = e2b
[e2b]
url = $TERRARIUM_LIVE_E2B_URL
api_key_file = $TERRARIUM_LIVE_E2B_KEY_FILE
image = ${TERRARIUM_LIVE_E2B_TEMPLATE:-base}
timeout_seconds = 60
INI
}
