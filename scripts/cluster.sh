#!/usr/bin/env bash
# scripts/cluster.sh up|down|status: terrarium past one machine, shown on this one
# (`make cluster-up`, `make cluster-down`; docs/cluster.md).
#
#   host 1  Galera node 1   API supervisor + workers (-> node 1)   reconciler (-> node 1)
#   host 2  Galera node 2   API supervisor + workers (-> node 2)   reconciler (-> node 2)
#   host 3  Galera node 3                                          reconciler (-> node 3)
#   front   nginx on 127.0.0.1:$CLUSTER_PORT, both API hosts as one upstream (FastCGI over TCP);
#           the work queue's long polls to a second upstream, the hosts' poll pools, one
#           environment's polls on one host (consistent hash of the URI; docs/cluster.md); the
#           session event streams to a third, the API hosts' own nginx (HTTP)
#
# Each API host has its own nginx (in RUN/hN, beside the front on 127.0.0.1 port BASE + 10 N + 7;
# its publisher socket RUN/hN/events-pub.sock is a file the host's namespace reaches) proxying to
# that host's API: it holds the streams opened through it (nchan) and the host's API runs the
# tailer that publishes every event of the database to it (docs/events.md), whichever host
# wrote the event.
#
# A host is a network namespace trmc-hN with one veth (trmc-vN on our side, eth0 inside) on
# our bridge trmc-br, address $CLUSTER_NET.(10+N) in one private /24 used only there: no default
# route in any namespace, so nothing in them reaches past the bridge. The front (nginx, this
# script) reaches the hosts through the bridge's $CLUSTER_NET.1. Where namespaces cannot be
# made (not root, no CAP_NET_ADMIN) or CLUSTER_NETNS=0, every host is 127.0.0.1 and only the
# ports tell them apart (no partition fault then).
#
# Galera nodes run as the `mysql` user (the rsync SST fails with "Permission denied" as root),
# each with its own datadir, socket and ports, through scripts/lib-stack.sh's db_init/db_start
# (DB_EXTRA_ARGS carries the wsrep settings). Migrations run once, through host 1, after the
# three nodes formed the cluster. The first `up` bootstraps node 1 (--wsrep-new-cluster); a
# later `up` bootstraps the node whose grastate.dat says safe_to_bootstrap: 1 (the last one
# stopped by `down`). `down` stops everything by PID, nodes 3, 2, 1 in that order, and removes
# the namespaces, veths and bridge; data stays in $CLUSTER_RUN.
#
# Environment: CLUSTER_RUN (default ./var-cluster, or /var/tmp/terrarium-cluster when the
# repository is closed to the mysql user), CLUSTER_PORT (nginx, default 8090),
# CLUSTER_NET (a /24 as A.B.C, default 10.213.7), CLUSTER_PREFIX (names, default trmc),
# CLUSTER_LEASE_SECONDS (reconciler claim lease, default 120), CLUSTER_NETNS (1 = namespaces, 0 = loopback;
# default: namespaces when they can be made), CLUSTER_WORKERS (API workers per host, default 2),
# CLUSTER_POLL_WORKERS (long-poll workers per host, default 4), CLUSTER_POLL_RECHECK_MS (a blocked
# poll reads the queue again after this long: a queueing through another node cannot wake it;
# default 100),
# WORKSPACE (of the printed key, default "default"), SKIP_INSTALL_DEPS=1, and lib-stack's
# NGINX_RATE / NGINX_BURST / LOG_LEVEL / BUILD_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LIB="$ROOT/scripts/lib-stack.sh"
# shellcheck source=scripts/lib-stack.sh
. "$LIB"

CLUSTER_HOSTS=3           # Galera nodes = hosts; a node per host
CLUSTER_API_HOSTS="1 2"   # hosts running an API supervisor behind nginx
CLUSTER_PREFIX=${CLUSTER_PREFIX:-trmc} # namespaces trmc-hN, veths trmc-vN, bridge trmc-br
CLUSTER_BRIDGE=$CLUSTER_PREFIX-br
CLUSTER_PORT_BASE=24000   # host N's ports: BASE + 10 N + (1 sql, 2 galera, 3 IST, 4 SST, 5 API, 6 polls,
                          # 7 its nginx, on 127.0.0.1)
