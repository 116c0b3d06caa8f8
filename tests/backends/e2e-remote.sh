# shellcheck shell=bash
# Sourced by run.sh (part 2, after the OpenSandbox end to end; uses its check, env helpers,
# start_http_fake, reconciler_config, once_ready, once_failing, fake_log, $T, $AGENT): the e2b, cube and daytona drivers
# through the API and the reconciler, each against a fresh protocol fake.
#
# The sessions are created through the API instance of the docker backend: its capability row
# is the same as e2b's, cube's and daytona's (packages, apt included; no limited egress), and the
# intent does not name a backend; the reconciler's configuration does. For each backend:
# an unrestricted environment with apt and pip packages -> one `--once` -> ready, the fake saw one
# sandbox under the session's name, created with the network, and both installs; --exec runs in
# it; a failing install -> rescheduling with the cause and without the API key; deleting the
# sessions -> the sandboxes are gone; the sweep (run.sh, sweep_e2e); no protocol violations.
# Then http_lease (below) for e2b and opensandbox.

e2e_remote() { # BACKEND FAKE-SCRIPT
	local b=$1 fake=$2
	local dir="$T/e2e-$b" base url env sid sid_f log n
	local URL=$TERRARIUM_URL_docker # read by the API calls of run.sh's helpers
	mkdir -p "$dir"
	if ! start_http_fake "$dir" "$fake" key_; then
		not_ok "e2e $b: the fake started"
		return
	fi
	base=$FAKE_URL
	url=$base
	[ "$b" = daytona ] && url=$base/api
	reconciler_config "$dir" "$b" url="$url" api_key_file="$dir/api.key" timeout_seconds=10

	read -r env sid <<<"$(env_session "{\"name\":\"backends-e2e-$b\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},\"packages\":{\"apt\":[\"jq\"],\"pip\":[\"requests\"]}}}")"
	check "e2e $b: unrestricted environment with apt + pip, and a session ($env $sid)" \
		bash -c '[[ $1 == env_* && $2 == sesn_* ]]' _ "$env" "$sid"
	once_ready "e2e $b" "$dir" "$sid"

	log=$(fake_log "$base/__fake/log")
	# the fakes' records: e2b keeps the name in metadata, daytona in labels
	n=$(jq --arg s "$sid" '[.sandboxes[] | select(.metadata.terrarium_sandbox == $s or .labels.terrarium_sandbox == $s)] | length' <<<"$log")
	check "e2e $b: one sandbox in the fake carries the session's name ($n)" test "$n" = 1
	check "e2e $b: it was created with the network (unrestricted policy)" \
		test "$(jq --arg s "$sid" '[.sandboxes[] | select(.metadata.terrarium_sandbox == $s or .labels.terrarium_sandbox == $s) | (if has("allowInternet") then .allowInternet else (.networkBlockAll | not) end)] == [true]' <<<"$log")" = true
	check "e2e $b: apt-get install jq and pip install requests ran in it" \
		test "$(jq -c --arg s "$sid" '[.sandboxes[] | select(.metadata.terrarium_sandbox == $s or .labels.terrarium_sandbox == $s) | .installed[]]' <<<"$log")" = '["apt-get jq","pip requests"]'
	exec_hello "e2e $b" "$dir" "$sid"

	read -r _ sid_f <<<"$(env_session "{\"name\":\"backends-e2e-$b-failing\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},\"packages\":{\"pip\":[\"fail-pkg\"]}}}")"
	once_failing "e2e $b" "$dir" "$sid_f" 100 "Unable to locate package fail-pkg"

	teardown_sessions "$dir" "$sid" "$sid_f"
	log=$(fake_log "$base/__fake/log")
	n=$(jq --arg s "$sid" '[.sandboxes[] | select((.metadata.terrarium_sandbox == $s or .labels.terrarium_sandbox == $s) and .state != "destroyed")] | length' <<<"$log")
	check "e2e $b: deleting the session removed its sandbox ($n left)" test "$n" = 0
	n=$(jq -c .violations <<<"$log")
	check "e2e $b: the fake recorded no protocol violations ($n)" test "$n" = "[]"

	# e2b's fake forgets a deleted sandbox, daytona's keeps it as destroyed
	sweep_e2e "e2e $b" "$dir" "$base/__fake/log" \
		'[.sandboxes[] | select((.id // .sandboxID) == $id and .state != "destroyed")] | length == 1'
	n=$(fake_log "$base/__fake/log" | jq -c .violations)
	check "e2e $b: the fake recorded no protocol violations in the sweep ($n)" test "$n" = "[]"
}

