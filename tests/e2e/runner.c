/* e2e-runner: the data-driven HTTP case runner (docs/style.md, Tests).
 *
 * Walks a directory of cases, sends each case's request(s) to a running API and checks the
 * expectations written next to them. One process, one libcurl easy handle (connections are
 * reused across requests), one variable table per case. Everything it keeps from a response is
 * capped by a named constant. The file formats are described in usage() below and in
 * tests/e2e/README.md. */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "../../common/clock.h"
#include "../../common/strbuf.h"

#define RUN_MAX_FILE (8u << 20)	    /* bytes read from one request/expect file */
#define RUN_MAX_RESPONSE (4u << 20) /* response body bytes kept */
#define RUN_MAX_RESP_HEADERS 128    /* response header lines kept */
#define RUN_MAX_RESP_HEADER_BYTES (64u << 10)
#define RUN_MAX_REQ_HEADERS 64	     /* header and "-name" lines in one request file */
#define RUN_MAX_GEN_BODY (64u << 20) /* @body-bytes limit */
#define RUN_MIN_GEN_BODY 11	     /* strlen("{\"name\":\"\"}") */
#define RUN_MAX_SLEEP_MS 10000	     /* @sleep-ms limit */
#define RUN_MAX_VARS 128	     /* captured variables per case */
#define RUN_MAX_STEPS 64	     /* numbered steps per case */
#define RUN_MAX_DEPTH 16	     /* directory nesting below CASES_DIR */
#define RUN_MAX_CASES 100000
#define RUN_MAX_PATH 4096		      /* a case directory */
#define RUN_MAX_FILE_PATH (RUN_MAX_PATH + 32) /* a file inside it */
#define RUN_MAX_NAME 64			      /* variable, backend and method names */
#define RUN_CONNECT_TIMEOUT_MS 5000L
#define RUN_TOTAL_TIMEOUT_MS 30000L
#define RUN_REPORT_BODY_MAX 2000 /* response bytes shown for a failed step */
#define RUN_REPORT_VALUE_MAX 300 /* bytes of an actual value shown in a failure */
#define RUN_ENV_URL "TERRARIUM_URL"
#define RUN_ENV_URL_PREFIX "TERRARIUM_URL_"
#define RUN_ENV_DEFAULT_BACKEND "TERRARIUM_BACKEND" /* backend behind TERRARIUM_URL */
#define RUN_DEFAULT_BACKEND "local"
#define RUN_ENV_VERBOSE "TERRARIUM_E2E_VERBOSE"
#define RUN_ENV_VAR_PREFIX "E2E_" /* any E2E_* environment variable is a variable */

#define RUN_DEFAULT_VERSION "2023-06-01"
#define RUN_DEFAULT_BETA "managed-agents-2026-04-01"

/* Exit statuses. */
#define RUN_EXIT_OK 0
#define RUN_EXIT_FAILED 1
#define RUN_EXIT_USAGE 2

/* Outcome of one case. */
enum case_result { CASE_PASS, CASE_FAIL, CASE_SKIP, CASE_ERROR };

/* Result of checking one expect line. */
enum check { CHECK_OK = 0, CHECK_FAIL = 1, CHECK_BAD = -1 };

/* Result of substituting variables. */
enum subst_res {
	SUBST_OK = 0,
	SUBST_UNSET = 1, /* a capture that has not happened (an earlier assertion failed) */
	SUBST_BAD = -1,	 /* unknown filter, or an environment variable that is not set */
};

/* Result of evaluating a JSON path. */
enum path_res { PATH_FOUND, PATH_ABSENT, PATH_SYNTAX };

/* Variables the environment may supply (besides E2E_*). */
static const char *const run_env_vars[] = {
	"KEY", "KEY2", "KEY_ACCT2", "KEY_REVOKED", "WORKSPACE_ID", "WORKSPACE2_ID", NULL,
};

/* ------------------------------------------------------------------------------------------ */
/* Growable byte buffer, always NUL-terminated (the NUL is not counted in len). */

static void die_oom(void)
{
	fputs("e2e-runner: out of memory\n", stderr);
	exit(RUN_EXIT_USAGE);
}

/* The buffers below are common/strbuf's; the runner gives up on out of memory. */
static void buf_add(struct strbuf *b, const void *data, size_t n)
{
	if (strbuf_add(b, data, n))
		die_oom();
}

static void buf_adds(struct strbuf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void buf_addf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void buf_addf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = strbuf_vaddf(b, fmt, ap);
	va_end(ap);
	if (rc)
		die_oom();
}

/* Caller frees. */
static char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (!p)
		die_oom();
	return p;
}

/* Append S[0..N) to B with control bytes escaped, so that a report item stays on one line. */
static void buf_add_escaped(struct strbuf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\n')
			buf_adds(b, "\\n");
		else if (c == '\r')
			buf_adds(b, "\\r");
		else if (c == '\t')
			buf_adds(b, "\\t");
		else if (c < 0x20 || c == 0x7f)
			buf_addf(b, "\\x%02x", c);
		else
			buf_add(b, &s[i], 1);
	}
}