CLUSTER_NODE_TIMEOUT=120  # seconds for a node to join (an SST copies the whole datadir)
CLUSTER_GALERA=/usr/lib/galera/libgalera_smm.so
CLUSTER_DB_OS_USER=mysql
CLUSTER_FW_COMMENT=terrarium-cluster

# The nodes run as mysql and nginx's workers as www-data: both must reach RUN. A clone under a
# closed home directory (/root) cannot hold it; /var/tmp/terrarium-cluster is used then.
RUN=${CLUSTER_RUN:-$ROOT/var-cluster}
if [ -z "${CLUSTER_RUN:-}" ] && [ "$(id -u)" -eq 0 ] &&
	! runuser -u "$CLUSTER_DB_OS_USER" -- test -x "$ROOT" 2>/dev/null; then
	RUN=/var/tmp/terrarium-cluster
fi
PORT=${CLUSTER_PORT:-8090}
NET=${CLUSTER_NET:-10.213.7}
WORKSPACE=${WORKSPACE:-default}
LEASE=${CLUSTER_LEASE_SECONDS:-120}
POLL_RECHECK=${CLUSTER_POLL_RECHECK_MS:-100}
CLUSTER_FW_RULE=(FORWARD -i "$CLUSTER_BRIDGE" -o "$CLUSTER_BRIDGE" -m comment --comment "$CLUSTER_FW_COMMENT" -j ACCEPT)

say() { printf 'cluster: %s\n' "$*" >&2; }
die() {
	printf 'cluster: error: %s\n' "$*" >&2
	exit 1
}

case "$CLUSTER_PREFIX" in
[a-z]*[!a-z0-9]* | [!a-z]* | ?????????*) die "CLUSTER_PREFIX: 1-8 lower-case letters and digits, a letter first" ;;
esac
case "$LEASE" in '' | *[!0-9]*) die "CLUSTER_LEASE_SECONDS must be a number of seconds" ;; esac
case "$POLL_RECHECK" in '' | *[!0-9]*) die "CLUSTER_POLL_RECHECK_MS must be a number of milliseconds" ;; esac
case "$NET" in
*[!0-9.]* | *.*.*.* | '') die "CLUSTER_NET must be the first three octets of a /24 (got '$NET')" ;;
esac

# ---- hosts: namespaces or loopback --------------------------------------------------------

ns_name() { echo "$CLUSTER_PREFIX-h$1"; }

# The mode is chosen at `up` and kept in RUN/mode for down/status.
cluster_mode() {
	if [ -s "$RUN/mode" ]; then
		cat "$RUN/mode"
	elif [ "${CLUSTER_NETNS:-}" = 0 ]; then
		echo loopback
	elif [ "$(id -u)" -eq 0 ] && ip netns add "$CLUSTER_PREFIX-probe" 2>/dev/null; then
		ip netns del "$CLUSTER_PREFIX-probe"
		echo netns
	elif [ "${CLUSTER_NETNS:-}" = 1 ]; then
		die "CLUSTER_NETNS=1 but network namespaces cannot be made here"
	else
		echo loopback
	fi
}

host_addr() {
	if [ "$MODE" = netns ]; then echo "$NET.$((10 + $1))"; else echo 127.0.0.1; fi
}
port_of() { # HOST KIND
	local k
	case "$2" in sql) k=1 ;; galera) k=2 ;; ist) k=3 ;; sst) k=4 ;; api) k=5 ;; poll) k=6 ;; web) k=7 ;; esac
	echo $((CLUSTER_PORT_BASE + 10 * $1 + k))
}
host_run() { echo "$RUN/h$1"; }

# in_host N CMD...: run CMD on host N (inside its namespace).
in_host() {
	local n=$1
	shift
	if [ "$MODE" = netns ]; then
		ip netns exec "$(ns_name "$n")" "$@"
	else
		"$@"
	fi
}

# lib_on N FUNCTION ARGS...: a lib-stack.sh function on host N; what it starts stays there.
lib_on() {
	local n=$1
	shift
	# shellcheck disable=SC2016
	in_host "$n" bash -c '. "$0" && "$@"' "$LIB" "$@"
}

