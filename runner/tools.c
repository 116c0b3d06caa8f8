/* The agent toolset run through a sandbox's commands (runner/tools.h). Every tool is one or a
 * few commands: the short scripts below (the one place where the sandbox's side is written),
 * with every value the model gave passed as a positional argument, never spliced into script
 * text. The text logic (bash's output, read's line ranges, edit's replacement, glob's matching
 * and order, grep's caps) is done here. The reference behaviour, messages included, is the
 * official SDK's tools/agent-toolset/node.js. */
#include "tools.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/crypto.h"
#include "../common/strbuf.h"

#define TOOLS_TOKEN_BYTES 16   /* random bytes of a sentinel or a temporary file's name */
#define TOOLS_ANSWER_SLACK 256 /* output room for a command's fields around its payload */
#define TOOLS_EXEC_ERR_MAX 256 /* why the sandbox could not run a command */
#define TOOLS_NO_LIMIT "9223372036854775807" /* head -n: every line */

/* ---- the sandbox's side ---- */

/* Confinement, the prologue of the file tools' scripts ($1 the workdir, $2 the path made
 * absolute): r is $2 with every symlink resolved (realpath -m, as the SDK's confineToRoot),
 * refused unless inside the resolved workdir w. Answers 'E' (resolution failed: why) or 'X'
 * (outside) and stops. */
#define SH_CONFINE                                                                                 \
	"inside() { [ \"$1\" = / ] || case $2 in \"$1\" | \"$1\"/*) ;; *) return 1 ;; esac; }\n"   \
	"w=$(realpath -m -- \"$1\") || exit 1\n"                                                   \
	"r=$(realpath -m -- \"$2\" 2>&1) || { printf 'E\\0%s\\0' \"$r\"; exit 0; }\n"              \
	"[ -L \"$r\" ] && { printf 'E\\0loop\\0'; exit 0; }\n"                                     \
	"inside \"$w\" \"$r\" || { printf 'X\\0'; exit 0; }\n"

/* bash: $1 workdir, $2 sentinel, $3 1 to start afresh, $4... the command in pieces. Restores
 * the exported variables and the working directory the last call left, runs the command as the
 * SDK's persistent shell does, saves both, then prints the exit status after the sentinel. A
 * command that ends the shell (exit, exec) prints no sentinel. */
static const char sh_bash[] =
	/* one line up to the eval: the command's line numbers are its own */
	"__tr_w=$1 __tr_s=$2 __tr_c=; "
	"readonly __tr_w __tr_s; "
	"[ \"$3\" = 1 ] && rm -rf -- \"$1/" TOOLS_STATE_DIR "\"; "
	"shift 3; "
	"for __tr_a; do __tr_c+=$__tr_a; done; "
	"set --; "
	"cd -- \"$__tr_w\" || exit 1; "
	"[ -d " TOOLS_STATE_DIR " ] || mkdir -m 700 -p " TOOLS_STATE_DIR " 2>/dev/null; "
	"[ -r " TOOLS_STATE_DIR "/env ] && . ./" TOOLS_STATE_DIR "/env 2>/dev/null; "
	"{ IFS= read -r -d '' __tr_a <" TOOLS_STATE_DIR "/cwd; } 2>/dev/null; "
	"[ -n \"$__tr_a\" ] && cd -- \"${__tr_a%$'\\n'}\" 2>/dev/null; "
	"unset __tr_a; "
	"{ eval \"$__tr_c\"\n"
	"} </dev/null 2>&1\n"
	"{ __tr_x=$?; set +euvx; builtin export -p >\"$__tr_w/" TOOLS_STATE_DIR "/env\"\n"
	"builtin pwd >\"$__tr_w/" TOOLS_STATE_DIR "/cwd\"; } 2>/dev/null\n"
	"builtin printf '\\n%s%d\\n' \"$__tr_s\" \"$__tr_x\"\n";

/* bash's state dropped ($1 workdir): what a restart, a timeout or a dead shell leaves. */
static const char sh_reset[] = "rm -rf -- \"$1/" TOOLS_STATE_DIR "\"\n";

/* read and edit: $3 the size cap, $4 the cap + 1, $5 the first line of a range (empty: none),
 * $6 its number of lines. Answers 'N' (missing), 'F' (not a regular file), 'P' (not readable) or
 * 'K', the size, then the file when it is within the cap, else the range's lines. */
static const char sh_read[] =
	SH_CONFINE "[ -e \"$r\" ] || { printf 'N\\0'; exit 0; }\n"
		   "[ -f \"$r\" ] || { printf 'F\\0'; exit 0; }\n"
		   "[ -r \"$r\" ] || { printf 'P\\0'; exit 0; }\n"
		   "s=$(stat -c %s -- \"$r\") || exit 1\n"
		   "printf 'K\\0%s\\0' \"$s\"\n"
		   "[ \"$s\" -le \"$3\" ] && exec head -c \"$4\" -- \"$r\"\n"
		   "[ -n \"$5\" ] || exit 0\n"
		   "tail -n \"+$5\" -- \"$r\" | head -n \"$6\" | head -c \"$4\"\n";

/* write and edit: $3 the temporary file's token, $4 flags (c: create it and the directories,
 * i: the contents on stdin, else $5... in base64, f: move it into place keeping an existing
 * file's mode). Answers 'D' (a directory is there), 'T' (a parent is not a directory), 'P'
 * (not writable), 'I' (failed) or 'K'. */
static const char sh_write[] = SH_CONFINE
	"umask 077\n"
	"d=${r%/*} t=${r%/*}/.tmp-terrarium-$3 f=$4\n"
	"shift 4\n"
	"fail() { rm -f -- \"$t\"; printf '%s\\0' \"$1\"; exit 0; }\n"
	"case $f in *c*)\n"
	"  [ -d \"$r\" ] && fail D\n"
	"  mkdir -p -- \"${d:-/}\" 2>/dev/null || fail T\n"
	"  : 2>/dev/null >\"$t\" || fail P ;;\n"
	"esac\n"
	"case $f in *i*) cat ;; *) printf %s \"$@\" | base64 -d ;; esac 2>/dev/null >>\"$t\" ||"
	" fail I\n"
	"case $f in *f*)\n"
	"  [ -e \"$r\" ] && chmod --reference=\"$r\" -- \"$t\" 2>/dev/null\n"
	"  sync -- \"$t\" 2>/dev/null\n"
	"  mv -f -- \"$t\" \"$r\" 2>/dev/null || fail I ;;\n"
	"esac\n"
	"printf 'K\\0'\n";

/* glob: $3 entries at most, $4 bytes at most, $5... find's expression. Answers 'K', the
 * searched directory, then the entries find prints. */
static const char sh_glob[] =
	SH_CONFINE "[ -d \"$r\" ] || { printf 'K\\0%s\\0' \"$r\"; exit 0; }\n"
		   "cd -- \"$r\" || exit 1\n"
		   "printf 'K\\0%s\\0' \"$r\"\n"
		   "n=$3 c=$4\n"
		   "shift 4\n"
		   "find . \"$@\" 2>/dev/null | head -z -n \"$n\" | head -c \"$c\"\n";

/* grep: $3 the pattern, $4 the time limit in seconds, $5 bytes at most, $6 the sentinel, $7
 * bytes of stderr at most. The
 * first rg on PATH outside the workdir (as the SDK), else grep -r; timeout(1) stays in the
 * command's process group, so that stopping the group stops the search. Answers 'K' and the
 * matches, then after the sentinel the exit status, which program ran and its stderr. */
static const char sh_grep[] = SH_CONFINE
	"g=$(command -v rg) && g=$(realpath -e -- \"$g\") && ! inside \"$w\" \"$g\" || g=\n"
	"p=$3 t=$4 c=$5 s=$6 m=$7\n"
	"printf 'K\\0'\n"
	"if [ -n \"$g\" ]; then k=rg; set -- \"$g\" --no-config -n --no-heading\n"
	"else k=grep; set -- grep -rnHIsE --exclude-dir=.git --exclude-dir=node_modules"
	" --exclude-dir=" TOOLS_STATE_DIR "; fi\n"
	"e=$(mktemp 2>/dev/null) || e=/dev/null\n"
	"timeout --foreground \"$t\" \"$@\" -e \"$p\" -- \"$r\" 2>\"$e\" | head -c \"$c\"\n"
	"x=${PIPESTATUS[0]}\n"
	"printf '\\n%s%d\\n%s\\n' \"$s\" \"$x\" \"$k\"\n"
	"head -c \"$m\" -- \"$e\"\n"
	"[ \"$e\" = /dev/null ] || rm -f -- \"$e\"\n";

/* timeout(1)'s exit status when it stopped the command */
#define TOOLS_TIMEOUT_STATUS 124

/* ---- small helpers ---- */

/* The argv of one command: every string owned. */
struct args {
	char **v; /* NULL-terminated once anything was added */
	size_t n, alloc;
	int oom;
};

static void args_addn(struct args *a, const char *s, size_t n)
{
	char *copy;

	if (a->oom)
		return;
	if (a->n + 2 > a->alloc) {
		size_t alloc = a->alloc ? 2 * a->alloc : 16;
		char **v = realloc(a->v, alloc * sizeof(*v));

		if (!v) {
			a->oom = 1;
			return;
		}
		a->v = v;
		a->alloc = alloc;
	}
	copy = malloc(n + 1);
	if (!copy) {
		a->oom = 1;
		return;
	}
	memcpy(copy, s, n);
	copy[n] = '\0';
	a->v[a->n++] = copy;
	a->v[a->n] = NULL;
}

static void args_add(struct args *a, const char *s)
{
	args_addn(a, s, strlen(s));
}

