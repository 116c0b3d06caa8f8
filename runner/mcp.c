/* The MCP client of the runner (contract in mcp.h): libcurl's multi interface drives one easy
 * handle per client (its connection kept between requests), so a request can ask the cancel
 * callback and keep its own deadline while the answer's bytes go to the reader
 * (mcp_answer.c). */
#include "mcp.h"
#include "mcp_answer.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "../common/clock.h"
#include "../common/hostaddr.h"
#include "../common/redact.h"
#include "../sandbox/transfer.h"

#define MCP_PROTOCOLS "http,https"
#define MCP_USER_AGENT MCP_CLIENT_NAME "/" MCP_CLIENT_VERSION
#define MCP_VERSION_MAX 32			/* bytes of a protocol version kept */
#define MCP_REFUSED_MAX (INET6_ADDRSTRLEN + 96) /* the refusal of an address of this machine */
#define MCP_METHOD_NOT_FOUND (-32601L)

/* The protocol versions whose tools/list and tools/call this client speaks: the one it asks for
 * first, then the others a server may answer with (the official SDK's list). */
static const char *const versions[] = { MCP_PROTOCOL_VERSION, "2025-11-25", "2025-03-26",
					"2024-11-05" };

struct mcp_client {
	char url[MCP_URL_MAX + 1];
	char *bearer; /* NULL when none (owned; wiped at mcp_close) */
	struct mcp_limits lim;
	int (*cancel)(void *);
	void *arg;
	CURL *easy;
	CURLM *multi; /* keeps the connection between requests */
	char session_id[MCP_SESSION_ID_MAX + 1];
	char protocol[MCP_VERSION_MAX]; /* agreed at initialize; "" before */
	long long next_id;
	char errbuf[CURL_ERROR_SIZE];
	char refused[INET6_ADDRSTRLEN]; /* the address open_socket last refused, or "" */
};

static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;
	while (n--)
		*v++ = 0;
}

/* The length of the piece of BEARER that ends TEXT (LEN bytes): its first MCP_BEARER_CUT_MIN
 * bytes or more, not all of it, as a cap (a quote's, a message's, a result's) leaves a copy it
 * cut; 0 when there is none. The longest such piece. */
static size_t bearer_cut(const char *text, size_t len, const char *bearer)
{
	size_t n = strlen(bearer);
	const char *end = text + len, *p = len >= n ? end - n + 1 : text;

	for (; end - p >= MCP_BEARER_CUT_MIN && (p = memchr(p, bearer[0], (size_t)(end - p))); p++)
		if (end - p >= MCP_BEARER_CUT_MIN && !memcmp(p, bearer, (size_t)(end - p)))
			return (size_t)(end - p);
	return 0;
}

/* Every copy of the bearer in ERR's message masked, and a cut one that ends it. */
static void scrub(const struct mcp_client *c, struct mcp_error *err)
{
	size_t n = c->bearer ? strlen(c->bearer) : 0, len, cut;
	char *p;

	if (!n)
		return;
	while ((p = strstr(err->message, c->bearer)))
		memset(p, '*', n);
	len = strlen(err->message);
	cut = bearer_cut(err->message, len, c->bearer);
	memset(err->message + len - cut, '*', cut);
}

/* ---- one exchange ---- */

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	mcp_answer_header(arg, data, size * nmemb);
	return size * nmemb;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	/* 0 ends the transfer (CURLE_WRITE_ERROR): the reader has decided */
	return mcp_answer_feed(arg, data, size * nmemb) ? 0 : size * nmemb;
}

/* libcurl's socket for each address it tries: none for an address of this machine unless the
 * limits allow it (mcp_limits.local_addresses). Checked here, on the address being dialled, so
 * that a name resolving to one (or re-resolving, between requests) is refused too; a refusal
 * ends the connect (libcurl tries no other address of the name). */
