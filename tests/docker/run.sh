#!/usr/bin/env bash
# Provisioning on a real Docker Engine (`make test` runs this once, after tests/e2e/run.sh):
# MariaDB, the API (backend docker) and nginx on a temporary directory, the reconciler against
# a real dockerd and the default sandbox image (sandbox-image/).
#
#   install    apt ["jq"] + npm ["is-number@7.0.0"] -> ready; both usable through --exec, as
#              the unprivileged user, in a confined container (no capabilities, no new
#              privileges, limits, the CA bundle mounted), which cannot reach the host's loopback
#   cache      a second session of that environment starts from the package cache entry (no
#              install runs) and has the same packages
#   drift      a removed container is noticed by --exec and by a run's check; the session is
#              provisioned again and never left ready meanwhile
#   missing    an image without cargo: terminal "sandbox image has no cargo", no retry loop
#   resume     npm + pip with a PyPI index (a container on the bridge) lacking the package:
#              rescheduling with a readable error; once the index has it, pip alone runs
#   crash      kill -9 of a reconciler during a docker install, CRASH_ROUNDS (10) times: each
#              session ready exactly once, one container labelled with it
#   race       two reconcilers provisioning two sessions of one new environment at once: one
#              whole cache entry, both sessions ready
#   sweep      containers of this deployment that no session owns (one made by hand, one whose
#              session's rows were deleted behind the API's back) are removed by --once, each
#              logged; a live session's container and one labelled with another deployment
#              (another stack on the same Engine) are kept
#   bwrap      the cache of directory backends: a second bwrap session starts from the entry
#              (layered on it: tests/reconciler/run.sh, layers), shares no file with the
#              first, cannot see the cache; removal
#   lease      lease 3 s, an npm install of 8 s (an image whose npm is a slow fake): a second
#              reconciler started mid-install finds nothing to do (the lease is renewed while
#              the exec runs: its expiry moves), one install, ready after attempt 1; then a
#              lease taken away mid-install: the first reconciler stops, and the install's
#              processes in the container are killed (the fake never writes "done")
#   cleanup    deleted sessions lose their containers; entries of deleted environments and
#              entries unused for cache_max_age_days are removed
#
# The Engine: DOCKER_SOCKET when set, else a running one (scripts/lib-stack.sh docker_engine),
# else dockerd started on /run/terrarium/docker with data root /var/lib/terrarium-docker (kept
# across runs and clones: the image is built once) and stopped by PID at the end unless another
# run still uses it. Not root: "skip - ..." and counted as skipped (exit 0). As root, no Engine
# (none answers, dockerd missing or failing to start) fails the run.
# Only containers and images labelled terrarium.managed are touched, and of those only the
# ones this run made (by session id or name).
# Prints "N passed, N failed"; exits non-zero on any failure. KEEP_RUN=1 keeps the directory.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 1
# shellcheck source=scripts/lib-stack.sh
. "$ROOT/scripts/lib-stack.sh"
BUILD=$(stack_build_dir)
RECON="$BUILD/terrarium-reconciler"
CRASH_ROUNDS=${CRASH_ROUNDS:-10}

# shellcheck source=tests/lib-check.sh
. "$ROOT/tests/lib-check.sh"
# shellcheck source=tests/lib-lease.sh
. "$ROOT/tests/lib-lease.sh"
# Not root: skipped (dockerd needs root), said and counted. Root: an Engine that cannot be
# found or started fails the run.
if [ "$(id -u)" -ne 0 ]; then
	skip "docker tests: not root (dockerd needs root)"
	check_summary
	exit 0
fi

# ---- the Engine, shared by concurrent runs ----
if ! docker_engine_shared; then # (it said why, with dockerd's log when dockerd failed)
	not_ok "a Docker Engine answers (DOCKER_SOCKET, /var/run/docker.sock) or dockerd starts"
	docker_engine_release
	check_summary
	exit 1
fi
ok "Docker Engine on $STACK_DOCKER_SOCKET"
SOCK=$STACK_DOCKER_SOCKET
dk() { docker -H "unix://$SOCK" "$@"; }

