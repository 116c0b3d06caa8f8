#!/usr/bin/env bash
# Reconciler end to end (tests/e2e/run.sh runs it against the stack it started): real MariaDB,
# the API through nginx, the reconciler binary with the local and bwrap backends.
#
#   bwrap      npm ["is-number@7.0.0"] through the API, one --once run -> ready, the package
#              loads inside the sandbox; an environment update after the session changes nothing
#   drift      the bwrap workspace removed behind terrarium's back: --exec says so and the session
#              leaves ready with a last_error saying why; a run provisions it again; a run's own
#              check notices a removed one; a reconciler with another sandbox root leaves it be
#   layers     a second session of an environment starts from the package cache entry as an
#              overlay (the entry read-only below, its own layer above): the package works, its
#              writes and removals stay in its layer, the entry and the first session are
#              unchanged; an entry under a session is kept by the pruning, removed after
#   resume     npm + pip, pip fails: rescheduling with a readable, redacted last_error; after the
#              cause is fixed the next run installs pip only (npm is not re-run)
#   crash      kill -9 of a reconciler in the middle of an install, 20 times at random moments:
#              every session ends ready exactly once, one sandbox each
#   teardown   deleting a ready session destroys its sandbox and removes its rows
#   terminate  max attempts reached -> terminated; --retry makes it due again
#   teardown retry  a teardown failing until terminated (its sandbox root refuses the removal);
#              --retry revives it: the sandbox is gone and the rows removed
#   concurrency 4 reconcilers over 200 pending intents: each provisioned exactly once
#   status     --status shows counts by state, the oldest due intent and the last errors
#   lease      lease 3 s, an 8 s install, a second reconciler started mid-install: one install,
#              attempts 1 (the running step renews its lease), LEASE_ROUNDS times in a row; then
#              9 slow intents (more than a claimed batch), lease 2 s, a second reconciler started
#              while the first works through its batch: each installs exactly once
#   setup kill9 kill -9 of a reconciler at SETUP_KILL_ROUNDS points of a sandbox's setup (from
#              before bwrap's clone to its command running): nothing of that sandbox is left at
#              once, not even until the next run, and its install never finishes
#   kill9      kill -9 of a reconciler during a long install with a short lease: the command
#              dies with it, the next run installs once more, one install completes
#   orphans    (a) --retry then delete, (b) delete while a batch is being provisioned: 50
#              sessions each, zero sandbox directories and zero rows left, one teardown per
#              sandbox and nothing left to the sweep; (c) delete during a slow create (the e2b
#              driver against fake-e2b.mjs creating in 5 s): the teardown runs while nothing
#              exists yet, the provisioning destroys what its create made, zero sandboxes left
#              in the fake. ORPHAN_ROUNDS times in a row. Then: the sweep removes a directory no
#              session owns and leaves other names alone
#   due        --status counts what --dry-run lists (expired claims included)
#   smaller    pass_env_extra adds to the default list, the exec environment, last_error
#              without host paths (a real mkdir failure under a root shorter than "<sandboxes>";
#              an HTTP backend's error naming the configuration directory and key file, in the
#              orphans part), cumulative metrics and gauges
#   escape     tests/reconciler/escape.sh: the escape suite inside a bwrap sandbox, and an srt
#              one when the stack serves srt, with the reconciler started as root (it switches
#              to [reconciler] user) and as that user
#
# Started as root, the reconciler switches to [reconciler] user (default www-data) after reading
# its configuration: the test directory is that user's, the configuration files root's (0600).
# Needs (from tests/e2e/run.sh): TERRARIUM_RUN, TERRARIUM_URL_local, TERRARIUM_URL_bwrap, KEY.
# LEASE_ROUNDS and ORPHAN_ROUNDS (default 1) repeat the lease test and the orphan races.
# Prints "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh" # the stack's helpers (api, db_query), the check counters
RUN=${TERRARIUM_RUN:?TERRARIUM_RUN is required}
URL_LOCAL=${TERRARIUM_URL_local:?}
URL_BWRAP=${TERRARIUM_URL_bwrap:?}
: "${KEY:?}"
BUILD=${BUILD_DIR:-build}
RECON="$ROOT/$BUILD/terrarium-reconciler"
CRASH_ROUNDS=${CRASH_ROUNDS:-20}
CONCURRENT_INTENTS=${CONCURRENT_INTENTS:-200}
ORPHAN_SESSIONS=${ORPHAN_SESSIONS:-50}
LEASE_ROUNDS=${LEASE_ROUNDS:-1}   # the lease test, this many times in a row
ORPHAN_ROUNDS=${ORPHAN_ROUNDS:-1} # the orphan races, this many times in a row
BATCH_INTENTS=${BATCH_INTENTS:-9} # leases across a claimed batch (more than RECON_CLAIM_BATCH)
T="$RUN/recon-test"
rm -rf "$T"
mkdir -p "$T"
RECON_USER=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
	RECON_USER=www-data # the default [reconciler] user
	chown "$RECON_USER:" "$T"
fi
export RECON_USER

# shellcheck source=tests/lib-lease.sh
. "$ROOT/tests/lib-lease.sh" # crash_round

# A reconciler configuration: the stack's database, backend $2, sandbox root $T/$1, extra lines.
recon_ini() {
	local name=$1 backend=$2
	shift 2
	{
		sed -n '/^\[database\]/,/^$/p' "$RUN/local.ini"
		printf '[sandbox]\nbackend = %s\nroot = %s\n' "$backend" "$T/root-$name"
		printf '%s\n' "$@"
		printf '\n[log]\nlevel = info\n'
	} >"$T/$name.ini"
	chmod 0600 "$T/$name.ini" # root's when root: the reconciler reads it before switching
	echo "$T/$name.ini"
}

provisioning() { # provisioning URL SESSION -> the provisioning object and status, compact
	api "$1" GET "/v1/sessions/$2" | jq -c '{p: .provisioning, s: .status}'
}
bwrap_ready() { [ "$(provisioning "$URL_BWRAP" "$1" | jq -r .p.status)" = ready ]; } # SESSION

AGENT_LOCAL=$(api "$URL_LOCAL" POST /v1/agents '{"name":"recon-test","model":"claude-sonnet-4-5"}' | jq -r .id)
AGENT_BWRAP=$(api "$URL_BWRAP" POST /v1/agents '{"name":"recon-test","model":"claude-sonnet-4-5"}' | jq -r .id)

new_session() { # new_session URL AGENT ENV_BODY -> "ENV_ID SESSION_ID"
	local env sid
	env=$(api "$1" POST /v1/environments "$3" | jq -r .id)
	sid=$(api "$1" POST /v1/sessions "{\"agent\":\"$2\",\"environment_id\":\"$env\"}" | jq -r .id)
	echo "$env $sid"
}

# rows of these sessions left in the database (intents, bindings, session rows)
rows_left() { # rows_left SESSION...
	local ids
	ids=$(printf "'%s'," "$@")
	db_query "$RUN" "SELECT (SELECT COUNT(*) FROM sessions WHERE id IN (${ids%,}))
		+ (SELECT COUNT(*) FROM provisioning_intents WHERE session_id IN (${ids%,}))
		+ (SELECT COUNT(*) FROM session_sandboxes WHERE session_id IN (${ids%,}))"
}
dirs_left() { # dirs_left ROOT SESSION...
	local root=$1 n=0 sid
	shift
	for sid in "$@"; do [ -e "$root/$sid" ] && n=$((n + 1)); done
	echo "$n"
}
# the sessions among SESSION... that a reconciler log tore down ("session X torn down" lines)
teardowns_in() { # teardowns_in LOG... -- SESSION...
	local logs=()
	while [ "$1" != -- ]; do logs+=("$1"); shift; done
	shift
	cat "${logs[@]}" 2>/dev/null | grep -o "session sesn_[0-9A-Za-z]* torn down" |
		grep -c -x -F -f <(printf 'session %s torn down\n' "$@")
}
# sweep removals logged: none may happen in a race whose teardowns must do the work themselves
sweeps_in() { cat "$@" 2>/dev/null | grep -c "sweep: removed"; }

# a workspace prepared before the run, with an npm that takes SECONDS and logs its calls
fake_npm() { # fake_npm SESSION_ROOT SESSION SECONDS
	local ws="$1/$2"
	mkdir -p "$ws/.fakebin"
	printf '#!/bin/sh\necho "start $$" >>"$PWD/npm-calls.log"\nsleep %s\necho "done $$" >>"$PWD/npm-calls.log"\n' \
		"$3" >"$ws/.fakebin/npm"
	chmod +x "$ws/.fakebin/npm"
}

