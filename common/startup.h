/* What a program does once at start: the API, the tailer, the reconciler and the runner load the
 * configuration the same way, stop on the same signals and name themselves the same way. */
#ifndef TERRARIUM_STARTUP_H
#define TERRARIUM_STARTUP_H

#include <stddef.h>

#include "config.h"

/* Load the configuration at PATH (NULL: common/config.h's lookup) into CFG and set the log
 * level it names. 0, or -1 after printing "config: <what is wrong>" on stderr. */
int startup_config(struct config *cfg, const char *path);

/* SIGTERM and SIGINT call ON_STOP (no SA_RESTART: a blocking call returns EINTR, so that a loop
 * waiting in accept() or poll() sees the stop); SIGPIPE is ignored (a write to a peer that left
 * fails with EPIPE instead of ending the program). */
void startup_signals(void (*on_stop)(int));

/* OUT: "PREFIXhost:pid:random" (host name cut at 60 bytes, 8 random characters): a lease owner
 * unique to this process and telling where it runs. */
void startup_owner(char *out, size_t outsz, const char *prefix);

#endif
