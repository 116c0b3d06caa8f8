/* The model client of the runner (contract in model.h): libcurl's multi interface drives one
 * easy handle per client, so the call can ask its cancel callback and watch the stream's
 * silence on its own clock while bytes go to the reader (model_stream.c). */
#include "model.h"
#include "model_stream.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/config.h"
#include "../sandbox/transfer.h"

#define MODEL_PATH "/v1/messages"
#define MODEL_PROTOCOLS "http,https"
#define MODEL_USER_AGENT "terrarium-runner"
#define MODEL_CONNECT_TIMEOUT_S 10 /* when the configuration sets none */
/* One call's wall-clock bound: the idle timeout cannot end a stream that keeps trickling
 * (pings) and never finishes. Longer than any real reply at max_tokens. */
#define MODEL_CALL_MAX_S 7200L
#define MODEL_HEADER_KEY "x-api-key: "

struct model_client {
	struct model_conf conf;
	char url[MODEL_URL_MAX + sizeof(MODEL_PATH)];
	const char *conf_error; /* what every call answers when the configuration is unusable */
	CURL *easy;
	CURLM *multi; /* keeps the connection between calls */
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
};

/* What one call's callbacks share. */
struct model_xfer {
	struct model_stream rd;
	long long last_ms; /* when bytes last came (or the call began) */
};

static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;
	while (n--)
		*v++ = 0;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct model_xfer *x = arg;

	x->last_ms = clock_mono_ms();
	model_stream_header(&x->rd, data, size * nmemb);
	return size * nmemb;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct model_xfer *x = arg;

	x->last_ms = clock_mono_ms();
	/* 0 ends the transfer (CURLE_WRITE_ERROR): the reader has decided */
	return model_stream_feed(&x->rd, data, size * nmemb) ? 0 : size * nmemb;
}

/* The configuration's problems, found once: a call with one of them fails at once. */
static const char *check_conf(struct model_client *m)
{
	size_t n = strnlen(m->conf.base_url, sizeof(m->conf.base_url));

	if (n == sizeof(m->conf.base_url)) {
		m->conf.base_url[0] = '\0';
		return "[model] base_url is too long";
	}
	while (n && m->conf.base_url[n - 1] == '/')
		m->conf.base_url[--n] = '\0';
	if (strncmp(m->conf.base_url, "http://", 7) && strncmp(m->conf.base_url, "https://", 8))
		return "[model] base_url must start with http:// or https://";
	if (strnlen(m->conf.api_key, sizeof(m->conf.api_key)) == sizeof(m->conf.api_key)) {
		wipe(m->conf.api_key, sizeof(m->conf.api_key));
		return "the model API key is too long";
	}
	for (const char *k = m->conf.api_key; *k; k++)
		if ((unsigned char)*k < 0x20 || *k == 0x7f)
			return "the model API key contains control characters";
	snprintf(m->url, sizeof(m->url), "%s%s", m->conf.base_url, MODEL_PATH);
	return NULL;
}

struct model_client *model_new(const struct model_conf *conf)
{
	char key[sizeof(MODEL_HEADER_KEY) + MODEL_KEY_MAX];
	struct model_client *m = calloc(1, sizeof(*m));
	CURL *e;

	if (!m)
		return NULL;
	m->conf = *conf;
	if (m->conf.idle_timeout_s <= 0)
		m->conf.idle_timeout_s = CONFIG_DEFAULT_MODEL_IDLE_S;
	if (m->conf.connect_timeout_s <= 0)
		m->conf.connect_timeout_s = MODEL_CONNECT_TIMEOUT_S;
	m->conf_error = check_conf(m);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		free(m);
		return NULL;
	}
	m->easy = e = curl_easy_init();
	m->multi = curl_multi_init();
	if (!e || !m->multi)
		goto fail;
	if (!m->conf_error && m->conf.api_key[0]) {
		snprintf(key, sizeof(key), "%s%s", MODEL_HEADER_KEY, m->conf.api_key);
		if (transfer_list_add(&m->headers, key))
			goto fail;
	}
	wipe(key, sizeof(key));
	/* "Expect:": no 100-continue round trip before a large body */
	if (transfer_list_add(&m->headers, "anthropic-version: " MODEL_API_VERSION) ||
	    transfer_list_add(&m->headers, "content-type: application/json") ||
	    transfer_list_add(&m->headers, "accept: text/event-stream") ||
	    transfer_list_add(&m->headers, "Expect:"))
		goto fail;
	curl_easy_setopt(e, CURLOPT_URL, m->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, MODEL_PROTOCOLS);
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, MODEL_PROTOCOLS);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, m->conf.connect_timeout_s);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, MODEL_CALL_MAX_S);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, MODEL_USER_AGENT);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, m->headers);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, m->errbuf);
	return m;
fail:
	wipe(key, sizeof(key));
	model_free(m);
	return NULL;
}

void model_free(struct model_client *m)
{
	if (!m)
		return;
	for (struct curl_slist *h = m->headers; h; h = h->next)
		wipe(h->data, strlen(h->data));
	curl_slist_free_all(m->headers);
	if (m->easy)
		curl_easy_cleanup(m->easy);
	if (m->multi)
		curl_multi_cleanup(m->multi);
	curl_global_cleanup();
	wipe(m, sizeof(*m));
	free(m);
}

/* BODY with "stream": true, and max_tokens when it sets none, as JSON text (caller frees).
 * BODY's members are shared, not copied, and BODY is not changed. NULL when out of memory. */