/* Read the file PATH (at most RUN_MAX_FILE bytes) into OUT. Returns 0, or -1 with ERR set. */
static int read_file(const char *path, struct strbuf *out, struct strbuf *err)
{
	FILE *f = fopen(path, "rb");
	char chunk[8192];
	size_t n;
	int ret = -1;

	strbuf_reset(out);
	buf_add(out, "", 0);
	if (!f) {
		buf_addf(err, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (out->len + n > RUN_MAX_FILE) {
			buf_addf(err, "%s is larger than %u bytes", path, RUN_MAX_FILE);
			goto out;
		}
		buf_add(out, chunk, n);
	}
	if (ferror(f)) {
		buf_addf(err, "cannot read %s: %s", path, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	fclose(f);
	return ret;
}

static int file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void trim_right(char *s)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
}

static char *skip_space(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return (char *)s;
}

/* ------------------------------------------------------------------------------------------ */
/* Variables: per-case captures, UNIQUE, and a fixed set of environment variables. */

struct vars {
	char *name[RUN_MAX_VARS];
	char *value[RUN_MAX_VARS];
	size_t n;
	char unique[RUN_MAX_NAME];
};

static int var_name_char(int c, int first)
{
	return c == '_' || isalpha(c) || (!first && isdigit(c));
}

static int var_is_env(const char *name)
{
	for (size_t i = 0; run_env_vars[i]; i++)
		if (strcmp(name, run_env_vars[i]) == 0)
			return 1;
	return strncmp(name, RUN_ENV_VAR_PREFIX, strlen(RUN_ENV_VAR_PREFIX)) == 0;
}

/* Start an empty table; SEQ (the case's number in this run) makes UNIQUE unique. */
static void vars_init(struct vars *vs, unsigned seq)
{
	memset(vs, 0, sizeof(*vs));
	/* [a-z0-9] only, so it is safe in names, hosts, paths and metadata keys. */
	snprintf(vs->unique, sizeof(vs->unique), "t%lxp%lxc%x", (unsigned long)time(NULL),
		 (unsigned long)getpid(), seq);
}

static void vars_release(struct vars *vs)
{
	for (size_t i = 0; i < vs->n; i++) {
		free(vs->name[i]);
		free(vs->value[i]);
	}
	vs->n = 0;
}

/* The value of NAME (borrowed), or NULL when it has none; then *WHY says why and *KIND is
 * SUBST_UNSET (not captured) or SUBST_BAD (missing from the environment). */
static const char *vars_get(const struct vars *vs, const char *name, const char **why,
			    enum subst_res *kind)
{
	const char *v;

	*why = "is not defined (not captured yet?)";
	*kind = SUBST_UNSET;
	if (strcmp(name, "UNIQUE") == 0)
		return vs->unique;
	if (var_is_env(name)) {
		v = getenv(name);
		*why = "is not set in the environment";
		*kind = SUBST_BAD;
		return v;
	}
	for (size_t i = 0; i < vs->n; i++)
		if (strcmp(vs->name[i], name) == 0)
			return vs->value[i];
	return NULL;
}

/* Set NAME to a copy of VALUE. Returns 0, or -1 with ERR set. */
static int vars_set(struct vars *vs, const char *name, const char *value, struct strbuf *err)
{
	if (strcmp(name, "UNIQUE") == 0 || var_is_env(name)) {
		buf_addf(err, "cannot capture into reserved variable %s", name);
		return -1;
	}
	for (size_t i = 0; i < vs->n; i++) {
		if (strcmp(vs->name[i], name) == 0) {
			free(vs->value[i]);
			vs->value[i] = xstrndup(value, strlen(value));
			return 0;
		}
	}
	if (vs->n == RUN_MAX_VARS) {
		buf_addf(err, "more than %d variables", RUN_MAX_VARS);
		return -1;
	}
	vs->name[vs->n] = xstrndup(name, strlen(name));
	vs->value[vs->n] = xstrndup(value, strlen(value));
	vs->n++;
	return 0;
}

static void add_urlencoded(struct strbuf *out, const char *v)
{
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;

		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
			buf_add(out, v, 1);
		else
			buf_addf(out, "%%%02X", c);
	}
}

/* Expand {{NAME}}, {{NAME|url}} (percent-encoded) and {{NAME|json}} (as a JSON string
 * literal) in IN[0..LEN) into OUT. Text that is not a well-formed reference is copied as is.
 * Returns SUBST_OK, or SUBST_UNSET / SUBST_BAD with ERR set. */
static enum subst_res subst(const struct vars *vs, const char *in, size_t len, struct strbuf *out,
			    struct strbuf *err)
{
	size_t i = 0;

	strbuf_reset(out);
	buf_add(out, "", 0);
	while (i < len) {
		char name[RUN_MAX_NAME], filter[RUN_MAX_NAME];
		size_t j = i + 2, nl = 0, fl = 0;
		const char *v, *why;
		enum subst_res kind;

		if (!(i + 1 < len && in[i] == '{' && in[i + 1] == '{')) {
			buf_add(out, &in[i], 1);
			i++;
			continue;
		}
		while (j < len && nl + 1 < sizeof(name) &&
		       var_name_char((unsigned char)in[j], nl == 0))
			name[nl++] = in[j++];
		name[nl] = '\0';
		if (j < len && in[j] == '|') {
			j++;
			while (j < len && fl + 1 < sizeof(filter) && islower((unsigned char)in[j]))
				filter[fl++] = in[j++];
		}
		filter[fl] = '\0';
		if (!nl || j + 1 >= len || in[j] != '}' || in[j + 1] != '}') {
			buf_add(out, &in[i], 1);
			i++;
			continue;
		}
		v = vars_get(vs, name, &why, &kind);
		if (!v) {
			buf_addf(err, "variable %s %s", name, why);
			return kind;
		}
		if (!fl) {
			buf_adds(out, v);
		} else if (strcmp(filter, "url") == 0) {
			add_urlencoded(out, v);
		} else if (strcmp(filter, "json") == 0) {
			json_t *s = json_string(v);
			char *enc = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;

			json_decref(s);
			if (!enc) {
				buf_addf(err, "variable %s is not valid UTF-8", name);
				return SUBST_BAD;
			}
			buf_adds(out, enc);
			free(enc);
		} else {
			buf_addf(err, "unknown filter |%s", filter);
			return SUBST_BAD;
		}
		i = j + 2;
	}
	return SUBST_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Requests. */

struct header {
	const char *name;
	const char *value;
};

struct request {
	char method[RUN_MAX_NAME];
	const char *target; /* path + query */
	struct header hdr[RUN_MAX_REQ_HEADERS];
	size_t nhdr;
	const char *omit[RUN_MAX_REQ_HEADERS]; /* "-name" lines */
	size_t nomit;
	const char *body;
	size_t body_len;
	long sleep_ms;
	struct strbuf text; /* substituted file; owns every pointer above */
	struct strbuf gen;  /* body made by @body-bytes */
};

static void request_release(struct request *rq)
{
	strbuf_release(&rq->text);
	strbuf_release(&rq->gen);
	memset(rq, 0, sizeof(*rq));
}

static int header_name_valid(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || strchr("!#$%&'*+-.^_`|~", *s)))
			return 0;
	return 1;
}

