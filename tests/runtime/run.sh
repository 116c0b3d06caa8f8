#!/usr/bin/env bash
# Sessions that run (docs/runner.md, docs/work-queue.md): terrarium-runner, the agent toolset in
# the sandboxes, self-hosted workers, against the scripted fake model (tests/fake-model), through
# the official SDK. tests/e2e/run.sh runs it against the stack it started.
#
# A runner takes the turns of every session of its database and runs their tools with its own
# backend, so the phases below run one after the other, each with only its own runners (started
# here with scripts/lib-stack.sh runner_start, stopped by PID after):
#   local    two runners of the local API; at once: toolset.test.mjs (the agent toolset, an
#            interrupt), turns.test.mjs (always_ask, custom tools, interrupts, queued messages,
#            parallel calls, model retries, idle timeout), load.test.mjs (50 sessions),
#            selfhosted.test.mjs (the SDK's EnvironmentWorker, tokens, result rules)
#   crash    crash.test.mjs alone: it starts and kills -9 its own runners (a 1 s lease)
#   crash-bwrap  the same with the bwrap backend's runners
#   overdue  overdue.test.mjs, one runner with a 2 s [runner] tool_result_timeout_seconds
#   hosttools  hosttools.test.mjs, one runner of the local API without [runner] host_tools: the
#            model's tools are refused on a backend without isolation
#   bwrap    toolset.test.mjs (also an interrupt and npm packages), a 1 s turn lease: no turn is
#            taken over while it provisions
#   srt      toolset.test.mjs, likewise
#   docker   toolset.test.mjs (also npm packages): when this host can run a Docker Engine, as
#            tests/docker/run.sh decides (root, dockerd installed, the shared Engine starts);
#            the sandbox image from sandbox-image/build.sh; the containers and cache images it
#            made are removed after
# A backend without a URL in the environment is skipped. At the end the fake model must have
# refused no request (a malformed request is a runner bug).
#
# Needs (from tests/e2e/run.sh): TERRARIUM_RUN, TERRARIUM_URL(_<backend>), TERRARIUM_KEY,
# TERRARIUM_CONFIG, FAKE_MODEL_URL (the fake the APIs' [model] base_url names). Installs the
# locked dependencies (npm ci: the SDK, and Node 22 for the worker) when they are missing or
# older than the lock. CRASH_ROUNDS (default 20), RUNTIME_LOAD_SESSIONS (default 50),
# RUNTIME_PHASES (default "local crash crash-bwrap overdue hosttools bwrap srt docker").
# Prints "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/lib-stack.sh
. "$ROOT/scripts/lib-stack.sh"
RUN=${TERRARIUM_RUN:?TERRARIUM_RUN is required}
: "${TERRARIUM_URL:?}" "${TERRARIUM_KEY:?}" "${TERRARIUM_CONFIG:?}" "${FAKE_MODEL_URL:?}"
CRASH_LEASE_S=1    # the crash phase's [runner] lease_seconds
RESULT_TIMEOUT_S=2 # the overdue phase's [runner] tool_result_timeout_seconds
SHORT_LEASE_S=1    # the bwrap and srt phases' [runner] lease_seconds: shorter than an install
cd "$ROOT/tests/runtime" || exit 1

# shellcheck source=tests/lib-npm.sh
. "$ROOT/tests/lib-npm.sh"
npm_locked "$ROOT/tests/runtime" || exit 1
# the SDK reads ANTHROPIC_* variables: only the TERRARIUM_* settings apply
while IFS= read -r var; do
	unset "$var"
done < <(env | sed -n 's/^\(ANTHROPIC_[A-Za-z0-9_]*\)=.*/\1/p')

passed=0
failed=0
RUNNERS=()
stop_runners() {
	local id
	for id in "${RUNNERS[@]}"; do
		runner_stop "$RUN" "$id"
	done
	RUNNERS=()
}
DOCKER_CLEAN=0
cleanup() {
	stop_runners
	[ "$DOCKER_CLEAN" = 1 ] && docker_clean
	[ -n "${STACK_DOCKER_USERS_FD:-}" ] && docker_engine_release
}
trap cleanup EXIT

url_of() { # BACKEND: its API's URL, or nothing
	local v="TERRARIUM_URL_$1"
	printf '%s' "${!v:-}"
}

