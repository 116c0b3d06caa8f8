#!/usr/bin/env bash
# The escape suite (tests/reconciler/run.sh runs it): hostile code inside a sandbox, run
# through `terrarium-reconciler --exec`, tries to get out. Every attempt must fail; the suite
# fails if any succeeds.
#
#   escape.sh root [BACKEND]   the reconciler is started as root (it switches to [reconciler] user)
#   escape.sh user [BACKEND]   the reconciler is started as that user ($RECON_USER; when we are
#                              not root, ourselves)
#   BACKEND: bwrap (default) or srt; the stack serves it at TERRARIUM_URL_<BACKEND>.
#
# Attempts: uid 0, capabilities, umount, mount --bind, remount read-write, chattr +i, nested user
# namespaces, reading the configuration, the API key file, /etc/shadow, another sandbox, the
# sandbox root, the run directory, the service's logs, state and run directories as the Debian
# package and `make up` lay them out (as root: in a mount namespace of their own),
# /proc/1/environ, connecting to the MariaDB socket, to the
# API's port and to a database port on the host's 127.0.0.1 (directly, and the way the backend's
# network leads out: bwrap through slirp4netns's host address 10.0.2.2, srt through its HTTP and
# SOCKS proxies), inherited file descriptors. The sandbox's policy is unrestricted: the control
# is that it does reach the Debian mirror (bwrap: a TCP connection; srt, which has no network
# but its proxies: an HTTP answer through them). bwrap: a sandbox bound with an empty
# allow-list reaches neither the mirror nor 10.0.2.2 and has no interface but lo.
# An attempt whose tool is missing (exit 126/127) fails the suite: it proved nothing.
#
# Needs (from tests/reconciler/run.sh): TERRARIUM_RUN, TERRARIUM_URL_<BACKEND>, KEY, RECON_USER.
# Prints "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh" # the stack's helpers (api, stack_free_port), the check counters
MODE=${1:?usage: escape.sh root|user [bwrap|srt]}
BACKEND=${2:-bwrap}
case "$BACKEND" in
bwrap | srt) ;;
*)
	echo "escape.sh: backend '$BACKEND' is not bwrap or srt" >&2
	exit 2
	;;
esac
RUN=${TERRARIUM_RUN:?}
url_var=TERRARIUM_URL_$BACKEND
URL=${!url_var:?$url_var is required}
: "${KEY:?}" "${RECON_USER:?}"
BUILD=${BUILD_DIR:-build}
RECON="$ROOT/$BUILD/terrarium-reconciler"
E="$RUN/escape-$BACKEND-$MODE"
rm -rf "$E"
mkdir -p "$E"


# How the reconciler is started: as root, or as RECON_USER (setpriv, when we are root).
as_recon=()
owner=$(id -un)
if [ "$MODE" = user ] && [ "$(id -u)" -eq 0 ]; then
	as_recon=(setpriv --reuid="$RECON_USER" --regid="$(id -g "$RECON_USER")" --clear-groups --)
	owner=$RECON_USER
fi

# A configuration with the stack's database password, and an API key file beside it, both
# readable only by whoever starts the reconciler. srt shows the sandbox the host's files but for
# the configuration's directory, the sandbox root and home directories (docs/srt.md): there
# they go in the run directory, with the stack's own configuration and MariaDB's socket, as a
# deployment keeps its secrets beside its configuration.
CONF=$E
[ "$BACKEND" = srt ] && CONF=$RUN
INI="$CONF/escape-$BACKEND-$MODE.ini"
KEY_FILE="$CONF/escape-$BACKEND-$MODE.key"
{
	sed -n '/^\[database\]/,/^$/p' "$RUN/local.ini"
	printf '[sandbox]\nbackend = %s\nroot = %s\n\n[log]\nlevel = warn\n' "$BACKEND" "$E/sandboxes"
} >"$INI"
echo "sk-escape-test-key-$(date +%s%N)" >"$KEY_FILE"
chmod 0600 "$INI" "$KEY_FILE"
if [ "$owner" != "$(id -un)" ]; then
	chown "$owner:" "$E" "$INI" "$KEY_FILE"
fi
recon() { "${as_recon[@]}" "$RECON" -c "$INI" "$@"; }

