#include "backend.h"

#include <string.h>

static const struct backend_caps backends[] = {
	{ "local", false, false, false },
	{ "bwrap", true, false, false },
	{ "srt", true, false, true },
	{ "docker", true, true, false },
	{ "opensandbox", true, true, true },
	{ "e2b", true, true, false },
	{ "cube", true, true, false },
	{ "daytona", true, true, false },
};

const struct backend_caps *backend_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (!strcmp(backends[i].name, name))
			return &backends[i];
	return NULL;
}
