/* The event tailer (docs/events.md): one per host, started by the API's supervisor beside its
 * workers when [stream] publish_socket is set. It reads the events appended since its last
 * read, in the order of their global seq, with one query every [stream] tail_ms whatever the
 * number of streams, and publishes each to nginx's nchan publisher on the unix socket, which
 * holds the subscribers. */
#ifndef TERRARIUM_API_TAIL_H
#define TERRARIUM_API_TAIL_H

#include "../common/config.h"

#define TAIL_BATCH 500		 /* new events one read takes at most */
#define TAIL_GAP_WAIT_MS 10000	 /* a seq not committed after this long is taken as rolled back */
#define TAIL_PUBLISHED_MAX 65536 /* seqs above the settled one remembered as published */
#define TAIL_IO_TIMEOUT_MS 2000	 /* one publish's reads and writes to nginx */
#define TAIL_PURGE_EVERY_S 60	 /* how often the logs of deleted sessions are purged */
#define TAIL_DELETED_KEEP_S 3600 /* a deleted session's session.deleted stays this long */

/* 1 when CFG asks for a tailer ([stream] publish_socket set). */
int tail_enabled(const struct config *cfg);

/* Run the tailer until SIGTERM/SIGINT. The process exit status. */
int tail_run(const struct config *cfg);

#endif
