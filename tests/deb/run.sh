#!/usr/bin/env bash
# The Debian package on a fresh Debian 12, as an ops person uses it (`make test-deb`;
# docs/hosting.md). First, on the package's files: its maintainer scripts (no stop before an
# upgrade, a restart after the postinst's migrations, a stop in the prerm on remove), the
# units through `systemd-analyze verify` and `security --offline=yes` (exposure thresholds
# below), the cron.d line against the reconciler unit. Then in a debootstrap chroot (base
# tarball cached in CACHE_DIR; made once from the Debian mirror), where tests/deb/systemctl
# stands in for systemd (it runs a unit's ExecStart as its User, output appended to its log;
# the maintainer scripts reach it through deb-systemd-invoke):
#   1. apt install ./terrarium_V1.deb: the system user, /etc/terrarium/terrarium.ini 0640
#      root:terrarium, the log files terrarium:adm, units, cron.d, logrotate, nginx site; the
#      postinst's migrate fails politely (no database yet), nothing is started
#   2. MariaDB started (the command its unit runs), database and user made, the password put
#      in the ini, `cd / && terrarium-api migrate` (no -c: the package's default path)
#   3. `systemctl enable --now terrarium-api.service terrarium-reconciler.timer`, nginx with
#      the package's site, `terrarium-api key create` (no -c), one terrarium-reconciler.service
#   4. the README's curl example through nginx, then the official SDK suite (from this host,
#      over loopback); `logrotate -f` with the package's file: api.log rotated, and the running
#      API goes on writing into the truncated file
#   5. apt install ./terrarium_V2.deb: V2 built by scripts/build-deb.sh (in the background
#      meanwhile) with a newer version and a test-only migration (tests/deb/900_test_upgrade.sql);
#      the postinst migrates, then restarts the API (a new process); the migration is recorded,
#      the edited conffile kept, and the data made before (rows, an environment, the key) is all
#      there; with a wrong database password the postinst fails (a failed migration leaves the
#      package unconfigured)
#   6. apt remove: no terrarium process left, the ini kept; apt purge: /etc/terrarium,
#      /var/log/terrarium and /var/lib/terrarium gone
# Usage: tests/deb/run.sh DEB (default: the newest terrarium_*.deb at the top of the tree).
# Environment: CACHE_DIR (default /var/cache/terrarium), MIRROR (default
# http://deb.debian.org/debian), KEEP_ROOT=1. Root only. Last line: "N passed, N failed".
# shellcheck disable=SC2317 # functions run from traps
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/lib-stack.sh
. "$ROOT/scripts/lib-stack.sh"

CACHE_DIR=${CACHE_DIR:-/var/cache/terrarium}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
# what the chroot needs besides the package: its runtime dependencies (so the install needs no
# download), MariaDB, nginx, logrotate, curl
BASE_PACKAGES=mariadb-server,nginx-light,libfcgi0ldbl,libjansson4,libmariadb3,libcurl4,libinih1,libsodium23,logrotate,adduser,curl,ca-certificates,procps
# the cached base is made again when that list changes
BASE=$CACHE_DIR/debian12-base-$(printf '%s' "$BASE_PACKAGES" | sha256sum | cut -c1-12).tar.gz
TEST_VERSION_SUFFIX=+upgradetest1
# systemd-analyze security --offline=yes: the highest exposure (x 10) each unit may have
# (docs/hosting.md gives the current ratings)
EXPOSURE_MAX_API=20
EXPOSURE_MAX_RECONCILER=45
# where tests/deb/systemctl keeps its state (pid files, log) inside the chroot
STANDIN=/run/systemctl-stand-in
# shellcheck source=tests/lib-check.sh
. "$ROOT/tests/lib-check.sh"

say() { printf 'deb-test: %s\n' "$*" >&2; }
die() {
	say "$*"
	failed=$((failed + 1))
	exit 1
}

