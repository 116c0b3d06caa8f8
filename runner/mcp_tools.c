/* What the model is offered of MCP tools and what it gets back from them (contract in mcp.h):
 * the names, the definitions, a tools/call result as content blocks; and the error helpers the
 * client shares. No network here. */
#include "mcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/crypto.h"
#include "../common/strbuf.h"

/* the shortened name: PREFIX S "__" T "_" HASH */
#define MCP_NAME_ROOM                                                                              \
	(MCP_TOOL_NAME_MAX - (sizeof(MCP_TOOL_NAME_PREFIX) - 1) - 2 - 1 - MCP_NAME_HASH_HEX)
#define MCP_NAME_SERVER_MIN 32 /* bytes of the server's name a shortened name keeps at least */
#define MCP_NOTE_MAX 512       /* a note's bytes */
#define MCP_TYPE_SHOWN 64      /* bytes of an unknown content block type a note shows */
#define MCP_IMAGE_HEAD 12      /* bytes of an image read for its type (WebP's "RIFF....WEBP") */
#define MCP_IMAGE_HEAD_B64 16  /* base64 characters of those bytes */
#define MCP_NO_OUTPUT "(no output)" /* the content of a result that has none */

/* The media types of images the Messages API takes. */
static const char *const image_types[] = { "image/jpeg", "image/png", "image/gif", "image/webp" };

/* The length of the well-formed UTF-8 character at P (at most N bytes), or 0 when there is
 * none (an overlong form, a surrogate, past U+10FFFF, cut short). */
static size_t utf8_char(const unsigned char *p, size_t n)
{
	unsigned cp, len = p[0] < 0x80	 ? 1
			   : p[0] < 0xc2 ? 0
			   : p[0] < 0xe0 ? 2
			   : p[0] < 0xf0 ? 3
			   : p[0] < 0xf5 ? 4
					 : 0;

	if (!len || len > n)
		return 0;
	cp = len == 1 ? p[0] : p[0] & (0x7f >> len);
	for (unsigned i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

int mcp_fail(struct mcp_error *err, enum mcp_error_kind kind, const char *fmt, ...)
{
	unsigned char *p = (unsigned char *)err->message;
	size_t n, k;
	va_list ap;

	err->kind = kind;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	/* a message goes into events and logs as a JSON string: what a server sent (a quoted
	 * answer, a content type) or a cut may hold control characters or bytes that are not
	 * UTF-8 */
	for (n = strlen(err->message); n; p += k, n -= k) {
		if (!(k = utf8_char(p, n))) {
			*p = '?';
			k = 1;
		} else if (*p < 0x20 || *p == 0x7f) {
			*p = ' ';
		}
	}
	return -1;
}

const char *mcp_error_type(const struct mcp_error *err)
{
	switch (err->kind) {
	case MCP_ERR_AUTH:
		return "mcp_authentication_failed_error";
	case MCP_ERR_CANCELLED:
		return NULL;
	default:
		return "mcp_connection_failed_error";
	}
}

/* N, lowered until S[N] starts a UTF-8 character (or is the end): S cut at N bytes at most. */
static size_t utf8_cut(const char *s, size_t len, size_t n)
{
	if (n >= len)
		return len;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* LEN, lowered to drop a character that S's last bytes begin but do not complete (text cut
 * where the end was not seen). */
static size_t utf8_trim(const char *s, size_t len)
{
	size_t i = len, need;
	unsigned char lead;

	while (i && len - i < 4 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (!i)
		return len;
	lead = (unsigned char)s[i - 1];
	need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
	return len - (i - 1) < need ? i - 1 : len;
}

/* ---- names ---- */

static int name_char(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-';
}

/* S with every character outside the rule as one "_", into SB. */
static void sanitize(const char *s, struct strbuf *sb)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p & 0xc0) == 0x80)
			continue; /* the rest of a character already written as "_" */
		strbuf_addch(sb, name_char(*p) ? *p : '_');
	}
}

static int all_name_chars(const char *s)
{
	for (; *s; s++)
		if (!name_char((unsigned char)*s))
			return 0;
	return 1;
}

/* The name with no hash: SERVER and TOOL as they are, when the name is unambiguous and fits. */
static int plain_name(const char *server, const char *tool, char *out)
{
	size_t ls = strlen(server), lt = strlen(tool);

	if (!ls || !lt || !all_name_chars(server) || !all_name_chars(tool) ||
	    strstr(server, "__") || server[ls - 1] == '_' ||
	    sizeof(MCP_TOOL_NAME_PREFIX) - 1 + ls + 2 + lt > MCP_TOOL_NAME_MAX)
		return -1;
	snprintf(out, MCP_TOOL_NAME_MAX + 1, MCP_TOOL_NAME_PREFIX "%s__%s", server, tool);
	return 0;
}

