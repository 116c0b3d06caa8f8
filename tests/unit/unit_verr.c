#include "unit_verr.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

void unit_verr_ok(int line, int failed, const struct verr *err)
{
	if (failed)
		fail_msg("line %d: expected success, got %d '%s': %s", line, err->status, err->code,
			 err->msg);
}

void unit_verr_refused(int line, int failed, const struct verr *err, int status, const char *code,
		       const char *needle)
{
	if (!failed)
		fail_msg("line %d: expected %d, got success", line, status);
	if (err->status != status || strcmp(err->code, code) || !strstr(err->msg, needle))
		fail_msg("line %d: expected %d '%s' naming \"%s\", got %d '%s': %s", line, status,
			 code, needle, err->status, err->code, err->msg);
}
