# shellcheck shell=bash
# shellcheck disable=SC2034 # SERVER_PID, SERVER_URL and SERVER_DIR are for the scripts that source this
# lib-server.sh: a test's server on a loopback port, in the background (sourced).
#   start_server LOG PORT_FILE COMMAND...   runs COMMAND (a server that writes its port to
#                       PORT_FILE once it listens) with its output in LOG; sets SERVER_PID and
#                       SERVER_URL (http://127.0.0.1:PORT); 1 when PORT_FILE is not written
#                       within SERVER_START_S seconds
#   stop_server         stops it by its PID (server_scratch's EXIT trap calls it)
#   server_scratch      SERVER_DIR: a new temporary directory; on exit the server is stopped
#                       and the directory removed
# With tests/lib-check.sh, counted:
#   serve WHAT LOG PORT_FILE COMMAND...   start_server; ok "WHAT listens on port N", or
#                       not_ok "WHAT starts: LOG" and the script ends
#   served WHAT LOG     WHAT did not crash, and logged nothing but its "listening" line
SERVER_START_S=10
SERVER_PID=
SERVER_URL=
SERVER_DIR=
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
server_scratch() {
	SERVER_DIR=$(mktemp -d) || exit 1
	trap _server_cleanup EXIT
}
_server_cleanup() {
	stop_server
	[ -z "$SERVER_DIR" ] || rm -rf "$SERVER_DIR"
}
serve() { # serve WHAT LOG PORT_FILE COMMAND...
	local what=$1 log=$2 port_file=$3
	shift
	if ! start_server "$@"; then
		not_ok "$what starts: $(cat "$log")"
		check_exit 1
	fi
	ok "$what listens on port $(cat "$port_file")"
}
served() { # served WHAT LOG
	check "$1 did not crash" kill -0 "$SERVER_PID"
	check "$1 logged no error" test "$(grep -cv '^listening ' "$2")" = 0
}
