/* libFuzzer target: the request layer (http/request.c, http/router.c, http/response.c) and the
 * API policy (handlers/dispatch.c) as serve.c drives them, over the fake route table of
 * tests/unit/stubs.c (no database).
 *
 * Input: CGI parameters, one "NAME=value" line each (REQUEST_METHOD, REQUEST_URI, QUERY_STRING,
 * CONTENT_LENGTH, REQUEST_ID, HTTP_ANTHROPIC_BETA, ...; repeats allowed), then an empty line,
 * then the body, which req_read pulls through a reader callback. Authentication succeeds when
 * HTTP_X_API_KEY is present and is not "revoked".
 *
 * Checked for every input: a response is always complete (a JSON object body of body_len
 * bytes, never the 500 of a failed envelope); REDIRECT_STATUS (the web server's own error,
 * through its error handler) is answered with exactly that status; an error is the
 * docs/api.md §2 envelope with the request's id and x-should-retry; headers hold no line
 * breaks; a handler runs only when the route's checks passed (beta token present, JSON object
 * body where one is required); query parameters are unique; req_header_all agrees with itself
 * at every buffer size. */
#include <ctype.h>

#include "fuzz.h"

#include "../unit/stubs.h"

#define FUZZ_MAX_PARAMS 64

/* The string value of V, or "" when V is not a string. */
static const char *jstr(json_t *v)
{
	return json_is_string(v) ? json_string_value(v) : "";
}

static int request_id_valid(const char *s)
{
	if (strncmp(s, "req_", 4) || strlen(s) != REQ_ID_LEN)
		return 0;
	for (s += 4; *s; s++)
		if (!isalnum((unsigned char)*s))
			return 0;
	return 1;
}

