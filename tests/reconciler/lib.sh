# Shared by tests/reconciler/*.sh: the check counters and API call of tests/lib.sh, with the
# API call under the name these scripts use.
# shellcheck shell=bash
# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

api() { api_to "$@"; } # api URL METHOD PATH [BODY]