static void args_addf(struct args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void args_addf(struct args *a, const char *fmt, ...)
{
	char buf[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	args_add(a, buf);
}

static void args_release(struct args *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

/* The start of a script's command line: SHELL -c SCRIPT SHELL (then $1...). bash without its
 * startup files, as the SDK starts it. */
static void args_script(struct args *a, const char *shell, const char *script)
{
	args_add(a, shell);
	if (!strcmp(shell, "bash")) {
		args_add(a, "--noprofile");
		args_add(a, "--norc");
	}
	args_add(a, "-c");
	args_add(a, script);
	args_add(a, shell);
}

/* A fresh random token of hex digits into OUT (2 * TOOLS_TOKEN_BYTES + 1 bytes). 0 or -1. */
static int token(char out[2 * TOOLS_TOKEN_BYTES + 1])
{
	unsigned char raw[TOOLS_TOKEN_BYTES];

	if (random_bytes(raw, sizeof(raw)))
		return -1;
	hex_encode(raw, sizeof(raw), out);
	return 0;
}

/* The length of the valid UTF-8 sequence at S (N > 0 bytes left), or 0 when none starts there
 * (a NUL counts as invalid: the result is a C string); *SKIP then says how many bytes the
 * maximal invalid part is, which one U+FFFD replaces (as a decoder does). */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *skip)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xBF;
	size_t len;

	*skip = 1;
	if (c < 0x80)
		return c ? 1 : 0;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		lo = c == 0xE0 ? 0xA0 : 0x80;
		hi = c == 0xED ? 0x9F : 0xBF;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		lo = c == 0xF0 ? 0x90 : 0x80;
		hi = c == 0xF4 ? 0x8F : 0xBF;
	} else {
		return 0;
	}
	for (size_t i = 1; i < len; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*skip = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xBF;
	}
	return len;
}

/* RES: out of memory. Always -1. */
static int result_oom(struct tool_result *res)
{
	res->is_error = 1;
	res->text = NULL;
	return -1;
}

/* Fill RES from the N bytes of TEXT, made valid UTF-8 without NUL bytes (U+FFFD for what is
 * not), "(no output)" when empty. 0, or -1 when out of memory (RES->text NULL). */
static int result_set(struct tool_result *res, int is_error, const char *text, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, len, skip;

	while (i < n) {
		len = utf8_seq(s + i, n - i, &skip);
		if (len) {
			strbuf_add(&sb, s + i, len);
			i += len;
		} else {
			strbuf_addstr(&sb, "\xEF\xBF\xBD");
			i += skip;
		}
	}
	if (!sb.len)
		strbuf_addstr(&sb, "(no output)");
	res->is_error = is_error;
	res->text = sb.oom ? NULL : strbuf_detach(&sb, NULL);
	strbuf_release(&sb);
	return res->text ? 0 : -1;
}

