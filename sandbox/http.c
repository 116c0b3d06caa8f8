/* The HTTP client of the remote sandbox drivers (contract in http.h). */
#include "http.h"
#include "backend.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/redact.h"
#include "../common/strbuf.h"
#include "transfer.h"

#define HTTP_PROTOCOLS "http,https"
#define HTTP_DEFAULT_SOCKET_BASE "http://localhost"
#define HTTP_RETRY_AFTER_MAX 32
#define HTTP_WATCH_SLICE_MS 100 /* backoff sleeps in slices this long to ask the watch */

/* The watch of the sandbox call running on this thread (http.h). */
static _Thread_local struct http_watch_ctx http_watch_now;

struct http_watch_ctx http_watch_enter(const struct proc_watch *w)
{
	struct http_watch_ctx prev = http_watch_now;

	http_watch_now = (struct http_watch_ctx){ w, 0 };
	return prev;
}

void http_watch_leave(struct http_watch_ctx prev)
{
	http_watch_now = prev;
}

/* What one transfer collects; reset before every try. */
struct xfer {
	const struct http_request *rq;
	CURL *easy;
	struct strbuf body;
	size_t max;
	int truncated;
	struct strbuf headers;
	int keep_headers;
	char retry_after[HTTP_RETRY_AFTER_MAX];
	int streamed; /* on_data has received bytes: the call must not repeat */
	int aborted;  /* on_data asked to stop */
	int stopped;  /* the thread's watch said stop */
};

static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;
	while (n--)
		*v++ = 0;
}

/* Read the credential file: at most HTTP_KEY_MAX - 1 bytes, trailing whitespace stripped, no
 * control characters inside (they would split the header). Messages never quote the content. */
static int read_key(struct http_client *c, const char *path, char *err, size_t errsz)
{
	struct stat st;
	ssize_t n;
	size_t len;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		snprintf(err, errsz, "%s: api_key_file %s: %s", c->backend, path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errsz, "%s: api_key_file %s: not a regular file", c->backend, path);
		close(fd);
		return -1;
	}
	if (st.st_size >= HTTP_KEY_MAX) {
		snprintf(err, errsz, "%s: api_key_file %s: is too large (limit %d bytes)",
			 c->backend, path, HTTP_KEY_MAX - 1);
		close(fd);
		return -1;
	}
	n = read(fd, c->key, sizeof(c->key) - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, errsz, "%s: api_key_file %s: %s", c->backend, path, strerror(errno));
		wipe(c->key, sizeof(c->key));
		return -1;
	}
	len = (size_t)n;
	while (len && (c->key[len - 1] == '\n' || c->key[len - 1] == '\r' ||
		       c->key[len - 1] == ' ' || c->key[len - 1] == '\t'))
		len--;
	c->key[len] = '\0';
	if (!len) {
		snprintf(err, errsz, "%s: api_key_file %s: is empty", c->backend, path);
		return -1;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)c->key[i];
		if (ch < 0x20 || ch == 0x7f) {
			snprintf(err, errsz, "%s: api_key_file %s: contains control characters",
				 c->backend, path);
			wipe(c->key, sizeof(c->key));
			return -1;
		}
	}
	return 0;
}

int http_init(struct http_client *c, const char *backend, const struct remote_conf *rc, char *err,
	      size_t errsz)
{
	const char *base = rc->url[0] ? rc->url : rc->socket[0] ? HTTP_DEFAULT_SOCKET_BASE : NULL;
	size_t blen;

	memset(c, 0, sizeof(*c));
	snprintf(c->backend, sizeof(c->backend), "%s", backend);
	if (!base) {
		snprintf(err, errsz, "%s: [%s] url is not set", backend, backend);
		return -1;
	}
	if (strncmp(base, "http://", 7) && strncmp(base, "https://", 8)) {
		snprintf(err, errsz, "%s: [%s] url must start with http:// or https://", backend,
			 backend);
		return -1;
	}
	blen = strlen(base);
	while (blen && base[blen - 1] == '/')
		blen--;
	if (blen >= sizeof(c->base) || strlen(rc->socket) >= sizeof(c->socket)) {
		snprintf(err, errsz, "%s: [%s] url or socket is too long", backend, backend);
		return -1;
	}
	memcpy(c->base, base, blen);
	c->base[blen] = '\0';
	strcpy(c->socket, rc->socket);
	c->timeout_s = rc->timeout_s > 0 ? rc->timeout_s : CONFIG_DEFAULT_HTTP_TIMEOUT_S;
	if (rc->api_key_file[0] && read_key(c, rc->api_key_file, err, errsz))
		return -1;
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errsz, "%s: libcurl initialisation failed", backend);
		wipe(c->key, sizeof(c->key));
		return -1;
	}
	c->easy = curl_easy_init();
	if (!c->easy) {
		snprintf(err, errsz, "%s: libcurl handle could not be created", backend);
		curl_global_cleanup();
		wipe(c->key, sizeof(c->key));
		return -1;
	}
	c->ready = 1;
	return 0;
}