/* 1 when the request sets header NAME itself or asks for it not to be sent. */
static int request_mentions(const struct request *rq, const char *name)
{
	for (size_t i = 0; i < rq->nhdr; i++)
		if (strcasecmp(rq->hdr[i].name, name) == 0)
			return 1;
	for (size_t i = 0; i < rq->nomit; i++)
		if (strcasecmp(rq->omit[i], name) == 0)
			return 1;
	return 0;
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int request_directive(struct request *rq, char *line, struct strbuf *err)
{
	char *arg = strchr(line, ' ');
	long n;

	if (arg)
		*arg++ = '\0';
	if (strcmp(line, "@body-bytes") == 0 && arg &&
	    parse_long(skip_space(arg), RUN_MIN_GEN_BODY, RUN_MAX_GEN_BODY, &n) == 0) {
		strbuf_reset(&rq->gen);
		buf_adds(&rq->gen, "{\"name\":\"");
		while (rq->gen.len < (size_t)n - 2)
			buf_add(&rq->gen, "x", 1);
		buf_adds(&rq->gen, "\"}");
		rq->body = rq->gen.buf;
		rq->body_len = rq->gen.len;
		return 0;
	}
	if (strcmp(line, "@sleep-ms") == 0 && arg &&
	    parse_long(skip_space(arg), 0, RUN_MAX_SLEEP_MS, &n) == 0) {
		rq->sleep_ms = n;
		return 0;
	}
	buf_addf(err, "bad directive '%s' (want @body-bytes N >= %d or @sleep-ms N <= %d)", line,
		 RUN_MIN_GEN_BODY, RUN_MAX_SLEEP_MS);
	return -1;
}

/* Parse rq->text (already substituted) in place. Returns 0, or -1 with ERR set. */
static int request_parse(struct request *rq, struct strbuf *err)
{
	char *p = rq->text.buf, *end = rq->text.buf + rq->text.len;
	char *nl, *sp, *line;
	int in_headers = 1;

	nl = memchr(p, '\n', (size_t)(end - p));
	if (nl)
		*nl = '\0';
	trim_right(p);
	sp = strchr(p, ' ');
	if (!sp || sp == p || (size_t)(sp - p) >= sizeof(rq->method) || sp[1] != '/' ||
	    strchr(sp + 1, ' ')) {
		buf_addf(err, "first line must be 'METHOD /path', got '%s'", p);
		return -1;
	}
	memcpy(rq->method, p, (size_t)(sp - p));
	rq->method[sp - p] = '\0';
	rq->target = sp + 1;
	p = nl ? nl + 1 : end;

	while (in_headers && p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		line = p;
		if (nl)
			*nl = '\0';
		p = nl ? nl + 1 : end;
		if (strlen(line) != (size_t)((nl ? nl : end) - line)) {
			buf_adds(err, "NUL byte in the header section");
			return -1;
		}
		if (*line && line[strlen(line) - 1] == '\r')
			line[strlen(line) - 1] = '\0';
		if (!*line) {
			in_headers = 0;
		} else if (line[0] == '#') {
			continue;
		} else if (line[0] == '@') {
			if (request_directive(rq, line, err) < 0)
				return -1;
		} else if (line[0] == '-') {
			trim_right(line);
			if (!header_name_valid(line + 1) || rq->nomit == RUN_MAX_REQ_HEADERS) {
				buf_addf(err, "bad '-header' line '%s'", line);
				return -1;
			}
			rq->omit[rq->nomit++] = line + 1;
		} else {
			char *colon = strchr(line, ':');

			if (!colon || rq->nhdr == RUN_MAX_REQ_HEADERS) {
				buf_addf(err, "bad header line '%s'", line);
				return -1;
			}
			*colon = '\0';
			if (!header_name_valid(line)) {
				buf_addf(err, "bad header name '%s'", line);
				return -1;
			}
			trim_right(colon + 1);
			rq->hdr[rq->nhdr].name = line;
			rq->hdr[rq->nhdr].value = skip_space(colon + 1);
			rq->nhdr++;
		}
	}
	if (!in_headers && p < end) {
		if (rq->body) {
			buf_adds(err, "@body-bytes and a literal body are exclusive");
			return -1;
		}
		rq->body = p;
		rq->body_len = (size_t)(end - p);
		if (rq->body_len && rq->body[rq->body_len - 1] == '\n')
			rq->body_len--;
		if (!rq->body_len)
			rq->body = NULL;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Responses. */

struct response {
	long status;
	struct strbuf body;
	int body_truncated;
	char *hname[RUN_MAX_RESP_HEADERS];
	char *hvalue[RUN_MAX_RESP_HEADERS];
	size_t nh;
	size_t hbytes;
	int headers_truncated;
	json_t *json;	/* parsed body (owned), valid when json_state == 1 */
	int json_state; /* 0 not tried, 1 parsed, -1 not JSON */
	char json_err[256];
	char transport_err[CURL_ERROR_SIZE];
};

static void response_headers_clear(struct response *r)
{
	for (size_t i = 0; i < r->nh; i++) {
		free(r->hname[i]);
		free(r->hvalue[i]);
	}
	r->nh = 0;
	r->hbytes = 0;
}

static void response_release(struct response *r)
{
	response_headers_clear(r);
	strbuf_release(&r->body);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct response *r = ud;
	size_t n = size * nmemb, keep = n;

	if (r->body.len + keep > RUN_MAX_RESPONSE) {
		keep = RUN_MAX_RESPONSE - r->body.len;
		r->body_truncated = 1;
	}
	buf_add(&r->body, ptr, keep);
	return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct response *r = ud;
	size_t n = size * nmemb, len = n;
	const char *colon, *v;

	while (len && (ptr[len - 1] == '\n' || ptr[len - 1] == '\r'))
		len--;
	if (len >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
		/* A new response (after 1xx): forget the previous one's headers. */
		response_headers_clear(r);
		r->headers_truncated = 0;
		return n;
	}
	colon = memchr(ptr, ':', len);
	if (!len || !colon)
		return n;
	if (r->nh == RUN_MAX_RESP_HEADERS || r->hbytes + len > RUN_MAX_RESP_HEADER_BYTES) {
		r->headers_truncated = 1;
		return n;
	}
	v = colon + 1;
	while (v < ptr + len && (*v == ' ' || *v == '\t'))
		v++;
	r->hname[r->nh] = xstrndup(ptr, (size_t)(colon - ptr));
	r->hvalue[r->nh] = xstrndup(v, (size_t)(ptr + len - v));
	trim_right(r->hname[r->nh]);
	trim_right(r->hvalue[r->nh]);
	r->nh++;
	r->hbytes += len;
	return n;
}

/* The first value of response header NAME (borrowed), or NULL. */
static const char *response_header(const struct response *r, const char *name)
{
	for (size_t i = 0; i < r->nh; i++)
		if (strcasecmp(r->hname[i], name) == 0)
			return r->hvalue[i];
	return NULL;
}

/* The parsed body (borrowed), or NULL with r->json_err set. */
static json_t *response_json(struct response *r)
{
	json_error_t e;

	if (r->json_state == 0) {
		if (r->body_truncated) {
			snprintf(r->json_err, sizeof(r->json_err), "body truncated at %u bytes",
				 RUN_MAX_RESPONSE);
			r->json_state = -1;
			return NULL;
		}
		r->json = json_loadb(r->body.buf ? r->body.buf : "", r->body.len,
				     JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
		if (r->json) {
			r->json_state = 1;
		} else {
			snprintf(r->json_err, sizeof(r->json_err),
				 "body is not JSON: %s (line %d, column %d)", e.text, e.line,
				 e.column);
			r->json_state = -1;
		}
	}
	return r->json_state == 1 ? r->json : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Sending. */

static struct curl_slist *slist_add(struct curl_slist *l, const char *line)
{
	struct curl_slist *n = curl_slist_append(l, line);

	if (!n)
		die_oom();
	return n;
}

/* Send RQ to BASE_URL with CURL (reset first, so its connection cache is kept). Fills RESP.
 * Returns 0 when a response arrived (RESP may carry a transport note), -1 with ERR set when
 * none did. */
static int request_send(CURL *curl, const char *base_url, const struct vars *vs,
			const struct request *rq, struct response *resp, struct strbuf *err)
{
	struct curl_slist *hl = NULL;
	struct strbuf url = { 0 }, line = { 0 };
	const char *key, *why;
	enum subst_res kind;
	CURLcode rc;
	int ret = -1;

	curl_easy_reset(curl);
	buf_adds(&url, base_url);
	while (url.len && url.buf[url.len - 1] == '/')
		url.buf[--url.len] = '\0';
	buf_adds(&url, rq->target);

	for (size_t i = 0; i < rq->nhdr; i++) {
		strbuf_reset(&line);
		if (*rq->hdr[i].value)
			buf_addf(&line, "%s: %s", rq->hdr[i].name, rq->hdr[i].value);
		else
			buf_addf(&line, "%s;", rq->hdr[i].name); /* curl's way to send it empty */
		hl = slist_add(hl, line.buf);
	}
	for (size_t i = 0; i < rq->nomit; i++) {
		strbuf_reset(&line);
		buf_addf(&line, "%s:", rq->omit[i]); /* also removes curl's own default */
		hl = slist_add(hl, line.buf);
	}
	if (!request_mentions(rq, "x-api-key")) {
		key = vars_get(vs, "KEY", &why, &kind);
		if (!key) {
			buf_addf(err, "variable KEY %s (needed for the default x-api-key)", why);
			goto out;
		}
		strbuf_reset(&line);
		buf_addf(&line, "x-api-key: %s", key);
		hl = slist_add(hl, line.buf);
	}
	if (!request_mentions(rq, "anthropic-version"))
		hl = slist_add(hl, "anthropic-version: " RUN_DEFAULT_VERSION);
	if (!request_mentions(rq, "anthropic-beta"))
		hl = slist_add(hl, "anthropic-beta: " RUN_DEFAULT_BETA);
	if (!request_mentions(rq, "content-type"))
		hl = slist_add(hl, rq->body ? "content-type: application/json" : "Content-Type:");
	if (!request_mentions(rq, "expect"))
		hl = slist_add(hl, "Expect:");

	curl_easy_setopt(curl, CURLOPT_URL, url.buf);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(curl, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, RUN_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, RUN_TOTAL_TIMEOUT_MS);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, resp);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, resp->transport_err);

	if (strcmp(rq->method, "GET") == 0 && !rq->body) {
		curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(rq->method, "HEAD") == 0 && !rq->body) {
		curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
	} else if (rq->body || strcmp(rq->method, "POST") == 0) {
		/* POST without a body still sends Content-Length: 0. */
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
		if (strcmp(rq->method, "POST") != 0)
			curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, rq->method);
	} else {
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, rq->method);
	}

	if (rq->sleep_ms) {
		struct timespec ts = { rq->sleep_ms / 1000, (rq->sleep_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}

	rc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &resp->status);
	if (rc != CURLE_OK) {
		if (!resp->transport_err[0])
			snprintf(resp->transport_err, sizeof(resp->transport_err), "%s",
				 curl_easy_strerror(rc));
		if (resp->status <= 0) {
			buf_addf(err, "no response from %s: %s", url.buf, resp->transport_err);
			goto out;
		}
		/* e.g. the server answered 413 and closed while the body was still going out. */
	} else {
		resp->transport_err[0] = '\0';
	}
	ret = 0;
out:
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hl);
	strbuf_release(&url);
	strbuf_release(&line);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* JSON paths: "." (root), ".a.b", ".a[0]", ".a[-1]" (from the end), ".m[\"weird key\"]",
 * ".data[*].id" (projection: an array of the rest of the path over every element that has it).
 * A path is parsed whole first, so a typo is a case error even where the value is absent. */

#define PATH_MAX_SEGS 32
#define PATH_MAX_KEY 1024

enum seg_kind { SEG_KEY, SEG_INDEX, SEG_ALL };

struct seg {
	enum seg_kind kind;
	char key[PATH_MAX_KEY];
	long idx;
};

struct path {
	struct seg seg[PATH_MAX_SEGS];
	size_t n;
};

/* Parse S into P. Returns 0, or -1 with ERR set. */
static int path_parse(const char *s, struct path *p, struct strbuf *err)
{
	const char *c = s;

	p->n = 0;
	if (*c != '.') {
		buf_addf(err, "path '%s' must start with '.'", s);
		return -1;
	}
	if (c[1] == '\0')
		return 0;
	while (*c) {
		struct seg *g;

		if (p->n == PATH_MAX_SEGS) {
			buf_addf(err, "path '%s' has more than %d parts", s, PATH_MAX_SEGS);
			return -1;
		}
		g = &p->seg[p->n];
		if (*c == '.' && c[1] == '[') {
			c++; /* ".[0]" is "[0]" */
			continue;
		}
		if (*c == '.') {
			size_t n = strcspn(c + 1, ".[");

			if (n == 0 || n >= sizeof(g->key)) {
				buf_addf(err, "bad key in path '%s'", s);
				return -1;
			}
			g->kind = SEG_KEY;
			memcpy(g->key, c + 1, n);
			g->key[n] = '\0';
			c += 1 + n;
		} else if (*c == '[' && c[1] == '"') {
			/* A JSON string literal: find its closing quote, then decode it. */
			const char *q = c + 2;
			json_t *str;

			while (*q && *q != '"')
				q += (*q == '\\' && q[1]) ? 2 : 1;
			if (*q != '"' || q[1] != ']') {
				buf_addf(err, "unterminated [\"key\"] in path '%s'", s);
				return -1;
			}
			str = json_loadb(c + 1, (size_t)(q - c), JSON_DECODE_ANY, NULL);
			if (!json_is_string(str) || json_string_length(str) >= sizeof(g->key) ||
			    strlen(json_string_value(str)) != json_string_length(str)) {
				json_decref(str);
				buf_addf(err, "bad [\"key\"] in path '%s'", s);
				return -1;
			}
			g->kind = SEG_KEY;
			snprintf(g->key, sizeof(g->key), "%s", json_string_value(str));
			json_decref(str);
			c = q + 2;
		} else if (*c == '[') {
			const char *close = strchr(c, ']');
			char num[32];
			size_t len = close ? (size_t)(close - c - 1) : 0;

			if (!close || len == 0 || len >= sizeof(num)) {
				buf_addf(err, "bad [index] in path '%s'", s);
				return -1;
			}
			memcpy(num, c + 1, len);
			num[len] = '\0';
			if (strcmp(num, "*") == 0) {
				g->kind = SEG_ALL;
			} else if (parse_long(num, -1000000000L, 1000000000L, &g->idx) == 0) {
				g->kind = SEG_INDEX;
			} else {
				buf_addf(err, "bad [index] '%s' in path '%s'", num, s);
				return -1;
			}
			c = close + 1;
		} else {
			buf_addf(err, "path '%s' must continue with '.' or '[' at '%s'", s, c);
			return -1;
		}
		p->n++;
	}
	return 0;
}

/* Evaluate segments [I..n) of P on NODE. Returns a new reference (caller decrefs), or NULL
 * when the value is absent. */
static json_t *path_eval_from(json_t *node, const struct path *p, size_t i)
{
	const struct seg *g;
	json_t *next = NULL;

	if (i == p->n)
		return json_incref(node);
	g = &p->seg[i];
	if (g->kind == SEG_KEY) {
		next = json_is_object(node) ? json_object_get(node, g->key) : NULL;
	} else if (g->kind == SEG_INDEX) {
		long idx = g->idx;

		if (json_is_array(node)) {
			if (idx < 0)
				idx += (long)json_array_size(node);
			if (idx >= 0)
				next = json_array_get(node, (size_t)idx);
		}
	} else {
		json_t *arr, *elem;
		size_t k;

		if (!json_is_array(node))
			return NULL;
		arr = json_array();
		if (!arr)
			die_oom();
		json_array_foreach (node, k, elem) {
			json_t *v = path_eval_from(elem, p, i + 1);

			if (v)
				json_array_append_new(arr, v);
		}
		return arr;
	}
	return next ? path_eval_from(next, p, i + 1) : NULL;
}

/* Evaluate PATH on ROOT. On PATH_FOUND, *OUT is a new reference (caller decrefs); on
 * PATH_SYNTAX, ERR says why. */
static enum path_res path_eval(json_t *root, const char *path, json_t **out, struct strbuf *err)
{
	struct path *p = malloc(sizeof(*p));

	*out = NULL;
	if (!p)
		die_oom();
	if (path_parse(path, p, err) < 0) {
		free(p);
		return PATH_SYNTAX;
	}
	*out = path_eval_from(root, p, 0);
	free(p);
	return *out ? PATH_FOUND : PATH_ABSENT;
}

/* Compact text of V for reports and captures. Caller frees. */
static char *json_text(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	if (!s)
		die_oom();
	return s;
}

static void add_value(struct strbuf *b, const json_t *v)
{
	char *s = json_text(v);
	size_t n = strlen(s);

	if (n > RUN_REPORT_VALUE_MAX) {
		buf_add_escaped(b, s, RUN_REPORT_VALUE_MAX);
		buf_addf(b, "... (%zu bytes)", n);
	} else {
		buf_add_escaped(b, s, n);
	}
	free(s);
}

static size_t utf8_len(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

/* Parse an RFC 3339 timestamp. Returns 0 with *SEC and *NSEC set, or -1. */
static int parse_rfc3339(const char *s, long long *sec, long *nsec)
{
	int y, mo, d, h, mi, se, used = 0;
	long ns = 0, off = 0;
	const char *p;

	if (strlen(s) < 20 ||
	    sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &se, &used) != 6 ||
	    used != 19)
		return -1;
	p = s + used;
	if (*p == '.') {
		long scale = 100000000L;

		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		for (; isdigit((unsigned char)*p); p++, scale /= 10)
			ns += (long)(*p - '0') * scale;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
		   isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
		   isdigit((unsigned char)p[5])) {
		off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600L +
		      ((p[4] - '0') * 10 + (p[5] - '0')) * 60L;
		if (*p == '-')
			off = -off;
		p += 6;
	} else {
		return -1;
	}
	if (*p)
		return -1;
	*sec = clock_utc(y, mo, d, h, mi, se) - off;
	*nsec = ns;
	return 0;
}

/* Order A against B: numbers numerically, two RFC 3339 timestamps chronologically, other
 * strings bytewise. Returns 0 with *CMP (<0, 0, >0) set, or -1 when they are not comparable. */
static int json_order(const json_t *a, const json_t *b, int *cmp)
{
	if (json_is_number(a) && json_is_number(b)) {
		double x = json_number_value(a), y = json_number_value(b);

		if (json_is_integer(a) && json_is_integer(b)) {
			json_int_t i = json_integer_value(a), j = json_integer_value(b);

			*cmp = (i > j) - (i < j);
		} else {
			*cmp = (x > y) - (x < y);
		}
		return 0;
	}
	if (json_is_string(a) && json_is_string(b)) {
		long long s1, s2;
		long n1, n2;

		if (parse_rfc3339(json_string_value(a), &s1, &n1) == 0 &&
		    parse_rfc3339(json_string_value(b), &s2, &n2) == 0)
			*cmp = s1 != s2 ? (s1 > s2) - (s1 < s2) : (n1 > n2) - (n1 < n2);
		else
			*cmp = strcmp(json_string_value(a), json_string_value(b));
		return 0;
	}
	return -1;
}

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "bool";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

/* ------------------------------------------------------------------------------------------ */
/* Expectations. */

/* Parse the JSON literal TEXT (any JSON value). New reference, or NULL with WHY set. */
static json_t *literal(const char *text, struct strbuf *why)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);

	if (!v)
		buf_addf(why, "bad JSON literal '%s': %s", text, e.text);
	return v;
}

