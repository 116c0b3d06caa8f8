# shellcheck shell=bash
# lib-lease.sh: the steps of the lease and crash tests (docs/sandbox.md, Leases) shared by the
# backends' suites, tests/docker/run.sh, tests/reconciler/run.sh and tests/backends/e2e-remote.sh
# (sourced). Needs db_query (scripts/lib-stack.sh), check (tests/lib-check.sh)
# and $RECON. WAIT is a function: WAIT SESSION returns 0 once the session's (slow) install runs,
# 1 when it did not start in time. NAME prefixes the checks.
#   lease_end RUN SESSION     the lease expiry of SESSION's claimed intent
#   lease_mid_install NAME RUN INI SESSION WAIT LOG
#       a reconciler --once (LOG.a) in the background; WAIT; the lease expiry read, and again
#       4 s later (past a 3 s lease: only renewals keep it), then a second --once (LOG.b); both
#       waited. Checks: the install started, both runs exit 0, the expiry moved.
#   lease_taken NAME RUN INI SESSION WAIT LOG
#       a reconciler --once (LOG) in the background; WAIT; its claim then handed to another
#       owner in the database, as another reconciler's claim after an expiry would; waited.
#       Checks: the install started, the run logged the lost lease while its command ran.
#   crash_round INI LOG KILL_AFTER PAUSE READY SESSION
#       a reconciler --once (INI, output appended to LOG) in the background, killed (-9) after
#       KILL_AFTER seconds; then, until READY SESSION succeeds, at most CRASH_ROUND_RUNS more
#       --once runs, each PAUSE seconds after the last (the killed run's lease must expire
#       first). No checks: the caller looks at what the rounds left.

lease_end() { # RUN SESSION
	db_query "$1" "SELECT lease_expires_at FROM provisioning_intents
		WHERE session_id = '$2' AND state = 'claimed'"
}

lease_mid_install() { # NAME RUN INI SESSION WAIT LOG
	local name=$1 run=$2 ini=$3 sid=$4 wait_fn=$5 log=$6 pid started before after rc_b rc_a
	"$RECON" -c "$ini" --once >"$log.a" 2>&1 &
	pid=$!
	"$wait_fn" "$sid"
	started=$?
	before=$(lease_end "$run" "$sid")
	sleep 4
	after=$(lease_end "$run" "$sid")
	"$RECON" -c "$ini" --once >"$log.b" 2>&1
	rc_b=$?
	wait "$pid"
	rc_a=$?
	check "$name: the install started" test "$started" -eq 0
	check "$name: both runs exit 0 ($rc_a, $rc_b)" test "$rc_a$rc_b" = 00
	check "$name: renewed while the install ran ($before -> $after)" \
		bash -c '[[ -n $1 && $2 > $1 ]]' _ "$before" "$after"
}

lease_taken() { # NAME RUN INI SESSION WAIT LOG
	local name=$1 run=$2 ini=$3 sid=$4 wait_fn=$5 log=$6 pid started
	"$RECON" -c "$ini" --once >"$log" 2>&1 &
	pid=$!
	"$wait_fn" "$sid"
	started=$?
	db_query "$run" "UPDATE provisioning_intents SET lease_owner =
		'another-reconciler' WHERE session_id = '$sid' AND state = 'claimed'"
	wait "$pid"
	check "$name: the second install started" test "$started" -eq 0
	check "$name: the run noticed the lost lease and stopped the command" \
		grep -q "lease lost while a command ran" "$log"
}

CRASH_ROUND_RUNS=6 # crash_round: runs after the killed one before the session must be ready

crash_round() { # INI LOG KILL_AFTER PAUSE READY SESSION
	local ini=$1 log=$2 kill_after=$3 pause=$4 ready=$5 sid=$6 pid i
	"$RECON" -c "$ini" --once >>"$log" 2>&1 &
	pid=$!
	sleep "$kill_after"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	for ((i = 0; i < CRASH_ROUND_RUNS; i++)); do
		"$ready" "$sid" && break
		sleep "$pause"
		"$RECON" -c "$ini" --once >>"$log" 2>&1
	done
}