void http_set_auth(struct http_client *c, const char *name, const char *prefix)
{
	snprintf(c->auth_name, sizeof(c->auth_name), "%s", name ? name : "");
	snprintf(c->auth_prefix, sizeof(c->auth_prefix), "%s", prefix ? prefix : "");
}

void http_release(struct http_client *c)
{
	if (c->easy)
		curl_easy_cleanup(c->easy);
	if (c->ready)
		curl_global_cleanup();
	c->easy = NULL;
	c->ready = 0;
	wipe(c->key, sizeof(c->key));
}

/* A handle for one call: the client's own when no other call has it, else a new one (NULL when
 * that cannot be made). */
static CURL *easy_take(struct http_client *c)
{
	CURL *e = __atomic_exchange_n((CURL **)&c->easy, NULL, __ATOMIC_ACQ_REL);

	return e ? e : curl_easy_init();
}

/* Give the call's handle E back: the client's again when its slot is empty, else freed. */
static void easy_give(struct http_client *c, CURL *e)
{
	CURL *none = NULL;

	if (e && !__atomic_compare_exchange_n((CURL **)&c->easy, &none, e, 0, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE))
		curl_easy_cleanup(e);
}

struct http_request http_req(const char *method, const char *path, json_t *body)
{
	struct http_request rq;

	memset(&rq, 0, sizeof(rq));
	rq.method = method;
	rq.path = path;
	rq.body = body;
	return rq;
}

void http_response_release(struct http_response *rs)
{
	free(rs->body);
	free(rs->headers);
	memset(rs, 0, sizeof(*rs));
}

json_t *http_get_json(struct http_client *c, const char *path, char *err, size_t errsz)
{
	static const long ok[] = { 200, 0 };
	struct http_request rq = { .method = "GET", .path = path };
	struct http_response rs;
	json_t *root = NULL;

	if (!http_expect(c, &rq, ok, &rs, err, errsz) && !(root = http_json(&rs)))
		snprintf(err, errsz, "%s: GET %.*s: answer is not JSON", c->backend,
			 (int)strcspn(path, "?"), path);
	http_response_release(&rs);
	return root;
}

long http_call(struct http_client *c, const char *method, const char *path, const long *ok,
	       size_t body_max, char *err, size_t errsz)
{
	struct http_request rq = { .method = method, .path = path, .body_max = body_max };
	struct http_response rs;
	long status = http_expect(c, &rq, ok, &rs, err, errsz) ? 0 : rs.status;

	http_response_release(&rs);
	return status;
}

int http_expect(struct http_client *c, const struct http_request *rq, const long *ok,
		struct http_response *rs, char *err, size_t errsz)
{
	if (http_do(c, rq, rs, err, errsz))
		return -1;
	for (int i = 0; ok[i]; i++)
		if (rs->status == ok[i])
			return 0;
	http_error(c, rq, rs, err, errsz);
	return -1;
}

