/* Unit tests of the srt backend's allowlist translation (sandbox/srt_hosts.c):
 * which address literals name this machine (fixed ranges and the machine's own interface
 * addresses), and the egress policy as srt's allowedDomains (IPv6 brackets, `*.` patterns, this
 * machine left out, names srt cannot express refused with the entry named). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/hostaddr.h"
#include "../../sandbox/srt_hosts.h"
#include "tests/unit/unit.h"
#include "tests/unit/unit_json.h"

#define UT_ERR_MAX 512

/* srt_domains of HOSTS_JSON must be EXPECT_JSON */
static void domains_are_(int line, const char *hosts_json, const char *expect_json)
{
	json_t *hosts = unit_parse(line, hosts_json), *expect = unit_parse(line, expect_json), *got;
	char err[UT_ERR_MAX] = "";
	char *text;

	got = srt_domains(hosts, err, sizeof(err));
	if (!got)
		fail_msg("line %d: %s refused: %s", line, hosts_json, err);
	text = json_dumps(got, JSON_COMPACT);
	if (!json_equal(got, expect))
		fail_msg("line %d: %s gave %s, expected %s", line, hosts_json, text, expect_json);
	free(text);
	json_decref(got);
	json_decref(expect);
	json_decref(hosts);
}
#define DOMAINS_ARE(hosts, expect) domains_are_(__LINE__, hosts, expect)

/* srt_domains of HOSTS must be refused with an error containing NEEDLE */
static void domains_refused_(int line, json_t *hosts, const char *needle)
{
	char err[UT_ERR_MAX] = "";
	json_t *got = srt_domains(hosts, err, sizeof(err));

	if (got)
		fail_msg("line %d: accepted, expected an error naming \"%s\"", line, needle);
	if (!strstr(err, needle))
		fail_msg("line %d: error \"%s\" does not name \"%s\"", line, err, needle);
	json_decref(hosts);
}
#define DOMAINS_REFUSED(hosts_json, needle)                                                        \
	domains_refused_(__LINE__, unit_parse(__LINE__, hosts_json), needle)

/* The first address of FAMILY on one of this machine's interfaces other than loopback, as text
 * into OUT; 0, or -1 when there is none. */
static int own_address(int family, char *out, size_t outsz)
{
	struct ifaddrs *ifs, *i;
	int rc = -1;

	assert_int_equal(getifaddrs(&ifs), 0);
	for (i = ifs; i && rc; i = i->ifa_next) {
		const void *a;

		if (!i->ifa_addr || i->ifa_addr->sa_family != family)
			continue;
		a = family == AF_INET
			    ? (const void *)&((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr
			    : (const void *)&((struct sockaddr_in6 *)(void *)i->ifa_addr)
				      ->sin6_addr;
		if (!inet_ntop(family, a, out, (socklen_t)outsz))
			continue;
		if (strncmp(out, "127.", 4) && strcmp(out, "::1") && strncmp(out, "fe80:", 5))
			rc = 0;
	}
	freeifaddrs(ifs);
	return rc;
}

static void test_fixed_ranges(void **state)
{
	static const char *const local[] = {
		"127.0.0.1",
		"127.8.9.10",
		"0.0.0.0",
		"0.1.2.3",
		"169.254.169.254",
		"224.0.0.1",
		"239.1.1.1",
		"255.255.255.255",
		"::1",
		"::",
		"fe80::1",
		"ff02::1",
		"::ffff:127.0.0.1",
		"::ffff:169.254.169.254",
	};
	/* documentation ranges (RFC 5737, RFC 3849) and names: never this machine's */
	static const char *const other[] = { "203.0.113.77",	    "198.51.100.1", "2001:db8::1",
					     "::ffff:203.0.113.77", "example.com",  "localhost",
					     "*.example.org" };

	(void)state;
	unit_pred_cases("hostaddr_literal_is_local", hostaddr_literal_is_local, local,
			UNIT_LEN(local), other, UNIT_LEN(other));
}

static void test_own_addresses(void **state)
{
	char v4[INET_ADDRSTRLEN], v6[INET6_ADDRSTRLEN], hosts[256];
	int have4 = !own_address(AF_INET, v4, sizeof(v4));
	int have6 = !own_address(AF_INET6, v6, sizeof(v6));

	(void)state;
	if (!have4 && !have6)
		skip(); /* only loopback here: the fixed ranges cover it */
	if (have4)
		assert_true(hostaddr_literal_is_local(v4));
	if (have6)
		assert_true(hostaddr_literal_is_local(v6));
	snprintf(hosts, sizeof(hosts), "[\"%s\",\"%s\",\"pypi.org\"]", have4 ? v4 : v6,
		 have6 ? v6 : v4);
	domains_are_(__LINE__, hosts, "[\"pypi.org\"]");
}

static void test_translation(void **state)
{
	(void)state;
	DOMAINS_ARE("[]", "[]");
	/* names and `*.` patterns as they are; IPv6 literals in brackets, IPv4 ones as they are */
	DOMAINS_ARE("[\"registry.npmjs.org\",\"*.example.org\",\"*.co.uk\",\"2001:db8::1\","
		    "\"203.0.113.77\",\"::ffff:203.0.113.77\"]",
		    "[\"registry.npmjs.org\",\"*.example.org\",\"*.co.uk\",\"[2001:db8::1]\","
		    "\"203.0.113.77\",\"[::ffff:203.0.113.77]\"]");
	/* this machine, by name or literal, is left out; the rest keeps its order */
	DOMAINS_ARE("[\"localhost\",\"pypi.org\",\"*.localhost\",\"api.localhost\",\"127.0.0.1\","
		    "\"::1\",\"fe80::1\",\"169.254.169.254\",\"::ffff:127.0.0.1\",\"0.0.0.0\","
		    "\"crates.io\"]",
		    "[\"pypi.org\",\"crates.io\"]");
	/* `localhost` as a label elsewhere is a name like any other */
	DOMAINS_ARE("[\"localhost.example.com\",\"mylocalhost.dev\"]",
		    "[\"localhost.example.com\",\"mylocalhost.dev\"]");
}

static void test_refused(void **state)
{
	json_t *many = json_array();
	char err[UT_ERR_MAX];
	json_t *got;

	(void)state;
	DOMAINS_REFUSED("[\"pypi.org\",\"intranet\"]", "'intranet'");
	DOMAINS_REFUSED("[\"*.com\"]", "'*.com'");
	DOMAINS_REFUSED("[\"*..com\"]", "'*..com'");
	DOMAINS_REFUSED("[\"example.com.\"]", "'example.com.'");
	DOMAINS_REFUSED("[\".example.com\"]", "'.example.com'");
	DOMAINS_REFUSED("[\"pypi.org\",7]", "entry 1 is not a string");
	/* SRT_EGRESS_HOSTS_MAX entries are taken, one more is refused */
	for (int i = 0; i < SRT_EGRESS_HOSTS_MAX; i++) {
		char h[32];

		snprintf(h, sizeof(h), "h%d.example.com", i);
		assert_int_equal(json_array_append_new(many, json_string(h)), 0);
	}
	got = srt_domains(many, err, sizeof(err));
	assert_non_null(got);
	assert_int_equal(json_array_size(got), SRT_EGRESS_HOSTS_MAX);
	json_decref(got);
	assert_int_equal(json_array_append_new(many, json_string("one-more.example.com")), 0);
	domains_refused_(__LINE__, many, "too long");
}

UNIT_MAIN(cmocka_unit_test(test_fixed_ranges), cmocka_unit_test(test_own_addresses),
	  cmocka_unit_test(test_translation), cmocka_unit_test(test_refused))
