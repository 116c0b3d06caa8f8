/* Unit tests of base64 (common/crypto.c): the strict base64url of cursors and the lenient
 * decoder of protojson `bytes` (e2b's envd output) are one decoder; the padded standard encoding
 * (file contents handed to base64(1) in a sandbox) and base64url are one encoder. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "../../common/crypto.h"
#include "unit.h"

static long dec(const char *in, int strict, unsigned char *out, size_t outsz)
{
	return strict ? b64url_decode(in, strlen(in), out, outsz)
		      : base64_decode(in, strlen(in), out, outsz);
}

static void test_base64(void **state)
{
	static const unsigned char bytes[] = { 0xfb, 0xff, 0xfe, 'h', 'i' };
	unsigned char out[32];
	char enc[16];
	(void)state;

	assert_int_equal(b64url_encode(bytes, sizeof(bytes), enc), 7);
	assert_string_equal(enc, "-__-aGk");
	assert_int_equal(base64_encode(bytes, sizeof(bytes), enc), 8);
	assert_string_equal(enc, "+//+aGk=");
	assert_int_equal(base64_encode(bytes, 4, enc), 8);
	assert_string_equal(enc, "+//+aA==");
	assert_int_equal(base64_encode(bytes, 3, enc), 4);
	assert_string_equal(enc, "+//+");
	assert_int_equal(base64_encode(bytes, 0, enc), 0);
	assert_string_equal(enc, "");
	assert_int_equal(dec("-__-aGk", 1, out, sizeof(out)), 5);
	assert_memory_equal(out, bytes, 5);
	/* the lenient decoder reads both alphabets and padding */
	assert_int_equal(dec("+//+aGk=", 0, out, sizeof(out)), 5);
	assert_memory_equal(out, bytes, 5);
	assert_int_equal(dec("-__-aGk", 0, out, sizeof(out)), 5);
	assert_int_equal(dec("aGVsbG8gd29ybGQ=", 0, out, sizeof(out)), 11);
	assert_memory_equal(out, "hello world", 11);
	assert_int_equal(dec("", 0, out, sizeof(out)), 0);
	/* the strict one refuses them, and non-canonical trailing bits */
	assert_int_equal(dec("+//+aGk", 1, out, sizeof(out)), -1);
	assert_int_equal(dec("aGk=", 1, out, sizeof(out)), -1);
	assert_int_equal(dec("aGl", 1, out, sizeof(out)), -1);
	assert_int_equal(dec("aGk", 1, out, sizeof(out)), 2);
	/* both: a bad character, an impossible length, padding inside, too small an OUT */
	for (int strict = 0; strict < 2; strict++) {
		assert_int_equal(dec("aG*k", strict, out, sizeof(out)), -1);
		assert_int_equal(dec("aGk=a", strict, out, sizeof(out)), -1);
		assert_int_equal(dec("aGVsb", strict, out, sizeof(out)), -1);
		assert_int_equal(dec("aGVsbG8", strict, out, 4), -1);
		assert_int_equal(dec("aGVsbG8", strict, out, 5), 5);
	}
}

UNIT_MAIN(cmocka_unit_test(test_base64))