# ---- bwrap: a real npm install into the sandbox ----
echo "# bwrap"
INI_BWRAP=$(recon_ini bwrap bwrap)
read -r ENV_B SID_B <<<"$(new_session "$URL_BWRAP" "$AGENT_BWRAP" \
	'{"name":"recon-bwrap","config":{"type":"cloud","packages":{"npm":["is-number@7.0.0"]}}}')"
api "$URL_BWRAP" POST "/v1/environments/$ENV_B" \
	'{"config":{"type":"cloud","packages":{"npm":["left-pad@1.3.0"]}}}' >/dev/null
check "bwrap: session is pending before the run" \
	test "$(provisioning "$URL_BWRAP" "$SID_B" | jq -r .p.status)" = pending
"$RECON" -c "$INI_BWRAP" --once >"$T/bwrap.log" 2>&1
check "bwrap: --once exits 0" test $? -eq 0
check "bwrap: session ready" test "$(provisioning "$URL_BWRAP" "$SID_B" | jq -r .p.status)" = ready
out=$("$RECON" -c "$INI_BWRAP" --exec "$SID_B" -- node -e "console.log(require('is-number')(7))" 2>&1)
check "bwrap: is-number loads inside the sandbox ($out)" test "$out" = true
"$RECON" -c "$INI_BWRAP" --exec "$SID_B" -- node -e "require('left-pad')" >/dev/null 2>&1
check "bwrap: the environment update after the session did not reach it (no left-pad)" test $? -ne 0
out=$("$RECON" -c "$INI_BWRAP" --exec "$SID_B" -- sh -c 'pwd; ls -d "$0" "$1" "$2" 2>/dev/null' \
	"$T/root-bwrap" "$T/bwrap.ini" "$RUN" 2>&1)
check "bwrap: the workspace is /workspace; the sandbox root, config and run dir are absent ($out)" \
	test "$out" = /workspace
out=$("$RECON" -c "$INI_BWRAP" --exec "$SID_B" -- sh -c 'touch made-inside; id -u' 2>&1)
check "bwrap: commands run as a non-root uid inside ($out)" test "$out" = 1000
check "bwrap: what a sandbox writes belongs to $RECON_USER on the host" \
	test "$(stat -c %U "$T/root-bwrap/$SID_B/made-inside")" = "$RECON_USER"
# slirp4netns reaching the sandbox late, as on a loaded machine (its process has by then moved
# into its nested user namespace): the network comes up all the same
SLOW=$T/slow-slirp
mkdir -p "$SLOW" && printf '#!/bin/sh\nsleep 1\nexec %s "$@"\n' "$(command -v slirp4netns)" \
	>"$SLOW/slirp4netns" && chmod 0755 "$SLOW" "$SLOW/slirp4netns"
out=$(PATH="$SLOW:$PATH" "$RECON" -c "$INI_BWRAP" --exec "$SID_B" -- grep -c tap0: /proc/net/dev 2>&1)
check "bwrap: a slirp4netns started late still brings the network up ($out)" test "$out" = 1
bwraps() { # bwraps DIR: bwrap processes of a sandbox binding DIR (or a path that starts with DIR)
	local p n=0
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = bwrap ] || continue
		{ tr '\0' '\n' <"$p/cmdline"; } 2>/dev/null |
			awk -v d="$1" 'index($0, d) == 1 { f = 1 } END { exit !f }' && n=$((n + 1))
	done
	echo "$n"
}
with_arg() { # with_arg TEXT...: processes with an argument holding one of TEXT (this search aside)
	printf '%s\n' "$@" >"$T/with-arg.patterns" # in no argument of the search itself
	grep -lsFf "$T/with-arg.patterns" /proc/[0-9]*/cmdline | wc -l
}

# ---- setup kill9: a reconciler killed -9 at any point of a sandbox's setup ----
echo "# setup kill9"
# bwrap ties its monitor to its parent only after it cloned the sandbox's pid 1, and pid 1 to the
# monitor only once that setup is done: a reconciler killed before that would leave a sandbox
# setting up, then running its install, for nobody. A bwrap of the test's own, first on the
# reconciler's PATH, notes when it starts and executes the real one; round N kills the reconciler
# (-9) (N - 1) * SETUP_KILL_STEP_MS ms after that (before bwrap's clone, during the setup, as the
# command starts, while it runs), then, before any other run, looks for what is left of the
# sandboxes (a run may take over an earlier round's intent, its lease being 1 s): a process with
# one's directory in its argv (bwrap binds it), a process of the killed run (its configuration in
# its argv), an install (the rounds' packages are named SETUP_KILL_TAG-N); and, once an install
# would have finished, its "done" line.
SETUP_KILL_ROUNDS=${SETUP_KILL_ROUNDS:-24}
SETUP_KILL_STEP_MS=12
SETUP_KILL_INSTALL_S=2
SK=$T/setup-kill
mkdir -p "$SK/bin"
printf '#!/bin/sh\n: >>%s/started\nexec %s "$@"\n' "$SK" "$(command -v bwrap)" >"$SK/bin/bwrap"
chmod 0755 "$SK" "$SK/bin" "$SK/bin/bwrap"
[ "$(id -u)" -eq 0 ] && chown "$RECON_USER:" "$SK"
SETUP_KILL_TAG="setupkill-$$"
INI_SK=$(recon_ini setup-kill bwrap "path = /workspace/.fakebin:/usr/bin:/bin" "[reconciler]" \
	"lease_seconds = 1" "backoff_base_seconds = 0")
sk_hit=0 sk_left=0 sk_sids=()
for i in $(seq 1 "$SETUP_KILL_ROUNDS"); do
	read -r _ sid <<<"$(new_session "$URL_BWRAP" "$AGENT_BWRAP" \
		"{\"name\":\"recon-setup-kill-$i\",\"config\":{\"type\":\"cloud\",\"packages\":{\"npm\":[\"$SETUP_KILL_TAG-$i\"]}}}")"
	sk_sids+=("$sid")
	fake_npm "$T/root-setup-kill" "$sid" "$SETUP_KILL_INSTALL_S"
	rm -f "$SK/started"
	PATH="$SK/bin:$PATH" "$RECON" -c "$INI_SK" --once >>"$T/setup-kill.log" 2>&1 &
	pid=$!
	until [ -e "$SK/started" ] || ! kill -0 "$pid" 2>/dev/null; do :; done
	if [ -e "$SK/started" ]; then
		sk_hit=$((sk_hit + 1))
		sleep "$(printf '%d.%03d' $(((i - 1) * SETUP_KILL_STEP_MS / 1000)) \
			$(((i - 1) * SETUP_KILL_STEP_MS % 1000)))"
	fi
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	sleep 0.3 # what dies with the reconciler is dead by now
	left=$(with_arg "$T/root-setup-kill/" "$INI_SK" "$SETUP_KILL_TAG-")
	[ "$left" -eq 0 ] || echo "  round $i ($(((i - 1) * SETUP_KILL_STEP_MS)) ms): $left processes left"
	sk_left=$((sk_left + left))
done
check "setup kill9: the reconciler was killed during $sk_hit/$SETUP_KILL_ROUNDS sandbox setups" \
	test "$sk_hit" -eq "$SETUP_KILL_ROUNDS"
check "setup kill9: no process of those sandboxes outlived its reconciler ($sk_left)" \
	test "$sk_left" -eq 0
sleep "$SETUP_KILL_INSTALL_S.5" # an install left running would have finished by now
done_lines=$(cat "$T/root-setup-kill"/sesn_*/npm-calls.log 2>/dev/null | grep -c "^done")
check "setup kill9: no install of theirs went on to finish ($done_lines)" test "$done_lines" -eq 0
for sid in "${sk_sids[@]}"; do api "$URL_BWRAP" DELETE "/v1/sessions/$sid" >/dev/null; done
sleep 1.1 # the killed runs' leases end: the teardowns are due
"$RECON" -c "$INI_SK" --once >>"$T/setup-kill.log" 2>&1
check "setup kill9: the next run tears their sandboxes down, rows and all" \
	test "$(dirs_left "$T/root-setup-kill" "${sk_sids[@]}")$(rows_left "${sk_sids[@]}")" = 00