static int result_fmt(struct tool_result *res, int is_error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int result_fmt(struct tool_result *res, int is_error, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	if (sb.oom) {
		strbuf_release(&sb);
		return result_oom(res);
	}
	rc = result_set(res, is_error, sb.buf, sb.len);
	strbuf_release(&sb);
	return rc;
}

/* INPUT's member KEY in *V: 1 when it is of type TYPE (JSON_STRING, or JSON_TRUE for a
 * boolean), 0 when absent or null, -1 (RES "TOOL: KEY must be a string|boolean") otherwise. */
static int in_member(const json_t *input, const char *key, json_type type, const char *tool,
		     const json_t **v, struct tool_result *res)
{
	json_type t;

	*v = json_object_get(input, key);
	if (!*v || json_is_null(*v))
		return 0;
	t = json_typeof(*v);
	if (t == type || (type == JSON_TRUE && t == JSON_FALSE))
		return 1;
	result_fmt(res, 1, "%s: %s must be a %s", tool, key,
		   type == JSON_TRUE ? "boolean" : "string");
	return -1;
}

/* INPUT's member KEY as a string: 1 with *S and *LEN set; 0 when absent or null; -1 (RES set)
 * when it is not a string, or holds a NUL byte and NUL_OK is 0 (it would become an argument). */
static int in_str(const json_t *input, const char *key, const char *tool, int nul_ok,
		  const char **s, size_t *len, struct tool_result *res)
{
	const json_t *v;
	int rc = in_member(input, key, JSON_STRING, tool, &v, res);

	*s = NULL;
	*len = 0;
	if (rc <= 0)
		return rc;
	*s = json_string_value(v);
	*len = json_string_length(v);
	if (!nul_ok && strlen(*s) != *len) {
		result_fmt(res, 1, "%s: %s must not contain a NUL character", tool, key);
		return -1;
	}
	return 1;
}

/* INPUT's member KEY as a boolean: 0 (absent, null or false), 1 (true), -1 (RES set: not a
 * boolean). */
static int in_bool(const json_t *input, const char *key, const char *tool, struct tool_result *res)
{
	const json_t *v;
	int rc = in_member(input, key, JSON_TRUE, tool, &v, res);

	return rc <= 0 ? rc : json_is_true(v);
}

/* A required non-empty string member: 1, or -1 with RES "TOOL: KEY is required" (the SDK's
 * message) or a type error. */
static int in_required(const json_t *input, const char *key, const char *tool, int nul_ok,
		       const char **s, size_t *len, struct tool_result *res)
{
	int rc = in_str(input, key, tool, nul_ok, s, len, res);

	if (rc < 0)
		return -1;
	if (!rc || !*len) {
		result_fmt(res, 1, "%s: %s is required", tool, key);
		return -1;
	}
	return 1;
}

/* P against WORKDIR with "." and ".." taken lexically (as path.resolve does) into SB: the
 * absolute path the sandbox's realpath then follows. 0 or -1 (out of memory). */
static int path_abs(const char *workdir, const char *p, struct strbuf *sb)
{
	struct strbuf in = STRBUF_INIT;
	size_t i = 0, n;

	if (p[0] != '/')
		strbuf_addf(&in, "%s/", workdir);
	strbuf_addstr(&in, p);
	strbuf_reset(sb);
	while (!in.oom && i < in.len) {
		while (i < in.len && in.buf[i] == '/')
			i++;
		for (n = 0; i + n < in.len && in.buf[i + n] != '/'; n++)
			;
		if (n == 2 && !memcmp(in.buf + i, "..", 2)) {
			const char *slash = sb->len ? strrchr(sb->buf, '/') : NULL;

			if (slash)
				strbuf_remove(sb, (size_t)(slash - sb->buf), sb->len);
		} else if (n && !(n == 1 && in.buf[i] == '.')) {
			strbuf_addch(sb, '/');
			strbuf_add(sb, in.buf + i, n);
		}
		i += n;
	}
	if (!sb->len)
		strbuf_addch(sb, '/');
	n = in.oom || sb->oom;
	strbuf_release(&in);
	return n ? -1 : 0;
}

/* ---- running a command ---- */

void tool_exec_out_release(struct tool_exec_out *out)
{
	free(out->output);
	memset(out, 0, sizeof(*out));
}

void tool_result_release(struct tool_result *res)
{
	free(res->text);
	memset(res, 0, sizeof(*res));
}

/* Run A through X: 0 with OUT filled (release it), or -1 with RES saying that the sandbox
 * could not run it (or that memory ran out). */
static int exec_run(const struct tool_exec *x, const char *tool, struct args *a, const char *in,
		    size_t inlen, long timeout_ms, size_t cap, struct tool_exec_out *out,
		    struct tool_result *res)
{
	char err[TOOLS_EXEC_ERR_MAX] = "";

	memset(out, 0, sizeof(*out));
	if (a->oom)
		return result_oom(res);
	if (x->run(x->ctx, a->v, in, inlen, timeout_ms, cap, out, err, sizeof(err))) {
		tool_exec_out_release(out);
		result_fmt(res, 1, "%s: the sandbox could not run a command: %s", tool,
			   err[0] ? err : "unknown error");
		return -1;
	}
	return 0;
}

/* Up to N NUL-terminated fields of O from offset START on into F; *REST gets the offset after
 * the last one found. Returns how many were found. */
static size_t out_fields(const struct tool_exec_out *o, size_t start, const char **f, size_t n,
			 size_t *rest)
{
	size_t i = start, k = 0;

	while (k < n && i < o->len) {
		const char *end = memchr(o->output + i, '\0', o->len - i);

		if (!end)
			break;
		f[k++] = o->output + i;
		i = (size_t)(end - o->output) + 1;
	}
	*rest = i;
	return k;
}

/* Where SENTINEL is in O: its offset, with the exit status printed after it in *STATUS and the
 * offset after that line in *AFTER; or -1 when it is not there. */
static long frame_find(const struct tool_exec_out *o, const char *sentinel, int *status,
		       size_t *after)
{
	size_t slen = strlen(sentinel), i;
	const char *at = o->len ? memmem(o->output, o->len, sentinel, slen) : NULL;
	long v = 0;
	int neg = 0, digits = 0;

	if (!at)
		return -1;
	i = (size_t)(at - o->output) + slen;
	if (i < o->len && o->output[i] == '-') {
		neg = 1;
		i++;
	}
	for (; i < o->len && o->output[i] >= '0' && o->output[i] <= '9'; i++, digits++)
		if (v < 100000)
			v = v * 10 + (o->output[i] - '0');
	if (i < o->len && o->output[i] == '\n')
		i++;
	/* the SDK's /^(-?\d+)/, -1 without one */
	*status = digits ? (int)(neg ? -v : v) : -1;
	*after = i;
	return at - o->output;
}

/* RES for a command whose answer made no sense. */
static int answer_unexpected(struct tool_result *res, const char *tool,
			     const struct tool_exec_out *o)
{
	struct strbuf sb = STRBUF_INIT;
	int rc;

	strbuf_addf(&sb, "%s: unexpected answer from the sandbox (exit %d)", tool, o->status);
	if (o->len) {
		strbuf_addstr(&sb, ": ");
		strbuf_add(&sb, o->output, o->len < 200 ? o->len : 200);
	}
	if (sb.oom) {
		strbuf_release(&sb);
		return result_oom(res);
	}
	rc = result_set(res, 1, sb.buf, sb.len);
	strbuf_release(&sb);
	return rc;
}

/* P as JSON (JSON.stringify) into a new string (caller frees), or NULL. */
static char *json_quote(const char *p)
{
	json_t *s = json_string(p);
	char *q = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;

	json_decref(s);
	return q;
}

/* A file tool's answer: its code (the first field), the other fields in F (N at most, *NF of
 * them) and the offset of its payload in *REST. NULL when RES got the result instead: the
 * command was stopped, P was refused by the confinement (the SDK's messages, without the tool's
 * name), or the answer made no sense. */
static const char *file_answer(const struct tool_exec_out *o, const char *tool, const char *p,
			       long timeout_ms, const char **f, size_t n, size_t *nf, size_t *rest,
			       struct tool_result *res)
{
	const char *code[2];
	char *q;
	size_t k, after;

	if (o->cancelled)
		return result_fmt(res, 1, "%s: aborted", tool), NULL;
	if (o->timed_out)
		return result_fmt(res, 1, "%s: timed out after %ldms", tool, timeout_ms), NULL;
	k = out_fields(o, 0, code, 1, &after);
	if (k != 1 || strlen(code[0]) != 1)
		return answer_unexpected(res, tool, o), NULL;
	if (code[0][0] == 'E' || code[0][0] == 'X') {
		q = json_quote(p);
		if (!q)
			return result_oom(res), NULL;
		if (code[0][0] == 'X') {
			result_fmt(res, 1, "path %s is outside the session's working directory", q);
		} else {
			const char *why = out_fields(o, 0, code, 2, &k) == 2 ? code[1] : "";

			result_fmt(res, 1, "path %s: %s", q,
				   !strcmp(why, "loop") || strstr(why, "symbolic links")
					   ? "too many levels of symbolic links"
				   : strstr(why, "ermission denied") ? "permission denied"
								     : "i/o error");
		}
		free(q);
		return NULL;
	}
	*nf = out_fields(o, after, f, n, rest);
	return code[0];
}

/* ---- bash ---- */

/* Drop bash's saved state (the SDK starts a new shell). */
static void bash_reset(const struct tool_exec *x)
{
	struct args a = { 0 };
	struct tool_exec_out o = { 0 };
	char err[TOOLS_EXEC_ERR_MAX];

	args_script(&a, "sh", sh_reset);
	args_add(&a, x->workdir);
	if (!a.oom)
		x->run(x->ctx, a.v, NULL, 0, TOOLS_FILE_TIMEOUT_MS, TOOLS_ANSWER_SLACK, &o, err,
		       sizeof(err));
	tool_exec_out_release(&o);
	args_release(&a);
}

/* Append the N bytes at S to SB without ANSI escape sequences (the SDK's
 * /\x1b\[[0-9;?]*[ -\/]*[@-~]/g). */
static void ansi_strip(struct strbuf *sb, const char *s, size_t n)
{
	size_t i = 0, j;

	while (i < n) {
		if (s[i] == '\x1b' && i + 1 < n && s[i + 1] == '[') {
			j = i + 2;
			while (j < n &&
			       ((s[j] >= '0' && s[j] <= '9') || s[j] == ';' || s[j] == '?'))
				j++;
			while (j < n && s[j] >= ' ' && s[j] <= '/')
				j++;
			if (j < n && s[j] >= '@' && s[j] <= '~') {
				i = j + 1;
				continue;
			}
		}
		strbuf_addch(sb, s[i++]);
	}
}

static int tool_bash(const struct tool_exec *x, const json_t *in, struct tool_result *res)
{
	char sentinel[2 * TOOLS_TOKEN_BYTES + 16], tok[2 * TOOLS_TOKEN_BYTES + 1];
	struct strbuf sb = STRBUF_INIT;
	struct tool_exec_out o;
	struct args a = { 0 };
	const json_t *tv = json_object_get(in, "timeout_ms");
	long long timeout = TOOLS_BASH_TIMEOUT_MS;
	const char *cmd, *p;
	size_t len, n, skip = 0, after;
	long at;
	int restart, status, rc;

	if (in_str(in, "command", "bash", 0, &cmd, &len, res) < 0 ||
	    (restart = in_bool(in, "restart", "bash", res)) < 0)
		return 0;
	if (tv && !json_is_null(tv)) {
		if (!json_is_integer(tv) || json_integer_value(tv) < 0 ||
		    json_integer_value(tv) > TOOLS_BASH_TIMEOUT_MAX_MS)
			return result_fmt(
				res, 1,
				"bash: timeout_ms must be an integer from 0 to %d (0: the "
				"default, %d)",
				TOOLS_BASH_TIMEOUT_MAX_MS, TOOLS_BASH_TIMEOUT_MS);
		if (json_integer_value(tv))
			timeout = json_integer_value(tv);
	}
	if (!len) {
		if (!restart)
			return result_fmt(res, 1, "bash: command is required");
		bash_reset(x);
		return result_fmt(res, 0, "bash session restarted");
	}
	if (len > TOOLS_BASH_COMMAND_MAX)
		return result_fmt(res, 1, "bash: command is %zu bytes, over the %d-byte limit", len,
				  TOOLS_BASH_COMMAND_MAX);
	if (token(tok))
		return result_fmt(res, 1, "bash: no random bytes for the command's sentinel");
	snprintf(sentinel, sizeof(sentinel), "__terrarium_%s_", tok);
	args_script(&a, "bash", sh_bash);
	args_add(&a, x->workdir);
	args_add(&a, sentinel);
	args_add(&a, restart ? "1" : "0");
	for (size_t i = 0; i < len; i += n) {
		n = len - i < TOOLS_ARG_CHUNK ? len - i : TOOLS_ARG_CHUNK;
		args_addn(&a, cmd + i, n);
	}
	rc = exec_run(x, "bash", &a, NULL, 0, (long)timeout, TOOLS_OUTPUT_MAX, &o, res);
	args_release(&a);
	if (rc)
		return -1;
	at = o.cancelled || o.timed_out ? -1 : frame_find(&o, sentinel, &status, &after);
	if (at < 0) {
		/* the SDK's shell is gone after a timeout, an abort or an exit: the next call
		 * starts afresh */
		bash_reset(x);
		if (o.cancelled)
			rc = result_fmt(res, 1, "bash: This operation was aborted");
		else if (o.timed_out)
			rc = result_fmt(res, 1, "bash: bash command timed out after %lldms",
					timeout);
		else
			rc = result_fmt(res, 1, "bash: bash session terminated");
		tool_exec_out_release(&o);
		return rc;
	}
	/* a cut may have split a character: start at the next one */
	while (o.truncated && skip < 3 && skip < (size_t)at &&
	       ((unsigned char)o.output[skip] & 0xC0) == 0x80)
		skip++;
	if (o.truncated)
		strbuf_addstr(&sb, "[output truncated]\n");
	n = sb.len;
	ansi_strip(&sb, o.output + skip, (size_t)at - skip);
	while (sb.len > n && sb.buf[sb.len - 1] == '\n')
		strbuf_remove(&sb, sb.len - 1, 1);
	tool_exec_out_release(&o);
	if (sb.oom) {
		strbuf_release(&sb);
		return result_oom(res);
	}
	p = strbuf_str(&sb);
	if (status && sb.len == 0)
		rc = result_fmt(res, 1, "exit %d", status);
	else
		rc = result_set(res, status != 0, p, sb.len);
	strbuf_release(&sb);
	return rc;
}

/* ---- read, write, edit ---- */

/* A file's contents as the read script answered them. */
struct file_read {
	long long size;	  /* the file's size */
	const char *data; /* the file (when within the cap) or the range's lines; borrowed */
	size_t len;	  /* bytes of data */
	struct tool_exec_out out;
};

/* Read P (ABS resolved lexically) with the read script: the whole file when it is within
 * TOOLS_FILE_MAX, else (with START, the first line, and COUNT lines; START NULL: none) that
 * range. 0 with FR filled (release fr->out), 1 with RES a tool error (the SDK's messages with
 * TOOL's name), -1 (RES set). */
static int file_read(const struct tool_exec *x, const char *tool, const char *p, const char *abs,
		     const char *start, const char *count, struct file_read *fr,
		     struct tool_result *res)
{
	struct args a = { 0 };
	const char *code, *f[1];
	size_t nf, rest;
	int rc;

	memset(fr, 0, sizeof(*fr));
	args_script(&a, "sh", sh_read);
	args_add(&a, x->workdir);
	args_add(&a, abs);
	args_addf(&a, "%d", TOOLS_FILE_MAX);
	args_addf(&a, "%d", TOOLS_FILE_MAX + 1);
	args_add(&a, start ? start : "");
	args_add(&a, count ? count : "");
	rc = exec_run(x, tool, &a, NULL, 0, TOOLS_FILE_TIMEOUT_MS,
		      TOOLS_FILE_MAX + 1 + TOOLS_ANSWER_SLACK, &fr->out, res);
	args_release(&a);
	if (rc)
		return -1;
	code = file_answer(&fr->out, tool, p, TOOLS_FILE_TIMEOUT_MS, f, 1, &nf, &rest, res);
	if (!code)
		rc = res->text ? 1 : -1;
	else if (*code == 'N')
		rc = result_fmt(res, 1, "%s: %s: no such file or directory", tool, p) ? -1 : 1;
	else if (*code == 'F')
		rc = result_fmt(res, 1, "%s: %s is not a regular file", tool, p) ? -1 : 1;
	else if (*code == 'P')
		rc = result_fmt(res, 1, "%s: %s: permission denied", tool, p) ? -1 : 1;
	else if (*code != 'K' || nf != 1)
		rc = answer_unexpected(res, tool, &fr->out) ? -1 : 1;
	if (rc) {
		tool_exec_out_release(&fr->out);
		return rc;
	}
	fr->size = strtoll(f[0], NULL, 10);
	fr->data = fr->out.output + rest;
	fr->len = fr->out.len - rest;
	return 0;
}

/* Lines [START, END) of the N bytes at S (split at '\n', joined with '\n': the SDK's
 * lines.slice(start, end).join('\n')) into SB. END < 0: to the end. */
static void lines_slice(struct strbuf *sb, const char *s, size_t n, long long start, long long end)
{
	long long line = 0;
	size_t i = 0;

	while (i <= n && (end < 0 || line < end)) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t e = nl ? (size_t)(nl - s) : n;

		if (line >= start) {
			if (line > start)
				strbuf_addch(sb, '\n');
			strbuf_add(sb, s + i, e - i);
		}
		if (!nl)
			break;
		i = e + 1;
		line++;
	}
}

