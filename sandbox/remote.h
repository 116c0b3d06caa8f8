/* Helpers shared by the HTTP sandbox drivers: capturing command output with its tail kept (the
 * end is where an install says what went wrong), joining argv into a POSIX shell command line
 * for services whose command API takes a string, and the ids and teardown of services that find
 * a sandbox again by its name (e2b, daytona). */
#ifndef TERRARIUM_REMOTE_H
#define TERRARIUM_REMOTE_H

#include <stddef.h>

#include "backend.h"
#include "http.h"
#include "process.h"

/* a sandbox id of a service, in bytes (remote_valid_id) */
#define REMOTE_ID_MAX 128
/* sandboxes remote_destroy deletes under one name, at most */
#define REMOTE_DESTROY_MAX 8
/* a command killed by a time limit or a stop, as by SIGKILL */
#define REMOTE_EXIT_KILLED (128 + 9)

/* Output of one command: at most max bytes, the oldest dropped first. */
struct out_tail {
	char *buf; /* owned; NUL-terminated once out_tail_finish ran */
	size_t len, max;
	int truncated; /* bytes were dropped */
	int oom;
};

/* Start an empty capture keeping at most MAX bytes (MAX 0 keeps nothing). */
void out_tail_init(struct out_tail *t, size_t max);
/* Append N bytes of DATA, dropping the oldest bytes beyond the cap. */
void out_tail_put(struct out_tail *t, const char *data, size_t n);
/* Move the capture into RES (output, len, truncated); T is empty afterwards. */
void out_tail_finish(struct out_tail *t, struct proc_result *res);
void out_tail_release(struct out_tail *t);

/* Set RES to "killed" (REMOTE_EXIT_KILLED) by its time limit (TIMED_OUT) or because the watch
 * said stop (STOPPED); its output is left as it is. */
void proc_result_killed(struct proc_result *res, int timed_out, int stopped);

/* ARGV joined by spaces, each element quoted for a POSIX shell when it holds anything but
 * [A-Za-z0-9_./=:@%+,-] as sbx_quote_arg does it (quote.h); the empty string
 * becomes ''. A shell (sh -c, bash -c) parses the result back into exactly ARGV, with no
 * expansion of any kind. New string, caller frees; NULL when ARGV is empty or memory ran out. */
char *sh_join(char *const argv[]);

/* 1 when ID can be a sandbox id of a service that puts it into URL paths and a host name (e2b,
 * daytona): shorter than MAX and REMOTE_ID_MAX, not empty, of letters, digits, '-', '_' and '.',
 * starting with neither '.' nor '-'; else 0. */
int remote_valid_id(const char *id, size_t max);

/* Find the live sandbox created as NAME (by its label or metadata): 1 found (its id into ID), 0
 * none, -1 with ERR set. */
typedef int remote_find_fn(struct sbx *s, const char *name, char *id, size_t idsz, char *err,
			   size_t errsz);

/* Where a listed sandbox of such a service keeps its id and the deterministic name it was created
 * with, for remote_find_in. */
struct remote_tags {
	const char *tags;	   /* the object member holding its tags: "metadata", "labels" */
	const char *name_tag;	   /* the tag carrying the name */
	const char *id_key;	   /* the string member holding its id */
	int (*gone)(json_t *item); /* 1 when the sandbox ITEM is on its way out; NULL: none is */
};

/* For a remote_find_fn: the first sandbox of LIST (a JSON array of the service's list answer; a
 * new reference, stolen; NULL when the list call failed with ERR set) whose tag T->name_tag is
 * NAME and that is not gone: its id (T->id_key, a valid id) into ID. The name is checked even
 * when the list call filtered by it: a service that ignores the filter must not hand us
 * another's sandbox. 1 found, 0 none, -1 with ERR set. */
int remote_find_in(struct sbx *s, json_t *list, const struct remote_tags *t, const char *name,
		   char *id, size_t idsz, char *err, size_t errsz);

/* Perform RQ, the create call of a driver whose sandboxes FIND finds by name (rq->no_retry: the
 * next attempt finds a create that timed out), answered with one of the statuses OK: the
 * answer's string member KEY, a valid id (remote_valid_id), into ID. 0, or -1 with ERR set. */
int remote_create(struct http_client *c, const struct http_request *rq, const long *ok,
		  const char *key, char *id, size_t idsz, char *err, size_t errsz);

/* ops->destroy of a driver that finds its sandboxes by name (FIND) and deletes one with DELETE
 * DELETE_PREFIX + id (200, 204, and 404 for one that does not exist, count as deleted; BODY_MAX
 * bytes of an answer kept); s->priv is its state, whose first member is its http_client. X is a
 * sandbox id, or the deterministic name when the reconciler never recorded an id (a teardown
 * after a crash between create and record): the sandboxes FIND finds under name X go first, at
 * most REMOTE_DESTROY_MAX of them; when there are none, X itself is deleted as an id. 0, or -1
 * with ERR set. */
int remote_destroy(struct sbx *s, const char *x, remote_find_fn *find, const char *delete_prefix,
		   size_t body_max, char *err, size_t errsz);

#endif
