/* Sandbox backend capability table (docs/design.md, Backends). The API's admission rules and the
 * reconciler's driver selection both read it. */
#ifndef TERRARIUM_BACKEND_H
#define TERRARIUM_BACKEND_H

#include <stdbool.h>

struct backend_caps {
	const char *name;
	bool packages;        /* non-empty package lists can be installed */
	bool apt;             /* apt packages can be installed (bwrap cannot) */
	bool limited_egress;  /* a limited network policy can be enforced */
};

/* The capability row for NAME, or NULL when NAME is not a known backend. Borrowed. */
const struct backend_caps *backend_lookup(const char *name);

#endif
