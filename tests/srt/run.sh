#!/usr/bin/env bash
# The srt backend end to end (tests/e2e/run.sh runs it against the stack it started): the API
# with backend srt through nginx, real MariaDB, the reconciler running every command through
# sandbox-runtime (docs/srt.md). The only hosts reached are the npm registry (`npm config get
# registry`) and the Debian mirror (the apt sources); every other destination is refused by
# srt's proxy before anything is dialled, or is on loopback.
#
#   check      --check runs srt's self-test
#   private    a sandbox-runtime the [reconciler] user cannot read: --check and make up
#              BACKEND=srt fail, naming the directory in the way and the user
#   node       install-deps refuses a node older than the oldest sandbox-runtime runs on
#   limited    allowed_hosts = [the npm registry's host] + npm packages -> ready; the package
#              loads; through --exec the npm registry answers and the Debian mirror is refused
#   package managers  allow_package_managers true: the registry hosts (common/egress.c, as the
#              reconciler recorded the bound list) answer after the install, other hosts do not
#   registries allow_package_managers false: during the install (a probe in place of npm) the
#              two hosts answer when they are registry hosts and are refused when not (a
#              mirror of its own); neither answers afterwards (open, install, restore, bind)
#   wildcard   `*.` + the npm host's parent domain: the npm host answers, the parent refused
#   mcp        an MCP server's host joins the list with allow_mcp_servers, not without; a
#              session-local replacement of the servers decides which host
#   hosts      allowed 127.0.0.1 and localhost do not reach the API's port; a name srt cannot
#              express (no dot) fails the provisioning with a clear last_error
#   unrestricted  the registries answer, the host's loopback (the API's port) does not
#   root       started as root: commands run as the [reconciler] user, not root
#   escape     inside: uid not 0, no capabilities, the configuration, the API key, other
#              sandboxes, /etc/shadow, home directories and the MariaDB socket unreadable,
#              writes only in the workspace and /tmp, mount/umount refused, no host loopback
#
# Started as root (as `make test` is in CI), the reconciler is started as root too and gives up
# root for its [reconciler] user, SRT_TEST_USER (default www-data), before any srt command runs:
# the sandboxes run as that user (checked under "root").
# Needs (from tests/e2e/run.sh): TERRARIUM_RUN, TERRARIUM_URL_srt, KEY.
# Prints "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN=${TERRARIUM_RUN:?TERRARIUM_RUN is required}
URL=${TERRARIUM_URL_srt:?TERRARIUM_URL_srt is required}
: "${KEY:?}"
BUILD=${BUILD_DIR:-build}
RECON="$ROOT/$BUILD/terrarium-reconciler"
T="$RUN/srt-test"
CURL_MAX_S=20

# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"

