# shellcheck shell=bash
# scripts/stack/common.sh (sourced by scripts/lib-stack.sh): what every part uses: messages,
# program lookup, name and path checks, the nginx workers' user, the runtime directory, the build
# directory, template substitution, and the scripts' exit traps and stop-everything.
#
# Environment: BUILD_DIR (where terrarium-api is: absolute, or relative to the repository;
# default build), NGINX_USER (the user of nginx workers, and of Apache's and lighttpd's
# processes, when started as root; default www-data), KEEP_RUN=1 (stack_scratch keeps RUN).

STACK_SOCKET_MAX=107   # sun_path holds 108 bytes with the terminating NUL

_stack_say() { printf 'stack: %s\n' "$*" >&2; }

# script_init NAME: what a script sourcing this file starts with: ROOT (the repository) as the
# working directory, and die / say printing "NAME: ..." on stderr (die then exits 1).
script_init() {
	SCRIPT_NAME=$1
	ROOT=$STACK_ROOT
	cd "$ROOT" || exit 1
	# shellcheck disable=SC2317 # called by the script, after script_init
	die() { printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2; exit 1; }
	# shellcheck disable=SC2317
	say() { printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2; }
}

_stack_err() { printf 'stack: error: %s\n' "$*" >&2; }

# Absolute path of program NAME: PATH first, then the sbin directories a non-root PATH lacks.
_stack_bin() {
	local d
	if command -v "$1" >/dev/null 2>&1; then
		command -v "$1"
		return 0
	fi
	for d in /usr/sbin /sbin /usr/local/sbin /usr/bin; do
		if [ -x "$d/$1" ]; then
			echo "$d/$1"
			return 0
		fi
	done
	return 1
}

