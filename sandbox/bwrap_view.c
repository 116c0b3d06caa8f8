/* The mount view of a bwrap sandbox: made once per sbx_open, mounted for every command
 * (bwrap_view.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bwrap_view.h"

/* host files left out of the view although their mode already refuses the sandbox's user */
static const char *const host_secrets[] = { "/etc/shadow", "/etc/shadow-", "/etc/gshadow",
					    "/etc/gshadow-" };
#define HOST_SECRETS (sizeof(host_secrets) / sizeof(host_secrets[0]))
#define VIEW_TMPFS_OPTS "mode=0755"
#define VIEW_TOP "/.top"	   /* under the view's tmpfs: the layers above the host's roots */
#define VIEW_OVERLAY_OPTS_MAX 4000 /* an overlay's mount options: they must fit in a page */
#define HIDDEN_MAX (1 + HOST_SECRETS + SBX_MASKS_MAX) /* the resolver file, secrets, masks */

static int hidden_as(const char *hide, const char *path, size_t len)
{
	if (!strcmp(hide, path))
		return 1;
	return !strncmp(hide, path, len) && hide[len] == '/' ? 2 : 0;
}

/* The hidden paths into OUT (HIDDEN_MAX at most): the masks, the host's secrets, and the
 * resolver configuration (replaced when the sandbox has a network). Their number. */
static int hidden_paths(const struct sbx *s, const char *out[HIDDEN_MAX])
{
	int n = 0;

	out[n++] = BWRAP_RESOLV;
	for (size_t i = 0; i < HOST_SECRETS; i++)
		out[n++] = host_secrets[i];
	for (int i = 0; i < s->nmasks; i++)
		out[n++] = s->masks[i];
	return n;
}

/* PATH is hidden itself (1), holds a hidden path below it (2), or neither (0). */
static int hidden(const struct sbx *s, const char *path)
{
	const char *hide[HIDDEN_MAX];
	int n = hidden_paths(s, hide), h = 0;
	size_t len = strlen(path);

	for (int i = 0; i < n && h != 1; i++) {
		int k = hidden_as(hide[i], path, len);
		if (k > h)
			h = k;
	}
	return h;
}

static int arg_push(struct bwrap_view *v, const char *a, const char *b, const char *c)
{
	const char *args[] = { a, b, c };

	if (v->nargs + 3 > BWRAP_VIEW_ARGS_MAX)
		return -1;
	for (int i = 0; i < 3; i++)
		if (!(v->args[v->nargs++] = strdup(args[i])))
			return -1;
	return 0;
}

/* The step KIND at the view's PATH onto L (SRC: a host source, link target or options). */
static int op_push(struct bwrap_view *v, struct bwrap_view_ops *l, enum bwrap_view_kind kind,
		   const char *src, const char *path)
{
	struct bwrap_view_op *op;
	size_t n;

	if (l->n >= BWRAP_VIEW_OPS_MAX)
		return -1;
	if (!l->op && !(l->op = calloc(BWRAP_VIEW_OPS_MAX, sizeof(*l->op))))
		return -1;
	op = &l->op[l->n++];
	op->kind = kind;
	n = strlen(v->dir) + strlen(path) + 1;
	if ((src && !(op->src = strdup(src))) || !(op->dst = malloc(n)))
		return -1;
	snprintf(op->dst, n, "%s%s", v->dir, path);
	return 0;
}

/* The step of the entry-by-entry view whose destination is PATH, or NULL. */
static const struct bwrap_view_op *op_at(const struct bwrap_view *v, const char *path)
{
	size_t dl = strlen(v->dir);

	for (int i = v->binds.n - 1; i >= 0; i--)
		if (!strcmp(v->binds.op[i].dst + dl, path))
			return &v->binds.op[i];
	return NULL;
}

/* The target of symlink PATH into TARGET (SIZE bytes). 0, or -1 when it cannot be read. */
static int link_read(const char *path, char *target, size_t size)
{
	ssize_t n = readlink(path, target, size - 1);

	if (n < 0)
		return -1;
	target[n] = '\0';
	return 0;
}

