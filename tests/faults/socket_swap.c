/* An LD_PRELOAD shim for tests/faults/run.sh: the first listen() on a unix socket bound to a
 * path moves that socket file aside (PATH.moved) and leaves a symlink to $SOCKET_SWAP_TARGET in
 * its place, before the real listen(). It stands for whoever can write the socket's directory
 * and swaps the path between the bind and what the server does to the path next (its group and
 * mode): that must never reach the symlink's target. Without $SOCKET_SWAP_TARGET it only
 * listens. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

typedef int listen_fn(int, int);

int listen(int fd, int backlog)
{
	static int swapped;
	listen_fn *real = (listen_fn *)dlsym(RTLD_NEXT, "listen");
	const char *target = getenv("SOCKET_SWAP_TARGET");
	struct sockaddr_un a;
	socklen_t len = sizeof(a);
	char aside[sizeof(a.sun_path) + 8];

	if (!real)
		abort();
	if (target && !swapped && !getsockname(fd, (struct sockaddr *)&a, &len) &&
	    a.sun_family == AF_UNIX && a.sun_path[0]) {
		swapped = 1;
		snprintf(aside, sizeof(aside), "%s.moved", a.sun_path);
		if (rename(a.sun_path, aside) || symlink(target, a.sun_path))
			abort();
	}
	return real(fd, backlog);
}
