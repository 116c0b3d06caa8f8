/* Sandbox backend table (docs/design.md, Backends): every backend the configuration may name and
 * what each can enforce. The API's admission rules, the configuration's per-backend sections
 * and the reconciler's driver selection all read it. */
#ifndef TERRARIUM_BACKEND_H
#define TERRARIUM_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

/* rows in the table (backend.c checks the count at compile time) */
#define BACKEND_TABLE_LEN 8

struct backend_caps {
	const char *name;
	bool packages;	     /* non-empty package lists can be installed */
	bool apt;	     /* apt packages can be installed (bwrap cannot) */
	bool limited_egress; /* a limited network policy can be enforced */
	bool http;	     /* reached over HTTP: configured by its own [NAME] section */
	/* commands run apart from the host (their own namespaces, container or machine): local's
	 * are host processes of the caller's account */
	bool isolated;
};

/* The capability row for NAME, or NULL when NAME is not a known backend. Borrowed. */
const struct backend_caps *backend_lookup(const char *name);

/* The row at INDEX (0 <= INDEX < BACKEND_TABLE_LEN), in the table's order. Borrowed. */
const struct backend_caps *backend_at(size_t index);

/* The index of NAME's row, or -1 when NAME is not a known backend. */
int backend_index(const char *name);

#endif
