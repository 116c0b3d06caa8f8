/* Unit tests of common/crypto.c: base64 (the strict base64url of cursors and the lenient decoder
 * of protojson `bytes`, e2b's envd output; the padded standard encoding of file contents handed
 * to base64(1) in a sandbox), and values stored in databases that must keep verifying whatever
 * computes them (key hashes, request hashes, MACs, base64url text). */
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
	/* one alphabet per text, as protojson reads it */
	assert_int_equal(dec("-__+aGk", 0, out, sizeof(out)), -1);
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

/* What is stored stays readable: the literals below were computed by the hand-written SHA-256,
 * HMAC and base64url this file had before libsodium (and checked against Python's hashlib, hmac
 * and base64). api_keys.key_hash and environment_keys.key_hash hold sha256(key);
 * idempotency_keys.request_hash the streamed hash of "METHOD\nPATH\nBODY"; list cursors are
 * base64url and HMAC-SHA256 (test_core.c, test_cursor_stored). */
static void test_stored_values(void **state)
{
	static const char wskey[] = "trm_7Qx2mB9zKp4LwR1nVt6YcH3sDf8GjA5eUo0iXb";
	static const char envkey[] = "trmenv_Zr4Tq8Wm2Lp6Nx1Bv5Cy9Hd3Kf7Js0Ga4Ue8Ri";
	static const unsigned char bytes[] = {
		0x00, 0xff, 0x10, 0xfb, 0xef, 0xbe, 0x7e, 0x3f, 0x80
	};
	static const char *const b64[] = {
		"",	   "AA",       "AP8",	     "AP8Q",	    "AP8Q-w",
		"AP8Q--8", "AP8Q----", "AP8Q----fg", "AP8Q----fj8", "AP8Q----fj-A"
	};
	unsigned char out[SHA256_LEN], key[SHA256_LEN], longkey[100], back[16];
	char hex[2 * SHA256_LEN + 1], enc[16];
	struct sha256 s;
	(void)state;

	sha256(wskey, strlen(wskey), out);
	hex_encode(out, SHA256_LEN, hex);
	assert_string_equal(hex,
			    "f941ca231931ae8fb1a956e93cd4e8161264ea7e985599d800ca564bb7e0e1e9");
	sha256(envkey, strlen(envkey), out);
	hex_encode(out, SHA256_LEN, hex);
	assert_string_equal(hex,
			    "6dd49f4a6e828de50578acc0a6e4cd9a5ef64577c7c2969d02aafb86f1b4ee12");
	/* streamed in pieces, as handlers/idempotency.c hashes a request */
	sha256_init(&s);
	sha256_update(&s, "POST", 4);
	sha256_update(&s, "\n", 1);
	sha256_update(&s, "/v1/environments", 16);
	sha256_update(&s, "\n", 1);
	sha256_update(&s, "{\"name\":\"x\"}", 12);
	sha256_final(&s, out);
	hex_encode(out, SHA256_LEN, hex);
	assert_string_equal(hex,
			    "fafc3c9d26f60a4179eca2d0b44cf98e08392fd53b8c213df70566225c5e03d7");
	/* HMAC with a key of the cursor secret's size, and with one longer than a block */
	for (int i = 0; i < SHA256_LEN; i++)
		key[i] = (unsigned char)(i * 7 + 3);
	hmac_sha256(key, sizeof(key), "", 0, out);
	hex_encode(out, SHA256_LEN, hex);
	assert_string_equal(hex,
			    "feffb2318c2191c4f11e1fc0ee3d808697d6073ae8a1c30be5f1a169ceff13e6");
	for (int i = 0; i < (int)sizeof(longkey); i++)
		longkey[i] = (unsigned char)(255 - i);
	hmac_sha256(longkey, sizeof(longkey), "payload", 7, out);
	hex_encode(out, SHA256_LEN, hex);
	assert_string_equal(hex,
			    "5c3c9677c94b37989c12eebc16a8478f8dec6b7ef11891793ea65d9fb8aa68e5");
	/* base64url of every length up to three whole groups, both ways */
	for (size_t n = 0; n <= sizeof(bytes); n++) {
		assert_int_equal(b64url_encode(bytes, n, enc), strlen(b64[n]));
		assert_string_equal(enc, b64[n]);
		assert_int_equal(dec(b64[n], 1, back, sizeof(back)), n);
		assert_memory_equal(back, bytes, n);
	}
}

UNIT_MAIN(cmocka_unit_test(test_base64), cmocka_unit_test(test_stored_values))