RUN=$(mktemp -d /tmp/terrarium-docker.XXXXXX) || exit 1
T=$RUN/t
mkdir -p "$T"
INDEX_NAME=terrarium-test-pypi-$$
SWEEP_ORPHAN=terrarium-sesn_SweepOrphan$$ # containers the sweep test makes by hand
SWEEP_OTHER=terrarium-sesn_SweepOther$$
NOCARGO_IMAGE=terrarium-test-nocargo:$$
SLOWNPM_IMAGE=terrarium-test-slownpm:$$
SESSIONS_FILE=$T/sessions # every session this run made (new_session runs in a subshell)

cleanup() {
	local sid
	while read -r sid; do
		dk ps -aq --filter "label=terrarium.session=$sid" | xargs -r docker -H "unix://$SOCK" rm -f >/dev/null 2>&1
	done < <(cat "$SESSIONS_FILE" 2>/dev/null)
	# this run's package cache entries (docker images), whatever the tests left
	db_query "$RUN" "SELECT cache_key FROM sandbox_cache WHERE backend = 'docker'" \
		2>/dev/null | sed 's/^/terrarium-cache:/' | xargs -r docker -H "unix://$SOCK" rmi >/dev/null 2>&1
	dk rm -f "$INDEX_NAME" "$SWEEP_ORPHAN" "$SWEEP_OTHER" >/dev/null 2>&1
	dk rmi "$NOCARGO_IMAGE" "$SLOWNPM_IMAGE" >/dev/null 2>&1
	stack_stop_all "$RUN" 2>/dev/null
	docker_engine_release 2>/dev/null # the last user of an Engine started for tests stops it
	if [ "${KEEP_RUN:-0}" = 1 ]; then
		echo "docker tests: run directory kept: $RUN"
	else
		rm -rf "$RUN"
	fi
}
trap cleanup EXIT

IMAGE=$(DOCKER_SOCKET=$SOCK "$ROOT/sandbox-image/build.sh") || {
	not_ok "the default sandbox image builds (sandbox-image/build.sh)"
	check_summary
	exit 1
}
ok "default sandbox image $IMAGE present"

# ---- the stack: API with backend docker ----
stack_prepare "$RUN" || exit 1
db_init "$RUN" && db_start "$RUN" || exit 1
# shellcheck disable=SC2034 # read by api_config
STACK_DOCKER_IMAGE=$IMAGE
cat >"$RUN/operator.ini" <<EOF
[sandbox]
pass_env = PIP_INDEX_URL,PIP_TRUSTED_HOST
[reconciler]
backoff_base_seconds = 0
lease_seconds = 2
max_attempts = 10
command_timeout_seconds = 300
EOF
api_config "$RUN" api docker || exit 1
api_config "$RUN" bwrap bwrap || exit 1 # the directory backends' cache (bwrap section below)
api_cli "$RUN" api migrate "$ROOT/sql" >/dev/null || exit 1
# shellcheck disable=SC2034 # read by api
KEY=$(api_cli "$RUN" api key create ws-docker) || exit 1
PORT=$(stack_free_port) && PORT_B=$(stack_free_port "$PORT") || exit 1
api_start "$RUN" api && api_start "$RUN" bwrap && nginx_start "$RUN" "$PORT:api" "$PORT_B:bwrap" ||
	exit 1
URL=http://127.0.0.1:$PORT
INI=$RUN/api.ini
check "make up's config names the Engine and the image" \
	grep -qx "socket = $SOCK" "$INI"
check "operator.ini is appended after the generated settings (its values win)" \
	test "$(grep -c '^backoff_base_seconds = 0' "$INI")" -eq 1

