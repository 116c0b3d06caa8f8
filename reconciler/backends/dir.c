/* Sandbox directories: one per sandbox under the configured root, named after the session. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/log.h"
#include "backend.h"

#define SBX_DIR_FDS 32

int sbx_dir_path(struct sbx *s, const char *id, char *out, size_t outsz)
{
	int n;

	if (!*id || strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
			    strlen(id))
		return -1;
	n = snprintf(out, outsz, "%s/%s", s->root, id);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

void sbx_dir_workdir(struct sbx *s, const char *id, char *out, size_t outsz)
{
	if (sbx_dir_path(s, id, out, outsz))
		snprintf(out, outsz, "%s", s->root);
}

int sbx_dir_create(struct sbx *s, const char *name, char *id, size_t idsz, char *err,
		   size_t errsz)
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

/* Pre-order pass: a directory left read-only (Go's module cache, a package's own files) must
 * become writable before its entries can be removed. */
static int make_writable(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D && (st->st_mode & 0700) != 0700)
		chmod(path, (st->st_mode & 07777) | 0700);
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
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

int sbx_dir_destroy(struct sbx *s, const char *id, char *err, size_t errsz)
{
	char path[PATH_MAX];

	if (sbx_dir_path(s, id, path, sizeof(path))) {
		snprintf(err, errsz, "invalid sandbox id");
		return -1;
	}
	return sbx_rmtree(path, err, errsz);
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
		    snprintf(path, sizeof(path), "%s/%s", s->root, e->d_name) >= (int)sizeof(path) ||
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
 * every sandbox, so no sandbox can read or change it. A new sandbox starting from it gets its
 * own copy (cp --reflink=auto: a copy-on-write clone where the file system has them, else a
 * full copy), so sessions never share files. Entries appear by rename(2) of a finished copy:
 * two reconcilers storing one key leave one whole entry. */
#define SBX_DIR_CACHE ".cache"
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

/* A unique sibling of PATH to build in or to move out of the way: PATH.TAG.PID.N */
static int sibling(const char *path, const char *tag, char *out, size_t outsz)
{
	static unsigned long seq;
	int n = snprintf(out, outsz, "%s.%s.%ld.%lu", path, tag, (long)getpid(), ++seq);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

/* Remove a half-made copy after a failure that is reported already. */
static void discard_tree(const char *path)
{
	char err[SBX_ERR_MAX];

	if (sbx_rmtree(path, err, sizeof(err)))
		log_warn("%s", err);
}

/* cp -a --reflink=auto SRC/. DST (DST is created). */
static int copy_tree(struct sbx *s, const char *src, const char *dst, char *err, size_t errsz)
{
	char from[PATH_MAX + 2], cp[] = "cp", a[] = "-a", reflink[] = "--reflink=auto",
				 path[] = "PATH=/usr/bin:/bin";
	char *envp[] = { path, NULL };
	struct proc_result res;
	int n = snprintf(from, sizeof(from), "%s/.", src);

	if (n < 0 || (size_t)n >= sizeof(from) || mkdir(dst, 0700)) {
		snprintf(err, errsz, "copy to %s: %s", dst, strerror(errno));
		return -1;
	}
	{
		char *argv[] = { cp, a, reflink, from, (char *)dst, NULL };
		if (proc_run(argv, s->root, envp, SBX_DIR_COPY_TIMEOUT_S, SBX_DIR_COPY_OUT_MAX, NULL,
			     &res) ||
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

/* Create sandbox NAME from s->create_from (an entry's directory): copied aside, then renamed
 * into place, so a sandbox directory is whole or absent. An existing one is attached as is. */
int sbx_dir_create_from(struct sbx *s, const char *name, char *id, size_t idsz, char *err,
			size_t errsz)
{
	char path[PATH_MAX], tmp[PATH_MAX + 64];
	struct stat st;

	if (!s->create_from)
		return sbx_dir_create(s, name, id, idsz, err, errsz);
	if (sbx_dir_path(s, name, path, sizeof(path)) || strlen(name) >= idsz ||
	    sibling(path, "new", tmp, sizeof(tmp))) {
		snprintf(err, errsz, "invalid sandbox name");
		return -1;
	}
	if (stat(path, &st)) {
		if (copy_tree(s, s->create_from, tmp, err, errsz))
			return -1;
		if (rename(tmp, path)) {
			int e = errno;
			discard_tree(tmp);
			if (e != EEXIST && e != ENOTEMPTY) {
				snprintf(err, errsz, "rename to %s: %s", path, strerror(e));
				return -1;
			}
		}
	}
	strcpy(id, name);
	return 0;
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

int sbx_dir_cache_store(struct sbx *s, const char *id, const char *key, char *err,
			size_t errsz)
{
	char entry[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX + 64];
	struct stat st;

	if (cache_path(s, key, entry, sizeof(entry)) || sbx_dir_path(s, id, dir, sizeof(dir)) ||
	    sibling(entry, "new", tmp, sizeof(tmp))) {
		snprintf(err, errsz, "invalid cache key or sandbox id");
		return -1;
	}
	if (!stat(entry, &st))
		return 0; /* stored already */
	snprintf(tmp, sizeof(tmp), "%s/%s", s->root, SBX_DIR_CACHE);
	if (mkdir(tmp, 0700) && errno != EEXIST) {
		snprintf(err, errsz, "mkdir %s: %s", tmp, strerror(errno));
		return -1;
	}
	sibling(entry, "new", tmp, sizeof(tmp));
	if (copy_tree(s, dir, tmp, err, errsz))
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

int sbx_dir_cache_remove(struct sbx *s, const char *key, char *err, size_t errsz)
{
	char entry[PATH_MAX], old[PATH_MAX + 64];

	if (cache_path(s, key, entry, sizeof(entry)) || sibling(entry, "old", old, sizeof(old))) {
		snprintf(err, errsz, "invalid cache key");
		return -1;
	}
	/* out of the way in one step (a lookup sees the entry whole or not at all), then removed */
	if (rename(entry, old))
		return errno == ENOENT ? 0 : (snprintf(err, errsz, "%s: %s", entry, strerror(errno)), -1);
	return sbx_rmtree(old, err, errsz);
}
