/* The MCP client of the runner (docs/runner.md "MCP servers"): the tools of an agent's MCP
 * servers, called from the runner (never from the sandbox) over MCP's Streamable HTTP transport
 * as the official TypeScript SDK's StreamableHTTPClientTransport and Client speak it. Every
 * message is a JSON-RPC 2.0 POST to the server's URL; the server answers with one JSON document
 * or with a stream of server-sent events that ends with the response. A client initializes (its
 * protocol version, no capabilities), sends notifications/initialized, then lists the tools
 * (following nextCursor) and calls them. The Mcp-Session-Id the server gives is sent on every
 * later request, with MCP-Protocol-Version; a session the server forgot (404) is initialized
 * again once and the request sent again (it was not run). The bearer, when there is one, is sent
 * as Authorization and nowhere else: it is never in an error message, and is masked in results
 * (so is a copy that a cap cut short at the end of either).
 *
 * Not done: requests from the server (sampling, elicitation, roots, ping) are not answered (the
 * client declares no capabilities); the GET stream for unsolicited messages is not opened; a
 * broken stream is not resumed; redirects are not followed.
 *
 * Also here: the names the model is offered for MCP tools (they cannot collide with built-in or
 * custom tools), the Messages API's definition of an MCP tool, and a tools/call result as the
 * Messages API's content blocks. */
#ifndef TERRARIUM_RUNNER_MCP_H
#define TERRARIUM_RUNNER_MCP_H

#include <jansson.h>
#include <stddef.h>

#include "../common/config.h"

#define MCP_PROTOCOL_VERSION "2025-06-18" /* asked for at initialize */
#define MCP_CLIENT_NAME "terrarium"	  /* clientInfo */
#define MCP_CLIENT_VERSION "0.1.0"	  /* clientInfo: the package's (debian/changelog) */

/* limits; struct mcp_limits may set the first six lower or higher for one client */
#define MCP_CONNECT_TIMEOUT_MS 10000 /* to open the connection */
#define MCP_REQUEST_TIMEOUT_MS 30000 /* initialize, a notification, one tools/list page */
/* one tools/call, whole: the default of [runner] mcp_call_timeout_seconds */
#define MCP_CALL_TIMEOUT_MS (CONFIG_DEFAULT_MCP_CALL_TIMEOUT_S * 1000L)
#define MCP_ANSWER_MAX (8 * 1024 * 1024) /* bytes of one answer held; more: MCP_ERR_PROTOCOL */
#define MCP_RESULT_TEXT_MAX (100 * 1024) /* bytes of a result's text kept (the rest: a note) */
#define MCP_TOOLS_MAX 256		 /* tools listed (repeats too); more: MCP_ERR_PROTOCOL */
#define MCP_SERVERS_MAX 20		 /* servers of one agent (the API validates it) */
#define MCP_URL_MAX 2048		 /* a server's URL (the API's AGENT_MCP_URL_MAX) */
#define MCP_BEARER_MAX 8192		 /* a bearer token's bytes */
#define MCP_BEARER_CUT_MIN 4		 /* bytes of a cut copy of the bearer masked, at least */
#define MCP_SESSION_ID_MAX 256		 /* an Mcp-Session-Id taken */
#define MCP_LIST_PAGES_MAX 64		 /* tools/list pages followed */
#define MCP_IMAGE_MAX (5 * 1024 * 1024)	 /* base64 bytes of one image passed on */
#define MCP_DESCRIPTION_MAX (10 * 1024)	 /* bytes of a tool's description offered */
#define MCP_REMOTE_NAME_MAX 255		 /* a tool's name as its server spells it */
#define MCP_ERROR_MAX 512		 /* an error's message */
#define MCP_CANCEL_POLL_MS 50		 /* how often the cancel callback is asked */
#define MCP_NOTICE_TIMEOUT_MS 1000	 /* notifications/cancelled after a timeout; DELETE */
#define MCP_CANCEL_NOTICE_MS 100	 /* notifications/cancelled after a cancel */
#define MCP_LINGER_MS 100		 /* waited for the end of a stream once its answer came */
#define MCP_TOOL_NAME_MAX 128		 /* the Messages API's ^[a-zA-Z0-9_-]{1,128}$ */
#define MCP_TOOL_NAME_PREFIX "mcp__"	 /* every MCP tool's name as offered starts so */
#define MCP_NAME_HASH_HEX 8		 /* hex digits of the hash in a shortened name */
#define MCP_NAME_TRIES 16		 /* salts tried for a name that collides */

/* ---- errors ---- */

