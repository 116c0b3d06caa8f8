/* Which addresses are this machine's: the one rule for what an agent may not reach through the
 * services that connect for it (a sandbox's allowlist, sandbox/srt_hosts.c; an agent's MCP
 * servers, runner/mcp.c). docs/runner.md "MCP servers" and docs/srt.md say why. */
#ifndef TERRARIUM_HOSTADDR_H
#define TERRARIUM_HOSTADDR_H

/* Whether ADDR (a struct in_addr for AF_INET, a struct in6_addr for AF_INET6, network order) is
 * this machine's: loopback, unspecified, link-local (the cloud metadata address among them),
 * multicast or broadcast, an IPv4-mapped or -compatible form of one, or an address of one of
 * its interfaces (when those cannot be listed, or FAMILY is another: yes). 1 or 0. */
int hostaddr_is_local(int family, const void *addr);

/* hostaddr_is_local of address literal HOST (IPv6 without brackets); a name is not an address:
 * 0. */
int hostaddr_literal_is_local(const char *host);

#endif
