# shellcheck shell=bash
# shellcheck disable=SC2034 # SERVER_PID and SERVER_URL are for the scripts that source this
# lib-server.sh: a test's server on a loopback port, in the background (sourced).
#   start_server LOG PORT_FILE COMMAND...   runs COMMAND (a server that writes its port to
#                       PORT_FILE once it listens) with its output in LOG; sets SERVER_PID and
#                       SERVER_URL (http://127.0.0.1:PORT); 1 when PORT_FILE is not written
#                       within SERVER_START_S seconds
#   stop_server         stops it by its PID (an EXIT trap calls it)
SERVER_START_S=10
SERVER_PID=
SERVER_URL=
start_server() { # start_server LOG PORT_FILE COMMAND...
	local log=$1 port_file=$2
	shift 2
	"$@" >"$log" 2>&1 &
	SERVER_PID=$!
	for _ in $(seq 1 $((SERVER_START_S * 10))); do
		[ -s "$port_file" ] && break
		sleep 0.1
	done
	[ -s "$port_file" ] || return 1
	SERVER_URL="http://127.0.0.1:$(cat "$port_file")"
}
stop_server() {
	[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
	SERVER_PID=
}
