/* The srt backend's allowlist translation (srt_hosts.h). */
#define _XOPEN_SOURCE 700
#include "srt_hosts.h"

#include <stdio.h>
#include <string.h>

#include "../common/egress.h"
#include "../common/hostaddr.h"
#include "../common/log.h"

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
		if (hostaddr_literal_is_local(h) || !strcmp(h, "localhost") ||
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
