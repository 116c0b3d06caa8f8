#include "unit_http.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "../../common/strbuf.h"

static size_t collect(char *data, size_t size, size_t nmemb, void *arg)
{
	strbuf_add(arg, data, size * nmemb);
	return size * nmemb;
}

json_t *unit_http_json(const char *method, const char *base, const char *path, const char *body)
{
	CURL *c = curl_easy_init();
	struct strbuf sb = STRBUF_INIT, url = STRBUF_INIT;
	long status = 0;
	json_t *doc;

	assert_non_null(c);
	strbuf_addf(&url, "%s%s", base, path);
	curl_easy_setopt(c, CURLOPT_URL, strbuf_str(&url));
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, UNIT_HTTP_TIMEOUT_S);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &sb);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200)
		fail_msg("%s %s: %ld %s", method, path, status, strbuf_str(&sb));
	doc = json_loads(strbuf_str(&sb), 0, NULL);
	assert_non_null(doc);
	curl_easy_cleanup(c);
	strbuf_release(&sb);
	strbuf_release(&url);
	return doc;
}