int http_json_str(json_t *obj, const char *key, char *out, size_t outsz)
{
	const char *v = json_string_value(json_object_get(obj, key));

	if (!v || !*v || strlen(v) >= outsz)
		return -1;
	strcpy(out, v);
	return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb, keep;
	long status = 0;

	if (x->rq->on_data) {
		curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300) {
			x->streamed = 1;
			if (x->rq->on_data(x->rq->on_data_arg, data, n)) {
				x->aborted = 1;
				return 0; /* CURLE_WRITE_ERROR */
			}
			return n;
		}
	}
	/* keep at most max bytes; the rest is read and dropped */
	keep = x->body.len < x->max ? x->max - x->body.len : 0;
	if (keep > n)
		keep = n;
	if (keep < n)
		x->truncated = 1;
	if (keep && strbuf_add(&x->body, data, keep))
		return 0;
	return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nmemb;

	/* a new response (a retry, or 100 Continue then the real one) starts a new block */
	if (n >= 5 && !strncmp(data, "HTTP/", 5)) {
		strbuf_reset(&x->headers);
		x->retry_after[0] = '\0';
	}
	if (n > 12 && !strncasecmp(data, "Retry-After:", 12)) {
		size_t i = 12, k = 0;
		while (i < n && (data[i] == ' ' || data[i] == '\t'))
			i++;
		while (i < n && k + 1 < sizeof(x->retry_after) && data[i] >= '0' && data[i] <= '9')
			x->retry_after[k++] = data[i++];
		x->retry_after[k] = '\0';
	}
	if (x->keep_headers && x->headers.len + n < HTTP_HEADERS_MAX &&
	    strbuf_add(&x->headers, data, n))
		return 0;
	return n;
}

/* Ask this thread's watch when it is due (http.h): 1 when it says stop. */
static int watch_stop(void)
{
	struct http_watch_ctx *x = &http_watch_now;
	const struct proc_watch *w = x->watch;
	long long now = clock_mono_ms();

	if (!w)
		return 0;
	if (!x->due_ms)
		x->due_ms = now + w->interval_ms; /* the first ask of this call */
	if (now < x->due_ms)
		return 0;
	if (w->tick(w->arg))
		return 1;
	x->due_ms = clock_mono_ms() + w->interval_ms;
	return 0;
}

/* CURLOPT_XFERINFOFUNCTION: libcurl calls it often during a transfer, at least once a second
 * while nothing moves; non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK). */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct xfer *x = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	if (watch_stop())
		x->stopped = 1;
	return x->stopped;
}

/* Sleep MS in slices, asking this thread's watch: 1 when it says stop. */
static int watched_sleep(unsigned ms)
{
	while (ms) {
		unsigned k = ms > HTTP_WATCH_SLICE_MS ? HTTP_WATCH_SLICE_MS : ms;
		clock_sleep_ms(k);
		ms -= k;
		if (watch_stop())
			return 1;
	}
	return 0;
}

/* The path of RQ without its query string, for messages. */
static void display_path(const struct http_request *rq, char *out, size_t outsz)
{
	size_t n = strcspn(rq->path, "?");
	if (n >= outsz)
		n = outsz - 1;
	memcpy(out, rq->path, n);
	out[n] = '\0';
}

void http_scrub(const struct http_client *c, char *buf, size_t bufsz)
{
	size_t klen = strlen(c->key), mlen = strlen(REDACT_MASK);
	char *p, *from = buf;

	if (!klen || !bufsz)
		return;
	buf[bufsz - 1] = '\0';
	while ((p = strstr(from, c->key))) {
		if (klen >= mlen) {
			memcpy(p, REDACT_MASK, mlen);
			memmove(p + mlen, p + klen, strlen(p + klen) + 1);
			from = p + mlen;
		} else {
			memset(p, '*', klen); /* shorter than the mask: overwrite in place */
			from = p + klen;
		}
	}
}

void http_error(const struct http_client *c, const struct http_request *rq,
		const struct http_response *rs, char *err, size_t errsz)
{
	char path[HTTP_URL_MAX], quote[HTTP_ERROR_BODY_MAX + 1], clean[HTTP_ERROR_BODY_MAX * 2];
	size_t n = rs->body ? rs->len : 0;

	if (!errsz)
		return;
	display_path(rq, path, sizeof(path));
	if (n > HTTP_ERROR_BODY_MAX)
		n = HTTP_ERROR_BODY_MAX;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)rs->body[i];
		quote[i] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	quote[n] = '\0';
	redact(quote, clean, sizeof(clean));
	snprintf(err, errsz, "%s %s: status %ld%s%s", rq->method, path, rs->status,
		 clean[0] ? ": " : "", clean);
	http_scrub(c, err, errsz);
}