/* The shortened name of TOOL of SERVER; SALT < 0: none. */
static void hashed_name(const char *server, const char *tool, int salt, char *out)
{
	struct strbuf s = STRBUF_INIT, t = STRBUF_INIT;
	unsigned char digest[SHA256_LEN];
	char hex[2 * SHA256_LEN + 1], num[16];
	struct sha256 h;
	size_t ls, lt;

	sha256_init(&h);
	sha256_update(&h, server, strlen(server) + 1);
	sha256_update(&h, tool, strlen(tool));
	if (salt >= 0) {
		snprintf(num, sizeof(num), "%d", salt);
		sha256_update(&h, "", 1);
		sha256_update(&h, num, strlen(num));
	}
	sha256_final(&h, digest);
	hex_encode(digest, sizeof(digest), hex);
	sanitize(server, &s);
	sanitize(tool, &t);
	ls = s.len;
	lt = t.len;
	if (lt > MCP_NAME_ROOM - (ls < MCP_NAME_SERVER_MIN ? ls : MCP_NAME_SERVER_MIN))
		lt = MCP_NAME_ROOM - (ls < MCP_NAME_SERVER_MIN ? ls : MCP_NAME_SERVER_MIN);
	if (ls > MCP_NAME_ROOM - lt)
		ls = MCP_NAME_ROOM - lt;
	/* a strbuf that ran out of memory reads as "": the name is then the prefix and the hash */
	snprintf(out, MCP_TOOL_NAME_MAX + 1, MCP_TOOL_NAME_PREFIX "%.*s__%.*s_%.*s", (int)ls,
		 strbuf_str(&s), (int)lt, strbuf_str(&t), MCP_NAME_HASH_HEX, hex);
	strbuf_release(&s);
	strbuf_release(&t);
}

void mcp_tool_name(const char *server, const char *tool, char out[MCP_TOOL_NAME_MAX + 1])
{
	if (plain_name(server, tool, out))
		hashed_name(server, tool, -1, out);
}

int mcp_names_init(struct mcp_names *t)
{
	t->map = json_object();
	return t->map ? 0 : -1;
}

const char *mcp_names_name(const struct mcp_names *t, const char *server, const char *tool)
{
	const char *k;
	json_t *v;

	json_object_foreach (t->map, k, v)
		if (!strcmp(json_string_value(json_array_get(v, 0)), server) &&
		    !strcmp(json_string_value(json_array_get(v, 1)), tool))
			return k;
	return NULL;
}

int mcp_names_add(struct mcp_names *t, const char *server, const char *tool, const json_t *taken,
		  char out[MCP_TOOL_NAME_MAX + 1])
{
	const char *known = mcp_names_name(t, server, tool);

	if (known) { /* the same tool again: its name again */
		snprintf(out, MCP_TOOL_NAME_MAX + 1, "%s", known);
		return 0;
	}
	for (int salt = -1; salt < MCP_NAME_TRIES; salt++) {
		if (salt < 0)
			mcp_tool_name(server, tool, out);
		else
			hashed_name(server, tool, salt, out);
		if (json_object_get(taken, out) || json_object_get(t->map, out))
			continue;
		return json_object_set_new(t->map, out, json_pack("[ss]", server, tool));
	}
	return -1;
}

int mcp_names_find(const struct mcp_names *t, const char *name, const char **server,
		   const char **tool)
{
	const json_t *v = json_object_get(t->map, name);

	if (!v)
		return -1;
	*server = json_string_value(json_array_get(v, 0));
	*tool = json_string_value(json_array_get(v, 1));
	return 0;
}

void mcp_names_release(struct mcp_names *t)
{
	json_decref(t->map);
	t->map = NULL;
}

/* ---- definitions ---- */

json_t *mcp_tool_definition(const json_t *tool, const char *name)
{
	const char *d = json_string_value(json_object_get(tool, "description"));
	json_t *def = json_object(), *schema = json_deep_copy(json_object_get(tool, "inputSchema"));

	if (!d || !*d)
		d = json_string_value(json_object_get(tool, "title"));
	if (!def || !schema || json_object_set_new(def, "name", json_string(name)) ||
	    (d && *d &&
	     json_object_set_new(def, "description",
				 json_stringn(d, utf8_cut(d, strlen(d), MCP_DESCRIPTION_MAX)))) ||
	    json_object_set_new(def, "input_schema", schema)) {
		json_decref(def);
		return NULL;
	}
	return def;
}