static int count_params(const struct request *req, const char *name)
{
	size_t n = strlen(name);
	int found = 0;

	for (char **e = req->env; *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			found++;
	return found;
}

/* req_header_all at every buffer size up to the joined length agrees with the full answer. */
static void check_header_all(const struct request *req, const char *name)
{
	static char full[1 << 16], small[1 << 16];
	int n = req_header_all(req, name, full, sizeof(full)), k;
	size_t len;

	if (n < 0)
		return; /* longer than 64 KiB: nothing else to compare */
	FUZZ_CHECK(n == count_params(req, name), "%s: %d joined, %d present", name, n,
		   count_params(req, name));
	len = strlen(full);
	for (size_t sz = 0; sz <= len + 1; sz += 1 + sz / 8) {
		k = req_header_all(req, name, small, sz);
		if (sz > len)
			FUZZ_CHECK(k == n && !strcmp(small, full), "%s at size %zu", name, sz);
		else
			FUZZ_CHECK(k == -1, "%s: size %zu < %zu + 1 accepted (%d)", name, sz, len,
				   k);
	}
	k = req_header_all(req, name, small, len + 1);
	FUZZ_CHECK(k == n && !strcmp(small, full), "%s at the exact size", name);
}

static void check_response(const struct request *req, const struct response *resp, int read_ok)
{
	json_t *body, *err;
	json_error_t jerr;

	FUZZ_CHECK(resp->body, "no response body (status %d)", resp->status);
	FUZZ_CHECK(strlen(resp->body) == resp->body_len, "body_len %zu, strlen %zu", resp->body_len,
		   strlen(resp->body));
	/* the web server's own error (REDIRECT_STATUS) is answered with exactly that status;
	 * otherwise the stubs answer 200 and the request layer 4xx: a 500 is a failed envelope */
	if (req->server_error)
		FUZZ_CHECK(resp->status == req->server_error, "status %d for REDIRECT_STATUS %d",
			   resp->status, req->server_error);
	else
		FUZZ_CHECK(resp->status == 200 || (resp->status >= 400 && resp->status < 500),
			   "status %d: %s", resp->status, resp->body);
	FUZZ_CHECK(resp->nheaders >= 0 && resp->nheaders <= RESP_MAX_HEADERS, "%d headers",
		   resp->nheaders);
	for (int i = 0; i < resp->nheaders; i++) {
		FUZZ_CHECK(strlen(resp->headers[i]) < RESP_HEADER_MAX, "header %d unterminated", i);
		FUZZ_CHECK(!strpbrk(resp->headers[i], "\r\n"), "line break in header '%s'",
			   resp->headers[i]);
		FUZZ_CHECK(strstr(resp->headers[i], ": "), "header '%s' has no ': '",
			   resp->headers[i]);
	}
	body = json_loadb(resp->body, resp->body_len, JSON_REJECT_DUPLICATES, &jerr);
	FUZZ_CHECK(json_is_object(body), "body is not a JSON object (%s): %s", jerr.text,
		   resp->body);

	if (resp->status == 200) {
		FUZZ_CHECK(read_ok && stub_last_handler, "200 without a handler");
		FUZZ_CHECK(!strcmp(jstr(json_object_get(body, "handler")), stub_last_handler),
			   "200 body %s", resp->body);
	} else {
		const char *retry = resp_header_get(resp, "x-should-retry");
		/* the request layer's refusals are final; the web server's 408 and 5xx are not */
		int retryable = req->server_error && (resp->status == 408 || resp->status >= 500);

		FUZZ_CHECK(!stub_last_handler, "handler %s ran but the status is %d",
			   stub_last_handler, resp->status);
		err = json_object_get(body, "error");
		FUZZ_CHECK(!strcmp(jstr(json_object_get(body, "type")), "error"),
			   "envelope type: %s", resp->body);
		FUZZ_CHECK(json_is_object(err), "no error object: %s", resp->body);
		FUZZ_CHECK(
			!strcmp(jstr(json_object_get(err, "type")), resp_error_type(resp->status)),
			"error.type for %d: %s", resp->status, resp->body);
		FUZZ_CHECK(json_string_length(json_object_get(err, "message")) > 0,
			   "empty message: %s", resp->body);
		FUZZ_CHECK(!strcmp(jstr(json_object_get(body, "request_id")), req->request_id),
			   "request_id %s in %s", req->request_id, resp->body);
		FUZZ_CHECK(retry && !strcmp(retry, retryable ? "true" : "false"),
			   "x-should-retry '%s' for %d", retry ? retry : "(none)", resp->status);
		/* the router's own 405 names the methods; the web server's (through its error
		 * handler, as nginx's own page) cannot know them */
		if (resp->status == 405 && !req->server_error)
			FUZZ_CHECK(resp_header_get(resp, "allow"), "405 without allow");
	}
	json_decref(body);
}

/* What a handler may rely on when it runs. */
static void check_handled(const struct request *req)
{
	const char *h = stub_last_handler;
	char beta[ROUTE_BETA_HEADER_MAX];

	FUZZ_CHECK(strlen(req->path) < REQ_MAX_PATH && !strchr(req->path, '?'), "path '%s'",
		   req->path);
	for (int i = 0; i < req->nparams; i++)
		FUZZ_CHECK(*req->params[i] && !strchr(req->params[i], '/'), "capture %d '%s'", i,
			   req->params[i]);
	if (!strncmp(h, "health_", 7))
		return;
	FUZZ_CHECK(req_header_all(req, "HTTP_ANTHROPIC_BETA", beta, sizeof(beta)) > 0 &&
			   header_list_has(beta, ROUTE_BETA_REQUIRED),
		   "%s ran without the beta token", h);
	if (strstr(h, "_create") || strstr(h, "_update"))
		FUZZ_CHECK(json_is_object(req->json), "%s ran without a JSON object body", h);
	else if (strstr(h, "_archive"))
		FUZZ_CHECK(!req->json || json_is_object(req->json), "%s: body not an object", h);
	else
		FUZZ_CHECK(!req->json, "%s: a body was parsed", h);
}

static void check_query(const struct request *req)
{
	FUZZ_CHECK(req->nquery >= 0 && req->nquery <= REQ_MAX_QUERY, "%d query params",
		   req->nquery);
	for (int i = 0; i < req->nquery; i++) {
		size_t n;

		FUZZ_CHECK(req->query[i].name && req->query[i].value, "query %d NULL", i);
		n = strlen(req->query[i].name);
		if (n > 2 && !strcmp(req->query[i].name + n - 2, "[]"))
			continue; /* an array parameter ("types[]") may repeat */
		FUZZ_CHECK(req_query(req, req->query[i].name) == req->query[i].value,
			   "query '%s' is repeated", req->query[i].name);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct request req;
	static struct response resp;
	char *env[FUZZ_MAX_PARAMS + 1];
	const uint8_t *sep = NULL;
	struct worker w = { 0 };
	struct stub_src body;
	size_t head_len;
	char *head, *line, *save = NULL;
	const char *key;
	int n = 0, read_ok;

	for (size_t i = 0; i + 1 < size; i++)
		if (data[i] == '\n' && data[i + 1] == '\n') {
			sep = data + i;
			break;
		}
	head_len = sep ? (size_t)(sep - data) : size;
	body = (struct stub_src){ sep ? sep + 2 : data + size, sep ? size - head_len - 2 : 0, 0 };

	/* a parameter ends at its line break (or an embedded NUL, as in a C string) */
	head = fuzz_strndup(data, head_len);
	for (line = strtok_r(head, "\n", &save); line && n < FUZZ_MAX_PARAMS;
	     line = strtok_r(NULL, "\n", &save))
		env[n++] = line;
	env[n] = NULL;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.env = env;
	stub_last_handler = NULL;
	key = req_env(&req, "HTTP_X_API_KEY");
	stub_auth_result = key && strcmp(key, "revoked") ? 0 : -1;

	read_ok = req_read(&req, &resp, stub_read, &body) == 0;
	if (read_ok)
		stub_dispatch(&w, &req, &resp);
	FUZZ_CHECK(request_id_valid(req.request_id), "request id '%s'", req.request_id);
	check_response(&req, &resp, read_ok);
	if (read_ok)
		check_query(&req); /* a refused query string may stop at its repeated parameter */
	if (resp.status == 200)
		check_handled(&req);
	if (read_ok && req.has_content_length)
		FUZZ_CHECK(req.body && req.body[req.body_len] == '\0' &&
				   strlen(req.body) == req.body_len,
			   "body of %zu bytes", req.body_len);
	check_header_all(&req, "HTTP_ANTHROPIC_BETA");
	check_header_all(&req, "HTTP_X_API_KEY");
	check_header_all(&req, "CONTENT_LENGTH");

	req_release(&req);
	resp_release(&resp);
	free(head);
	return 0;
}
