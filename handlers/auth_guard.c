#include "auth_guard.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

struct neg_entry {
	unsigned char hash[SHA256_LEN];
	long long expires_ms; /* 0: empty */
};

struct addr_bucket {
	char addr[AUTH_ADDR_MAX]; /* "": empty */
	long long tokens_milli;	  /* tokens x 1000 */
	long long at_ms;	  /* when tokens_milli was last brought up to date */
};

struct auth_guard {
	pthread_mutex_t lock; /* process-shared, robust: a worker killed holding it is no harm */
	struct neg_entry neg[AUTH_NEG_SLOTS];  /* keys found unknown */
	struct neg_entry good[AUTH_NEG_SLOTS]; /* keys found valid */
	struct addr_bucket addr[AUTH_ADDR_SLOTS];
};

static struct auth_guard *guard;

int auth_guard_init(void)
{
	pthread_mutexattr_t a;
	struct auth_guard *g;

	if (guard)
		return 0;
	g = mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g == MAP_FAILED)
		return -1;
	if (pthread_mutexattr_init(&a) ||
	    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) ||
	    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) ||
	    pthread_mutex_init(&g->lock, &a)) {
		munmap(g, sizeof(*g));
		return -1;
	}
	pthread_mutexattr_destroy(&a);
	guard = g;
	return 0;
}

static int guard_lock(void)
{
	int rc;

	if (!guard && auth_guard_init())
		return -1;
	rc = pthread_mutex_lock(&guard->lock);
	if (rc == EOWNERDEAD) /* the holder died mid-update: the tables stay usable as they are */
		rc = pthread_mutex_consistent(&guard->lock);
	return rc ? -1 : 0;
}

static void guard_unlock(void)
{
	pthread_mutex_unlock(&guard->lock);
}

static struct neg_entry *hash_slot(struct neg_entry *table, const unsigned char *hash)
{
	unsigned i;

	memcpy(&i, hash, sizeof(i)); /* a SHA-256 is uniform: its first bytes are the index */
	return &table[i % AUTH_NEG_SLOTS];
}

/* 1 when TABLE holds HASH, live at NOW_MS. */
static int hash_has(struct neg_entry *table, const unsigned char *hash, long long now_ms)
{
	const struct neg_entry *e;
	int has;

	if (!table || guard_lock())
		return 0;
	e = hash_slot(table, hash);
	has = e->expires_ms > now_ms && !memcmp(e->hash, hash, SHA256_LEN);
	guard_unlock();
	return has;
}

static void hash_put(struct neg_entry *e, const unsigned char *hash, long long expires_ms)
{
	memcpy(e->hash, hash, SHA256_LEN);
	e->expires_ms = expires_ms;
}

/* FNV-1a of the address text. */
static struct addr_bucket *addr_slot(const char *addr, long long now_ms)
{
	unsigned h = 2166136261u;
	struct addr_bucket *b;

	for (const char *p = addr; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	b = &guard->addr[h % AUTH_ADDR_SLOTS];
	if (strncmp(b->addr, addr, sizeof(b->addr))) { /* empty, or another address's: reset */
		strncpy(b->addr, addr, sizeof(b->addr) - 1);
		b->addr[sizeof(b->addr) - 1] = '\0';
		b->tokens_milli = AUTH_UNKNOWN_BURST * 1000LL;
		b->at_ms = now_ms;
	}
	if (now_ms > b->at_ms) {
		b->tokens_milli += (now_ms - b->at_ms) * AUTH_UNKNOWN_RATE;
		if (b->tokens_milli > AUTH_UNKNOWN_BURST * 1000LL)
			b->tokens_milli = AUTH_UNKNOWN_BURST * 1000LL;
		b->at_ms = now_ms;
	}
	return b;
}

int auth_guard_known_bad(const unsigned char hash[SHA256_LEN], long long now_ms)
{
	return guard || !auth_guard_init() ? hash_has(guard->neg, hash, now_ms) : 0;
}

int auth_guard_may_lookup(const unsigned char hash[SHA256_LEN], const char *addr, long long now_ms,
			  int *took)
{
	struct addr_bucket *b;

	*took = 0;
	if (hash_has(guard ? guard->good : NULL, hash, now_ms))
		return 1;
	if (guard_lock())
		return 1;
	b = addr_slot(addr ? addr : "", now_ms);
	if (b->tokens_milli >=
	    1000) { /* taken under the lock: concurrent workers cannot overdraw */
		b->tokens_milli -= 1000;
		*took = 1;
	}
	guard_unlock();
	return *took;
}

void auth_guard_valid(const unsigned char hash[SHA256_LEN], const char *addr, int took,
		      long long now_ms)
{
	struct addr_bucket *b;

	if (guard_lock())
		return;
	hash_put(hash_slot(guard->good, hash), hash, now_ms + AUTH_GOOD_TTL_MS);
	if (took) { /* the token was for a key that turned out valid: give it back */
		b = addr_slot(addr ? addr : "", now_ms);
		b->tokens_milli += 1000;
		if (b->tokens_milli > AUTH_UNKNOWN_BURST * 1000LL)
			b->tokens_milli = AUTH_UNKNOWN_BURST * 1000LL;
	}
	guard_unlock();
}

void auth_guard_unknown(const unsigned char hash[SHA256_LEN], const char *addr, int took,
			long long now_ms)
{
	struct addr_bucket *b;

	if (guard_lock())
		return;
	if (!took) { /* looked up as a key valid lately (since revoked): it costs a token now */
		b = addr_slot(addr ? addr : "", now_ms);
		b->tokens_milli = b->tokens_milli >= 1000 ? b->tokens_milli - 1000 : 0;
	}
	hash_put(hash_slot(guard->neg, hash), hash, now_ms + AUTH_NEG_TTL_MS);
	guard_unlock();
}
