#include "intent_state.h"

#include <string.h>

static const char *const names[INTENT_STATE_COUNT] = {
	[INTENT_PENDING] = "pending",
	[INTENT_CLAIMED] = "claimed",
	[INTENT_DONE] = "done",
	[INTENT_FAILED] = "failed",
	[INTENT_TERMINATED] = "terminated",
	[INTENT_CANCELLED] = "cancelled",
};

const char *intent_state_name(enum intent_state state)
{
	return state > INTENT_NONE && state < INTENT_STATE_COUNT ? names[state] : NULL;
}

enum intent_state intent_state_of(const char *name)
{
	for (int i = 0; name && i < INTENT_STATE_COUNT; i++)
		if (!strcmp(names[i], name))
			return (enum intent_state)i;
	return INTENT_NONE;
}