# ---- drift: a bwrap workspace removed behind terrarium's back ----
echo "# drift"
rm -rf "${T:?}/root-bwrap/$SID_B"
out=$("$RECON" -c "$INI_BWRAP" --exec "$SID_B" -- true 2>&1)
check "drift: --exec on a removed bwrap workspace says so ($out)" grep -q "no longer exists" <<<"$out"
p=$(provisioning "$URL_BWRAP" "$SID_B")
check "drift: the session is no longer ready ($p)" test "$(jq -r .p.status <<<"$p")" = pending
check "drift: last_error says why" grep -q "no longer exists" <<<"$(jq -r .p.last_error <<<"$p")"
"$RECON" -c "$INI_BWRAP" --once >"$T/drift.log" 2>&1
check "drift: provisioned again -> ready" \
	test "$(provisioning "$URL_BWRAP" "$SID_B" | jq -r .p.status)" = ready
out=$("$RECON" -c "$INI_BWRAP" --exec "$SID_B" -- node -e "console.log(require('is-number')(7))" 2>&1)
check "drift: from the captured configuration: is-number loads again ($out)" test "$out" = true
rm -rf "${T:?}/root-bwrap/$SID_B"
INI_OTHER=$(recon_ini drift-other bwrap)
"$RECON" -c "$INI_OTHER" --once >"$T/drift-other.log" 2>&1
check "drift: a reconciler with another sandbox root does not judge this root's sandbox" \
	bash -c '! grep -q "no longer exists" "$1" && [ "$2" = ready ]' _ "$T/drift-other.log" \
	"$(provisioning "$URL_BWRAP" "$SID_B" | jq -r .p.status)"
"$RECON" -c "$INI_BWRAP" --once >"$T/drift2.log" 2>&1
check "drift: a run's own check noticed the removed workspace" \
	grep -q "sandbox $SID_B of this session no longer exists" "$T/drift2.log"
check "drift: and provisioned it again in that run" \
	test "$(provisioning "$URL_BWRAP" "$SID_B" | jq -r .p.status)" = ready
out=$("$RECON" -c "$INI_BWRAP" --exec "$SID_B" -- node -e "console.log(require('is-number')(8))" 2>&1)
check "drift: the workspace is back, with the package ($out)" \
	bash -c '[ -d "$1" ] && [ "$2" = true ]' _ "$T/root-bwrap/$SID_B" "$out"

# ---- layers: a package cache hit is an overlay of the entry, never a copy ----
echo "# layers"
ENV_L=$(api "$URL_BWRAP" POST /v1/environments \
	'{"name":"recon-layers","config":{"type":"cloud","packages":{"npm":["is-number@7.0.0"]}}}' | jq -r .id)
new_in() { api "$URL_BWRAP" POST /v1/sessions "{\"agent\":\"$AGENT_BWRAP\",\"environment_id\":\"$1\"}" | jq -r .id; }
SL1=$(new_in "$ENV_L")
"$RECON" -c "$INI_BWRAP" --once >"$T/layers1.log" 2>&1
SL2=$(new_in "$ENV_L")
"$RECON" -c "$INI_BWRAP" --once >"$T/layers2.log" 2>&1
check "layers: the second session is ready from the entry, nothing installed" \
	bash -c '[ "$1" = ready ] && grep -q "sandbox from package cache" "$2" && ! grep -q "packages installed" "$2"' _ \
	"$(provisioning "$URL_BWRAP" "$SL2" | jq -r .p.status)" "$T/layers2.log"
entry=$(readlink "$T/root-bwrap/.layers/$SL2/lower")
check "layers: its lower layer is the entry ($entry), its directory holds no copy" \
	bash -c '[ -d "$1/node_modules/is-number" ] && [ "$(dirname "$1")" = "$2/.cache" ] && [ ! -e "$2/$3/node_modules" ]' _ \
	"$entry" "$T/root-bwrap" "$SL2"
out=$("$RECON" -c "$INI_BWRAP" --exec "$SL2" -- sh -c "node -e \"console.log(require('is-number')(3))\" && echo mine >node_modules/is-number/marker && rm package.json && ls" 2>&1)
check "layers: the package works; writes and a removal in the session ($out)" \
	test "$out" = "$(printf 'true\nnode_modules\npackage-lock.json')"
check "layers: they land in the session's own layer; the entry is unchanged" \
	bash -c '[ -f "$1/$2/node_modules/is-number/marker" ] && [ ! -e "$3/node_modules/is-number/marker" ] && [ -f "$3/package.json" ]' _ \
	"$T/root-bwrap" "$SL2" "$entry"
out=$("$RECON" -c "$INI_BWRAP" --exec "$SL1" -- sh -c 'ls node_modules/is-number/marker package.json 2>&1' 2>&1)
check "layers: the first session does not see them ($out)" \
	test "$out" = "$(printf 'ls: cannot access '"'"'node_modules/is-number/marker'"'"': No such file or directory\npackage.json')"
out=$("$RECON" -c "$INI_BWRAP" --exec "$SL2" -- sh -c 'cat /proc/self/mountinfo | grep -c " /workspace "; id -u; touch /usr/x 2>/dev/null || echo ro' 2>&1)
check "layers: /workspace is one mount, the command uid 1000, the view read-only ($out)" \
	test "$out" = "$(printf '1\n1000\nro')"
# /etc is a read-only overlay of the host's under a layer of whiteouts (sandbox/bwrap_view.h):
# one mount, every entry read-only, the secrets not there, and nothing of it stays on the host
# shellcheck disable=SC2016 # awk's fields: the file system type follows the "-"
out=$("$RECON" -c "$INI_BWRAP" --exec "$SL2" -- awk '$5 == "/etc" { for (i = 7; i < NF; i++) if ($i == "-") print $(i + 1) }' /proc/self/mountinfo 2>&1)
check "view: /etc is one overlay mount ($out)" test "$out" = overlay
out=$("$RECON" -c "$INI_BWRAP" --exec "$SL2" -- sh -c 'for f in /etc/escaped /etc/hostname /etc/ssl/escaped; do { echo x >>"$f"; } 2>/dev/null && echo "wrote $f"; done; ls /etc/shadow 2>/dev/null; ls -A /etc | wc -l' 2>&1)
check "view: /etc and its entries are read-only, without the secrets, as many entries as the host's but those ($out)" \
	test "$out" = "$(find /etc -mindepth 1 -maxdepth 1 ! -name shadow ! -name shadow- ! -name gshadow ! -name gshadow- | wc -l)"
check "view: nothing stays mounted on the host, its mount point is empty" \
	bash -c '! grep -q "/.bwrap-view" /proc/self/mountinfo && [ -d "$1/.bwrap-view" ] && [ -z "$(ls -A "$1/.bwrap-view")" ]' _ "$T/root-bwrap"
key=$(basename "$entry")
db_query "$RUN" "UPDATE sandbox_cache SET last_used_at = UTC_TIMESTAMP(6) - INTERVAL 30 DAY WHERE cache_key = '$key'"
"$RECON" -c "$INI_BWRAP" --once >"$T/layers3.log" 2>&1
check "layers: a stale entry still under a session is kept" \
	bash -c 'grep -q "still used by a sandbox; kept" "$1" && [ -d "$2" ]' _ "$T/layers3.log" "$entry"
api "$URL_BWRAP" DELETE "/v1/sessions/$SL1" >/dev/null
api "$URL_BWRAP" DELETE "/v1/sessions/$SL2" >/dev/null
"$RECON" -c "$INI_BWRAP" --once >"$T/layers4.log" 2>&1
db_query "$RUN" "UPDATE sandbox_cache SET last_used_at = UTC_TIMESTAMP(6) - INTERVAL 30 DAY WHERE cache_key = '$key'"
"$RECON" -c "$INI_BWRAP" --once >>"$T/layers4.log" 2>&1
check "layers: once its sessions are gone, the entry and their layers are removed" \
	bash -c '[ ! -e "$1" ] && [ ! -e "$2/.layers/$3" ] && [ ! -e "$2/$3" ] && [ ! -e "$2/.layers/$4" ]' _ \
	"$entry" "$T/root-bwrap" "$SL2" "$SL1"

# ---- resume at the manager that failed ----
echo "# resume"
read -r _ SID_R <<<"$(new_session "$URL_BWRAP" "$AGENT_BWRAP" \
	'{"name":"recon-resume","config":{"type":"cloud","packages":{"npm":["fake-a"],"pip":["fake-b"]}}}')"
