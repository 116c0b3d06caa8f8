/* Unit tests of the intent states (db/intent_state.c): the name table round-trips, and every state
 * the SQL of db/ spells as a literal is one of the enum's names. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../db/intent_state.h"
#include "unit.h"

#define SRC_MAX (512 * 1024)

static void test_names(void **state)
{
	/* the names stored in the intents table, in the enum's order: a stored name must never
	 * change (rows written by an older build hold it) */
	static const char stored[] = "pending claimed done failed terminated cancelled";
	char names[sizeof(stored) + 1] = "";
	(void)state;
	assert_int_equal(INTENT_STATE_COUNT, 6);
	for (int i = 0; i < INTENT_STATE_COUNT; i++) {
		const char *name = intent_state_name((enum intent_state)i);
		assert_non_null(name);
		assert_int_equal(intent_state_of(name), i);
		assert_true(strlen(names) + strlen(name) + 2 <= sizeof(names));
		if (i)
			strcat(names, " ");
		strcat(names, name);
	}
	assert_string_equal(names, stored);
	assert_null(intent_state_name(INTENT_NONE));
	assert_null(intent_state_name(INTENT_STATE_COUNT));
	assert_int_equal(intent_state_of(NULL), INTENT_NONE);
	assert_int_equal(intent_state_of("rescheduling"), INTENT_NONE); /* a session status */
	assert_int_equal(intent_state_of("Pending"), INTENT_NONE);
}

/* Every 'literal' after "state =", "state <>" or in "state IN (...)" in FILE is a state name.
 * Returns how many were checked. */
static int check_sql_literals(const char *file)
{
	char path[4096];
	const char *self = __FILE__, *tail = strstr(self, "tests/unit/test_intent_state.c");
	char *src = calloc(1, SRC_MAX), *p;
	size_t len;
	int checked = 0;
	FILE *f;

	assert_non_null(src);
	assert_non_null(tail);
	snprintf(path, sizeof(path), "%.*s%s", (int)(tail - self), self, file);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s", path);
	len = fread(src, 1, SRC_MAX - 1, f);
	fclose(f);
	assert_true(len < SRC_MAX - 1);
	for (p = src; (p = strstr(p, "state ")); p++) {
		const char *q = p + 6;
		int list = 0;
		if (p > src && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z')))
			continue; /* another column ending in "state" */
		if (!strncmp(q, "= '", 3))
			q += 2;
		else if (!strncmp(q, "<> '", 4))
			q += 3;
		else if (!strncmp(q, "IN ('", 5)) {
			q += 4;
			list = 1;
		} else
			continue;
		do {
			char name[32];
			if (sscanf(q, "'%31[a-z_]'", name) != 1)
				fail_msg("%s: cannot read the state at '%.20s'", file, q);
			if (intent_state_of(name) == INTENT_NONE)
				fail_msg("%s: state '%s' is not an intent state", file, name);
			checked++;
			q = strchr(q + 1, '\'') + 1;
			q += strspn(q, ", ");
		} while (list && *q == '\'');
	}
	free(src);
	return checked;
}

static void test_sql_literals(void **state)
{
	(void)state;
	assert_true(check_sql_literals("db/intents.c") >= 10);
	assert_true(check_sql_literals("db/sessions.c") >= 1);
	assert_true(check_sql_literals("db/sandboxes.c") >= 1);
}

UNIT_MAIN(cmocka_unit_test(test_names), cmocka_unit_test(test_sql_literals))
