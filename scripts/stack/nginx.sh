# shellcheck shell=bash
# scripts/stack/nginx.sh (sourced by scripts/lib-stack.sh): nginx in front of the API
# supervisors, its own instance configured from nginx/*.in into RUN (`nginx -p RUN -c
# RUN/nginx.conf`), rate-limited per API key; debian/nginx-site.sh reads the defaults below.
#
# Environment:
#   NGINX_WORKERS   nginx worker_processes (default 1)
#   NGINX_RATE, NGINX_BURST, NGINX_HEAVY_RATE, NGINX_HEAVY_BURST   the rate limits of a spec
#                   that names none (defaults below)
#   NGINX_KEEPALIVE FastCGI connections each nginx worker keeps to an API supervisor, with
#                   fastcgi_keep_conn on (default 0: one connection per request; keep it below
#                   the API's workers, see nginx/upstream.conf.in)
#   NGINX_UPSTREAM  space-separated HOST:PORT list: nginx_start proxies every spec's server to
#                   this upstream (FastCGI over TCP, nginx/upstream-hosts.conf.in) instead of
#                   RUN/NAME.sock
#   NGINX_POLL_UPSTREAM  the same for the work queue's long polls: the hosts' poll pools
#                   ([api] poll_socket), one environment's polls on one host (hash of the URI)
#                   instead of RUN/NAME-poll.sock; unset with NGINX_UPSTREAM set, polls go to
#                   NGINX_UPSTREAM's pool
#   NGINX_STREAM_UPSTREAM  space-separated HOST:PORT list of the hosts' own nginx, each holding
#                   its host's event streams (nchan, fed by its API's tailer): nginx_start passes
#                   every spec's streams to them over HTTP, round robin (nginx/stream-proxy.conf.in;
#                   scripts/cluster.sh's front) instead of holding them itself
#   NGINX_FAIL_TIMEOUT  how long an upstream host that failed is skipped (default 2s)
#   NGINX_CONF_EDIT a command nginx_start runs as `CMD RUN` on the configuration it has just
#                   written (RUN/nginx.conf.new, nginx-servers.conf.new, nginx-fastcgi.conf.new),
#                   before comparing and testing it: tests shorten nginx's timeouts with it

STACK_DEFAULT_RATE=500       # nginx rate limit per API key, requests/s (NGINX_RATE overrides)
STACK_DEFAULT_BURST=1000     # and its burst (NGINX_BURST overrides)
STACK_DEFAULT_HEAVY_RATE=5   # heavy requests (limit > 100) per API key, requests/s (NGINX_HEAVY_RATE)
STACK_DEFAULT_HEAVY_BURST=10 # and their burst (NGINX_HEAVY_BURST)

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