# http_lease BACKEND FAKE-SCRIPT KEY-PREFIX [KEY=VALUE...]: the lease kept and lost during an
# HTTP driver's call (tests/lib-lease.sh; lease 3 s, a pip install of 8 s: the fakes' package
# slow-8). A second reconciler started mid-install finds nothing to do (the lease's expiry in
# the database moves while the call runs): one install, ready after attempt 1. Then a lease
# taken away mid-install (slow-9): the run says so and stops, and the fake's process was killed
# (e2b: envd's SendSignal SIGKILL; opensandbox: execd's DELETE /command?id=) before it finished.
http_lease() {
	local b=$1 fake=$2 prefix=$3 dir="$T/lease-$1" base sid sid2 p log n pkg=slow-8
	# shellcheck disable=SC2034 # read by the API calls of run.sh's helpers
	local URL=$TERRARIUM_URL_docker
	shift 3
	# shellcheck source=tests/lib-lease.sh
	. "$ROOT/tests/lib-lease.sh"
	mkdir -p "$dir"
	if ! start_http_fake "$dir" "$fake" "$prefix"; then
		not_ok "lease $b: the fake started"
		return
	fi
	base=$FAKE_URL
	reconciler_config "$dir" "$b" url="$base" api_key_file="$dir/api.key" timeout_seconds=10 "$@"
	printf '\n[reconciler]\nlease_seconds = 3\n' >>"$dir/reconciler.ini"
	pip_pid() { # the id of the fake's pip process installing $pkg, or nothing
		fake_log "$base/__fake/log" |
			jq -r --arg p "$pkg" '[.processes[] | select(.argv[0] == "pip" and .argv[-1] == $p)][0].pid // empty'
	}
	pip_started() { # SESSION: wait (at most 60 s) until pip installs $pkg in the fake
		for _ in $(seq 1 300); do
			[ -n "$(pip_pid)" ] && return 0
			sleep 0.2
		done
		return 1
	}
	read -r _ sid <<<"$(env_session "{\"name\":\"backends-lease-$b\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},\"packages\":{\"pip\":[\"slow-8\"]}}}")"
	lease_mid_install "lease $b" "$TERRARIUM_RUN" "$dir/reconciler.ini" "$sid" pip_started "$dir/run"
	log=$(fake_log "$base/__fake/log")
	n=$(jq '[.processes[] | select(.argv[0] == "pip")] | length' <<<"$log")
	check "lease $b: one install ($n)" test "$n" = 1
	p=$(provisioning "$sid")
	check "lease $b: ready after attempt 1 ($(jq -c '[.p.status, .p.attempts]' <<<"$p"))" \
		test "$(jq -c '[.p.status, .p.attempts]' <<<"$p")" = '["ready",1]'

	read -r _ sid2 <<<"$(env_session "{\"name\":\"backends-lease-$b-lost\",\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},\"packages\":{\"pip\":[\"slow-9\"]}}}")"
	pkg=slow-9
	lease_taken "lease $b" "$TERRARIUM_RUN" "$dir/reconciler.ini" "$sid2" pip_started "$dir/c.log"
	p=$(pip_pid)
	for _ in $(seq 1 50); do # the fake's install notices a kill within 0.1 s
		log=$(fake_log "$base/__fake/log")
		[ "$(jq -r --arg p "$p" '[.processes[] | select((.pid | tostring) == $p) | .state][0]' <<<"$log")" != running ] && break
		sleep 0.1
	done
	check "lease $b: the kill reached the install, which never finished ($(jq -c '[.processes[] | select(.argv[0] == "pip") | .state]' <<<"$log"))" \
		test "$(jq --arg p "$p" '[.processes[] | select((.pid | tostring) == $p) | .state] == ["killed"]' <<<"$log")" = true
	teardown_sessions "$dir" "$sid" "$sid2"
	n=$(fake_log "$base/__fake/log" | jq -c .violations)
	check "lease $b: the fake recorded no protocol violations ($n)" test "$n" = "[]"
}

if [ -z "${TERRARIUM_URL_docker:-}" ]; then
	echo "skipped: e2b, cube and daytona end to end (needs TERRARIUM_URL_docker from tests/e2e/run.sh)"
else
	echo "# end to end: backends e2b, cube and daytona through the API and the reconciler"
	e2e_remote e2b fake-e2b.mjs
	e2e_remote cube fake-e2b.mjs
	e2e_remote daytona fake-daytona.mjs
	echo "# lease kept and lost during an HTTP driver's call (e2b, opensandbox)"
	http_lease e2b fake-e2b.mjs key_
	http_lease opensandbox fake-opensandbox.mjs "" image=python:3.11-slim
fi