/* The directory holding PATH into PARENT: 0, or -1 when it is / or the path is too long. */
static int parent_of(const char *path, char parent[PATH_MAX])
{
	char *slash;

	if (snprintf(parent, PATH_MAX, "%s", path) >= PATH_MAX || !(slash = strrchr(parent, '/')) ||
	    slash == parent)
		return -1;
	*slash = '\0';
	return 0;
}

/* Add PATH below a root to the view's steps: a symlink as itself, a tree without hidden paths
 * as one bind, a directory holding one entry by entry. Other file types are left out. */
static int entry_add(struct bwrap_view *v, const struct sbx *s, const char *path, int depth)
{
	char target[PATH_MAX], child[PATH_MAX];
	struct stat sb;
	struct dirent *e;
	DIR *d;
	int h = hidden(s, path), rc = 0;

	if (h == 1 || lstat(path, &sb))
		return 0;
	if (S_ISLNK(sb.st_mode))
		return link_read(path, target, sizeof(target))
			       ? 0
			       : op_push(v, &v->binds, VIEW_LINK, target, path);
	if (S_ISDIR(sb.st_mode) && h == 2 && depth < BWRAP_VIEW_DEPTH) {
		if (op_push(v, &v->binds, VIEW_DIR, NULL, path) || !(d = opendir(path)))
			return -1;
		while (!rc && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (snprintf(child, sizeof(child), "%s/%s", path, e->d_name) >=
			    (int)sizeof(child))
				continue;
			rc = entry_add(v, s, child, depth + 1);
		}
		closedir(d);
		return rc;
	}
	if (h == 2) /* deeper than we look: leave it out */
		return 0;
	if (S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode))
		return op_push(v, &v->binds, VIEW_BIND, path, path);
	return 0;
}

/* A directory step for every directory of the view's PATH below FROM (an offset into it). */
static int dirs_push(struct bwrap_view *v, struct bwrap_view_ops *l, const char *path, size_t from)
{
	char dir[PATH_MAX];

	for (size_t i = from; path[i]; i++)
		if (path[i] == '/' && i > 0) {
			if (i >= sizeof(dir))
				return -1;
			memcpy(dir, path, i);
			dir[i] = '\0';
			if (op_push(v, l, VIEW_DIR, NULL, dir))
				return -1;
		}
	return 0;
}

/* The overlay of ROOT (one of SBX_VIEW_ROOTS: nothing in it overlay's options cannot name)
 * under its layer of whiteouts (VIEW_TOP ROOT): its steps onto v->layers. v->layered becomes 0
 * when CA (the CA bundle bwrap binds, "" none) is under a hidden path, where the layer has a
 * whiteout. */
static int layer_add(struct bwrap_view *v, const struct sbx *s, const char *root, const char *ca)
{
	const char *hide[HIDDEN_MAX];
	char top[PATH_MAX], opts[VIEW_OVERLAY_OPTS_MAX];
	size_t rl = strlen(root);
	int n = hidden_paths(s, hide);

	/* options relative to the view (the child is there when it mounts): the sandbox root's
	 * path is not in them, nor in the sandbox's /proc/self/mountinfo */
	if (snprintf(top, sizeof(top), "%s%s", VIEW_TOP, root) >= (int)sizeof(top) ||
	    snprintf(opts, sizeof(opts), "lowerdir=%s:%s", top + 1, root) >= (int)sizeof(opts) ||
	    dirs_push(v, &v->layers, top, 1) || op_push(v, &v->layers, VIEW_DIR, NULL, top) ||
	    op_push(v, &v->layers, VIEW_DIR, NULL, root))
		return -1;
	for (int i = 0; i < n; i++) {
		char at[PATH_MAX];
		int covered = 0;

		if (strncmp(hide[i], root, rl) || hide[i][rl] != '/')
			continue;
		/* one below another hidden path is gone with it */
		for (int j = 0; j < n; j++)
			covered |= hidden_as(hide[i], hide[j], strlen(hide[j])) == 2;
		if (ca[0] && hidden_as(ca, hide[i], strlen(hide[i])) &&
		    strcmp(hide[i], BWRAP_RESOLV))
			v->layered = 0;
		if (covered)
			continue;
		if (snprintf(at, sizeof(at), "%s%s", VIEW_TOP, hide[i]) >= (int)sizeof(at) ||
		    dirs_push(v, &v->layers, at, strlen(top)) ||
		    op_push(v, &v->layers,
			    strcmp(hide[i], BWRAP_RESOLV) ? VIEW_WHITEOUT : VIEW_FILE, NULL, at))
			return -1;
	}
	return op_push(v, &v->layers, VIEW_OVERLAY, opts, root);
}

