#include "egress.h"
#include "packages.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int egress_url_host(const char *url, char *out, size_t outsz)
{
	const char *p = strstr(url, "://"), *start, *end, *at;
	size_t len;

	if (!p || p == url)
		return -1;
	start = p + 3;
	end = start + strcspn(start, "/?#");
	/* userinfo ends at the last '@' of the authority */
	for (at = end; at > start && at[-1] != '@'; at--)
		;
	if (at > start)
		start = at;
	if (*start == '[') {
		const char *close = memchr(start, ']', (size_t)(end - start));
		if (!close)
			return -1;
		start++;
		end = close;
	} else {
		const char *colon = memchr(start, ':', (size_t)(end - start));
		if (colon)
			end = colon;
	}
	len = (size_t)(end - start);
	if (!len || len > EGRESS_HOST_MAX || len >= outsz)
		return -1;
	for (size_t i = 0; i < len; i++)
		out[i] = (char)tolower((unsigned char)start[i]);
	out[len] = '\0';
	if (out[len - 1] == '.') /* "example.com." names the same host */
		out[--len] = '\0';
	return len ? 0 : -1;
}

static int add_host(json_t *set, const char *host)
{
	char lower[EGRESS_HOST_MAX + 1];
	size_t len = strlen(host);

	if (!len || len > EGRESS_HOST_MAX)
		return 0;
	for (size_t i = 0; i <= len; i++)
		lower[i] = (char)tolower((unsigned char)host[i]);
	return json_object_set_new(set, lower, json_true());
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t *egress_policy(json_t *networking, json_t *mcp_servers, const char *const *registry,
		      int install)
{
	const char *type = json_string_value(json_object_get(networking, "type"));
	json_t *hosts, *set = NULL, *out = NULL, *v;
	const char **sorted = NULL;
	const char *key;
	size_t i, n = 0;

	if (!type)
		return NULL;
	if (!strcmp(type, "unrestricted"))
		return json_null();
	if (strcmp(type, "limited"))
		return NULL;
	set = json_object();
	if (!set)
		return NULL;
	hosts = json_object_get(networking, "allowed_hosts");
	json_array_foreach (hosts, i, v)
		if (json_is_string(v))
			add_host(set, json_string_value(v));
	if (json_is_true(json_object_get(networking, "allow_mcp_servers"))) {
		json_array_foreach (mcp_servers, i, v) {
			char host[EGRESS_HOST_MAX + 1];
			const char *url = json_string_value(json_object_get(v, "url"));
			if (url && !egress_url_host(url, host, sizeof(host)))
				add_host(set, host);
		}
	}
	if (install || json_is_true(json_object_get(networking, "allow_package_managers"))) {
		/* the canonical hosts: every package manager's registries */
		for (size_t m = 0; !registry && m < PKG_MANAGER_COUNT; m++)
			for (const char *const *r = pkg_managers[m].registry; *r; r++)
				add_host(set, *r);
		for (const char *const *r = registry; r && *r; r++)
			add_host(set, *r);
	}

	sorted = malloc((json_object_size(set) + 1) * sizeof(*sorted));
	out = json_array();
	if (!sorted || !out)
		goto fail;
	json_object_foreach (set, key, v)
		sorted[n++] = key;
	qsort(sorted, n, sizeof(*sorted), by_string);
	for (i = 0; i < n; i++)
		if (json_array_append_new(out, json_string(sorted[i])))
			goto fail;
	free(sorted);
	json_decref(set);
	return out;
fail:
	free(sorted);
	json_decref(set);
	json_decref(out);
	return NULL;
}