static curl_socket_t open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct mcp_client *c = arg;
	const void *addr = NULL;

	(void)purpose;
	if (a->family == AF_INET)
		addr = &((const struct sockaddr_in *)(const void *)&a->addr)->sin_addr;
	else if (a->family == AF_INET6)
		addr = &((const struct sockaddr_in6 *)(const void *)&a->addr)->sin6_addr;
	if (!c->lim.local_addresses && (!addr || hostaddr_is_local(a->family, addr))) {
		if (!addr || !inet_ntop(a->family, addr, c->refused, sizeof(c->refused)))
			snprintf(c->refused, sizeof(c->refused), "(family %d)", a->family);
		return CURL_SOCKET_BAD;
	}
	/* close-on-exec: nothing the runner forks may inherit the connection */
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* Append "NAME: VALUE" to *LIST. -1 when out of memory. */
static int add_header(struct curl_slist **list, const char *name, const char *value)
{
	size_t n = strlen(name) + 2 + strlen(value) + 1;
	char *line = malloc(n);
	int rc;

	if (!line)
		return -1;
	snprintf(line, n, "%s: %s", name, value);
	rc = transfer_list_add(list, line);
	wipe(line, n);
	free(line);
	return rc;
}

static void free_headers(struct curl_slist *list)
{
	for (struct curl_slist *h = list; h; h = h->next)
		wipe(h->data, strlen(h->data));
	curl_slist_free_all(list);
}

/* The headers of a request: the bearer, the session and its protocol version. NULL when out of
 * memory. */
static struct curl_slist *headers(const struct mcp_client *c, int post)
{
	struct curl_slist *list = NULL;
	char *auth = NULL;
	int rc = 0;

	if (post)
		rc = add_header(&list, "Content-Type", "application/json");
	rc = rc || add_header(&list, "Accept", "application/json, text/event-stream");
	rc = rc || transfer_list_add(&list, "Expect:"); /* no 100-continue round trip */
	if (!rc && c->bearer) {
		size_t n = sizeof("Bearer ") + strlen(c->bearer);
		if (!(auth = malloc(n)))
			rc = -1;
		else {
			snprintf(auth, n, "Bearer %s", c->bearer);
			rc = add_header(&list, "Authorization", auth);
			wipe(auth, n);
			free(auth);
		}
	}
	if (!rc && c->session_id[0])
		rc = add_header(&list, "Mcp-Session-Id", c->session_id);
	if (!rc && c->protocol[0])
		rc = add_header(&list, "MCP-Protocol-Version", c->protocol);
	if (rc) {
		free_headers(list);
		return NULL;
	}
	return list;
}

/* How the transfer was left. */
enum run_end { RUN_ENDED, RUN_ANSWERED, RUN_TIMEOUT, RUN_CANCELLED, RUN_BROKEN };

/* Run the transfer that is set up until it ends, its response is read (then at most
 * MCP_LINGER_MS more for its end), DEADLINE (clock_mono_ms) passes or, when ASK, the cancel
 * callback says stop. *RC: the transfer's result when it ended. */
static enum run_end run(struct mcp_client *c, struct mcp_answer *a, long long deadline, int ask,
			CURLcode *rc)
{
	long long now = clock_mono_ms(), next_ask = now + MCP_CANCEL_POLL_MS, done_at = 0, due;
	int running;

	*rc = CURLE_OK;
	while ((running = transfer_perform(c->multi)) > 0) {
		now = clock_mono_ms();
		if (mcp_answer_done(a)) {
			if (!done_at)
				done_at = now;
			if (now - done_at >= MCP_LINGER_MS)
				return RUN_ANSWERED;
			due = done_at + MCP_LINGER_MS;
		} else {
			if (now >= deadline)
				return RUN_TIMEOUT;
			if (ask && c->cancel && now >= next_ask) {
				if (c->cancel(c->arg))
					return RUN_CANCELLED;
				next_ask = clock_mono_ms() + MCP_CANCEL_POLL_MS;
			}
			due = ask && c->cancel && next_ask < deadline ? next_ask : deadline;
		}
		transfer_wait(c->multi, due - now, MCP_CANCEL_POLL_MS);
	}
	if (running < 0)
		return RUN_BROKEN;
	*rc = transfer_result(c->multi, c->easy);
	return RUN_ENDED;
}

