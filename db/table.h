/* What the table families' operations take (the get, list and archive of db/agents.h,
 * environments.h, sessions.h, work.h and vaults.h): the key of a row and the page of a list. The
 * resource table (handlers/resource.h) points at those operations directly and fills these from the
 * request; the db layer reads them. Each table's operations use the fields its visibility rule
 * and filters name. */
#ifndef TERRARIUM_DB_TABLE_H
#define TERRARIUM_DB_TABLE_H

#include "../common/clock.h"

/* Which row an operation is about. */
struct db_key {
	const char *workspace_id;
	const char *account_id; /* environments, sessions: the caller's account, which sees
				 * another account's `scope: account` environments (and their
				 * sessions) as missing; else NULL */
	const char *parent_id;	/* work items: the environment in the path; vault credentials:
				 * the vault; else NULL */
	const char *id;
	long long version; /* agents: the version to read, 0 = current */
};

/* Which rows a list returns: those visible under the key, newest first (sessions: oldest first
 * when ASC), after the cursor's position AFTER_CREATED ("YYYY-MM-DD HH:MM:SS.ffffff") and
 * AFTER_ID, both NULL on the first page; at most db_page_rows of them. */
struct db_page {
	long long limit;			   /* rows on the page */
	int include_archived;			   /* agents, environments, sessions */
	int asc;				   /* sessions: oldest first */
	const char *agent_id;			   /* sessions: only this agent's, or NULL */
	char gte[CLOCK_DB_LEN], lte[CLOCK_DB_LEN]; /* agents: created_at bounds, inclusive
						    * ("" when absent) */
	const char *after_created, *after_id;
};

/* Rows a list fetches for page P: its limit and one more, which tells that a next page exists. */
static inline long long db_page_rows(const struct db_page *p)
{
	return p->limit + 1;
}

#endif
