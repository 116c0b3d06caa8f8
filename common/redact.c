#include "redact.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define REDACT_TOKEN_MIN 8 /* "Bearer x" in prose is not a credential; "Bearer eyJhbGci..." is */

/* Authorization schemes shown before a masked credential ("Bearer ***"); any other first word
 * of an authorization value may be the credential itself. */
static const char *const auth_schemes[] = {
	"Basic", "Bearer", "Digest",	       "Token", "Negotiate", "NTLM",
	"Bot",	 "OAuth",  "AWS4-HMAC-SHA256", NULL,
};

static const char *const secret_keys[] = {
	"password",   "passwd",	       "token",	    "secret",	  "apikey",
	"api_key",    "api-key",       "authtoken", "access_key", "private_key",
	"credential", "authorization", NULL,
};

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + 1 >= o->size)
		return;
	if (n > o->size - 1 - o->len)
		n = o->size - 1 - o->len;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static int is_value_end(char c)
{
	return !c || isspace((unsigned char)c) || c == '"' || c == '\'' || c == '&' || c == ',' ||
	       c == ';' || c == '}';
}

/* The word (letters, digits, '_', '-') ending just before P (at or after START). */
static size_t word_before(const char *start, const char *p)
{
	const char *w = p;
	while (w > start && (isalnum((unsigned char)w[-1]) || w[-1] == '_' || w[-1] == '-'))
		w--;
	return (size_t)(p - w);
}

/* Length of the authorization scheme word V starts with, when credentials follow it after one
 * space ("Bearer x"); else 0. */
static size_t scheme_len(const char *v)
{
	size_t w = 0;

	while (v[w] && !isspace((unsigned char)v[w]))
		w++;
	if (v[w] != ' ' || !v[w + 1] || isspace((unsigned char)v[w + 1]))
		return 0;
	for (const char *const *s = auth_schemes; *s; s++)
		if (strlen(*s) == w && !strncasecmp(v, *s, w))
			return w;
	return 0;
}

enum { KEY_ANYWHERE, KEY_WORD_START, KEY_WHOLE_WORD };

/* Where a word of a key may start: its start, after '_', '-' or '.', or at a capital after a
 * small letter ("authToken"). */
static int word_starts(const char *key, size_t i)
{
	return i == 0 || key[i - 1] == '_' || key[i - 1] == '-' || key[i - 1] == '.' ||
	       (islower((unsigned char)key[i - 1]) && isupper((unsigned char)key[i]));
}

/* 1 when the LEN bytes at KEY contain WORD (case-insensitive) as WHERE says: anywhere, where a
 * word starts, or as a whole word (also not followed by a letter). */
static int key_has(const char *key, size_t len, const char *word, int where)
{
	size_t wl = strlen(word);

	for (size_t i = 0; i + wl <= len; i++)
		if (!strncasecmp(key + i, word, wl) &&
		    (where == KEY_ANYWHERE || word_starts(key, i)) &&
		    (where != KEY_WHOLE_WORD || i + wl == len ||
		     !isalpha((unsigned char)key[i + wl])))
			return 1;
	return 0;
}

static int key_is_secret(const char *key, size_t len)
{
	/* any *SECRET*, *_PASS* and *TOKEN* key ("MY_SECRET_X", "DB_PASS", "PASSWORD",
	 * "GITHUB_TOKEN_2", "_authToken"), not "bypass", "max_tokens" or "tokenizer" */
	if (key_has(key, len, "secret", KEY_ANYWHERE) ||
	    key_has(key, len, "pass", KEY_WORD_START) || key_has(key, len, "token", KEY_WHOLE_WORD))
		return 1;
	for (const char *const *k = secret_keys; *k; k++) {
		size_t kl = strlen(*k);
		/* "npm_token", "GITHUB_TOKEN", "_authToken": the secret word ends the key */
		if (len >= kl && !strncasecmp(key + len - kl, *k, kl))
			return 1;
	}
	return 0;
}

/* END, the end of a masked token that starts at START, or END - 1 when the token ends with a
 * secret key and its delimiter ("token= password: x", "Basic password: x"): the delimiter is
 * then looked at again, so that the value after it is masked too. */
static const char *rescan(const char *start, const char *end)
{
	size_t k;

	if (end == start || (end[-1] != '=' && end[-1] != ':'))
		return end;
	k = word_before(start, end - 1);
	return k && key_is_secret(end - 1 - k, k) ? end - 1 : end;
}