[ "$(id -u)" -eq 0 ] || {
	say "must run as root (chroot, mount)"
	echo "0 passed, 1 failed"
	exit 1
}
# shellcheck disable=SC2012 # the newest; the names are terrarium_VERSION_ARCH.deb
DEB=${1:-$(ls -t "$ROOT"/terrarium_*.deb 2>/dev/null | head -n 1)}
[ -n "$DEB" ] && [ -f "$DEB" ] || {
	say "no package given and no terrarium_*.deb at the top (make deb)"
	echo "0 passed, 1 failed"
	exit 1
}
DEB=$(cd "$(dirname "$DEB")" && pwd)/$(basename "$DEB")

WORK=$(mktemp -d /var/tmp/terrarium-deb.XXXXXX)
CH=$WORK/root
PIDS=()
cleanup() {
	local rc=$? pid f
	# the upgrade package's build, if still running
	[ -n "${BUILD2_PID:-}" ] && kill -TERM -- "-$BUILD2_PID" 2>/dev/null && wait "$BUILD2_PID"
	# processes started in the chroot, by the PIDs recorded (newest first)
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		f=${PIDS[$i]}
		[ -s "$f" ] || continue
		read -r pid <"$f"
		case "$pid" in '' | *[!0-9]*) continue ;; esac
		[ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$CH" ] || continue
		kill -TERM "$pid" 2>/dev/null
		_stack_wait_gone "$pid" 30 || kill -KILL "$pid" 2>/dev/null
	done
	# anything else still running inside the chroot (API workers): by PID, checked by root dir
	for f in /proc/[0-9]*; do
		[ "$(readlink "$f/root" 2>/dev/null)" = "$CH" ] && kill -KILL "${f#/proc/}" 2>/dev/null
	done
	sleep 0.5
	mountpoint -q "$CH/proc" && umount "$CH/proc"
	mountpoint -q "$CH/dev/pts" && umount "$CH/dev/pts"
	if [ "${KEEP_ROOT:-0}" = 1 ]; then
		say "chroot kept: $CH"
	else
		rm -rf "$WORK"
	fi
	check_exit "$rc"
}
stack_traps cleanup