# a listener on the host's 127.0.0.1 standing for a database port (the test stack's MariaDB
# listens on its socket only); stopped by PID at the end
DB_PORT=$(stack_free_port) || exit 1
node -e "require('net').createServer(s => s.end('db\n')).listen($DB_PORT, '127.0.0.1')" &
listener=$!
trap 'kill "$listener" 2>/dev/null; wait "$listener" 2>/dev/null' EXIT
API_PORT=${URL##*:}
for _ in $(seq 1 50); do stack_port_open "$DB_PORT" && break; sleep 0.1; done

agent=$(api "$URL" POST /v1/agents '{"name":"escape","model":"claude-sonnet-4-5"}' | jq -r .id)
env=$(api "$URL" POST /v1/environments \
	'{"name":"escape","config":{"type":"cloud","networking":{"type":"unrestricted"}}}' | jq -r .id)
sid=$(api "$URL" POST /v1/sessions "{\"agent\":\"$agent\",\"environment_id\":\"$env\"}" | jq -r .id)
other=$(api "$URL" POST /v1/sessions "{\"agent\":\"$agent\",\"environment_id\":\"$env\"}" | jq -r .id)
closed=$(api "$URL" POST /v1/sessions "{\"agent\":\"$agent\",\"environment_id\":\"$env\"}" | jq -r .id)
recon --once >"$E/once.log" 2>&1
if [ "$(api "$URL" GET "/v1/sessions/$sid" | jq -r .provisioning.status)" != ready ]; then
	not_ok "the escape sandbox was provisioned (see $E/once.log)"
	cat "$E/once.log"
	check_summary
	exit 1
fi
echo "secret of the other sandbox" >"$E/sandboxes/$other/secret"

MIRROR=$(sed -n 's|^URIs: *https\?://\([^/ ]*\).*|\1|p; s|^deb \[*[^]]*\]* *https\?://\([^/ ]*\).*|\1|p' \
	/etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | head -n 1)

# The hostile script: one line per attempt, "ESCAPED name" when it worked, "held name" when it
# failed, "MISSING name" when its tool was not there (exit 126 or 127: an attempt that could
# not run proves nothing, and fails the suite like an escape). The tools are checked first.
# shellcheck disable=SC2016 # expanded inside the sandbox
defs='
for tool in sh bash cat ls grep id umount mount chattr unshare timeout node curl; do
	command -v "$tool" >/dev/null 2>&1 || echo "MISSING tool $tool"
done
try() {
	name=$1; shift
	"$@" >/dev/null 2>&1
	rc=$?
	case $rc in
	0) echo "ESCAPED $name" ;;
	126 | 127) echo "MISSING $name (exit $rc)" ;;
	*) echo "held $name" ;;
	esac
}
tcp() { timeout 5 bash -c "exec 3<>/dev/tcp/$1/$2"; }
'
# shellcheck disable=SC2016 # expanded inside the sandbox
inside=$defs'
unix_connect() { node -e "const s = require(\"net\").connect(process.argv[1]);
	s.on(\"connect\", () => process.exit(0)); s.on(\"error\", () => process.exit(1));" "$1"; }
is_root() { test "$(id -u)" = 0; }
has_caps() { ! grep -q "^CapEff:[[:space:]]*0000000000000000$" /proc/self/status; }
EXTRA_FDS=$(ls /proc/self/fd | grep -vx "[0-3]") # ls has 0-2 and its directory (3)
extra_fds() { test -n "$EXTRA_FDS"; }
touch victim
try "uid 0" is_root
try "capabilities (CapEff not 0)" has_caps
try "umount /tmp" umount /tmp
try "umount -l the workspace" umount -l "$PWD"
try "mount --bind / /tmp" mount --bind / /tmp
try "remount / read-write" mount -o remount,rw /
try "remount /usr read-write" mount -o remount,bind,rw /usr
try "write to /usr" touch /usr/escaped
try "write to /etc" touch /etc/escaped
try "write to a host file in /etc" sh -c "echo x >>/etc/hostname"
try "remount /etc read-write" mount -o remount,bind,rw /etc
try "chattr +i in the workspace" chattr +i victim
try "nested user namespace" unshare -U -r true
try "read the configuration" cat "$1"
try "read the API key file" cat "$2"
try "read /etc/shadow" cat /etc/shadow
try "read another sandbox" cat "$3/secret"
try "see another sandbox in the sandbox root" sh -c "ls \"\$1\" | grep -qx \"\${2##*/}\"" _ "$4" "$3"
try "see MariaDB'"'"'s socket in the run directory" sh -c "ls -A \"\$1\" | grep -qx mysql.sock" _ "$5"
try "read /proc/1/environ" cat /proc/1/environ
try "connect to the MariaDB socket" unix_connect "$6"
try "connect to the API port on 127.0.0.1" tcp 127.0.0.1 "$7"
try "connect to the database port on 127.0.0.1" tcp 127.0.0.1 "$8"
try "inherited file descriptors" extra_fds
'
# what differs by backend: bwrap's view has neither the sandbox root nor the run directory; srt
# shows directories it hides as empty but for the workspace bound back (the names checked
# above); the ways out of each network to the host's ports, and the control
case "$BACKEND" in
bwrap)
	# shellcheck disable=SC2016 # expanded inside the sandbox
	inside+='