enum mcp_error_kind {
	MCP_ERR_NONE,
	MCP_ERR_CONNECTION, /* no answer: refused, name or TLS failure, the connection broke */
	MCP_ERR_TIMEOUT,    /* no answer (or no end of it) within the time limit */
	MCP_ERR_AUTH,	    /* the server answered 401 or 403 */
	MCP_ERR_PROTOCOL,   /* an answer that is not MCP: another HTTP error status, not JSON-RPC,
			     * no response to the request, an unsupported protocol version, a
			     * limit passed (the message names it) */
	MCP_ERR_RPC,	    /* the server answered with a JSON-RPC error (rpc_code, its message) */
	MCP_ERR_CANCELLED,  /* the cancel callback said stop */
	MCP_ERR_INVALID,    /* the caller's input: a URL, a bearer or a tool name not usable */
	MCP_ERR_NOMEM,
};

struct mcp_error {
	enum mcp_error_kind kind;
	long http_status;	     /* the answer's status, 0 when none came */
	long rpc_code;		     /* MCP_ERR_RPC: the JSON-RPC error code */
	char message[MCP_ERROR_MAX]; /* what went wrong, for people (never the bearer) */
};

/* The session.error type the runner reports when a server cannot be used (connect or tools/list
 * failed with ERR): "mcp_authentication_failed_error" for MCP_ERR_AUTH, NULL for
 * MCP_ERR_CANCELLED (the turn was interrupted: nothing to report), else
 * "mcp_connection_failed_error". */
const char *mcp_error_type(const struct mcp_error *err);

/* ---- the client ---- */

/* One client's limits; 0 in a field takes its default (the constant named). */
struct mcp_limits {
	long connect_timeout_ms; /* MCP_CONNECT_TIMEOUT_MS */
	long request_timeout_ms; /* MCP_REQUEST_TIMEOUT_MS */
	long call_timeout_ms;	 /* MCP_CALL_TIMEOUT_MS */
	size_t answer_max;	 /* MCP_ANSWER_MAX */
	size_t result_text_max;	 /* MCP_RESULT_TEXT_MAX */
	size_t tools_max;	 /* MCP_TOOLS_MAX */
	/* 1: the server may be at an address of this machine (common/hostaddr.h: loopback,
	 * link-local, its interfaces'); 0, the default: such an address is refused, so that an
	 * agent's URL cannot reach the runner's host ([runner] mcp_local_addresses) */
	int local_addresses;
};

struct mcp_client;

/* Connect to the MCP server at URL (http or https, at most MCP_URL_MAX bytes), with BEARER (a
 * token; NULL or "": none) sent as "Authorization: Bearer ...": initialize, then
 * notifications/initialized. LIMITS may be NULL (the defaults). CANCEL, when not NULL, is asked
 * with ARG every MCP_CANCEL_POLL_MS while this and every later call of the client wait: non-zero
 * stops the call (MCP_ERR_CANCELLED). The client (mcp_close it), or NULL with ERR set. URL and
 * BEARER are copied; the copies are wiped at mcp_close. */
struct mcp_client *mcp_connect(const char *url, const char *bearer, const struct mcp_limits *limits,
			       int (*cancel)(void *), void *arg, struct mcp_error *err);

/* The server's tools: *TOOLS gets an array of {"name", "description"?, "inputSchema"} (new
 * reference, caller decrefs), every page of tools/list, in the server's order; a name listed
 * again is passed over (the first kept: the Messages API refuses tools that repeat a name). A
 * server that does not know tools/list (-32601) has none. 0, or -1 with ERR set (*TOOLS NULL): a
 * tool whose name is not a string of 1-MCP_REMOTE_NAME_MAX bytes without control characters, or
 * whose inputSchema is not an object schema, fails the list as the SDK's parse does; more than
 * tools_max tools or MCP_LIST_PAGES_MAX pages too. */
int mcp_list_tools(struct mcp_client *c, json_t **tools, struct mcp_error *err);

/* What a tools/call gave, as the Messages API takes a tool_result's content. */
struct mcp_result {
	json_t *content; /* [{"type":"text","text"} | {"type":"image","source":{"type":"base64",
			  * "media_type","data"}}, ...], never empty (new reference) */
	int is_error;	 /* the tool said it failed (isError) */
	int truncated;	 /* text was cut at result_text_max (a note in the content says so) */
};