static int tool_read(const struct tool_exec *x, const json_t *in, struct tool_result *res)
{
	const json_t *vr = json_object_get(in, "view_range");
	struct strbuf abs = STRBUF_INIT, sb = STRBUF_INIT;
	struct file_read fr;
	long long first = 0, last = 0, start = 0, end = -1;
	char s_start[32], s_count[32];
	const char *p;
	size_t len;
	int ranged = 0, rc;

	if (in_required(in, "file_path", "read", 0, &p, &len, res) < 0)
		return 0;
	if (vr && !json_is_null(vr)) {
		if (!json_is_array(vr) ||
		    (json_array_size(vr) &&
		     (json_array_size(vr) != 2 || !json_is_integer(json_array_get(vr, 0)) ||
		      !json_is_integer(json_array_get(vr, 1)))))
			return result_fmt(res, 1,
					  "read: view_range must be [start_line, end_line]");
		ranged = json_array_size(vr) == 2;
	}
	if (ranged) {
		first = json_integer_value(json_array_get(vr, 0));
		last = json_integer_value(json_array_get(vr, 1));
		start = first > 1 ? first - 1 : 0;
		end = last > 0 ? last : -1;
		snprintf(s_start, sizeof(s_start), "%lld", start + 1);
		if (end < 0)
			snprintf(s_count, sizeof(s_count), "%s", TOOLS_NO_LIMIT);
		else
			snprintf(s_count, sizeof(s_count), "%lld", end > start ? end - start : 0);
	}
	if (path_abs(x->workdir, p, &abs))
		return result_oom(res);
	rc = file_read(x, "read", p, abs.buf, ranged ? s_start : NULL, ranged ? s_count : NULL, &fr,
		       res);
	strbuf_release(&abs);
	if (rc)
		return rc < 0 ? -1 : 0;
	if (fr.size <= TOOLS_FILE_MAX && fr.len > TOOLS_FILE_MAX)
		fr.size = (long long)fr.len; /* it grew while read */
	if (fr.size <= TOOLS_FILE_MAX) {
		if (ranged)
			lines_slice(&sb, fr.data, fr.len, start, end);
		else
			strbuf_add(&sb, fr.data, fr.len);
	} else if (!ranged) {
		rc = result_fmt(
			res, 1,
			"read: %s is %lld bytes, exceeds %d-byte limit. Use the view_range "
			"parameter to read specific line ranges, e.g. view_range: [1, 500].",
			p, fr.size, TOOLS_FILE_MAX);
		goto out;
	} else {
		/* the range's lines as head -n gave them: a range that ends inside the file loses
		 * the newline of its last line (the SDK's LineRangeCollector) */
		size_t newlines = 0;

		for (size_t i = 0; i < fr.len; i++)
			newlines += fr.data[i] == '\n';
		len = fr.len;
		if (end >= 0 && (long long)newlines == end - start && len)
			len--;
		if (len > TOOLS_FILE_MAX) {
			if (end - start == 1)
				rc = result_fmt(
					res, 1,
					"read: line %lld of %s alone exceeds %d-byte limit. The "
					"read tool cannot return part of a line, so view_range "
					"cannot narrow this further.",
					start + 1, p, TOOLS_FILE_MAX);
			else
				rc = result_fmt(
					res, 1,
					"read: view_range [%lld, %lld] of %s exceeds %d-byte "
					"limit. Narrow the view_range to read a smaller portion.",
					first, last, p, TOOLS_FILE_MAX);
			goto out;
		}
		if (end < 0 || end > start)
			strbuf_add(&sb, fr.data, len);
	}
	rc = sb.oom ? result_oom(res) : result_set(res, 0, sb.buf ? sb.buf : "", sb.len);
out:
	strbuf_release(&sb);
	tool_exec_out_release(&fr.out);
	return rc;
}

/* Write the LEN bytes of DATA to P (ABS resolved lexically) through a temporary file beside it
 * and a rename; PREFIX starts the error messages ("write: ", "edit: write: "). Contents go on
 * the command's stdin when X takes it, else in base64 arguments of at most TOOLS_ARG_CHUNK
 * bytes, TOOLS_ARGV_MAX bytes a command. 0 (written), 1 (RES a tool error), -1 (RES set). */
static int file_write(const struct tool_exec *x, const char *tool, const char *prefix,
		      const char *p, const char *abs, const char *data, size_t len,
		      struct tool_result *res)
{
	const size_t chunk = TOOLS_ARG_CHUNK / 4 * 3, batch = TOOLS_ARGV_MAX / TOOLS_ARG_CHUNK;
	char tok[2 * TOOLS_TOKEN_BYTES + 1], flags[4], *b64 = NULL;
	struct tool_exec_out o;
	const char *code, *why;
	size_t off = 0, nf, rest;
	int rc = 0;

	if (token(tok))
		return result_fmt(res, 1, "%s%s: no random bytes for a temporary name", prefix, p)
			       ? -1
			       : 1;
	if (!x->stdin_ok && !(b64 = malloc(TOOLS_ARG_CHUNK + 1)))
		return result_oom(res);
	do {
		struct args a = { 0 };
		size_t end = x->stdin_ok || len - off <= batch * chunk ? len : off + batch * chunk;

		snprintf(flags, sizeof(flags), "%s%s%s", off ? "" : "c", x->stdin_ok ? "i" : "",
			 end == len ? "f" : "");
		args_script(&a, "sh", sh_write);
		args_add(&a, x->workdir);
		args_add(&a, abs);
		args_add(&a, tok);
		args_add(&a, flags);
		for (; !x->stdin_ok && off < end; off += chunk) {
			size_t n = end - off < chunk ? end - off : chunk;

			base64_encode((const unsigned char *)data + off, n, b64);
			args_add(&a, b64);
		}
		off = end;
		rc = exec_run(x, tool, &a, x->stdin_ok ? data : NULL, x->stdin_ok ? len : 0,
			      TOOLS_FILE_TIMEOUT_MS, TOOLS_ANSWER_SLACK, &o, res);
		args_release(&a);
		if (rc)
			break;
		code = file_answer(&o, tool, p, TOOLS_FILE_TIMEOUT_MS, NULL, 0, &nf, &rest, res);
		why = !code	     ? NULL
		      : *code == 'D' ? "is a directory"
		      : *code == 'T' ? "not a directory"
		      : *code == 'P' ? "permission denied"
		      : *code == 'I' ? "i/o error"
				     : NULL;
		if (!code)
			rc = res->text ? 1 : -1;
		else if (why)
			rc = result_fmt(res, 1, "%s%s: %s", prefix, p, why) ? -1 : 1;
		else if (*code != 'K')
			rc = answer_unexpected(res, tool, &o) ? -1 : 1;
		tool_exec_out_release(&o);
	} while (!rc && off < len);
	free(b64);
	return rc;
}

static int tool_write(const struct tool_exec *x, const json_t *in, struct tool_result *res)
{
	struct strbuf abs = STRBUF_INIT;
	const char *p, *content;
	size_t plen, len;
	int rc;

	if (in_required(in, "file_path", "write", 0, &p, &plen, res) < 0 ||
	    in_str(in, "content", "write", 1, &content, &len, res) < 0)
		return 0;
	if (path_abs(x->workdir, p, &abs))
		return result_oom(res);
	rc = file_write(x, "write", "write: ", p, abs.buf, content ? content : "", len, res);
	strbuf_release(&abs);
	if (rc)
		return rc < 0 ? -1 : 0;
	return result_fmt(res, 0, "wrote %zu bytes to %s", len, p);
}