/* Match S against the POSIX ERE RE. Returns 1 match, 0 no match, -1 bad regex (WHY set). */
static int ere_match(const char *re, const char *s, struct strbuf *why)
{
	regex_t rx;
	int rc = regcomp(&rx, re, REG_EXTENDED | REG_NOSUB);

	if (rc != 0) {
		char msg[256];

		regerror(rc, &rx, msg, sizeof(msg));
		buf_addf(why, "bad regex '%s': %s", re, msg);
		return -1;
	}
	rc = regexec(&rx, s, 0, NULL, 0);
	regfree(&rx);
	return rc == 0;
}

/* Whether a header NAME of R has the value VAL (RE NULL) or a value matching the ERE RE:
 * CHECK_OK; CHECK_FAIL with "header not present" or the value got in WHY; CHECK_BAD for a bad
 * RE (header or not). */
static enum check header_values(struct response *r, const char *name, const char *val,
				const char *re, struct strbuf *why)
{
	int any = 0;

	if (re && ere_match(re, "", why) < 0)
		return CHECK_BAD;
	for (size_t i = 0; i < r->nh; i++) {
		if (strcasecmp(r->hname[i], name) != 0)
			continue;
		any = 1;
		if (re ? ere_match(re, r->hvalue[i], why) == 1 : strcmp(r->hvalue[i], val) == 0)
			return CHECK_OK;
	}
	if (!any)
		buf_adds(why, "header not present");
	else
		buf_addf(why, "got '%s'", response_header(r, name));
	return CHECK_FAIL;
}

