# shellcheck shell=bash
# Opt-in: a real Docker Engine. TERRARIUM_LIVE_DOCKER_SOCKET, optional TERRARIUM_LIVE_DOCKER_IMAGE
# (default debian:12-slim; pulled when missing).
driver_setup() { # DIR
	live_require TERRARIUM_LIVE_DOCKER_SOCKET || return 2
	driver_config "$1" docker socket="$TERRARIUM_LIVE_DOCKER_SOCKET" \
		image="${TERRARIUM_LIVE_DOCKER_IMAGE:-debian:12-slim}" timeout_seconds=120
}