static int tool_edit(const struct tool_exec *x, const json_t *in, struct tool_result *res)
{
	struct strbuf abs = STRBUF_INIT, sb = STRBUF_INIT;
	const char *p, *old, *repl, *at, *s;
	size_t plen, olen, nlen, count = 0, left;
	struct file_read fr = { 0 };
	int all, rc;

	if (in_required(in, "file_path", "edit", 0, &p, &plen, res) < 0 ||
	    in_required(in, "old_string", "edit", 1, &old, &olen, res) < 0 ||
	    (all = in_bool(in, "replace_all", "edit", res)) < 0)
		return 0;
	rc = in_str(in, "new_string", "edit", 1, &repl, &nlen, res);
	if (rc <= 0)
		return rc < 0 ? 0 : result_fmt(res, 1, "edit: new_string is required");
	if (path_abs(x->workdir, p, &abs)) {
		rc = result_oom(res);
		goto out;
	}
	rc = file_read(x, "edit", p, abs.buf, NULL, NULL, &fr, res);
	if (rc)
		goto out;
	if (fr.size > TOOLS_FILE_MAX || fr.len > TOOLS_FILE_MAX) {
		rc = result_fmt(
			res, 1,
			"edit: %s is %lld bytes, exceeds %d-byte limit. The edit tool loads "
			"the whole file and cannot modify a file this large.",
			p, fr.size, TOOLS_FILE_MAX);
		goto out;
	}
	/* occurrences as the SDK's data.split(old_string): left to right, not overlapping */
	for (s = fr.data, left = fr.len; (at = memmem(s, left, old, olen)); count++) {
		left -= (size_t)(at - s) + olen;
		s = at + olen;
	}
	if (!count) {
		rc = result_fmt(res, 1, "edit: old_string not found in %s", p);
		goto out;
	}
	if (count > 1 && !all) {
		rc = result_fmt(res, 1, "edit: old_string appears %zu times in %s (must be unique)",
				count, p);
		goto out;
	}
	if (fr.len - count * olen + count * nlen > TOOLS_EDIT_MAX) {
		rc = result_fmt(res, 1, "edit: the edited %s would be over the %d-byte limit", p,
				TOOLS_EDIT_MAX);
		goto out;
	}
	for (s = fr.data, left = fr.len; (at = memmem(s, left, old, olen));) {
		strbuf_add(&sb, s, (size_t)(at - s));
		strbuf_add(&sb, repl, nlen);
		left -= (size_t)(at - s) + olen;
		s = at + olen;
	}
	strbuf_add(&sb, s, left);
	if (sb.oom) {
		rc = result_oom(res);
		goto out;
	}
	rc = file_write(x, "edit", "edit: write: ", p, abs.buf, strbuf_str(&sb), sb.len, res);
	if (!rc)
		rc = result_fmt(res, 0, "edited %s (%zu replacement(s))", p, count);
out:
	strbuf_release(&abs);
	strbuf_release(&sb);
	tool_exec_out_release(&fr.out);
	return rc < 0 ? -1 : 0;
}

/* ---- glob ---- */

/* The patterns a glob pattern expands to, each split into its segments. */
struct glob_pats {
	char *text[TOOLS_GLOB_PATTERNS_MAX];
	char *seg[TOOLS_GLOB_PATTERNS_MAX][TOOLS_GLOB_DEPTH_MAX];
	size_t nseg[TOOLS_GLOB_PATTERNS_MAX];
	size_t n;
	int globstar; /* some pattern has a ** segment */
	int extglob;  /* some pattern has an extglob group: find cannot prefilter it */
};

/* Add what S expands to (its {a,b} braces, as minimatch's brace expansion; a brace without a
 * comma is literal) from offset FROM on. 0, or -1 past TOOLS_GLOB_PATTERNS_MAX or out of
 * memory. */
static int brace_expand(struct glob_pats *g, const char *s, size_t from)
{
	size_t i, j, k, a, depth, commas, n = strlen(s);

	for (i = from; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n) {
			i++;
			continue;
		}
		if (s[i] != '{')
			continue;
		for (depth = 0, commas = 0, j = i; j < n; j++) {
			if (s[j] == '\\' && j + 1 < n)
				j++;
			else if (s[j] == '{')
				depth++;
			else if (s[j] == '}' && --depth == 0)
				break;
			else if (s[j] == ',' && depth == 1)
				commas++;
		}
		if (j >= n || !commas)
			continue;
		for (depth = 0, a = i + 1, k = i + 1; k <= j; k++) {
			if (s[k] == '\\' && k + 1 < j) {
				k++;
			} else if (s[k] == '{') {
				depth++;
			} else if (s[k] == '}' && k < j) {
				depth--;
			} else if ((s[k] == ',' && !depth) || k == j) {
				char *alt = malloc(n + 1);
				int rc;

				if (!alt)
					return -1;
				memcpy(alt, s, i);
				memcpy(alt + i, s + a, k - a);
				memcpy(alt + i + (k - a), s + j + 1, n - j);
				rc = brace_expand(g, alt, i);
				free(alt);
				if (rc)
					return -1;
				a = k + 1;
			}
		}
		return 0;
	}
	if (g->n >= TOOLS_GLOB_PATTERNS_MAX || !(g->text[g->n] = strdup(s)))
		return -1;
	g->n++;
	return 0;
}

static void glob_pats_release(struct glob_pats *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->text[i]);
	g->n = 0;
}

/* Split each pattern into its segments ("." and empty ones dropped, a run of ** kept once). -1
 * when one is deeper than TOOLS_GLOB_DEPTH_MAX. */
