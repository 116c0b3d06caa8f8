# shellcheck shell=bash
# scripts/stack/db.sh (sourced by scripts/lib-stack.sh): the stack's own MariaDB on
# RUN/mysql.sock (no TCP unless DB_EXTRA_ARGS asks), its data directory RUN/db, the database and
# its two accounts, the administrator's SQL.
#
# Environment: DB_EXTRA_ARGS (extra mariadbd options, split on spaces: scripts/cluster.sh's
# wsrep settings), DB_OS_USER (when root, the user mariadbd runs as; default mysql:
# _stack_db_dirs hands it RUN/db and RUN/mysql/ and lets it traverse RUN).

STACK_DB_NAME=terrarium
STACK_DB_USER=terrarium               # the application: SELECT, INSERT, UPDATE, DELETE only
STACK_DB_OWNER=terrarium_owner        # owns the schema: runs the migrations (RUN/owner.ini)
STACK_DB_OS_USER=${DB_OS_USER:-mysql} # the account mariadbd runs as when started as root
STACK_DB_CREATED=0                    # set to 1 by db_init when it created a new data directory

# db_sql RUN [ARGS...]: run SQL from stdin as the MariaDB administrator (the OS user, through
# unix_socket authentication) with `mariadb --batch ARGS`.
db_sql() {
	local run=$1
	shift
	mariadb --no-defaults --socket="$run/mysql.sock" --user="$(id -un)" --batch "$@"
}

# db_query RUN QUERY: QUERY on the stack's database as the administrator; rows tab-separated,
# without column names.
db_query() {
	db_sql "$1" -N "$STACK_DB_NAME" -e "$2"
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
	local run=$1 pid server
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
		pid=$STACK_SPAWNED_PID
		_stack_wait_ready "$run" mariadb "$pid" mariadb 60 db_stop mariadb-admin --no-defaults \
			--socket="$run/mysql.sock" --user="$(id -un)" --connect-timeout=2 ping || return 1
		_stack_say "mariadb ready (pid $pid)"
	fi
	_stack_db_provision "$run"
}

# The vault key RUN/vault.key (docs/vaults.md): 32 random bytes, mode 0600, owned like
# RUN/db-password, made on first use and never replaced (a new key would leave every stored
# credential unreadable); prints its path.
_stack_vault_key() {
	local f=$1/vault.key
	if [ ! -s "$f" ]; then
		(umask 077 && head -c 32 /dev/urandom >"$f.tmp") && mv -f "$f.tmp" "$f" || return 1
	fi
	chmod 0600 "$f"
	if [ "$(stat -c %s "$f")" != 32 ]; then
		_stack_err "$f must hold exactly 32 bytes (docs/vaults.md)"
		return 1
	fi
	echo "$f"
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
			"password = $opw" "name = $STACK_DB_NAME" | _stack_ini_minimal >"$run/owner.ini.tmp"
	) && mv -f "$run/owner.ini.tmp" "$run/owner.ini"
}

# db_stop RUN: SIGTERM (clean shutdown), wait up to 60 s, then SIGKILL.
db_stop() {
	_stack_check_run "$1" || return 1
	_stack_stop "$1/mariadb.pid" mariadbd TERM 60 mariadb
}

