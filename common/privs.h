/* Giving up root: the API's workers and the reconciler switch to an unprivileged account after
 * what needs root (binding the socket, reading the configuration) is done. */
#ifndef TERRARIUM_PRIVS_H
#define TERRARIUM_PRIVS_H

/* When running as root, switch for good to USER (supplementary groups cleared, then gid, then
 * uid; a switch back to root must fail). WHO names the caller and the setting in messages
 * ("worker", "[api] user"). Not root: nothing to do. Returns 0, or -1 (logged) when USER is
 * unknown, is root, or the switch fails: the caller must not go on as root then. */
int privs_drop(const char *user, const char *who, const char *setting);

/* privs_drop, keeping KEEP_GID (>= 0) as the only supplementary group: the group of a socket
 * the caller must still reach (the Docker Engine's). -1: none, exactly privs_drop. */
int privs_drop_keep(const char *user, const char *who, const char *setting, long keep_gid);

/* The uid and gid privs_drop would switch USER to: 0, or -1 when USER is unknown or root. */
int privs_lookup(const char *user, unsigned *uid, unsigned *gid);

#endif
