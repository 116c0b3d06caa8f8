# shellcheck shell=bash
# lib-lease.sh: the steps of the lease test (docs/sandbox.md, Leases) shared by the backends'
# suites, tests/docker/run.sh and tests/backends/e2e-remote.sh (sourced). Needs db_sql and
# STACK_DB_NAME (scripts/lib-stack.sh) and $RECON. WAIT is a function: WAIT SESSION returns 0
# once the session's (slow) install runs, 1 when it did not start in time.
#   lease_end RUN SESSION     the lease expiry of SESSION's claimed intent
#   lease_mid_install RUN INI SESSION WAIT LOG
#       a reconciler --once (LOG.a) in the background; WAIT; the lease expiry read, and again
#       4 s later (past a 3 s lease: only renewals keep it), then a second --once (LOG.b); both
#       waited. Sets LEASE_STARTED (WAIT's status), LEASE_RC ("A B" exit statuses),
#       LEASE_BEFORE and LEASE_AFTER.
#   lease_taken RUN INI SESSION WAIT LOG
#       a reconciler --once (LOG) in the background; WAIT; its claim then handed to another
#       owner in the database, as another reconciler's claim after an expiry would; waited.
#       Sets LEASE_STARTED.

lease_end() { # RUN SESSION
	db_sql "$1" "$STACK_DB_NAME" -N -e "SELECT lease_expires_at FROM provisioning_intents
		WHERE session_id = '$2' AND state = 'claimed'"
}

lease_mid_install() { # RUN INI SESSION WAIT LOG
	local run=$1 ini=$2 sid=$3 wait_fn=$4 log=$5 pid rc_b
	"$RECON" -c "$ini" --once >"$log.a" 2>&1 &
	pid=$!
	"$wait_fn" "$sid"
	LEASE_STARTED=$?
	LEASE_BEFORE=$(lease_end "$run" "$sid")
	sleep 4
	LEASE_AFTER=$(lease_end "$run" "$sid")
	"$RECON" -c "$ini" --once >"$log.b" 2>&1
	rc_b=$?
	wait "$pid"
	LEASE_RC="$? $rc_b"
}

lease_taken() { # RUN INI SESSION WAIT LOG
	local run=$1 ini=$2 sid=$3 wait_fn=$4 log=$5 pid
	"$RECON" -c "$ini" --once >"$log" 2>&1 &
	pid=$!
	"$wait_fn" "$sid"
	LEASE_STARTED=$?
	db_sql "$run" "$STACK_DB_NAME" -e "UPDATE provisioning_intents SET lease_owner =
		'another-reconciler' WHERE session_id = '$sid' AND state = 'claimed'"
	wait "$pid"
}