try "list the sandbox root" ls "$4"
try "list the run directory" ls "$5"
try "see the host'"'"'s password and group hashes" sh -c "ls -d /etc/shadow* /etc/gshadow*"
try "connect to the API port through 10.0.2.2" tcp 10.0.2.2 "$7"
try "connect to the database port through 10.0.2.2" tcp 10.0.2.2 "$8"
if tcp "$9" 80; then echo "control outbound"; else echo "control no-outbound"; fi
'
	;;
srt)
	# through srt's proxies: the API answers /healthz, the database port answers one line
	# (HTTP/0.9 to curl), so either succeeds only if the proxy dialled this host
	# shellcheck disable=SC2016 # expanded inside the sandbox
	inside+='
via() { curl -sf --http0.9 -o /dev/null --max-time 10 --noproxy "" "$@"; }
try "connect to the API port through the HTTP proxy" via -x "$HTTP_PROXY" "http://127.0.0.1:$7/healthz"
try "connect to the API port through localhost and the HTTP proxy" via -x "$HTTP_PROXY" "http://localhost:$7/healthz"
try "connect to the database port through an HTTP proxy tunnel" via -p -x "$HTTP_PROXY" "http://127.0.0.1:$8/"
try "connect to the database port through the SOCKS proxy" via -x "${ALL_PROXY:?}" "http://127.0.0.1:$8/"
code=$(curl -s -o /dev/null -w "%{http_code}" --max-time 20 "https://$9/")
case $code in [1-5][0-9][0-9]) echo "control outbound" ;; *) echo "control no-outbound $code" ;; esac
'
	;;
esac
# judge SCRIPT OUTPUT: a check per attempt line of OUTPUT, and every attempt of SCRIPT must
# have been held
judge() {
	local attempts held line
	attempts=$(grep -c '^try "' <<<"$1")
	held=$(grep -c '^held ' <<<"$2")
	while read -r line; do
		case "$line" in
		"held "*) ok "held: ${line#held }" ;;
		"ESCAPED "*) not_ok "ESCAPED: ${line#ESCAPED }" ;;
		"MISSING "*) not_ok "could not try: ${line#MISSING }" ;;
		esac
	done <<<"$2"
	[ "$held" -eq "$attempts" ] || not_ok "all $attempts attempts ran ($held held): $2"
}
out=$(recon --exec "$sid" -- sh -c "$inside" sh "$INI" "$KEY_FILE" "$E/sandboxes/$other" \
	"$E/sandboxes" "$RUN" "$RUN/mysql.sock" "$API_PORT" "$DB_PORT" "$MIRROR" 2>&1)
echo "$out" >"$E/inside.log"
judge "$inside" "$out"
if grep -qx "control outbound" <<<"$out"; then
	ok "control: the unrestricted sandbox reaches the Debian mirror ($MIRROR)"
else
	not_ok "control: the unrestricted sandbox reaches the Debian mirror ($MIRROR): $out"