static int glob_split(struct glob_pats *g)
{
	for (size_t i = 0; i < g->n; i++) {
		char *s = g->text[i], *save = NULL, *t;
		size_t len = strlen(s), n = 0;
		int dir_only = len && s[len - 1] == '/';

		for (t = strtok_r(s, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
			if (!strcmp(t, ".") ||
			    (n && !strcmp(t, "**") && !strcmp(g->seg[i][n - 1], "**")))
				continue;
			if (n >= TOOLS_GLOB_DEPTH_MAX)
				return -1;
			g->seg[i][n++] = t;
			g->globstar |= !strcmp(t, "**");
			for (const char *c = t; *c; c++)
				g->extglob |= strchr("?*+@!", *c) && c[1] == '(';
		}
		/* a pattern ending in '/' names directories: never a file */
		g->nseg[i] = dir_only ? 0 : n;
	}
	return 0;
}

/* Whether the pattern segments P (M) match the path segments S (N) as minimatch without `dot`:
 * * ? [] and extglob within a segment, ** for any number of segments; neither matches a name
 * starting with '.' unless the pattern's segment does. */
static int glob_match(char *const *p, size_t m, char *const *s, size_t n)
{
	unsigned char next[TOOLS_GLOB_DEPTH_MAX + 1], cur[TOOLS_GLOB_DEPTH_MAX + 1];

	if (!m)
		return 0;
	for (size_t j = 0; j <= n; j++)
		next[j] = j == n;
	for (size_t i = m; i-- > 0;) {
		int star = !strcmp(p[i], "**");

		for (size_t j = n + 1; j-- > 0;) {
			if (star)
				cur[j] = next[j] || (j < n && s[j][0] != '.' && cur[j + 1]);
			else
				cur[j] = j < n && next[j + 1] &&
					 !fnmatch(p[i], s[j], FNM_PERIOD | FNM_EXTMATCH);
		}
		memcpy(next, cur, n + 1);
	}
	return next[0];
}

/* find's expression for the walk: no .git or node_modules, regular files, as deep as the
 * patterns go, and (unless an extglob needs more) only paths the patterns could match (-path
 * sees '/' as any character and ** as *: a superset), printed as "MTIME PATH\0". */
static void glob_find_args(struct args *a, const struct glob_pats *g)
{
	size_t depth = 0, i, k;

	for (i = 0; i < g->n; i++)
		depth = g->nseg[i] > depth ? g->nseg[i] : depth;
	if (!g->globstar) {
		args_add(a, "-maxdepth");
		args_addf(a, "%zu", depth);
	}
	args_add(a, "(");
	args_add(a, "-name");
	args_add(a, ".git");
	args_add(a, "-o");
	args_add(a, "-name");
	args_add(a, "node_modules");
	args_add(a, ")");
	args_add(a, "-prune");
	args_add(a, "-o");
	args_add(a, "-type");
	args_add(a, "f");
	if (!g->extglob) {
		args_add(a, "(");
		for (i = 0, k = 0; i < g->n; i++) {
			struct strbuf sb = STRBUF_INIT;

			if (!g->nseg[i])
				continue;
			strbuf_addstr(&sb, "./");
			for (size_t j = 0; j < g->nseg[i]; j++) {
				int star = !strcmp(g->seg[i][j], "**");

				strbuf_addstr(&sb, star ? "*" : g->seg[i][j]);
				if (!star && j + 1 < g->nseg[i])
					strbuf_addch(&sb, '/');
			}
			if (k++)
				args_add(a, "-o");
			args_add(a, "-path");
			args_add(a, strbuf_str(&sb));
			a->oom |= sb.oom;
			strbuf_release(&sb);
		}
		if (!k)
			args_add(a, "-false");
		args_add(a, ")");
	}
	args_add(a, "-printf");
	args_add(a, "%T@ %P\\0");
}

struct glob_hit {
	long long sec;
	long nsec;
	const char *path; /* borrowed from the walk's output */
};

/* Newest first; the same time: by path. */
static int glob_hit_cmp(const void *x, const void *y)
{
	const struct glob_hit *a = x, *b = y;

	if (a->sec != b->sec)
		return a->sec < b->sec ? 1 : -1;
	if (a->nsec != b->nsec)
		return a->nsec < b->nsec ? 1 : -1;
	return strcmp(a->path, b->path);
}

/* find's %T@ ("1700000000.1234567890") into seconds and nanoseconds. */
static void glob_mtime(const char *s, long long *sec, long *nsec)
{
	char *end;
	long scale = 100000000;

	*sec = strtoll(s, &end, 10);
	*nsec = 0;
	if (*end == '.')
		for (end++; *end >= '0' && *end <= '9' && scale; end++, scale /= 10)
			*nsec += (*end - '0') * scale;
}

static int tool_glob(const struct tool_exec *x, const json_t *in, struct tool_result *res)
{
	struct glob_pats *g = calloc(1, sizeof(*g));
	struct strbuf abs = STRBUF_INIT, sb = STRBUF_INIT;
	struct glob_hit *hits = NULL;
	struct tool_exec_out o = { 0 };
	struct args a = { 0 };
	const char *pattern, *path, *code, *root, *f[1];
	char *segs[TOOLS_GLOB_DEPTH_MAX], copy[PATH_MAX];
	size_t plen, len, nf, rest, nhits = 0, alloc = 0, i;
	int rc;

	if (!g)
		return result_oom(res);
	if (in_required(in, "pattern", "glob", 0, &pattern, &plen, res) < 0 ||
	    in_str(in, "path", "glob", 0, &path, &len, res) < 0) {
		rc = 0;
		goto out;
	}
	if (pattern[0] == '/') {
		rc = result_fmt(
			res, 1,
			"glob: absolute pattern not permitted; pass a relative pattern (and "
			"optionally path)");
		goto out;
	}
	/* the SDK's patternCanAscend: ".." between any of \ / { } , */
	for (const char *s = pattern; *s; s += strcspn(s, "\\/{},"), s += !!*s)
		if (s[0] == '.' && s[1] == '.' && (!s[2] || strchr("\\/{},", s[2]))) {
			rc = result_fmt(res, 1, "glob: \"..\" is not permitted in the pattern");
			goto out;
		}
	if (brace_expand(g, pattern, 0) || glob_split(g)) {
		rc = result_fmt(res, 1,
				"glob: the pattern expands to more than %d patterns or is deeper "
				"than %d directories",
				TOOLS_GLOB_PATTERNS_MAX, TOOLS_GLOB_DEPTH_MAX);
		goto out;
	}
	if (path_abs(x->workdir, len ? path : ".", &abs)) {
		rc = result_oom(res);
		goto out;
	}
	args_script(&a, "sh", sh_glob);
	args_add(&a, x->workdir);
	args_add(&a, abs.buf);
	args_addf(&a, "%d", TOOLS_WALK_MAX);
	args_addf(&a, "%d", TOOLS_WALK_OUTPUT_MAX);
	glob_find_args(&a, g);
	rc = exec_run(x, "glob", &a, NULL, 0, TOOLS_FILE_TIMEOUT_MS,
		      TOOLS_WALK_OUTPUT_MAX + PATH_MAX + TOOLS_ANSWER_SLACK, &o, res);
	if (rc)
		goto out;
	code = file_answer(&o, "glob", len ? path : ".", TOOLS_FILE_TIMEOUT_MS, f, 1, &nf, &rest,
			   res);
	if (!code) {
		rc = res->text ? 0 : -1;
		goto out;
	}
	if (*code != 'K' || nf != 1) {
		rc = answer_unexpected(res, "glob", &o);
		goto out;
	}
	root = f[0];
	/* each entry "MTIME PATH\0"; a last one cut short has no NUL */
	for (i = rest; i < o.len && nhits < TOOLS_WALK_MAX;) {
		char *entry = o.output + i, *end = memchr(entry, '\0', o.len - i), *sp,
		     *save = NULL;
		size_t n = 0;

		if (!end)
			break;
		i = (size_t)(end - o.output) + 1;
		sp = strchr(entry, ' ');
		if (!sp || strlen(sp + 1) >= sizeof(copy))
			continue;
		strcpy(copy, sp + 1);
		for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
			if (n >= TOOLS_GLOB_DEPTH_MAX) {
				n = 0;
				break;
			}
			segs[n++] = t;
		}
		for (size_t k = 0; n && k < g->n; k++) {
			if (!glob_match(g->seg[k], g->nseg[k], segs, n))
				continue;
			if (nhits == alloc) {
				struct glob_hit *more;

				alloc = alloc ? 2 * alloc : TOOLS_GLOB_MAX;
				more = realloc(hits, alloc * sizeof(*hits));
				if (!more) {
					rc = result_oom(res);
					goto out;
				}
				hits = more;
			}
			glob_mtime(entry, &hits[nhits].sec, &hits[nhits].nsec);
			hits[nhits++].path = sp + 1;
			break;
		}
	}
	if (!nhits) {
		rc = result_fmt(res, 0, "no matches");
		goto out;
	}
	qsort(hits, nhits, sizeof(*hits), glob_hit_cmp);
	for (i = 0; i < nhits && i < TOOLS_GLOB_MAX; i++)
		strbuf_addf(&sb, "%s%s%s%s", i ? "\n" : "", root, strcmp(root, "/") ? "/" : "",
			    hits[i].path);
	rc = sb.oom ? result_oom(res) : result_set(res, 0, sb.buf, sb.len);
out:
	glob_pats_release(g);
	free(g);
	free(hits);
	args_release(&a);
	tool_exec_out_release(&o);
	strbuf_release(&abs);
	strbuf_release(&sb);
	return rc < 0 ? -1 : 0;
}

/* ---- grep ---- */

/* Add to SB the whole lines of the N bytes at S, joined with '\n', while they fit the SDK's
 * budget of TOOLS_OUTPUT_MAX (each line and its newline); past it the SDK's note. A last line
 * without its newline counts only when COMPLETE. Returns how many lines were added. */
static size_t grep_lines(struct strbuf *sb, const char *s, size_t n, int complete)
{
	long budget = TOOLS_OUTPUT_MAX;
	size_t i = 0, k = 0;

	while (i < n) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t e = nl ? (size_t)(nl - s) : n;

		if (!nl && !complete && n <= TOOLS_OUTPUT_MAX)
			break;
		budget -= (long)(e - i) + 1;
		if (budget < 0) {
			strbuf_addf(sb, "%s[output truncated at %d bytes]", k ? "\n" : "",
				    TOOLS_OUTPUT_MAX);
			return k + 1;
		}
		if (k++)
			strbuf_addch(sb, '\n');
		strbuf_add(sb, s + i, e - i);
		i = e + 1;
	}
	return k;
}

static int tool_grep(const struct tool_exec *x, const json_t *in, struct tool_result *res)
{
	char sentinel[2 * TOOLS_TOKEN_BYTES + 16], tok[2 * TOOLS_TOKEN_BYTES + 1];
	struct strbuf abs = STRBUF_INIT, sb = STRBUF_INIT, err = STRBUF_INIT;
	struct tool_exec_out o = { 0 };
	struct args a = { 0 };
	const char *pattern, *path, *kind = "", *data;
	size_t plen, len, after = 0, n, nf, rest;
	long at = -1;
	int rc, status = -1, timed_out;

	rc = in_required(in, "pattern", "grep", 0, &pattern, &plen, res);
	if (rc < 0 || in_str(in, "path", "grep", 0, &path, &len, res) < 0)
		return 0;
	if (token(tok))
		return result_fmt(res, 1, "grep: no random bytes for the command's sentinel");
	snprintf(sentinel, sizeof(sentinel), "__terrarium_%s_", tok);
	if (path_abs(x->workdir, len ? path : ".", &abs))
		return result_oom(res);
	args_script(&a, "bash", sh_grep);
	args_add(&a, x->workdir);
	args_add(&a, abs.buf);
	args_add(&a, pattern);
	args_addf(&a, "%d.%03d", TOOLS_GREP_TIMEOUT_MS / 1000, TOOLS_GREP_TIMEOUT_MS % 1000);
	args_addf(&a, "%d", TOOLS_OUTPUT_MAX + 1);
	args_add(&a, sentinel);
	args_addf(&a, "%d", TOOLS_STDERR_MAX);
	/* the time limit is timeout(1)'s; this one only backs it up */
	rc = exec_run(x, "grep", &a, NULL, 0, TOOLS_GREP_TIMEOUT_MS + TOOLS_FILE_TIMEOUT_MS,
		      TOOLS_OUTPUT_MAX + 1 + TOOLS_STDERR_MAX + TOOLS_ANSWER_SLACK, &o, res);
	args_release(&a);
	strbuf_release(&abs);
	if (rc)
		return -1;
	if (o.cancelled) {
		rc = result_fmt(res, 1, "grep: aborted");
		goto out;
	}
	if (o.timed_out) {
		/* only the backup limit stopped it: what came before is the matches */
		rest = o.len && o.output[0] == 'K' && o.len > 1 && !o.output[1] ? 2 : 0;
	} else {
		const char *code = file_answer(&o, "grep", len ? path : ".", TOOLS_GREP_TIMEOUT_MS,
					       NULL, 0, &nf, &rest, res);

		if (!code) {
			rc = res->text ? 0 : -1;
			goto out;
		}
		at = frame_find(&o, sentinel, &status, &after);
		if (*code != 'K' || at < (long)rest) {
			rc = answer_unexpected(res, "grep", &o);
			goto out;
		}
	}
	timed_out = o.timed_out || status == TOOLS_TIMEOUT_STATUS;
	data = o.output ? o.output + rest : "";
	/* without the newline printed before the sentinel */
	n = at >= 0 ? (size_t)at - rest - ((size_t)at > rest && o.output[at - 1] == '\n')
		    : o.len - rest;
	if (at >= 0) {
		const char *k = o.output + after, *nl = memchr(k, '\n', o.len - after);

		kind = nl && nl - k == 2 && !memcmp(k, "rg", 2) ? "rg" : "grep";
		if (nl)
			strbuf_add(&err, nl + 1, o.len - (size_t)(nl + 1 - o.output));
		while (err.len && (err.buf[err.len - 1] == '\n' || err.buf[err.len - 1] == '\r'))
			strbuf_remove(&err, err.len - 1, 1);
	}
	if (timed_out) {
		/* the SDK's walker: what was found, with a note, or an error */
		if (!grep_lines(&sb, data, n, 0)) {
			rc = result_fmt(res, 1, "grep: timed out after %ds",
					TOOLS_GREP_TIMEOUT_MS / 1000);
			goto out;
		}
		strbuf_addf(&sb, "\n[the search was cut short after %d ms]", TOOLS_GREP_TIMEOUT_MS);
	} else if (!strcmp(kind, "rg")) {
		if (n > TOOLS_OUTPUT_MAX) {
			strbuf_add(&sb, data, TOOLS_OUTPUT_MAX);
			strbuf_addf(&sb, "\n[output truncated at %d bytes]", TOOLS_OUTPUT_MAX);
		} else if (status == 0) {
			strbuf_add(&sb, data, n);
		} else if (status == 1) {
			strbuf_addstr(&sb, "no matches");
		} else {
			if (err.len)
				rc = result_fmt(res, 1, "grep: rg failed: %s", err.buf);
			else
				rc = result_fmt(res, 1, "grep: rg failed: exit %d", status);
			goto out;
		}
	} else {
		/* grep -r as the SDK's walker: a bad regex is an error, unreadable files are
		 * skipped */
		if (status > 1 && err.len) {
			const char *msg = err.buf;

			if (!strncmp(msg, "grep: ", 6))
				msg += 6;
			rc = result_fmt(res, 1, "grep: invalid regex: %s", msg);
			goto out;
		}
		if (!grep_lines(&sb, data, n, 1))
			strbuf_addstr(&sb, "no matches");
	}
	rc = sb.oom ? result_oom(res) : result_set(res, 0, sb.buf, sb.len);
out:
	strbuf_release(&sb);
	strbuf_release(&err);
	tool_exec_out_release(&o);
	return rc < 0 ? -1 : 0;
}