/* `header NAME: VALUE`, `header NAME ~ RE`, `header NAME absent|present`. */
static enum check check_header(char *arg, struct response *r, struct strbuf *why)
{
	char *name = arg, *rest = arg;
	const char *val;

	while (*rest && *rest != ':' && *rest != ' ' && *rest != '\t')
		rest++;
	if (rest == name) {
		buf_adds(why, "missing header name");
		return CHECK_BAD;
	}
	if (*rest == ':') {
		*rest = '\0';
		return header_values(r, name, skip_space(rest + 1), NULL, why);
	}
	*rest++ = '\0';
	rest = skip_space(rest);
	if (strcmp(rest, "absent") == 0 || strcmp(rest, "present") == 0) {
		val = response_header(r, name);
		if ((val != NULL) == (rest[0] == 'p'))
			return CHECK_OK;
		if (val)
			buf_addf(why, "present with value '%s'", val);
		else
			buf_adds(why, "header not present");
		return CHECK_FAIL;
	}
	if (rest[0] == '~' && (rest[1] == ' ' || rest[1] == '\t'))
		return header_values(r, name, NULL, skip_space(rest + 1), why);
	buf_addf(why,
		 "want 'header NAME: VALUE', 'header NAME ~ RE' or 'header NAME absent|present'");
	return CHECK_BAD;
}

/* `body contains "s"`, `body !contains "s"`, `body ~ RE`, `body empty`. */
static enum check check_body(char *arg, struct response *r, struct strbuf *why)
{
	const char *body = r->body.buf ? r->body.buf : "";
	char *sp = arg;

	while (*sp && *sp != ' ' && *sp != '\t')
		sp++;
	if (*sp)
		*sp++ = '\0';
	sp = skip_space(sp);
	if (strcmp(arg, "empty") == 0 && !*sp) {
		if (r->body.len == 0)
			return CHECK_OK;
		buf_addf(why, "body has %zu bytes", r->body.len);
		return CHECK_FAIL;
	}
	if (strcmp(arg, "contains") == 0 || strcmp(arg, "!contains") == 0) {
		json_t *lit = literal(sp, why);
		int found;

		if (!json_is_string(lit)) {
			if (lit)
				buf_adds(why, "body contains wants a JSON string");
			json_decref(lit);
			return CHECK_BAD;
		}
		found = memmem(body, r->body.len, json_string_value(lit),
			       json_string_length(lit)) != NULL;
		json_decref(lit);
		if (found == (arg[0] == 'c'))
			return CHECK_OK;
		buf_adds(why, found ? "body contains it" : "body does not contain it");
		return CHECK_FAIL;
	}
	if (strcmp(arg, "~") == 0) {
		int m = ere_match(sp, body, why);

		if (m < 0)
			return CHECK_BAD;
		if (m)
			return CHECK_OK;
		buf_adds(why, "no match");
		return CHECK_FAIL;
	}
	buf_adds(why,
		 "want 'body contains \"s\"', 'body !contains \"s\"', 'body ~ RE' or 'body empty'");
	return CHECK_BAD;
}

/* Split "PATH REST": PATH ends at the first blank outside a ["..."] key. */
static char *split_path(char *s)
{
	int in_str = 0;

	for (; *s; s++) {
		if (in_str) {
			if (*s == '\\' && s[1])
				s++;
			else if (*s == '"')
				in_str = 0;
		} else if (*s == '"') {
			in_str = 1;
		} else if (*s == ' ' || *s == '\t') {
			*s = '\0';
			return skip_space(s + 1);
		}
	}
	return s;
}

/* PATH in R's JSON body: *PR what path_eval found there (*V its value). CHECK_OK, or CHECK_FAIL
 * (the body is not JSON) or CHECK_BAD (PATH's syntax) with WHY said. */
static enum check body_path(struct response *r, const char *path, json_t **v, enum path_res *pr,
			    struct strbuf *why)
{
	json_t *root = response_json(r);

	if (!root) {
		buf_adds(why, r->json_err);
		return CHECK_FAIL;
	}
	*pr = path_eval(root, path, v, why);
	return *pr == PATH_SYNTAX ? CHECK_BAD : CHECK_OK;
}

/* `json PATH OP ARG`: see usage(). */
static enum check check_json(char *arg, struct response *r, struct strbuf *why)
{
	char *path = arg, *op, *val;
	json_t *v = NULL, *lit = NULL;
	enum path_res pr;
	enum check ret = CHECK_FAIL, found;
	int cmp;

	op = split_path(arg);
	val = op;
	while (*val && *val != ' ' && *val != '\t')
		val++;
	if (*val)
		*val++ = '\0';
	val = skip_space(val);
	if (!*op) {
		buf_adds(why, "missing operator");
		return CHECK_BAD;
	}
	found = body_path(r, path, &v, &pr, why);
	if (found != CHECK_OK)
		return found;

	if (strcmp(op, "absent") == 0 || strcmp(op, "present") == 0) {
		if (*val) {
			buf_addf(why, "'%s' takes no argument", op);
			ret = CHECK_BAD;
		} else if ((pr == PATH_FOUND) == (op[0] == 'p')) {
			ret = CHECK_OK;
		} else if (v) {
			buf_adds(why, "present: ");
			add_value(why, v);
		} else {
			buf_adds(why, "absent");
		}
		goto out;
	}

	/* Every other operator needs an argument; check it before the value. */
	if (strcmp(op, "==") == 0 || strcmp(op, "!=") == 0 || strcmp(op, "<") == 0 ||
	    strcmp(op, "<=") == 0 || strcmp(op, ">") == 0 || strcmp(op, ">=") == 0 ||
	    strcmp(op, "contains") == 0 || strcmp(op, "!contains") == 0) {
		lit = literal(val, why);
		if (!lit) {
			ret = CHECK_BAD;
			goto out;
		}
	} else if (strcmp(op, "~") == 0 || strcmp(op, "!~") == 0) {
		regex_t rx;

		if (regcomp(&rx, val, REG_EXTENDED | REG_NOSUB) != 0) {
			buf_addf(why, "bad regex '%s'", val);
			ret = CHECK_BAD;
			goto out;
		}
		regfree(&rx);
	} else if (strcmp(op, "length") == 0 || strcmp(op, "type") == 0 ||
		   strcmp(op, "sorted") == 0) {
		if (!*val) {
			buf_addf(why, "'%s' needs an argument", op);
			ret = CHECK_BAD;
			goto out;
		}
	} else {
		buf_addf(why, "unknown operator '%s'", op);
		ret = CHECK_BAD;
		goto out;
	}

	if (!v) {
		/* Even != and !contains need the value: use `absent` to assert absence. */
		buf_adds(why, "absent");
		goto out;
	}