# phase NAME BACKEND CONFIG RUNNERS FILE...: RUNNERS runners of CONFIG (RUN/CONFIG.ini), the
# files under node --test at once against BACKEND's API, the runners stopped.
phase() {
	local name=$1 backend=$2 config=$3 n=$4 i out rc t0=$SECONDS p f
	shift 4
	printf '# phase %s (backend %s)\n' "$name" "$backend"
	for ((i = 1; i <= n; i++)); do
		runner_start "$RUN" "$config" "runtime-$name-$i" || {
			not_ok "$name: runner $i starts"
			stop_runners
			return
		}
		RUNNERS+=("runtime-$name-$i")
	done
	out=$(mktemp)
	RUNTIME_BACKEND=$backend node --test --test-concurrency="$#" --test-reporter=spec "$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	stop_runners
	p=$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$out" | tail -n 1)
	f=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$out" | tail -n 1)
	rm -f "$out"
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	if [ "$rc" -ne 0 ] && [ "${f:-0}" = 0 ]; then
		not_ok "$name: node --test exited $rc"
	fi
	printf '# phase %s: %s passed, %s failed, %d s\n' "$name" "${p:-0}" "${f:-?}" $((SECONDS - t0))
}
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $*"
}

# derived_config NAME BASE LINES...: RUN/runtime-NAME.ini, the configuration RUN/BASE.ini with
# LINES after it (where they win), mode 0600 as the API's.
derived_config() {
	local name=$1 base=$2
	shift 2
	(
		umask 077
		{
			cat "$RUN/$base.ini"
			printf '\n; tests/runtime/run.sh: the %s phase\n' "$name"
			printf '%s\n' "$@"
		} >"$RUN/runtime-$name.ini"
	)
}

# The docker phase's Engine and image, and its runner's configuration (the docker API's, with
# the Engine's socket and the image). 1 (with the reason) when this host cannot run one.
docker_setup() {
	local image
	[ "$(id -u)" -eq 0 ] || { echo "# docker skipped: not root"; return 1; }
	command -v dockerd >/dev/null || [ -x /usr/sbin/dockerd ] ||
		{ echo "# docker skipped: dockerd is not installed"; return 1; }
	docker_engine_shared || { echo "# docker skipped: dockerd cannot start here"; return 1; }
	image=$(DOCKER_SOCKET=$STACK_DOCKER_SOCKET "$ROOT/sandbox-image/build.sh") ||
		{ not_ok "docker: the sandbox image builds"; return 1; }
	DOCKER_CLEAN=1
	derived_config docker docker '[docker]' "socket = $STACK_DOCKER_SOCKET" "image = $image"
}
# Remove what the docker phase made in the shared Engine: the containers labelled with this
# database's deployment, the package cache images of its entries.
docker_clean() {
	local dep dk=(docker -H "unix://$STACK_DOCKER_SOCKET")
	DOCKER_CLEAN=0
	dep=$(db_sql "$RUN" terrarium -N -e \
		"SELECT LOWER(HEX(secret)) FROM server_secrets WHERE name = 'deployment'") || return 1
	[ -n "$dep" ] || return 1
	"${dk[@]}" ps -aq --filter "label=terrarium.deployment=$dep" | xargs -r "${dk[@]}" rm -f >/dev/null
	db_sql "$RUN" terrarium -N -e "SELECT cache_key FROM sandbox_cache WHERE backend = 'docker'" |
		sed 's/^/terrarium-cache:/' | xargs -r "${dk[@]}" rmi >/dev/null 2>&1
	return 0
}

