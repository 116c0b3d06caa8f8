# shellcheck shell=bash
# lib-stack.sh: run terrarium's own MariaDB, API supervisors and nginx under one runtime
# directory RUN. Sourced by scripts/up.sh, scripts/down.sh and tests/e2e/run.sh.
#
# Every function takes RUN (an absolute path) first, prints progress on stderr, returns 0 on
# success or 1 after saying what failed, and never exits the calling shell. No system service
# and no system configuration is used: MariaDB runs with --no-defaults on RUN/mysql.sock without
# networking, nginx with `-p RUN -c RUN/nginx.conf`. Processes are started in their own session
# and stopped by the PID recorded in their pid file, after checking that the PID still runs the
# expected program (a stale pid file never kills an unrelated process).
#
# Files under RUN:
#   db/  mysql.sock  mariadb.pid  mariadb.log  db-password       MariaDB (db_init, db_start)
#   mysql/  what mariadbd writes itself: its socket (RUN/mysql.sock links to it) and pid file
#   db-owner-password  owner.ini                                  the schema owner (migrations)
#   NAME.ini  NAME.sock  NAME.pid  NAME.log                       one API supervisor per NAME
#   nginx.conf  nginx-*.conf  nginx.pid  nginx-*.log  nginx-tmp/  nginx (nginx_start)
#   logrotate.conf                                                  every log (nginx_start)
#
# Environment:
#   BUILD_DIR       where terrarium-api is: absolute, or relative to the repository (default build)
#   WORKERS         [api] workers written by api_config (default 0 = 2 x cores)
#   MAX_REQUESTS    [api] max_requests (default 10000)
#   LOG_LEVEL       [log] level (default info)
#   NGINX_USER      user of nginx workers when started as root (default www-data)
#   NGINX_WORKERS   nginx worker_processes (default 1)
#   NGINX_KEEPALIVE FastCGI connections each nginx worker keeps to an API supervisor, with
#                   fastcgi_keep_conn on (default 0: one connection per request; keep it below
#                   the API's workers, see nginx/upstream.conf.in)
#   DB_EXTRA_ARGS   extra mariadbd options, split on spaces
#   DB_OS_USER      when root, the user mariadbd runs as (default mysql; _stack_db_dirs hands it
#                   RUN/db and RUN/mysql/ and lets it traverse RUN)
#   DB_ADDR         HOST:PORT: api_config writes a TCP [database] host/port instead of RUN's
#                   socket (scripts/cluster.sh: an API host talks to its own Galera node)
#   API_LISTEN      HOST:PORT: api_config makes the supervisor listen there (FastCGI over TCP)
#                   instead of RUN/NAME.sock, and api_start waits for that port
#   NGINX_UPSTREAM  space-separated HOST:PORT list: nginx_start proxies every spec's server to
#                   this upstream (FastCGI over TCP, nginx/upstream-hosts.conf.in) instead of
#                   RUN/NAME.sock
#   NGINX_POLL_UPSTREAM  the same for the work queue's long polls: the hosts' poll pools
#                   ([api] poll_socket), one environment's polls on one host (hash of the URI)
#                   instead of RUN/NAME-poll.sock; unset with NGINX_UPSTREAM set, polls go to
#                   NGINX_UPSTREAM's pool
#   API_POLL_LISTEN HOST:PORT: api_config writes it as [api] poll_socket instead of
#                   RUN/NAME-poll.sock, and api_start waits for that port too
#   NGINX_CONF_EDIT a command nginx_start runs as `CMD RUN` on the configuration it has just
#                   written (RUN/nginx.conf.new, nginx-servers.conf.new, nginx-fastcgi.conf.new),
#                   before comparing and testing it: tests shorten nginx's timeouts with it

STACK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STACK_DB_NAME=terrarium
STACK_DB_USER=terrarium         # the application: SELECT, INSERT, UPDATE, DELETE only
STACK_DB_OWNER=terrarium_owner  # owns the schema: runs the migrations (RUN/owner.ini)
STACK_DB_OS_USER=${DB_OS_USER:-mysql} # the account mariadbd runs as when started as root
STACK_DB_CREATED=0        # set to 1 by db_init when it created a new data directory
STACK_CONFIG_CHANGED=0    # set to 1 by api_config when NAME.ini changed
STACK_SOCKET_MAX=107      # sun_path holds 108 bytes with the terminating NUL
STACK_DEFAULT_RATE=500     # nginx rate limit per API key, requests/s (NGINX_RATE overrides)
STACK_DEFAULT_BURST=1000   # and its burst (NGINX_BURST overrides)
STACK_DEFAULT_HEAVY_RATE=5  # heavy requests (limit > 100) per API key, requests/s (NGINX_HEAVY_RATE)
STACK_DEFAULT_HEAVY_BURST=10 # and their burst (NGINX_HEAVY_BURST)

_stack_say() { printf 'stack: %s\n' "$*" >&2; }

