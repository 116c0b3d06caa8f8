/* The srt backend's allowlist translation (srt_hosts.h). */
#define _XOPEN_SOURCE 700
#include "srt_hosts.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "../common/egress.h"
#include "../common/log.h"

/* Names are judged by srt's proxy when it resolves them; literals are not (an allowed literal
 * is dialled as it is). */
int srt_names_this_host(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;
	struct ifaddrs *ifs, *i;
	int v6 = 0, hit = 0;

	if (inet_pton(AF_INET, host, &a4) == 1) {
		uint32_t a = ntohl(a4.s_addr);
		if ((a >> 24) == 127 || (a >> 24) == 0 || (a >> 16) == 0xa9fe || a >= 0xe0000000u)
			return 1;
	} else if (inet_pton(AF_INET6, host, &a6) == 1) {
		v6 = 1;
		if (IN6_IS_ADDR_LOOPBACK(&a6) || IN6_IS_ADDR_UNSPECIFIED(&a6) ||
		    IN6_IS_ADDR_LINKLOCAL(&a6) || IN6_IS_ADDR_MULTICAST(&a6))
			return 1;
		if (IN6_IS_ADDR_V4MAPPED(&a6) || IN6_IS_ADDR_V4COMPAT(&a6)) {
			char v4[INET_ADDRSTRLEN];
			return inet_ntop(AF_INET, &a6.s6_addr[12], v4, sizeof(v4)) &&
			       srt_names_this_host(v4);
		}
	} else {
		return 0; /* a name */
	}
	if (getifaddrs(&ifs))
		return 1; /* cannot tell: refuse */
	for (i = ifs; i && !hit; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (!v6 && i->ifa_addr->sa_family == AF_INET)
			hit = !memcmp(&((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, &a4,
				      sizeof(a4));
		else if (v6 && i->ifa_addr->sa_family == AF_INET6)
			hit = !memcmp(&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr, &a6,
				      sizeof(a6));
	}
	freeifaddrs(ifs);
	return hit;
}

/* Whether srt's allowedDomains grammar takes NAME: a dotted name, `localhost`, or `*.` and a
 * name of at least two labels (srt refuses `*.com` as too broad). */
static int srt_name_ok(const char *name)
{
	const char *base = strncmp(name, "*.", 2) ? NULL : name + 2;

	if (!strcmp(name, "localhost"))
		return 1;
	if (base)
		return strchr(base, '.') && base[0] != '.' && base[strlen(base) - 1] != '.';
	return strchr(name, '.') && name[0] != '.' && name[strlen(name) - 1] != '.';
}

json_t *srt_domains(json_t *hosts, char *err, size_t errsz)
{
	json_t *out = json_array(), *v;
	size_t i;

	if (!out || json_array_size(hosts) > SRT_EGRESS_HOSTS_MAX) {
		snprintf(err, errsz, "srt: allowlist too long or out of memory");
		json_decref(out);
		return NULL;
	}
	json_array_foreach (hosts, i, v) {
		const char *h = json_string_value(v);
		char entry[EGRESS_HOST_MAX + 3];
		int rc;

		if (!h) {
			snprintf(err, errsz, "srt: allowlist entry %zu is not a string", i);
			goto fail;
		}
		if (srt_names_this_host(h) || !strcmp(h, "localhost") ||
		    (strlen(h) > strlen(".localhost") &&
		     !strcmp(h + strlen(h) - strlen(".localhost"), ".localhost"))) {
			log_warn("srt: allowed host '%s' is this machine: left out", h);
			continue;
		}
		if (strchr(h, ':'))
			snprintf(entry, sizeof(entry), "[%s]", h);
		else if (srt_name_ok(h))
			snprintf(entry, sizeof(entry), "%s", h);
		else {
			snprintf(err, errsz,
				 "srt cannot enforce allowed host '%s': it takes dotted names and "
				 "`*.` "
				 "over a name of two labels or more",
				 h);
			goto fail;
		}
		rc = json_array_append_new(out, json_string(entry));
		if (rc) {
			snprintf(err, errsz, "srt: out of memory");
			goto fail;
		}
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}