/* ---- the toolset ---- */

/* The agent toolset's tools, in the SDK's order, with the SDK's definitions (betaTool's
 * output for betaAgentToolset20260401: type, name, input_schema, description). */
static const struct builtin {
	const char *name;
	const char *definition;
	int (*run)(const struct tool_exec *x, const json_t *input, struct tool_result *res);
} builtins[] = {
	{ "bash",
	  "{\"type\":\"custom\",\"name\":\"bash\",\"input_schema\":{\"type\":\"object\","
	  "\"properties\":{\"command\":{\"type\":\"string\",\"description\":\"The command to "
	  "run\"},\"restart\":{\"type\":\"boolean\",\"description\":\"Restart the persistent "
	  "shell before running\"},\"timeout_ms\":{\"type\":\"integer\",\"description\":\"Per-"
	  "call timeout in milliseconds\"}}},\"description\":\"Run a bash command in a "
	  "persistent shell. State (cwd, env vars) persists across calls.\"}",
	  tool_bash },
	{ "read",
	  "{\"type\":\"custom\",\"name\":\"read\",\"input_schema\":{\"type\":\"object\","
	  "\"properties\":{\"file_path\":{\"type\":\"string\"},\"view_range\":{\"type\":"
	  "\"array\",\"items\":{\"type\":\"integer\"},\"description\":\"[start_line, end_line] "
	  "1-indexed inclusive\"}},\"required\":[\"file_path\"]},\"description\":\"Read a UTF-8 "
	  "text file relative to the workdir.\"}",
	  tool_read },
	{ "write",
	  "{\"type\":\"custom\",\"name\":\"write\",\"input_schema\":{\"type\":\"object\","
	  "\"properties\":{\"file_path\":{\"type\":\"string\"},\"content\":{\"type\":"
	  "\"string\"}},\"required\":[\"file_path\",\"content\"]},\"description\":\"Write a "
	  "UTF-8 text file relative to the workdir, creating parent directories as needed.\"}",
	  tool_write },
	{ "edit",
	  "{\"type\":\"custom\",\"name\":\"edit\",\"input_schema\":{\"type\":\"object\","
	  "\"properties\":{\"file_path\":{\"type\":\"string\"},\"old_string\":{\"type\":"
	  "\"string\"},\"new_string\":{\"type\":\"string\"},\"replace_all\":{\"type\":"
	  "\"boolean\"}},\"required\":[\"file_path\",\"old_string\",\"new_string\"]},"
	  "\"description\":\"Replace old_string with new_string in a file. old_string must be "
	  "unique unless replace_all.\"}",
	  tool_edit },
	{ "glob",
	  "{\"type\":\"custom\",\"name\":\"glob\",\"input_schema\":{\"type\":\"object\","
	  "\"properties\":{\"pattern\":{\"type\":\"string\"},\"path\":{\"type\":\"string\","
	  "\"description\":\"Directory to search in. Defaults to the workdir.\"}},\"required\":"
	  "[\"pattern\"]},\"description\":\"Match files under the workdir against a glob "
	  "pattern. Results are mtime-sorted, newest first.\"}",
	  tool_glob },
	{ "grep",
	  "{\"type\":\"custom\",\"name\":\"grep\",\"input_schema\":{\"type\":\"object\","
	  "\"properties\":{\"pattern\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"}},"
	  "\"required\":[\"pattern\"]},\"description\":\"Search file contents for a regex. Uses "
	  "ripgrep if available, otherwise a built-in walker.\"}",
	  tool_grep },
};

#define BUILTINS_N (sizeof(builtins) / sizeof(builtins[0]))

int tools_run(const struct tool_exec *x, const char *name, const json_t *input,
	      struct tool_result *res)
{
	memset(res, 0, sizeof(*res));
	for (size_t i = 0; i < BUILTINS_N; i++) {
		if (strcmp(builtins[i].name, name))
			continue;
		if (!json_is_object(input))
			return result_fmt(res, 1, "%s: input must be an object", name);
		return builtins[i].run(x, input, res);
	}
	return result_fmt(res, 1, "unknown tool %s", name);
}

/* ---- what an agent offers ---- */

#define TOOLSET_CUSTOM "custom"
#define TOOLSET_MCP "mcp_toolset"
#define TOOLSET_PATH_MAX 64 /* "tools[N]"; the paths below it get twice as much */

static const char *const kind_names[] = { [TOOL_UNKNOWN] = "unknown",
					  [TOOL_BUILTIN] = "builtin",
					  [TOOL_CUSTOM] = "custom",
					  [TOOL_MCP] = "mcp" };
static const char *const policy_names[] = {
	[TOOL_ALLOW] = "always_allow", [TOOL_ASK] = "always_ask"
};

/* The agent toolset's tools an agent may configure but that are never offered here: they run
 * outside the sandbox and need a network (docs/api.md). */
static const char *const builtins_unoffered[] = { "web_fetch", "web_search" };

static int load_fail(char *err, size_t errsz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int load_fail(char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	return -1;
}

/* The name of policy P. */
static json_t *policy_json(enum tool_policy p)
{
	return json_string(policy_names[p]);
}

/* The enabled and permission_policy members of the object C at PATH (absent or null: keep what
 * *ENABLED and *POLICY hold). "auto" is always_ask. 0 or -1 with ERR set. */
static int config_read(const json_t *c, const char *path, int *enabled, enum tool_policy *policy,
		       char *err, size_t errsz)
{
	const json_t *e = json_object_get(c, "enabled"),
		     *pp = json_object_get(c, "permission_policy");
	const char *type;

	if (e && !json_is_null(e)) {
		if (!json_is_boolean(e))
			return load_fail(err, errsz, "'%s.enabled' must be a boolean or null",
					 path);
		*enabled = json_is_true(e);
	}
	if (!pp || json_is_null(pp))
		return 0;
	type = json_string_value(json_object_get(pp, "type"));
	if (!json_is_object(pp) || !type ||
	    (strcmp(type, "always_allow") && strcmp(type, "always_ask") && strcmp(type, "auto")))
		return load_fail(err, errsz,
				 "'%s.permission_policy' must be {\"type\": \"always_allow\"}, "
				 "{\"type\": \"always_ask\"} or {\"type\": \"auto\"}",
				 path);
	*policy = strcmp(type, "always_allow") ? TOOL_ASK : TOOL_ALLOW;
	return 0;
}

/* The default_config of the toolset T at PATH onto *ENABLED and *POLICY. */
static int default_config_read(const json_t *t, const char *path, int *enabled,
			       enum tool_policy *policy, char *err, size_t errsz)
{
	const json_t *d = json_object_get(t, "default_config");
	char sub[2 * TOOLSET_PATH_MAX];

	if (!d || json_is_null(d))
		return 0;
	snprintf(sub, sizeof(sub), "%s.default_config", path);
	if (!json_is_object(d))
		return load_fail(err, errsz, "'%s' must be an object or null", sub);
	return config_read(d, sub, enabled, policy, err, errsz);
}

/* The configs of the toolset T at PATH: each an object naming a tool once. Calls FN with each
 * config, its path and its name; FN returns 0 or -1 (ERR set). */
static int configs_each(const json_t *t, const char *path, void *arg,
			int (*fn)(void *arg, const json_t *c, const char *cpath, const char *name,
				  char *err, size_t errsz),
			char *err, size_t errsz)
{
	const json_t *cs = json_object_get(t, "configs"), *c;
	char sub[2 * TOOLSET_PATH_MAX];
	size_t i;

	if (!cs || json_is_null(cs))
		return 0;
	if (!json_is_array(cs))
		return load_fail(err, errsz, "'%s.configs' must be an array", path);
	json_array_foreach (cs, i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));

		snprintf(sub, sizeof(sub), "%s.configs[%zu]", path, i);
		if (!json_is_object(c))
			return load_fail(err, errsz, "'%s' must be an object", sub);
		if (!name || !*name)
			return load_fail(err, errsz, "'%s.name' must be a non-empty string", sub);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(name, json_string_value(
						  json_object_get(json_array_get(cs, j), "name"))))
				return load_fail(err, errsz,
						 "'%s.name' ('%s') is configured twice (also in "
						 "'%s.configs[%zu]')",
						 sub, name, path, j);
		if (fn(arg, c, sub, name, err, errsz))
			return -1;
	}
	return 0;
}