/* Call TOOL (its name as the server spells it) with ARGS (an object; NULL: {}), within
 * call_timeout_ms. 0 with OUT filled when the server answered with a result (mcp_result_release
 * it), is_error or not; -1 with ERR set and OUT empty otherwise: the runner answers the model
 * with an error result saying so (a JSON-RPC error is the server refusing the call: an unknown
 * tool, invalid arguments). After a timeout or a cancel the server is sent
 * notifications/cancelled for the request. The bearer is masked (REDACT_MASK) wherever it occurs
 * in the result's text, and so is the start of it that ends a text block (a copy the text cap
 * cut, from MCP_BEARER_CUT_MIN bytes). */
int mcp_call(struct mcp_client *c, const char *tool, const json_t *args, struct mcp_result *out,
	     struct mcp_error *err);

/* The protocol version the server agreed to, and the session id it gave ("" when none):
 * borrowed from C. */
const char *mcp_protocol(const struct mcp_client *c);
const char *mcp_session_id(const struct mcp_client *c);

/* End the session (DELETE with its id, within MCP_NOTICE_TIMEOUT_MS, answer not needed) and free
 * C. NULL is taken. */
void mcp_close(struct mcp_client *c);

void mcp_result_release(struct mcp_result *r);

/* ---- what the model is offered (mcp_tools.c) ---- */

/* The name the model is offered for TOOL of SERVER, into OUT: "mcp__SERVER__TOOL" when both are
 * made of [a-zA-Z0-9_-], SERVER has no "__" and does not end in "_" (so the name splits one way
 * only) and it fits MCP_TOOL_NAME_MAX; else a shortened form, "mcp__S__T_HASH": S and T the names
 * with every other character as "_", cut to fit, HASH the first MCP_NAME_HASH_HEX hex digits of
 * SHA-256 of SERVER, NUL, TOOL. Always a name of the Messages API's rule. */
void mcp_tool_name(const char *server, const char *tool, char out[MCP_TOOL_NAME_MAX + 1]);

/* The runner's table of the MCP tools it offers: name -> (server, tool), reversible. */
struct mcp_names {
	json_t *map; /* offered name -> ["server", "tool"] (owned) */
};

/* 0, or -1 when out of memory. */
int mcp_names_init(struct mcp_names *t);

/* Add TOOL of SERVER to T; its name into OUT: mcp_tool_name's, unless that is a key of TAKEN (the
 * other tools' names: the toolset's kinds; NULL: none) or T has it for another tool: then the
 * shortened form with a salt (SHA-256 of SERVER, NUL, TOOL, NUL, the salt's decimal) until one is
 * free. The same tool added again gets its name again. 0, or -1 when out of memory or no free
 * name came in MCP_NAME_TRIES salts. */
int mcp_names_add(struct mcp_names *t, const char *server, const char *tool, const json_t *taken,
		  char out[MCP_TOOL_NAME_MAX + 1]);

/* The name TOOL of SERVER is offered as in T (borrowed from T), or NULL when T has none. */
const char *mcp_names_name(const struct mcp_names *t, const char *server, const char *tool);

/* The server and tool of the offered NAME (borrowed from T): 0, or -1 when T has no NAME. */
int mcp_names_find(const struct mcp_names *t, const char *name, const char **server,
		   const char **tool);

void mcp_names_release(struct mcp_names *t);

/* The Messages API's definition of TOOL (an entry of mcp_list_tools' array) offered as NAME:
 * {"name", "description" (at most MCP_DESCRIPTION_MAX bytes; the tool's title when it has no
 * description; none when it has neither), "input_schema" (a copy of its inputSchema)} (new
 * reference; NULL when out of memory or TOOL has no inputSchema). */
json_t *mcp_tool_definition(const json_t *tool, const char *name);

/* RESULT (a tools/call result: {"content": [...], "structuredContent"?, "isError"?}) as OUT:
 * text blocks as they are (empty ones dropped), images of the media types the API takes
 * (jpeg, png, gif, webp) with valid base64 of at most MCP_IMAGE_MAX bytes as image blocks
 * (media_type the one their first bytes show; data that is none of the four is a note),
 * embedded text resources as text; what the model cannot take (audio, binary resources, other
 * images, unknown types) as a text note naming it; a resource link as a text line. Without
 * content, structuredContent's JSON text. Nothing at all: "(no output)". Text past TEXT_MAX
 * bytes in all is cut (on a character boundary) and a note says how much there was. 0, or -1
 * with ERR set (MCP_ERR_PROTOCOL: RESULT is not an object, content not an array; MCP_ERR_NOMEM)
 * and OUT empty. */
int mcp_result_convert(const json_t *result, size_t text_max, struct mcp_result *out,
		       struct mcp_error *err);

/* Set ERR to KIND with a formatted message (control characters as spaces). Always -1. */
int mcp_fail(struct mcp_error *err, enum mcp_error_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