# ---- the two reachable hosts, from this machine's own configuration ----
url_host() { sed -E 's|^[a-z]+://([^/:@]*@)?([^/:]+).*|\2|' <<<"$1"; }
NPM_HOST=$(url_host "$(npm config get registry 2>/dev/null)")
DEB_HOST=$(
	{
		sed -nE 's/^[[:space:]]*deb(-src)?[[:space:]]+(\[[^]]*\][[:space:]]+)?(https?:\/\/[^[:space:]]+).*/\3/p' \
			/etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
		sed -nE 's/^URIs:[[:space:]]*(https?:\/\/[^[:space:]]+).*/\1/p' \
			/etc/apt/sources.list.d/*.sources 2>/dev/null
	} | head -n 1
)
DEB_HOST=$(url_host "$DEB_HOST")
if [ -z "$NPM_HOST" ] || [ -z "$DEB_HOST" ]; then
	echo "srt: cannot tell the npm registry ('$NPM_HOST') or the Debian mirror ('$DEB_HOST')" >&2
	exit 1
fi
echo "# npm registry $NPM_HOST, Debian mirror $DEB_HOST"

# ---- the reconciler, as whoever runs this script ----
rm -rf "$T"
mkdir -p "$T/root"
RECON_USER=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
	RECON_USER=${SRT_TEST_USER:-www-data}
	chown -R "$RECON_USER:" "$T"
fi
# in the runtime directory, like the stack's own configuration: srt hides that directory (the
# API's configuration, MariaDB's socket) from the sandboxes
INI="$RUN/srt-reconciler.ini"
{
	sed -n '/^\[database\]/,/^$/p' "$RUN/srt.ini"
	printf '[sandbox]\nbackend = srt\nroot = %s\n\n' "$T/root"
	printf '[reconciler]\nuser = %s\n\n[log]\nlevel = info\n' "$RECON_USER"
} >"$INI"
chmod 0600 "$INI"
recon() { "$RECON" -c "$INI" "$@"; }

AGENT=$(api "$URL" POST /v1/agents '{"name":"srt-test","model":"claude-sonnet-4-5"}' | jq -r .id)
new_session() { # new_session NETWORKING [PACKAGES [AGENT]] -> SESSION_ID
	local env packages=${2:-'{}'}
	env=$(api "$URL" POST /v1/environments "{\"name\":\"srt-$RANDOM$RANDOM\",\"config\":{\"type\":\"cloud\",\"networking\":$1,\"packages\":$packages}}" | jq -r .id)
	api "$URL" POST /v1/sessions "{\"agent\":\"${3:-$AGENT}\",\"environment_id\":\"$env\"}" | jq -r .id
}
status() { api "$URL" GET "/v1/sessions/$1" | jq -r .provisioning.status; }
provision() { # provision SESSION: one --once run; the session must end ready
	recon --once >>"$T/once.log" 2>&1
	[ "$(status "$1")" = ready ] || {
		tail -n 20 "$T/once.log" | sed 's/^/    /'
		api "$URL" GET "/v1/sessions/$1" | jq -c .provisioning | sed 's/^/    /'
		return 1
	}
}

# HTTPS through the sandbox, several hosts in one --exec (each srt start costs a second or
# more): PROBE[HOST] is "answers" (any HTTP status from the host itself), "refused" (srt's
# proxy answered the CONNECT with 403: nothing was dialled) or what curl said. PROBE_SH prints
# "HOST VERDICT" lines for its arguments MAX HOST... (also run in place of npm, registries).
PROBE_SH='max=$1
shift
for h; do
	out=$(curl -sS -o /dev/null -w "%{http_code}" --max-time "$max" "https://$h/" 2>&1)
	case $out in
	*"CONNECT tunnel failed, response 403"*) echo "$h refused" ;;
	[1-5][0-9][0-9]) echo "$h answers" ;;
	*) echo "$h other:$(echo $out | tr " " _)" ;;
	esac
done'
declare -A PROBE
probe() { # probe SESSION HOST...
	local sid=$1 h r
	shift
	PROBE=()
	while read -r h r; do
		PROBE[$h]=$r
	done < <(recon --exec "$sid" -- sh -c "$PROBE_SH" sh "$CURL_MAX_S" "$@" 2>/dev/null)
}
answers() { [ "${PROBE[$1]:-}" = answers ] || { echo "    $1: ${PROBE[$1]:-no answer}"; return 1; }; }
refused() { [ "${PROBE[$1]:-}" = refused ] || { echo "    $1: ${PROBE[$1]:-no answer}"; return 1; }; }
registry() { grep -qxF "$1" <<<"$REGISTRIES"; } # registry HOST: one of the registry hosts

# ---- check ----
echo "# check"
recon --check >"$T/check.log" 2>&1
check "check: --check exits 0 with srt's self-test" \
	bash -c '[ $1 -eq 0 ] && grep -q "self-test passed" "$2"' _ $? "$T/check.log" ||
	sed 's/^/    /' "$T/check.log"

# ---- private: sandbox-runtime the sandboxes' user cannot read ----
echo "# private"
# an install under a directory that user cannot search (a checkout under /root, 0700, with a
# reconciler started as root; as anyone else, a directory of mode 0): --check names the path
# and the user, and `make up BACKEND=srt` (scripts/up.sh) fails on it before starting a server
PRIV="$T/private"
mkdir -p "$PRIV/rt/node_modules/@anthropic-ai/sandbox-runtime/dist"
touch "$PRIV/rt/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js" "$PRIV/rt/srt-unrestricted.mjs"
if [ "$(id -u)" -eq 0 ]; then
	chown -R root: "$PRIV" && chmod 0700 "$PRIV"
else
	chmod 0 "$PRIV"
fi
INI_PRIV="$T/private.ini"
sed "s|^root = .*|&\nsrt_dir = $PRIV/rt|" "$INI" >"$INI_PRIV"
"$RECON" -c "$INI_PRIV" --check >"$T/private.log" 2>&1
rc=$?
# the reconciler names the user 'NAME' (uid N), and the first directory it cannot search
check "private: --check fails (exit $rc), naming $PRIV and '$RECON_USER'" \
	bash -c '[ $1 -ne 0 ] && grep -F -- "$2: Permission denied" "$3" | grep -qF -- "$4"' _ \
	"$rc" "$PRIV" "$T/private.log" "user '$RECON_USER'" || sed 's/^/    /' "$T/private.log"
UP="$T/up"
mkdir -p "$UP"
printf '[sandbox]\nsrt_dir = %s\n' "$PRIV/rt" >"$UP/operator.ini"
up_port=$(stack_free_port)
RUNDIR=$UP PORT=$up_port BACKEND=srt SKIP_INSTALL_DEPS=1 bash "$ROOT/scripts/up.sh" \
	>"$T/up.log" 2>&1
rc=$?
check "private: make up BACKEND=srt fails (exit $rc), saying srt does not work and why" \
	bash -c '[ $1 -ne 0 ] && grep -q "BACKEND=srt does not work here" "$2" &&
		grep -qF "$3: Permission denied" "$2"' _ "$rc" "$T/up.log" "$PRIV" ||
	tail -n 20 "$T/up.log" | sed 's/^/    /'
check "private: make up started no server" \
	bash -c '! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && ! ls "$2/nginx.pid" "$2/api.pid" 2>/dev/null' \
	_ "$up_port" "$UP"
RUNDIR=$UP bash "$ROOT/scripts/down.sh" >>"$T/up.log" 2>&1

# ---- node: the oldest Node sandbox-runtime runs on ----
echo "# node"
# scripts/install-deps.sh refuses a node older than 18.20 (Debian 12's) before installing
# anything, naming it
mkdir -p "$T/old-node"
printf '#!/bin/sh\necho 18.19.1\n' >"$T/old-node/node"
chmod +x "$T/old-node/node"
PATH="$T/old-node:$PATH" bash "$ROOT/scripts/install-deps.sh" >"$T/old-node.log" 2>&1
rc=$?
check "node: install-deps refuses node 18.19.1 (exit $rc), saying 18.20 is the oldest" \
	bash -c '[ $1 -eq 1 ] && grep -q "node 18.19.1 .* is older than 18.20" "$2" &&
		! grep -q "apt-get\|npm ci" "$2"' _ "$rc" "$T/old-node.log" ||
	sed 's/^/    /' "$T/old-node.log"

# ---- limited: only the npm registry ----
echo "# limited"
SID=$(new_session "{\"type\":\"limited\",\"allowed_hosts\":[\"$NPM_HOST\"]}" '{"npm":["is-number@7.0.0"]}')
check "limited: npm install through srt, session ready" provision "$SID"
out=$(recon --exec "$SID" -- node -e "console.log(require('is-number')(7))" 2>&1)
check "limited: the package loads inside ($out)" test "$out" = true
out=$(recon --exec "$SID" -- sh -c 'id -un; stat -c %U node_modules' 2>&1 | tr '\n' ' ')
check "root: commands and their files are the [reconciler] user's, $RECON_USER ($out)" \
	test "$out" = "$RECON_USER $RECON_USER "
probe "$SID" "$NPM_HOST" "$DEB_HOST"
check "limited: $NPM_HOST answers" answers "$NPM_HOST"
check "limited: $DEB_HOST is refused" refused "$DEB_HOST"
out=$(recon --exec "$SID" -- curl -sS -o /dev/null -w '%{http_code}' --max-time "$CURL_MAX_S" \
	"http://$DEB_HOST/" 2>&1)
check "limited: plain HTTP to $DEB_HOST is refused too ($out)" test "$out" = 403
out=$(recon --exec "$SID" -- curl -sS --noproxy '*' -o /dev/null --max-time 5 "https://$NPM_HOST/" 2>&1)
check "limited: nothing goes around the proxy (no network namespace)" test $? -ne 0

# ---- package managers: the registry hosts stay open after the install ----
echo "# package managers"
# allowed_hosts [] + allow_package_managers: the bound list is exactly the package registry
# hosts of common/egress.c, as the reconciler recorded it; the registries part below expects
# what it holds, so that a mirror outside that list is expected refused
SID_PM=$(new_session '{"type":"limited","allowed_hosts":[],"allow_package_managers":true}')
check "package managers: session ready" provision "$SID_PM"
REGISTRIES=$(db_query "$RUN" \
	"SELECT egress_policy FROM session_sandboxes WHERE session_id = '$SID_PM'" | jq -r '.[]')
echo "# registry hosts: $(wc -l <<<"$REGISTRIES") (npm registry $(registry "$NPM_HOST" || echo "not ")in" \
	"them, Debian mirror $(registry "$DEB_HOST" || echo "not ")in them)"
check "package managers: the bound allowlist is a list of host names" \
	bash -c '[ "$(wc -l <<<"$1")" -gt 1 ] && ! grep -qvE "^[a-z0-9.-]+\.[a-z]+$" <<<"$1"' _ "$REGISTRIES"
probe "$SID_PM" "$NPM_HOST" "$DEB_HOST"
for h in "$NPM_HOST" "$DEB_HOST"; do
	if registry "$h"; then
		check "package managers: $h (a registry host) answers after binding" answers "$h"
	else
		check "package managers: $h (no registry host) is refused after binding" refused "$h"
	fi
done

# ---- registries: open during installs, closed afterwards ----
echo "# registries"
SID_P=$(new_session '{"type":"limited","allowed_hosts":[],"allow_package_managers":false}' \
	'{"npm":["probe"]}')
WS="$T/root/$SID_P"
mkdir -p "$WS/.probe"
printf '%s\n' "$PROBE_SH" >"$WS/.probe/probe.sh"
cat >"$WS/.probe/npm" <<SH
#!/bin/sh
# in place of npm install: which registries answer while installs run
sh "\$(dirname "\$0")/probe.sh" $CURL_MAX_S $NPM_HOST $DEB_HOST >>"\$PWD/during.log" 2>&1
SH
chmod +x "$WS/.probe/npm"
chown -R "$RECON_USER:" "$WS"
sed -i "s|^root = .*|&\npath = $WS/.probe:/usr/bin:/bin|" "$INI"
check "registries: session ready" provision "$SID_P"
sed -i '/^path = /d' "$INI"
PROBE=()
while read -r h r; do
	PROBE[$h]=$r
done <"$WS/during.log"
for h in "$NPM_HOST" "$DEB_HOST"; do
	if registry "$h"; then
		check "registries: $h (a registry host) answered during the install" answers "$h"
	else
		check "registries: $h (no registry host) was refused during the install too" refused "$h"
	fi
done
probe "$SID_P" "$NPM_HOST" "$DEB_HOST"
check "registries: $NPM_HOST refused after binding" refused "$NPM_HOST"
check "registries: $DEB_HOST refused after binding" refused "$DEB_HOST"

# ---- wildcard: subdomains only ----
echo "# wildcard"
PARENT=${NPM_HOST#*.}
if [[ $PARENT == *.* ]]; then
	SID_W=$(new_session "{\"type\":\"limited\",\"allowed_hosts\":[\"*.$PARENT\"]}")
	check "wildcard: session ready" provision "$SID_W"
	probe "$SID_W" "$NPM_HOST" "$PARENT"
	check "wildcard: *.$PARENT lets $NPM_HOST answer" answers "$NPM_HOST"
	check "wildcard: *.$PARENT does not cover $PARENT itself" refused "$PARENT"
else
	echo "# skipped: $NPM_HOST has no parent domain of two labels for a wildcard"
fi

# ---- MCP servers ----
echo "# mcp"
AGENT_MCP=$(api "$URL" POST /v1/agents "{\"name\":\"srt-mcp\",\"model\":\"claude-sonnet-4-5\",\"mcp_servers\":[{\"type\":\"url\",\"name\":\"reg\",\"url\":\"https://$NPM_HOST/mcp\"}]}" | jq -r .id)
SID_M=$(new_session '{"type":"limited","allowed_hosts":[],"allow_mcp_servers":true}' '{}' "$AGENT_MCP")
check "mcp: session ready" provision "$SID_M"
probe "$SID_M" "$NPM_HOST"
check "mcp: the agent's MCP host $NPM_HOST answers" answers "$NPM_HOST"
SID_N=$(new_session '{"type":"limited","allowed_hosts":[],"allow_mcp_servers":false}' '{}' "$AGENT_MCP")
check "mcp: without allow_mcp_servers, session ready" provision "$SID_N"
probe "$SID_N" "$NPM_HOST"
check "mcp: without allow_mcp_servers $NPM_HOST is refused" refused "$NPM_HOST"
SID_R=$(new_session '{"type":"limited","allowed_hosts":[],"allow_mcp_servers":true}' '{}' "$AGENT_MCP")
api "$URL" POST "/v1/sessions/$SID_R" "{\"agent\":{\"mcp_servers\":[{\"type\":\"url\",\"name\":\"reg\",\"url\":\"https://$DEB_HOST/mcp\"}]}}" >/dev/null
check "mcp: after a session-local replacement, session ready" provision "$SID_R"
probe "$SID_R" "$DEB_HOST" "$NPM_HOST"
check "mcp: the replacement's host $DEB_HOST answers" answers "$DEB_HOST"
check "mcp: the replaced host $NPM_HOST is refused" refused "$NPM_HOST"

# ---- hosts srt must not be given ----
echo "# hosts"
API_PORT=${URL##*:}
SID_L=$(new_session '{"type":"limited","allowed_hosts":["127.0.0.1","localhost"]}')
check "hosts: an allowlist naming this machine, session ready" provision "$SID_L"
out=$(recon --exec "$SID_L" -- sh -c 'for h in 127.0.0.1 localhost; do curl -sS -x "$HTTP_PROXY" --noproxy "" -o /dev/null -w "%{http_code} " --max-time 10 "http://$h:$1/healthz"; done' _ "$API_PORT" 2>"$T/hosts.err")
check "hosts: allowed 127.0.0.1 and localhost still do not reach the API ($out)" test "$out" = "403 403 "
check "hosts: the reconciler says it left them out" test "$(grep -c 'is this machine: left out' "$T/hosts.err")" -eq 2
SID_S=$(new_session '{"type":"limited","allowed_hosts":["intranet"]}')
recon --once >>"$T/once.log" 2>&1
err=$(api "$URL" GET "/v1/sessions/$SID_S" | jq -r '.provisioning.status + ": " + .provisioning.last_error')
check "hosts: a name srt cannot express fails the provisioning, saying so ($err)" \
	grep -q "^failed: srt cannot enforce allowed host 'intranet'" <<<"$err"
api "$URL" DELETE "/v1/sessions/$SID_S" >/dev/null

# ---- unrestricted: the internet, not this host ----
echo "# unrestricted"
SID_U=$(new_session '{"type":"unrestricted"}')
check "unrestricted: session ready" provision "$SID_U"
probe "$SID_U" "$NPM_HOST" "$DEB_HOST"
check "unrestricted: $NPM_HOST answers" answers "$NPM_HOST"
check "unrestricted: $DEB_HOST answers" answers "$DEB_HOST"
out=$(recon --exec "$SID_U" -- sh -c 'for t; do
	printf "%s %s " "$t" "$(curl -s -x "$HTTP_PROXY" --noproxy "" -o /dev/null -w "%{http_code}" --max-time 10 "http://$t/healthz")"
	echo "$(curl -s --noproxy "*" -o /dev/null -w "%{http_code}" --max-time 5 "http://$t/healthz")"
done' _ "127.0.0.1:$API_PORT" "localhost:$API_PORT" 2>&1)
for target in "127.0.0.1:$API_PORT" "localhost:$API_PORT"; do
	got=$(grep "^$target " <<<"$out")
	check "unrestricted: the API on $target is out of reach (proxy, direct: ${got#* })" \
		test "${got#* }" = "403 000"
done

# ---- escape: what a hostile command tries ----
echo "# escape"
# one --exec runs every attempt; each line says "held NAME" or "ESCAPED NAME"
attempts=(
	"reading the configuration|cat '$INI'"
	"reading the API's configuration|cat '$RUN/srt.ini'"
	"seeing the runtime directory (configuration, sockets)|ls '$RUN/srt.ini' || ls '$RUN/mysql.sock' || ls '$RUN/db'"
	"reading another sandbox|ls '$T/root/$SID_P' | grep -q ."
	"reading /etc/shadow|cat /etc/shadow"
	"listing home directories|ls -A /root /home | grep -v '^/' | grep -q ."
	"connecting to the MariaDB socket|mariadb --no-defaults --socket='$RUN/mysql.sock' -e 'select 1'"
	"writing the directory of srt's sockets (the one host directory of /var shown)|for d in /var/tmp/terrarium-srt.*/run; do test -d \"\$d\" && echo x >\"\$d/escaped\" || exit 1; done"
	"writing the host root|echo x >/etc/terrarium-escaped"
	"umount /tmp|umount -l /tmp"
	"mount --bind|mount --bind / '$T/root/$SID'"
	"remount / read-write|mount -o remount,bind,rw /"
	"a nested user namespace|unshare -U -r true"
	"reading a host process's environment|cat /proc/$$/environ | grep -q ."
	"the API on 127.0.0.1:$API_PORT|curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:$API_PORT/healthz"
	"writing the reconciler's files|echo x >'$T/escaped' && test -e '$INI'"
)
script=""
for a in "${attempts[@]}"; do
	script+="if ( ${a#*|} ) >/dev/null 2>&1; then echo \"ESCAPED ${a%%|*}\"; else echo \"held ${a%%|*}\"; fi
"
done
out=$(recon --exec "$SID" -- sh -c "$script" 2>&1)
while read -r line; do
	case "$line" in
	"held "*) ok "escape: ${line#held } refused" ;;
	"ESCAPED "*) not_ok "escape: ${line#ESCAPED }: NOT refused" ;;
	esac
done <<<"$out"
check "escape: all ${#attempts[@]} attempts ran" test "$(grep -cE '^(held|ESCAPED) ' <<<"$out")" -eq "${#attempts[@]}"
check "escape: nothing was written outside" \
	bash -c '! ls "$1/escaped" /etc/terrarium-escaped 2>/dev/null &&
		test -z "$(find /var/tmp/terrarium-srt.* -name escaped 2>/dev/null)"' _ "$T"
out=$(recon --exec "$SID" -- sh -c 'echo w >in-ws && echo t >/tmp/in-tmp && cat in-ws /tmp/in-tmp' 2>&1)
check "escape: the workspace and /tmp are writable ($(tr '\n' ' ' <<<"$out"))" test "$(tr -d '\n' <<<"$out")" = wt
check "escape: the sandbox's /tmp is its own" test ! -e /tmp/in-tmp

check_summary