static char *request_text(const struct model_client *m, const json_t *body)
{
	json_t *copy = json_copy((json_t *)body); /* shallow: only the top-level object is new */
	char *text = NULL;

	if (!copy)
		return NULL;
	if (json_object_set_new(copy, "stream", json_true()))
		goto out;
	if (!json_object_get(copy, "max_tokens") && m->conf.max_tokens > 0 &&
	    json_object_set_new(copy, "max_tokens", json_integer(m->conf.max_tokens)))
		goto out;
	text = json_dumps(copy, JSON_COMPACT);
out:
	json_decref(copy);
	return text;
}

/* Remove every copy of the key from the reply's messages (an echo from a proxy). */
static void scrub(const struct model_client *m, struct model_reply *out)
{
	size_t klen = strlen(m->conf.api_key);
	char *p;

	if (!klen)
		return;
	while ((p = strstr(out->error_message, m->conf.api_key)))
		memset(p, '*', klen);
	while ((p = strstr(out->error_type, m->conf.api_key)))
		memset(p, '*', klen);
}

/* A transfer that got no answer: a configuration problem (not worth again) or the network. */
static void no_answer(struct model_client *m, CURLcode rc, struct model_stream *rd)
{
	const char *msg = m->errbuf[0] ? m->errbuf : curl_easy_strerror(rc);

	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		model_stream_fail(rd, MODEL_RETRY, "timeout", "%s", msg);
		break;
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_NOT_BUILT_IN:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
		model_stream_fail(rd, MODEL_FAILED, "connection", "%s", msg);
		break;
	default:
		model_stream_fail(rd, MODEL_RETRY, "connection", "%s", msg);
	}
}

/* Run the transfer that is set up until it ends, goes silent for the idle timeout, or CANCEL
 * says stop. Returns the transfer's result; *IDLE or *CANCELLED says why it was left. */
static CURLcode run(struct model_client *m, struct model_xfer *x, int (*cancel)(void *), void *arg,
		    int *idle, int *cancelled)
{
	long idle_s = m->conf.idle_timeout_s;
	long long next_ask = clock_mono_ms() + MODEL_CANCEL_POLL_MS, now, due;
	curl_off_t sent = 0, up;
	int running;

	while ((running = transfer_perform(m->multi)) > 0) {
		now = clock_mono_ms();
		/* a large request takes a while to send: bytes going out are not silence */
		if (!curl_easy_getinfo(m->easy, CURLINFO_SIZE_UPLOAD_T, &up) && up != sent) {
			sent = up;
			x->last_ms = now;
		}
		if (now - x->last_ms >= idle_s * 1000) {
			/* a complete reply whose answer never ends is done all the same */
			*idle = !model_stream_complete(&x->rd);
			return CURLE_OK;
		}
		if (cancel && now >= next_ask) {
			if (cancel(arg)) {
				*cancelled = 1;
				return CURLE_OK;
			}
			next_ask = clock_mono_ms() + MODEL_CANCEL_POLL_MS;
		}
		due = x->last_ms + idle_s * 1000;
		if (cancel && next_ask < due)
			due = next_ask;
		transfer_wait(m->multi, due - now, MODEL_CANCEL_POLL_MS);
	}
	if (running < 0)
		return CURLE_OUT_OF_MEMORY;
	return transfer_result(m->multi, m->easy);
}

enum model_outcome model_call(struct model_client *m, const json_t *body, int (*cancel)(void *),
			      void *arg, struct model_reply *out)
{
	struct model_xfer x;
	enum model_outcome o;
	const char *broken = NULL;
	char *text = NULL;
	int idle = 0, cancelled = 0;
	CURLcode rc;

	model_stream_init(&x.rd, out);
	if (m->conf_error) {
		model_stream_fail(&x.rd, MODEL_FAILED, "configuration", "%s", m->conf_error);
		goto out;
	}
	if (!json_is_object(body)) {
		model_stream_fail(&x.rd, MODEL_FAILED, "invalid_request",
				  "the request is not a JSON object");
		goto out;
	}
	if (cancel && cancel(arg)) {
		model_stream_fail(&x.rd, MODEL_CANCELLED, "cancelled", "the call was cancelled");
		goto out;
	}
	if (!(text = request_text(m, body))) {
		model_stream_fail(&x.rd, MODEL_RETRY, "out_of_memory",
				  "the request could not be built");
		goto out;
	}
	m->errbuf[0] = '\0';
	x.last_ms = clock_mono_ms();
	curl_easy_setopt(m->easy, CURLOPT_POSTFIELDS, text);
	curl_easy_setopt(m->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(text));
	curl_easy_setopt(m->easy, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(m->easy, CURLOPT_WRITEDATA, &x);
	if (curl_multi_add_handle(m->multi, m->easy) != CURLM_OK) {
		model_stream_fail(&x.rd, MODEL_RETRY, "out_of_memory",
				  "the call could not be started");
		goto out;
	}
	rc = run(m, &x, cancel, arg, &idle, &cancelled);
	curl_multi_remove_handle(m->multi, m->easy); /* a transfer left early is closed */
	if (cancelled)
		model_stream_fail(&x.rd, MODEL_CANCELLED, "cancelled", "the call was cancelled");
	else if (idle)
		model_stream_fail(&x.rd, MODEL_RETRY, "timeout", "no data from the model for %ld s",
				  m->conf.idle_timeout_s);
	else if (!x.rd.status)
		no_answer(m, rc, &x.rd);
	else if (rc != CURLE_OK && !x.rd.decided) /* not the reader's own stop */
		broken = m->errbuf[0] ? m->errbuf : curl_easy_strerror(rc);
out:
	o = model_stream_finish(&x.rd, broken);
	model_stream_release(&x.rd);
	free(text);
	scrub(m, out);
	return o;
}