status() { api "$URL" GET "/v1/sessions/$1" | jq -r .provisioning.status; }
is_ready() { [ "$(status "$1")" = ready ]; } # SESSION
last_error() { api "$URL" GET "/v1/sessions/$1" | jq -r '.provisioning.last_error // ""'; }
new_env() { api "$URL" POST /v1/environments "$1" | jq -r .id; }
new_session() {
	local sid
	sid=$(api "$URL" POST /v1/sessions "{\"agent\":\"$AGENT\",\"environment_id\":\"$1\"}" | jq -r .id)
	echo "$sid" >>"$SESSIONS_FILE"
	echo "$sid"
}
recon() { # recon LOG ARGS...: one reconciler run, appended to LOG
	local log=$1
	shift
	"$RECON" -c "$INI" "$@" >>"$log" 2>&1
}
xc() { "$RECON" -c "$INI" --exec "$@" 2>&1; } # xc SESSION -- CMD...
containers_of() { dk ps -aq --filter "label=terrarium.session=$1" | wc -l; }
container_of() { dk ps -aq --no-trunc --filter "label=terrarium.session=$1" | head -n1; }
cache_images() { dk images -q --filter label=terrarium.cache | sort -u | wc -l; }

AGENT=$(api "$URL" POST /v1/agents '{"name":"docker-test","model":"claude-sonnet-4-5"}' | jq -r .id)

# ---- install: apt + npm ----
echo "# install"
ENV1=$(new_env '{"name":"docker-apt-npm","config":{"type":"cloud","networking":{"type":"unrestricted"},"packages":{"apt":["jq"],"npm":["is-number@7.0.0"]}}}')
S1=$(new_session "$ENV1")
check "install: session pending before the run" test "$(status "$S1")" = pending
recon "$T/install.log" --once
check "install: --once exits 0" test $? -eq 0
check "install: session ready ($(last_error "$S1" | tail -n 3))" test "$(status "$S1")" = ready
out=$(xc "$S1" -- jq -n '1+1')
check "install: jq runs through --exec ($out)" test "$out" = 2
out=$(xc "$S1" -- node -e "console.log(require('is-number')(7))")
check "install: node finds is-number from the workspace ($out)" test "$out" = true
out=$(xc "$S1" -- id -u)
check "install: commands run as the unprivileged user ($out)" test "$out" = 1000
out=$(xc "$S1" -- sh -c 'grep CapEff /proc/self/status')
check "install: with no capabilities ($out)" grep -q '0000000000000000' <<<"$out"
cid=$(container_of "$S1")
hc=$(dk inspect -f '{{.HostConfig.Privileged}} {{.HostConfig.CapDrop}} {{.HostConfig.SecurityOpt}} {{.HostConfig.PidsLimit}} {{.HostConfig.Memory}}' "$cid")
check "install: not privileged, caps dropped, no-new-privileges, pids and memory limits ($hc)" \
	bash -c '[[ $1 == "false [ALL] [no-new-privileges] "[1-9]*" "[1-9]* ]]' _ "$hc"
if [ -r /etc/ssl/certs/ca-certificates.crt ]; then
	out=$(xc "$S1" -- sh -c 'echo "$SSL_CERT_FILE $NODE_EXTRA_CA_CERTS $PIP_CERT $REQUESTS_CA_BUNDLE $CARGO_HTTP_CAINFO $GIT_SSL_CAINFO"; sha256sum < "$SSL_CERT_FILE"')
	want=$(sha256sum </etc/ssl/certs/ca-certificates.crt)
	check "install: the host CA bundle is in the sandbox, named by the six variables" \
		bash -c '[ "$(head -n1 <<<"$1")" = "$(printf "%s " /etc/terrarium/ca-bundle.crt{,,,,,} | sed "s/ $//")" ] && [ "$(tail -n1 <<<"$1")" = "$2" ]' _ "$out" "$want"
	out=$(xc "$S1" -- sh -c 'echo x >> "$SSL_CERT_FILE"' ; echo "rc=$?")
	check "install: the CA bundle is read-only inside" grep -q 'rc=[1-9]' <<<"$out"
