/* The package cache across sessions of one environment (docs/cache.md).
 *
 * An entry is keyed by the SHA-256 of (backend, base image or root, environment id, captured
 * package lists): the first session to provision a key stores its provisioned sandbox as the
 * entry (backend cache_store: docker commits the container to an image); later sessions with the
 * same key start from it (sbx_spec.from) and skip the installs, and only those: the egress
 * steps and the binding run as for any session. sandbox_cache rows record each entry's last use
 * and environment; runs remove entries unused for [sandbox] cache_max_age_days and entries of
 * deleted environments. */
#include <stdio.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/packages.h"
#include "../db/sandboxes.h"
#include "recon.h"

#define CACHE_KEY_VERSION 1  /* bump when what an entry holds changes */
#define CACHE_PRUNE_BATCH 50 /* stale entries looked at per run */
#define CACHE_SECONDS_PER_DAY 86400L

int recon_cache_enabled(const struct recon *r)
{
	const struct sandbox_backend *o = r->sbx.ops;
	return r->cfg->cache_max_age_days > 0 && o->cache_lookup && o->cache_store &&
	       o->cache_remove;
}

int recon_cache_key(const struct recon *r, const char *environment_id, json_t *packages,
		    char key[RECON_CACHE_KEY_LEN + 1])
{
	const struct sbx *s = &r->sbx;
	json_t *lists = json_object(), *doc;
	unsigned char digest[SHA256_LEN];
	char *text;

	/* empty lists and absent ones provision the same sandbox */
	for (size_t m = 0; m < PKG_MANAGER_COUNT; m++) {
		json_t *l = json_object_get(packages, pkg_managers[m].name);
		if (json_array_size(l))
			json_object_set(lists, pkg_managers[m].name, l);
	}
	doc = json_pack("{s:i, s:s, s:s, s:s, s:o}", "v", CACHE_KEY_VERSION, "backend",
			s->ops->name, "base", s->remote ? s->remote->image : s->root,
			"environment_id", environment_id ? environment_id : "", "packages", lists);
	text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(doc);
	if (!text)
		return -1;
	sha256(text, strlen(text), digest);
	free(text);
	hex_encode(digest, SHA256_LEN, key);
	return 0;
}

void recon_cache_used(struct recon *r, const char *key, const char *environment_id)
{
	char now[CLOCK_DB_LEN];

	clock_now(now, NULL);
	if (scache_touch(r->db, r->sbx.ops->name, key, environment_id ? environment_id : "", now))
		log_warn("package cache: recording use of %.12s: %s", key, db_error(r->db));
}

void recon_cache_prune(struct recon *r)
{
	char before[CLOCK_DB_LEN], err[SBX_ERR_MAX];
	struct db_rows rows;

	if (!recon_cache_enabled(r))
		return;
	clock_in(-r->cfg->cache_max_age_days * CACHE_SECONDS_PER_DAY, before, NULL);
	if (scache_stale(r->db, r->sbx.ops->name, before, CACHE_PRUNE_BATCH, &rows)) {
		log_warn("package cache: listing stale entries: %s", db_error(r->db));
		return;
	}
	for (unsigned i = 0; i < rows.nrows; i++) {
		const char *key = db_cell(&rows, i, 0);
		int rc = sbx_cache_remove(&r->sbx, key, NULL, err, sizeof(err));

		if (rc < 0) {
			log_warn("package cache: removing %.12s: %s", key, err);
		} else if (rc > 0) {
			log_info("package cache: %.12s still used by a sandbox; kept", key);
		} else {
			/* the row goes unless a session used the entry meanwhile (it then stored it
			 * again, or starts from an image the backend keeps while it is used) */
			if (scache_forget(r->db, r->sbx.ops->name, key, before))
				log_warn("package cache: forgetting %.12s: %s", key,
					 db_error(r->db));
			else
				log_info("package cache: removed entry %.12s", key);
		}
	}
	db_rows_free(&rows);
}
