/* Unit tests of the clock (common/clock.c): timestamps, the monotonic clock, sleeping. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "../../common/clock.h"
#include "unit.h"

/* The monotonic clock moves forward across a sleep, in both units, by about the time slept
 * (the bound above is loose: this is a shared machine). */
static void test_clock(void **state)
{
	long long ms0 = clock_mono_ms(), ms1;
	double s0 = clock_mono_s(), s1;
	(void)state;

	clock_sleep_ms(30);
	ms1 = clock_mono_ms();
	s1 = clock_mono_s();
	assert_true(ms1 - ms0 >= 30);
	assert_true(s1 - s0 >= 0.030);
	assert_true(ms1 - ms0 < 60000);
	clock_sleep_ms(0);
	clock_sleep_ms(-5); /* nothing */
	assert_true(clock_mono_ms() - ms1 < 60000);
}

static void test_timestamps(void **state)
{
	char db[CLOCK_DB_LEN], api[CLOCK_API_LEN], later[CLOCK_API_LEN];
	(void)state;

	clock_now(db, api);
	assert_int_equal(strlen(db), CLOCK_DB_LEN - 1);
	assert_int_equal(strlen(api), CLOCK_API_LEN - 1);
	assert_int_equal(db[10], ' ');
	assert_int_equal(api[10], 'T');
	assert_int_equal(api[CLOCK_API_LEN - 2], 'Z');
	assert_memory_equal(db, api, 10);
	clock_in(86400 * 2, NULL, later);
	assert_true(strcmp(later, api) > 0);
}

UNIT_MAIN(cmocka_unit_test(test_clock), cmocka_unit_test(test_timestamps))