/* Offer the tool NAME (DEF its definition, stolen) of KIND with POLICY; PATH names the entry.
 * 0, or -1 when NAME is offered already or memory ran out. */
static int offer(struct toolset *ts, const char *name, json_t *def, enum tool_kind kind,
		 enum tool_policy policy, const char *path, char *err, size_t errsz)
{
	json_t *k;

	if (json_object_get(ts->kinds, name)) {
		json_decref(def);
		return load_fail(err, errsz, "'%s': a tool named '%s' is offered twice", path,
				 name);
	}
	k = json_pack("{s:s, s:o}", "kind", kind_names[kind], "policy", policy_json(policy));
	if (!def || !k || json_array_append_new(ts->definitions, def) ||
	    json_object_set_new(ts->kinds, name, k))
		return load_fail(err, errsz, "out of memory");
	return 0;
}

/* The state of the agent toolset's tools while its configs are read. */
struct builtin_conf {
	int enabled[BUILTINS_N];
	enum tool_policy policy[BUILTINS_N];
};

static int builtin_config(void *arg, const json_t *c, const char *path, const char *name, char *err,
			  size_t errsz)
{
	struct builtin_conf *bc = arg;
	const char *type = json_string_value(json_object_get(c, "type"));
	int unused_enabled = 0;
	enum tool_policy unused_policy = TOOL_ALLOW;

	if (json_object_get(c, "type") && !json_is_null(json_object_get(c, "type")) &&
	    (!type || strcmp(type, name)))
		return load_fail(err, errsz, "'%s.type' must equal its name ('%s')", path, name);
	for (size_t i = 0; i < BUILTINS_N; i++)
		if (!strcmp(builtins[i].name, name))
			return config_read(c, path, &bc->enabled[i], &bc->policy[i], err, errsz);
	for (size_t i = 0; i < sizeof(builtins_unoffered) / sizeof(builtins_unoffered[0]); i++)
		if (!strcmp(builtins_unoffered[i], name))
			return config_read(c, path, &unused_enabled, &unused_policy, err, errsz);
	return load_fail(err, errsz,
			 "'%s.name' must be one of 'bash', 'read', 'write', 'edit', 'glob', "
			 "'grep', 'web_fetch', 'web_search'",
			 path);
}

/* An agent_toolset_20260401 entry T at PATH. */
static int load_builtins(struct toolset *ts, const json_t *t, const char *path, char *err,
			 size_t errsz)
{
	struct builtin_conf bc;
	int enabled = 1;
	enum tool_policy policy = TOOL_ALLOW;

	if (default_config_read(t, path, &enabled, &policy, err, errsz))
		return -1;
	for (size_t i = 0; i < BUILTINS_N; i++) {
		bc.enabled[i] = enabled;
		bc.policy[i] = policy;
	}
	if (configs_each(t, path, &bc, builtin_config, err, errsz))
		return -1;
	for (size_t i = 0; i < BUILTINS_N; i++)
		if (bc.enabled[i] &&
		    offer(ts, builtins[i].name, json_loads(builtins[i].definition, 0, NULL),
			  TOOL_BUILTIN, bc.policy[i], path, err, errsz))
			return -1;
	return 0;
}

/* A custom tool T at PATH: offered as given. */
static int load_custom(struct toolset *ts, const json_t *t, const char *path, char *err,
		       size_t errsz)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	const json_t *schema = json_object_get(t, "input_schema");
	char sub[2 * TOOLSET_PATH_MAX];

	if (!name || !*name)
		return load_fail(err, errsz, "'%s.name' must be a non-empty string", path);
	if (!json_is_string(json_object_get(t, "description")))
		return load_fail(err, errsz, "'%s.description' must be a string", path);
	if (!json_is_object(schema) || !json_is_string(json_object_get(schema, "type")) ||
	    strcmp(json_string_value(json_object_get(schema, "type")), "object"))
		return load_fail(err, errsz,
				 "'%s.input_schema' must be a JSON Schema object with \"type\": "
				 "\"object\"",
				 path);
	snprintf(sub, sizeof(sub), "%s.name", path);
	return offer(ts, name, json_deep_copy(t), TOOL_CUSTOM, TOOL_ALLOW, sub, err, errsz);
}

/* The state of an mcp_toolset while its configs are read. */
struct mcp_conf {
	int enabled;
	enum tool_policy policy;
	json_t *configs;
};

static int mcp_config(void *arg, const json_t *c, const char *path, const char *name, char *err,
		      size_t errsz)
{
	struct mcp_conf *mc = arg;
	int enabled = mc->enabled;
	enum tool_policy policy = mc->policy;

	if (config_read(c, path, &enabled, &policy, err, errsz))
		return -1;
	if (json_object_set_new(
		    mc->configs, name,
		    json_pack("{s:b, s:o}", "enabled", enabled, "policy", policy_json(policy))))
		return load_fail(err, errsz, "out of memory");
	return 0;
}

/* An mcp_toolset T at PATH: its configuration, default policy always_ask. */
static int load_mcp(struct toolset *ts, const json_t *t, const char *path, char *err, size_t errsz)
{
	const char *server = json_string_value(json_object_get(t, "mcp_server_name"));
	struct mcp_conf mc = { 1, TOOL_ASK, NULL };

	if (!server || !*server)
		return load_fail(err, errsz, "'%s.mcp_server_name' must be a non-empty string",
				 path);
	if (json_object_get(ts->mcp, server))
		return load_fail(err, errsz,
				 "'%s.mcp_server_name' ('%s') is named by two mcp_toolset entries",
				 path, server);
	if (default_config_read(t, path, &mc.enabled, &mc.policy, err, errsz))
		return -1;
	if (!(mc.configs = json_object()))
		return load_fail(err, errsz, "out of memory");
	if (configs_each(t, path, &mc, mcp_config, err, errsz)) {
		json_decref(mc.configs);
		return -1;
	}
	if (json_object_set_new(ts->mcp, server,
				json_pack("{s:b, s:o, s:o}", "enabled", mc.enabled, "policy",
					  policy_json(mc.policy), "configs", mc.configs)))
		return load_fail(err, errsz, "out of memory");
	return 0;
}

int toolset_load(const json_t *tools, struct toolset *ts, char *err, size_t errsz)
{
	char path[TOOLSET_PATH_MAX];
	const json_t *t;
	size_t i;
	int rc = 0;

	ts->definitions = json_array();
	ts->kinds = json_object();
	ts->mcp = json_object();
	if (!ts->definitions || !ts->kinds || !ts->mcp)
		rc = load_fail(err, errsz, "out of memory");
	else if (tools && !json_is_null(tools) && !json_is_array(tools))
		rc = load_fail(err, errsz, "'tools' must be an array");
	json_array_foreach (rc ? NULL : tools, i, t) {
		const char *type = json_string_value(json_object_get(t, "type"));

		snprintf(path, sizeof(path), "tools[%zu]", i);
		if (!json_is_object(t))
			rc = load_fail(err, errsz, "'%s' must be an object", path);
		else if (type && !strcmp(type, TOOLSET_TYPE))
			rc = load_builtins(ts, t, path, err, errsz);
		else if (type && !strcmp(type, TOOLSET_CUSTOM))
			rc = load_custom(ts, t, path, err, errsz);
		else if (type && !strcmp(type, TOOLSET_MCP))
			rc = load_mcp(ts, t, path, err, errsz);
		else
			rc = load_fail(err, errsz,
				       "'%s.type' must be '" TOOLSET_TYPE "', '" TOOLSET_MCP
				       "' or '" TOOLSET_CUSTOM "'",
				       path);
		if (rc)
			break;
	}
	if (rc)
		toolset_release(ts);
	return rc;
}

/* The policy named by V (always_ask unless it says always_allow). */
static enum tool_policy policy_of(const json_t *v)
{
	const char *s = json_string_value(v);

	return s && !strcmp(s, policy_names[TOOL_ALLOW]) ? TOOL_ALLOW : TOOL_ASK;
}

enum tool_kind toolset_kind(const struct toolset *ts, const char *name, enum tool_policy *policy)
{
	const json_t *k = json_object_get(ts->kinds, name);
	const char *kind = json_string_value(json_object_get(k, "kind"));

	*policy = TOOL_ALLOW;
	if (!kind)
		return TOOL_UNKNOWN;
	*policy = policy_of(json_object_get(k, "policy"));
	for (size_t i = 0; i < sizeof(kind_names) / sizeof(kind_names[0]); i++)
		if (!strcmp(kind_names[i], kind))
			return (enum tool_kind)i;
	return TOOL_UNKNOWN;
}

int toolset_mcp_policy(const struct toolset *ts, const char *server, const char *tool,
		       enum tool_policy *policy)
{
	const json_t *m = json_object_get(ts->mcp, server), *c;

	if (!m)
		return -1;
	c = json_object_get(json_object_get(m, "configs"), tool);
	if (!c)
		c = m;
	*policy = policy_of(json_object_get(c, "policy"));
	return json_is_true(json_object_get(c, "enabled"));
}

void toolset_release(struct toolset *ts)
{
	json_decref(ts->definitions);
	json_decref(ts->kinds);
	json_decref(ts->mcp);
	memset(ts, 0, sizeof(*ts));
}