int http_answer_str(const struct http_client *c, const struct http_request *rq,
		    const struct http_response *rs, const char *key, char *out, size_t outsz,
		    char *err, size_t errsz)
{
	char path[HTTP_URL_MAX];
	json_t *root = http_json(rs);
	int rc = http_json_str(root, key, out, outsz);

	json_decref(root);
	if (rc) {
		display_path(rq, path, sizeof(path));
		snprintf(err, errsz, "%s: %s %s: answer has no usable %s", c->backend, rq->method,
			 path, key);
	}
	return rc;
}

static int transient_status(long status)
{
	return status == 408 || status == 429 || status >= 500;
}

static int transient_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return 1;
	default:
		return 0;
	}
}

/* One try of RQ with X's handle; fills X. */
static CURLcode perform(struct http_client *c, const struct http_request *rq, const char *url,
			const char *payload, size_t payload_len, struct curl_slist *hdrs,
			struct xfer *x)
{
	CURL *e = x->easy;
	long total = rq->timeout_s > 0 ? rq->timeout_s : c->timeout_s;
	long connect = total < HTTP_CONNECT_TIMEOUT_MAX_S ? total : HTTP_CONNECT_TIMEOUT_MAX_S;
	int absolute = !strncmp(rq->path, "http://", 7) || !strncmp(rq->path, "https://", 8);

	/* reset keeps live connections and the DNS cache: the handle is still reused */
	curl_easy_reset(e);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, HTTP_PROTOCOLS);
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, HTTP_PROTOCOLS);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, connect);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, total);
	if (c->socket[0] && !absolute)
		curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, c->socket);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
	if (http_watch_now.watch) {
		curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(e, CURLOPT_XFERINFODATA, x);
		curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	}
	if (!strcmp(rq->method, "GET")) {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	} else if (!strcmp(rq->method, "HEAD")) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (payload || !strcmp(rq->method, "POST")) {
		/* a body, or an empty POST; Content-Type comes from the header list */
		if (strcmp(rq->method, "POST"))
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, rq->method);
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, payload ? payload : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)(payload ? payload_len : 0));
	} else {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, rq->method); /* DELETE, PUT... no body */
	}
	return curl_easy_perform(e);
}

/* A request ready to send: its URL, body and header list. */
struct prepared {
	char url[HTTP_URL_MAX * 2];
	char *payload; /* the JSON body's text, owned */
	const char *body;
	size_t len;
	struct curl_slist *hdrs; /* owned */
};

static void prepared_release(struct prepared *p)
{
	curl_slist_free_all(p->hdrs);
	free(p->payload);
}

/* RQ's body (JSON or raw) and its Content-Type into P (PATH names the request in ERR). 0, or -1
 * with ERR set. */
static int prepare_body(const struct http_request *rq, const char *path, struct prepared *p,
			char *err, size_t errsz)
{
	char ctype[HTTP_URL_MAX];
	int rc = 0;

	if (rq->body) {
		p->payload = json_dumps(rq->body, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!p->payload) {
			snprintf(err, errsz, "%s %s: request body could not be encoded", rq->method,
				 path);
			return -1;
		}
		rc = transfer_list_add(&p->hdrs, "Content-Type: application/json");
		p->body = p->payload;
		p->len = strlen(p->payload);
	} else if (rq->raw_body) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s",
			 rq->content_type ? rq->content_type : "application/octet-stream");
		rc = transfer_list_add(&p->hdrs, ctype);
		p->body = rq->raw_body;
		p->len = rq->raw_len;
	} else if (!strcmp(rq->method, "POST")) {
		/* an empty POST: not libcurl's default form-urlencoded Content-Type */
		rc = transfer_list_add(&p->hdrs, "Content-Type:");
	}
	if (rc)
		snprintf(err, errsz, "%s %s: out of memory", rq->method, path);
	return rc;
}

/* RQ's URL, body and headers (the credential among them unless rq->no_auth) into P. 0, or -1
 * with ERR set. */
