/* libFuzzer target: credential redaction (common/redact.c), which guards last_error and logs.
 *
 * Input: byte 0 picks the output buffer size and a credential pattern, byte 1 where the
 * pattern goes; the rest is text (cut at its first NUL, as a C string is).
 *
 * Checked, with output buffers of exactly the given size (so ASan sees any write past them):
 * the output is NUL-terminated, its length is what redact returns and less than the buffer;
 * a cut output is a prefix of the uncut one and does not end inside a UTF-8 sequence; valid
 * UTF-8 in gives valid UTF-8 out; and a credential written the ways the patterns show
 * (key=value, "key": "value", Authorization headers, URL userinfo, bearer tokens), anywhere in
 * any text, never comes out: the marker does not appear in the output. Not judged: a pattern
 * after a quote on its line (with quotes unbalanced, which of them pair is a guess). */
#include "fuzz.h"

#include "../../common/redact.h"

/* Each holds FUZZ_MARKER where a credential is; the text goes around it (with a space before,
 * so a bearer token is not glued to a preceding word). */
static const char *const patterns[] = {
	"password=" FUZZ_MARKER,
	"PASSWORD: " FUZZ_MARKER,
	"\"api_key\": \"" FUZZ_MARKER "\"",
	"token='" FUZZ_MARKER "'",
	"secret = " FUZZ_MARKER,
	"_authToken=" FUZZ_MARKER,
	"GITHUB_TOKEN=" FUZZ_MARKER,
	"https://user:" FUZZ_MARKER "@example.com/",
	"https://" FUZZ_MARKER "@example.com/",
	"Authorization: Bearer " FUZZ_MARKER,
	"authorization: " FUZZ_MARKER,
	"Proxy-Authorization: Basic " FUZZ_MARKER,
	"Bearer " FUZZ_MARKER,
	"basic " FUZZ_MARKER FUZZ_MARKER,
	"{\"password\":\"" FUZZ_MARKER "\"}",
	"private_key: '" FUZZ_MARKER "'",
};
#define PATTERN_COUNT (sizeof(patterns) / sizeof(patterns[0]))

/* redact IN into a heap buffer of exactly OUTSZ bytes; checks and returns it (caller frees). */
static char *run(const char *in, size_t outsz, size_t *len)
{
	char *out = malloc(outsz ? outsz : 1);

	if (!out)
		abort();
	memset(out, 0x7f, outsz ? outsz : 1);
	*len = redact(in, out, outsz);
	if (!outsz) {
		FUZZ_CHECK(*len == 0 && (unsigned char)out[0] == 0x7f,
			   "wrote into a 0-byte buffer");
		return out;
	}
	FUZZ_CHECK(memchr(out, '\0', outsz), "output is not NUL-terminated within %zu bytes",
		   outsz);
	FUZZ_CHECK(strlen(out) == *len && *len < outsz, "returned %zu, wrote %zu, buffer %zu", *len,
		   strlen(out), outsz);
	return out;
}

/* Room for any expansion: a mask is 3 bytes and replaces at least one. */
static size_t room(size_t len)
{
	return 4 * len + 16;
}

static void check_cut(const char *in, size_t outsz)
{
	size_t full_len, cut_len;
	char *full = run(in, room(strlen(in)), &full_len), *cut;

	FUZZ_CHECK(full_len + 1 < room(strlen(in)), "uncut output filled its buffer");
	if (fuzz_utf8_valid(in, strlen(in)))
		FUZZ_CHECK(fuzz_utf8_valid(full, full_len), "valid UTF-8 in, invalid out");
	cut = run(in, outsz, &cut_len);
	if (outsz) {
		FUZZ_CHECK(cut_len <= full_len && !memcmp(cut, full, cut_len),
			   "a cut output is not a prefix of the uncut one");
		if (fuzz_utf8_valid(in, strlen(in)))
			FUZZ_CHECK(fuzz_utf8_valid(cut, cut_len),
				   "cut at %zu inside a UTF-8 sequence", cut_len);
	}
	free(full);
	free(cut);
}

static void check_secret(const char *text, size_t at, const char *pattern)
{
	size_t tlen = strlen(text), plen = strlen(pattern), len;
	char *in, *out;

	if (strstr(text, FUZZ_MARKER))
		return; /* the text itself may show the marker in the clear */
	if (at > tlen)
		at = tlen;
	for (size_t i = at; i > 0 && text[i - 1] != '\n'; i--)
		if (text[i - 1] == '"' || text[i - 1] == '\'')
			return; /* an open quote before it on its line: which quotes pair is a guess
				 */
	in = malloc(tlen + plen + 2);
	if (!in)
		abort();
	memcpy(in, text, at);
	in[at] = ' ';
	memcpy(in + at + 1, pattern, plen);
	memcpy(in + at + 1 + plen, text + at, tlen - at + 1);
	out = run(in, room(strlen(in)), &len);
	FUZZ_CHECK(!strstr(out, FUZZ_MARKER), "the credential leaked:\n  in:  %s\n  out: %s", in,
		   out);
	free(out);
	free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;
	size_t tlen, outsz, at;

	if (size < 2)
		return 0;
	text = fuzz_strndup(data + 2, size - 2);
	tlen = strlen(text);
	outsz = (size_t)data[0] * (tlen + 8) / 255;
	at = tlen ? (size_t)data[1] * (tlen + 1) / 256 : 0;

	check_cut(text, outsz);
	check_secret(text, at, patterns[data[0] % PATTERN_COUNT]);
	free(text);
	return 0;
}