WS="$T/root-resume/$SID_R"
mkdir -p "$WS/.fakebin"
cat >"$WS/.fakebin/npm" <<'SH'
#!/bin/sh
echo "npm $*" >>"$PWD/npm-calls.log"
SH
cat >"$WS/.fakebin/pip" <<'SH'
#!/bin/sh
echo "pip $*" >>"$PWD/pip-calls.log"
[ -f "$PWD/.fix-pip" ] && exit 0
echo "ERROR: No matching distribution found for fake-b (index https://ci:hunter2@pypi.example.com token=hunter2 DB_PASS=hunter2)"
echo "cwd $PWD"
cat "$PWD/host-paths"
exit 1
SH
chmod +x "$WS/.fakebin/npm" "$WS/.fakebin/pip"
# host paths in the output, as a tool that reports where it was installed from would print
# them: the sandbox, the configuration, the run directory (MariaDB's socket)
printf 'from %s/setup.py (config %s, database %s)\n' "$WS" "$T/resume.ini" "$RUN/mysql.sock" \
	>"$WS/host-paths"
INI_RESUME=$(recon_ini resume bwrap "path = /workspace/.fakebin:/usr/bin:/bin" \
	"[reconciler]" "backoff_base_seconds = 0")
"$RECON" -c "$INI_RESUME" --once >"$T/resume1.log" 2>&1
check "resume: a failed install exits non-zero" test $? -ne 0
p=$(provisioning "$URL_BWRAP" "$SID_R")
check "resume: session rescheduling, provisioning failed ($p)" \
	test "$(jq -r '.s + " " + .p.status' <<<"$p")" = "rescheduling failed"
err=$(jq -r .p.last_error <<<"$p")
check "resume: last_error names the failed manager and the cause" \
	grep -q "pip install: exit status 1" <<<"$err"
check "resume: last_error keeps the output" grep -q "No matching distribution" <<<"$err"
check "resume: last_error has no credentials" bash -c '! grep -q hunter2 <<<"$1"' _ "$err"
check "resume: last_error has no host paths, each named for what it was ($(tr '\n' ' ' <<<"$err"))" \
	bash -c '! grep -qF "$2" <<<"$1" && grep -qF "from <sandboxes>/$3/setup.py (config <host>/resume.ini, database <host>/mysql.sock)" <<<"$1"' \
	_ "$err" "$RUN" "$SID_R"
touch "$WS/.fix-pip"
"$RECON" -c "$INI_RESUME" --once >"$T/resume2.log" 2>&1
check "resume: the retry exits 0" test $? -eq 0
check "resume: session ready" test "$(provisioning "$URL_BWRAP" "$SID_R" | jq -r .p.status)" = ready
check "resume: npm ran once in all" test "$(wc -l <"$WS/npm-calls.log")" -eq 1
check "resume: pip ran twice (failed, then resumed)" test "$(wc -l <"$WS/pip-calls.log")" -eq 2
check "resume: each package is one argument" grep -qx "pip install --no-input --target /workspace/.pip fake-b" "$WS/pip-calls.log"

# ---- crash: kill -9 in the middle of an install ----
echo "# crash"
INI_CRASH=$(recon_ini crash bwrap "path = /crashbin-placeholder" "[reconciler]" \
	"lease_seconds = 1" "backoff_base_seconds = 0")
crash_ok=0
for i in $(seq 1 "$CRASH_ROUNDS"); do
	read -r _ sid <<<"$(new_session "$URL_BWRAP" "$AGENT_BWRAP" \
		"{\"name\":\"recon-crash-$i\",\"config\":{\"type\":\"cloud\",\"packages\":{\"npm\":[\"slow\"]}}}")"
	ws="$T/root-crash/$sid"
	mkdir -p "$ws/.fakebin"
	printf '#!/bin/sh\necho start >>"$PWD/npm-calls.log"\nsleep 0.%s\necho done >>"$PWD/npm-calls.log"\n' \
		$((3 + RANDOM % 5)) >"$ws/.fakebin/npm"
	chmod +x "$ws/.fakebin/npm"
	sed -i "s|^path = .*|path = /workspace/.fakebin:/usr/bin:/bin|" "$INI_CRASH"
	# the killed run's lease expires after 1 s
	crash_round "$INI_CRASH" "$T/crash.log" "0.$((RANDOM % 9))" 1.1 bwrap_ready "$sid"
	st=$(provisioning "$URL_BWRAP" "$sid" | jq -r .p.status)
	# the "ready" line is written after the bind commits: a kill between the two leaves a ready
	# session with no line, so a second bind shows as 2 lines and one bind as 0 or 1
	binds=$(grep -c "session $sid ready" "$T/crash.log")
	dirs=$(find "$T/root-crash" -maxdepth 1 -name "$sid*" | wc -l)
	if [ "$st" = ready ] && [ "$binds" -le 1 ] && [ "$dirs" -eq 1 ]; then
		crash_ok=$((crash_ok + 1))
	else
		echo "  round $i: session $sid status $st, bound $binds times, $dirs sandboxes"
	fi
done
check "crash: $crash_ok/$CRASH_ROUNDS sessions ready exactly once with one sandbox" \
	test "$crash_ok" -eq "$CRASH_ROUNDS"
# nothing of a killed run's sandbox outlives it (setup kill9 looks at each kill)
n=$(bwraps "$T/root-crash/")
check "crash: no sandbox of the killed runs is left running ($n)" test "$n" -eq 0

# ---- teardown ----
echo "# teardown"
check "teardown: the bwrap sandbox exists" test -d "$T/root-bwrap/$SID_B"
api "$URL_BWRAP" DELETE "/v1/sessions/$SID_B" >/dev/null
"$RECON" -c "$INI_BWRAP" --exec "$SID_B" -- true >/dev/null 2>&1
check "teardown: --exec refuses the deleted session before its teardown" test $? -eq 2
check "teardown: the deleted session answers 404 at once" \
	test "$(api "$URL_BWRAP" GET "/v1/sessions/$SID_B" | jq -r .error.type)" = not_found_error
check "teardown: its environment can be deleted while the teardown is pending" \
	test "$(api "$URL_BWRAP" DELETE "/v1/environments/$ENV_B" | jq -r .type)" = environment_deleted
"$RECON" -c "$INI_BWRAP" --once >>"$T/bwrap.log" 2>&1
check "teardown: the run exits 0" test $? -eq 0
check "teardown: the sandbox is gone" test ! -e "$T/root-bwrap/$SID_B"
check "teardown: nothing left due" bash -c '! "$1" -c "$2" --dry-run | grep -q "$3"' _ "$RECON" \
	"$INI_BWRAP" "$SID_B"

# ---- terminated after the maximum of attempts, then --retry ----
echo "# terminate"
read -r _ SID_T <<<"$(new_session "$URL_BWRAP" "$AGENT_BWRAP" \
	'{"name":"recon-terminate","config":{"type":"cloud","packages":{"gem":["nope"]}}}')"
INI_TERM=$(recon_ini term bwrap "path = $T/empty-path" "[reconciler]" "max_attempts = 2" \
	"backoff_base_seconds = 0")
"$RECON" -c "$INI_TERM" --once >"$T/term.log" 2>&1
check "terminate: attempt 1 -> rescheduling" \
	test "$(provisioning "$URL_BWRAP" "$SID_T" | jq -r .s)" = rescheduling
"$RECON" -c "$INI_TERM" --once >>"$T/term.log" 2>&1
p=$(provisioning "$URL_BWRAP" "$SID_T")
check "terminate: attempt 2 -> terminated ($p)" \
	test "$(jq -r '.s + " " + (.p.attempts|tostring)' <<<"$p")" = "terminated 2"
"$RECON" -c "$INI_TERM" --dry-run >"$T/term-dry.log" 2>&1
check "terminate: no longer due" bash -c '! grep -q "$1" "$2"' _ "$SID_T" "$T/term-dry.log"
"$RECON" -c "$INI_TERM" --retry "$SID_T" >>"$T/term.log" 2>&1
p=$(provisioning "$URL_BWRAP" "$SID_T")
check "terminate: --retry makes it due again, last_error cleared ($p)" \
	test "$(jq -r '.s + " " + .p.status + " " + (.p.last_error|tostring)' <<<"$p")" = "idle pending null"
