/* What the session event handlers share (handlers/events.c, handlers/stream.c). */
#ifndef TERRARIUM_HANDLERS_EVENTS_H
#define TERRARIUM_HANDLERS_EVENTS_H

#include "../common/strbuf.h"

/* Append the API object of a stored event: {"id":ID,"processed_at":AT or null, then the rest
 * of BODY, the stored text that starts with {"type": (db/events.h). */
void event_put(struct strbuf *b, const char *id, const char *processed_at, const char *body);

#endif
