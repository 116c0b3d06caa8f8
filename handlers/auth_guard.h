/* What keeps unknown API keys from reaching the database (docs/limits.md), shared by the
 * workers of one supervisor through an anonymous shared mapping made before they are forked:
 *  - a negative cache: the SHA-256 of a key the database did not know is remembered for
 *    AUTH_NEG_TTL_MS, and that key is refused again without a query. A key made by
 *    `key create` is never in it: its 40 random characters cannot have been presented before
 *    they existed, so a new key works at once;
 *  - a token bucket per client address (REMOTE_ADDR) for lookups that find nothing:
 *    AUTH_UNKNOWN_RATE per second, bursts of AUTH_UNKNOWN_BURST. While an address's bucket is
 *    empty, its keys are answered 429 without a query unless they were found valid in the last
 *    AUTH_GOOD_TTL_MS (a key that works keeps working from a flooding address; a just-made key
 *    waits for the bucket to refill, 1/AUTH_UNKNOWN_RATE s), so a flood of random keys from one
 *    client costs the database at most that rate.
 * Everything is per API host; nginx's per-key buckets come first (nginx/server.conf.in). */
#ifndef TERRARIUM_AUTH_GUARD_H
#define TERRARIUM_AUTH_GUARD_H

#include "../common/crypto.h"

#define AUTH_NEG_SLOTS 4096    /* negative cache entries (one per slot, newest wins) */
#define AUTH_NEG_TTL_MS 10000  /* an unknown key is refused without a query this long */
#define AUTH_GOOD_TTL_MS 60000 /* a valid key may be looked up from an address over budget */
#define AUTH_ADDR_SLOTS 1024   /* client addresses tracked (one per slot, newest wins) */
#define AUTH_ADDR_MAX 64       /* bytes of an address kept (IPv6 text is at most 45) */
#define AUTH_UNKNOWN_RATE 10   /* lookups of unknown keys per second per address */
#define AUTH_UNKNOWN_BURST 20  /* and their burst */

/* Map the shared state (before forking workers; a worker started alone maps its own on first
 * use). 0, or -1 when the mapping failed (then nothing is cached or limited). */
int auth_guard_init(void);

/* 1 when the key whose hash is HASH was unknown less than AUTH_NEG_TTL_MS ago. */
int auth_guard_known_bad(const unsigned char hash[SHA256_LEN], long long now_ms);

/* 1 when the key whose hash is HASH may be looked up for ADDR now: the key was found valid
 * lately (*TOOK = 0), or one of ADDR's tokens was taken for the lookup (*TOOK = 1; checking
 * and taking are one step, so workers racing on one address cannot overdraw its bucket). */
int auth_guard_may_lookup(const unsigned char hash[SHA256_LEN], const char *addr, long long now_ms,
			  int *took);

/* The lookup of HASH found a valid key: remember it, give back the token TOOK says was taken. */
void auth_guard_valid(const unsigned char hash[SHA256_LEN], const char *addr, int took,
		      long long now_ms);

/* The lookup of HASH from ADDR found nothing: cache HASH, and spend one of ADDR's tokens unless
 * TOOK says one was taken already. */
void auth_guard_unknown(const unsigned char hash[SHA256_LEN], const char *addr, int took,
			long long now_ms);

#endif