/* Add root PATH: a symlink, one bwrap bind, or (holding a hidden path) a tree of steps that
 * bwrap binds from the view's tmpfs. */
static int root_add(struct bwrap_view *v, const struct sbx *s, const char *path, const char *ca)
{
	char target[PATH_MAX], from[PATH_MAX];
	struct stat sb;
	int h = hidden(s, path);

	if (h == 1 || lstat(path, &sb))
		return 0;
	if (S_ISLNK(sb.st_mode))
		return link_read(path, target, sizeof(target))
			       ? 0
			       : arg_push(v, "--symlink", target, path);
	if (h == 2 && S_ISDIR(sb.st_mode)) {
		if (snprintf(from, sizeof(from), "%s%s", v->dir, path) >= (int)sizeof(from))
			return -1;
		return layer_add(v, s, path, ca) || entry_add(v, s, path, 0) ||
		       arg_push(v, "--ro-bind", from, path);
	}
	if (h == 0 && (S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode)))
		return arg_push(v, "--ro-bind", path, path);
	return 0;
}

/* 1 when directory PATH is (or is made, as a VIEW_DIR step) a directory of the view's tmpfs, 0
 * when it is not the view's to make (a host bind, or outside the roots bound from the view). */
static int dir_ensure(struct bwrap_view *v, const char *path)
{
	const struct bwrap_view_op *op = op_at(v, path);
	char parent[PATH_MAX];

	if (op)
		return op->kind == VIEW_DIR;
	return !parent_of(path, parent) && dir_ensure(v, parent) &&
	       !op_push(v, &v->binds, VIEW_DIR, NULL, path);
}

/* Where bwrap binds a file of its own (PATH) inside a root bound from the view, the view has an
 * empty file for it to bind onto: the tmpfs is read-only by then. -1 only when out of room. */
static int mount_point(struct bwrap_view *v, const char *path)
{
	char parent[PATH_MAX];

	if (!path[0] || op_at(v, path) || parent_of(path, parent) || !dir_ensure(v, parent))
		return 0;
	return op_push(v, &v->binds, VIEW_FILE, NULL, path);
}

