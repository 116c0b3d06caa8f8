# shellcheck shell=bash
# scripts/stack/proc.sh (sourced by scripts/lib-stack.sh): the stack's processes. Each is started
# in a session of its own with its PID in a pid file (_stack_spawn), waited for until it answers
# (_stack_wait_ready, _stack_server_wait) and stopped by that PID once its command line is checked
# (_stack_stop: its process group too, and what remains of a group whose leader is gone).

# Fields of /proc/PID/stat after the command name: state is $1, process group is $3.
_stack_stat() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	echo "${stat##*) }"
}

# Is PID a live process (zombies count as gone)?
_stack_alive() {
	local fields
	kill -0 "$1" 2>/dev/null || return 1
	fields=$(_stack_stat "$1") || return 1
	[ "${fields%% *}" != Z ]
}

# stack_running PIDFILE WHAT: print the PID in PIDFILE and succeed when it is alive and its
# command line contains WHAT.
stack_running() {
	local pid cmd
	[ -s "$1" ] || return 1
	read -r pid <"$1" 2>/dev/null || return 1
	case "$pid" in '' | *[!0-9]*) return 1 ;; esac
	_stack_alive "$pid" || return 1
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	case "$cmd" in *"$2"*) ;; *) return 1 ;; esac
	echo "$pid"
}

# Wait up to SECONDS for PID to be gone.
_stack_wait_gone() {
	local pid=$1 n=$(($2 * 10))
	while [ $n -gt 0 ] && _stack_alive "$pid"; do
		sleep 0.1
		n=$((n - 1))
	done
	! _stack_alive "$pid"
}

# Does any process of process group PGID remain?
_stack_group_alive() {
	kill -0 -- "-$1" 2>/dev/null
}

# PIDs of the processes in process group PGID whose command line contains WHAT.
_stack_group_members() {
	local pgid=$1 what=$2 pid cmd
	for pid in $(pgrep -g "$pgid" 2>/dev/null); do
		cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
		case "$cmd" in *"$what"*) echo "$pid" ;; esac
	done
}

# The leader recorded in PIDFILE is gone (killed -9, crashed) but processes of its group (it
# was started in its own session: the group id is its PID) may remain, e.g. API workers of an
# older build: send them SIGNAL, wait, SIGKILL what remains. Only members whose command line
# contains WHAT are signalled (a live group with that id is ours: the kernel does not reuse a
# PID while a group of that id exists).
_stack_stop_orphans() {
	local pidfile=$1 what=$2 sig=$3 secs=$4 label=$5 pgid pids n
	read -r pgid <"$pidfile" 2>/dev/null || return 0
	case "$pgid" in '' | *[!0-9]*) return 0 ;; esac
	pids=$(_stack_group_members "$pgid" "$what")
	[ -n "$pids" ] || return 0
	_stack_say "$label (pid $pgid) is gone; stopping what remains of its group: ${pids//$'\n'/ }"
	# shellcheck disable=SC2086
	kill "-$sig" $pids 2>/dev/null || true
	n=$((secs * 10))
	while [ $n -gt 0 ] && [ -n "$(_stack_group_members "$pgid" "$what")" ]; do
		sleep 0.1
		n=$((n - 1))
	done
	pids=$(_stack_group_members "$pgid" "$what")
	if [ -n "$pids" ]; then
		_stack_err "processes of $label's group $pgid remain: SIGKILL"
		# shellcheck disable=SC2086
		kill -KILL $pids 2>/dev/null || true
	fi
}

# _stack_stop PIDFILE WHAT SIGNAL SECONDS LABEL: signal the process, wait, then SIGKILL it (its
# whole process group when it leads one: workers go too). When the recorded process is gone,
# what remains of its process group is stopped (_stack_stop_orphans). A missing or foreign pid
# file is removed without killing anything.
_stack_stop() {
	local pidfile=$1 what=$2 sig=$3 secs=$4 label=$5 pid pgrp="" n
	if ! pid=$(stack_running "$pidfile" "$what"); then
		[ -s "$pidfile" ] && _stack_stop_orphans "$pidfile" "$what" "$sig" "$secs" "$label"
		rm -f "$pidfile"
		return 0
	fi
	read -r _ _ pgrp _ <<<"$(_stack_stat "$pid")"
	_stack_say "stopping $label (pid $pid, SIG$sig)"
	kill "-$sig" "$pid" 2>/dev/null || true
	if ! _stack_wait_gone "$pid" "$secs"; then
		_stack_err "$label (pid $pid) still running after ${secs}s: SIGKILL"
		if [ "$pgrp" = "$pid" ]; then
			kill -KILL -- "-$pid" 2>/dev/null || true
		else
			kill -KILL "$pid" 2>/dev/null || true
		fi
		_stack_wait_gone "$pid" 5 || {
			_stack_err "$label (pid $pid) survived SIGKILL"
			return 1
		}
	fi
	# Children (API workers) finish their request and leave after the supervisor; give them the
	# same time, then kill what remains of the group.
	if [ "$pgrp" = "$pid" ]; then
		n=$((secs * 10))
		while [ $n -gt 0 ] && _stack_group_alive "$pid"; do
			sleep 0.1
			n=$((n - 1))
		done
		if _stack_group_alive "$pid"; then
			_stack_err "processes of $label's group $pid remain: SIGKILL"
			kill -KILL -- "-$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$pidfile"
}