net_up() {
	local i ns v
	[ "$MODE" = netns ] || return 0
	if ! ip link show "$CLUSTER_BRIDGE" >/dev/null 2>&1; then
		if ip -4 route show | grep -q "^$NET\.0/24 "; then
			die "$NET.0/24 is already routed on this machine: choose another CLUSTER_NET"
		fi
		say "bridge $CLUSTER_BRIDGE $NET.1/24"
		ip link add "$CLUSTER_BRIDGE" type bridge
		ip addr add "$NET.1/24" dev "$CLUSTER_BRIDGE"
		ip link set "$CLUSTER_BRIDGE" up
	fi
	# With br_netfilter loaded, bridged packets pass iptables' FORWARD chain, whose policy may
	# be DROP (Docker sets it): accept what stays on our bridge, nothing else.
	if command -v iptables >/dev/null 2>&1 && ! iptables -C "${CLUSTER_FW_RULE[@]}" 2>/dev/null; then
		iptables -I FORWARD 1 "${CLUSTER_FW_RULE[@]:1}"
	fi
	for i in $(seq 1 $CLUSTER_HOSTS); do
		ns=$(ns_name "$i")
		v=$CLUSTER_PREFIX-v$i
		if ! ip netns list | grep -qw "^$ns"; then
			say "namespace $ns $(host_addr "$i")/24 (veth $v)"
			ip netns add "$ns"
		fi
		if ! ip link show "$v" >/dev/null 2>&1; then
			ip link add "$v" type veth peer name eth0 netns "$ns"
			ip link set "$v" master "$CLUSTER_BRIDGE"
			ip -n "$ns" addr add "$(host_addr "$i")/24" dev eth0
		fi
		ip link set "$v" up
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 up
	done
}

net_down() {
	local i ns
	[ "$MODE" = netns ] || return 0
	for i in $(seq 1 $CLUSTER_HOSTS); do
		ns=$(ns_name "$i")
		if ip netns list | grep -qw "^$ns"; then
			ip netns del "$ns" && say "namespace $ns removed"
		fi
		ip link del "$CLUSTER_PREFIX-v$i" 2>/dev/null || true
	done
	if ip link show "$CLUSTER_BRIDGE" >/dev/null 2>&1; then
		ip link del "$CLUSTER_BRIDGE" && say "bridge $CLUSTER_BRIDGE removed"
	fi
	if command -v iptables >/dev/null 2>&1; then
		while iptables -D "${CLUSTER_FW_RULE[@]}" 2>/dev/null; do :; done
	fi
}

# ---- Galera nodes -----------------------------------------------------------------------

# The wsrep settings of node N (docs/cluster.md explains each).
node_args() {
	local n=$1 a i members=""
	a=$(host_addr "$n")
	for i in $(seq 1 $CLUSTER_HOSTS); do
		members+="${members:+,}$(host_addr "$i"):$(port_of "$i" galera)"
	done
	echo "--skip-networking=0 --bind-address=$a --port=$(port_of "$n" sql)" \
		"--innodb-buffer-pool-size=64M --pid-file=$(host_run "$n")/mariadbd-own.pid" \
		"--wsrep-on=ON --wsrep-provider=$CLUSTER_GALERA --wsrep-cluster-name=terrarium" \
		"--wsrep-cluster-address=gcomm://$members --wsrep-node-name=h$n" \
		"--wsrep-node-address=$a:$(port_of "$n" galera)" \
		"--wsrep-provider-options=gmcast.listen_addr=tcp://$a:$(port_of "$n" galera);ist.recv_addr=$a:$(port_of "$n" ist);gcache.size=128M" \
		"--wsrep-sst-method=rsync --wsrep-sst-receive-address=$a:$(port_of "$n" sst)" \
		"--wsrep-sync-wait=3 --wsrep-slave-threads=2" \
		"--binlog-format=ROW --innodb-autoinc-lock-mode=2 --default-storage-engine=InnoDB"
}

node_running() { stack_running "$(host_run "$1")/mariadb.pid" mariadbd >/dev/null; }

node_sql() { # N SQL: one value from node N (as the administrator, on its unix socket)
	db_sql "$(host_run "$1")" -N -e "$2" 2>/dev/null
}

node_status() { node_sql "$1" "SHOW GLOBAL STATUS LIKE '$2'" | cut -f2; }

