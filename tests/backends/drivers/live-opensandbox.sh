# Opt-in: a real OpenSandbox server. TERRARIUM_LIVE_OPENSANDBOX_URL (lifecycle base URL, without
# /v1), TERRARIUM_LIVE_OPENSANDBOX_KEY_FILE, optional TERRARIUM_LIVE_OPENSANDBOX_IMAGE (an image
# with sh, seq and printenv; default python:3.11-slim).
driver_setup() { # DIR: write $CONFIG
	if [ -z "${TERRARIUM_LIVE_OPENSANDBOX_URL:-}" ] || [ -z "${TERRARIUM_LIVE_OPENSANDBOX_KEY_FILE:-}" ]; then
		SKIP_REASON="TERRARIUM_LIVE_OPENSANDBOX_URL and TERRARIUM_LIVE_OPENSANDBOX_KEY_FILE are not set"
		return 2
	fi
	CONFIG=$1/conformance.ini
	cat >"$CONFIG" <<INI
[sandbox]
backend = opensandbox
[opensandbox]
url = $TERRARIUM_LIVE_OPENSANDBOX_URL
api_key_file = $TERRARIUM_LIVE_OPENSANDBOX_KEY_FILE
image = ${TERRARIUM_LIVE_OPENSANDBOX_IMAGE:-python:3.11-slim}
timeout_seconds = 60
INI
}