fi
# The service's own directories, laid out as the Debian package lays them out (logs in
# /var/log/terrarium, 2750 with files 0640 of the account the reconciler works as; the state
# directory /var/lib/terrarium with the metrics file; the run directory /run/terrarium with the
# API's socket) and as `make up` does (everything in the checkout's var/: the configuration,
# logs, metrics, sockets), in a mount namespace of their own (tmpfs over /var/log, /var/lib,
# /run and /srv, the checkout at /srv/terrarium), so that nothing of the host is touched. The
# reconciler of this one `--exec` reads its configuration from that var/, as under `make up`.
# Every read must fail: a command runs with the uid that owns the logs (srt keeps it), and an
# install that prints them and fails would put other sessions' ids and output in its own
# last_error. Needs root (the mount namespace); skipped otherwise.
# shellcheck disable=SC2016 # expanded inside the sandbox
layout_script=$defs'
try "read the API log (Debian: /var/log/terrarium)" cat /var/log/terrarium/api.log
try "read the reconciler log (Debian: /var/log/terrarium)" cat /var/log/terrarium/reconciler.log
try "list the log directory (Debian)" sh -c "ls -A /var/log/terrarium | grep -q log"
try "read the metrics file (Debian: /var/lib/terrarium)" cat /var/lib/terrarium/reconciler.prom
try "list the state directory (Debian)" sh -c "ls -A /var/lib/terrarium | grep -q prom"
try "see the API socket in the run directory (Debian: /run/terrarium)" test -S /run/terrarium/api.sock
try "read the API log (make up: var/)" cat "$1/api.log"
try "read the reconciler log (make up: var/)" cat "$1/reconciler.log"
try "read the metrics file (make up: var/)" cat "$1/reconciler.prom"
try "read the configuration (make up: var/api.ini)" cat "$1/api.ini"
try "see the API socket in the run directory (make up: var/)" test -S "$1/api.sock"
'
# setup_layout OWNER INI: inside the new mount namespace, as root
# shellcheck disable=SC2016 # run by the namespace's bash
setup_layout='
set -e
owner=$1 ini=$2
shift 2
for d in /var/log /var/lib /run /srv; do mount -t tmpfs -o mode=0755 escape-layout "$d"; done
sock() { node -e "require(\"net\").createServer().listen(process.argv[1], () => process.exit(0))" "$1"; }
secret() { # FILE MODE: a line no sandbox may read
	echo "escape-test: the service'"'"'s own $1 (sessions of other tenants)" >"$1"
	chown "$owner:" "$1"
	chmod "$2" "$1"
}
install -d -o "$owner" -g adm -m 2750 /var/log/terrarium
secret /var/log/terrarium/api.log 0640
secret /var/log/terrarium/reconciler.log 0640
chgrp adm /var/log/terrarium/api.log /var/log/terrarium/reconciler.log
install -d -o "$owner" -m 0750 /var/lib/terrarium
secret /var/lib/terrarium/reconciler.prom 0640
install -d -o "$owner" -m 0755 /run/terrarium
sock /run/terrarium/api.sock
install -d -o "$owner" -m 0755 /srv/terrarium /srv/terrarium/var
install -o "$owner" -m 0600 "$ini" /srv/terrarium/var/api.ini
secret /srv/terrarium/var/api.log 0640
secret /srv/terrarium/var/reconciler.log 0640
secret /srv/terrarium/var/reconciler.prom 0640
sock /srv/terrarium/var/api.sock
exec "$@"
'
if [ "$(id -u)" -eq 0 ]; then
	svc=$([ "$MODE" = root ] && echo "$RECON_USER" || echo "$owner")
	out=$(unshare --mount --propagation private -- bash -c "$setup_layout" _ "$svc" "$INI" \
		"${as_recon[@]}" "$RECON" -c /srv/terrarium/var/api.ini --exec "$sid" -- \
		sh -c "$layout_script" sh /srv/terrarium/var 2>&1)
	echo "$out" >"$E/layout.log"
	judge "$layout_script" "$out"
else
	echo "# the service's directories (Debian and make up layouts): skipped, not root"
fi
# A sandbox whose policy allows no host (limited with an empty allow-list; bwrap's admission
# refuses limited environments, so the bound policy is set to [] in the database, as such a
# session would be bound): its commands have no network at all. The control above reached the
# mirror from an unrestricted sandbox of the same environment.
if [ "$BACKEND" = bwrap ]; then
	db_query "$RUN" "UPDATE session_sandboxes SET egress_policy = '[]' WHERE session_id = '$closed'"
	# shellcheck disable=SC2016 # expanded inside the sandbox
	closed_script=$defs'
try "outbound from an empty allow-list (the mirror, port 80)" tcp "$1" 80
try "outbound from an empty allow-list (through 10.0.2.2)" tcp 10.0.2.2 "$2"
try "a network interface besides lo" sh -c "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d \" \" | grep -vqx lo"
'
	out=$(recon --exec "$closed" -- sh -c "$closed_script" sh "$MIRROR" "$API_PORT" 2>&1)
	echo "$out" >"$E/closed.log"
	judge "$closed_script" "$out"
fi
# the host side: what the sandbox made belongs to the unprivileged account, the immutable
# flag did not stick, and the teardown removes everything
victim="$E/sandboxes/$sid/victim"
if [ "$(stat -c %U "$victim")" = "$([ "$MODE" = root ] && echo "$RECON_USER" || echo "$owner")" ]; then
	ok "files made inside belong to the reconciler's unprivileged account ($(stat -c %U "$victim"))"
else
	not_ok "files made inside belong to $(stat -c %U "$victim")"
fi
api "$URL" DELETE "/v1/sessions/$sid" >/dev/null
api "$URL" DELETE "/v1/sessions/$other" >/dev/null
api "$URL" DELETE "/v1/sessions/$closed" >/dev/null
recon --once >>"$E/once.log" 2>&1
if [ ! -e "$E/sandboxes/$sid" ] && [ ! -e "$E/sandboxes/$other" ] && [ ! -e "$E/sandboxes/$closed" ]; then
	ok "the sandboxes torn down"
else
	not_ok "the sandboxes torn down (see $E/once.log)"
fi
check_summary
