/* The srt backend's allowlist translation (sandbox/srt.c; docs/srt.md, "The
 * allowlist of each step"): the egress policy of common/egress.c as srt's allowedDomains.
 * No libcurl and no sandbox here: unit tests link this file with common/hostaddr.c alone
 * (tests/unit/test_srt_hosts.c). */
#ifndef TERRARIUM_SRT_HOSTS_H
#define TERRARIUM_SRT_HOSTS_H

#include <jansson.h>
#include <stddef.h>

#define SRT_EGRESS_HOSTS_MAX 1024 /* entries in one allowlist */

/* HOSTS (an array of the egress policy's entries: lower-case names, `*.` patterns, address
 * literals, IPv6 without brackets) as srt allowedDomains, a new array: IPv6 literals in
 * brackets, names and `*.` patterns as they are. Entries that name this machine (a literal
 * hostaddr_literal_is_local takes, `localhost`, `*.localhost` and names under it; srt's proxy
 * judges other names when it resolves them) are left out, each logged: srt dials an allowed literal
 * or `localhost` as it is. NULL with ERR set when HOSTS holds more than SRT_EGRESS_HOSTS_MAX
 * entries, an entry that is not a string, or a name srt's grammar refuses (no dot, or `*.` over a
 * single label such as `*.com`). */
json_t *srt_domains(json_t *hosts, char *err, size_t errsz);

#endif
