/* Drift: a bound sandbox that no longer exists (removed behind the reconciler's back, its
 * host's Engine reset) is noticed by `--exec` and by a bounded check in every run, and its
 * session is provisioned again from its captured configuration, never left "ready". */
#include <stdio.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/sandboxes.h"
#include "recon.h"

int recon_drift_found(struct recon *r, const char *session_id, const char *sandbox_id)
{
	char now[CLOCK_DB_LEN], why[SBX_ERR_MAX];
	int reset = 0;

	snprintf(why, sizeof(why),
		 "sandbox %.80s of this session no longer exists (%s backend; removed outside "
		 "terrarium?): provisioning it again",
		 sandbox_id, r->sbx.ops->name);
	clock_now(now, NULL);
	if (drift_reprovision(r->db, session_id, sandbox_id, why, now, &reset)) {
		log_error("drift: session %s: %s", session_id, db_error(r->db));
		return -1;
	}
	if (reset)
		log_warn("session %s: %s", session_id, why);
	return reset;
}

int recon_drift_check(struct recon *r, int max)
{
	char now[CLOCK_DB_LEN], err[SBX_ERR_MAX];
	struct db_rows rows;
	int found = 0;

	if (!r->sbx.ops->exists)
		return 0;
	if (drift_candidates(r->db, r->sbx.ops->name, max, &rows)) {
		log_warn("drift: listing bindings: %s", db_error(r->db));
		return 0;
	}
	clock_now(now, NULL);
	for (unsigned i = 0; i < rows.nrows; i++) {
		const char *session = db_cell(&rows, i, 0), *sandbox = db_cell(&rows, i, 1);
		int rc = sbx_exists(&r->sbx, sandbox, NULL, err, sizeof(err));

		if (rc < 0) {
			log_warn("drift: session %s: cannot tell whether %.80s exists: %s", session,
				 sandbox, err);
		} else if (rc == 0) {
			found += recon_drift_found(r, session, sandbox) > 0;
		} else if (drift_checked(r->db, session, now)) {
			log_warn("drift: session %s: %s", session, db_error(r->db));
		}
	}
	db_rows_free(&rows);
	return found;
}
