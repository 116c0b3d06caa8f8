# shellcheck shell=bash
# scripts/stack/servers.sh (sourced by scripts/lib-stack.sh): Apache (mod_fcgid) and lighttpd
# (mod_fastcgi) in front of the API, as alternatives to nginx (SERVER=apache|lighttpd make up;
# docs/hosting.md). Same conventions as the other parts: functions take RUN first, say what
# failed, return 0/1, never exit; each server is its own instance with its own config, pid file
# and logs under RUN (no system service, nothing under /etc is read).
#
# Unlike nginx, these servers start the API binary themselves, on fd 0 (serve_fd0): the
# supervisor `terrarium-api serve` is not used. The API configuration they pass is RUN/NAME.ini
# (api_config), made readable to the server's user (group, mode 0640); how many API processes
# they run and after how many requests they recycle one are that configuration's [api] workers
# and max_requests.
#
# Files under RUN:
#   apache.conf apache.pid apache-error.log apache-access.log apache-rt/ apache-fcgid/
#   lighttpd.conf lighttpd.pid lighttpd-error.log lighttpd-access.log lighttpd-fcgi/
#
# Environment: APACHE_MODULES (default /usr/lib/apache2/modules), SERVER (stack_server_start:
# nginx, apache or lighttpd; default nginx).

STACK_SERVERS="nginx apache lighttpd"

# API processes a server runs for RUN/NAME.ini: its [api] workers, 0 meaning two per core (as
# the supervisor reads it).
_stack_server_procs() {
	local n
	n=$(api_setting "$1" "$2" api workers) || return 1
	[ "$n" -gt 0 ] || n=$((2 * $(nproc)))
	echo "$n"
}

# The API's configuration, readable by the server's user (it runs the binary as that user).
_stack_server_ini() {
	local run=$1 name=$2
	[ -s "$run/$name.ini" ] || {
		_stack_err "$run/$name.ini missing: run api_config first"
		return 1
	}
	chgrp "$(stack_nginx_group)" "$run/$name.ini" && chmod 0640 "$run/$name.ini" || return 1
	# the vault key api_config named: the server's API processes read it themselves (no
	# supervisor loads it for them as root; docs/vaults.md)
	if [ -f "$run/vault.key" ]; then
		chgrp "$(stack_nginx_group)" "$run/vault.key" && chmod 0640 "$run/vault.key"
	fi
}

# The API binary, as an absolute path the server's user can execute.
_stack_server_api() {
	local api
	api=$(_stack_api_bin)
	[ -x "$api" ] || {
		_stack_err "$api not built (run make)"
		return 1
	}
	if ! _stack_nginx_can -x "$api"; then
		_stack_err "$(stack_nginx_user) cannot execute $api: a parent directory is closed to it"
		return 1
	fi
	echo "$api"
}