static int prepare(const struct http_client *c, const struct http_request *rq, const char *path,
		   struct prepared *p, char *err, size_t errsz)
{
	char auth[HTTP_AUTH_NAME_MAX + 32 + HTTP_KEY_MAX + 4];
	int absolute = !strncmp(rq->path, "http://", 7) || !strncmp(rq->path, "https://", 8);
	int n = absolute ? snprintf(p->url, sizeof(p->url), "%s", rq->path)
			 : snprintf(p->url, sizeof(p->url), "%s%s", c->base, rq->path);
	int rc;

	if (n < 0 || (size_t)n >= sizeof(p->url)) {
		snprintf(err, errsz, "%s %s: URL is too long", rq->method, path);
		return -1;
	}
	if (prepare_body(rq, path, p, err, errsz))
		return -1;
	/* no "Expect: 100-continue" round trip for larger bodies */
	rc = transfer_list_add(&p->hdrs, "Expect:") ||
	     transfer_list_add(&p->hdrs, "Accept: application/json, text/event-stream, */*");
	for (int i = 0; !rc && i < HTTP_HEADERS_EXTRA_MAX && rq->headers[i]; i++)
		rc = transfer_list_add(&p->hdrs, rq->headers[i]);
	if (!rc && !rq->no_auth && c->key[0] && c->auth_name[0]) {
		snprintf(auth, sizeof(auth), "%s: %s%s", c->auth_name, c->auth_prefix, c->key);
		rc = transfer_list_add(&p->hdrs, auth);
		wipe(auth, sizeof(auth));
	}
	if (rc)
		snprintf(err, errsz, "%s %s: out of memory", rq->method, path);
	return rc;
}

/* Try RQ (prepared as P) with handle E until an answer or a failure that is not transient, the
 * retries are spent, or this thread's watch says stop, sleeping the backoff (or the answer's
 * Retry-After, capped) between tries. X holds the last try's transfer, RS its status and the
 * tries made. The last try's outcome. */
static CURLcode send_tries(struct http_client *c, const struct http_request *rq,
			   const struct prepared *p, CURL *e, struct xfer *x,
			   struct http_response *rs)
{
	unsigned delay = HTTP_BACKOFF_MS;
	CURLcode rc;

	for (int attempt = 0;; attempt++) {
		strbuf_release(&x->body);
		strbuf_release(&x->headers);
		memset(x, 0, sizeof(*x));
		x->rq = rq;
		x->easy = e;
		x->max = rq->body_max ? rq->body_max : HTTP_BODY_MAX;
		x->keep_headers = rq->keep_headers;
		rs->status = 0;
		if (watch_stop()) {
			x->stopped = 1;
			return CURLE_ABORTED_BY_CALLBACK;
		}
		rc = perform(c, rq, p->url, p->body, p->len, p->hdrs, x);
		rs->tries = attempt + 1;
		if (rc == CURLE_OK)
			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &rs->status);
		if (rq->no_retry || x->streamed || x->stopped || attempt >= HTTP_RETRIES_MAX)
			return rc;
		if (rc == CURLE_OK ? !transient_status(rs->status) : !transient_curl(rc))
			return rc;
		if (x->retry_after[0]) {
			unsigned long s = strtoul(x->retry_after, NULL, 10);
			delay = s * 1000 > HTTP_BACKOFF_CAP_MS ? HTTP_BACKOFF_CAP_MS
							       : (unsigned)s * 1000;
		}
		__atomic_add_fetch(&c->retry_sleep_ms, delay, __ATOMIC_RELAXED);
		if (watched_sleep(delay)) {
			x->stopped = 1;
			return CURLE_ABORTED_BY_CALLBACK;
		}
		delay = delay * 2 > HTTP_BACKOFF_CAP_MS ? HTTP_BACKOFF_CAP_MS : delay * 2;
	}
}

/* RS from the last try X (outcome RC): its body and headers; ERR says why when it failed. 0 when
 * an answer arrived, else -1. */