# node_start N [bootstrap]: the data directory (made by db_init, handed to mysql), the shared
# database password, then db_start inside host N with the wsrep settings.
node_start() {
	local n=$1 how=${2:-join} dir extra
	dir=$(host_run "$n")
	if node_running "$n"; then
		say "node $n already running"
		return 0
	fi
	db_init "$dir" || return 1
	chown "$CLUSTER_DB_OS_USER" "$dir"
	chown -R "$CLUSTER_DB_OS_USER:$CLUSTER_DB_OS_USER" "$dir/db"
	# every node provisions the accounts and Galera replicates them: one password each
	cp -p "$RUN/db-password" "$dir/db-password"
	cp -p "$RUN/db-owner-password" "$dir/db-owner-password"
	extra=$(node_args "$n")
	[ "$how" = bootstrap ] && extra+=" --wsrep-new-cluster"
	say "starting Galera node $n ($how) on $(host_addr "$n"):$(port_of "$n" sql)"
	DB_OS_USER=$CLUSTER_DB_OS_USER DB_EXTRA_ARGS="$extra ${DB_EXTRA_ARGS:-}" lib_on "$n" db_start "$dir"
}

# The node to bootstrap from when none runs: the one marked safe_to_bootstrap (stopped last), a
# node that never ran (a new cluster) when none is marked, else node 1, forced (say so).
bootstrap_node() {
	local i f
	for i in $(seq 1 $CLUSTER_HOSTS); do
		f="$(host_run "$i")/db/grastate.dat"
		if [ -f "$f" ] && grep -q '^safe_to_bootstrap: 1' "$f"; then
			echo "$i"
			return 0
		fi
	done
	f="$(host_run 1)/db/grastate.dat"
	if [ -f "$f" ]; then
		say "no node is marked safe_to_bootstrap (all stopped uncleanly): forcing node 1" \
			"(transactions only another node committed last may be lost; docs/cluster.md)"
		sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$f"
	fi
	echo 1
}

wait_cluster_size() { # WANT SECONDS
	local n=$(($2 * 2)) size=""
	while [ $n -gt 0 ]; do
		size=$(node_status 1 wsrep_cluster_size || true)
		[ "$size" = "$1" ] && return 0
		sleep 0.5
		n=$((n - 1))
	done
	say "cluster size ${size:-?}, want $1"
	return 1
}

# ---- up / down / status ------------------------------------------------------------------

new_key() {
	local key
	key=$(lib_on 1 api_cli "$(host_run 1)" api key create "$WORKSPACE") || die "key create failed"
	case "$key" in '' | *[[:space:]]*) die "'key create' printed no single-line key" ;; esac
	(umask 077 && printf '%s\n' "$key" >"$RUN/api-key")
	say "new API key for workspace '$WORKSPACE' in $RUN/api-key"
}

