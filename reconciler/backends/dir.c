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

static int own_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	if (st->st_uid != own_uid || st->st_gid != own_gid)
		lchown(path, own_uid, own_gid);
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
	return ret;
}
