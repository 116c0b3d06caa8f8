#include "backend.h"

#include <string.h>

/* one backend a row */
/* clang-format off */
static const struct backend_caps backends[] = {
	/* name          packages apt    limited http   isolated */
	{ "local",       false,   false, false,  false, false },
	{ "bwrap",       true,    false, false,  false, true },
	{ "srt",         true,    false, true,   false, true },
	{ "docker",      true,    true,  false,  true,  true },
	{ "opensandbox", true,    true,  true,   true,  true },
	{ "e2b",         true,    true,  false,  true,  true },
	{ "cube",        true,    true,  false,  true,  true },
	{ "daytona",     true,    true,  false,  true,  true },
};
/* clang-format on */
_Static_assert(sizeof(backends) / sizeof(backends[0]) == BACKEND_TABLE_LEN,
	       "BACKEND_TABLE_LEN is the number of rows");

int backend_index(const char *name)
{
	for (int i = 0; i < BACKEND_TABLE_LEN; i++)
		if (!strcmp(backends[i].name, name))
			return i;
	return -1;
}

const struct backend_caps *backend_lookup(const char *name)
{
	int i = backend_index(name);
	return i < 0 ? NULL : &backends[i];
}

const struct backend_caps *backend_at(size_t index)
{
	return index < BACKEND_TABLE_LEN ? &backends[index] : NULL;
}