static int response_from(const struct http_request *rq, const char *path, CURLcode rc,
			 struct xfer *x, struct http_response *rs, char *err, size_t errsz)
{
	rs->body = strbuf_detach(&x->body, &rs->len);
	rs->truncated = x->truncated;
	rs->headers = strbuf_detach(&x->headers, &rs->headers_len);
	if (!rs->body && !(rs->body = strdup(""))) {
		snprintf(err, errsz, "%s %s: out of memory", rq->method, path);
		return -1;
	}
	if (rc == CURLE_OK)
		return 0;
	rs->timed_out = rc == CURLE_OPERATION_TIMEDOUT;
	rs->stopped = x->stopped;
	if (x->stopped)
		snprintf(err, errsz, "%s %s: stopped by the caller's watch", rq->method, path);
	else if (x->aborted)
		snprintf(err, errsz, "%s %s: aborted by the driver", rq->method, path);
	else
		snprintf(err, errsz, "%s %s: %s%s", rq->method, path, curl_easy_strerror(rc),
			 rs->tries > 1 ? " (after retries)" : "");
	return -1;
}

int http_do(struct http_client *c, const struct http_request *rq, struct http_response *rs,
	    char *err, size_t errsz)
{
	char path[HTTP_URL_MAX];
	struct prepared p;
	struct xfer x;
	CURL *e = NULL;
	int ret = -1;

	memset(rs, 0, sizeof(*rs));
	memset(&x, 0, sizeof(x));
	memset(&p, 0, sizeof(p));
	display_path(rq, path, sizeof(path));
	if (!c->ready)
		snprintf(err, errsz, "%s %s: client is not initialised", rq->method, path);
	else if (!prepare(c, rq, path, &p, err, errsz) && !(e = easy_take(c)))
		snprintf(err, errsz, "%s %s: out of memory", rq->method, path);
	if (e) {
		CURLcode rc = send_tries(c, rq, &p, e, &x, rs);
		easy_give(c, e);
		ret = response_from(rq, path, rc, &x, rs, err, errsz);
	}
	prepared_release(&p);
	strbuf_release(&x.body);
	strbuf_release(&x.headers);
	if (!rs->body) {
		rs->body = strdup("");
		rs->len = 0;
	}
	return ret;
}

json_t *http_json(const struct http_response *rs)
{
	if (!rs->body || rs->truncated || !rs->len)
		return NULL;
	return json_loadb(rs->body, rs->len, JSON_REJECT_DUPLICATES, NULL);
}

int http_header(const struct http_response *rs, const char *name, char *out, size_t outsz)
{
	size_t nlen = strlen(name);
	const char *p = rs->headers;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t llen = eol ? (size_t)(eol - p) : strlen(p);
		if (llen > nlen && p[nlen] == ':' && !strncasecmp(p, name, nlen)) {
			const char *v = p + nlen + 1;
			size_t vlen = llen - nlen - 1;
			while (vlen && (*v == ' ' || *v == '\t'))
				v++, vlen--;
			while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == ' '))
				vlen--;
			if (vlen >= outsz)
				return -1;
			memcpy(out, v, vlen);
			out[vlen] = '\0';
			return 0;
		}
		p = eol ? eol + 1 : p + llen;
	}
	return -1;
}

int http_escape(const char *in, char *out, size_t outsz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			if (o + 1 >= outsz)
				return -1;
			out[o++] = (char)*p;
		} else {
			if (o + 3 >= outsz)
				return -1;
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	if (o >= outsz)
		return -1;
	out[o] = '\0';
	return 0;
}

void *sbx_http_open(struct sbx *s, const struct remote_conf *rc, size_t size, const char *auth_name,
		    const char *auth_prefix, char *err, size_t errsz)
{
	struct http_client *c = calloc(1, size); /* the state's first member */

	if (!c) {
		snprintf(err, errsz, "%s: out of memory", s->ops->name);
		return NULL;
	}
	if (http_init(c, s->ops->name, rc, err, errsz)) {
		free(c);
		return NULL;
	}
	if (auth_name)
		http_set_auth(c, auth_name, auth_prefix);
	s->priv = c;
	return c;
}

void sbx_http_close(struct sbx *s)
{
	struct http_client *c = s->priv; /* the state's first member */

	if (!c)
		return;
	http_release(c);
	free(c);
	s->priv = NULL;
}
