/* Validation and normalisation of environment create/update bodies (docs/api.md §3), and the
 * metadata rules shared by environments, sessions and agents. Pure functions: no database,
 * no I/O; every error names the offending field by its full path. */
#ifndef TERRARIUM_ENV_VALIDATE_H
#define TERRARIUM_ENV_VALIDATE_H

#include <jansson.h>

#include "../common/backend.h"
#include "../common/packages.h" /* PKG_MAX_ENTRIES, PKG_ENTRY_MAX */
#include "verr.h"

#define ENV_NAME_MAX 256	 /* characters (code points) */
#define ENV_DESCRIPTION_MAX 1024 /* characters */
#define META_MAX_KEYS 16
#define META_KEY_MAX 64	   /* characters */
#define META_VALUE_MAX 512 /* characters */
#define HOST_NAME_MAX_LEN 253
#define HOST_LABEL_MAX 63
#define ALLOWED_HOSTS_MAX 256

/* The stored, normalised state of an environment's user-settable fields. All members are
 * owned by the struct (env_fields_release frees them). */
struct env_fields {
	char *name;
	json_t *description; /* JSON string or JSON null */
	json_t *metadata;    /* object of string -> string */
	json_t *config;	     /* normalised config exactly as the API object shows it */
	char *scope;	     /* "account", "organization" or NULL */
};

void env_fields_release(struct env_fields *f);

/* Validate a create body (a JSON object) against docs/api.md §3 and backend admission CAPS
 * (NULL CAPS skips admission). Admission runs only after every 400 check passed.
 * On success fills OUT (caller releases) and returns 0; on failure returns -1 with ERR set
 * (400 invalid_request_error, 400 invalid_metadata, or 422 for admission) and OUT untouched. */
int env_validate_create(json_t *body, const struct backend_caps *caps, struct env_fields *out,
			struct verr *err);

/* Apply an update body to CUR (the stored fields). On success CUR holds the merged result,
 * *CHANGED is 1 when any field differs from before (0 for `{}` or a no-op), returns 0. On failure
 * returns -1 with ERR set and CUR unchanged. `scope: null` clears the scope (whatever the
 * resulting type); `metadata: null` changes nothing. Admission (CAPS, NULL skips it) judges
 * the merged config, and only when the body contains `config`. */
int env_validate_update(json_t *body, const struct backend_caps *caps, struct env_fields *cur,
			int *changed, struct verr *err);

/* Validate a metadata object given at FIELD (e.g. "metadata"). NULL or JSON null means empty.
 * Returns a new reference (caller decrefs) or NULL with ERR = 400 invalid_metadata naming
 * every problem. */
json_t *meta_validate(json_t *value, const char *field, struct verr *err);

/* Per-key patch: string upserts, null or "" deletes; limits checked on the merged result.
 * STORED NULL means empty; PATCH NULL or JSON null is an empty patch.
 * Returns a new reference (caller decrefs) or NULL with ERR set. STORED is not modified. */
json_t *meta_patch(json_t *stored, json_t *patch, const char *field, struct verr *err);

/* 1 when S is an acceptable allowed_hosts entry (docs/api.md §3 grammar), else 0. Also refused:
 * IPv4 octets with leading zeros, "*." before an IPv4 literal, an all-numeric last label. */
int host_pattern_valid(const char *s);

/* Number of Unicode code points in the valid UTF-8 string S. */
size_t utf8_chars(const char *s);

#endif