# _stack_server_user FORMAT [PATH...]: sets the caller's user_line, the server configuration's
# line (a printf format of the user, then the group) naming the user and group its processes
# run as when started as root (nginx's workers' user), and gives PATH... to that user. Not
# started as root: a comment line, and nothing changes hands.
_stack_server_user() {
	local format=$1
	shift
	if [ "$(id -u)" -ne 0 ]; then
		user_line="# not started as root: runs as $(id -un)"
		return 0
	fi
	# shellcheck disable=SC2059 # the format is the caller's constant
	user_line=$(printf "$format" "$(stack_nginx_user)" "$(stack_nginx_group)")
	[ $# -eq 0 ] || chown "$(stack_nginx_user):$(stack_nginx_group)" "$@"
}

# ---------------------------------------------------------------------------------------------
# Apache + mod_fcgid

_stack_apache_bin() {
	_stack_bin apache2 || _stack_bin httpd || {
		_stack_err "apache2 not found (scripts/install-deps.sh installs apache2)"
		return 1
	}
}

# apache_start RUN PORT NAME: Apache on 127.0.0.1:PORT running the API with RUN/NAME.ini through
# mod_fcgid (hosting/apache/apache.conf.in -> RUN/apache.conf).
apache_start() {
	local run=$1 port=$2 name=$3 api procs max_requests
	_stack_check_run "$run" || return 1
	_stack_check_name "$name" || return 1
	api=$(_stack_server_api) || return 1
	stack_prepare "$run" || return 1
	_stack_server_ini "$run" "$name" || return 1
	procs=$(_stack_server_procs "$run" "$name") &&
		max_requests=$(api_setting "$run" "$name" api max_requests) || return 1
	apache_start_conf "$run" "$port" "$STACK_ROOT/hosting/apache/apache.conf.in" API="$api" \
		INI="$run/$name.ini" PROCS="$procs" MAX_REQUESTS="$max_requests"
}

# apache_start_conf RUN PORT TEMPLATE [KEY=VALUE...]: Apache on 127.0.0.1:PORT with TEMPLATE
# made into RUN/apache.conf (@RUN@ @PORT@ @USER@ @MODULES@ and each KEY given). A
# running instance is stopped first (mod_fcgid's processes read the configuration once).
apache_start_conf() {
	local run=$1 port=$2 template=$3 bin user_line modules
	shift 3
	_stack_check_run "$run" || return 1
	bin=$(_stack_apache_bin) || return 1
	modules=${APACHE_MODULES:-/usr/lib/apache2/modules}
	[ -f "$modules/mod_fcgid.so" ] || {
		_stack_err "$modules/mod_fcgid.so not found (install libapache2-mod-fcgid)"
		return 1
	}
	stack_prepare "$run" || return 1
	apache_stop "$run" || return 1
	mkdir -p "$run/apache-rt" "$run/apache-fcgid" "$run/apache-docroot" || return 1
	# the children (and mod_fcgid's process manager) run as that user
	_stack_server_user 'User %s\nGroup %s' "$run/apache-fcgid" || return 1
	_stack_subst "$template" RUN="$run" PORT="$port" USER="$user_line" MODULES="$modules" "$@" \
		>"$run/apache.conf" || return 1
	if ! "$bin" -d "$run" -f "$run/apache.conf" -t >"$run/apache-test.log" 2>&1; then
		_stack_err "apache configuration test failed ($run/apache.conf)"
		_stack_tail "$run/apache-test.log"
		return 1
	fi
	_stack_say "starting apache on 127.0.0.1:$port"
	# apache2 binds, daemonises and writes RUN/apache.pid; -k start refuses a second instance
	if ! "$bin" -d "$run" -f "$run/apache.conf" -k start >>"$run/apache-error.log" 2>&1; then
		_stack_err "apache failed to start"
		_stack_tail "$run/apache-error.log"
		return 1
	fi
	_stack_server_wait "$run/apache.pid" apache2 "$run/apache-error.log" "$port"
}

# apache_stop RUN: SIGTERM to the parent (it stops its children and mod_fcgid's processes),
# wait up to 35 s (a request has 30 s), then SIGKILL its process group.
apache_stop() {
	_stack_check_run "$1" || return 1
	_stack_stop "$1/apache.pid" apache2 TERM 35 apache
}

# ---------------------------------------------------------------------------------------------
# lighttpd + mod_fastcgi

# lighttpd_start RUN PORT NAME: lighttpd on 127.0.0.1:PORT running the API with RUN/NAME.ini
# through mod_fastcgi "bin-path" (hosting/lighttpd/lighttpd.conf.in -> RUN/lighttpd.conf). A
# running instance is stopped first.
lighttpd_start() {
	local run=$1 port=$2 name=$3 bin api user_line procs
	_stack_check_run "$run" || return 1
	_stack_check_name "$name" || return 1
	bin=$(_stack_bin lighttpd) || {
		_stack_err "lighttpd not found (scripts/install-deps.sh installs lighttpd)"
		return 1
	}
	api=$(_stack_server_api) || return 1
	stack_prepare "$run" || return 1
	_stack_server_ini "$run" "$name" || return 1
	lighttpd_stop "$run" || return 1
	_stack_check_socket_len "$run/lighttpd-fcgi/$name.sock-000" || return 1
	mkdir -p "$run/lighttpd-fcgi" "$run/lighttpd-docroot" "$run/lighttpd-tmp" || return 1
	# lighttpd opens its logs before it drops root: they are made here, its user's
	touch "$run/lighttpd-error.log" "$run/lighttpd-access.log" || return 1
	_stack_server_user 'server.username = "%s"\nserver.groupname = "%s"' "$run/lighttpd-fcgi" \
		"$run/lighttpd-tmp" "$run/lighttpd-error.log" "$run/lighttpd-access.log" || return 1
	procs=$(_stack_server_procs "$run" "$name") || return 1
	_stack_subst "$STACK_ROOT/hosting/lighttpd/lighttpd.conf.in" RUN="$run" PORT="$port" \
		USER="$user_line" API="$api" INI="$run/$name.ini" NAME="$name" PROCS="$procs" \
		>"$run/lighttpd.conf" || return 1
	if ! "$bin" -tt -f "$run/lighttpd.conf" >"$run/lighttpd-test.log" 2>&1; then
		_stack_err "lighttpd configuration test failed ($run/lighttpd.conf)"
		_stack_tail "$run/lighttpd-test.log"
		return 1
	fi
	_stack_say "starting lighttpd on 127.0.0.1:$port"
	# -D: stay in the foreground, in the session _stack_spawn makes (pid file written there)
	_stack_spawn "$run/lighttpd.pid" "$run/lighttpd-error.log" "$bin" -D -f "$run/lighttpd.conf" || {
		_stack_err "lighttpd did not start"
		_stack_tail "$run/lighttpd-error.log"
		return 1
	}
	_stack_server_wait "$run/lighttpd.pid" lighttpd "$run/lighttpd-error.log" "$port"
}

# lighttpd_stop RUN: SIGINT (graceful: in-flight requests finish; SIGTERM would cut them), wait
# up to 35 s, then SIGKILL its process group (the API processes it spawned).
lighttpd_stop() {
	_stack_check_run "$1" || return 1
	_stack_stop "$1/lighttpd.pid" lighttpd INT 35 lighttpd
}

# ---------------------------------------------------------------------------------------------

# stack_server_start RUN PORT NAME: the web server SERVER names (nginx, apache, lighttpd) on
# 127.0.0.1:PORT in front of API NAME. For nginx the supervisor must run (api_start); Apache and
# lighttpd run the binary themselves.
stack_server_start() {
	local run=$1 port=$2 name=$3
	case "${SERVER:-nginx}" in
	nginx) nginx_start "$run" "$port:$name" ;;
	apache) apache_start "$run" "$port" "$name" ;;
	lighttpd) lighttpd_start "$run" "$port" "$name" ;;
	*)
		_stack_err "SERVER must be one of: $STACK_SERVERS (got '$SERVER')"
		return 1
		;;
	esac
}

# stack_servers_stop RUN: stop Apache and lighttpd when they run (nginx_stop stops nginx).
stack_servers_stop() {
	local rc=0
	apache_stop "$1" || rc=1
	lighttpd_stop "$1" || rc=1
	return $rc
}