# _stack_wait_ready RUN NAME PID WHAT SECONDS STOPFN CMD...: wait until CMD succeeds while PID
# (RUN/NAME.pid's process, WHAT in messages) lives. When it exits first, its pid file goes; after
# SECONDS, STOPFN RUN NAME stops it. Either way the end of RUN/NAME.log is shown and 1 returned.
_stack_wait_ready() {
	local run=$1 name=$2 pid=$3 what=$4 secs=$5 stopfn=$6 n
	shift 6
	n=$((secs * 10))
	until "$@" >/dev/null 2>&1; do
		if ! _stack_alive "$pid"; then
			_stack_err "$what exited during startup"
			_stack_tail "$run/$name.log"
			rm -f "$run/$name.pid"
			return 1
		fi
		n=$((n - 1))
		if [ $n -le 0 ]; then
			_stack_err "$what (pid $pid) not ready after ${secs}s"
			_stack_tail "$run/$name.log"
			"$stopfn" "$run" "$name"
			return 1
		fi
		sleep 0.1
	done
}

# _stack_spawn PIDFILE LOG CMD...: run CMD in the background in a new session (a terminal's ^C
# or the caller's exit does not reach it) with stdin from /dev/null and stdout+stderr appended
# to LOG; its PID goes to PIDFILE before it starts, and to STACK_SPAWNED_PID.
STACK_SPAWNED_PID=
_stack_spawn() {
	local pidfile=$1 log=$2 n=50
	shift 2
	rm -f "$pidfile"
	# the daemon keeps no descriptor of ours but 0-2 (a lock held open by it would never free)
	# shellcheck disable=SC2016
	# (no redirection around the exec: `exec` would make a temporary one permanent)
	setsid bash -c 'for f in /proc/$$/fd/*; do n=${f##*/}
		if [ "$n" -gt 2 ] && [ -e "$f" ]; then eval "exec $n>&-"; fi
		done; echo $$ >"$0.tmp" && mv -f "$0.tmp" "$0" && exec "$@"' "$pidfile" "$@" \
		</dev/null >>"$log" 2>&1 &
	while [ $n -gt 0 ] && [ ! -s "$pidfile" ]; do
		sleep 0.1
		n=$((n - 1))
	done
	STACK_SPAWNED_PID=
	read -r STACK_SPAWNED_PID <"$pidfile" 2>/dev/null && [ -n "$STACK_SPAWNED_PID" ]
}

_stack_tail() {
	[ -f "$1" ] || return 0
	printf -- '--- last lines of %s ---\n' "$1" >&2
	tail -n "${2:-20}" "$1" >&2
	printf -- '---\n' >&2
}

# Can we connect to 127.0.0.1:PORT (or HOST:PORT)?
stack_port_open() {
	(exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1") 2>/dev/null
}

# _stack_listening ADDR: something listens on ADDR: a unix socket path, HOST:PORT, or a PORT of
# 127.0.0.1.
_stack_listening() {
	case "$1" in
	/*) [ -S "$1" ] ;;
	*:*) stack_port_open "${1##*:}" "${1%:*}" ;;
	*) stack_port_open "$1" ;;
	esac
}

# _stack_server_wait PIDFILE WHAT LOG ADDR...: wait (10 s at most) until every ADDR (a port of
# 127.0.0.1 or a unix socket: _stack_listening) accepts connections and PIDFILE names a live
# WHAT (a server that daemonises writes it once it has bound its ports). 1, with the end of LOG,
# when that does not happen.
_stack_server_wait() {
	local pidfile=$1 what=$2 log=$3 n=100 pid addr closed
	shift 3
	while :; do
		closed=()
		for addr in "$@"; do
			_stack_listening "$addr" || closed+=("$addr")
		done
		if [ ${#closed[@]} -eq 0 ] && pid=$(stack_running "$pidfile" "$what"); then
			break
		fi
		n=$((n - 1))
		if [ $n -le 0 ]; then
			if [ ${#closed[@]} -ne 0 ]; then
				_stack_err "$what not accepting on ${closed[*]} after 10s"
			else
				_stack_err "$what is not running (no live pid in $pidfile)"
			fi
			_stack_tail "$log"
			return 1
		fi
		sleep 0.1
	done
	_stack_say "$what ready on $* (pid $pid)"
}

# stack_free_port [EXCLUDE...]: print a loopback port nobody listens on, not in EXCLUDE.
stack_free_port() {
	local port n=200 x taken
	while [ $n -gt 0 ]; do
		n=$((n - 1))
		port=$((20000 + RANDOM % 40000))
		taken=0
		for x in "$@"; do
			[ "$x" = "$port" ] && taken=1
		done
		[ $taken -eq 0 ] || continue
		stack_port_open "$port" && continue
		echo "$port"
		return 0
	done
	_stack_err "no free loopback port found"
	return 1
}

