/* This machine's addresses (hostaddr.h). */
#define _XOPEN_SOURCE 700
#include "hostaddr.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

/* Whether ADDR of FAMILY is an address of one of this machine's interfaces (1 when they cannot
 * be listed). */
static int interface_has(int family, const void *addr)
{
	struct ifaddrs *ifs, *i;
	int hit = 0;

	if (getifaddrs(&ifs))
		return 1;
	for (i = ifs; i && !hit; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != family)
			continue;
		if (family == AF_INET)
			hit = !memcmp(&((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, addr,
				      sizeof(struct in_addr));
		else
			hit = !memcmp(&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr,
				      addr, sizeof(struct in6_addr));
	}
	freeifaddrs(ifs);
	return hit;
}

int hostaddr_is_local(int family, const void *addr)
{
	if (family == AF_INET) {
		uint32_t a = ntohl(((const struct in_addr *)addr)->s_addr);

		/* 127/8 loopback, 0/8 this network, 169.254/16 link-local, 224/3 multicast,
		 * reserved and broadcast */
		if ((a >> 24) == 127 || (a >> 24) == 0 || (a >> 16) == 0xa9fe || a >= 0xe0000000u)
			return 1;
	} else if (family == AF_INET6) {
		const struct in6_addr *a6 = addr;

		if (IN6_IS_ADDR_LOOPBACK(a6) || IN6_IS_ADDR_UNSPECIFIED(a6) ||
		    IN6_IS_ADDR_LINKLOCAL(a6) || IN6_IS_ADDR_MULTICAST(a6))
			return 1;
		if (IN6_IS_ADDR_V4MAPPED(a6) || IN6_IS_ADDR_V4COMPAT(a6)) {
			struct in_addr a4;

			memcpy(&a4, &a6->s6_addr[12], sizeof(a4));
			return hostaddr_is_local(AF_INET, &a4);
		}
	} else {
		return 1;
	}
	return interface_has(family, addr);
}

int hostaddr_literal_is_local(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, host, &a4) == 1)
		return hostaddr_is_local(AF_INET, &a4);
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return hostaddr_is_local(AF_INET6, &a6);
	return 0;
}