"$RECON" -c "$INI_TERM" --retry sesn_doesnotexist000000000000 >/dev/null 2>&1
check "terminate: --retry of an unknown session fails" test $? -ne 0

# ---- concurrency: 4 reconcilers, each intent exactly once ----
echo "# concurrency"
# a long backoff keeps what the drain below fails (the terminate test's session) out of the count
INI_CONC=$(recon_ini conc local "[reconciler]" "backoff_base_seconds = 3600")
# finish whatever else is due first, so that the count below is only ours
"$RECON" -c "$INI_CONC" --once --limit 100000 >/dev/null 2>&1
sids=()
for i in $(seq 1 "$CONCURRENT_INTENTS"); do
	read -r _ sid <<<"$(new_session "$URL_LOCAL" "$AGENT_LOCAL" "{\"name\":\"recon-conc-$i\"}")"
	sids+=("$sid")
done
"$RECON" -c "$INI_CONC" --dry-run --limit 100000 >"$T/conc-due.txt"
due=$(tail -1 "$T/conc-due.txt")
grep -v -F -f <(printf "%s\n" "${sids[@]}") "$T/conc-due.txt" | sed "s/^/  other: /"
check "concurrency: $CONCURRENT_INTENTS intents due ($due)" test "$due" = "$CONCURRENT_INTENTS due"
pids=()
for n in 1 2 3 4; do
	"$RECON" -c "$INI_CONC" --once --limit 100000 --metrics-file "$T/conc-$n.prom" \
		>"$T/conc-$n.log" 2>&1 &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
check "concurrency: all 4 runs exit 0" test $rc -eq 0
bound=$(cat "$T"/conc-*.log | grep -o "session sesn_[0-9A-Za-z]* ready" | sort | uniq -c)
check "concurrency: $CONCURRENT_INTENTS sessions bound" test "$(wc -l <<<"$bound")" -eq "$CONCURRENT_INTENTS"
check "concurrency: none bound twice" bash -c '! awk "\$1 != 1" <<<"$1" | grep -q .' _ "$bound"
creates=$(cat "$T"/conc-*.prom | awk -F' ' '/step_seconds_count\{step="sandbox"\}/ {s += $2} END {print s + 0}')
check "concurrency: $creates sandbox creates for $CONCURRENT_INTENTS intents" test "$creates" -eq "$CONCURRENT_INTENTS"
workers=$(grep -l "ready" "$T"/conc-*.log | wc -l)
echo "  intents were spread over $workers reconcilers"
ready=0
for sid in "${sids[@]}"; do
	[ "$(api "$URL_LOCAL" GET "/v1/sessions/$sid" | jq -r .provisioning.status)" = ready ] && ready=$((ready + 1))
done
check "concurrency: every session reads ready ($ready)" test "$ready" -eq "$CONCURRENT_INTENTS"

# ---- status ----
echo "# status"
"$RECON" -c "$INI_CONC" --status >"$T/status.txt" 2>&1
check "status: exits 0" test $? -eq 0
check "status: counts by kind and state" grep -qE "^provision +done +[0-9]+" "$T/status.txt"
check "status: oldest due line" grep -q "^due now: " "$T/status.txt"
check "status: lists the last errors" grep -q "$SID_T" "$T/status.txt"
check "metrics: Prometheus text with intents by state" grep -q '^terrarium_intents{kind="provision",state="done"}' "$T/conc-1.prom"

# ---- a teardown that failed until terminated, revived by --retry ----
echo "# teardown retry"
INI_TR=$(recon_ini teardown-retry bwrap "[reconciler]" "max_attempts = 2" "backoff_base_seconds = 0")
read -r _ SID_TR <<<"$(new_session "$URL_BWRAP" "$AGENT_BWRAP" '{"name":"recon-teardown-retry","config":{"type":"cloud"}}')"
"$RECON" -c "$INI_TR" --once >"$T/teardown-retry.log" 2>&1
check "teardown retry: the session is ready" \
	test "$(provisioning "$URL_BWRAP" "$SID_TR" | jq -r .p.status)" = ready
# a sandbox root that loses no entry: removing the sandbox's directory fails
chmod 0555 "$T/root-teardown-retry"
api "$URL_BWRAP" DELETE "/v1/sessions/$SID_TR" >/dev/null
"$RECON" -c "$INI_TR" --once >>"$T/teardown-retry.log" 2>&1
"$RECON" -c "$INI_TR" --once >>"$T/teardown-retry.log" 2>&1
teardown_state() {
	db_query "$RUN" "SELECT CONCAT(state, ' ', attempts) FROM provisioning_intents
		WHERE session_id = '$SID_TR' AND kind = 'teardown'"
}
st=$(teardown_state)
check "teardown retry: the teardown failed twice -> terminated ($st)" test "$st" = "terminated 2"
check "teardown retry: the sandbox is still there" test -d "$T/root-teardown-retry/$SID_TR"
chmod 0755 "$T/root-teardown-retry"
"$RECON" -c "$INI_TR" --once >>"$T/teardown-retry.log" 2>&1
check "teardown retry: a terminated teardown is not retried by itself" \
	test -d "$T/root-teardown-retry/$SID_TR"
out=$("$RECON" -c "$INI_TR" --retry "$SID_TR" 2>&1)
rc=$?
check "teardown retry: --retry revives it ($out)" test "$rc" -eq 0
st=$(teardown_state)
check "teardown retry: due again with a fresh budget ($st)" test "$st" = "pending 0"
"$RECON" -c "$INI_TR" --once >>"$T/teardown-retry.log" 2>&1
check "teardown retry: the sandbox is gone" test ! -e "$T/root-teardown-retry/$SID_TR"
check "teardown retry: the rows are removed" test "$(rows_left "$SID_TR")" -eq 0

# ---- lease: a running step keeps its lease ----
echo "# lease"
# a workspace prepared before the run: the fake npm sleeps 8 s, past the 3 s lease
# (no package cache: the rounds' sessions share one environment, and a cache hit installs nothing)
INI_LEASE=$(recon_ini lease bwrap "path = /workspace/.fakebin:/usr/bin:/bin" "cache_max_age_days = 0" \
	"[reconciler]" "lease_seconds = 3" "backoff_base_seconds = 0")
ENV_LEASE=$(api "$URL_BWRAP" POST /v1/environments \
	'{"name":"recon-lease","config":{"type":"cloud","packages":{"npm":["slow"]}}}' | jq -r .id)
lease_ok=0
for i in $(seq 1 "$LEASE_ROUNDS"); do
	sid=$(api "$URL_BWRAP" POST /v1/sessions "{\"agent\":\"$AGENT_BWRAP\",\"environment_id\":\"$ENV_LEASE\"}" | jq -r .id)
	fake_npm "$T/root-lease" "$sid" 8
	"$RECON" -c "$INI_LEASE" --once >"$T/lease-a-$i.log" 2>&1 &
	pid_a=$!
	sleep 4.5 # past the lease the claim took: only renewals keep it
	"$RECON" -c "$INI_LEASE" --once >"$T/lease-b-$i.log" 2>&1
	rc_b=$?
	wait "$pid_a"
	rc_a=$?
	p=$(provisioning "$URL_BWRAP" "$sid")
	# shellcheck disable=SC2002 # a missing file counts 0
	starts=$(cat "$T/root-lease/$sid/npm-calls.log" 2>/dev/null | grep -c start)
	if [ "$rc_a$rc_b" = 00 ] && [ "$starts" -eq 1 ] &&
		[ "$(jq -r '.p.status + " " + (.p.attempts|tostring)' <<<"$p")" = "ready 1" ]; then
		lease_ok=$((lease_ok + 1))
	else
		echo "  round $i: exits $rc_a $rc_b, $starts installs, $p"
	fi
done
check "lease: $lease_ok/$LEASE_ROUNDS rounds with both runs exiting 0, one install, ready after attempt 1" \
	test "$lease_ok" -eq "$LEASE_ROUNDS"

# the later intents of a claimed batch: their leases start when their work does. 9 slow
# installs (more than a batch of 8) with a 2 s lease; a second reconciler started while the
# first is in its batch takes what the first has not reached, and the first drops those.
# (no package cache: the sessions share one environment)
INI_BATCH=$(recon_ini batch bwrap "path = /workspace/.fakebin:/usr/bin:/bin" \
	"cache_max_age_days = 0" "[reconciler]" "lease_seconds = 2" "backoff_base_seconds = 0")
