#!/usr/bin/env bash
# The Debian package on a fresh Debian 12, as an ops person uses it (`make test-deb`;
# docs/hosting.md). In a debootstrap chroot (base tarball cached in CACHE_DIR; made once from
# the Debian mirror):
#   1. apt install ./terrarium_V1.deb: the system user, /etc/terrarium/terrarium.ini 0640
#      root:terrarium, units, cron.d, logrotate, nginx site; the postinst's migrate fails
#      politely (no database yet) and the install succeeds
#   2. MariaDB started (the command its unit runs), database and user made, the password put
#      in the ini, `terrarium-api migrate`
#   3. the commands the units name (ExecStart, User, SupplementaryGroups, RuntimeDirectory read
#      from the installed unit files): terrarium-api.service, nginx with the package's site,
#      one terrarium-reconciler.service run
#   4. the README's curl example through nginx, then the official SDK suite (from this host,
#      over loopback)
#   5. apt install ./terrarium_V2.deb: V1 repacked with dpkg-deb with a newer version and a
#      test-only migration (tests/deb/900_test_upgrade.sql); the postinst migrates; the API is
#      restarted; the migration is recorded, the edited conffile kept, and the data made before
#      (rows, an environment, the key) is all there
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
BASE=$CACHE_DIR/debian12-base.tar.gz
# what the chroot needs besides the package: its runtime dependencies (so the install needs no
# download), MariaDB, nginx, logrotate, curl
BASE_PACKAGES=mariadb-server,nginx-light,libfcgi0ldbl,libjansson4,libmariadb3,libcurl4,libinih1,logrotate,adduser,curl,ca-certificates,procps
TEST_VERSION_SUFFIX=+upgradetest1
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
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ] && [ "$rc" -eq 0 ] && exit 0
	exit 1
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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
# no service starts from maintainer scripts (there is no init here)
printf '#!/bin/sh\nexit 101\n' >"$CH/usr/sbin/policy-rc.d" && chmod 0755 "$CH/usr/sbin/policy-rc.d"

# ---- the upgrade package: V1 repacked with a newer version and a test-only migration
V1=$(dpkg-deb -f "$DEB" Version)
V2=$V1$TEST_VERSION_SUFFIX
mkdir -p "$WORK/v2"
dpkg-deb -R "$DEB" "$WORK/v2/pkg" || die "dpkg-deb -R"
sed -i "s/^Version: .*/Version: $V2/" "$WORK/v2/pkg/DEBIAN/control"
install -m 0644 "$ROOT/tests/deb/900_test_upgrade.sql" "$WORK/v2/pkg/usr/share/terrarium/sql/"
(cd "$WORK/v2/pkg" && find usr -type f -exec md5sum {} + >DEBIAN/md5sums)
DEB2=$WORK/terrarium_${V2}_$(dpkg-deb -f "$DEB" Architecture).deb
dpkg-deb --root-owner-group -b "$WORK/v2/pkg" "$DEB2" >/dev/null || die "dpkg-deb -b"
cp "$DEB" "$CH/tmp/" && cp "$DEB2" "$CH/tmp/"

# ---- 1. install
say "apt install ./$(basename "$DEB")"
in_ch apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 "/tmp/$(basename "$DEB")" \
	>"$WORK/install1.log" 2>&1
check "apt install $(basename "$DEB") (exit 0)" test $? -eq 0 || tail -n 30 "$WORK/install1.log"
check "the postinst says the migrations wait for a database" \
	grep -q "run 'terrarium-api migrate' once it is" "$WORK/install1.log"
check "system user terrarium" in_ch getent passwd terrarium
check "/etc/terrarium/terrarium.ini is 0640 root:terrarium" \
	test "$(in_ch stat -c '%a %U %G' /etc/terrarium/terrarium.ini)" = "640 root terrarium"
check "the ini is a conffile" grep -q "^ /etc/terrarium/terrarium.ini " \
	<(in_ch dpkg-query -W -f='${Conffiles}\n' terrarium)
for f in /usr/bin/terrarium-api /usr/bin/terrarium-reconciler /usr/share/terrarium/sql/001_init.sql \
	/lib/systemd/system/terrarium-api.service /lib/systemd/system/terrarium-reconciler.service \
	/lib/systemd/system/terrarium-reconciler.timer /etc/cron.d/terrarium-reconciler \
	/etc/nginx/sites-available/terrarium /etc/logrotate.d/terrarium; do
	check "installed: $f" test -e "$CH$f"
done
check "logrotate accepts /etc/logrotate.d/terrarium" in_ch logrotate -d /etc/logrotate.d/terrarium

# ---- 2. MariaDB, the database, the password, migrate
unit_value() { # UNIT KEY: the value of KEY= in the installed unit
	sed -n "s/^$2=//p" "$CH/lib/systemd/system/$1" | tail -n 1
}
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
check "terrarium-api migrate" in_ch terrarium-api -c /etc/terrarium/terrarium.ini migrate

