/* Bound sandboxes as the reconciler keeps them healthy: package cache entries (sandbox_cache)
 * and drift (a bound sandbox that no longer exists is provisioned again). */
#ifndef TERRARIUM_DB_SANDBOXES_H
#define TERRARIUM_DB_SANDBOXES_H

#include "db.h"

/* Record a use of cache entry (BACKEND, KEY) of ENVIRONMENT_ID at NOW: inserted when new, its
 * last use moved to NOW otherwise. */
enum db_status scache_touch(struct db *db, const char *backend, const char *key,
			    const char *environment_id, const char *now);

/* Up to MAX entries of BACKEND unused since BEFORE or whose environment was deleted: rows of
 * (cache_key). */
enum db_status scache_stale(struct db *db, const char *backend, const char *before, int max,
			    struct db_rows *rows);

/* Forget entry (BACKEND, KEY), if it was not used since BEFORE (a use racing the removal keeps
 * the row; the next run looks at it again). */
enum db_status scache_forget(struct db *db, const char *backend, const char *key,
			     const char *before);

/* Up to MAX bindings of BACKEND checked longest ago (never checked first): rows of (session_id,
 * sandbox_id). */
enum db_status drift_candidates(struct db *db, const char *backend, int max, struct db_rows *rows);

/* SESSION_ID's binding to SANDBOX_ID was checked at NOW and found present. */
enum db_status drift_checked(struct db *db, const char *session_id, const char *now);

/* SESSION_ID's bound sandbox SANDBOX_ID is gone: in one transaction, when the binding still
 * names it, remove the binding and make the provision intent due now from the start (no steps
 * done, a fresh attempt budget) with LAST_ERROR; the session goes to rescheduling. *RESET = 1
 * when this call did it (0: already handled, or no such binding). */
enum db_status drift_reprovision(struct db *db, const char *session_id, const char *sandbox_id,
				 const char *last_error, const char *now, int *reset);

#endif