ENV_BATCH=$(api "$URL_BWRAP" POST /v1/environments \
	'{"name":"recon-batch","config":{"type":"cloud","packages":{"npm":["slow"]}}}' | jq -r .id)
batch=()
for i in $(seq 1 "$BATCH_INTENTS"); do
	sid=$(api "$URL_BWRAP" POST /v1/sessions "{\"agent\":\"$AGENT_BWRAP\",\"environment_id\":\"$ENV_BATCH\"}" | jq -r .id)
	fake_npm "$T/root-batch" "$sid" 1
	batch+=("$sid")
done
"$RECON" -c "$INI_BATCH" --once >"$T/batch-a.log" 2>&1 &
pid_a=$!
sleep 3.5 # the batch's leases ran out; the first run is on its second or third intent
"$RECON" -c "$INI_BATCH" --once >"$T/batch-b.log" 2>&1
wait "$pid_a"
once=0
for sid in "${batch[@]}"; do
	calls="$T/root-batch/$sid/npm-calls.log"
	if [ "$(grep -c start "$calls")" -eq 1 ] && [ "$(grep -c '^done' "$calls")" -eq 1 ] &&
		[ "$(provisioning "$URL_BWRAP" "$sid" | jq -r .p.status)" = ready ]; then
		once=$((once + 1))
	else
		echo "  $sid: $(tr '\n' ' ' <"$calls") $(provisioning "$URL_BWRAP" "$sid")"
	fi
done
check "lease (batch): $once/$BATCH_INTENTS sessions ready with exactly one install" \
	test "$once" -eq "$BATCH_INTENTS"
n_a=$(grep -c "session sesn_[0-9A-Za-z]* ready" "$T/batch-a.log")
n_b=$(grep -c "session sesn_[0-9A-Za-z]* ready" "$T/batch-b.log")
check "lease (batch): the second run took over what the first had not reached ($n_a + $n_b)" \
	bash -c '[ "$1" -ge 1 ] && [ "$2" -ge 1 ] && [ $(($1 + $2)) -eq "$3" ]' _ "$n_a" "$n_b" "$BATCH_INTENTS"
dropped=$(grep -c "lease lost; dropped" "$T/batch-a.log")
check "lease (batch): the first run dropped the intents it reached after the takeover ($dropped)" \
	test "$dropped" -ge 1

# ---- kill -9 of a reconciler during a long install ----
echo "# kill9"
# killed_install NAME LEASE INSTALL_S KILL_AFTER: a bwrap session whose npm install takes
# INSTALL_S, a run with lease LEASE killed -9 after KILL_AFTER seconds, then its lease left to
# expire. Sets INI_<NAME> to the configuration and SID to the session.
killed_install() {
	local name=$1 lease=$2 install=$3 after=$4 ini pid
	ini=$(recon_ini "$name" bwrap "path = /workspace/.fakebin:/usr/bin:/bin" "[reconciler]" \
		"lease_seconds = $lease" "backoff_base_seconds = 0")
	read -r _ SID <<<"$(new_session "$URL_BWRAP" "$AGENT_BWRAP" \
		"{\"name\":\"recon-$name\",\"config\":{\"type\":\"cloud\",\"packages\":{\"npm\":[\"slow\"]}}}")"
	fake_npm "$T/root-$name" "$SID" "$install"
	"$RECON" -c "$ini" --once >"$T/$name-a.log" 2>&1 &
	pid=$!
	sleep "$after"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	sleep "$lease.2" # the killed run's lease ends
	printf -v "INI_$name" '%s' "$ini"
}
killed_install kill 2 4 1.5
SID_K=$SID
# shellcheck disable=SC2154 # INI_kill: printf -v above
"$RECON" -c "$INI_kill" --once >"$T/kill-b.log" 2>&1
sleep 1 # what would be left of the first install would have finished by now
calls=$(tr '\n' ' ' <"$T/root-kill/$SID_K/npm-calls.log")
check "kill9: the killed run's install died with it, one install completed ($calls)" \
	test "$(grep -c "done" "$T/root-kill/$SID_K/npm-calls.log")" -eq 1
check "kill9: session ready" test "$(provisioning "$URL_BWRAP" "$SID_K" | jq -r .p.status)" = ready

# ---- orphans ----
echo "# orphans"
# N sessions of environment ENV on the bwrap API, PAR requests at a time; their ids, one a line
PAR=8
new_sessions() { # new_sessions N ENV
	export -f api
	export KEY URL_BWRAP AGENT_BWRAP
	seq 1 "$1" | xargs -P "$PAR" -I{} bash -c 'api "$URL_BWRAP" POST /v1/sessions \
		"{\"agent\":\"$AGENT_BWRAP\",\"environment_id\":\"$0\"}" | jq -r .id' "$2"
}
delete_sessions() { # delete_sessions SESSION...
	export -f api
	export KEY URL_BWRAP
	printf '%s\n' "$@" | xargs -P "$PAR" -I{} bash -c 'api "$URL_BWRAP" DELETE "/v1/sessions/$0" >/dev/null' {}
}
# Every --once sweeps first, so each race also checks that the sweep had nothing to do: the
# teardowns did the work (one per sandbox made) and no "sweep: removed" line was logged.
# ORPHAN_ROUNDS runs each race that many times in a row.
#
# (a) --retry resets attempts; the delete must still tear the sandbox down
INI_ORA=$(recon_ini orphan-a bwrap "path = /nonexistent" "[reconciler]" "max_attempts = 1" \
	"backoff_base_seconds = 3600")
ENV_OA=$(api "$URL_BWRAP" POST /v1/environments \
	'{"name":"recon-orphan-a","config":{"type":"cloud","packages":{"npm":["nope"]}}}' | jq -r .id)
orphans_a() { # orphans_a ROUND
	local r=$1 at="orphans (a)" log="$T/orphan-a-$1.log" oa
	[ "$ORPHAN_ROUNDS" -gt 1 ] && at="orphans (a) round $r"
	mapfile -t oa < <(new_sessions "$ORPHAN_SESSIONS" "$ENV_OA")
	check "$at: $ORPHAN_SESSIONS sessions created" \
		test "$(printf '%s\n' "${oa[@]}" | grep -c '^sesn_')" -eq "$ORPHAN_SESSIONS"
	"$RECON" -c "$INI_ORA" --once --limit 100000 >"$log" 2>&1
	check "$at: $ORPHAN_SESSIONS sandboxes made, provisioning terminated" \
		test "$(dirs_left "$T/root-orphan-a" "${oa[@]}")" -eq "$ORPHAN_SESSIONS"
	printf '%s\n' "${oa[@]}" | xargs -P "$PAR" -I{} "$RECON" -c "$INI_ORA" --retry {} >/dev/null 2>&1
	check "$at: --retry reset attempts to 0" \
		test "$(api "$URL_BWRAP" GET "/v1/sessions/${oa[0]}" | jq -r .provisioning.attempts)" = 0
	delete_sessions "${oa[@]}"
	"$RECON" -c "$INI_ORA" --once --limit 100000 >>"$log" 2>&1
	check "$at: 0 of $ORPHAN_SESSIONS sandbox directories left" \
		test "$(dirs_left "$T/root-orphan-a" "${oa[@]}")" -eq 0
	check "$at: 0 rows left" test "$(rows_left "${oa[@]}")" -eq 0
	check "$at: $ORPHAN_SESSIONS teardowns did it ($(teardowns_in "$log" -- "${oa[@]}")), the sweep nothing ($(sweeps_in "$log"))" \
		test "$(teardowns_in "$log" -- "${oa[@]}") $(sweeps_in "$log")" = "$ORPHAN_SESSIONS 0"
}

# (b) sessions deleted while a run works through its claimed batches; another run tears down
# (no package cache: its sessions share one environment, and cache hits would skip the slow
# installs this race needs)
INI_ORB=$(recon_ini orphan-b bwrap "path = /workspace/.fakebin:/usr/bin:/bin" \
	"cache_max_age_days = 0" "[reconciler]" "lease_seconds = 2" "backoff_base_seconds = 0")
ENV_OB=$(api "$URL_BWRAP" POST /v1/environments \
	'{"name":"recon-orphan-b","config":{"type":"cloud","packages":{"npm":["slow"]}}}' | jq -r .id)
