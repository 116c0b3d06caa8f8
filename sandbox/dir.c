/* Sandbox directories: one per sandbox under the configured root, named after the session. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "backend.h"

#define SBX_DIR_FDS 32

int sbx_dir_path(struct sbx *s, const char *id, char *out, size_t outsz)
{
	int n;

	if (!*id ||
	    strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
		    strlen(id))
		return -1;
	n = snprintf(out, outsz, "%s/%s", s->root, id);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

void sbx_workspace_workdir(struct sbx *s, const char *id, char *out, size_t outsz)
{
	(void)s;
	(void)id;
	snprintf(out, outsz, "%s", SBX_WORKSPACE);
}

void sbx_dir_workdir(struct sbx *s, const char *id, char *out, size_t outsz)
{
	if (sbx_dir_path(s, id, out, outsz))
		snprintf(out, outsz, "%s", s->root);
}

int sbx_dir_create(struct sbx *s, const char *name, char *id, size_t idsz, char *err, size_t errsz)
{
	char path[PATH_MAX];

	if (sbx_dir_path(s, name, path, sizeof(path)) || strlen(name) >= idsz) {
		snprintf(err, errsz, "invalid sandbox name");
		return -1;
	}
	if (mkdir(path, 0700) && errno != EEXIST) {
		snprintf(err, errsz, "mkdir %s: %s", path, strerror(errno));
		return -1;
	}
	strcpy(id, name);
	return 0;
}

int sbx_dir_make(struct sbx *s, const struct sbx_spec *spec, char *id, size_t idsz, char *err,
		 size_t errsz)
{
	return sbx_dir_create(s, spec->name, id, idsz, err, errsz);
}

/* Pre-order pass: a directory left read-only (Go's module cache, a package's own files) must
 * become writable before its entries can be removed. */
static int make_writable(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if ((flag == FTW_D || flag == FTW_DNR) && (st->st_mode & 0700) != 0700)
		chmod(path, (st->st_mode & 07777) | 0700);
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D || flag == FTW_DNR)
		return rmdir(path) && errno != ENOENT ? -1 : 0;
	return unlink(path) && errno != ENOENT ? -1 : 0;
}

int sbx_rmtree(const char *path, char *err, size_t errsz)
{
	struct stat st;

	if (lstat(path, &st) && errno == ENOENT)
		return 0; /* already gone */
	/* FTW_PHYS: never follow a symlink out of the tree; FTW_MOUNT: stay on its fs */
	nftw(path, make_writable, SBX_DIR_FDS, FTW_PHYS | FTW_MOUNT);
	if (nftw(path, remove_entry, SBX_DIR_FDS, FTW_DEPTH | FTW_PHYS | FTW_MOUNT)) {
		snprintf(err, errsz, "removing %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int layer_path(struct sbx *s, const char *id, char *out, size_t outsz);

/* The directory, then its record (bwrap; absent for local and srt). */
int sbx_dir_destroy(struct sbx *s, const char *id, char *err, size_t errsz)
{
	char path[PATH_MAX], rec[PATH_MAX];

	if (sbx_dir_path(s, id, path, sizeof(path)) || layer_path(s, id, rec, sizeof(rec))) {
		snprintf(err, errsz, "invalid sandbox id");
		return -1;
	}
	return sbx_rmtree(path, err, errsz) || sbx_rmtree(rec, err, errsz) ? -1 : 0;
}

int sbx_dir_list(struct sbx *s, struct sbx_listed *out, int max, int *n, char *err, size_t errsz)
{
	struct dirent *e;
	DIR *d = opendir(s->root);

	*n = 0;
	if (!d) {
		snprintf(err, errsz, "%s: %s", s->root, strerror(errno));
		return -1;
	}
	while (*n < max && (e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(out->id))
			continue;
		strcpy(out[*n].id, e->d_name);
		strcpy(out[*n].name, e->d_name);
		(*n)++;
	}
	closedir(d);
	return 0;
}

/* nftw has no argument for the callback: the owner being given, set by sbx_dir_own */
static uid_t own_uid;
static gid_t own_gid;
static int own_failed; /* an entry could not be given: the walk goes on, the caller hears of it */

static int own_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	if ((st->st_uid != own_uid || st->st_gid != own_gid) && lchown(path, own_uid, own_gid))
		own_failed = 1;
	return 0;
}

int sbx_dir_own(struct sbx *s, unsigned uid, unsigned gid)
{
	char path[PATH_MAX];
	struct stat st;
	struct dirent *e;
	DIR *d;
	int ret = 0;

	own_uid = (uid_t)uid;
	own_gid = (gid_t)gid;
	own_failed = 0;
	if (lstat(s->root, &st) || !S_ISDIR(st.st_mode))
		return -1;
	if ((st.st_uid != own_uid || st.st_gid != own_gid) && lchown(s->root, own_uid, own_gid))
		ret = -1;
	d = opendir(s->root);
	if (!d)
		return -1;
	/* only the workspaces someone else owns are walked: the steady state costs a stat each */
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    snprintf(path, sizeof(path), "%s/%s", s->root, e->d_name) >=
			    (int)sizeof(path) ||
		    lstat(path, &st) || (st.st_uid == own_uid && st.st_gid == own_gid))
			continue;
		if (nftw(path, own_entry, SBX_DIR_FDS, FTW_PHYS | FTW_MOUNT))
			ret = -1;
	}
	closedir(d);
	return own_failed ? -1 : ret;
}

