/* Provisioning intents' kinds and states (provisioning_intents.kind / .state; docs/design.md,
 * Provisioning). SQL in db/ may spell a state as a literal; C code compares and sets states
 * through this enum and its name table. */
#ifndef TERRARIUM_DB_INTENT_STATE_H
#define TERRARIUM_DB_INTENT_STATE_H

#define INTENT_PROVISION "provision"
#define INTENT_TEARDOWN "teardown"

enum intent_state {
	INTENT_NONE = -1,  /* no intent (NULL), or a name this build does not know */
	INTENT_PENDING,	   /* due at next_attempt_at, never tried or reset by --retry */
	INTENT_CLAIMED,	   /* a reconciler holds it under a lease */
	INTENT_DONE,	   /* provisioned (bound) or torn down */
	INTENT_FAILED,	   /* an attempt failed: due again at next_attempt_at */
	INTENT_TERMINATED, /* failed max_attempts times (or for good): waits for --retry */
	INTENT_CANCELLED,  /* its session was deleted before it was done */
	INTENT_STATE_COUNT,
};

/* The stored name of STATE ("pending"...), or NULL for INTENT_NONE. Static string. */
const char *intent_state_name(enum intent_state state);

/* The state stored as NAME; INTENT_NONE for NULL or an unknown name. */
enum intent_state intent_state_of(const char *name);

#endif