# nginx_start RUN ADDR:NAME...: one server per spec, on 127.0.0.1:ADDR when ADDR is a port, or
# on the unix socket ADDR when it is an absolute path (for clients of our own: curl
# --unix-socket), proxying to the API on RUN/NAME.sock, configured from nginx/*.in into
# RUN/nginx*.conf. When nginx already runs with the same configuration nothing happens; with a
# different one it is reloaded (SIGHUP). Waits (10 s at most) until every ADDR accepts
# connections.
nginx_start() {
	local run=$1 spec addr name bin pid user_line addrs=() p listen zone i=0
	shift
	_stack_check_run "$run" || return 1
	if [ $# -eq 0 ]; then
		_stack_err "nginx_start: no ADDR:NAME given"
		return 1
	fi
	bin=$(_stack_bin nginx) || {
		_stack_err "nginx not found (scripts/install-deps.sh installs nginx-light)"
		return 1
	}
	stack_prepare "$run" || return 1
	mkdir -p "$run/nginx-tmp" || return 1
	# the master stays root; its workers run as that user
	_stack_server_user 'user %s %s;' || return 1

	: >"$run/nginx-servers.conf.new"
	# event streams: held by nchan when nginx has it, else by the API's long-poll workers; or
	# passed to the hosts' own nginx (NGINX_STREAM_UPSTREAM)
	local stream_mode=workers modules="# no event-stream modules (docs/events.md)" zones=()
	if [ -n "${NGINX_STREAM_UPSTREAM:-}" ]; then
		stream_mode=proxy
	elif modules=$(stack_nchan_modules); then
		stream_mode=nchan
	fi
	for spec in "$@"; do
		# ADDR:NAME[:RATE[:BURST[:HEAVY_RATE[:HEAVY_BURST]]]]: RATE (N or Nr/s per second, Nr/m
		# per minute) requests per API key, bursts of BURST; the heavy budget likewise
		local rate burst heavy_rate heavy_burst
		IFS=: read -r addr name rate burst heavy_rate heavy_burst <<<"$spec"
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
		i=$((i + 1))
		case "$addr" in
		/*)
			_stack_check_socket_len "$addr" || return 1
			listen="unix:$addr" zone="u$i"
			;;
		'' | *[!0-9]*)
			_stack_err "bad spec '$spec' (want PORT:NAME or /SOCKET:NAME)"
			return 1
			;;
		*) listen="127.0.0.1:$addr" zone=$addr ;;
		esac
		_stack_check_name "$name" || return 1
		_stack_check_socket_len "$run/$name.sock" || return 1
		addrs+=("$addr")
		local keepalive=${NGINX_KEEPALIVE:-0} pass="\"unix:$run/$name.sock\"" keep_conn=off
		local poll_pass="\"unix:$run/$name-poll.sock\""
		case "$keepalive" in '' | *[!0-9]*)
			_stack_err "NGINX_KEEPALIVE must be a number (got '$keepalive')"
			return 1
			;;
		esac
		if [ -n "${NGINX_UPSTREAM:-}" ]; then
			# shellcheck disable=SC2086 # one HOST:PORT per word
			_stack_upstream_hosts "terrarium_$zone" round-robin $NGINX_UPSTREAM \
				>>"$run/nginx-servers.conf.new" || return 1
			pass="terrarium_$zone" poll_pass="terrarium_$zone"
			if [ -n "${NGINX_POLL_UPSTREAM:-}" ]; then
				# shellcheck disable=SC2086
				_stack_upstream_hosts "terrarium_poll_$zone" uri $NGINX_POLL_UPSTREAM \
					>>"$run/nginx-servers.conf.new" || return 1
				poll_pass="terrarium_poll_$zone"
			fi
		elif [ "$keepalive" -gt 0 ]; then
			_stack_subst "$STACK_ROOT/nginx/upstream.conf.in" ZONE="$zone" NAME="$name" \
				SOCKET="$run/$name.sock" KEEPALIVE="$keepalive" \
				>>"$run/nginx-servers.conf.new" || return 1
			pass="terrarium_$zone"
			keep_conn=on
		fi
		_stack_subst "$STACK_ROOT/nginx/server.conf.in" RUN="$run" LISTEN="$listen" ZONE="$zone" \
			NAME="$name" SOCKET="$run/$name.sock" RATE="$rate" BURST="$burst" PASS="$pass" \
			HEAVY_RATE="$heavy_rate" HEAVY_BURST="$heavy_burst" \
			KEEP_CONN="$keep_conn" POLL_PASS="$poll_pass" \
			>>"$run/nginx-servers.conf.new" || return 1
		if [ "$stream_mode" = proxy ]; then
			# shellcheck disable=SC2086 # one HOST:PORT per word
			_stack_upstream_hosts "terrarium_stream_$zone" round-robin $NGINX_STREAM_UPSTREAM \
				>>"$run/nginx-servers.conf.new" || return 1
		fi
		_stack_subst "$STACK_ROOT/nginx/stream-$stream_mode.conf.in" RUN="$run" ZONE="$zone" \
			PASS="$pass" POLL_PASS="$poll_pass" UPSTREAM="terrarium_stream_$zone" \
			>"$run/nginx-stream-$zone.conf.new" || return 1
		zones+=("$zone")
	done
	_stack_subst "$STACK_ROOT/nginx/terrarium.conf.in" RUN="$run" USER="$user_line" \
		WORKER_PROCESSES="${NGINX_WORKERS:-1}" MODULES="$modules" >"$run/nginx.conf.new" ||
		return 1
	if [ "$stream_mode" = nchan ]; then
		_stack_subst "$STACK_ROOT/nginx/events.conf.in" RUN="$run" >"$run/nginx-events.conf.new" ||
			return 1
	elif [ "$stream_mode" = proxy ]; then
		echo "# streams are held by the hosts' nginx (NGINX_STREAM_UPSTREAM; docs/cluster.md)" \
			>"$run/nginx-events.conf.new"
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
		_stack_same_streams "$run" "${zones[@]}"; then
		rm -f "$run"/nginx*.conf.new
		_stack_say "nginx already running (pid $pid)"
		return 0
	fi
	for p in nginx nginx-servers nginx-fastcgi nginx-events "${zones[@]/#/nginx-stream-}"; do
		mv -f "$run/$p.conf.new" "$run/$p.conf" || return 1
	done
	local nginx=("$bin" -p "$run" -c "$run/nginx.conf" -e "$run/nginx-error.log")
	if ! "${nginx[@]}" -t -q; then
		_stack_err "nginx configuration test failed ($run/nginx.conf)"
		return 1
	fi
	if pid=$(stack_running "$run/nginx.pid" nginx); then
		_stack_say "reloading nginx (pid $pid) on ${addrs[*]}"
		kill -HUP "$pid"
		# New workers take over once the master has reread the configuration.
		sleep 1
	else
		_stack_say "starting nginx on ${addrs[*]}"
		# a unix socket left by an nginx killed -9, or by one that bound it and then failed on
		# a taken port, would make its bind fail: remove every one the configuration listens on
		sed -n 's/^[[:space:]]*listen[[:space:]]\{1,\}unix:\([^;[:space:]]*\).*/\1/p' \
			"$run"/nginx*.conf | while IFS= read -r p; do rm -f -- "$p"; done
		# nginx binds its ports, then daemonises and writes RUN/nginx.pid.
		if ! "${nginx[@]}"; then
			_stack_err "nginx failed to start"
			_stack_tail "$run/nginx-error.log"
			return 1
		fi
	fi
	_stack_server_wait "$run/nginx.pid" nginx "$run/nginx-error.log" "${addrs[@]}"
}

# _stack_same_streams RUN ZONE...: 0 when every RUN/nginx-stream-ZONE.conf.new equals the file
# nginx runs with.
_stack_same_streams() {
	local run=$1 zone
	shift
	for zone in "$@"; do
		cmp -s "$run/nginx-stream-$zone.conf.new" "$run/nginx-stream-$zone.conf" || return 1
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