/* ---- package cache entries of directory backends (bwrap): ROOT/.cache/KEY ----
 * An entry is a copy of a provisioned workspace, under the sandbox root that bwrap hides from
 * every sandbox, so no sandbox can read or change it. Entries appear by rename(2) of a finished
 * copy: two reconcilers storing one key leave one whole entry.
 *
 * A sandbox of the bwrap backend has, besides its directory ROOT/ID, a record ROOT/.layers/ID
 * (made before the directory): its presence says that this root made sandbox ID (drift: a
 * directory gone while its record stays was removed behind terrarium's back; a sandbox without a
 * record may be another configuration's). A sandbox started from an entry is layered: its record
 * holds `lower`, a symlink to the entry, and the overlay's `work` and `mnt` directories; ROOT/ID
 * is the overlay's upper layer, the session's private writable layer, and the entry is the
 * read-only lower layer every session of the key shares (the bwrap backend mounts the overlay
 * for each command). Without an overlay (sbx_dir_create_from's LAYERED 0) the sandbox gets its
 * own copy of the entry instead. */
#define SBX_DIR_CACHE ".cache"
#define SBX_DIR_LAYERS ".layers"
#define SBX_DIR_LOWER "lower"
#define SBX_DIR_WORK "work"
#define SBX_DIR_MNT "mnt"
#define SBX_DIR_COPY_TIMEOUT_S 600
#define SBX_DIR_COPY_OUT_MAX 4096

