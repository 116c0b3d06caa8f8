# Opt-in: a real Docker Engine. TERRARIUM_LIVE_DOCKER_SOCKET, optional TERRARIUM_LIVE_DOCKER_IMAGE
# (default debian:12-slim; pulled when missing).
driver_setup() { # DIR: write $CONFIG
	if [ -z "${TERRARIUM_LIVE_DOCKER_SOCKET:-}" ]; then
		SKIP_REASON="TERRARIUM_LIVE_DOCKER_SOCKET is not set"
		return 2
	fi
	CONFIG=$1/conformance.ini
	cat >"$CONFIG" <<INI
[sandbox]
backend = docker
[docker]
socket = $TERRARIUM_LIVE_DOCKER_SOCKET
image = ${TERRARIUM_LIVE_DOCKER_IMAGE:-debian:12-slim}
timeout_seconds = 120
INI
}