int bwrap_view_prepare(struct bwrap_view *v, const struct sbx *s, const char *ca, char *err,
		       size_t errsz)
{
	static const char *const roots[] = SBX_VIEW_ROOTS;
	int rc = 0;

	memset(v, 0, sizeof(*v));
	v->layered = 1;
	if (snprintf(v->dir, sizeof(v->dir), "%s/%s", s->root, BWRAP_VIEW_DIR) >=
	    (int)sizeof(v->dir)) {
		snprintf(err, errsz, "the sandbox root's path is too long");
		return -1;
	}
	for (size_t i = 0; !rc && i < sizeof(roots) / sizeof(roots[0]); i++)
		rc = root_add(v, s, roots[i], ca);
	if (rc || mount_point(v, BWRAP_RESOLV) || mount_point(v, ca)) {
		snprintf(err, errsz,
			 "the sandbox view has more than %d entries (or memory ran out)",
			 BWRAP_VIEW_OPS_MAX);
		return -1;
	}
	if (mkdir(v->dir, 0755) && errno != EEXIST) {
		snprintf(err, errsz, "%s: %s", v->dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* An empty file at PATH (none there yet). 0 or -1. */
static int file_make(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* Bind SRC at DST read-only, keeping the flags the host mount has (nosuid, nodev, noexec, its
 * atime rule: a user namespace may not change them). 1 when SRC is gone (left out), 0, or -1. */
static int bind_ro(const char *src, const char *dst, const char **what)
{
	static const struct {
		unsigned long st, ms;
	} kept[] = { { ST_NOSUID, MS_NOSUID },	       { ST_NODEV, MS_NODEV },
		     { ST_NOEXEC, MS_NOEXEC },	       { ST_NOATIME, MS_NOATIME },
		     { ST_NODIRATIME, MS_NODIRATIME }, { ST_RELATIME, MS_RELATIME } };
	struct statvfs fs;
	struct stat sb;
	unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY;

	if (stat(src, &sb))
		return errno == ENOENT || errno == ENOTDIR ? 1 : (*what = src, -1);
	*what = dst;
	if (S_ISDIR(sb.st_mode) ? mkdir(dst, 0755) : file_make(dst))
		return -1;
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) || statvfs(dst, &fs))
		return -1;
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (fs.f_flag & kept[i].st)
			flags |= kept[i].ms;
	if (!(fs.f_flag & (ST_NOATIME | ST_RELATIME)))
		flags |= MS_STRICTATIME;
	return mount(NULL, dst, NULL, flags, NULL) ? -1 : 0;
}

/* Run L's steps: 0, or -1 with errno set, *WHAT naming the step and *DONE how many ran. */
static int ops_run(const struct bwrap_view_ops *l, const char **what, int *done)
{
	for (*done = 0; *done < l->n; ++*done) {
		const struct bwrap_view_op *op = &l->op[*done];
		int rc = 0;

		*what = op->dst;
		switch (op->kind) {
		case VIEW_DIR: /* the layers and the entries share their roots' directories */
			rc = mkdir(op->dst, 0755) && errno != EEXIST;
			break;
		case VIEW_LINK:
			rc = symlink(op->src, op->dst);
			break;
		case VIEW_BIND:
			rc = bind_ro(op->src, op->dst, what) < 0;
			break;
		case VIEW_FILE:
			rc = file_make(op->dst);
			break;
		case VIEW_WHITEOUT:
			rc = mknod(op->dst, S_IFCHR, makedev(0, 0));
			break;
		case VIEW_OVERLAY:
			rc = mount("overlay", op->dst, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV,
				   op->src);
			break;
		}
		if (rc)
			return -1;
	}
	return 0;
}

int bwrap_view_mount(const struct bwrap_view *v, const char **what)
{
	int done = 0;

	*what = NULL;
	if (!v->layers.n && !v->binds.n)
		return 0;
	*what = v->dir;
	if ((mkdir(v->dir, 0755) && errno != EEXIST) ||
	    mount("tmpfs", v->dir, "tmpfs", MS_NOSUID | MS_NODEV, VIEW_TMPFS_OPTS))
		return -1;
	if (v->layered && !chdir(v->dir) && !ops_run(&v->layers, what, &done)) {
		*what = NULL;
		return 0;
	}
	/* no overlay here: what of them was mounted goes, the entries come one by one */
	for (int i = 0; v->layered && i < v->layers.n && i < done; i++)
		if (v->layers.op[i].kind == VIEW_OVERLAY)
			umount2(v->layers.op[i].dst, MNT_DETACH);
	if (ops_run(&v->binds, what, &done))
		return -1;
	*what = NULL;
	return 0;
}

static void ops_release(struct bwrap_view_ops *l)
{
	for (int i = 0; i < l->n; i++) {
		free(l->op[i].src);
		free(l->op[i].dst);
	}
	free(l->op);
}

void bwrap_view_release(struct bwrap_view *v)
{
	for (int i = 0; i < v->nargs; i++)
		free(v->args[i]);
	ops_release(&v->layers);
	ops_release(&v->binds);
	memset(v, 0, sizeof(*v));
}