static int cache_path(struct sbx *s, const char *key, char *out, size_t outsz)
{
	int n;
	if (strlen(key) != 64 || strspn(key, "0123456789abcdef") != 64)
		return -1;
	n = snprintf(out, outsz, "%s/%s/%s", s->root, SBX_DIR_CACHE, key);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

/* ROOT/.layers/ID into OUT (ID a plain name). */
static int layer_path(struct sbx *s, const char *id, char *out, size_t outsz)
{
	char dir[PATH_MAX];
	int n;

	if (sbx_dir_path(s, id, dir, sizeof(dir)))
		return -1;
	n = snprintf(out, outsz, "%s/%s/%s", s->root, SBX_DIR_LAYERS, id);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

/* A unique sibling of PATH to build in or to move out of the way: PATH.TAG.PID.N */
static int sibling(const char *path, const char *tag, char *out, size_t outsz)
{
	static unsigned long seq; /* one sequence for every thread */
	int n = snprintf(out, outsz, "%s.%s.%ld.%lu", path, tag, (long)getpid(),
			 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

/* Remove a half-made copy after a failure that is reported already. */
static void discard_tree(const char *path)
{
	char err[SBX_ERR_MAX];

	if (sbx_rmtree(path, err, sizeof(err)))
		log_warn("%s", err);
}

/* mkdir ROOT/NAME (one of the root's own directories), existing or not. */
static int root_subdir(struct sbx *s, const char *name, char *err, size_t errsz)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", s->root, name);
	if (mkdir(path, 0700) && errno != EEXIST) {
		snprintf(err, errsz, "mkdir %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* flock of ROOT/.cache (HOW: LOCK_SH to start a sandbox on an entry, LOCK_EX to remove one): an
 * entry is never removed between a layered sandbox's check of it and its link to it. The
 * descriptor, or -1 with ERR set. */
static int cache_lock(struct sbx *s, int how, char *err, size_t errsz)
{
	char path[PATH_MAX];
	int fd;

	if (root_subdir(s, SBX_DIR_CACHE, err, errsz))
		return -1;
	snprintf(path, sizeof(path), "%s/%s", s->root, SBX_DIR_CACHE);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || flock(fd, how)) {
		snprintf(err, errsz, "locking %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Copy SRC/. to DST (created): directories, files, symlinks, modes, owners and times; not
 * extended attributes, so nothing a sandbox set on its files (overlay's own user.overlay.*
 * among them) reaches an entry. */
static int copy_tree(struct sbx *s, const char *src, const char *dst, char *err, size_t errsz)
{
	char from[PATH_MAX + 2], cp[] = "cp", dr[] = "-dR",
				 keep[] = "--preserve=mode,ownership,timestamps,links",
				 path[] = "PATH=/usr/bin:/bin";
	char *envp[] = { path, NULL };
	struct proc_result res;
	int n = snprintf(from, sizeof(from), "%s/.", src);

	if (n < 0 || (size_t)n >= sizeof(from) || mkdir(dst, 0700)) {
		snprintf(err, errsz, "copy to %s: %s", dst, strerror(errno));
		return -1;
	}
	{
		char *argv[] = { cp, dr, keep, from, (char *)dst, NULL };
		if (proc_run(argv, s->root, envp, -1, SBX_DIR_COPY_TIMEOUT_S, SBX_DIR_COPY_OUT_MAX,
			     NULL, &res) ||
		    res.exit_code) {
			snprintf(err, errsz, "copying %s to %s: %s", src, dst,
				 res.output && res.len ? res.output : "cp failed");
			proc_result_release(&res);
			discard_tree(dst);
			return -1;
		}
	}
	proc_result_release(&res);
	return 0;
}

int sbx_dir_layer(struct sbx *s, const char *id, struct sbx_layer *l, char *err, size_t errsz)
{
	char rec[PATH_MAX], link[PATH_MAX + 16];
	struct stat st;
	ssize_t n;

	if (layer_path(s, id, rec, sizeof(rec)) ||
	    sbx_dir_path(s, id, l->upper, sizeof(l->upper))) {
		snprintf(err, errsz, "invalid sandbox id");
		return -1;
	}
	snprintf(link, sizeof(link), "%s/%s", rec, SBX_DIR_LOWER);
	n = readlink(link, l->lower, sizeof(l->lower) - 1);
	if (n < 0)
		return 0; /* a plain directory */
	l->lower[n] = '\0';
	if (snprintf(l->work, sizeof(l->work), "%s/%s", rec, SBX_DIR_WORK) >=
		    (int)sizeof(l->work) ||
	    snprintf(l->mnt, sizeof(l->mnt), "%s/%s", rec, SBX_DIR_MNT) >= (int)sizeof(l->mnt)) {
		snprintf(err, errsz, "sandbox path too long");
		return -1;
	}
	if (stat(l->lower, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(err, errsz, "the package cache entry this sandbox is layered on is gone");
		return -1;
	}
	return 1;
}

/* Is sandbox PATH (record REC) layered on ENTRY? */
static int layered_on(const char *rec, const char *entry)
{
	char link[PATH_MAX + 16], target[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "%s/%s", rec, SBX_DIR_LOWER);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return 0;
	target[n] = '\0';
	return !strcmp(target, entry);
}

/* The record of a layered sandbox on FROM: made aside, then renamed to REC, while the entry is
 * known to exist (shared cache lock). */
static int make_layer(struct sbx *s, const char *from, const char *rec, char *err, size_t errsz)
{
	char tmp[PATH_MAX + 64], sub[PATH_MAX + 80];
	struct stat st;
	int lock, rc = -1;

	if (sibling(rec, "new", tmp, sizeof(tmp)) || mkdir(tmp, 0700)) {
		snprintf(err, errsz, "mkdir %s: %s", tmp, strerror(errno));
		return -1;
	}
	snprintf(sub, sizeof(sub), "%s/%s", tmp, SBX_DIR_WORK);
	if (mkdir(sub, 0700))
		goto fail;
	snprintf(sub, sizeof(sub), "%s/%s", tmp, SBX_DIR_MNT);
	if (mkdir(sub, 0700))
		goto fail;
	snprintf(sub, sizeof(sub), "%s/%s", tmp, SBX_DIR_LOWER);
	if (symlink(from, sub))
		goto fail;
	if ((lock = cache_lock(s, LOCK_SH, err, errsz)) < 0) {
		discard_tree(tmp);
		return -1;
	}
	if (stat(from, &st) || !S_ISDIR(st.st_mode))
		snprintf(err, errsz, "package cache entry %s was removed meanwhile", from);
	else if (rename(tmp, rec))
		snprintf(err, errsz, "rename to %s: %s", rec, strerror(errno));
	else
		rc = 0;
	close(lock);
	if (rc)
		discard_tree(tmp);
	return rc;
fail:
	snprintf(err, errsz, "preparing %s: %s", tmp, strerror(errno));
	discard_tree(tmp);
	return -1;
}

int sbx_dir_create_from(struct sbx *s, const char *name, const char *from, int layered, char *id,
			size_t idsz, char *err, size_t errsz)
{
	char path[PATH_MAX], rec[PATH_MAX], tmp[PATH_MAX + 64];
	struct stat st;

	if (sbx_dir_path(s, name, path, sizeof(path)) || layer_path(s, name, rec, sizeof(rec)) ||
	    strlen(name) >= idsz) {
		snprintf(err, errsz, "invalid sandbox name");
		return -1;
	}
	if (root_subdir(s, SBX_DIR_LAYERS, err, errsz))
		return -1;
	if (!from) {
		/* the record first: a directory of ours never exists without it */
		if (mkdir(rec, 0700) && errno != EEXIST) {
			snprintf(err, errsz, "mkdir %s: %s", rec, strerror(errno));
			return -1;
		}
		return sbx_dir_create(s, name, id, idsz, err, errsz);
	}
	if (!stat(path, &st)) {
		if (layered && layered_on(rec, from)) {
			strcpy(id, name); /* made from this entry by an earlier attempt */
			return 0;
		}
		/* left by an attempt that recorded nothing, not from this entry: replaced, so what
		 * the caller skips is there */
		if (sbx_dir_destroy(s, name, err, errsz))
			return -1;
	} else if (lstat(rec, &st) == 0 && (!layered || !layered_on(rec, from)) &&
		   sbx_rmtree(rec, err, errsz)) {
		return -1;
	}
	if (layered) {
		if (lstat(rec, &st) && make_layer(s, from, rec, err, errsz))
			return -1;
		return sbx_dir_create(s, name, id, idsz, err, errsz);
	}
	/* a copy of the entry, made aside and renamed into place: whole or absent */
	if ((mkdir(rec, 0700) && errno != EEXIST) || sibling(path, "new", tmp, sizeof(tmp))) {
		snprintf(err, errsz, "mkdir %s: %s", rec, strerror(errno));
		return -1;
	}
	if (copy_tree(s, from, tmp, err, errsz))
		return -1;
	if (rename(tmp, path)) {
		int e = errno;
		discard_tree(tmp);
		if (e != EEXIST && e != ENOTEMPTY) {
			snprintf(err, errsz, "rename to %s: %s", path, strerror(e));
			return -1;
		}
	}
	strcpy(id, name);
	return 0;
}

int sbx_dir_exists(struct sbx *s, const char *id, char *err, size_t errsz)
{
	char path[PATH_MAX], rec[PATH_MAX];
	struct sbx_layer l;
	struct stat st;

	if (sbx_dir_path(s, id, path, sizeof(path)) || layer_path(s, id, rec, sizeof(rec))) {
		snprintf(err, errsz, "invalid sandbox id");
		return -1;
	}
	if (lstat(rec, &st))
		return 1; /* not made under this root (another configuration's?): not ours to judge
			   */
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return 0;
	return sbx_dir_layer(s, id, &l, err, errsz) < 0 ? 0 : 1;
}

int sbx_dir_cache_lookup(struct sbx *s, const char *key, char *ref, size_t refsz, char *err,
			 size_t errsz)
{
	struct stat st;

	if (cache_path(s, key, ref, refsz)) {
		snprintf(err, errsz, "invalid cache key");
		return -1;
	}
	return !stat(ref, &st) && S_ISDIR(st.st_mode);
}

int sbx_dir_cache_store(struct sbx *s, const char *id, const char *key, char *err, size_t errsz)
{
	char entry[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX + 64];
	struct sbx_layer l;
	struct stat st;

	if (cache_path(s, key, entry, sizeof(entry)) || sbx_dir_path(s, id, dir, sizeof(dir)) ||
	    sibling(entry, "new", tmp, sizeof(tmp))) {
		snprintf(err, errsz, "invalid cache key or sandbox id");
		return -1;
	}
	if (!stat(entry, &st))
		return 0; /* stored already */
	if (sbx_dir_layer(s, id, &l, err, errsz)) {
		snprintf(err, errsz, "sandbox %s is layered on another entry: not stored", id);
		return -1;
	}
	if (root_subdir(s, SBX_DIR_CACHE, err, errsz) || copy_tree(s, dir, tmp, err, errsz))
		return -1;
	if (rename(tmp, entry)) {
		int e = errno;
		discard_tree(tmp);
		if (e != EEXIST && e != ENOTEMPTY) { /* else: another reconciler's entry won */
			snprintf(err, errsz, "rename to %s: %s", entry, strerror(e));
			return -1;
		}
	}
	return 0;
}

/* Is a sandbox under this root layered on ENTRY? */
static int entry_used(struct sbx *s, const char *entry)
{
	char dir[PATH_MAX], rec[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int used = 0;

	snprintf(dir, sizeof(dir), "%s/%s", s->root, SBX_DIR_LAYERS);
	if (!(d = opendir(dir)))
		return 0;
	while (!used && (e = readdir(d)))
		if (e->d_name[0] != '.' &&
		    snprintf(rec, sizeof(rec), "%s/%s", dir, e->d_name) < (int)sizeof(rec))
			used = layered_on(rec, entry);
	closedir(d);
	return used;
}

int sbx_dir_cache_remove(struct sbx *s, const char *key, char *err, size_t errsz)
{
	char entry[PATH_MAX], old[PATH_MAX + 64];
	int lock, rc;

	if (cache_path(s, key, entry, sizeof(entry)) || sibling(entry, "old", old, sizeof(old))) {
		snprintf(err, errsz, "invalid cache key");
		return -1;
	}
	if ((lock = cache_lock(s, LOCK_EX, err, errsz)) < 0)
		return -1;
	if (entry_used(s, entry)) {
		close(lock);
		return 1; /* the lower layer of a sandbox: kept until it is gone */
	}
	/* out of the way in one step (a lookup sees the entry whole or not at all), then removed */
	rc = rename(entry, old);
	close(lock);
	if (rc)
		return errno == ENOENT
			       ? 0
			       : (snprintf(err, errsz, "%s: %s", entry, strerror(errno)), -1);
	return sbx_rmtree(old, err, errsz);
}