	if (strcmp(op, "==") == 0 || strcmp(op, "!=") == 0) {
		if (json_equal(v, lit) == (op[0] == '=')) {
			ret = CHECK_OK;
		} else {
			buf_adds(why, "got ");
			add_value(why, v);
		}
	} else if (op[0] == '<' || op[0] == '>') {
		if (json_order(v, lit, &cmp) < 0) {
			buf_adds(why, "not comparable: ");
			add_value(why, v);
		} else if ((strcmp(op, "<") == 0 && cmp < 0) ||
			   (strcmp(op, "<=") == 0 && cmp <= 0) ||
			   (strcmp(op, ">") == 0 && cmp > 0) ||
			   (strcmp(op, ">=") == 0 && cmp >= 0)) {
			ret = CHECK_OK;
		} else {
			buf_adds(why, "got ");
			add_value(why, v);
		}
	} else if (strcmp(op, "contains") == 0 || strcmp(op, "!contains") == 0) {
		int found = 0;

		if (json_is_string(v) && json_is_string(lit)) {
			found = memmem(json_string_value(v), json_string_length(v),
				       json_string_value(lit), json_string_length(lit)) != NULL;
		} else if (json_is_array(v)) {
			size_t i;
			json_t *e;

			json_array_foreach (v, i, e)
				found |= json_equal(e, lit);
		} else {
			buf_adds(why,
				 "contains needs a string (substring) or an array (element): got ");
			add_value(why, v);
			goto out;
		}
		if (found == (op[0] == 'c')) {
			ret = CHECK_OK;
		} else {
			buf_adds(why, "got ");
			add_value(why, v);
		}
	} else if (strcmp(op, "~") == 0 || strcmp(op, "!~") == 0) {
		if (!json_is_string(v)) {
			buf_adds(why, "not a string: ");
			add_value(why, v);
		} else if (ere_match(val, json_string_value(v), why) == (op[0] == '~')) {
			ret = CHECK_OK;
		} else {
			buf_adds(why, "got ");
			add_value(why, v);
		}
	} else if (strcmp(op, "length") == 0) {
		long want;
		size_t got;

		if (parse_long(val, 0, 1000000000L, &want) < 0) {
			buf_addf(why, "bad length '%s'", val);
			ret = CHECK_BAD;
			goto out;
		}
		if (json_is_array(v))
			got = json_array_size(v);
		else if (json_is_object(v))
			got = json_object_size(v);
		else if (json_is_string(v))
			got = utf8_len(json_string_value(v));
		else {
			buf_adds(why, "no length: ");
			add_value(why, v);
			goto out;
		}
		if (got == (size_t)want)
			ret = CHECK_OK;
		else
			buf_addf(why, "length is %zu", got);
	} else if (strcmp(op, "type") == 0) {
		const char *k = json_kind(v), *want = strcmp(val, "boolean") == 0 ? "bool" : val;

		if (strcmp(want, "integer") == 0 ? json_is_integer(v) : strcmp(want, k) == 0)
			ret = CHECK_OK;
		else if (strcmp(want, "string") && strcmp(want, "number") &&
			 strcmp(want, "integer") && strcmp(want, "object") &&
			 strcmp(want, "array") && strcmp(want, "null") && strcmp(want, "bool")) {
			buf_addf(why, "unknown type '%s'", want);
			ret = CHECK_BAD;
		} else {
			buf_addf(why, "is %s: ", k);
			add_value(why, v);
		}
	} else { /* sorted SUBPATH asc|desc */
		char *dir = split_path(val);
		int want_desc = strcmp(dir, "desc") == 0;
		json_t *prev = NULL, *e;
		size_t i;

		if (!want_desc && strcmp(dir, "asc") != 0) {
			buf_adds(why, "want 'sorted SUBPATH asc|desc'");
			ret = CHECK_BAD;
			goto out;
		}
		if (!json_is_array(v)) {
			buf_adds(why, "not an array: ");
			add_value(why, v);
			goto out;
		}
		ret = CHECK_OK;
		json_array_foreach (v, i, e) {
			json_t *cur;
			enum path_res r2 = path_eval(e, val, &cur, why);

			if (r2 == PATH_SYNTAX) {
				ret = CHECK_BAD;
				break;
			}
			if (r2 == PATH_ABSENT) {
				buf_addf(why, "element %zu has no %s", i, val);
				ret = CHECK_FAIL;
				break;
			}
			if (prev &&
			    (json_order(prev, cur, &cmp) < 0 || (want_desc ? cmp < 0 : cmp > 0))) {
				buf_addf(why, "elements %zu and %zu out of order: ", i - 1, i);
				add_value(why, prev);
				buf_adds(why, " then ");
				add_value(why, cur);
				json_decref(cur);
				ret = CHECK_FAIL;
				break;
			}
			json_decref(prev);
			prev = cur;
		}
		json_decref(prev);
	}
out:
	json_decref(v);
	json_decref(lit);
	return ret;
}

/* `capture NAME PATH`, `capture NAME header HDR`, `capture NAME status`. */
static enum check check_capture(char *arg, struct vars *vs, struct response *r, struct strbuf *why)
{
	char *name = arg, *what = arg;
	char status[32];
	char *text = NULL;
	const char *value = NULL;
	enum check ret = CHECK_FAIL;

	while (*what && var_name_char((unsigned char)*what, what == name))
		what++;
	if (what == name || (*what != ' ' && *what != '\t')) {
		buf_adds(why, "want 'capture NAME PATH|header NAME|status'");
		return CHECK_BAD;
	}
	*what++ = '\0';
	what = skip_space(what);
	if (strncmp(what, "header ", 7) == 0) {
		value = response_header(r, skip_space(what + 7));
		if (!value)
			buf_adds(why, "header not present");
	} else if (strcmp(what, "status") == 0) {
		snprintf(status, sizeof(status), "%ld", r->status);
		value = status;
	} else {
		json_t *v = NULL;
		enum path_res pr;
		enum check found = body_path(r, what, &v, &pr, why);

		if (found != CHECK_OK)
			return found;
		if (pr == PATH_ABSENT) {
			buf_adds(why, "absent");
			return CHECK_FAIL;
		}
		if (json_is_string(v))
			text = xstrndup(json_string_value(v), strlen(json_string_value(v)));
		else
			text = json_text(v);
		json_decref(v);
		value = text;
	}
	if (value)
		ret = vars_set(vs, name, value, why) == 0 ? CHECK_OK : CHECK_BAD;
	free(text);
	return ret;
}

/* Check one (substituted) expect line. */
static enum check check_line(char *line, struct vars *vs, struct response *r, struct strbuf *why)
{
	char *arg = line;

	while (*arg && *arg != ' ' && *arg != '\t')
		arg++;
	if (*arg)
		*arg++ = '\0';
	arg = skip_space(arg);
	if (strcmp(line, "status") == 0) {
		long want;

		if (parse_long(arg, 100, 599, &want) < 0) {
			buf_addf(why, "bad status '%s'", arg);
			return CHECK_BAD;
		}
		if (r->status == want)
			return CHECK_OK;
		buf_addf(why, "got %ld", r->status);
		return CHECK_FAIL;
	}
	if (strcmp(line, "header") == 0)
		return check_header(arg, r, why);
	if (strcmp(line, "json") == 0)
		return check_json(arg, r, why);
	if (strcmp(line, "body") == 0)
		return check_body(arg, r, why);
	if (strcmp(line, "capture") == 0)
		return check_capture(arg, vs, r, why);
	buf_addf(why, "unknown assertion '%s' (want status, header, json, body or capture)", line);
	return CHECK_BAD;
}

/* ------------------------------------------------------------------------------------------ */
/* Cases. */

struct step {
	long n; /* 0 for the single-step layout */
};

struct run {
	CURL *curl;
	int verbose;
	unsigned cases_started;
};

static int step_cmp(const void *a, const void *b)
{
	long x = ((const struct step *)a)->n, y = ((const struct step *)b)->n;

	return (x > y) - (x < y);
}

