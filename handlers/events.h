/* What the session event handlers share (handlers/events.c, handlers/stream.c). */
#ifndef TERRARIUM_HANDLERS_EVENTS_H
#define TERRARIUM_HANDLERS_EVENTS_H

#include "../common/strbuf.h"
#include "handlers.h"

/* Append the API object of a stored event: {"id":ID,"processed_at":AT or null, then the rest
 * of BODY, the stored text that starts with {"type": (db/events.h). */
void event_put(struct strbuf *b, const char *id, const char *processed_at, const char *body);

/* Is the session of the route (req->params[0]) one the caller may see? 0 yes; else the answer is
 * made (404 for none, as for another workspace's or account's: their existence is not
 * revealed; or the database's error) and -1. */
int event_session_found(struct worker *w, struct request *req, struct response *resp);

#endif
