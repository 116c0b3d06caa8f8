# shellcheck shell=bash
# scripts/stack/docker.sh (sourced by scripts/lib-stack.sh): a Docker Engine for the docker
# backend (BACKEND=docker make up, tests/docker/run.sh, the benchmarks).
#
# Environment: DOCKER_SOCKET (an Engine to use), DOCKER_DATA_ROOT (the data root of a dockerd
# started here).
#
# docker_engine RUN sets STACK_DOCKER_SOCKET to an Engine that answers, in this order: the
# socket DOCKER_SOCKET names; the system's /var/run/docker.sock; the Engine another terrarium
# script started (its socket is in STACK_DOCKER_POINTER); else it starts dockerd itself: data
# root DOCKER_DATA_ROOT (default RUN/docker), exec root RUN/docker-exec, socket RUN/docker.sock,
# pid file RUN/dockerd.pid, log RUN/dockerd.log, and records the socket in the pointer file.
# Sets STACK_DOCKER_STARTED=1 in that case. docker_stop RUN stops a dockerd started under RUN.
# One dockerd we start at a time: they would share the docker0 bridge and iptables chains.
STACK_DOCKER_POINTER=/run/terrarium/docker-engine
STACK_DOCKER_SOCKET=
# shellcheck disable=SC2034 # set by the callers, read by api_config (api.sh)
STACK_DOCKER_IMAGE=
STACK_DOCKER_STARTED=0
STACK_DOCKER_START_S=60

# docker_answers SOCKET: does a Docker Engine answer /_ping on SOCKET?
docker_answers() {
	[ -S "$1" ] || return 1
	[ "$(curl -s --max-time 5 --unix-socket "$1" http://localhost/_ping 2>/dev/null)" = OK ]
}

docker_engine() {
	local run=$1 sock bin pid data
	STACK_DOCKER_STARTED=0
	_stack_check_run "$run" || return 1
	if [ -n "${DOCKER_SOCKET:-}" ]; then
		if docker_answers "$DOCKER_SOCKET"; then
			STACK_DOCKER_SOCKET=$DOCKER_SOCKET
			return 0
		fi
		_stack_err "DOCKER_SOCKET=$DOCKER_SOCKET: no Docker Engine answers there"
		return 1
	fi
	for sock in /var/run/docker.sock "$(cat "$STACK_DOCKER_POINTER" 2>/dev/null)"; do
		if [ -n "$sock" ] && docker_answers "$sock"; then
			_stack_say "using the Docker Engine on $sock"
			STACK_DOCKER_SOCKET=$sock
			return 0
		fi
	done
	bin=$(_stack_bin dockerd) || {
		_stack_err "dockerd not found (scripts/install-deps.sh installs docker.io)"
		return 1
	}
	if [ "$(id -u)" -ne 0 ]; then
		_stack_err "no Docker Engine answers and dockerd needs root: start one, or name its" \
			"socket in DOCKER_SOCKET"
		return 1
	fi
	sock=$run/docker.sock
	_stack_check_socket_len "$sock" || return 1
	data=${DOCKER_DATA_ROOT:-$run/docker}
	mkdir -p "$data" "$run/docker-exec" "$(dirname "$STACK_DOCKER_POINTER")" || return 1
	if pid=$(stack_running "$run/dockerd.pid" dockerd); then
		_stack_say "dockerd already running (pid $pid), not answering yet"
	else
		_stack_say "starting dockerd (data root $data, socket $sock)"
		_stack_spawn "$run/dockerd.pid" "$run/dockerd.log" "$bin" --data-root "$data" \
			--exec-root "$run/docker-exec" --pidfile "$run/docker-exec/dockerd.pid" \
			-H "unix://$sock" --group "$(getent group docker >/dev/null && echo docker || id -gn)" || {
			_stack_err "dockerd did not start"
			_stack_tail "$run/dockerd.log"
			return 1
		}
		pid=$STACK_SPAWNED_PID
	fi
	_stack_wait_ready "$run" dockerd "$pid" dockerd "$STACK_DOCKER_START_S" docker_stop \
		docker_answers "$sock" ||
		return 1
	printf '%s\n' "$sock" >"$STACK_DOCKER_POINTER.tmp" && mv -f "$STACK_DOCKER_POINTER.tmp" \
		"$STACK_DOCKER_POINTER"
	_stack_say "dockerd ready (pid $pid)"
	# shellcheck disable=SC2034 # read by api_config (api.sh) and the callers
	STACK_DOCKER_SOCKET=$sock
	# shellcheck disable=SC2034 # read by callers
	STACK_DOCKER_STARTED=1
}

# docker_engine_shared: the Engine of tests and benchmarks, shared by concurrent runs: as
# docker_engine with RUN STACK_DOCKER_SHARED_RUN and data root DOCKER_DATA_ROOT (default
# /var/lib/terrarium-docker, kept across runs and clones so the sandbox image is built once).
# The caller holds a shared lock while it uses the Engine; docker_engine_release drops it and,
# when no other run holds one, stops a dockerd started there.
STACK_DOCKER_SHARED_RUN=/run/terrarium/docker
STACK_DOCKER_USERS_FD=
docker_engine_shared() {
	local start_fd rc
	mkdir -p "$STACK_DOCKER_SHARED_RUN" || return 1
	exec {STACK_DOCKER_USERS_FD}>>"$STACK_DOCKER_SHARED_RUN.users.lock" || return 1
	flock -s "$STACK_DOCKER_USERS_FD" || return 1
	exec {start_fd}>>"$STACK_DOCKER_SHARED_RUN.start.lock" || return 1
	flock -x "$start_fd" # one starter at a time
	DOCKER_DATA_ROOT=${DOCKER_DATA_ROOT:-/var/lib/terrarium-docker} \
		docker_engine "$STACK_DOCKER_SHARED_RUN"
	rc=$?
	exec {start_fd}>&-
	return $rc
}

docker_engine_release() {
	local fd=$STACK_DOCKER_USERS_FD
	[ -n "$fd" ] || return 0
	STACK_DOCKER_USERS_FD=
	flock -u "$fd"
	if flock -x -n "$fd" && [ -e "$STACK_DOCKER_SHARED_RUN/dockerd.pid" ]; then
		docker_stop "$STACK_DOCKER_SHARED_RUN"
	fi
	exec {fd}>&-
}

# docker_stop RUN: stop the dockerd started under RUN (SIGTERM: it stops its containers), by PID.
docker_stop() {
	_stack_check_run "$1" || return 1
	[ -e "$1/dockerd.pid" ] || return 0
	_stack_stop "$1/dockerd.pid" dockerd TERM 60 dockerd || return 1
	if [ "$(cat "$STACK_DOCKER_POINTER" 2>/dev/null)" = "$1/docker.sock" ]; then
		rm -f "$STACK_DOCKER_POINTER"
	fi
	rm -f "$1/docker.sock"
}