_stack_check_run() {
	case "${1:-}" in
	/*) return 0 ;;
	esac
	_stack_err "RUN must be an absolute path (got '${1:-}')"
	return 1
}

_stack_check_name() {
	case "$1" in
	nginx | mariadb | db | apache | lighttpd | '' | *[!A-Za-z0-9_-]*)
		_stack_err "bad component name '$1' (letters, digits, - and _;" \
			"not nginx, mariadb, db, apache, lighttpd)"
		return 1
		;;
	esac
}

_stack_check_socket_len() {
	if [ ${#1} -gt $STACK_SOCKET_MAX ]; then
		_stack_err "socket path too long for a unix socket (${#1} > $STACK_SOCKET_MAX): $1"
		return 1
	fi
}

# The user and group nginx workers run as: NGINX_USER (www-data) when we are root, else us.
stack_nginx_user() {
	if [ "$(id -u)" -eq 0 ]; then
		echo "${NGINX_USER:-www-data}"
	else
		id -un
	fi
}

stack_nginx_group() {
	id -gn "$(stack_nginx_user)"
}

# As root, can the nginx worker user do `test OP PATH`? (Always yes when not root.)
_stack_nginx_can() {
	[ "$(id -u)" -eq 0 ] || return 0
	runuser -u "$(stack_nginx_user)" -- test "$1" "$2" 2>/dev/null
}

# stack_prepare RUN: create RUN. As root RUN becomes root:<nginx group> 0710, so nginx workers
# can reach the API sockets in it and nothing else; otherwise 0700.
stack_prepare() {
	local run=$1
	_stack_check_run "$run" || return 1
	mkdir -p "$run" || return 1
	if [ "$(id -u)" -eq 0 ]; then
		chgrp "$(stack_nginx_group)" "$run" && chmod 0710 "$run" || return 1
		if ! _stack_nginx_can -x "$run"; then
			_stack_err "$(stack_nginx_user) (nginx workers) cannot reach $run: a parent" \
				"directory is closed to it; choose a runtime directory under /tmp or /srv"
			return 1
		fi
	else
		chmod 0700 "$run" || return 1
	fi
}

# The directory holding the built binaries: BUILD_DIR (relative to the repository), or build/.
stack_build_dir() {
	local dir=${BUILD_DIR:-build}
	case "$dir" in
	/*) echo "$dir" ;;
	*) echo "$STACK_ROOT/$dir" ;;
	esac
}

_stack_api_bin() {
	echo "$(stack_build_dir)/terrarium-api"
}

# Replace @KEY@ with VALUE in FILE, for each KEY=VALUE argument; print the result. A VALUE of
# several lines fills a line that holds only @KEY@; elsewhere (a comment) its lines are joined
# with spaces.
_stack_subst() {
	local file=$1 kv key val script=""
	shift
	for kv in "$@"; do
		key=${kv%%=*}
		val=${kv#*=}
		val=${val//\\/\\\\}
		val=${val//|/\\|}
		val=${val//&/\\&}
		script+="s|^@${key}@\$|${val//$'\n'/\\n}|;s|@${key}@|${val//$'\n'/ }|g;"
	done
	sed -e "$script" "$file"
}

# _stack_ini_line KEY VALUE: "KEY = VALUE", when VALUE is not empty.
_stack_ini_line() {
	[ -z "$2" ] || printf '%s = %s\n' "$1" "$2"
}

# _stack_ini_minimal: the INI text on stdin without what terrarium-api would take anyway: a key
# whose value is the binary's default (its `config dump` of an empty configuration: the binary
# owns its defaults, common/config.c) is left out, and so is a section left without a key. Lines
# before the first section are kept; blank and comment lines go with the keys that follow them.
_stack_ini_minimal() {
	local api defaults
	api=$(_stack_api_bin)
	if [ ! -x "$api" ]; then
		_stack_err "$api not built (run make)"
		return 1
	fi
	defaults=$("$api" -c /dev/null config dump) || {
		_stack_err "$api config dump failed"
		return 1
	}
	awk '
	function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
	function key(s) { return trim(substr(s, 1, index(s, "=") - 1)) }
	function val(s) { return trim(substr(s, index(s, "=") + 1)) }
	NR == FNR {
		if ($0 ~ /^\[/) sec = trim($0)
		else if ($0 !~ /^[;#]/ && index($0, "=")) def[sec, key($0)] = val($0)
		next
	}
	/^[ \t]*\[/ {
		if (!shown) held = before
		before = held
		held = held $0 "\n"
		sec = trim($0)
		shown = 0
		insec = 1
		next
	}
	!insec { print; next }
	/^[ \t]*([;#]|$)/ || !index($0, "=") { held = held $0 "\n"; next }
	(sec, key($0)) in def && def[sec, key($0)] == val($0) { next }
	{ printf "%s", held; held = ""; print; shown = 1 }
	' <(printf '%s\n' "$defaults") -
}

# stack_scratch TAG: a runtime directory for one script's stack in $RUN,
# ${TMPDIR:-/tmp}/terrarium-TAG.XXXXXX (under /tmp when TMPDIR's cannot be prepared: nginx's
# workers, www-data when root, must reach it), prepared, with EXIT/INT/TERM traps that run the
# script's scratch_before_stop if it defines one, stop by PID everything started in $RUN, run
# scratch_after_stop if defined (non-zero fails the exit status), and remove $RUN (KEEP_RUN=1
# keeps it). 0, or 1 when no directory could be made.
stack_scratch() {
	_STACK_SCRATCH_TAG=$1
	RUN=$(mktemp -d "${TMPDIR:-/tmp}/terrarium-$1.XXXXXX") || return 1
	if ! stack_prepare "$RUN" 2>/dev/null; then
		rm -rf "$RUN"
		RUN=$(mktemp -d "/tmp/terrarium-$1.XXXXXX") || return 1
		stack_prepare "$RUN" || return 1
	fi
	stack_traps _stack_scratch_exit
}

# stack_traps FN: FN runs when the script exits; INT and TERM make it exit (130, 143), through FN.
stack_traps() {
	# shellcheck disable=SC2064 # FN is expanded now, on purpose
	trap "$1" EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

_stack_scratch_exit() {
	local rc=$?
	if declare -F scratch_before_stop >/dev/null; then
		scratch_before_stop
	fi
	stack_stop_all "$RUN" || rc=1
	if declare -F scratch_after_stop >/dev/null && ! scratch_after_stop; then
		rc=1
	fi
	if [ "${KEEP_RUN:-0}" = 1 ]; then
		printf '%s: runtime directory kept: %s\n' "$_STACK_SCRATCH_TAG" "$RUN" >&2
	else
		rm -rf "$RUN"
	fi
	exit "$rc"
}

# stack_stop_all RUN: stop nginx (or Apache, lighttpd), then every process with a pid file in RUN
# (API supervisors, reconcilers: anything whose command line says terrarium), then MariaDB and a
# dockerd started under RUN. Goes on after a failure; returns 1 if any stop failed.
stack_stop_all() {
	local run=$1 f name rc=0
	_stack_check_run "$run" || return 1
	[ -d "$run" ] || return 0
	nginx_stop "$run" || rc=1
	stack_servers_stop "$run" || rc=1
	for f in "$run"/*.pid; do
		[ -e "$f" ] || continue
		name=$(basename "$f" .pid)
		case "$name" in nginx | mariadb | apache | lighttpd | dockerd) continue ;; esac
		_stack_stop "$f" terrarium TERM 35 "$name" || rc=1
		rm -f "$run/$name.sock" "$run/$name-poll.sock"
	done
	db_stop "$run" || rc=1
	docker_stop "$run" || rc=1
	return $rc
}

