# shellcheck shell=bash
# Opt-in: a real CubeSandbox deployment (E2B protocol). TERRARIUM_LIVE_CUBE_URL (its E2B API,
# e.g. http://localhost:3000), TERRARIUM_LIVE_CUBE_KEY_FILE, TERRARIUM_LIVE_CUBE_TEMPLATE (the
# template id; Cube has no default). Its sandbox domain must be reachable over https (CubeProxy
# with a certificate libcurl trusts: set CURL_CA_BUNDLE or SSL_CERT_FILE as Cube's docs say).
driver_setup() { # DIR
	live_require TERRARIUM_LIVE_CUBE_URL TERRARIUM_LIVE_CUBE_KEY_FILE TERRARIUM_LIVE_CUBE_TEMPLATE ||
		return 2
	driver_config "$1" cube url="$TERRARIUM_LIVE_CUBE_URL" api_key_file="$TERRARIUM_LIVE_CUBE_KEY_FILE" \
		image="$TERRARIUM_LIVE_CUBE_TEMPLATE" timeout_seconds=60
}