read -ra PHASES <<<"${RUNTIME_PHASES:-local crash crash-bwrap overdue hosttools bwrap srt docker}"
for ph in "${PHASES[@]}"; do
	case "$ph" in
	local)
		phase local local local 2 toolset.test.mjs turns.test.mjs load.test.mjs selfhosted.test.mjs
		;;
	crash)
		derived_config crash local '[runner]' "lease_seconds = $CRASH_LEASE_S" ||
			{ not_ok "crash: its configuration"; continue; }
		RUNTIME_CRASH_CONFIG=$RUN/runtime-crash.ini phase crash local runtime-crash 0 crash.test.mjs
		;;
	crash-bwrap)
		# the same on bwrap: a tool killed with its runner is one whose sandbox (its view's
		# overlay, slirp4netns) goes with it; the markers are read from the sandbox's directory
		if [ -z "$(url_of bwrap)" ]; then
			echo "# crash-bwrap skipped: TERRARIUM_URL_bwrap is not set"
			continue
		fi
		derived_config crash-bwrap bwrap '[runner]' "lease_seconds = $CRASH_LEASE_S" ||
			{ not_ok "crash-bwrap: its configuration"; continue; }
		# the sandboxes' directory as the binary reads its configuration
		root=$(api_setting "$RUN" runtime-crash-bwrap sandbox root) && [ -n "$root" ] ||
			{ not_ok "crash-bwrap: [sandbox] root of its configuration"; continue; }
		RUNTIME_CRASH_CONFIG=$RUN/runtime-crash-bwrap.ini RUNTIME_CRASH_SANDBOX_ROOT=$root \
			phase crash-bwrap bwrap runtime-crash-bwrap 0 crash.test.mjs
		;;
	overdue)
		derived_config overdue local '[runner]' "tool_result_timeout_seconds = $RESULT_TIMEOUT_S" ||
			{ not_ok "overdue: its configuration"; continue; }
		RUNTIME_RESULT_TIMEOUT_S=$RESULT_TIMEOUT_S phase overdue local runtime-overdue 1 overdue.test.mjs
		;;
	hosttools)
		derived_config hosttools local '[runner]' "host_tools = 0" ||
			{ not_ok "hosttools: its configuration"; continue; }
		phase hosttools local runtime-hosttools 1 hosttools.test.mjs
		;;
	bwrap | srt)
		if [ -z "$(url_of "$ph")" ]; then
			echo "# $ph skipped: TERRARIUM_URL_$ph is not set"
			continue
		fi
		# a turn lease shorter than the first turn's provisioning (npm): the turn keeps it
		# while it provisions, no other turn process takes the session over
		derived_config "$ph" "$ph" '[runner]' "lease_seconds = $SHORT_LEASE_S" ||
			{ not_ok "$ph: its configuration"; continue; }
		phase "$ph" "$ph" "runtime-$ph" 1 toolset.test.mjs
		if grep -q "the turn is not this runner's any more" "$RUN/runtime-$ph-1.log"; then
			not_ok "$ph: a turn kept its $SHORT_LEASE_S s lease while it provisioned (runtime-$ph-1.log)"
		else
			passed=$((passed + 1))
			echo "ok - $ph: a turn kept its $SHORT_LEASE_S s lease while it provisioned"
		fi
		;;
	docker)
		if [ -z "$(url_of docker)" ]; then
			echo "# docker skipped: TERRARIUM_URL_docker is not set"
			continue
		fi
		docker_setup || continue
		phase docker docker runtime-docker 1 toolset.test.mjs
		docker_clean || not_ok "docker: this run's containers and images removed"
		;;
	*) not_ok "RUNTIME_PHASES: unknown phase '$ph'" ;;
	esac
done

# The fake refused nothing of this part's sessions (it checks every request as the Messages
# API does): their requests hold a token of lib.mjs. Turns that other parts left pending were
# run too; what it refused of those is shown, not counted here.
curl -s "$FAKE_MODEL_URL/__fake/log" >"$RUN/runtime-fake.json"
mine=$(jq -c '(.requests | map({key: (.seq | tostring), value: (.body | tostring)}) | from_entries)
	as $body | [.violations[] | select(($body[capture("^request (?<n>[0-9]+):").n] // "")
	| test("\\brt[a-z0-9]+t[0-9a-f]{10}\\b"))]' "$RUN/runtime-fake.json")
others=$(jq '.violations | length' "$RUN/runtime-fake.json")
if [ "$mine" = "[]" ]; then
	passed=$((passed + 1))
	echo "ok - the fake model refused no request of this part's sessions"
else
	not_ok "the fake model refused requests of this part's sessions: ${mine:0:2000}"
fi
if [ "$others" != 0 ]; then
	echo "# the fake model refused $others request(s) in all (other parts' pending turns too):"
	jq -r '.violations[]' "$RUN/runtime-fake.json" | head -n 20 | sed 's/^/#   /'
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