# script_init NAME: what a script sourcing this file starts with: ROOT (the repository) as the
# working directory, and die / say printing "NAME: ..." on stderr (die then exits 1).
script_init() {
	SCRIPT_NAME=$1
	ROOT=$STACK_ROOT
	cd "$ROOT" || exit 1
	die() { printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2; exit 1; }
	say() { printf '%s: %s\n' "$SCRIPT_NAME" "$*" >&2; }
}

# bench_init NAME [PREFIX]: what a benchmark script starts with: script_init NAME, BUILD (the
# binaries: stack_build_dir) and OUT, where its results go: BENCH_OUT, default
# ROOT/var/bench/PREFIX<UTC time>.
bench_init() {
	script_init "$1"
	# shellcheck disable=SC2034 # read by callers
	BUILD=$(stack_build_dir)
	# shellcheck disable=SC2034
	OUT=${BENCH_OUT:-$ROOT/var/bench/${2:-}$(date -u +%Y%m%dT%H%M%SZ)}
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
	_stack_say "$label (pid $pgid) is gone; stopping what remains of its group: $(echo $pids)"
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

# _stack_wait_ready RUN NAME WHAT SECONDS STOPFN CMD...: wait until CMD succeeds while
# RUN/NAME.pid's process (WHAT, in messages) lives. When it exits first, its pid file goes; after
# SECONDS, STOPFN RUN NAME stops it. Either way the end of RUN/NAME.log is shown and 1 returned.
_stack_wait_ready() {
	local run=$1 name=$2 what=$3 secs=$4 stopfn=$5 pid n
	shift 5
	read -r pid <"$run/$name.pid" || return 1
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
# to LOG; its PID goes to PIDFILE before it starts.
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
	[ -s "$pidfile" ]
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

# _stack_server_wait PIDFILE WHAT LOG PORT...: wait (10 s at most) until every 127.0.0.1:PORT
# accepts connections and PIDFILE names a live WHAT (a server that daemonises writes it once it
# has bound its ports). 1, with the end of LOG, when that does not happen.
_stack_server_wait() {
	local pidfile=$1 what=$2 log=$3 n=100 pid port closed
	shift 3
	while :; do
		closed=()
		for port in "$@"; do
			stack_port_open "$port" || closed+=("$port")
		done
		if [ ${#closed[@]} -eq 0 ] && pid=$(stack_running "$pidfile" "$what"); then
			break
		fi
		n=$((n - 1))
		if [ $n -le 0 ]; then
			if [ ${#closed[@]} -ne 0 ]; then
				_stack_err "$what not accepting on 127.0.0.1 port(s) ${closed[*]} after 10s"
			else
				_stack_err "$what is not running (no live pid in $pidfile)"
			fi
			_stack_tail "$log"
			return 1
		fi
		sleep 0.1
	done
	_stack_say "$what ready on 127.0.0.1 port(s) $* (pid $pid)"
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

# ---------------------------------------------------------------------------------------------
# MariaDB

# db_sql RUN [ARGS...]: run SQL from stdin as the MariaDB administrator (the OS user, through
# unix_socket authentication) with `mariadb --batch ARGS`.
db_sql() {
	local run=$1
	shift
	mariadb --no-defaults --socket="$run/mysql.sock" --user="$(id -un)" --batch "$@"
}

# Started as root, MariaDB runs as STACK_DB_OS_USER (mysql), never root: it owns RUN/db and
# RUN/mysql/ (its socket and pid file; 0711 so the API's workers reach the socket) and may only
# traverse RUN (an ACL entry: RUN stays closed to other users). A data directory of an older
# stack that ran as root is handed over.
_stack_db_dirs() {
	local run=$1 user=$STACK_DB_OS_USER
	mkdir -p "$run/mysql" || return 1
	if [ "$(id -u)" -eq 0 ]; then
		if ! id "$user" >/dev/null 2>&1; then
			_stack_err "no '$user' account for MariaDB (the mariadb-server package makes it)"
			return 1
		fi
		if ! command -v setfacl >/dev/null 2>&1; then
			_stack_err "setfacl not found (scripts/install-deps.sh installs acl)"
			return 1
		fi
		setfacl -m "u:$user:x" "$run" || return 1
		chown "$user:" "$run/mysql" || return 1
		if [ -d "$run/db" ] && [ "$(stat -c %U "$run/db")" != "$user" ]; then
			_stack_say "handing $run/db over to $user"
			chown -R "$user:" "$run/db" || return 1
		fi
	fi
	chmod 0711 "$run/mysql" || return 1
	ln -sfn mysql/mysql.sock "$run/mysql.sock"
}

# db_init RUN: create the data directory RUN/db unless it exists. The administrator accounts
# use unix_socket authentication (root@localhost, plus one named after the OS user when that is
# not root): no password exists that another local user could use. Sets STACK_DB_CREATED=1 when
# it created the directory. The directory is built aside and renamed, so an interrupted run
# leaves nothing half made.
db_init() {
	local run=$1 tmp installer me
	STACK_DB_CREATED=0
	stack_prepare "$run" || return 1
	if [ -d "$run/db/mysql" ]; then
		return 0
	fi
	if [ -e "$run/db" ]; then
		_stack_err "$run/db exists but is not a MariaDB data directory: remove it"
		return 1
	fi
	installer=$(_stack_bin mariadb-install-db) || installer=$(_stack_bin mysql_install_db) || {
		_stack_err "mariadb-install-db not found (scripts/install-deps.sh installs mariadb-server)"
		return 1
	}
	me=$(id -un)
	tmp="$run/db.init.$$"
	rm -rf "$tmp"
	_stack_db_dirs "$run" || return 1
	local args=(--no-defaults --datadir="$tmp" --skip-test-db
		--auth-root-authentication-method=socket --auth-root-socket-user="$me")
	if [ "$(id -u)" -eq 0 ]; then
		args+=(--user="$STACK_DB_OS_USER")
	fi
	_stack_say "initialising MariaDB data directory $run/db"
	if ! "$installer" "${args[@]}" >"$run/mariadb-install.log" 2>&1; then
		_stack_err "mariadb-install-db failed"
		_stack_tail "$run/mariadb-install.log"
		rm -rf "$tmp"
		return 1
	fi
	mv "$tmp" "$run/db" || return 1
	# shellcheck disable=SC2034 # read by callers
	STACK_DB_CREATED=1
}

# db_start RUN: start mariadbd on RUN/mysql.sock (no TCP) unless it already runs, wait until it
# answers (60 s at most), then make sure database `terrarium` and user 'terrarium'@'localhost'
# exist, the user's password being the one in RUN/db-password (made on first use, mode 0600).
db_start() {
	local run=$1 pid server n
	_stack_check_run "$run" || return 1
	if pid=$(stack_running "$run/mariadb.pid" mariadbd); then
		_stack_say "mariadb already running (pid $pid)"
	else
		if [ ! -d "$run/db/mysql" ]; then
			_stack_err "no data directory in $run/db: run db_init first"
			return 1
		fi
		_stack_db_dirs "$run" || return 1
		_stack_check_socket_len "$run/mysql/mysql.sock" || return 1
		server=$(_stack_bin mariadbd) || server=$(_stack_bin mysqld) || {
			_stack_err "mariadbd not found (scripts/install-deps.sh installs mariadb-server)"
			return 1
		}
		local args=(--no-defaults
			--datadir="$run/db" --socket="$run/mysql/mysql.sock" --skip-networking
			--pid-file="$run/mysql/mariadb.pid"
			--character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci
			--default-time-zone=+00:00 --skip-name-resolve
			--innodb-buffer-pool-size=128M --max-connections=256)
		if [ "$(id -u)" -eq 0 ]; then
			# the first --user wins: DB_EXTRA_ARGS cannot change it
			args+=(--user="$STACK_DB_OS_USER")
		fi
		# shellcheck disable=SC2206
		args+=(${DB_EXTRA_ARGS:-})
		_stack_say "starting mariadb on $run/mysql.sock"
		_stack_spawn "$run/mariadb.pid" "$run/mariadb.log" "$server" "${args[@]}" || {
			_stack_err "mariadbd did not start"
			_stack_tail "$run/mariadb.log"
			return 1
		}
		read -r pid <"$run/mariadb.pid"
		_stack_wait_ready "$run" mariadb mariadb 60 db_stop mariadb-admin --no-defaults \
			--socket="$run/mysql.sock" --user="$(id -un)" --connect-timeout=2 ping || return 1
		_stack_say "mariadb ready (pid $pid)"
	fi
	_stack_db_provision "$run"
}

# A password file RUN/NAME (hex, mode 0600), made on first use; prints the password.
_stack_db_password() {
	local f=$1/$2 pw
	if [ ! -s "$f" ]; then
		(umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$f.tmp") &&
			mv -f "$f.tmp" "$f" || return 1
	fi
	chmod 0600 "$f"
	pw=$(cat "$f")
	case "$pw" in '' | *[!0-9a-f]*)
		_stack_err "$f must hold hex digits only: remove it to make a new one"
		return 1
		;;
	esac
	echo "$pw"
}

# Two accounts: the owner (every privilege on the schema; migrations only, through
# RUN/owner.ini) and the application (rows only: what the API and the reconciler need, so a
# compromised worker cannot drop or alter tables). An application account of an older stack
# that had ALL PRIVILEGES is brought down to these.
_stack_db_provision() {
	local run=$1 pw opw
	pw=$(_stack_db_password "$run" db-password) || return 1
	opw=$(_stack_db_password "$run" db-owner-password) || return 1
	db_sql "$run" <<SQL || { _stack_err "could not create database/users"; return 1; }
CREATE DATABASE IF NOT EXISTS \`$STACK_DB_NAME\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
CREATE USER IF NOT EXISTS '$STACK_DB_USER'@'localhost' IDENTIFIED BY '$pw';
ALTER USER '$STACK_DB_USER'@'localhost' IDENTIFIED BY '$pw';
REVOKE ALL PRIVILEGES, GRANT OPTION FROM '$STACK_DB_USER'@'localhost';
GRANT SELECT, INSERT, UPDATE, DELETE ON \`$STACK_DB_NAME\`.* TO '$STACK_DB_USER'@'localhost';
CREATE USER IF NOT EXISTS '$STACK_DB_OWNER'@'localhost' IDENTIFIED BY '$opw';
ALTER USER '$STACK_DB_OWNER'@'localhost' IDENTIFIED BY '$opw';
GRANT ALL PRIVILEGES ON \`$STACK_DB_NAME\`.* TO '$STACK_DB_OWNER'@'localhost';
SQL
	(
		umask 077
		printf '%s\n' "; written by scripts/lib-stack.sh (db_start): the schema owner, for migrate only" \
			"[database]" "socket = $run/mysql.sock" "user = $STACK_DB_OWNER" \
			"password = $opw" "name = $STACK_DB_NAME" >"$run/owner.ini.tmp"
	) && mv -f "$run/owner.ini.tmp" "$run/owner.ini"
}

# db_stop RUN: SIGTERM (clean shutdown), wait up to 60 s, then SIGKILL.
db_stop() {
	_stack_check_run "$1" || return 1
	_stack_stop "$1/mariadb.pid" mariadbd TERM 60 mariadb
}

# ---------------------------------------------------------------------------------------------
# API supervisors

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

# api_config RUN NAME BACKEND: write RUN/NAME.ini (mode 0600) for an API supervisor listening
# on RUN/NAME.sock, group = the nginx workers' group, mode 0660, with the database password from
# RUN/db-password (db_start first). Sets STACK_CONFIG_CHANGED=1 when the file changed.
# With STACK_DOCKER_SOCKET set (docker_engine), a [docker] section names that socket and
# STACK_DOCKER_IMAGE. The operator's own settings live in RUN/operator.ini, appended verbatim
# after the generated ones: a key set there wins (the reader keeps a key's last value), and
# no run of `make up` touches that file.
api_config() {
	local run=$1 name=$2 backend=$3 ini tmp
	STACK_CONFIG_CHANGED=0
	_stack_check_run "$run" || return 1
	_stack_check_name "$name" || return 1
	if [ -z "$backend" ]; then
		_stack_err "api_config: no backend given"
		return 1
	fi
	if [ ! -s "$run/db-password" ]; then
		_stack_err "$run/db-password missing: run db_start first"
		return 1
	fi
	_stack_check_socket_len "$run/$name.sock" || return 1
	_stack_check_socket_len "$run/$name-poll.sock" || return 1
	ini="$run/$name.ini"
	tmp="$ini.tmp"
	local db_line="socket = $run/mysql.sock" api_sock=${API_LISTEN:-$run/$name.sock}
	local poll_sock=${API_POLL_LISTEN:-$run/$name-poll.sock}
	if [ -n "${DB_ADDR:-}" ]; then
		db_line="host = ${DB_ADDR%:*}
port = ${DB_ADDR##*:}"
	fi
	(
		umask 077
		cat >"$tmp" <<EOF
; written by scripts/lib-stack.sh (api_config); rewritten by every \`make up\`:
; put your own settings in $run/operator.ini (appended below, where they win)
[database]
$db_line
user = $STACK_DB_USER
password = $(cat "$run/db-password")
name = $STACK_DB_NAME

[api]
socket = $api_sock
socket_group = $(stack_nginx_group)
socket_mode = 0660
workers = ${WORKERS:-0}
max_requests = ${MAX_REQUESTS:-10000}
poll_socket = $poll_sock
poll_workers = ${POLL_WORKERS:-16}

[sandbox]
backend = $backend
root = $run/sandboxes

[log]
level = ${LOG_LEVEL:-info}
EOF
		if [ -n "${MODEL_BASE_URL:-}" ]; then
			printf '\n[model]\nbase_url = %s\n' "$MODEL_BASE_URL" >>"$tmp"
		fi
		# one tailer per nginx (docs/events.md): API_TAILER=0 for the other supervisors
		# behind it on the same database
		if [ "${API_TAILER:-1}" = 1 ] && stack_nchan_modules >/dev/null; then
			printf '\n[stream]\npublish_socket = %s\n' "$run/events-pub.sock" >>"$tmp"
		fi
		if [ -n "$STACK_DOCKER_SOCKET" ]; then
			printf '\n[docker]\nsocket = %s\nimage = %s\n' "$STACK_DOCKER_SOCKET" \
				"${STACK_DOCKER_IMAGE:?docker image not set}" >>"$tmp"
		fi
		if [ -f "$run/operator.ini" ]; then
			printf '\n; ---- %s (the operator'"'"'s settings; they win) ----\n' \
				"$run/operator.ini" >>"$tmp"
			cat "$run/operator.ini" >>"$tmp"
		fi
	) || return 1
	if [ -f "$ini" ] && cmp -s "$tmp" "$ini"; then
		rm -f "$tmp"
	else
		mv -f "$tmp" "$ini" || return 1
		# shellcheck disable=SC2034 # read by callers
		STACK_CONFIG_CHANGED=1
	fi
}

# api_cli RUN NAME ARGS...: run `terrarium-api -c RUN/NAME.ini ARGS...` in the foreground;
# `migrate` runs as the schema owner instead (RUN/owner.ini, written by db_start).
api_cli() {
	local run=$1 name=$2 api ini
	shift 2
	api=$(_stack_api_bin)
	if [ ! -x "$api" ]; then
		_stack_err "$api not built (run make)"
		return 1
	fi
	ini="$run/$name.ini"
	[ "${1:-}" = migrate ] && ini="$run/owner.ini"
	"$api" -c "$ini" "$@"
}

# api_start RUN NAME: start `terrarium-api -c RUN/NAME.ini serve` unless it already runs; wait
# (30 s at most) for RUN/NAME.sock, then check that nginx's workers may connect to it.
api_start() {
	local run=$1 name=$2 api pid sock
	_stack_check_run "$run" || return 1
	_stack_check_name "$name" || return 1
	api=$(_stack_api_bin)
	sock="$run/$name.sock"
	if pid=$(stack_running "$run/$name.pid" terrarium-api); then
		_stack_say "api $name already running (pid $pid)"
		return 0
	fi
	if [ ! -x "$api" ]; then
		_stack_err "$api not built (run make)"
		return 1
	fi
	if [ ! -f "$run/$name.ini" ]; then
		_stack_err "$run/$name.ini missing: run api_config first"
		return 1
	fi
	[ -n "${API_LISTEN:-}" ] && sock=$API_LISTEN
	rm -f "$run/$name.sock"
	_stack_say "starting api $name on $sock"
	_stack_spawn "$run/$name.pid" "$run/$name.log" "$api" -c "$run/$name.ini" serve || {
		_stack_err "api $name did not start"
		_stack_tail "$run/$name.log"
		return 1
	}
	_stack_wait_ready "$run" "$name" "api $name on $sock${API_POLL_LISTEN:+ and $API_POLL_LISTEN}" \
		30 api_stop _stack_api_listening "$sock" "${API_POLL_LISTEN:-}" || return 1
	read -r pid <"$run/$name.pid"
	if [ -z "${API_LISTEN:-}" ] && ! _stack_nginx_can -w "$sock"; then
		_stack_err "nginx workers ($(stack_nginx_user)) cannot write to $sock" \
			"($(stat -c '%U:%G %a' "$sock")): the supervisor must chown it to group" \
			"$(stack_nginx_group) and chmod it 0660, or every request is a 502"
		api_stop "$run" "$name"
		return 1
	fi
	_stack_say "api $name ready (pid $pid)"
}

# _stack_listening SOCKET: a unix socket path exists, or HOST:PORT accepts connections.
_stack_listening() {
	case "$1" in
	/*) [ -S "$1" ] ;;
	*) stack_port_open "${1##*:}" "${1%:*}" ;;
	esac
}

# _stack_api_listening SOCKET [POLL_SOCKET]: the API listens on SOCKET and, when given, on
# POLL_SOCKET (its long-poll pool).
_stack_api_listening() {
	_stack_listening "$1" && { [ -z "${2:-}" ] || _stack_listening "$2"; }
}

# api_stop RUN NAME: SIGTERM (graceful: in-flight requests finish), wait up to 35 s (nginx
# gives a request 30 s), then SIGKILL the supervisor and its workers.
api_stop() {
	_stack_check_run "$1" || return 1
	_stack_check_name "$2" || return 1
	_stack_stop "$1/$2.pid" terrarium-api TERM 35 "api $2"
	rm -f "$1/$2.sock" "$1/$2-poll.sock"
}

# ---------------------------------------------------------------------------------------------
# nginx

# Replace @KEY@ with VALUE in FILE, for each KEY=VALUE argument; print the result.
_stack_subst() {
	local file=$1 kv key val script=""
	shift
	for kv in "$@"; do
		key=${kv%%=*}
		val=${kv#*=}
		val=${val//\\/\\\\}
		val=${val//|/\\|}
		val=${val//&/\\&}
		script+="s|@${key}@|${val}|g;"
	done
	sed -e "$script" "$file"
}

# A rate as nginx writes it: N -> Nr/s; Nr/s and Nr/m as given; anything else "bad".
_stack_rate() {
	case "$1" in
	[0-9]*r/s | [0-9]*r/m) echo "$1" ;;
	*[!0-9]* | '') echo bad ;;
	*) echo "${1}r/s" ;;
	esac
}

# _stack_upstream_hosts NAME BALANCE HOST:PORT...: nginx/upstream-hosts.conf.in as an upstream
# NAME of API hosts over TCP, on stdout. BALANCE: "round-robin" (nginx's default), or "uri" for
# a consistent hash of the request URI (one work queue's polls on one host).
_stack_upstream_hosts() {
	local name=$1 balance=$2 h servers="" hash=""
	shift 2
	case "$balance" in
	round-robin) ;;
	uri) hash="hash \$uri consistent; " ;;
	*)
		_stack_err "_stack_upstream_hosts: unknown balance '$balance'"
		return 1
		;;
	esac
	for h in "$@"; do
		case "$h" in *:*[!0-9]* | *: | :* | *[!0-9A-Za-z.:-]* | '')
			_stack_err "bad upstream host '$h' (want HOST:PORT)"
			return 1
			;;
		esac
		servers+="server $h max_fails=1 fail_timeout=${NGINX_FAIL_TIMEOUT:-2s}; "
	done
	if [ -z "$servers" ]; then
		_stack_err "upstream $name: no HOST:PORT given"
		return 1
	fi
	_stack_subst "$STACK_ROOT/nginx/upstream-hosts.conf.in" NAME="$name" BALANCE="$hash" \
		SERVERS="$servers"
}

# nginx_start RUN PORT:NAME...: one server on 127.0.0.1:PORT per spec, proxying to the API on
# RUN/NAME.sock, configured from nginx/*.in into RUN/nginx*.conf. When nginx already runs with
# the same configuration nothing happens; with a different one it is reloaded (SIGHUP).
# Waits (10 s at most) until every port accepts connections.
nginx_start() {
	local run=$1 spec port name bin pid user_line ports=() p
	shift
	_stack_check_run "$run" || return 1
	if [ $# -eq 0 ]; then
		_stack_err "nginx_start: no PORT:NAME given"
		return 1
	fi
	bin=$(_stack_bin nginx) || {
		_stack_err "nginx not found (scripts/install-deps.sh installs nginx-light)"
		return 1
	}
	stack_prepare "$run" || return 1
	mkdir -p "$run/nginx-tmp" || return 1
	if [ "$(id -u)" -eq 0 ]; then
		user_line="user $(stack_nginx_user) $(stack_nginx_group);"
	else
		user_line="# not started as root: workers run as $(id -un)"
	fi

	: >"$run/nginx-servers.conf.new"
	# event streams: held by nchan when nginx has it, else by the API's long-poll workers
	local stream_mode=workers modules="# no event-stream modules (docs/events.md)"
	if modules=$(stack_nchan_modules); then
		stream_mode=nchan
	fi
	for spec in "$@"; do
		# PORT:NAME[:RATE[:BURST[:HEAVY_RATE[:HEAVY_BURST]]]]: RATE (N or Nr/s per second, Nr/m
		# per minute) requests per API key, bursts of BURST; the heavy budget likewise
		local rate burst heavy_rate heavy_burst
		IFS=: read -r port name rate burst heavy_rate heavy_burst <<<"$spec"
		rate=${rate:-${NGINX_RATE:-$STACK_DEFAULT_RATE}}
		burst=${burst:-${NGINX_BURST:-$STACK_DEFAULT_BURST}}
		heavy_rate=${heavy_rate:-${NGINX_HEAVY_RATE:-$STACK_DEFAULT_HEAVY_RATE}}
		heavy_burst=${heavy_burst:-${NGINX_HEAVY_BURST:-$STACK_DEFAULT_HEAVY_BURST}}
		rate=$(_stack_rate "$rate") heavy_rate=$(_stack_rate "$heavy_rate")
		case "$rate:$burst:$heavy_rate:$heavy_burst" in bad:* | *:*[!0-9]*:*:* | *::*:* | *:*:bad:* | *:*:*:*[!0-9]* | *:)
			_stack_err "bad rate or burst in '$spec' (RATE: N, Nr/s or Nr/m; BURST: N)"
			return 1
			;;
		esac
		case "$port" in '' | *[!0-9]*)
			_stack_err "bad spec '$spec' (want PORT:NAME)"
			return 1
			;;
		esac
		_stack_check_name "$name" || return 1
		_stack_check_socket_len "$run/$name.sock" || return 1
		ports+=("$port")
		local keepalive=${NGINX_KEEPALIVE:-0} pass="\"unix:$run/$name.sock\"" keep_conn=off
		local poll_pass="\"unix:$run/$name-poll.sock\""
		case "$keepalive" in '' | *[!0-9]*)
			_stack_err "NGINX_KEEPALIVE must be a number (got '$keepalive')"
			return 1
			;;
		esac
		if [ -n "${NGINX_UPSTREAM:-}" ]; then
			# shellcheck disable=SC2086 # one HOST:PORT per word
			_stack_upstream_hosts "terrarium_$port" round-robin $NGINX_UPSTREAM \
				>>"$run/nginx-servers.conf.new" || return 1
			pass="terrarium_$port" poll_pass="terrarium_$port"
			if [ -n "${NGINX_POLL_UPSTREAM:-}" ]; then
				# shellcheck disable=SC2086
				_stack_upstream_hosts "terrarium_poll_$port" uri $NGINX_POLL_UPSTREAM \
					>>"$run/nginx-servers.conf.new" || return 1
				poll_pass="terrarium_poll_$port"
			fi
		elif [ "$keepalive" -gt 0 ]; then
			_stack_subst "$STACK_ROOT/nginx/upstream.conf.in" PORT="$port" NAME="$name" \
				SOCKET="$run/$name.sock" KEEPALIVE="$keepalive" \
				>>"$run/nginx-servers.conf.new" || return 1
			pass="terrarium_$port"
			keep_conn=on
		fi
		_stack_subst "$STACK_ROOT/nginx/server.conf.in" RUN="$run" PORT="$port" NAME="$name" \
			SOCKET="$run/$name.sock" RATE="$rate" BURST="$burst" PASS="$pass" \
			HEAVY_RATE="$heavy_rate" HEAVY_BURST="$heavy_burst" \
			KEEP_CONN="$keep_conn" POLL_PASS="$poll_pass" \
			>>"$run/nginx-servers.conf.new" || return 1
		_stack_subst "$STACK_ROOT/nginx/stream-$stream_mode.conf.in" RUN="$run" PORT="$port" \
			PASS="$pass" POLL_PASS="$poll_pass" >"$run/nginx-stream-$port.conf.new" ||
			return 1
	done
	_stack_subst "$STACK_ROOT/nginx/terrarium.conf.in" RUN="$run" USER="$user_line" \
		WORKER_PROCESSES="${NGINX_WORKERS:-1}" MODULES="$modules" >"$run/nginx.conf.new" ||
		return 1
	if [ "$stream_mode" = nchan ]; then
		_stack_subst "$STACK_ROOT/nginx/events.conf.in" RUN="$run" >"$run/nginx-events.conf.new" ||
			return 1
	else
		echo "# no nchan: streams are held by the API's workers (docs/events.md)" \
			>"$run/nginx-events.conf.new"
	fi
	cp "$STACK_ROOT/nginx/fastcgi.conf" "$run/nginx-fastcgi.conf.new" || return 1
	_stack_subst "$STACK_ROOT/nginx/logrotate.conf.in" RUN="$run" >"$run/logrotate.conf" || return 1
	if [ -n "${NGINX_CONF_EDIT:-}" ] && ! "$NGINX_CONF_EDIT" "$run"; then
		_stack_err "NGINX_CONF_EDIT ($NGINX_CONF_EDIT) failed on the configuration in $run"
		return 1
	fi

	if pid=$(stack_running "$run/nginx.pid" nginx) &&
		cmp -s "$run/nginx.conf.new" "$run/nginx.conf" &&
		cmp -s "$run/nginx-servers.conf.new" "$run/nginx-servers.conf" &&
		cmp -s "$run/nginx-fastcgi.conf.new" "$run/nginx-fastcgi.conf" &&
		cmp -s "$run/nginx-events.conf.new" "$run/nginx-events.conf" &&
		_stack_same_streams "$run" "${ports[@]}"; then
		rm -f "$run"/nginx*.conf.new
		_stack_say "nginx already running (pid $pid)"
		return 0
	fi
	for p in nginx nginx-servers nginx-fastcgi nginx-events "${ports[@]/#/nginx-stream-}"; do
		mv -f "$run/$p.conf.new" "$run/$p.conf" || return 1
	done
	local nginx=("$bin" -p "$run" -c "$run/nginx.conf" -e "$run/nginx-error.log")
	if ! "${nginx[@]}" -t -q; then
		_stack_err "nginx configuration test failed ($run/nginx.conf)"
		return 1
	fi
	if pid=$(stack_running "$run/nginx.pid" nginx); then
		_stack_say "reloading nginx (pid $pid) on ports ${ports[*]}"
		kill -HUP "$pid"
		# New workers take over once the master has reread the configuration.
		sleep 1
	else
		_stack_say "starting nginx on 127.0.0.1 ports ${ports[*]}"
		# nginx binds its ports, then daemonises and writes RUN/nginx.pid.
		if ! "${nginx[@]}"; then
			_stack_err "nginx failed to start"
			_stack_tail "$run/nginx-error.log"
			return 1
		fi
	fi
	_stack_server_wait "$run/nginx.pid" nginx "$run/nginx-error.log" "${ports[@]}"
}

# _stack_same_streams RUN PORT...: 0 when every RUN/nginx-stream-PORT.conf.new equals the file
# nginx runs with.
_stack_same_streams() {
	local run=$1 port
	shift
	for port in "$@"; do
		cmp -s "$run/nginx-stream-$port.conf.new" "$run/nginx-stream-$port.conf" || return 1
	done
}

# stack_nchan_modules: the load_module lines of nginx's nchan and headers-more modules (Debian's
# libnginx-mod-nchan and libnginx-mod-http-headers-more-filter) on stdout; non-zero when either
# is missing (NCHAN=0 pretends it is), and streams are then held by the API's workers.
stack_nchan_modules() {
	local dir=${NGINX_MODULES_DIR:-/usr/lib/nginx/modules} m
	[ "${NCHAN:-1}" = 1 ] || return 1
	for m in ngx_nchan_module ngx_http_headers_more_filter_module; do
		[ -f "$dir/$m.so" ] || return 1
	done
	printf 'load_module "%s/ngx_nchan_module.so"; load_module "%s/%s.so";\n' "$dir" "$dir" \
		ngx_http_headers_more_filter_module
}

# nginx_stop RUN: SIGQUIT (graceful), wait up to 15 s, then SIGKILL.
nginx_stop() {
	_stack_check_run "$1" || return 1
	_stack_stop "$1/nginx.pid" nginx QUIT 15 nginx
}

# stack_stop_all RUN: stop nginx, then every process with a pid file in RUN (API supervisors,
# reconcilers: anything whose command line says terrarium), then MariaDB. Goes on after a
# failure; returns 1 if any stop failed.
# The reconciler in --loop mode, reading NAME's configuration (the API's: same database, same
# backend and sandbox root). Pid RUN/reconciler.pid, log RUN/reconciler.log, Prometheus
# metrics RUN/reconciler.prom.
recon_start() {
	local run=$1 name=$2 bin pid
	_stack_check_run "$run" || return 1
	_stack_check_name "$name" || return 1
	bin="$(dirname "$(_stack_api_bin)")/terrarium-reconciler"
	if pid=$(stack_running "$run/reconciler.pid" terrarium-reconciler); then
		_stack_say "reconciler already running (pid $pid)"
		return 0
	fi
	[ -x "$bin" ] || {
		_stack_err "$bin not built (run make)"
		return 1
	}
	_stack_spawn "$run/reconciler.pid" "$run/reconciler.log" "$bin" -c "$run/$name.ini" --loop \
		--metrics-file "$run/reconciler.prom" || {
		_stack_err "reconciler did not start"
		_stack_tail "$run/reconciler.log"
		return 1
	}
	_stack_say "reconciler running (pid $(cat "$run/reconciler.pid"), log $run/reconciler.log)"
}
recon_stop() {
	_stack_check_run "$1" || return 1
	_stack_stop "$1/reconciler.pid" terrarium-reconciler TERM 35 reconciler
}

# runner_start RUN NAME [ID]: terrarium-runner --loop with NAME's configuration (docs/runner.md:
# it runs sessions' turns: the model ([model] base_url, MODEL_BASE_URL in api_config) and the
# tools in the sandboxes of NAME's backend). Its key, when the model needs one, comes from
# ANTHROPIC_API_KEY in the environment or [model] api_key_file (RUN/operator.ini), never from
# a command line. Pid RUN/ID.pid, log RUN/ID.log; ID (default runner) tells several runners of
# one RUN apart.
runner_start() {
	local run=$1 name=$2 id=${3:-runner} bin pid
	_stack_check_run "$run" || return 1
	_stack_check_name "$name" || return 1
	_stack_check_name "$id" || return 1
	bin="$(dirname "$(_stack_api_bin)")/terrarium-runner"
	if pid=$(stack_running "$run/$id.pid" terrarium-runner); then
		_stack_say "$id already running (pid $pid)"
		return 0
	fi
	[ -x "$bin" ] || {
		_stack_err "$bin not built (run make)"
		return 1
	}
	_stack_spawn "$run/$id.pid" "$run/$id.log" "$bin" -c "$run/$name.ini" --loop || {
		_stack_err "$id did not start"
		_stack_tail "$run/$id.log"
		return 1
	}
	_stack_say "$id running (pid $(cat "$run/$id.pid"), log $run/$id.log)"
}
# runner_stop RUN [ID]: SIGTERM (its turns end; the next runner takes them over), wait, SIGKILL.
runner_stop() {
	local id=${2:-runner}
	_stack_check_run "$1" || return 1
	_stack_check_name "$id" || return 1
	_stack_stop "$1/$id.pid" terrarium-runner TERM 35 "$id"
}

# ---------------------------------------------------------------------------------------------
# Docker Engine (BACKEND=docker)
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
STACK_DOCKER_IMAGE=
STACK_DOCKER_STARTED=0
STACK_DOCKER_START_S=60

# docker_answers SOCKET: does a Docker Engine answer /_ping on SOCKET?
docker_answers() {
	[ -S "$1" ] || return 1
	[ "$(curl -s --max-time 5 --unix-socket "$1" http://localhost/_ping 2>/dev/null)" = OK ]
}

docker_engine() {
	local run=$1 sock bin pid n data
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
		read -r pid <"$run/dockerd.pid"
	fi
	_stack_wait_ready "$run" dockerd dockerd "$STACK_DOCKER_START_S" docker_stop docker_answers "$sock" ||
		return 1
	printf '%s\n' "$sock" >"$STACK_DOCKER_POINTER.tmp" && mv -f "$STACK_DOCKER_POINTER.tmp" \
		"$STACK_DOCKER_POINTER"
	_stack_say "dockerd ready (pid $pid)"
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

# Apache and lighttpd as alternatives to nginx (SERVER=apache|lighttpd make up)
# shellcheck source=scripts/lib-servers.sh
. "$STACK_ROOT/scripts/lib-servers.sh"