fi
# a service on the host's loopback (nginx on 127.0.0.1:$PORT) through the bridge's gateway
gw=$(dk network inspect bridge -f '{{(index .IPAM.Config 0).Gateway}}')
out=$(xc "$S1" -- python3 -c "
import socket
s = socket.socket(); s.settimeout(3)
try:
    s.connect(('$gw', $PORT)); print('reached')
except Exception as e:
    print('refused', type(e).__name__)")
check "install: the host's loopback services are out of reach ($gw:$PORT: $out)" grep -q '^refused' <<<"$out"
out=$(xc "$S1" -- sh -c 'ls /var/lib/apt/lists | grep -c _Packages')
check "install: apt-get update fetched package lists (the image has none): $out" test "${out:-0}" -gt 0

# ---- cache: a second session of the same environment ----
echo "# cache"
check "cache: one entry stored for the environment" grep -q "stored package cache entry" "$T/install.log"
S2=$(new_session "$ENV1")
recon "$T/cache.log" --once
check "cache: second session ready" test "$(status "$S2")" = ready
check "cache: it started from the cache entry" grep -q "sandbox from package cache entry" "$T/cache.log"
check "cache: no install ran for it" bash -c '! grep -q "packages installed" "$1"' _ "$T/cache.log"
out=$(xc "$S2" -- sh -c "jq -n 3 && node -e \"console.log(require('is-number')(1))\"")
check "cache: the same packages work there ($out)" test "$out" = "$(printf '3\ntrue')"
out=$(xc "$S2" -- sh -c 'ls /workspace/node_modules | head -1; id -u')
check "cache: the session's sandbox is its own container" test "$(container_of "$S2")" != "$(container_of "$S1")"

# ---- drift ----
echo "# drift"
dk rm -f "$(container_of "$S1")" >/dev/null
out=$(xc "$S1" -- true; echo "rc=$?")
check "drift: --exec on a removed container says so ($out)" grep -q "no longer exists" <<<"$out"
check "drift: the session is no longer ready" test "$(status "$S1")" = pending
check "drift: last_error says why" grep -q "no longer exists" <<<"$(last_error "$S1")"
recon "$T/drift.log" --once
check "drift: provisioned again -> ready" test "$(status "$S1")" = ready
check "drift: the new container works" test "$(xc "$S1" -- jq -n 5)" = 5
dk rm -f "$(container_of "$S2")" >/dev/null
recon "$T/drift2.log" --once
check "drift: a run's own check noticed the removed container" grep -q "no longer exists" "$T/drift2.log"
check "drift: and provisioned it again in that run" test "$(status "$S2")" = ready
check "drift: one container per session" test "$(containers_of "$S1")$(containers_of "$S2")" = 11

# ---- missing manager ----
echo "# missing"
dk rm -f "nocargo-$$" >/dev/null 2>&1
dk run --name "nocargo-$$" --label terrarium.managed=true --network none --user 0:0 --entrypoint /bin/rm \
	"$IMAGE" -f /usr/bin/cargo >/dev/null 2>&1 && dk commit "nocargo-$$" "$NOCARGO_IMAGE" >/dev/null
dk rm -f "nocargo-$$" >/dev/null 2>&1
sed "s|^image = .*|image = $NOCARGO_IMAGE|" "$INI" >"$T/nocargo.ini"
ENVM=$(new_env '{"name":"docker-nocargo","config":{"type":"cloud","networking":{"type":"unrestricted"},"packages":{"cargo":["ripgrep"]}}}')
SM=$(new_session "$ENVM")
"$RECON" -c "$T/nocargo.ini" --once >"$T/missing.log" 2>&1
p=$(api "$URL" GET "/v1/sessions/$SM")
check "missing: terminated at once, not rescheduled ($(jq -c '[.status, .provisioning.status]' <<<"$p"))" \
	test "$(jq -r .status <<<"$p")" = terminated
check "missing: last_error says the image has no cargo" \
	grep -q "sandbox image has no cargo" <<<"$(jq -r .provisioning.last_error <<<"$p")"
"$RECON" -c "$T/nocargo.ini" --once >>"$T/missing.log" 2>&1
check "missing: a later run does not try again" test "$(grep -c "attempt .* failed" "$T/missing.log")" -eq 1

# ---- resume at pip, with a PyPI simple index on the bridge ----
echo "# resume"
mkdir -p "$T/index/simple/tinypkg"
python3 - "$T/wheel" <<'PY'
import sys, os, zipfile, hashlib, base64
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
name = "tinypkg-1.0-py3-none-any.whl"
files = {
    "tinypkg/__init__.py": "VALUE = 42\n",
    "tinypkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
    "tinypkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: terrarium-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
for p, c in files.items():
    d = base64.urlsafe_b64encode(hashlib.sha256(c.encode()).digest()).rstrip(b"=").decode()
    record.append(f"{p},sha256={d},{len(c.encode())}")
record.append("tinypkg-1.0.dist-info/RECORD,,")
with zipfile.ZipFile(os.path.join(out, name), "w") as z:
    for p, c in files.items():
        z.writestr(p, c)
    z.writestr("tinypkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")
PY
echo '<html><body></body></html>' >"$T/index/simple/tinypkg/index.html"
chmod -R a+rX "$T/index" "$T"
dk rm -f "$INDEX_NAME" >/dev/null 2>&1
dk run -d --name "$INDEX_NAME" --label terrarium.managed=true --network bridge --user 1000:1000 \
	-v "$T/index:/srv:ro" --entrypoint python3 "$IMAGE" -m http.server 8000 --directory /srv >/dev/null
index_ip=$(dk inspect -f '{{.NetworkSettings.IPAddress}}' "$INDEX_NAME")
export PIP_INDEX_URL="http://$index_ip:8000/simple/" PIP_TRUSTED_HOST=$index_ip
ENVR=$(new_env '{"name":"docker-resume","config":{"type":"cloud","networking":{"type":"unrestricted"},"packages":{"npm":["is-number@7.0.0"],"pip":["tinypkg==1.0"]}}}')
SR=$(new_session "$ENVR")
recon "$T/resume1.log" --once
check "resume: a failed pip install exits non-zero" test $? -ne 0
p=$(api "$URL" GET "/v1/sessions/$SR")
check "resume: session rescheduling ($(jq -c '[.status, .provisioning.status]' <<<"$p"))" \
	test "$(jq -r .status <<<"$p")" = rescheduling
err=$(jq -r .provisioning.last_error <<<"$p")
check "resume: last_error names pip and the package" \
	bash -c 'grep -q "pip install: exit status" <<<"$1" && grep -qi "tinypkg" <<<"$1"' _ "$err"
cp "$T/wheel/tinypkg-1.0-py3-none-any.whl" "$T/index/simple/tinypkg/"
chmod a+r "$T/index/simple/tinypkg/"*
echo '<html><body><a href="tinypkg-1.0-py3-none-any.whl">tinypkg-1.0-py3-none-any.whl</a></body></html>' \
	>"$T/index/simple/tinypkg/index.html"
recon "$T/resume2.log" --once
check "resume: the retry exits 0" test $? -eq 0
check "resume: session ready" test "$(status "$SR")" = ready
check "resume: npm was not run again" bash -c '! grep -q "npm packages installed" "$1"' _ "$T/resume2.log"
check "resume: pip ran in the retry" grep -q "pip packages installed" "$T/resume2.log"
out=$(xc "$SR" -- python3 -c "import tinypkg; print(tinypkg.VALUE)")
check "resume: python3 imports the package from the workspace ($out)" test "$out" = 42

# ---- crash: kill -9 during a docker install ----
echo "# crash"
crash_ok=0
for i in $(seq 1 "$CRASH_ROUNDS"); do
	envc=$(new_env "{\"name\":\"docker-crash-$i\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},\"packages\":{\"npm\":[\"is-number@7.0.0\"]}}}")
	sid=$(new_session "$envc")
	# the killed run's lease expires after 2 s
	crash_round "$INI" "$T/crash.log" "$((RANDOM % 3)).$((RANDOM % 10))" 2.2 is_ready "$sid"
	st=$(status "$sid")
	binds=$(grep -c "session $sid ready" "$T/crash.log")
	n=$(containers_of "$sid")
	bound=$(xc "$sid" -- node -e "console.log(require('is-number')(3))")
	if [ "$st" = ready ] && [ "$binds" -eq 1 ] && [ "$n" -eq 1 ] && [ "$bound" = true ]; then
		crash_ok=$((crash_ok + 1))
	else
		echo "  round $i: session $sid status $st, bound $binds times, $n containers, exec: $bound"
	fi
done
check "crash: $crash_ok/$CRASH_ROUNDS sessions ready exactly once with one container" \
	test "$crash_ok" -eq "$CRASH_ROUNDS"

# ---- race: two reconcilers fill one cache entry ----
echo "# race"
ENVX=$(new_env '{"name":"docker-race","config":{"type":"cloud","networking":{"type":"unrestricted"},"packages":{"npm":["is-number@7.0.0"]}}}')
SX1=$(new_session "$ENVX")
SX2=$(new_session "$ENVX")
"$RECON" -c "$INI" --once --limit 1 >"$T/race1.log" 2>&1 &
p1=$!
"$RECON" -c "$INI" --once --limit 1 >"$T/race2.log" 2>&1 &
p2=$!
wait "$p1" "$p2"
check "race: both sessions ready" test "$(status "$SX1")$(status "$SX2")" = readyready
stored=$(cat "$T/race1.log" "$T/race2.log" | grep -o "stored package cache entry [0-9a-f]*" | sort -u)
key=${stored##* }
check "race: one key ($stored)" test "$(wc -l <<<"$stored")" -eq 1
imgs=$(dk images -q --no-trunc --filter "label=terrarium.cache" | sort -u | while read -r i; do
	dk inspect -f '{{index .Config.Labels "terrarium.cache"}}' "$i"; done | grep -c "^$key")
check "race: one image holds the entry, whole (a third session starts from it)" test "$imgs" -eq 1
SX3=$(new_session "$ENVX")
recon "$T/race3.log" --once
check "race: third session ready from the cache" \
	bash -c '[ "$1" = ready ] && grep -q "sandbox from package cache" "$2"' _ "$(status "$SX3")" "$T/race3.log"

# ---- sweep: containers of this deployment that no session owns ----
echo "# sweep"
DEPLOY=$(db_query "$RUN" "SELECT LOWER(HEX(secret)) FROM server_secrets WHERE name = 'deployment'")
check "sweep: the database has a deployment id ($DEPLOY)" test "${#DEPLOY}" -eq 32
check "sweep: sandboxes carry it as a label" \
	test "$(dk inspect -f '{{index .Config.Labels "terrarium.deployment"}}' "$(container_of "$SX3")")" = "$DEPLOY"
ENVW=$(new_env '{"name":"docker-sweep","config":{"type":"cloud","networking":{"type":"unrestricted"}}}')
SW=$(new_session "$ENVW")
recon "$T/sweep0.log" --once
check "sweep: a session without packages is ready" test "$(status "$SW")" = ready
SW_CID=$(container_of "$SW")
# its rows go behind the API's back: its container is now no session's
db_query "$RUN" "DELETE FROM provisioning_intents WHERE session_id = '$SW';
	DELETE FROM session_sandboxes WHERE session_id = '$SW'; DELETE FROM sessions WHERE id = '$SW'"
# one made by hand as ours (never started), one of another stack sharing this Engine
dk create --name "$SWEEP_ORPHAN" --label terrarium.managed=true --label "terrarium.deployment=$DEPLOY" \
	--label "terrarium.session=${SWEEP_ORPHAN#terrarium-}" --network none "$IMAGE" >/dev/null
dk create --name "$SWEEP_OTHER" --label terrarium.managed=true \
	--label terrarium.deployment=00000000000000000000000000000000 \
	--label "terrarium.session=${SWEEP_OTHER#terrarium-}" --network none "$IMAGE" >/dev/null
ORPHAN_CID=$(dk inspect -f '{{.Id}}' "$SWEEP_ORPHAN")
recon "$T/sweep.log" --once
check "sweep: the container of the session whose rows were deleted is removed" \
	test "$(containers_of "$SW")" -eq 0
check "sweep: its removal is logged" grep -q "sweep: removed sandbox $SW_CID: no session owns it (made for $SW)" "$T/sweep.log"
check "sweep: the hand-made container of ours is removed" \
	bash -c '! docker -H "unix://$1" inspect "$2" >/dev/null 2>&1' _ "$SOCK" "$SWEEP_ORPHAN"
check "sweep: its removal is logged" grep -q "sweep: removed sandbox $ORPHAN_CID: no session owns it" "$T/sweep.log"
check "sweep: nothing else was removed ($(grep -c 'sweep: removed' "$T/sweep.log") removals)" \
	test "$(grep -c 'sweep: removed' "$T/sweep.log")" -eq 2
check "sweep: another deployment's container is kept" \
	bash -c 'docker -H "unix://$1" inspect "$2" >/dev/null 2>&1' _ "$SOCK" "$SWEEP_OTHER"
check "sweep: live sessions keep their containers" \
	test "$(containers_of "$S1")$(containers_of "$SX3")" = 11
check "sweep: and they still work" test "$(xc "$SX3" -- node -e "console.log(require('is-number')(4))")" = true
dk rm -f "$SWEEP_OTHER" >/dev/null

# ---- bwrap: the directory backends' cache ----
echo "# bwrap cache"
URL_DOCKER=$URL
URL=http://127.0.0.1:$PORT_B
AGENT_DOCKER=$AGENT
AGENT=$(api "$URL" POST /v1/agents '{"name":"bwrap-cache","model":"claude-sonnet-4-5"}' | jq -r .id)
ENVB=$(new_env '{"name":"bwrap-cache","config":{"type":"cloud","networking":{"type":"unrestricted"},"packages":{"npm":["is-number@7.0.0"]}}}')
SB1=$(new_session "$ENVB")
"$RECON" -c "$RUN/bwrap.ini" --once >"$T/bwrap1.log" 2>&1
check "bwrap: first session ready, entry stored" \
	bash -c '[ "$1" = ready ] && grep -q "stored package cache entry" "$2"' _ "$(status "$SB1")" "$T/bwrap1.log"
SB2=$(new_session "$ENVB")
"$RECON" -c "$RUN/bwrap.ini" --once >"$T/bwrap2.log" 2>&1
check "bwrap: second session ready from the entry, no install" \
	bash -c '[ "$1" = ready ] && grep -q "sandbox from package cache" "$2" && ! grep -q "packages installed" "$2"' _ "$(status "$SB2")" "$T/bwrap2.log"
out=$("$RECON" -c "$RUN/bwrap.ini" --exec "$SB2" -- node -e "console.log(require('is-number')(2))" 2>&1)
check "bwrap: the package works in the second session ($out)" test "$out" = true
"$RECON" -c "$RUN/bwrap.ini" --exec "$SB2" -- sh -c 'echo mine > node_modules/is-number/marker' >/dev/null 2>&1
out=$("$RECON" -c "$RUN/bwrap.ini" --exec "$SB1" -- sh -c 'cat node_modules/is-number/marker 2>/dev/null || echo absent' 2>&1)
check "bwrap: sessions do not share files ($out)" test "$out" = absent
out=$("$RECON" -c "$RUN/bwrap.ini" --exec "$SB2" -- sh -c 'ls -a "$0" 2>&1 | grep -c "^.cache$"' "$RUN/sandboxes" 2>&1)
check "bwrap: the cache is hidden from sandboxes ($out)" test "$out" = 0
api "$URL" DELETE "/v1/sessions/$SB1" >/dev/null
api "$URL" DELETE "/v1/sessions/$SB2" >/dev/null
"$RECON" -c "$RUN/bwrap.ini" --once >"$T/bwrap3.log" 2>&1
api "$URL" DELETE "/v1/environments/$ENVB" >/dev/null
"$RECON" -c "$RUN/bwrap.ini" --once >>"$T/bwrap3.log" 2>&1
check "bwrap: the deleted environment's entry is removed" \
	bash -c 'grep -q "removed entry" "$1" && [ -z "$(ls "$2/.cache" 2>/dev/null)" ]' _ "$T/bwrap3.log" "$RUN/sandboxes"
URL=$URL_DOCKER
AGENT=$AGENT_DOCKER

# ---- lease: renewed while an exec runs, and a lost lease stops it ----
echo "# lease"
# npm replaced by a fake that takes 8 s and writes its start and end to /tmp/npm-calls.log
dk rm -f "slownpm-$$" >/dev/null 2>&1
dk run --name "slownpm-$$" --label terrarium.managed=true --network none --user 0:0 --entrypoint sh \
	"$IMAGE" -c 'p=$(command -v npm || echo /usr/local/bin/npm)
printf "#!/bin/sh\necho \"start \$\$\" >>/tmp/npm-calls.log\nsleep 8\necho \"done \$\$\" >>/tmp/npm-calls.log\n" >"$p"
chmod 755 "$p"' >/dev/null 2>&1 && dk commit "slownpm-$$" "$SLOWNPM_IMAGE" >/dev/null
dk rm -f "slownpm-$$" >/dev/null 2>&1
sed -e "s|^image = .*|image = $SLOWNPM_IMAGE|" -e "s|^lease_seconds = .*|lease_seconds = 3|" \
	"$INI" >"$T/lease.ini"
npm_calls() { dk exec "$(container_of "$1")" cat /tmp/npm-calls.log 2>/dev/null; } # SESSION
install_started() { # SESSION: wait (at most 120 s) until the fake npm has started in it
	local i
	for i in $(seq 1 600); do
		grep -q start <<<"$(npm_calls "$1")" && return 0
		sleep 0.2
	done
	return 1
}
ENVL=$(new_env '{"name":"docker-lease","config":{"type":"cloud","networking":{"type":"unrestricted"},"packages":{"npm":["slow-pkg"]}}}')
SL=$(new_session "$ENVL")
lease_mid_install lease "$RUN" "$T/lease.ini" "$SL" install_started "$T/lease"
calls=$(npm_calls "$SL")
check "lease: one install ($(tr '\n' ' ' <<<"$calls"))" \
	test "$(grep -c start <<<"$calls")$(grep -c "done" <<<"$calls")" = 11
p=$(api "$URL" GET "/v1/sessions/$SL")
check "lease: ready after attempt 1 ($(jq -c '[.provisioning.status, .provisioning.attempts]' <<<"$p"))" \
	test "$(jq -c '[.provisioning.status, .provisioning.attempts]' <<<"$p")" = '["ready",1]'
# the lease taken away mid-install (as another reconciler's claim after an expiry would); an
# environment of its own, so that the session does not start from the first one's cache entry
ENVL2=$(new_env '{"name":"docker-lease-lost","config":{"type":"cloud","networking":{"type":"unrestricted"},"packages":{"npm":["slow-pkg-2"]}}}')
SL2=$(new_session "$ENVL2")
lease_taken lease "$RUN" "$T/lease.ini" "$SL2" install_started "$T/lease-c.log"
sleep 9 # the fake install, had it lived on, would have written "done" by now
calls=$(npm_calls "$SL2")
check "lease: the install's processes were killed in the container ($(tr '\n' ' ' <<<"$calls"))" \
	test "$(grep -c start <<<"$calls")$(grep -c "done" <<<"$calls")" = 10
api "$URL" DELETE "/v1/sessions/$SL2" >/dev/null

# ---- cleanup: teardown, deleted environments, age ----
echo "# cleanup"
before=$(cache_images)
mapfile -t all <"$SESSIONS_FILE"
for sid in "${all[@]}"; do
	api "$URL" DELETE "/v1/sessions/$sid" >/dev/null
done
recon "$T/cleanup.log" --once
left=0
for sid in "${all[@]}"; do
	left=$((left + $(containers_of "$sid")))
done
check "cleanup: ${#all[@]} deleted sessions' containers are gone ($left left)" \
	test "${#all[@]}" -gt 5 -a "$left" -eq 0
check "cleanup: the environment can be deleted once its sessions are gone" \
	test "$(api "$URL" DELETE "/v1/environments/$ENV1" | jq -r .type)" = environment_deleted
db_query "$RUN" "UPDATE sandbox_cache SET last_used_at = UTC_TIMESTAMP(6) - INTERVAL 30 DAY WHERE environment_id = '$ENVR'"
recon "$T/cleanup2.log" --once
check "cleanup: the deleted environment's and the stale entry are removed ($before -> $(cache_images))" \
	test "$(grep -c "removed entry" "$T/cleanup2.log")" -eq 2
rows=$(db_query "$RUN" "SELECT COUNT(*) FROM sandbox_cache WHERE environment_id IN ('$ENV1', '$ENVR')")
check "cleanup: and their rows ($rows left)" test "$rows" = 0

check_summary
