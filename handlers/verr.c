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
