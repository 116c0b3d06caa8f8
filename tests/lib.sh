# Helpers shared by the shell test scripts that call the API (source it): the stack's helpers
# (scripts/lib-stack.sh: `api URL METHOD PATH [BODY]` calls the API with $KEY, db_sql, ...), the
# check counters of tests/lib-check.sh (check, ok, not_ok; a script ends with check_summary) and
#   e2e_part                        the settings of a part of tests/e2e/run.sh (RUN, URL, BUILD)
#   e2e_sql QUERY                   a query on that stack's database
# shellcheck shell=bash
# shellcheck source=scripts/lib-stack.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib-stack.sh"
# shellcheck source=tests/lib-check.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib-check.sh"

# e2e_part: what a part of tests/e2e/run.sh takes from it: RUN (TERRARIUM_RUN, the stack's
# directory), URL (TERRARIUM_URL, the API of its first backend), BUILD (BUILD_DIR, default build,
# relative to the repository); KEY must be set too. A missing one ends the script, named.
e2e_part() {
	# shellcheck disable=SC2034 # read by callers
	RUN=${TERRARIUM_RUN:?} URL=${TERRARIUM_URL:?}
	: "${KEY:?}"
	# shellcheck disable=SC2034
	BUILD=${BUILD_DIR:-build}
}

# e2e_sql QUERY: QUERY on the database of that stack (RUN/mysql.sock) as the MariaDB
# administrator; rows tab-separated, without column names.
e2e_sql() {
	db_query "$RUN" "$1"
}
