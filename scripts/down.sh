#!/usr/bin/env bash
# `make down`: stop what scripts/up.sh started under RUNDIR (default ./var), by the PIDs in its
# pid files: nginx, the API supervisor(s), the reconciler, MariaDB, and a dockerd `make up`
# started (its containers stop with it). Data, key and logs stay in RUNDIR.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN=${RUNDIR:-$ROOT/var}
if [ ! -d "$RUN" ]; then
	echo "down: $RUN does not exist: nothing to stop" >&2
	exit 0
fi
RUN=$(cd "$RUN" && pwd)

# shellcheck source=scripts/lib-stack.sh
. "$ROOT/scripts/lib-stack.sh"

stack_stop_all "$RUN"
echo "down: stopped (data kept in $RUN)" >&2