cmd_up() {
	local i k f first running=0 pw pattern code ups="" poll_ups="" web_ups=""
	if [ "${SKIP_INSTALL_DEPS:-0}" != 1 ]; then
		bash "$ROOT/scripts/install-deps.sh"
	fi
	make -C "$ROOT" >&2
	[ -e "$CLUSTER_GALERA" ] || die "$CLUSTER_GALERA missing (scripts/install-deps.sh installs galera-4)"
	[ "$(id -u)" -eq 0 ] || die "run as root: Galera nodes run as the $CLUSTER_DB_OS_USER user"
	id "$CLUSTER_DB_OS_USER" >/dev/null 2>&1 || die "no $CLUSTER_DB_OS_USER user (mariadb-server makes it)"
	mkdir -p "$RUN"
	RUN=$(cd "$RUN" && pwd)
	chmod 0711 "$RUN"
	MODE=$(cluster_mode)
	echo "$MODE" >"$RUN/mode"
	say "hosts: $MODE"
	if [ "$MODE" = loopback ]; then
		for i in $(seq 1 $CLUSTER_HOSTS); do
			for k in sql galera ist sst api poll; do
				! node_running "$i" && stack_port_open "$(port_of "$i" $k)" &&
					die "loopback port $(port_of "$i" $k) is taken: CLUSTER_NETNS=0 needs ports $CLUSTER_PORT_BASE-$((CLUSTER_PORT_BASE + 40)) free"
			done
		done
	fi
	# the API hosts' nginx listen on this side's loopback, whatever the mode
	for i in $CLUSTER_API_HOSTS; do
		! stack_running "$(host_run "$i")/nginx.pid" nginx >/dev/null &&
			stack_port_open "$(port_of "$i" web)" &&
			die "loopback port $(port_of "$i" web) (host $i's nginx) is taken"
	done
	net_up

	for f in db-password db-owner-password; do
		if [ ! -s "$RUN/$f" ]; then
			(umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$RUN/$f")
		fi
	done
	# one vault key for every host: a credential sealed through one opens on all (docs/vaults.md)
	if [ ! -s "$RUN/vault.key" ]; then
		(umask 077 && head -c 32 /dev/urandom >"$RUN/vault.key")
	fi
	for i in $(seq 1 $CLUSTER_HOSTS); do
		node_running "$i" && running=1
	done
	if [ $running = 0 ]; then
		first=$(bootstrap_node)
		node_start "$first" bootstrap || die "node $first did not start"
	fi
	for i in $(seq 1 $CLUSTER_HOSTS); do
		node_start "$i" join || die "node $i did not join"
	done
	wait_cluster_size $CLUSTER_HOSTS $CLUSTER_NODE_TIMEOUT || die "the nodes did not form a cluster"
	say "Galera cluster of $CLUSTER_HOSTS nodes: $(node_status 1 wsrep_cluster_status)," \
		"auto_increment_increment $(node_sql 1 'SELECT @@auto_increment_increment')"

	# API hosts connect over TCP: the account db_start made for the socket, from the /24 too
	# (replicated to every node).
	pw=$(cat "$RUN/db-password")
	if [ "$MODE" = netns ]; then pattern="$NET.%"; else pattern=127.0.0.1; fi
	db_sql "$(host_run 1)" <<SQL || die "could not create the cluster's database account"
CREATE USER IF NOT EXISTS '$STACK_DB_USER'@'$pattern' IDENTIFIED BY '$pw';
ALTER USER '$STACK_DB_USER'@'$pattern' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON \`$STACK_DB_NAME\`.* TO '$STACK_DB_USER'@'$pattern';
SQL
	for i in $(seq 1 $CLUSTER_HOSTS); do
		cp -p "$RUN/vault.key" "$(host_run "$i")/vault.key" || die "no vault key for host $i"
		DB_ADDR="$(host_addr "$i"):$(port_of "$i" sql)" \
			API_LISTEN="$(host_addr "$i"):$(port_of "$i" api)" \
			API_POLL_LISTEN="$(host_addr "$i"):$(port_of "$i" poll)" \
			POLL_WORKERS=${CLUSTER_POLL_WORKERS:-4} \
			WORKERS=${CLUSTER_WORKERS:-2} api_config "$(host_run "$i")" api local ||
			die "api_config host $i failed"
		# a queueing through another node cannot wake a poll (the processlist is the node's):
		# a blocked poll reads the queue again after poll_recheck_ms (docs/cluster.md); a
		# reconciler that dies holding claims delays them by the lease (600 s by default)
		printf '\n[api]\npoll_recheck_ms = %s\n\n[reconciler]\nlease_seconds = %s\n' \
			"$POLL_RECHECK" "$LEASE" >>"$(host_run "$i")/api.ini"
	done
	# Once for the cluster, through host 1 (DDL replicates in total order to every node).
	lib_on 1 api_cli "$(host_run 1)" api migrate "$ROOT/sql" || die "migrate failed"

	[ -s "$RUN/api-key" ] || new_key

	for i in $CLUSTER_API_HOSTS; do
		API_LISTEN="$(host_addr "$i"):$(port_of "$i" api)" \
			API_POLL_LISTEN="$(host_addr "$i"):$(port_of "$i" poll)" \
			lib_on "$i" api_start "$(host_run "$i")" api || die "API on host $i did not start"
		ups+="$(host_addr "$i"):$(port_of "$i" api) "
		poll_ups+="$(host_addr "$i"):$(port_of "$i" poll) "
	done
	for i in $(seq 1 $CLUSTER_HOSTS); do
		lib_on "$i" recon_start "$(host_run "$i")" api || die "reconciler on host $i did not start"
	done
	# each API host's own nginx: its streams (nchan), fed by its API's tailer
	for i in $CLUSTER_API_HOSTS; do
		NGINX_UPSTREAM="$(host_addr "$i"):$(port_of "$i" api)" \
			NGINX_POLL_UPSTREAM="$(host_addr "$i"):$(port_of "$i" poll)" \
			nginx_start "$(host_run "$i")" "$(port_of "$i" web):api" ||
			die "host $i's nginx did not start"
		port_of "$i" web >"$(host_run "$i")/web-port"
		web_ups+="127.0.0.1:$(port_of "$i" web) "
	done
	stack_prepare "$RUN/front" || die "cannot prepare $RUN/front"
	NGINX_UPSTREAM="$ups" NGINX_POLL_UPSTREAM="$poll_ups" NGINX_STREAM_UPSTREAM="$web_ups" \
		nginx_start "$RUN/front" "$PORT:api" || die "nginx did not start"
	echo "$PORT" >"$RUN/front/port"
	# a key kept from an earlier run must still authenticate
	code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 \
		"http://127.0.0.1:$PORT/v1/environments?limit=1" -H "x-api-key: $(cat "$RUN/api-key")" \
		-H 'anthropic-version: 2023-06-01' -H 'anthropic-beta: managed-agents-2026-04-01') || code=000
	if [ "$code" = 401 ]; then
		new_key
	elif [ "$code" != 200 ]; then
		say "warning: GET /v1/environments through nginx answered $code"
	fi

	cat <<EOF

terrarium cluster is up ($MODE: ${CLUSTER_HOSTS} Galera nodes, API hosts $CLUSTER_API_HOSTS, a reconciler on every host)
  base URL  http://127.0.0.1:$PORT
  API key   $(cat "$RUN/api-key")    (also in $RUN/api-key)
  hosts     $(for i in $(seq 1 $CLUSTER_HOSTS); do printf 'h%s=%s ' "$i" "$(host_addr "$i")"; done)
  host nginx $(for i in $CLUSTER_API_HOSTS; do printf 'h%s=http://127.0.0.1:%s ' "$i" "$(port_of "$i" web)"; done)
  logs      $RUN/h*/{mariadb,api,reconciler}.log $RUN/front/nginx-error.log

  scripts/cluster.sh status    nodes, cluster size, processes
  make cluster-down            stops it (data kept in $RUN)
EOF
}

cmd_down() {
	local i rc=0
	if [ ! -d "$RUN" ]; then
		say "$RUN does not exist: nothing to stop"
		MODE=$(cluster_mode)
		net_down
		return 0
	fi
	RUN=$(cd "$RUN" && pwd)
	MODE=$(cluster_mode)
	nginx_stop "$RUN/front" || rc=1
	# nodes last to first: node 1 stops last and is marked safe_to_bootstrap for the next `up`
	for i in $(seq $CLUSTER_HOSTS -1 1); do
		stack_stop_all "$(host_run "$i")" || rc=1
	done
	net_down
	rm -f "$RUN/mode"
	say "stopped (data kept in $RUN)"
	return $rc
}

cmd_status() {
	local i pid what
	[ -d "$RUN" ] || die "$RUN does not exist: make cluster-up first"
	RUN=$(cd "$RUN" && pwd)
	MODE=$(cluster_mode)
	echo "hosts: $MODE"
	for i in $(seq 1 $CLUSTER_HOSTS); do
		printf 'h%s %-15s' "$i" "$(host_addr "$i")"
		for what in mariadb:mariadbd api:terrarium-api reconciler:terrarium-reconciler nginx:nginx; do
			if pid=$(stack_running "$(host_run "$i")/${what%%:*}.pid" "${what#*:}"); then
				printf ' %s=%s' "${what%%:*}" "$pid"
			fi
		done
		if node_running "$i"; then
			printf ' wsrep: %s %s size=%s' "$(node_status "$i" wsrep_cluster_status)" \
				"$(node_status "$i" wsrep_local_state_comment)" "$(node_status "$i" wsrep_cluster_size)"
		fi
		echo
	done
	if pid=$(stack_running "$RUN/front/nginx.pid" nginx); then
		echo "front nginx=$pid http://127.0.0.1:$(cat "$RUN/front/port" 2>/dev/null || echo "$PORT")"
	else
		echo "front nginx not running"
	fi
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
*)
	echo "usage: scripts/cluster.sh up|down|status" >&2
	exit 2
	;;
esac
