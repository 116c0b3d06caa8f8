/* The events a client sends to a session (docs/api.md §7, Client events), checked against one
 * table of shapes: every event type, content block and source, with the field each refusal
 * names (events[2].content[0].source.media_type). Pure: no database, no request. */
#ifndef TERRARIUM_EVENT_VALIDATE_H
#define TERRARIUM_EVENT_VALIDATE_H

#include <jansson.h>

#include "verr.h"

#define EVENTS_SEND_MAX 50	      /* events in one POST (docs/api.md §7) */
#define EVENTS_CONTENT_MAX 100	      /* content blocks of one event */
#define EVENTS_DENY_MESSAGE_MAX 10000 /* characters of a deny_message */
#define EVENTS_RUBRIC_MAX 262144      /* characters of a text rubric */
#define EVENTS_OUTCOME_ITER_DEFAULT 3 /* user.define_outcome's max_iterations */
#define EVENTS_OUTCOME_ITER_MAX 20
#define EVENTS_PATH_MAX 96 /* "events[49].content[99].source.media_type" and room */

/* What a client event is, for what the API does with it. */
enum ev_kind {
	EVK_MESSAGE,	   /* user.message */
	EVK_INTERRUPT,	   /* user.interrupt */
	EVK_CONFIRMATION,  /* user.tool_confirmation */
	EVK_CUSTOM_RESULT, /* user.custom_tool_result */
	EVK_TOOL_RESULT,   /* user.tool_result (self_hosted) */
	EVK_OUTCOME,	   /* user.define_outcome */
	EVK_SYSTEM,	   /* system.message */
};

/* A client event that passed its checks. */
struct ev_checked {
	enum ev_kind kind;
	const char *type; /* borrowed from the event */
	const char *ref;  /* the tool use id it answers (confirmation, results), else NULL */
	int allow;	  /* confirmation: 1 allow, 0 deny */
};

/* Check EVENTS, the request's "events" member (its path "events"): an array of 1 to
 * EVENTS_SEND_MAX events, each of a known type with its fields, system.message placed as
 * docs/api.md §7 says (at most one, last, right after a user.message, user.tool_result or
 * user.custom_tool_result). OUT (EVENTS_SEND_MAX entries) receives each event's facts. 0, or -1
 * with ERR a 400 naming the field. */
int events_check(json_t *events, struct ev_checked *out, struct verr *err);

#endif
