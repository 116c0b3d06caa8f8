#include "unit_json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

json_t *unit_parse(int line, const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);

	if (!v)
		fail_msg("line %d: bad test JSON (%s): %s", line, e.text, text);
	return v;
}

char *unit_rep(const char *unit, size_t n)
{
	size_t len = strlen(unit);
	char *s = malloc(len * n + 1);

	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		memcpy(s + i * len, unit, len);
	s[len * n] = '\0';
	return s;
}

void unit_assert_json(int line, json_t *actual, const char *expected_text)
{
	json_t *expected = unit_parse(line, expected_text);

	if (!json_equal(actual, expected)) {
		char *got = json_dumps(actual, JSON_ENCODE_ANY | JSON_COMPACT);

		fail_msg("line %d: got %s\nwant %s", line, got ? got : "(null)", expected_text);
	}
	json_decref(expected);
}
