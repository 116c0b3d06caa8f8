/* libFuzzer target: list cursors (handlers/cursor.c) under a fixed key.
 *
 * The first input byte picks a mode; the rest is its argument:
 *   0  a cursor string from the client (the `page` query parameter): parsed against the
 *      environment and session list kinds. Only a cursor this key signed may come back OK,
 *      and then it is exactly the cursor cursor_make gives for what it decoded.
 *   1  a payload this key signs (what a genuine cursor may carry after the HMAC check):
 *      parsed; when OK, kind|filter|created|id re-joined is the payload.
 *   2  four fields separated by NUL bytes: cursor_make, then cursor_parse of what it made
 *      gives the same fields back whenever the fields are representable.
 * Every created/id written is NUL-terminated within CURSOR_FIELD_MAX. */
#include "fuzz.h"

#include "../../common/crypto.h"
#include "../../handlers/cursor.h"

#define FUZZ_PAYLOAD_MAX 320 /* cursor.c's CURSOR_PAYLOAD_MAX */

static const unsigned char key[SHA256_LEN] = "terrarium-fuzz-cursor-key-32byte";

static const struct {
	const char *kind, *filter;
} lists[] = { { "env", "a0" }, { "env", "a1" }, { "sesn", "o0;a1;gagent_01" }, { "agent", "" } };
#define LIST_COUNT (sizeof(lists) / sizeof(lists[0]))

/* Parse IN for LIST, checking the outputs; returns the status. */
static enum cursor_status parse(const char *in, size_t list, char *created, char *id)
{
	enum cursor_status cs;

	memset(created, 0x7f, CURSOR_FIELD_MAX);
	memset(id, 0x7f, CURSOR_FIELD_MAX);
	cs = cursor_parse(key, sizeof(key), lists[list].kind, lists[list].filter, in, created, id);
	FUZZ_CHECK(cs == CURSOR_OK || cs == CURSOR_FORGED || cs == CURSOR_OTHER_FILTER, "status %d",
		   cs);
	if (cs == CURSOR_OK)
		FUZZ_CHECK(memchr(created, '\0', CURSOR_FIELD_MAX) &&
				   memchr(id, '\0', CURSOR_FIELD_MAX),
			   "unterminated field");
	return cs;
}

static void mode_client(const char *in)
{
	char created[CURSOR_FIELD_MAX], id[CURSOR_FIELD_MAX], again[CURSOR_MAX];

	for (size_t l = 0; l < LIST_COUNT; l++)
		if (parse(in, l, created, id) == CURSOR_OK) {
			FUZZ_CHECK(!cursor_make(key, sizeof(key), lists[l].kind, lists[l].filter,
						created, id, again),
				   "an accepted cursor cannot be remade");
			FUZZ_CHECK(!strcmp(again, in), "accepted '%s', remade '%s'", in, again);
		}
}

static void mode_signed(const uint8_t *payload, size_t n)
{
	char cursor[CURSOR_MAX * 2], created[CURSOR_FIELD_MAX], id[CURSOR_FIELD_MAX];
	char joined[FUZZ_PAYLOAD_MAX * 2];
	unsigned char tag[SHA256_LEN];
	size_t o;

	if (n >= FUZZ_PAYLOAD_MAX)
		n = FUZZ_PAYLOAD_MAX - 1;
	hmac_sha256(key, sizeof(key), payload, n, tag);
	o = b64url_encode(payload, n, cursor);
	cursor[o++] = '.';
	b64url_encode(tag, CURSOR_TAG_LEN, cursor + o);

	for (size_t l = 0; l < LIST_COUNT; l++) {
		enum cursor_status cs = parse(cursor, l, created, id);

		if (cs != CURSOR_OK)
			continue;
		snprintf(joined, sizeof(joined), "%s|%s|%s|%s", lists[l].kind, lists[l].filter,
			 created, id);
		FUZZ_CHECK(strlen(joined) == n && !memcmp(joined, payload, n),
			   "payload of %zu bytes came back as '%s'", n, joined);
	}
}

static void mode_roundtrip(const char *s, size_t size)
{
	const char *f[4] = { "", "", "", "" };
	char out[CURSOR_MAX], created[CURSOR_FIELD_MAX], id[CURSOR_FIELD_MAX];
	enum cursor_status cs;
	size_t off = 0;
	int ok;

	for (int i = 0; i < 4 && off <= size; i++) {
		f[i] = s + off;
		off += strlen(s + off) + 1;
	}
	memset(out, 0x7f, sizeof(out));
	if (cursor_make(key, sizeof(key), f[0], f[1], f[2], f[3], out))
		return;
	FUZZ_CHECK(memchr(out, '\0', sizeof(out)), "cursor_make wrote past CURSOR_MAX");
	cs = cursor_parse(key, sizeof(key), f[0], f[1], out, created, id);
	/* a '|' inside kind, filter or created moves the field boundaries; the id takes the rest */
	ok = !strchr(f[0], '|') && !strchr(f[1], '|') && !strchr(f[2], '|') &&
	     strlen(f[2]) < CURSOR_FIELD_MAX && strlen(f[3]) < CURSOR_FIELD_MAX;
	if (!ok)
		return;
	FUZZ_CHECK(cs == CURSOR_OK, "made '%s' for [%s|%s|%s|%s], parse says %d", out, f[0], f[1],
		   f[2], f[3], cs);
	FUZZ_CHECK(!strcmp(created, f[2]) && !strcmp(id, f[3]), "fields changed: '%s' '%s'",
		   created, id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (!size)
		return 0;
	s = fuzz_strndup(data + 1, size - 1);
	switch (data[0] % 3) {
	case 0:
		mode_client(s);
		break;
	case 1:
		mode_signed(data + 1, size - 1);
		break;
	default:
		mode_roundtrip(s, size - 1);
		break;
	}
	free(s);
	return 0;
}
