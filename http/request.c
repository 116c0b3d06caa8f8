/* Request accessors and query parsing (no libfcgi here: see serve.c). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#include "../common/crypto.h"

const char *req_env(const struct request *req, const char *name)
{
	size_t n = strlen(name);

	for (char **e = req->env; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

int req_header_all(const struct request *req, const char *name, char *out, size_t outsz)
{
	size_t n = strlen(name), used = 0;
	int found = 0;

	if (!outsz)
		return -1;
	out[0] = '\0';
	for (char **e = req->env; e && *e; e++) {
		const char *v;
		size_t vlen;

		if (strncmp(*e, name, n) || (*e)[n] != '=')
			continue;
		v = *e + n + 1;
		vlen = strlen(v);
		if (used + vlen + (found ? 2 : 0) + 1 > outsz)
			return -1;
		if (found) {
			memcpy(out + used, ", ", 2);
			used += 2;
		}
		memcpy(out + used, v, vlen + 1);
		used += vlen;
		found++;
	}
	return found;
}

const char *req_query(const struct request *req, const char *name)
{
	for (int i = 0; i < req->nquery; i++)
		if (!strcmp(req->query[i].name, name))
			return req->query[i].value;
	return NULL;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The byte the escape "%XY" at S[I] (S[I] == '%') of S[0..len) stands for, or -1 when it is cut
 * short, not hexadecimal, or %00: a NUL would end the decoded string early, so no decoded
 * string can hold one. The one rule for decode() and decodes_to(). */
static int escaped_byte(const char *s, size_t i, size_t len)
{
	int hi, lo;

	if (i + 2 >= len)
		return -1;
	hi = hexval((unsigned char)s[i + 1]);
	lo = hexval((unsigned char)s[i + 2]);
	if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
		return -1;
	return hi << 4 | lo;
}

/* Percent-decode S[0..len) into a new string (caller frees); '+' is a space. NULL on a bad
 * escape or an embedded NUL. */
static char *decode(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '%') {
			int c = escaped_byte(s, i, len);
			if (c < 0)
				goto bad;
			*o++ = (char)c;
			i += 2;
		} else {
			*o++ = s[i] == '+' ? ' ' : s[i];
		}
	}
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

/* 1 when NAME is an array parameter, which may repeat ("types[]=a&types[]=b"). */
static int query_is_array(const char *name)
{
	size_t n = strlen(name);

	return n > 2 && !strcmp(name + n - 2, "[]");
}

int req_parse_query(struct request *req, const char *query)
{
	const char *p = query;

	while (p && *p) {
		const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		struct query_param *qp;

		if (end == p) {
			p = amp ? amp + 1 : NULL;
			continue;
		}
		if (req->nquery >= REQ_MAX_QUERY)
			return -1;
		qp = &req->query[req->nquery];
		qp->name = decode(p, (size_t)((eq ? eq : end) - p));
		qp->value = eq ? decode(eq + 1, (size_t)(end - eq - 1)) : strdup("");
		if (!qp->name || !qp->value) {
			free(qp->name);
			free(qp->value);
			qp->name = qp->value = NULL;
			return -1;
		}
		req->nquery++;
		if (!query_is_array(qp->name) && req_query(req, qp->name) != qp->value)
			return -1; /* a repeated parameter is ambiguous */
		p = amp ? amp + 1 : NULL;
	}
	return 0;
}

void req_release(struct request *req)
{
	free(req->body);
	req->body = NULL;
	req->body_len = 0;
	json_decref(req->json);
	req->json = NULL;
	for (int i = 0; i < req->nquery; i++) {
		free(req->query[i].name);
		free(req->query[i].value);
	}
	req->nquery = 0;
	req->nparams = 0;
}