/* Send MSG (NULL: a DELETE of the session) as a request with ID (MCP_ANSWER_NO_ID: a
 * notification, or the DELETE) within TIMEOUT_MS, asking the cancel callback when ASK. 0 with
 * *RESULT the response's result (new reference; NULL without an id), or -1 with ERR set. */
static int exchange(struct mcp_client *c, const json_t *msg, long long id, long timeout_ms, int ask,
		    json_t **result, struct mcp_error *err)
{
	struct curl_slist *list = NULL;
	struct mcp_answer a;
	enum run_end end;
	const char *broken = NULL;
	char *body = NULL, refused[MCP_REFUSED_MAX];
	curl_off_t connected = 0;
	CURLcode rc;
	int ret = -1;

	*result = NULL;
	memset(err, 0, sizeof(*err));
	mcp_answer_init(&a, id, c->lim.answer_max);
	if (ask && c->cancel && c->cancel(c->arg)) {
		mcp_fail(err, MCP_ERR_CANCELLED, "the call was cancelled");
		goto out;
	}
	if ((msg && !(body = json_dumps(msg, JSON_COMPACT))) || !(list = headers(c, msg != NULL))) {
		mcp_fail(err, MCP_ERR_NOMEM, "out of memory building a request");
		goto out;
	}
	c->errbuf[0] = c->refused[0] = '\0';
	if (msg) {
		curl_easy_setopt(c->easy, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	} else {
		curl_easy_setopt(c->easy, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c->easy, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(c->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c->easy, CURLOPT_CONNECTTIMEOUT_MS, c->lim.connect_timeout_ms);
	curl_easy_setopt(c->easy, CURLOPT_HEADERDATA, &a);
	curl_easy_setopt(c->easy, CURLOPT_WRITEDATA, &a);
	if (curl_multi_add_handle(c->multi, c->easy) != CURLM_OK) {
		mcp_fail(err, MCP_ERR_NOMEM, "the request could not be started");
		goto out;
	}
	end = run(c, &a, clock_mono_ms() + timeout_ms, ask, &rc);
	curl_easy_getinfo(c->easy, CURLINFO_CONNECT_TIME_T, &connected);
	curl_multi_remove_handle(c->multi, c->easy); /* a transfer left early is closed */
	if (end == RUN_CANCELLED) {
		mcp_fail(err, MCP_ERR_CANCELLED, "the call was cancelled");
		goto out;
	}
	if (end == RUN_TIMEOUT || (end == RUN_ENDED && rc == CURLE_OPERATION_TIMEDOUT)) {
		if (connected || a.status)
			mcp_fail(err, MCP_ERR_TIMEOUT, "no answer from the server within %ld ms",
				 timeout_ms);
		else
			mcp_fail(err, MCP_ERR_TIMEOUT, "no connection to the server within %ld ms",
				 timeout_ms < c->lim.connect_timeout_ms
					 ? timeout_ms
					 : c->lim.connect_timeout_ms);
		err->http_status = a.status;
		goto out;
	}
	if (end == RUN_BROKEN) {
		broken = "the transfer failed";
	} else if (end == RUN_ENDED && rc != CURLE_OK && !a.failed) {
		broken = c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc);
		if (c->refused[0] && !connected) { /* open_socket refused the address */
			snprintf(refused, sizeof(refused),
				 "the server's address %s is this machine's, refused unless "
				 "[runner] mcp_local_addresses = 1",
				 c->refused);
			broken = refused;
		}
	}
	ret = mcp_answer_finish(&a, broken, result, err);
	if (!ret && a.session_id[0])
		memcpy(c->session_id, a.session_id, sizeof(c->session_id));
out:
	scrub(c, err);
	mcp_answer_release(&a);
	free_headers(list);
	if (body) {
		wipe(body, strlen(body)); /* the arguments may hold what the model was told */
		free(body);
	}
	return ret;
}

/* ---- JSON-RPC ---- */

/* The message {"jsonrpc":"2.0", "id"?, "method", "params"?} (new reference, PARAMS stolen;
 * NULL when out of memory). */
static json_t *message(long long id, const char *method, json_t *params)
{
	json_t *m = json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method", method);

	if (!m)
		goto fail;
	if (id != MCP_ANSWER_NO_ID && json_object_set_new(m, "id", json_integer(id)))
		goto fail;
	if (params && json_object_set_new(m, "params", params)) {
		params = NULL;
		goto fail;
	}
	return m;
fail:
	json_decref(m);
	json_decref(params);
	return NULL;
}

/* Send the notification METHOD with PARAMS (stolen; may be NULL) within TIMEOUT_MS. */
static int notify(struct mcp_client *c, const char *method, json_t *params, long timeout_ms,
		  int ask, struct mcp_error *err)
{
	json_t *m = message(MCP_ANSWER_NO_ID, method, params), *none;
	int rc;

	if (!m)
		return mcp_fail(err, MCP_ERR_NOMEM, "out of memory building a request");
	rc = exchange(c, m, MCP_ANSWER_NO_ID, timeout_ms, ask, &none, err);
	json_decref(m);
	return rc;
}

/* The request METHOD with PARAMS (stolen; may be NULL), once. After a timeout or a cancel the
 * server is told (notifications/cancelled), but for initialize (the spec forbids it). */
static int request_once(struct mcp_client *c, const char *method, json_t *params, long timeout_ms,
			json_t **result, struct mcp_error *err)
{
	long long id = c->next_id++;
	json_t *m = message(id, method, params);
	struct mcp_error ignored;
	int rc;

	*result = NULL;
	if (!m)
		return mcp_fail(err, MCP_ERR_NOMEM, "out of memory building a request");
	rc = exchange(c, m, id, timeout_ms, 1, result, err);
	json_decref(m);
	if (rc && (err->kind == MCP_ERR_TIMEOUT || err->kind == MCP_ERR_CANCELLED) &&
	    strcmp(method, "initialize"))
		notify(c, "notifications/cancelled",
		       json_pack("{s:I,s:s}", "requestId", (json_int_t)id, "reason",
				 err->kind == MCP_ERR_TIMEOUT ? "timeout" : "cancelled"),
		       err->kind == MCP_ERR_TIMEOUT ? MCP_NOTICE_TIMEOUT_MS : MCP_CANCEL_NOTICE_MS,
		       0, &ignored);
	return rc;
}

/* initialize, then notifications/initialized: a new session. */
static int initialize(struct mcp_client *c, struct mcp_error *err)
{
	json_t *params = json_pack("{s:s,s:{},s:{s:s,s:s}}", "protocolVersion",
				   MCP_PROTOCOL_VERSION, "capabilities", "clientInfo", "name",
				   MCP_CLIENT_NAME, "version", MCP_CLIENT_VERSION);
	json_t *result = NULL;
	const char *v;
	size_t i;
	int rc = -1;

	c->session_id[0] = c->protocol[0] = '\0';
	if (!params)
		return mcp_fail(err, MCP_ERR_NOMEM, "out of memory building a request");
	if (request_once(c, "initialize", params, c->lim.request_timeout_ms, &result, err))
		goto out;
	v = json_string_value(json_object_get(result, "protocolVersion"));
	for (i = 0; v && i < sizeof(versions) / sizeof(versions[0]); i++)
		if (!strcmp(v, versions[i]))
			break;
	if (!v || i == sizeof(versions) / sizeof(versions[0])) {
		mcp_fail(err, MCP_ERR_PROTOCOL,
			 "the server speaks MCP version '%.32s', not one this client speaks (%s, "
			 "2025-11-25, 2025-03-26, 2024-11-05)",
			 v ? v : "(none)", MCP_PROTOCOL_VERSION);
		goto out;
	}
	snprintf(c->protocol, sizeof(c->protocol), "%s", v);
	rc = notify(c, "notifications/initialized", NULL, c->lim.request_timeout_ms, 1, err);
out:
	json_decref(result);
	return rc;
}

/* The request METHOD with PARAMS (stolen; may be NULL). A session the server no longer knows
 * (404 to a request that carried its id) is initialized again and the request sent again, once:
 * the server ran nothing for it. */
static int request(struct mcp_client *c, const char *method, json_t *params, long timeout_ms,
		   json_t **result, struct mcp_error *err)
{
	int had_session = c->session_id[0] != '\0', rc;

	rc = request_once(c, method, json_incref(params), timeout_ms, result, err);
	if (rc && had_session && err->http_status == 404 && err->kind == MCP_ERR_PROTOCOL &&
	    !initialize(c, err))
		rc = request_once(c, method, json_incref(params), timeout_ms, result, err);
	json_decref(params);
	return rc;
}

/* ---- the interface ---- */

static int url_ok(const char *url)
{
	size_t n = strnlen(url, MCP_URL_MAX + 1);

	if (n > MCP_URL_MAX || (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8)))
		return 0;
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

static int bearer_ok(const char *b)
{
	size_t n = strnlen(b, MCP_BEARER_MAX + 1);

	if (n > MCP_BEARER_MAX)
		return 0;
	for (const char *p = b; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

/* LIMITS with 0 (or less) taking the defaults. */
static struct mcp_limits limits_or_defaults(const struct mcp_limits *limits)
{
	struct mcp_limits l = { 0 };

	if (limits)
		l = *limits;
	l.connect_timeout_ms =
		l.connect_timeout_ms > 0 ? l.connect_timeout_ms : MCP_CONNECT_TIMEOUT_MS;
	l.request_timeout_ms =
		l.request_timeout_ms > 0 ? l.request_timeout_ms : MCP_REQUEST_TIMEOUT_MS;
	l.call_timeout_ms = l.call_timeout_ms > 0 ? l.call_timeout_ms : MCP_CALL_TIMEOUT_MS;
	l.answer_max = l.answer_max ? l.answer_max : MCP_ANSWER_MAX;
	l.result_text_max = l.result_text_max ? l.result_text_max : MCP_RESULT_TEXT_MAX;
	l.tools_max = l.tools_max ? l.tools_max : MCP_TOOLS_MAX;
	return l;
}

struct mcp_client *mcp_connect(const char *url, const char *bearer, const struct mcp_limits *limits,
			       int (*cancel)(void *), void *arg, struct mcp_error *err)
{
	struct mcp_client *c;

	memset(err, 0, sizeof(*err));
	if (!url || !url_ok(url)) {
		mcp_fail(
			err, MCP_ERR_INVALID,
			"the server's url must be an http or https URL of at most %d bytes without "
			"spaces or control characters",
			MCP_URL_MAX);
		return NULL;
	}
	if (bearer && !bearer_ok(bearer)) {
		mcp_fail(err, MCP_ERR_INVALID,
			 "the credential's token must be at most %d bytes without control "
			 "characters",
			 MCP_BEARER_MAX);
		return NULL;
	}
	if (!(c = calloc(1, sizeof(*c)))) {
		mcp_fail(err, MCP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	c->lim = limits_or_defaults(limits);
	c->cancel = cancel;
	c->arg = arg;
	c->next_id = 1;
	snprintf(c->url, sizeof(c->url), "%s", url);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		free(c);
		mcp_fail(err, MCP_ERR_NOMEM, "libcurl could not be set up");
		return NULL;
	}
	if ((bearer && *bearer && !(c->bearer = strdup(bearer))) || !(c->easy = curl_easy_init()) ||
	    !(c->multi = curl_multi_init())) {
		mcp_close(c);
		mcp_fail(err, MCP_ERR_NOMEM, "out of memory");
		return NULL;
	}
	curl_easy_setopt(c->easy, CURLOPT_URL, c->url);
	curl_easy_setopt(c->easy, CURLOPT_PROTOCOLS_STR, MCP_PROTOCOLS);
	curl_easy_setopt(c->easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c->easy, CURLOPT_USERAGENT, MCP_USER_AGENT);
	curl_easy_setopt(c->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(c->easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(c->easy, CURLOPT_OPENSOCKETDATA, c);
	if (initialize(c, err)) {
		c->session_id[0] = '\0'; /* nothing to end */
		mcp_close(c);
		return NULL;
	}
	return c;
}

/* A tool of tools/list's answer, checked and reduced to what the runner uses (new reference),
 * or NULL with ERR set. I: its place in the whole list. */
static json_t *list_entry(const json_t *t, size_t i, struct mcp_error *err)
{
	const json_t *name = json_object_get(t, "name"),
		     *schema = json_object_get(t, "inputSchema");
	const char *n = json_string_value(name), *type;
	json_t *out;
	size_t len = json_string_length(name);

	for (size_t k = 0; n && k < len; k++)
		if ((unsigned char)n[k] < 0x20 || n[k] == 0x7f)
			n = NULL;
	if (!n || !len || len > MCP_REMOTE_NAME_MAX) {
		mcp_fail(
			err, MCP_ERR_PROTOCOL,
			"tools/list: tools[%zu].name is not a string of 1-%d bytes without control "
			"characters",
			i, MCP_REMOTE_NAME_MAX);
		return NULL;
	}
	type = json_string_value(json_object_get(schema, "type"));
	if (!json_is_object(schema) || !type || strcmp(type, "object")) {
		mcp_fail(err, MCP_ERR_PROTOCOL,
			 "tools/list: tools[%zu].inputSchema (tool '%.64s') is not an object with "
			 "type 'object'",
			 i, n);
		return NULL;
	}
	out = json_pack("{s:O,s:O}", "name", name, "inputSchema", schema);
	if (out && json_is_string(json_object_get(t, "description")))
		json_object_set(out, "description", json_object_get(t, "description"));
	if (out && json_is_string(json_object_get(t, "title")))
		json_object_set(out, "title", json_object_get(t, "title"));
	if (!out)
		mcp_fail(err, MCP_ERR_NOMEM, "out of memory reading the tools");
	return out;
}

/* Whether ALL (the tools kept so far) has one named as T is. */
static int listed(const json_t *all, const json_t *t)
{
	const json_t *name = json_object_get(t, "name"), *k;
	size_t i;

	json_array_foreach (all, i, k)
		if (json_equal(json_object_get(k, "name"), name))
			return 1;
	return 0;
}

int mcp_list_tools(struct mcp_client *c, json_t **tools, struct mcp_error *err)
{
	json_t *all = json_array(), *result = NULL, *params = NULL, *entry, *t;
	const json_t *page, *next;
	size_t i, seen = 0; /* tools of every page so far, repeats included */
	int pages = 0, rc;

	*tools = NULL;
	memset(err, 0, sizeof(*err));
	if (!all)
		return mcp_fail(err, MCP_ERR_NOMEM, "out of memory");
	for (;;) {
		if (++pages > MCP_LIST_PAGES_MAX) {
			mcp_fail(err, MCP_ERR_PROTOCOL,
				 "tools/list: more than %d pages (the limit)", MCP_LIST_PAGES_MAX);
			goto fail;
		}
		rc = request(c, "tools/list", params, c->lim.request_timeout_ms, &result, err);
		params = NULL; /* taken */
		if (rc && pages == 1 && err->kind == MCP_ERR_RPC &&
		    err->rpc_code == MCP_METHOD_NOT_FOUND)
			break; /* a server without tools */
		if (rc)
			goto fail;
		page = json_object_get(result, "tools");
		if (!json_is_array(page)) {
			mcp_fail(err, MCP_ERR_PROTOCOL, "tools/list: 'tools' is not an array");
			goto fail;
		}
		json_array_foreach (page, i, t) {
			if (seen >= c->lim.tools_max) { /* repeats count: they cost the same */
				mcp_fail(err, MCP_ERR_PROTOCOL,
					 "tools/list: the server lists more than %zu tools (the "
					 "limit)",
					 c->lim.tools_max);
				goto fail;
			}
			if (!(entry = list_entry(t, seen++, err)))
				goto fail;
			if (listed(all, entry)) { /* the model takes each name once: the first */
				json_decref(entry);
				continue;
			}
			if (json_array_append_new(all, entry)) {
				mcp_fail(err, MCP_ERR_NOMEM, "out of memory reading the tools");
				goto fail;
			}
		}
		next = json_object_get(result, "nextCursor");
		if (!next || json_is_null(next))
			break;
		if (!json_is_string(next)) {
			mcp_fail(err, MCP_ERR_PROTOCOL, "tools/list: 'nextCursor' is not a string");
			goto fail;
		}
		if (!(params = json_pack("{s:O}", "cursor", next))) {
			mcp_fail(err, MCP_ERR_NOMEM, "out of memory");
			goto fail;
		}
		json_decref(result);
		result = NULL;
	}
	json_decref(result);
	memset(err, 0, sizeof(*err));
	*tools = all;
	return 0;
fail:
	json_decref(params);
	json_decref(result);
	json_decref(all);
	return -1;
}

/* TEXT with every copy of the bearer, and a cut one that ends it (bearer_cut), as REDACT_MASK
 * (new string, caller frees), or NULL when it has none or memory ran out. */
static char *masked(const char *text, const char *bearer)
{
	size_t n = strlen(bearer), m = strlen(REDACT_MASK), count = 0, rest, cut;
	const char *p = text, *q, *after = text;
	char *out = NULL, *w;

	for (q = text; (q = strstr(q, bearer)); q += n) {
		count++;
		after = q + n;
	}
	rest = strlen(after);
	cut = bearer_cut(after, rest, bearer);
	if ((!count && !cut) ||
	    !(out = malloc(strlen(text) - count * n + count * m - cut + (cut ? m : 0) + 1)))
		return NULL;
	for (w = out; (q = strstr(p, bearer)); p = q + n) {
		memcpy(w, p, (size_t)(q - p));
		w += q - p;
		memcpy(w, REDACT_MASK, m);
		w += m;
	}
	memcpy(w, p, rest - cut);
	w += rest - cut;
	if (cut) {
		memcpy(w, REDACT_MASK, m);
		w += m;
	}
	*w = '\0';
	return out;
}

/* The bearer masked in every text block of R. -1 when out of memory. */
static int scrub_result(const struct mcp_client *c, struct mcp_result *r)
{
	json_t *b;
	size_t i;

	if (!c->bearer)
		return 0;
	json_array_foreach (r->content, i, b) {
		const char *text = json_string_value(json_object_get(b, "text"));
		char *m = text ? masked(text, c->bearer) : NULL;

		if (m && json_object_set_new(b, "text", json_string(m))) {
			free(m);
			return -1;
		}
		free(m);
	}
	return 0;
}

int mcp_call(struct mcp_client *c, const char *tool, const json_t *args, struct mcp_result *out,
	     struct mcp_error *err)
{
	json_t *params, *result = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	if (!tool || !*tool)
		return mcp_fail(err, MCP_ERR_INVALID, "the tool's name is empty");
	if (args && !json_is_object(args))
		return mcp_fail(err, MCP_ERR_INVALID, "the tool's arguments are not an object");
	params = json_pack("{s:s,s:o}", "name", tool, "arguments",
			   args ? json_deep_copy(args) : json_object());
	if (!params)
		return mcp_fail(err, MCP_ERR_NOMEM, "out of memory building a request");
	if (request(c, "tools/call", params, c->lim.call_timeout_ms, &result, err))
		goto out;
	if (mcp_result_convert(result, c->lim.result_text_max, out, err))
		goto out;
	if (scrub_result(c, out)) {
		mcp_result_release(out);
		mcp_fail(err, MCP_ERR_NOMEM, "out of memory reading a tool's result");
		goto out;
	}
	rc = 0;
out:
	json_decref(result);
	return rc;
}

const char *mcp_protocol(const struct mcp_client *c)
{
	return c->protocol;
}

const char *mcp_session_id(const struct mcp_client *c)
{
	return c->session_id;
}

void mcp_close(struct mcp_client *c)
{
	struct mcp_error ignored;
	json_t *none;

	if (!c)
		return;
	if (c->easy && c->multi && c->session_id[0])
		exchange(c, NULL, MCP_ANSWER_NO_ID, MCP_NOTICE_TIMEOUT_MS, 0, &none, &ignored);
	if (c->easy)
		curl_easy_cleanup(c->easy);
	if (c->multi)
		curl_multi_cleanup(c->multi);
	curl_global_cleanup();
	if (c->bearer) {
		wipe(c->bearer, strlen(c->bearer));
		free(c->bearer);
	}
	wipe(c, sizeof(*c));
	free(c);
}
