/* The egress policy of a session (docs/design.md, Provisioning steps 3 and 5): which hosts a
 * limited sandbox may reach once provisioned, and while its packages install. */
#ifndef TERRARIUM_EGRESS_H
#define TERRARIUM_EGRESS_H

#include <jansson.h>
#include <stddef.h>

#define EGRESS_HOST_MAX 253

/* Host of URL (scheme://[userinfo@]host[:port][/path...]) lower-cased into OUT (size >=
 * EGRESS_HOST_MAX + 1). Bracketed IPv6 hosts are returned without brackets. 0, or -1 when URL
 * has no scheme or host, or the host is too long. */
int egress_url_host(const char *url, char *out, size_t outsz);

/* The policy for a session whose captured networking config is NETWORKING and whose MCP
 * servers (the session-local list when set, else the agent snapshot's) are MCP_SERVERS, an
 * array of {"url": ...} objects (may be NULL). REGISTRY is a NULL-terminated host list (NULL:
 * the canonical registry hosts, the package managers' of common/packages.h).
 * FINAL (install = 0): allowed_hosts, + MCP hosts when allow_mcp_servers, + registry hosts when
 * allow_package_managers. INSTALL (install = 1): the final list + the registry hosts.
 * Returns a new reference: JSON null for unrestricted networking, else a sorted, de-duplicated
 * array of lower-case host strings. NULL on a malformed NETWORKING or out of memory. */
json_t *egress_policy(json_t *networking, json_t *mcp_servers, const char *const *registry,
		      int install);

#endif