/* ---- results ---- */

/* A result being converted. */
struct conv {
	json_t *blocks;	 /* the content so far */
	size_t text_max; /* text bytes kept at most */
	size_t kept;	 /* text bytes kept */
	size_t total;	 /* text bytes the result had */
	int truncated;
};

static int append_text(struct conv *cv, const char *text, size_t n)
{
	return json_array_append_new(cv->blocks,
				     json_pack("{s:s,s:s%}", "type", "text", "text", text, n));
}

/* Append the text block TEXT (LEN bytes; the tool's own text when TOOL_TEXT, else a note of
 * ours), or as much of it as the cap leaves. 0 or -1. */
static int add_text(struct conv *cv, const char *text, size_t len, int tool_text)
{
	size_t n = len;

	if (tool_text)
		cv->total += len;
	if (!len || cv->truncated)
		return 0;
	if (n > cv->text_max - cv->kept) {
		n = utf8_cut(text, len, cv->text_max - cv->kept);
		cv->truncated = 1;
		if (!n)
			return 0;
	}
	cv->kept += n;
	return append_text(cv, text, n);
}

/* Append a note (a text block in brackets) as far as the cap leaves room. */
static int add_note(struct conv *cv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add_note(struct conv *cv, const char *fmt, ...)
{
	char note[MCP_NOTE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(note, sizeof(note), fmt, ap);
	va_end(ap);
	return add_text(cv, note, utf8_trim(note, strlen(note)), 0);
}

/* Base64 as the Messages API takes it: the standard alphabet, padded to a multiple of 4. */
static int is_base64(const char *s, size_t len)
{
	size_t pad = 0;

	if (!len || len % 4)
		return 0;
	while (pad < 2 && s[len - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < len - pad; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '+' || ch == '/'))
			return 0;
	}
	return 1;
}

static int image_type_ok(const char *mime)
{
	for (size_t i = 0; mime && i < sizeof(image_types) / sizeof(image_types[0]); i++)
		if (!strcmp(mime, image_types[i]))
			return 1;
	return 0;
}

/* The media type of the image whose base64 is D (LEN bytes, valid base64), by its first bytes:
 * one of image_types, or NULL when it is none of them. */
static const char *image_sniff(const char *d, size_t len)
{
	unsigned char head[MCP_IMAGE_HEAD];
	long n = base64_decode(d, len < MCP_IMAGE_HEAD_B64 ? len : MCP_IMAGE_HEAD_B64, head,
			       sizeof(head));

	if (n >= 3 && !memcmp(head, "\xff\xd8\xff", 3))
		return "image/jpeg";
	if (n >= 8 && !memcmp(head, "\x89PNG\r\n\x1a\n", 8))
		return "image/png";
	if (n >= 6 && (!memcmp(head, "GIF87a", 6) || !memcmp(head, "GIF89a", 6)))
		return "image/gif";
	if (n >= 12 && !memcmp(head, "RIFF", 4) && !memcmp(head + 8, "WEBP", 4))
		return "image/webp";
	return NULL;
}

/* An image content block B: an image block, or a note saying why not. */
static int add_image(struct conv *cv, const json_t *b)
{
	const char *mime = json_string_value(json_object_get(b, "mimeType"));
	const json_t *data = json_object_get(b, "data");
	const char *d = json_string_value(data), *sniffed;
	size_t len = json_string_length(data);

	if (!image_type_ok(mime))
		return add_note(cv,
				"[an image of type %s is not shown: the model takes jpeg, png, "
				"gif and webp]",
				mime ? mime : "(none)");
	if (len > MCP_IMAGE_MAX)
		return add_note(cv, "[an image (%s) is not shown: %zu bytes of base64, over %d]",
				mime, len, MCP_IMAGE_MAX);
	if (!d || !is_base64(d, len))
		return add_note(cv, "[an image (%s) is not shown: its data is not base64]", mime);
	/* the type its bytes have: the Messages API refuses an image labelled otherwise */
	if (!(sniffed = image_sniff(d, len)))
		return add_note(cv,
				"[an image (%s) is not shown: its data is not a jpeg, png, gif or "
				"webp image]",
				mime);
	return json_array_append_new(cv->blocks, json_pack("{s:s,s:{s:s,s:s,s:O}}", "type", "image",
							   "source", "type", "base64", "media_type",
							   sniffed, "data", data));
}

/* An embedded resource B ({"resource": {uri, mimeType?, text | blob}}). */
static int add_resource(struct conv *cv, const json_t *b)
{
	const json_t *r = json_object_get(b, "resource"), *text = json_object_get(r, "text");
	const char *uri = json_string_value(json_object_get(r, "uri"));
	const char *mime = json_string_value(json_object_get(r, "mimeType"));

	if (json_is_string(text))
		return add_text(cv, json_string_value(text), json_string_length(text), 1);
	return add_note(cv, "[resource %s (%s) is not shown: binary content]",
			uri ? uri : "(no uri)", mime ? mime : "no type");
}

/* One content block B of the result. */
static int add_block(struct conv *cv, const json_t *b)
{
	const char *type = json_string_value(json_object_get(b, "type"));
	const json_t *text = json_object_get(b, "text");

	if (!type)
		return add_note(cv, "[a content block without a type is not shown]");
	if (!strcmp(type, "text"))
		return json_is_string(text)
			       ? add_text(cv, json_string_value(text), json_string_length(text), 1)
			       : add_note(cv, "[a text block without text is not shown]");
	if (!strcmp(type, "image"))
		return add_image(cv, b);
	if (!strcmp(type, "resource"))
		return add_resource(cv, b);
	if (!strcmp(type, "resource_link")) {
		const char *name = json_string_value(json_object_get(b, "name"));
		const char *uri = json_string_value(json_object_get(b, "uri"));
		return add_note(cv, "[resource link: %s <%s>]", name ? name : "(no name)",
				uri ? uri : "(no uri)");
	}
	if (!strcmp(type, "audio")) {
		const char *mime = json_string_value(json_object_get(b, "mimeType"));
		return add_note(cv, "[audio (%s) is not shown: the model takes no audio]",
				mime ? mime : "no type");
	}
	return add_note(cv, "[content of type %.*s is not shown]",
			(int)utf8_cut(type, strlen(type), MCP_TYPE_SHOWN), type);
}

/* CONTENT (an array, or NULL) and, without content, STRUCTURED into CV's blocks, then the note
 * of a cut and "(no output)" when there is nothing. -1 when out of memory. */
static int fill(struct conv *cv, const json_t *content, const json_t *structured)
{
	char *text = NULL, note[MCP_NOTE_MAX];
	const json_t *b;
	size_t i;
	int rc = 0;

	json_array_foreach (content, i, b)
		if ((rc = add_block(cv, b)))
			return rc;
	if (!json_array_size(content) && structured) {
		text = json_dumps(structured, JSON_COMPACT | JSON_ENCODE_ANY);
		rc = text ? add_text(cv, text, strlen(text), 1) : -1;
		free(text);
	}
	if (!rc && cv->truncated) { /* the note is kept past the cap */
		snprintf(note, sizeof(note),
			 "[truncated: the tool returned %zu bytes of text; %zu bytes of the result "
			 "are shown (the limit)]",
			 cv->total, cv->kept);
		rc = append_text(cv, note, strlen(note));
	}
	if (!rc && !json_array_size(cv->blocks))
		rc = append_text(cv, MCP_NO_OUTPUT, strlen(MCP_NO_OUTPUT));
	return rc;
}

int mcp_result_convert(const json_t *result, size_t text_max, struct mcp_result *out,
		       struct mcp_error *err)
{
	const json_t *content = json_object_get(result, "content");
	struct conv cv = { json_array(), text_max, 0, 0, 0 };
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(result))
		mcp_fail(err, MCP_ERR_PROTOCOL, "the tools/call result is not an object");
	else if (content && !json_is_array(content))
		mcp_fail(err, MCP_ERR_PROTOCOL, "the tools/call result's content is not an array");
	else if (!cv.blocks || fill(&cv, content, json_object_get(result, "structuredContent")))
		mcp_fail(err, MCP_ERR_NOMEM, "out of memory reading a tool's result");
	else
		rc = 0;
	if (!rc) {
		out->content = cv.blocks;
		out->is_error = json_is_true(json_object_get(result, "isError"));
		out->truncated = cv.truncated;
	} else {
		json_decref(cv.blocks);
	}
	return rc;
}

void mcp_result_release(struct mcp_result *r)
{
	json_decref(r->content);
	memset(r, 0, sizeof(*r));
}