size_t redact(const char *in, char *out, size_t outsz)
{
	struct out o = { out, outsz, 0 };
	const char *p = in;

	if (!outsz)
		return 0;
	while (*p) {
		/* scheme://userinfo@host */
		if (p[0] == ':' && p[1] == '/' && p[2] == '/') {
			const char *auth = p + 3, *end = auth, *at = NULL;
			while (*end && !isspace((unsigned char)*end) && *end != '/' &&
			       *end != '"' && *end != '\'')
				end++;
			for (const char *q = auth; q < end; q++)
				if (*q == '@')
					at = q;
			put(&o, p, 3);
			if (at) {
				put(&o, REDACT_MASK, strlen(REDACT_MASK));
				p = at;
			} else {
				p = auth;
			}
			continue;
		}
		/* key=value, key: value, "key": "value", key = value */
		if (*p == '=' || *p == ':') {
			const char *kend = p, *v;
			size_t klen;
			while (kend > in && kend[-1] == ' ')
				kend--;
			if (kend > in && (kend[-1] == '"' || kend[-1] == '\''))
				kend--;
			klen = word_before(in, kend);
			if (klen && key_is_secret(kend - klen, klen)) {
				/* "Authorization", "Proxy-Authorization", "HTTP_AUTHORIZATION" */
				size_t alen = strlen("authorization");
				int whole_line = klen >= alen &&
						 !strncasecmp(kend - alen, "authorization", alen);
				/* the quote an authorization header is written in: -H
				 * 'Authorization: x' */
				const char *key = kend - klen;
				char enclosing = key > in && (key[-1] == '"' || key[-1] == '\'')
							 ? key[-1]
							 : 0;
				char quote = 0;
				size_t scheme;
				put(&o, p, 1);
				v = p + 1;
				while (*v == ' ')
					put(&o, v++, 1);
				if (*v == '"' || *v == '\'') {
					quote = *v;
					put(&o, v++, 1);
				}
				/* a scheme ("Bearer", "Basic", "token") then its credentials */
				scheme = quote ? 0 : scheme_len(v);
				/* an authorization value shows its scheme ("Bearer ***"); another
				 * key's ("token: Bearer ***") is masked with the credentials */
				if (scheme && whole_line) {
					put(&o, v, scheme + 1);
					v += scheme + 1;
					scheme = 0;
				}
				if (*v && *v != quote && *v != '\n') {
					const char *start;

					put(&o, REDACT_MASK, strlen(REDACT_MASK));
					/* every scheme word: "token: Basic Bearer x" */
					for (; scheme; scheme = scheme_len(v))
						v += scheme + 1;
					start = v;
					/* a quoted value runs to its quote; an authorization value
					 * (its scheme and credentials) to the end of the line or of
					 * the quotes around the header */
					while (*v && *v != '\n' && *v != '\r' &&
					       (quote	     ? *v != quote
						: whole_line ? *v != enclosing
							     : !is_value_end(*v)))
						v++;
					if (!quote && !whole_line)
						v = rescan(start, v);
				}
				p = v;
				continue;
			}
		}
		/* Authorization: Bearer xyz / Basic xyz */
		if ((!strncasecmp(p, "bearer ", 7) || !strncasecmp(p, "basic ", 6)) &&
		    (p == in || !isalnum((unsigned char)p[-1]))) {
			size_t w = tolower((unsigned char)p[1]) == 'e' ? 7 : 6, tok = 0;
			const char *v = p + w;
			while (!is_value_end(v[tok]))
				tok++;
			if (tok >= REDACT_TOKEN_MIN) {
				put(&o, p, w);
				put(&o, REDACT_MASK, strlen(REDACT_MASK));
				p = rescan(v, v + tok);
				continue;
			}
		}
		put(&o, p++, 1);
	}
	/* a cut must not end inside a UTF-8 sequence */
	if (o.len) {
		size_t lead = o.len - 1, need = 1;
		unsigned char c;
		while (lead > 0 && ((unsigned char)out[lead] & 0xC0) == 0x80 && o.len - lead < 4)
			lead--;
		c = (unsigned char)out[lead];
		need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
		if (o.len - lead < need)
			o.len = lead;
	}
	out[o.len] = '\0';
	return o.len;
}
