/* Helpers shared by the unit tests (tests/unit/unit.c). */
#ifndef TERRARIUM_TESTS_UNIT_H
#define TERRARIUM_TESTS_UNIT_H

#include <stddef.h>

#define UNIT_OUT_MAX 512 /* the largest output buffer a case of unit_out_cases may ask for */

/* One call of a function that reads IN and writes a string: it must return RC and, unless
 * WANT is NULL, have written WANT. */
struct unit_out_case {
	const char *in;
	int rc;
	const char *want;
};

/* A case of a test that gives IN to the code under test and looks for WANT in its answer (an
 * error message, a reply); each test runs its cases its own way. */
struct unit_text_case {
	const char *in;
	const char *want;
};

/* FN(IN, OUT, OUTSZ) for each of the N CASES, OUT a buffer of OUTSZ bytes (at most
 * UNIT_OUT_MAX), or NULL when OUTSZ is 0; a test failure naming the case on a mismatch. */
void unit_out_cases(int (*fn)(const char *in, char *out, size_t outsz), size_t outsz,
		    const struct unit_out_case *cases, size_t n);

/* PRED (named NAME in failures) holds for each of the N_YES strings YES and for none of the
 * N_NO strings NO. */
void unit_pred_cases(const char *name, int (*pred)(const char *), const char *const *yes,
		     size_t n_yes, const char *const *no, size_t n_no);

/* Run /bin/sh -c SCRIPT, with $1 set to ARG unless it is NULL; what it prints goes into OUT (at
 * most OUTSZ bytes). A test failure unless the shell exits 0. Returns the bytes printed. */
size_t unit_sh(const char *script, const char *arg, char *out, size_t outsz);

/* The main() of a unit test program: runs the cmocka tests given (UNIT_TESTS(f, ...), ...)
 * as one group; its exit status is the number that failed. */
#define UNIT_MAIN(...)                                                                             \
	int main(void)                                                                             \
	{                                                                                          \
		const struct CMUnitTest tests[] = { __VA_ARGS__ };                                 \
		return cmocka_run_group_tests(tests, NULL, NULL);                                  \
	}

/* UNIT_TESTS(f, g, ...): cmocka_unit_test(f), cmocka_unit_test(g), ... for up to 64 test
 * functions (UNIT_MAIN(UNIT_TESTS(...), cmocka_unit_test_setup_teardown(...)) mixes them). */
#define UNIT_TESTS(...) __VA_OPT__(UNIT_EXPAND3_(UNIT_EACH_(__VA_ARGS__)))
#define UNIT_EACH_(f, ...) cmocka_unit_test(f) __VA_OPT__(, UNIT_AGAIN_ UNIT_PARENS_(__VA_ARGS__))
#define UNIT_AGAIN_() UNIT_EACH_
#define UNIT_PARENS_ ()
#define UNIT_EXPAND3_(...) UNIT_EXPAND2_(UNIT_EXPAND2_(UNIT_EXPAND2_(UNIT_EXPAND2_(__VA_ARGS__))))
#define UNIT_EXPAND2_(...) UNIT_EXPAND1_(UNIT_EXPAND1_(UNIT_EXPAND1_(UNIT_EXPAND1_(__VA_ARGS__))))
#define UNIT_EXPAND1_(...) UNIT_EXPAND0_(UNIT_EXPAND0_(UNIT_EXPAND0_(UNIT_EXPAND0_(__VA_ARGS__))))
#define UNIT_EXPAND0_(...) __VA_ARGS__

#define UNIT_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
