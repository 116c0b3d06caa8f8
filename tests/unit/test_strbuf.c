/* Unit tests of the growable buffer (common/strbuf.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/strbuf.h"
#include "unit.h"

static void test_add(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	char big[5000];
	(void)state;

	assert_string_equal(strbuf_str(&sb), "");
	assert_null(sb.buf);
	assert_int_equal(strbuf_add(&sb, "", 0), 0);
	assert_non_null(sb.buf);
	assert_string_equal(sb.buf, "");
	assert_int_equal(strbuf_addstr(&sb, "abc"), 0);
	assert_int_equal(strbuf_addch(&sb, 'd'), 0);
	assert_int_equal(strbuf_add(&sb, "e\0f", 3), 0); /* bytes, NUL included */
	assert_int_equal(sb.len, 7);
	assert_memory_equal(sb.buf, "abcde\0f", 8);
	assert_int_equal(strbuf_addf(&sb, "-%d-%s", 42, "x"), 0);
	assert_int_equal(sb.len, 12);
	assert_memory_equal(sb.buf + 7, "-42-x", 6);
	/* growth past the first allocation, through addf too */
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(strbuf_addf(&sb, "%s|", big), 0);
	assert_int_equal(sb.len, 12 + sizeof(big));
	assert_true(sb.alloc > sb.len);
	assert_int_equal(sb.buf[sb.len], '\0');
	assert_int_equal(sb.buf[sb.len - 1], '|');
	strbuf_release(&sb);
	assert_null(sb.buf);
	assert_int_equal(sb.len, 0);
	assert_int_equal(sb.alloc, 0);
}

static void test_remove_reset_detach(void **state)
{
	struct strbuf sb;
	char *p;
	size_t len = 99;
	(void)state;

	strbuf_init(&sb);
	strbuf_addstr(&sb, "0123456789");
	strbuf_remove(&sb, 0, 3);
	assert_string_equal(sb.buf, "3456789");
	strbuf_remove(&sb, 2, 2);
	assert_string_equal(sb.buf, "34789");
	strbuf_remove(&sb, 3, 100); /* clamped */
	assert_string_equal(sb.buf, "347");
	strbuf_remove(&sb, 7, 1); /* past the end: nothing */
	assert_string_equal(sb.buf, "347");
	strbuf_reset(&sb);
	assert_int_equal(sb.len, 0);
	assert_string_equal(strbuf_str(&sb), "");
	assert_true(sb.alloc > 0);
	strbuf_addstr(&sb, "kept");
	p = strbuf_detach(&sb, &len);
	assert_string_equal(p, "kept");
	assert_int_equal(len, 4);
	assert_null(sb.buf);
	assert_int_equal(sb.len, 0);
	free(p);
	assert_null(strbuf_detach(&sb, &len)); /* nothing added: NULL, length 0 */
	assert_int_equal(len, 0);
}

/* An allocation that cannot succeed sets the sticky flag; the contents stay as they were. */
static void test_oom_is_sticky(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	(void)state;

	assert_int_equal(strbuf_addstr(&sb, "ok"), 0);
	assert_int_equal(strbuf_grow(&sb, SIZE_MAX - 1), -1);
	assert_true(sb.oom);
	assert_int_equal(strbuf_addstr(&sb, "more"), -1);
	assert_int_equal(strbuf_addf(&sb, "%d", 1), -1);
	assert_int_equal(strbuf_addch(&sb, 'x'), -1);
	assert_string_equal(sb.buf, "ok");
	assert_int_equal(sb.len, 2);
	strbuf_release(&sb);
	assert_false(sb.oom);
	assert_int_equal(strbuf_addstr(&sb, "again"), 0);
	strbuf_release(&sb);
}

UNIT_MAIN(cmocka_unit_test(test_add), cmocka_unit_test(test_remove_reset_detach),
	  cmocka_unit_test(test_oom_is_sticky))