static int valid_request_id(const char *s)
{
	if (!s || strncmp(s, "req_", 4) || strlen(s) != REQ_ID_LEN)
		return 0;
	for (const char *p = s + 4; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return 0;
	return 1;
}

/* 1 when the raw path RAW[0..len), percent-decoded, is exactly DECODED (PATH_INFO). DECODED is
 * never read past its NUL: every byte compared is one escaped_byte accepted, never a NUL. */
static int decodes_to(const char *raw, size_t len, const char *decoded)
{
	for (size_t i = 0; i < len; i++, decoded++) {
		int c = (unsigned char)raw[i];
		if (c == '%') {
			c = escaped_byte(raw, i, len);
			if (c < 0)
				return 0;
			i += 2;
		}
		if ((unsigned char)*decoded != c)
			return 0;
	}
	return *decoded == '\0';
}

/* Length of the SCRIPT_NAME prefix to skip in URI: non-zero only when the server split the
 * path, i.e. URI's path is SCRIPT_NAME followed by PATH_INFO (non-empty, as the server decoded
 * it). nginx sends no PATH_INFO; Apache and lighttpd send SCRIPT_NAME "" when the binary serves
 * the whole site. */
static size_t script_prefix(const struct request *req, const char *uri)
{
	const char *script = req_env(req, "SCRIPT_NAME");
	const char *info = req_env(req, "PATH_INFO");
	size_t n;

	if (!script || !info || !*info)
		return 0;
	n = strlen(script);
	if (n && !strncmp(uri, script, n) && uri[n] == '/' &&
	    decodes_to(uri + n, strcspn(uri + n, "?"), info))
		return n;
	return 0;
}

int req_read(struct request *req, struct response *resp, req_reader read, void *ctx)
{
	const char *method = req_env(req, "REQUEST_METHOD");
	const char *uri = req_env(req, "REQUEST_URI");
	const char *query = req_env(req, "QUERY_STRING");
	const char *clen = req_env(req, "CONTENT_LENGTH");
	const char *rid = req_env(req, "REQUEST_ID");
	const char *redirect = req_env(req, "REDIRECT_STATUS");
	size_t pathlen;

	if (valid_request_id(rid))
		strcpy(req->request_id, rid);
	else if (random_id(req->request_id, sizeof(req->request_id), "req_", ID_RANDOM_LEN))
		strcpy(req->request_id, "req_000000000000000000000000");

	snprintf(req->method, sizeof(req->method), "%s", method ? method : "GET");
	if (!uri)
		uri = req_env(req, "SCRIPT_NAME");
	if (!uri || !*uri)
		uri = "/";
	uri += script_prefix(req, uri);
	pathlen = strcspn(uri, "?");
	if (pathlen >= sizeof(req->path)) {
		resp_error(resp, req, 400, NULL, "request path is too long");
		return -1;
	}
	memcpy(req->path, uri, pathlen);
	req->path[pathlen] = '\0';
	if (!query && uri[pathlen] == '?')
		query = uri + pathlen + 1;
	if (req_parse_query(req, query)) {
		resp_error(
			resp, req, 400, NULL,
			"query string is malformed (bad escape, repeated or too many parameters)");
		return -1;
	}

	if (redirect && strlen(redirect) == 3 && redirect[0] >= '4' && redirect[0] <= '5' &&
	    isdigit((unsigned char)redirect[1]) && isdigit((unsigned char)redirect[2])) {
		req->server_error = atoi(redirect);
		return 0;
	}

	/* nginx sends an empty CONTENT_LENGTH for bodiless requests: that is a zero-length body */
	if (clen && *clen) {
		unsigned long long n = 0;
		for (const char *p = clen; *p; p++) {
			if (*p < '0' || *p > '9') {
				resp_error(resp, req, 400, NULL, "invalid Content-Length");
				return -1;
			}
			if (n <= REQ_MAX_BODY)
				n = n * 10 + (unsigned)(*p - '0');
		}
		if (n > REQ_MAX_BODY) {
			resp_too_large(resp, req);
			return -1;
		}
		req->has_content_length = 1;
		req->body = malloc(n + 1);
		if (!req->body) {
			resp_error(resp, req, 500, NULL, "out of memory");
			return -1;
		}
		req->body_len = read(ctx, req->body, n);
		req->body[req->body_len] = '\0';
		if (req->body_len != n) {
			resp_error(resp, req, 400, NULL,
				   "request body is shorter than its Content-Length");
			return -1;
		}
		if (memchr(req->body, '\0', n)) {
			resp_error(resp, req, 400, NULL, "request body contains a NUL byte");
			return -1;
		}
	}
	return 0;
}