orphans_b() { # orphans_b ROUND
	local r=$1 at="orphans (b)" log1="$T/orphan-b1-$1.log" log2="$T/orphan-b2-$1.log"
	local ob sid pid_a ids marked unmarked_made started=0
	[ "$ORPHAN_ROUNDS" -gt 1 ] && at="orphans (b) round $r"
	mapfile -t ob < <(new_sessions "$ORPHAN_SESSIONS" "$ENV_OB")
	check "$at: $ORPHAN_SESSIONS sessions created" \
		test "$(printf '%s\n' "${ob[@]}" | grep -c '^sesn_')" -eq "$ORPHAN_SESSIONS"
	for sid in "${ob[@]}"; do fake_npm "$T/root-orphan-b" "$sid" 0.3; done
	"$RECON" -c "$INI_ORB" --once --limit 100000 >"$log1" 2>&1 &
	pid_a=$!
	# the first run has claimed a batch and is installing
	for _ in $(seq 1 100); do
		started=$(cat "$T/root-orphan-b"/sesn_*/npm-calls.log 2>/dev/null | grep -c start)
		[ "$started" -ge 2 ] && break
		sleep 0.1
	done
	delete_sessions "${ob[@]}"
	ids=$(printf "'%s'," "${ob[@]}")
	# what the deletes left a teardown for: every session a sandbox may exist for
	mapfile -t marked < <(db_query "$RUN" "SELECT session_id FROM provisioning_intents
		WHERE kind = 'teardown' AND session_id IN (${ids%,})")
	# the others never had a sandbox (and never will: their provisioning can no longer start):
	# their directories hold only the fake npm this test put there, removed here so that the
	# sweep has nothing of the test's to find
	unmarked_made=0
	for sid in "${ob[@]}"; do
		printf '%s\n' "${marked[@]}" | grep -qx "$sid" && continue
		if [ -e "$T/root-orphan-b/$sid/npm-calls.log" ]; then
			unmarked_made=$((unmarked_made + 1))
			# what the failure's reader needs: the calls, the rows, the runs' lines of it
			echo "# $at: $sid has npm calls ($(tr '\n' ' ' <"$T/root-orphan-b/$sid/npm-calls.log"))" \
				"but no teardown; teardowns: ${marked[*]}"
			db_query "$RUN" "SELECT id, kind, state, sandbox_may_exist, attempts
				FROM provisioning_intents WHERE session_id = '$sid'" | sed 's/^/#   intent: /'
			grep -h "$sid" "$log1" | sed 's/^/#   run 1: /'
		fi
		rm -rf "${T:?}/root-orphan-b/$sid"
	done
	for _ in $(seq 1 30); do # the second run tears down whatever is due, as it becomes due
		"$RECON" -c "$INI_ORB" --once --limit 100000 >>"$log2" 2>&1
		[ "$(rows_left "${ob[@]}")" -eq 0 ] && ! kill -0 "$pid_a" 2>/dev/null && break
		sleep 0.5
	done
	wait "$pid_a"
	check "$at: the deletes came while installs ran ($started started, ${#marked[@]} sandboxes to tear down)" \
		bash -c '[ "$1" -ge 2 ] && [ "$2" -ge 2 ]' _ "$started" "${#marked[@]}"
	check "$at: no install ran in a sandbox the delete did not know of ($unmarked_made)" \
		test "$unmarked_made" -eq 0
	check "$at: the first run dropped what was deleted under it" \
		grep -q "lease lost; dropped" "$log1"
	check "$at: 0 of $ORPHAN_SESSIONS sandbox directories left" \
		test "$(dirs_left "$T/root-orphan-b" "${ob[@]}")" -eq 0
	check "$at: 0 rows left" test "$(rows_left "${ob[@]}")" -eq 0
	check "$at: ${#marked[@]} teardowns did it ($(teardowns_in "$log1" "$log2" -- "${ob[@]}")), the sweep nothing ($(sweeps_in "$log1" "$log2"))" \
		test "$(teardowns_in "$log1" "$log2" -- "${ob[@]}") $(sweeps_in "$log1" "$log2")" = "${#marked[@]} 0"
}

# (c) the race as filed, with a create that takes time (an HTTP backend: fake-e2b.mjs creates in
# SLOW_CREATE_MS): the sessions are deleted while the first run's create is under way; a second
# run tears down while nothing exists yet; the first run's create ends, it finds its lease lost
# and the session gone, and destroys the sandbox it made. The fake is left with none.
SLOW_CREATE_MS=5000
E2B="$T/e2b"
mkdir -p "$E2B"
printf 'e2b_%s\n' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$E2B/api.key"
node "$ROOT/tests/backends/fake-e2b.mjs" --port-file "$E2B/port" --api-key-file "$E2B/api.key" \
	--create-delay-ms "$SLOW_CREATE_MS" >"$E2B/fake.log" 2>&1 &
E2B_PID=$!
trap 'kill "$E2B_PID" 2>/dev/null; wait "$E2B_PID" 2>/dev/null' EXIT
for _ in $(seq 1 100); do [ -s "$E2B/port" ] && break; sleep 0.1; done
E2B_URL="http://127.0.0.1:$(cat "$E2B/port" 2>/dev/null)"
INI_E2B=$(recon_ini e2b e2b "[e2b]" "url = $E2B_URL" "api_key_file = $E2B/api.key" \
	"timeout_seconds = 30" "[reconciler]" "lease_seconds = 1" "backoff_base_seconds = 0")
e2b_log() { curl -sS --max-time 10 "$E2B_URL/__fake/log"; }
e2b_creates() { e2b_log | jq '[.requests[] | select(.method == "POST" and .path == "/sandboxes")] | length'; }
e2b_sandboxes() { # e2b_sandboxes SESSION...: how many sandboxes of these sessions the fake has
	e2b_log | jq --args '[.sandboxes[] | select(.metadata.terrarium_sandbox as $n | $ARGS.positional | index($n))] | length' "$@"
}
ENV_OC=$(api "$URL_BWRAP" POST /v1/environments \
	'{"name":"recon-orphan-c","config":{"type":"cloud","networking":{"type":"unrestricted"}}}' | jq -r .id)
orphans_c() { # orphans_c ROUND
	local r=$1 at="orphans (c)" log1="$T/orphan-c1-$1.log" log2="$T/orphan-c2-$1.log"
	local oc pid_a before posted left during=0
	[ "$ORPHAN_ROUNDS" -gt 1 ] && at="orphans (c) round $r"
	mapfile -t oc < <(new_sessions 2 "$ENV_OC")
	before=$(e2b_creates)
	"$RECON" -c "$INI_E2B" --once >"$log1" 2>&1 &
	pid_a=$!
	for _ in $(seq 1 100); do # until the first create is under way
		[ "$(e2b_creates)" -gt "$before" ] && break
		sleep 0.1
	done
	posted=$(date +%s%N)
	delete_sessions "${oc[@]}"
	for _ in $(seq 1 40); do # the second run tears down as soon as the first's lease ends
		"$RECON" -c "$INI_E2B" --once >>"$log2" 2>&1
		if [ "$(rows_left "${oc[@]}")" -eq 0 ]; then
			kill -0 "$pid_a" 2>/dev/null && during=1
			break
		fi
		sleep 0.25
	done
	wait "$pid_a"
	# the backend finishes a create it was asked for even when the caller went away: count
	# only once it would have
	left=$(((SLOW_CREATE_MS + 500) * 1000000 - ($(date +%s%N) - posted)))
	[ "$left" -gt 0 ] && sleep "$((left / 1000000000)).$(printf '%09d' $((left % 1000000000)))"
	check "$at: the teardown was done while the create was under way" test "$during" -eq 1
	check "$at: the first run destroyed what its create made for the deleted session" \
		grep -q "session deleted during the create; sandbox .* destroyed" "$log1"
	check "$at: 0 sandboxes of these sessions left in the backend" \
		test "$(e2b_sandboxes "${oc[@]}")" -eq 0
	check "$at: 0 rows left" test "$(rows_left "${oc[@]}")" -eq 0
	check "$at: no sweep removed anything ($(sweeps_in "$log1" "$log2"))" \
		test "$(sweeps_in "$log1" "$log2")" -eq 0
}
for i in $(seq 1 "$ORPHAN_ROUNDS"); do
	orphans_a "$i"
	orphans_b "$i"
	orphans_c "$i"
done
# an HTTP backend's error naming host paths (as Docker's "bind source path does not exist"
# would): last_error shows neither the configuration's directory nor the key file
sid=$(new_sessions 1 "$ENV_OC")
curl -sS -X POST "$E2B_URL/__fake/create-error" -H 'content-type: application/json' \
	--data "{\"message\":\"bind source path does not exist: $T/ca.pem (key $E2B/api.key)\"}" >/dev/null
"$RECON" -c "$INI_E2B" --once >"$T/e2b-error.log" 2>&1
err=$(provisioning "$URL_BWRAP" "$sid" | jq -r .p.last_error)
check "last_error of an HTTP backend: no host paths ($err)" \
	bash -c 'grep -q "status 400" <<<"$1" && grep -qF "bind source path does not exist: <host>/ca.pem (key <host>)" <<<"$1" && ! grep -qF "$2" <<<"$1"' \
	_ "$err" "$RUN"
curl -sS -X POST "$E2B_URL/__fake/create-error" -H 'content-type: application/json' \
	--data '{"message":""}' >/dev/null
api "$URL_BWRAP" DELETE "/v1/sessions/$sid" >/dev/null
"$RECON" -c "$INI_E2B" --once >>"$T/e2b-error.log" 2>&1
check "orphans (c): the fake backend recorded no protocol violations" \
	test "$(e2b_log | jq -c .violations)" = "[]"

# the sweep: a directory named like a session that no session owns goes, others stay
mkdir -p "$T/root-orphan-b/sesn_NoSuchSession0000000000/node_modules" "$T/root-orphan-b/keep-me"
"$RECON" -c "$INI_ORB" --once >"$T/sweep.log" 2>&1
check "sweep: the unowned sandbox directory is removed" \
	test ! -e "$T/root-orphan-b/sesn_NoSuchSession0000000000"
check "sweep: its removal is logged" grep -q "sweep: removed sandbox sesn_NoSuchSession0000000000" "$T/sweep.log"
check "sweep: other names are left alone" test -d "$T/root-orphan-b/keep-me"

# ---- --status agrees with --dry-run, expired claims included ----
echo "# due"
killed_install due 1 5 1
SID_D=$SID
# shellcheck disable=SC2154 # INI_due: printf -v above
"$RECON" -c "$INI_due" --dry-run --limit 100000 >"$T/due-dry.txt"
"$RECON" -c "$INI_due" --status >"$T/due-status.txt"
dry=$(tail -1 "$T/due-dry.txt" | awk '{print $1}')
stat_due=$(sed -n 's/^due now: \([0-9]*\),.*/\1/p' "$T/due-status.txt")
check "due: the expired claim is listed by --dry-run" grep -q "$SID_D.*state claimed" "$T/due-dry.txt"
check "due: --status counts what --dry-run lists ($stat_due, $dry)" test "$stat_due" = "$dry"

# ---- the smaller points ----
echo "# smaller"
INI_EXTRA=$(recon_ini extra bwrap "pass_env_extra = TERRARIUM_TEST_EXTRA")
mkdir -p "$T/root-extra"
cp "$INI_EXTRA" "$T/extra-exec.ini"
read -r _ SID_X <<<"$(new_session "$URL_BWRAP" "$AGENT_BWRAP" '{"name":"recon-extra","config":{"type":"cloud"}}')"
"$RECON" -c "$INI_EXTRA" --once >"$T/extra.log" 2>&1
mkdir -p "$T/root-extra/$SID_X/node_modules/.bin"
printf '#!/bin/sh\necho hello-from-bin\n' >"$T/root-extra/$SID_X/node_modules/.bin/hello"
chmod +x "$T/root-extra/$SID_X/node_modules/.bin/hello"
# no_proxy is on the default pass_env list and nowhere else: it arrives only if
# pass_env_extra adds to the list rather than replacing it
out=$(TERRARIUM_TEST_EXTRA=yes no_proxy=default-list.invalid "$RECON" -c "$INI_EXTRA" \
	--exec "$SID_X" -- sh -c \
	'echo "$TERRARIUM_TEST_EXTRA $no_proxy $NODE_EXTRA_CA_CERTS $PYTHONPATH $NODE_PATH"' 2>&1)
check "smaller: pass_env_extra adds to the defaults (both arrive); PYTHONPATH, NODE_PATH ($out)" \
	test "$out" = "yes default-list.invalid $(ls /etc/ssl/certs/ca-certificates.crt 2>/dev/null) /workspace/.pip /workspace/node_modules"
out=$("$RECON" -c "$INI_EXTRA" --exec "$SID_X" -- hello 2>&1)
check "smaller: a package's bin directory is on PATH ($out)" test "$out" = hello-from-bin
# last_error from a real failure under a sandbox root shorter than "<sandboxes>": the root
# admits no new sandbox, so the create fails naming the host path
SHORT=$(mktemp -d /tmp/tXXX)
chmod 0555 "$SHORT"
INI_SHORT=$(recon_ini short bwrap)
sed -i "s|^root = .*|root = $SHORT|" "$INI_SHORT"
read -r _ SID_S <<<"$(new_session "$URL_BWRAP" "$AGENT_BWRAP" '{"name":"recon-short-root","config":{"type":"cloud"}}')"
"$RECON" -c "$INI_SHORT" --once >"$T/short.log" 2>&1
err=$(provisioning "$URL_BWRAP" "$SID_S" | jq -r .p.last_error)
check "smaller: a short sandbox root ($SHORT) is hidden from last_error too ($err)" \
	bash -c 'grep -qF "mkdir <sandboxes>/" <<<"$1" && ! grep -qF "$2" <<<"$1"' _ "$err" "$SHORT"
chmod 0755 "$SHORT"
api "$URL_BWRAP" DELETE "/v1/sessions/$SID_S" >/dev/null
"$RECON" -c "$INI_SHORT" --once >>"$T/short.log" 2>&1
check "smaller: its teardown leaves no rows" test "$(rows_left "$SID_S")" -eq 0
rm -rf "$SHORT"
INI_MET=$(recon_ini met local)
"$RECON" -c "$INI_MET" --once --metrics-file "$T/cumulative.prom" >/dev/null 2>&1
read -r _ _ <<<"$(new_session "$URL_LOCAL" "$AGENT_LOCAL" '{"name":"recon-met-1"}')"
"$RECON" -c "$INI_MET" --once --metrics-file "$T/cumulative.prom" >/dev/null 2>&1
first=$(awk '$1 == "terrarium_reconciler_attempts_total" {print $2}' "$T/cumulative.prom")
read -r _ _ <<<"$(new_session "$URL_LOCAL" "$AGENT_LOCAL" '{"name":"recon-met-2"}')"
"$RECON" -c "$INI_MET" --once --metrics-file "$T/cumulative.prom" >/dev/null 2>&1
second=$(awk '$1 == "terrarium_reconciler_attempts_total" {print $2}' "$T/cumulative.prom")
check "metrics: counters are totals over runs ($first, then $second)" test "$second" -eq $((first + 1))
check "metrics: gauges of due intents and the oldest due age" \
	grep -qE '^terrarium_intents_due [0-9]+$' "$T/cumulative.prom"
check "metrics: oldest due age gauge" \
	grep -qE '^terrarium_intents_oldest_due_seconds [0-9.]+$' "$T/cumulative.prom"
check "cron: scripts/reconciler.cron is an /etc/cron.d line with a user field" \
	grep -qE '^\* \* \* \* \* +root +cd ' "$ROOT/scripts/reconciler.cron"

# ---- the escape suite ----
echo "# escape"
escape_backends=(bwrap)
if [ -n "${TERRARIUM_URL_srt:-}" ]; then
	escape_backends+=(srt)
else
	echo "  (no srt API in this stack: the suite under srt is skipped)"
fi
for b in "${escape_backends[@]}"; do
	if [ "$(id -u)" -eq 0 ]; then
		bash "$ROOT/tests/reconciler/escape.sh" root "$b"
		check "escape ($b): every attempt failed, reconciler started as root" test $? -eq 0
		bash "$ROOT/tests/reconciler/escape.sh" user "$b"
		check "escape ($b): every attempt failed, reconciler started as $RECON_USER" test $? -eq 0
	else
		bash "$ROOT/tests/reconciler/escape.sh" user "$b"
		check "escape ($b): every attempt failed, reconciler started as $(id -un)" test $? -eq 0
		echo "  (not root: the suite with the reconciler started as root is skipped)"
	fi
done

check_summary
