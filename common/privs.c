#include "privs.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

int privs_lookup(const char *user, unsigned *uid, unsigned *gid)
{
	struct passwd *pw = getpwnam(user);

	if (!pw || !pw->pw_uid)
		return -1;
	*uid = (unsigned)pw->pw_uid;
	*gid = (unsigned)pw->pw_gid;
	return 0;
}

int privs_drop(const char *user, const char *who, const char *setting)
{
	return privs_drop_keep(user, who, setting, -1);
}

int privs_drop_keep(const char *user, const char *who, const char *setting, long keep_gid)
{
	gid_t keep = (gid_t)keep_gid;
	unsigned uid, gid;

	if (geteuid() != 0)
		return 0;
	if (privs_lookup(user, &uid, &gid)) {
		log_error("%s: %s '%s' is unknown or is root; refusing to run as root", who,
			  setting, user);
		return -1;
	}
	if (setgroups(keep_gid >= 0 ? 1 : 0, keep_gid >= 0 ? &keep : NULL) || setgid((gid_t)gid) ||
	    setuid((uid_t)uid) || !setuid(0)) {
		log_error("%s: cannot switch to user '%s': %s", who, user, strerror(errno));
		return -1;
	}
	return 0;
}