# ---- 3. the units' commands
start_api() {
	local exec user groups rundir
	exec=$(unit_value terrarium-api.service ExecStart)
	user=$(unit_value terrarium-api.service User)
	groups=$(unit_value terrarium-api.service SupplementaryGroups)
	rundir=$(unit_value terrarium-api.service RuntimeDirectory)
	install -d -m "$(unit_value terrarium-api.service RuntimeDirectoryMode)" "$CH/run/$rundir" &&
		in_ch chown "$user:$user" "/run/$rundir" || return 1
	in_ch install -d -o "$user" -g adm -m 2750 /var/log/terrarium || return 1
	# systemd's Type=simple: the process stays in the foreground; its PID is ours to stop
	# shellcheck disable=SC2086 # ExecStart is a command line
	chroot --userspec="$user:$user" --groups="$groups" "$CH" /usr/bin/env -i \
		PATH=/usr/bin:/bin $exec >>"$CH/var/log/terrarium/api.log" 2>&1 &
	echo $! >"$WORK/api.pid"
	PIDS+=("$WORK/api.pid")
	for _ in $(seq 100); do
		[ -S "$CH/run/$rundir/api.sock" ] && return 0
		sleep 0.1
	done
	tail -n 20 "$CH/var/log/terrarium/api.log" >&2
	return 1
}
check "terrarium-api.service's command runs (socket in /run/terrarium)" start_api
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

KEY=$(in_ch terrarium-api -c /etc/terrarium/terrarium.ini key create default) || die "key create"
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

recon() {
	local exec user
	exec=$(unit_value terrarium-reconciler.service ExecStart)
	user=$(unit_value terrarium-reconciler.service User)
	install -d -o "$(in_ch id -u "$user")" -g "$(in_ch id -g "$user")" -m 0750 \
		"$CH/var/lib/terrarium"
	# shellcheck disable=SC2086 # ExecStart is a command line
	chroot --userspec="$user:$user" "$CH" /usr/bin/env -i PATH=/usr/bin:/bin $exec \
		>>"$CH/var/log/terrarium/reconciler.log" 2>&1
}
check "terrarium-reconciler.service's command (one pass, exit 0)" recon
check "the reconciler wrote its metrics" test -s "$CH/var/lib/terrarium/reconciler.prom"

q() { in_ch mariadb -N -B terrarium -e "$1"; }
COUNTS="SELECT (SELECT COUNT(*) FROM environments), (SELECT COUNT(*) FROM agents),
	(SELECT COUNT(*) FROM sessions), (SELECT COUNT(*) FROM api_keys)"
ROWS_BEFORE=$(q "$COUNTS" | tr '\t' ' ')
say "before the upgrade: environments, agents, sessions, keys = $ROWS_BEFORE"

# ---- 5. upgrade
say "apt install ./$(basename "$DEB2")"
in_ch apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 "/tmp/$(basename "$DEB2")" \
	>"$WORK/install2.log" 2>&1
check "upgrade to $V2 (exit 0)" test $? -eq 0 || tail -n 30 "$WORK/install2.log"
check "installed version is $V2" test "$(in_ch dpkg-query -W -f='${Version}' terrarium)" = "$V2"
check "the postinst applied the new migration" grep -q "applying 900_test_upgrade.sql" "$WORK/install2.log"
check "schema_migrations records it" test "$(q "SELECT COUNT(*) FROM schema_migrations WHERE version LIKE '900%'")" = 1
check "the migration's row is there" test "$(q "SELECT note FROM test_upgrade_marker WHERE id = 1")" = "applied by the upgrade"
check "the edited conffile was kept" grep -q "^password = $PW\$" "$CH/etc/terrarium/terrarium.ini"
check "the ini is still 0640 root:terrarium" \
	test "$(in_ch stat -c '%a %U %G' /etc/terrarium/terrarium.ini)" = "640 root terrarium"
check "rows survived (environments, agents, sessions, keys: $ROWS_BEFORE)" \
	test "$(q "$COUNTS" | tr '\t' ' ')" = "$ROWS_BEFORE"

# what systemd's try-restart does after an upgrade
pid=$(cat "$WORK/api.pid")
kill -TERM "$pid" && _stack_wait_gone "$pid" 20
check "API restarted after the upgrade" start_api
code=$(curl -sS -o "$WORK/get.json" -w '%{http_code}' "$URL/v1/environments/$ENV_ID" -H "x-api-key: $KEY" \
	-H "anthropic-beta: managed-agents-2026-04-01")
check "the environment made before the upgrade, with the old key: 200, same name" \
	test "$code" = 200 -a "$(jq -r .name "$WORK/get.json" 2>/dev/null)" = python-dev