/* 1 when NAME is "N.SUFFIX" with N a positive decimal; sets *N. */
static int step_name(const char *name, const char *suffix, long *n)
{
	const char *dot = strchr(name, '.');
	char num[24];

	if (!dot || dot == name || (size_t)(dot - name) >= sizeof(num) || strcmp(dot + 1, suffix))
		return 0;
	memcpy(num, name, (size_t)(dot - name));
	num[dot - name] = '\0';
	for (const char *p = num; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return parse_long(num, 1, 1000000, n) == 0;
}

/* 1 when DIR holds a case (request, or N.request). */
static int is_case_dir(const char *dir)
{
	char path[RUN_MAX_FILE_PATH];
	DIR *d;
	struct dirent *de;
	long n;
	int found = 0;

	snprintf(path, sizeof(path), "%s/request", dir);
	if (file_exists(path))
		return 1;
	d = opendir(dir);
	if (!d)
		return 0;
	while (!found && (de = readdir(d)))
		found = step_name(de->d_name, "request", &n);
	closedir(d);
	return found;
}

/* List the steps of case DIR into STEPS (sorted). Returns the count, or -1 with ERR set. */
static int case_steps(const char *dir, struct step *steps, struct strbuf *err)
{
	char path[RUN_MAX_FILE_PATH];
	DIR *d;
	struct dirent *de;
	int n = 0, single;
	long k;

	snprintf(path, sizeof(path), "%s/request", dir);
	single = file_exists(path);
	d = opendir(dir);
	if (!d) {
		buf_addf(err, "cannot open %s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		if (step_name(de->d_name, "request", &k)) {
			if (n == RUN_MAX_STEPS) {
				buf_addf(err, "more than %d steps", RUN_MAX_STEPS);
				n = -1;
				break;
			}
			steps[n++].n = k;
		} else if (step_name(de->d_name, "expect", &k)) {
			snprintf(path, sizeof(path), "%s/%ld.request", dir, k);
			if (!file_exists(path)) {
				buf_addf(err, "%s has no matching %ld.request", de->d_name, k);
				n = -1;
				break;
			}
		}
	}
	closedir(d);
	if (n < 0)
		return -1;
	if (single && n) {
		buf_adds(err, "both 'request' and numbered steps");
		return -1;
	}
	if (single) {
		steps[0].n = 0;
		return 1;
	}
	qsort(steps, (size_t)n, sizeof(*steps), step_cmp);
	for (int i = 1; i < n; i++) {
		if (steps[i].n == steps[i - 1].n) {
			buf_addf(err, "step %ld appears twice", steps[i].n);
			return -1;
		}
	}
	return n;
}

/* The base URL for case DIR (borrowed from the environment), or NULL: then *SKIP says why the
 * case is skipped, or ERR why it is broken. */
static const char *case_base_url(const char *dir, struct strbuf *skip, struct strbuf *err)
{
	char path[RUN_MAX_FILE_PATH], env[RUN_MAX_NAME + sizeof(RUN_ENV_URL_PREFIX)];
	struct strbuf text = { 0 };
	const char *url = NULL, *deflt;
	char *word;
	size_t n;

	snprintf(path, sizeof(path), "%s/backend", dir);
	if (!file_exists(path)) {
		url = getenv(RUN_ENV_URL);
		if (!url || !*url)
			buf_adds(err, RUN_ENV_URL " is not set");
		return url && *url ? url : NULL;
	}
	if (read_file(path, &text, err) < 0)
		goto out;
	word = skip_space(text.buf);
	trim_right(word);
	n = strlen(word);
	if (!n || n >= RUN_MAX_NAME ||
	    strspn(word, "abcdefghijklmnopqrstuvwxyz"
			 "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n) {
		buf_adds(err, "backend file must hold one word");
		goto out;
	}
	snprintf(env, sizeof(env), RUN_ENV_URL_PREFIX "%s", word);
	url = getenv(env);
	if (!url || !*url) {
		for (char *p = env; *p; p++)
			*p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
		url = getenv(env);
	}
	if (!url || !*url) {
		deflt = getenv(RUN_ENV_DEFAULT_BACKEND);
		if (!deflt || !*deflt)
			deflt = RUN_DEFAULT_BACKEND;
		url = strcmp(word, deflt) == 0 ? getenv(RUN_ENV_URL) : NULL;
	}
	if (!url || !*url) {
		buf_addf(skip, "backend %s: set " RUN_ENV_URL_PREFIX "%s", word, word);
		url = NULL;
	}
out:
	strbuf_release(&text);
	return url;
}

static void report_response(struct strbuf *diag, const struct request *rq, const struct response *r)
{
	size_t n = r->body.len < RUN_REPORT_BODY_MAX ? r->body.len : RUN_REPORT_BODY_MAX;

	buf_addf(diag, "    request: %s %s\n", rq->method, rq->target);
	buf_addf(diag, "    status: %ld\n", r->status);
	if (r->transport_err[0])
		buf_addf(diag, "    transport: %s\n", r->transport_err);
	if (r->body_truncated)
		buf_addf(diag, "    note: body truncated at %u bytes\n", RUN_MAX_RESPONSE);
	buf_adds(diag, "    body: ");
	buf_add_escaped(diag, r->body.buf ? r->body.buf : "", n);
	if (n < r->body.len)
		buf_addf(diag, "... (%zu bytes)", r->body.len);
	buf_adds(diag, "\n");
}

/* Run one step of a case. Returns CASE_PASS, CASE_FAIL or CASE_ERROR, with DIAG filled. */
static enum case_result run_step(struct run *run, const char *dir, const char *base_url,
				 long stepno, struct vars *vs, struct strbuf *diag)
{
	char rpath[RUN_MAX_FILE_PATH], epath[RUN_MAX_FILE_PATH], label[64];
	struct request rq = { 0 };
	struct response resp = { 0 };
	struct strbuf raw = { 0 }, expect = { 0 }, line = { 0 }, why = { 0 };
	enum case_result ret = CASE_ERROR;
	int failed = 0, lineno = 0, status_failed = 0, unchecked = 0;
	enum subst_res sr;
	char *p, *nl;

	if (stepno) {
		snprintf(rpath, sizeof(rpath), "%s/%ld.request", dir, stepno);
		snprintf(epath, sizeof(epath), "%s/%ld.expect", dir, stepno);
		snprintf(label, sizeof(label), "step %ld", stepno);
	} else {
		snprintf(rpath, sizeof(rpath), "%s/request", dir);
		snprintf(epath, sizeof(epath), "%s/expect", dir);
		snprintf(label, sizeof(label), "step");
	}
	if (read_file(rpath, &raw, &why) < 0 || read_file(epath, &expect, &why) < 0) {
		buf_addf(diag, "    %s: case error: %s\n", label, why.buf);
		goto out;
	}
	sr = subst(vs, raw.buf, raw.len, &rq.text, &why);
	if (sr == SUBST_UNSET) {
		buf_addf(diag, "    %s: %s: %s\n", label, strrchr(rpath, '/') + 1, why.buf);
		ret = CASE_FAIL;
		goto out;
	}
	if (sr != SUBST_OK || request_parse(&rq, &why) < 0) {
		buf_addf(diag, "    %s: case error in %s: %s\n", label, strrchr(rpath, '/') + 1,
			 why.buf);
		goto out;
	}
	if (request_send(run->curl, base_url, vs, &rq, &resp, &why) < 0) {
		buf_addf(diag, "    %s: %s\n", label, why.buf);
		buf_addf(diag, "    request: %s %s\n", rq.method, rq.target);
		ret = CASE_FAIL;
		goto out;
	}

	ret = CASE_PASS;
	for (p = expect.buf; p && *p; p = nl ? nl + 1 : NULL) {
		enum check c;
		char *text;

		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		lineno++;
		text = skip_space(p);
		trim_right(text);
		if (!*text || *text == '#')
			continue;
		if (status_failed) {
			/* Everything after a wrong status would fail along with it: count, don't
			 * list. */
			unchecked++;
			continue;
		}
		strbuf_reset(&why);
		buf_add(&why, "", 0);
		sr = subst(vs, text, strlen(text), &line, &why);
		if (sr != SUBST_OK) {
			/* A variable a failed capture should have set: a failure, not a bad case.
			 */
			c = sr == SUBST_UNSET ? CHECK_FAIL : CHECK_BAD;
		} else {
			char *copy = xstrndup(line.buf, line.len);

			c = check_line(copy, vs, &resp, &why);
			free(copy);
		}
		if (c == CHECK_OK)
			continue;
		buf_addf(diag, "    %s (%s:%d): %s%s: ", label, strrchr(epath, '/') + 1, lineno,
			 c == CHECK_BAD ? "case error: " : "", text);
		buf_add_escaped(diag, why.buf, why.len);
		buf_adds(diag, "\n");
		if (c == CHECK_BAD)
			ret = CASE_ERROR;
		else if (ret == CASE_PASS)
			ret = CASE_FAIL;
		failed = 1;
		status_failed = c == CHECK_FAIL && strncmp(text, "status ", 7) == 0;
	}
	if (unchecked)
		buf_addf(diag,
			 "    %s: %d further assertion(s) not checked after the wrong status\n",
			 label, unchecked);
	if (failed || run->verbose)
		report_response(diag, &rq, &resp);
out:
	request_release(&rq);
	response_release(&resp);
	strbuf_release(&raw);
	strbuf_release(&expect);
	strbuf_release(&line);
	strbuf_release(&why);
	return ret;
}

/* Run case DIR (shown as NAME). Prints its result line and, on failure, what went wrong. */
static enum case_result run_case(struct run *run, const char *dir, const char *name)
{
	struct step steps[RUN_MAX_STEPS];
	struct strbuf diag = { 0 }, skip = { 0 }, err = { 0 };
	struct vars vs;
	const char *base_url;
	enum case_result ret = CASE_ERROR;
	int nsteps;

	vars_init(&vs, ++run->cases_started);
	buf_add(&diag, "", 0);
	base_url = case_base_url(dir, &skip, &err);
	if (!base_url) {
		if (skip.len) {
			printf("ok - %s # SKIP %s\n", name, skip.buf);
			ret = CASE_SKIP;
			goto out;
		}
		buf_addf(&diag, "    case error: %s\n", err.buf);
		goto report;
	}
	nsteps = case_steps(dir, steps, &err);
	if (nsteps < 0) {
		buf_addf(&diag, "    case error: %s\n", err.buf);
		goto report;
	}
	ret = CASE_PASS;
	for (int i = 0; i < nsteps && ret == CASE_PASS; i++)
		ret = run_step(run, dir, base_url, steps[i].n, &vs, &diag);
report:
	printf("%s - %s\n", ret == CASE_PASS ? "ok" : "not ok", name);
	if (ret != CASE_PASS || run->verbose)
		fputs(diag.buf, stdout);
out:
	fflush(stdout);
	vars_release(&vs);
	strbuf_release(&diag);
	strbuf_release(&skip);
	strbuf_release(&err);
	return ret;
}

/* ------------------------------------------------------------------------------------------ */
/* Discovery. */

struct caselist {
	char **rel;
	size_t n;
	size_t cap;
};

static void caselist_add(struct caselist *cl, const char *rel)
{
	if (cl->n == cl->cap) {
		size_t cap = cl->cap ? cl->cap * 2 : 64;
		char **p = realloc(cl->rel, cap * sizeof(*p));

		if (!p)
			die_oom();
		cl->rel = p;
		cl->cap = cap;
	}
	cl->rel[cl->n++] = xstrndup(rel, strlen(rel));
}

static void caselist_release(struct caselist *cl)
{
	for (size_t i = 0; i < cl->n; i++)
		free(cl->rel[i]);
	free(cl->rel);
	memset(cl, 0, sizeof(*cl));
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collect the cases under ROOT/REL. Returns 0, or -1 after printing why. */
static int walk(const char *root, const char *rel, int depth, struct caselist *cl)
{
	char dir[RUN_MAX_PATH], child[RUN_MAX_PATH], childrel[RUN_MAX_PATH];
	DIR *d;
	struct dirent *de;
	struct stat st;
	int ret = -1;

	if (snprintf(dir, sizeof(dir), "%s%s%s", root, *rel ? "/" : "", rel) >= (int)sizeof(dir)) {
		fprintf(stderr, "e2e-runner: path too long under %s\n", root);
		return -1;
	}
	if (depth > RUN_MAX_DEPTH) {
		fprintf(stderr, "e2e-runner: %s: nested deeper than %d\n", dir, RUN_MAX_DEPTH);
		return -1;
	}
	d = opendir(dir);
	if (!d) {
		fprintf(stderr, "e2e-runner: cannot open %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (snprintf(child, sizeof(child), "%s/%s", dir, de->d_name) >=
			    (int)sizeof(child) ||
		    snprintf(childrel, sizeof(childrel), "%s%s%s", rel, *rel ? "/" : "",
			     de->d_name) >= (int)sizeof(childrel)) {
			fprintf(stderr, "e2e-runner: path too long under %s\n", dir);
			goto out;
		}
		if (stat(child, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (is_case_dir(child)) {
			if (cl->n == RUN_MAX_CASES) {
				fprintf(stderr, "e2e-runner: more than %d cases\n", RUN_MAX_CASES);
				goto out;
			}
			caselist_add(cl, childrel);
		} else if (walk(root, childrel, depth + 1, cl) < 0) {
			goto out;
		}
	}
	ret = 0;
out:
	closedir(d);
	return ret;
}

static void usage(void)
{
	fputs("usage: e2e-runner CASES_DIR [FILTER]\n"
	      "\n"
	      "Runs every case under CASES_DIR (sorted by path) whose path contains FILTER.\n"
	      "A case is a directory with 'request' + 'expect', or steps '1.request' + '1.expect', "
	      "...\n"
	      "Optional file 'backend' (one word B): base URL from $TERRARIUM_URL_B (or "
	      "upper-cased),\n"
	      "else $TERRARIUM_URL when B equals $TERRARIUM_BACKEND (default 'local'), else "
	      "skipped.\n"
	      "Without it: $TERRARIUM_URL.\n"
	      "\n"
	      "request: 'METHOD /path?query', header lines 'Name: value', '-name' (do not send),\n"
	      "  '@body-bytes N', '@sleep-ms N', '# comment'; an empty line; the body (final "
	      "newline\n"
	      "  dropped). Defaults unless named: x-api-key: {{KEY}}, anthropic-version: "
	      "2023-06-01,\n"
	      "  anthropic-beta: managed-agents-2026-04-01, content-type: application/json (body "
	      "only).\n"
	      "expect (one per line, '#' comments): status N | header NAME: VALUE | header NAME ~ "
	      "ERE |\n"
	      "  header NAME absent|present | json PATH ==|!=|<|<=|>|>= JSON | json PATH "
	      "absent|present |\n"
	      "  json PATH contains|!contains JSON | json PATH ~|!~ ERE | json PATH length N |\n"
	      "  json PATH type string|number|integer|object|array|null|bool |\n"
	      "  json PATH sorted SUBPATH asc|desc | body contains|!contains \"s\" | body ~ ERE |\n"
	      "  body empty | capture NAME PATH | capture NAME header H | capture NAME status\n"
	      "PATH: . .a.b .a[0] .a[-1] .a[*].b .m[\"key\"]\n"
	      "Variables {{NAME}}, {{NAME|url}}, {{NAME|json}}: UNIQUE, captures, and from the\n"
	      "  environment KEY KEY2 KEY_ACCT2 KEY_REVOKED WORKSPACE_ID WORKSPACE2_ID E2E_*.\n"
	      "Output: 'ok - case' / 'not ok - case' + details; last line 'N passed, N failed'.\n"
	      "Exit: 0 all passed, 1 a case failed, 2 usage error or a malformed case.\n"
	      "Set TERRARIUM_E2E_VERBOSE=1 to print every request and response.\n",
	      stderr);
}

int main(int argc, char **argv)
{
	struct caselist cl = { 0 };
	struct run run = { 0 };
	const char *root, *filter, *verbose;
	size_t passed = 0, failed = 0, skipped = 0, broken = 0, selected = 0;
	int ret = RUN_EXIT_USAGE, curl_ready = 0;

	if (argc < 2 || argc > 3 || argv[1][0] == '-') {
		usage();
		return RUN_EXIT_USAGE;
	}
	root = argv[1];
	filter = argc == 3 ? argv[2] : "";
	verbose = getenv(RUN_ENV_VERBOSE);
	run.verbose = verbose && *verbose && strcmp(verbose, "0") != 0;

	if (is_case_dir(root))
		caselist_add(&cl, "");
	else if (walk(root, "", 0, &cl) < 0)
		goto out;
	qsort(cl.rel, cl.n, sizeof(*cl.rel), str_ptr_cmp);

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fputs("e2e-runner: curl_global_init failed\n", stderr);
		goto out;
	}
	curl_ready = 1;
	run.curl = curl_easy_init();
	if (!run.curl) {
		fputs("e2e-runner: curl_easy_init failed\n", stderr);
		goto out;
	}

	for (size_t i = 0; i < cl.n; i++) {
		char dir[RUN_MAX_PATH];

		if (!strstr(cl.rel[i], filter))
			continue;
		selected++;
		snprintf(dir, sizeof(dir), "%s%s%s", root, *cl.rel[i] ? "/" : "", cl.rel[i]);
		switch (run_case(&run, dir, *cl.rel[i] ? cl.rel[i] : root)) {
		case CASE_PASS:
			passed++;
			break;
		case CASE_SKIP:
			skipped++;
			break;
		case CASE_ERROR:
			broken++;
			failed++;
			break;
		case CASE_FAIL:
			failed++;
			break;
		}
	}
	if (!selected)
		fprintf(stderr, "e2e-runner: no case under %s matches '%s'\n", root, filter);
	if (skipped)
		printf("# %zu skipped\n", skipped);
	if (broken)
		printf("# %zu malformed (case errors)\n", broken);
	printf("%zu passed, %zu failed\n", passed, failed);
	ret = !selected || broken ? RUN_EXIT_USAGE : failed ? RUN_EXIT_FAILED : RUN_EXIT_OK;
out:
	if (run.curl)
		curl_easy_cleanup(run.curl);
	if (curl_ready)
		curl_global_cleanup();
	caselist_release(&cl);
	return ret;
}
