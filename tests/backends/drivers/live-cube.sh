# Opt-in: a real CubeSandbox deployment (E2B protocol). TERRARIUM_LIVE_CUBE_URL (its E2B API,
# e.g. http://localhost:3000), TERRARIUM_LIVE_CUBE_KEY_FILE, TERRARIUM_LIVE_CUBE_TEMPLATE (the
# template id; Cube has no default). Its sandbox domain must be reachable over https (CubeProxy
# with a certificate libcurl trusts: set CURL_CA_BUNDLE or SSL_CERT_FILE as Cube's docs say).
driver_setup() { # DIR: write $CONFIG
	if [ -z "${TERRARIUM_LIVE_CUBE_URL:-}" ] || [ -z "${TERRARIUM_LIVE_CUBE_KEY_FILE:-}" ] ||
		[ -z "${TERRARIUM_LIVE_CUBE_TEMPLATE:-}" ]; then
		SKIP_REASON="TERRARIUM_LIVE_CUBE_URL, _KEY_FILE and _TEMPLATE are not set"
		return 2
	fi
	CONFIG=$1/conformance.ini
	cat >"$CONFIG" <<INI
[sandbox]
backend = cube
[cube]
url = $TERRARIUM_LIVE_CUBE_URL
api_key_file = $TERRARIUM_LIVE_CUBE_KEY_FILE
image = $TERRARIUM_LIVE_CUBE_TEMPLATE
timeout_seconds = 60
INI
}
