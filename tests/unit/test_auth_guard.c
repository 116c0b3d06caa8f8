/* Unit tests of handlers/auth_guard.c: the per-address budget of unknown-key lookups holds
 * when several worker processes race on one address, valid keys cost nothing, and the budget
 * refills at AUTH_UNKNOWN_RATE. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../handlers/auth_guard.h"
#include "unit.h"

#define RACERS 8	   /* worker processes sharing the guard */
#define TRIES_PER_RACER 20 /* lookups each attempts: together far past the burst */
#define LOOKUP_US 2000	   /* a database lookup's duration, while the token is out */
#define NOW_MS 1000000LL   /* a fixed clock: nothing refills during the race */

static void hash_of(int n, unsigned char hash[SHA256_LEN])
{
	char text[32];

	snprintf(text, sizeof(text), "key-%d", n);
	sha256(text, strlen(text), hash);
}

/* What auth_request does for one key that the database does not know; 1 when it was looked up. */
static int try_unknown(int n, const char *addr, long long now)
{
	unsigned char hash[SHA256_LEN];
	int took;

	hash_of(n, hash);
	if (!auth_guard_may_lookup(hash, addr, now, &took))
		return 0;
	usleep(LOOKUP_US);
	auth_guard_unknown(hash, addr, took, now);
	return 1;
}

static void racing_workers_cannot_overdraw(void **state)
{
	int fds[2], total = 0, got;
	(void)state;

	assert_int_equal(auth_guard_init(), 0);
	assert_int_equal(pipe(fds), 0);
	for (int r = 0; r < RACERS; r++) {
		if (fork() == 0) {
			int mine = 0;

			for (int i = 0; i < TRIES_PER_RACER; i++)
				mine += try_unknown(r * TRIES_PER_RACER + i, "10.0.0.1", NOW_MS);
			if (write(fds[1], &mine, sizeof(mine)) != sizeof(mine))
				_exit(1);
			_exit(0);
		}
	}
	close(fds[1]);
	while (read(fds[0], &got, sizeof(got)) == sizeof(got))
		total += got;
	close(fds[0]);
	while (wait(NULL) > 0)
		;
	assert_int_equal(total, AUTH_UNKNOWN_BURST);
	/* the keys looked up are now refused without a query */
	{
		unsigned char hash[SHA256_LEN];
		int known = 0;

		for (int n = 0; n < RACERS * TRIES_PER_RACER; n++) {
			hash_of(n, hash);
			known += auth_guard_known_bad(hash, NOW_MS);
		}
		assert_int_equal(known, AUTH_UNKNOWN_BURST);
	}
	/* another address has its own budget */
	assert_int_equal(try_unknown(100000, "10.0.0.2", NOW_MS), 1);
	/* one second later exactly AUTH_UNKNOWN_RATE more are allowed */
	got = 0;
	for (int i = 0; i < 2 * AUTH_UNKNOWN_RATE; i++)
		got += try_unknown(200000 + i, "10.0.0.1", NOW_MS + 1000);
	assert_int_equal(got, AUTH_UNKNOWN_RATE);
}

static void valid_keys_cost_nothing_and_pass_an_empty_bucket(void **state)
{
	unsigned char good[SHA256_LEN];
	const char *addr = "10.0.0.3";
	long long now = NOW_MS + 50000;
	int took, n = 0;
	(void)state;

	hash_of(-1, good);
	for (int i = 0; i < 3 * AUTH_UNKNOWN_BURST; i++) { /* a valid key, many times */
		assert_int_equal(auth_guard_may_lookup(good, addr, now, &took), 1);
		auth_guard_valid(good, addr, took, now);
	}
	while (try_unknown(300000 + n, addr, now)) /* the whole burst is still there */
		n++;
	assert_int_equal(n, AUTH_UNKNOWN_BURST);
	assert_int_equal(auth_guard_may_lookup(good, addr, now, &took), 1); /* bucket empty */
	assert_int_equal(took, 0);
	/* a key found valid, then revoked, spends a token once found unknown */
	auth_guard_unknown(good, addr, took, now);
	assert_int_equal(auth_guard_known_bad(good, now), 1);
	assert_int_equal(auth_guard_known_bad(good, now + AUTH_NEG_TTL_MS), 0);
}

UNIT_MAIN(cmocka_unit_test(racing_workers_cannot_overdraw),
	  cmocka_unit_test(valid_keys_cost_nothing_and_pass_an_empty_bucket))
