#include "verr.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int verr_set(struct verr *err, int status, const char *code, const char *fmt, ...)
{
	va_list ap;

	err->status = status;
	snprintf(err->code, sizeof(err->code), "%s", code ? code : "");
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void verr_append(struct verr *err, const char *fmt, ...)
{
	size_t len = strlen(err->msg);
	va_list ap;

	if (len && len + 2 < sizeof(err->msg)) {
		memcpy(err->msg + len, "; ", 3);
		len += 2;
	}
	if (len >= sizeof(err->msg) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(err->msg + len, sizeof(err->msg) - len, fmt, ap);
	va_end(ap);
}

const char *verr_echo(char *buf, const char *s, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t chars = 0, len = 0;

	for (; *p && len < VERR_ECHO_BUF - sizeof("..."); p++) {
		if ((*p & 0xC0) != 0x80 && chars++ == max_chars)
			break;
		buf[len++] = (*p < 0x20 || *p == 0x7f) ? '?' : (char)*p;
	}
	if (*p)
		memcpy(buf + len, "...", 3), len += 3;
	buf[len] = '\0';
	return buf;
}

int verr_in_list(const char *s, const char *const *list)
{
	for (; s && *list; list++)
		if (!strcmp(s, *list))
			return 1;
	return 0;
}

int verr_check_fields(json_t *obj, const char *path, const char *const *allowed, struct verr *err)
{
	const char *key;
	json_t *v;
	char buf[VERR_ECHO_BUF];

	json_object_foreach (obj, key, v) {
		if (!verr_in_list(key, allowed))
			return verr_set(err, 400, NULL, "unknown field '%s%s%s'", path,
					*path ? "." : "", verr_echo(buf, key, VERR_ECHO_CHARS));
	}
	return 0;
}