in_ch() { chroot "$CH" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

# ---- the base chroot (cached)
if [ ! -s "$BASE" ]; then
	say "making the Debian 12 base chroot with debootstrap (once; cached in $BASE)"
	mkdir -p "$CACHE_DIR"
	tmp=$(mktemp -d "$CACHE_DIR/debootstrap.XXXXXX")
	debootstrap --variant=minbase --include="$BASE_PACKAGES" bookworm "$tmp/root" "$MIRROR" \
		>"$tmp/debootstrap.log" 2>&1 || {
		tail -n 20 "$tmp/debootstrap.log" >&2
		rm -rf "$tmp"
		die "debootstrap failed"
	}
	(cd "$tmp/root" && tar --numeric-owner -czf "$tmp/base.tar.gz" .) && mv "$tmp/base.tar.gz" "$BASE"
	rm -rf "$tmp"
fi
say "unpacking $BASE"
mkdir -p "$CH" && tar --numeric-owner -xzf "$BASE" -C "$CH" || die "cannot unpack $BASE"
mount -t proc proc "$CH/proc" || die "mount proc"
mkdir -p "$CH/dev/pts" && mount -t devpts devpts "$CH/dev/pts" -o newinstance,ptmxmode=0666 || true
# systemd's stand-in: the maintainer scripts see /run/systemd/system and call systemctl
install -m 0755 "$ROOT/tests/deb/systemctl" "$CH/usr/bin/systemctl" && mkdir -p "$CH/run/systemd/system" ||
	die "cannot install the systemctl stand-in"
PIDS+=("$CH$STANDIN/terrarium-api.service.pid")

not() { ! "$@"; }
api_procs() { # the PIDs of terrarium programs running in the chroot
	local f
	for f in /proc/[0-9]*; do
		[ "$(readlink "$f/root" 2>/dev/null)" = "$CH" ] || continue
		tr '\0' ' ' <"$f/cmdline" 2>/dev/null | grep -q '^/usr/bin/terrarium-' && echo "${f#/proc/}"
	done
}
no_api_procs() { [ -z "$(api_procs)" ]; }
api_pid() { cat "$CH$STANDIN/terrarium-api.service.pid" 2>/dev/null; }
wait_socket() { # the API's socket, 10 s at most
	for _ in $(seq 100); do
		[ -S "$CH/run/terrarium/api.sock" ] && return 0
		sleep 0.1
	done
	tail -n 20 "$CH/var/log/terrarium/api.log" >&2
	return 1
}
before() { # FILE PATTERN1 PATTERN2: a line matching PATTERN1 comes before one matching PATTERN2
	local a b
	a=$(grep -n -m 1 -e "$2" "$1" | cut -d: -f1)
	b=$(grep -n -m 1 -e "$3" "$1" | cut -d: -f1)
	[ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ]
}

# ---- the upgrade package, built meanwhile: a newer version and a test-only migration
V1=$(dpkg-deb -f "$DEB" Version)
V2=$V1$TEST_VERSION_SUFFIX
say "scripts/build-deb.sh $V2 with tests/deb/900_test_upgrade.sql (in the background)"
# its own process group (setsid), which the cleanup stops if the test ends first
setsid "$ROOT/scripts/build-deb.sh" "$WORK/v2" "$V2" "$ROOT/tests/deb/900_test_upgrade.sql" \
	>"$WORK/build2.log" 2>&1 &
BUILD2_PID=$!
cp "$DEB" "$CH/tmp/"

# ---- 0. the package's files: maintainer scripts, units, cron.d
dpkg-deb -e "$DEB" "$WORK/ctl" && dpkg-deb -x "$DEB" "$WORK/files" || die "dpkg-deb -e/-x"
check "preinst: nothing stopped before an upgrade (debhelper's restart-after-upgrade)" \
	not grep -qs 'deb-systemd-invoke stop' "$WORK/ctl/preinst"
check "postinst: the units restarted on upgrade, after the migrations" \
	before "$WORK/ctl/postinst" '^[[:space:]]*migrate$' '_dh_action=restart'
prerm_stops() {
	grep -q '"$1" = remove' "$WORK/ctl/prerm" &&
		grep -q "deb-systemd-invoke stop 'terrarium-api.service'" "$WORK/ctl/prerm" &&
		grep -q "deb-systemd-invoke stop 'terrarium-reconciler.service' 'terrarium-reconciler.timer'" \
			"$WORK/ctl/prerm"
}
check "prerm: the API, the reconciler and its timer stopped on remove" prerm_stops
UNITDIR=$WORK/files/lib/systemd/system
# verify's root: the package's files (ExecStart is checked there) and this host's system units
# (the targets the units' default dependencies name). Any message, even a warning, fails.
verify_units() {
	cp -an /lib/systemd/system/. "$UNITDIR/" &&
		systemd-analyze verify --root="$WORK/files" --man=no "$UNITDIR/terrarium-api.service" \
			"$UNITDIR/terrarium-reconciler.service" "$UNITDIR/terrarium-reconciler.timer" \
			"$UNITDIR/terrarium-runner.service" >"$WORK/verify.log" 2>&1
	local rc=$?
	cat "$WORK/verify.log"
	[ "$rc" -eq 0 ] && [ ! -s "$WORK/verify.log" ]
}
check "systemd-analyze verify: the four units, no message" verify_units
exposure() { # UNIT MAX: the unit's exposure at most MAX/10
	systemd-analyze security --offline=yes --root="$WORK/files" --threshold="$2" \
		--no-pager "$UNITDIR/$1" >"$WORK/security-$1.log" 2>&1 || {
		tail -n 3 "$WORK/security-$1.log"
		return 1
	}
	say "$1: $(grep -o 'Overall exposure level.*' "$WORK/security-$1.log")"
}
check "systemd-analyze security: terrarium-api.service's exposure <= $EXPOSURE_MAX_API/10" \
	exposure terrarium-api.service "$EXPOSURE_MAX_API"
check "systemd-analyze security: terrarium-reconciler.service's <= $EXPOSURE_MAX_RECONCILER/10" \
	exposure terrarium-reconciler.service "$EXPOSURE_MAX_RECONCILER"
check "systemd-analyze security: terrarium-runner.service's <= $EXPOSURE_MAX_RECONCILER/10" \
	exposure terrarium-runner.service "$EXPOSURE_MAX_RECONCILER"
unit_value() { # UNIT KEY: the value of KEY= in the unit
	sed -n "s/^$2=//p" "$UNITDIR/$1" | tail -n 1
}
cron_is_unit() { # the cron.d line runs the reconciler unit's command, as its user, into its log
	local line user cmd log
	line=$(sed -n 's/^#\{0,1\}\(\* \* \* \* \* .*\)/\1/p' "$WORK/files/etc/cron.d/terrarium-reconciler")
	user=$(awk '{ print $6 }' <<<"$line")
	cmd=$(sed -n 's/.*&& { \(.*\) >>.*/\1/p' <<<"$line")
	log=$(sed -n 's/.* >>\([^ ]*\) 2>&1.*/\1/p' <<<"$line")
	[ "$user" = "$(unit_value terrarium-reconciler.service User)" ] &&
		[ "$cmd" = "$(unit_value terrarium-reconciler.service ExecStart)" ] &&
		[ "append:$log" = "$(unit_value terrarium-reconciler.service StandardOutput)" ] || {
		printf 'cron.d: user %s, command %s, log %s\n' "$user" "$cmd" "$log"
		return 1
	}
}
check "cron.d's line: the reconciler unit's ExecStart, User and log" cron_is_unit

# ---- 1. install
say "apt install ./$(basename "$DEB")"
in_ch apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 "/tmp/$(basename "$DEB")" \
	>"$WORK/install1.log" 2>&1
check "apt install $(basename "$DEB") (exit 0)" test $? -eq 0 || tail -n 30 "$WORK/install1.log"
check "the postinst says the migrations wait for a database" \
	grep -q "run 'terrarium-api migrate' once it is" "$WORK/install1.log"
check "the install started nothing (the units are not enabled)" \
	not grep -q '^systemctl: \(start\|restart\) ' "$CH$STANDIN/log"
check "system user terrarium" in_ch getent passwd terrarium
check "/etc/terrarium/terrarium.ini is 0640 root:terrarium" \
	test "$(in_ch stat -c '%a %U %G' /etc/terrarium/terrarium.ini)" = "640 root terrarium"
check "the ini is a conffile" grep -q "^ /etc/terrarium/terrarium.ini " \
	<(in_ch dpkg-query -W -f='${Conffiles}\n' terrarium)
check "/etc/terrarium/vault.key: 32 bytes, 0640 root:terrarium (docs/vaults.md)" \
	test "$(in_ch stat -c '%s %a %U %G' /etc/terrarium/vault.key)" = "32 640 root terrarium"
check "the ini names the vault key" grep -qx "key_file = /etc/terrarium/vault.key" \
	"$CH/etc/terrarium/terrarium.ini"
VAULT_KEY_SUM=$(sha256sum <"$CH/etc/terrarium/vault.key")
check "/var/log/terrarium is 2750 terrarium:adm" \
	test "$(in_ch stat -c '%a %U %G' /var/log/terrarium)" = "2750 terrarium adm"
for f in api.log reconciler.log runner.log; do
	check "/var/log/terrarium/$f is made 0640 terrarium:adm (logrotate's su can truncate it)" \
		test "$(in_ch stat -c '%a %U %G' "/var/log/terrarium/$f")" = "640 terrarium adm"
done
for f in /usr/bin/terrarium-api /usr/bin/terrarium-reconciler /usr/bin/terrarium-runner \
	/usr/share/terrarium/sql/001_init.sql /lib/systemd/system/terrarium-runner.service \
	/lib/systemd/system/terrarium-api.service /lib/systemd/system/terrarium-reconciler.service \
	/lib/systemd/system/terrarium-reconciler.timer /etc/cron.d/terrarium-reconciler \
	/etc/nginx/sites-available/terrarium /etc/logrotate.d/terrarium; do
	check "installed: $f" test -e "$CH$f"
done
check "logrotate accepts /etc/logrotate.d/terrarium" in_ch logrotate -d /etc/logrotate.d/terrarium

# ---- 2. MariaDB, the database, the password, migrate
mkdir -p "$CH/run/mysqld" && in_ch chown mysql:mysql /run/mysqld
# mariadb.service's ExecStart is /usr/sbin/mariadbd $MYSQLD_OPTS...; no TCP here (the host's
# ports are shared with the chroot)
PIDS+=("$CH/run/mysqld/mysqld.pid")
in_ch /usr/sbin/mariadbd --user=mysql --skip-networking --pid-file=/run/mysqld/mysqld.pid \
	>"$WORK/mariadb.log" 2>&1 &
for _ in $(seq 300); do
	in_ch mariadb-admin ping >/dev/null 2>&1 && break
	sleep 0.2
done
in_ch mariadb-admin ping >/dev/null 2>&1 || { tail "$WORK/mariadb.log"; die "MariaDB did not start"; }
PW=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
in_ch mariadb -e "CREATE DATABASE terrarium CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
	CREATE USER 'terrarium'@'localhost' IDENTIFIED BY '$PW';
	GRANT ALL PRIVILEGES ON terrarium.* TO 'terrarium'@'localhost';" || die "create database"
sed -i "s/^password = .*/password = $PW/" "$CH/etc/terrarium/terrarium.ini"
# as README.Debian says it: no -c, from anywhere
check "cd / && terrarium-api migrate (the package's default configuration)" \
	in_ch sh -c 'cd / && terrarium-api migrate'

# ---- 3. the units
check "systemctl enable --now terrarium-api.service terrarium-reconciler.timer" \
	in_ch systemctl enable --now terrarium-api.service terrarium-reconciler.timer
check "the API's socket appears in /run/terrarium" wait_socket
check "the API socket belongs to group www-data, mode 0660" \
	test "$(in_ch stat -c '%G %a' /run/terrarium/api.sock)" = "www-data 660"

PORT=$(stack_free_port) || die "no free port"
rm -f "$CH/etc/nginx/sites-enabled/default"
sed -i "s/127\.0\.0\.1:8080/127.0.0.1:$PORT/; s/terrarium_8080/terrarium_$PORT/g" \
	"$CH/etc/nginx/sites-available/terrarium"
ln -s ../sites-available/terrarium "$CH/etc/nginx/sites-enabled/terrarium"
check "nginx -t with the package's site" in_ch nginx -t -q
PIDS+=("$CH/run/nginx.pid")
in_ch nginx || die "nginx did not start"
for _ in $(seq 50); do stack_port_open "$PORT" && break; sleep 0.1; done
URL=http://127.0.0.1:$PORT

KEY=$(in_ch sh -c 'cd / && terrarium-api key create default') || die "key create (no -c)"
# the README's curl example
code=$(curl -sS -o "$WORK/create.json" -w '%{http_code}' "$URL/v1/environments" -H "x-api-key: $KEY" \
	-H "anthropic-version: 2023-06-01" -H "anthropic-beta: managed-agents-2026-04-01" \
	-H "content-type: application/json" \
	-d '{"name": "python-dev", "config": {"type": "cloud", "networking": {"type": "unrestricted"}}}')
ENV_ID=$(jq -r .id "$WORK/create.json" 2>/dev/null)
check "the README's curl example through nginx: 200 and an environment ($ENV_ID)" \
	test "$code" = 200 -a "${ENV_ID#env_}" != "$ENV_ID"
check "nginx's own error page (413, JSON envelope)" test "$(curl -s -o /dev/null -w '%{http_code}' \
	"$URL/v1/environments" -H "x-api-key: $KEY" --data-binary @<(head -c 2000000 /dev/zero))" = 413

say "official SDK suite against $URL"
TERRARIUM_URL=$URL TERRARIUM_KEY=$KEY TERRARIUM_BACKEND=local TERRARIUM_HAS_SESSIONS=1 \
	bash "$ROOT/tests/sdk/run.sh" >"$WORK/sdk.log" 2>&1
check "official SDK suite through the package's nginx site and API" test $? -eq 0 ||
	grep -B2 -A20 "^not ok\|^ *not ok" "$WORK/sdk.log" | head -60

check "systemctl start terrarium-reconciler.service (one pass, exit 0)" \
	in_ch systemctl start terrarium-reconciler.service
check "the reconciler wrote its metrics" test -s "$CH/var/lib/terrarium/reconciler.prom"

# ---- 4. logrotate, the API running
LOGDIR=$CH/var/log/terrarium
in_ch logrotate -f /etc/logrotate.d/terrarium >"$WORK/logrotate.log" 2>&1
check "logrotate -f /etc/logrotate.d/terrarium (exit 0)" test $? -eq 0 || cat "$WORK/logrotate.log"
check "api.log rotated: api.log.1 has the API's earlier lines" grep -q 'supervisor: ' "$LOGDIR/api.log.1"
# the API writes a line: a worker killed, the supervisor says so and starts another
api_logs_after_rotation() {
	local worker
	worker=$(ps -o pid= --ppid "$(api_pid)" | head -n 1 | tr -d ' ')
	[ -n "$worker" ] && kill -KILL "$worker" || return 1
	for _ in $(seq 50); do
		grep -q "worker $worker killed by signal 9" "$LOGDIR/api.log" && break
		sleep 0.1
	done
	# appended at the start of the truncated file (O_APPEND), not after a hole of NULs
	grep -q "worker $worker killed by signal 9" "$LOGDIR/api.log" &&
		[ "$(head -c 1 "$LOGDIR/api.log" | od -An -tx1 | tr -d ' ')" != 00 ] ||
		{ od -c "$LOGDIR/api.log" | head -n 5; return 1; }
}
check "the running API goes on logging into the rotated api.log" api_logs_after_rotation

q() { in_ch mariadb -N -B terrarium -e "$1"; }
COUNTS="SELECT (SELECT COUNT(*) FROM environments), (SELECT COUNT(*) FROM agents),
	(SELECT COUNT(*) FROM sessions), (SELECT COUNT(*) FROM api_keys)"
ROWS_BEFORE=$(q "$COUNTS" | tr '\t' ' ')
say "before the upgrade: environments, agents, sessions, keys = $ROWS_BEFORE"

# ---- 5. upgrade
say "waiting for the build of $V2"
waited=$SECONDS
wait "$BUILD2_PID"
check "scripts/build-deb.sh $V2 (exit 0)" test $? -eq 0 || tail -n 30 "$WORK/build2.log"
say "the build of $V2 kept the test waiting $((SECONDS - waited)) s"
DEB2=$(tail -n 1 "$WORK/build2.log")
[ -f "$DEB2" ] || die "no upgrade package"
cp "$DEB2" "$CH/tmp/"
OLD_API=$(api_pid)
say "apt install ./$(basename "$DEB2")"
in_ch apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 "/tmp/$(basename "$DEB2")" \
	>"$WORK/install2.log" 2>&1
check "upgrade to $V2 (exit 0)" test $? -eq 0 || tail -n 30 "$WORK/install2.log"
check "installed version is $V2" test "$(in_ch dpkg-query -W -f='${Version}' terrarium)" = "$V2"
check "the postinst applied the new migration" grep -q "applying 900_test_upgrade.sql" "$WORK/install2.log"
check "schema_migrations records it" test "$(q "SELECT COUNT(*) FROM schema_migrations WHERE version LIKE '900%'")" = 1
check "the migration's row is there" test "$(q "SELECT note FROM test_upgrade_marker WHERE id = 1")" = "applied by the upgrade"
check "nothing stopped before the postinst" not grep -q '^systemctl: stop ' "$WORK/install2.log"
check "the postinst restarted the API after the migration" before "$WORK/install2.log" \
	'applying 900_test_upgrade.sql' '^systemctl: restart terrarium-api.service'
new_api() { # a new main process, the old one gone, the socket back
	local pid
	pid=$(api_pid)
	[ -n "$pid" ] && [ "$pid" != "$OLD_API" ] && ! kill -0 "$OLD_API" 2>/dev/null && wait_socket
}
check "a new API process ($OLD_API before), its socket there" new_api
check "the edited conffile was kept" grep -q "^password = $PW\$" "$CH/etc/terrarium/terrarium.ini"
check "the upgrade kept the vault key" test "$(sha256sum <"$CH/etc/terrarium/vault.key")" = \
	"$VAULT_KEY_SUM"
check "the ini is still 0640 root:terrarium" \
	test "$(in_ch stat -c '%a %U %G' /etc/terrarium/terrarium.ini)" = "640 root terrarium"
check "rows survived (environments, agents, sessions, keys: $ROWS_BEFORE)" \
	test "$(q "$COUNTS" | tr '\t' ' ')" = "$ROWS_BEFORE"
code=$(curl -sS -o "$WORK/get.json" -w '%{http_code}' "$URL/v1/environments/$ENV_ID" -H "x-api-key: $KEY" \
	-H "anthropic-beta: managed-agents-2026-04-01")
check "the environment made before the upgrade, with the old key: 200, same name" \
	test "$code" = 200 -a "$(jq -r .name "$WORK/get.json" 2>/dev/null)" = python-dev

# a configured database the migrations cannot reach: the postinst fails (dpkg keeps the
# package unconfigured), unlike on a fresh install with the shipped password
sed -i "s/^password = .*/password = wrong-$PW/" "$CH/etc/terrarium/terrarium.ini"
in_ch /var/lib/dpkg/info/terrarium.postinst configure "$V1" >"$WORK/postinst-fail.log" 2>&1
check "a failed migration fails the postinst" test $? -ne 0
check "... and says to run dpkg --configure -a" grep -q "dpkg --configure -a" "$WORK/postinst-fail.log"
sed -i "s/^password = .*/password = $PW/" "$CH/etc/terrarium/terrarium.ini"

# ---- 6. remove, purge
in_ch apt-get remove -y -o Dpkg::Use-Pty=0 terrarium >"$WORK/remove.log" 2>&1
check "apt remove terrarium (exit 0)" test $? -eq 0 || tail -n 20 "$WORK/remove.log"
check "the prerm stopped the API" grep -q '^systemctl: stop terrarium-api.service' "$WORK/remove.log"
check "no terrarium process left after remove" no_api_procs || api_procs
check "remove keeps the configuration" test -f "$CH/etc/terrarium/terrarium.ini"
in_ch apt-get purge -y -o Dpkg::Use-Pty=0 terrarium >"$WORK/purge.log" 2>&1
check "apt purge terrarium (exit 0)" test $? -eq 0 || tail -n 20 "$WORK/purge.log"
check "no terrarium process left after purge" no_api_procs
for d in /etc/terrarium /var/log/terrarium /var/lib/terrarium; do
	check "purge removed $d" not test -e "$CH$d"
done
