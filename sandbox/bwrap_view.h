/* The mount view of a bwrap sandbox (bwrap.c; docs/sandbox.md, "A view with nothing secret in
 * it"): the host trees SBX_VIEW_ROOTS, read-only, with the hidden paths left out rather than
 * covered. A root without a hidden path below it is one bwrap bind. A root holding one (/etc
 * holds the host's secrets and the resolver file; the configuration directory may be there) is
 * made by the reconciler's child in its own mount namespace, before bwrap runs (bwrap.c,
 * ns_setup), on a tmpfs at ROOT/BWRAP_VIEW_DIR, and bwrap binds it from there:
 *   - layered: a read-only overlay of the host's root under a layer that holds a whiteout for
 *     each hidden path and an empty file where bwrap binds a file of its own (the resolver
 *     file). One mount, whatever the number of entries, and the host's tree as it is now.
 *   - entry by entry, where an overlay cannot be mounted (a kernel older than 5.11, or the CA
 *     bundle configured under a hidden path): each entry without the hidden ones bound into the
 *     tmpfs, read-only at once.
 * Either way the hidden paths are nowhere in the sandbox's mounts: there is nothing beneath to
 * unmount to (and nothing in the sandbox may unmount). bwrap binding /etc's ~150 entries itself
 * cost ~60 ms a command (it parses the mount table once a bind), and every mount of the view is
 * a mount the command's namespaces make and tear down: the overlay is one. Nothing of it is
 * mounted on the host, and it is gone with the command's processes. */
#ifndef TERRARIUM_SANDBOX_BWRAP_VIEW_H
#define TERRARIUM_SANDBOX_BWRAP_VIEW_H

#include <limits.h>

#include "backend.h"

#define BWRAP_VIEW_DIR ".bwrap-view" /* under the sandbox root: the view's mount point */
#define BWRAP_VIEW_ARGS_MAX 64	     /* bwrap options binding the roots */
#define BWRAP_VIEW_OPS_MAX 4096	     /* entries mounted into the view */
#define BWRAP_VIEW_DEPTH 8	     /* hidden paths are looked for this deep */
#define BWRAP_RESOLV "/etc/resolv.conf"

/* One step of building the view, with its paths made at prepare time (the child allocates
 * nothing). */
enum bwrap_view_kind {
	VIEW_DIR,  /* mkdir dst */
	VIEW_LINK, /* dst a symlink to src */
	VIEW_BIND, /* src bound read-only at dst (a directory or a file made for it) */
	VIEW_FILE, /* an empty file at dst: where bwrap binds a file of its own (resolver, CA) */
	VIEW_WHITEOUT, /* an overlay whiteout at dst: the entry below is not there */
	VIEW_OVERLAY,  /* a read-only overlay at dst, src its mount options */
};

struct bwrap_view_op {
	enum bwrap_view_kind kind;
	char *src; /* owned: the host source, link target or overlay options; else NULL */
	char *dst; /* owned: ROOT/BWRAP_VIEW_DIR + the path in the view */
};

/* Steps in order: a directory before what it holds. */
struct bwrap_view_ops {
	struct bwrap_view_op *op; /* BWRAP_VIEW_OPS_MAX of them, owned */
	int n;
};

struct bwrap_view {
	char dir[PATH_MAX];		 /* ROOT/BWRAP_VIEW_DIR */
	char *args[BWRAP_VIEW_ARGS_MAX]; /* bwrap's options for the roots, owned */
	int nargs;
	struct bwrap_view_ops layers; /* the overlays, tried first */
	int layered;		      /* 1 when the layers can be tried here */
	struct bwrap_view_ops binds;  /* entry by entry, when the layers cannot be mounted */
};

/* Make S's view into V (the host trees as they are now; CA: the CA bundle's path bwrap binds,
 * "" none). 0, or -1 with ERR set. Release V with bwrap_view_release either way. */
int bwrap_view_prepare(struct bwrap_view *v, const struct sbx *s, const char *ca, char *err,
		       size_t errsz);

/* In the reconciler's child, in a mount namespace of its own: mount V's tmpfs, then its layers,
 * or, where they cannot be mounted, its entries one by one (an entry whose host path is gone is
 * left out). Async-signal-safe (a forked copy of a threaded program): system calls only. 0, or -1
 * with errno set and *WHAT naming the step. */
int bwrap_view_mount(const struct bwrap_view *v, const char **what);

void bwrap_view_release(struct bwrap_view *v);

#endif
