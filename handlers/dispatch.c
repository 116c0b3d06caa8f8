/* API policy over a route table: a route's flags (credentials, version and beta headers, JSON
 * body, idempotency) checked in one place before its handler runs. */
#include "dispatch.h"

#include <string.h>

_Static_assert(AUTH_ADMITS_ANY < ROUTE_BETA,
	       "a route's credential bits and its other flags are apart");

static int version_known(const char *v)
{
	static const char *versions[] = ROUTE_VERSIONS;

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (!strcmp(versions[i], v))
			return 1;
	return 0;
}

/* How much of Jansson's error TEXT a refusal shows. Jansson ends a syntax error with the token it
 * stopped in when that is short ("... near '<token>'", up to 20 bytes): bytes of the body,
 * perhaps a secret (a credential's token before a stray newline), so the refusal stops before
 * it; only a duplicate key keeps it, the token then being the key, which names the field. */
static int json_error_shown(const char *text)
{
	static const char dup[] = "duplicate object key";
	const char *near = strstr(text, " near '");

	if (near && strncmp(text, dup, sizeof(dup) - 1))
		return (int)(near - text);
	return (int)strlen(text);
}

/* Parse the body as a JSON object into req->json. 0, or -1 with RESP filled. */
static int parse_body(struct request *req, struct response *resp, int optional)
{
	json_error_t jerr;

	if (!req->body_len) {
		if (optional)
			return 0;
		resp_error(resp, req, 400, NULL, "request body is required: a JSON object");
		return -1;
	}
	req->json = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req->json) {
		/* Jansson names its own flag for this one ("... without JSON_ALLOW_NUL"): the
		 * client gets the rule, not the library's internals */
		if (strstr(jerr.text, "JSON_ALLOW_NUL"))
			resp_error(
				resp, req, 400, NULL,
				"request body is not valid: strings must not contain \\u0000 (NUL)"
				" (at position %d)",
				jerr.position);
		else
			resp_error(resp, req, 400, NULL,
				   "request body is not valid JSON: %.*s (at position %d)",
				   json_error_shown(jerr.text), jerr.text, jerr.position);
		return -1;
	}
	if (!json_is_object(req->json)) {
		resp_error(resp, req, 400, NULL, "request body must be a JSON object");
		return -1;
	}
	return 0;
}

void api_dispatch(struct worker *w, const struct api_route *table, size_t n, struct request *req,
		  struct response *resp)
{
	const struct api_route *found;
	char beta[ROUTE_BETA_HEADER_MAX];
	struct auth_principal principal;
	unsigned admits;

	if (route_server_error(req, resp))
		return;
	found = route_find(table, n, sizeof(*table), req, resp);
	if (!found)
		return;

	admits = found->flags & AUTH_ADMITS_ANY;
	if (admits && auth_request(w, req, resp, admits, &principal))
		return;
	if (found->flags & ROUTE_BETA) {
		const char *version = req_env(req, "HTTP_ANTHROPIC_VERSION");
		int n;

		if (version && !version_known(version)) {
			resp_error(resp, req, 400, NULL,
				   "the 'anthropic-version' header must be one of: %s",
				   ROUTE_VERSIONS_TEXT);
			return;
		}
		n = req_header_all(req, "HTTP_ANTHROPIC_BETA", beta, sizeof(beta));
		if (n <= 0 || !header_list_has(beta, ROUTE_BETA_REQUIRED)) {
			resp_error(resp, req, 400, NULL,
				   "the 'anthropic-beta' header must include '%s'",
				   ROUTE_BETA_REQUIRED);
			return;
		}
	}
	if ((found->flags & (ROUTE_JSON | ROUTE_JSON_OPT)) &&
	    parse_body(req, resp, !!(found->flags & ROUTE_JSON_OPT)))
		return;
	req->route_data = found->data;
	req->principal = admits ? &principal : NULL;
	if (found->flags & ROUTE_IDEMPOTENT)
		idem_run(w, req, resp, found->handler);
	else
		found->handler(w, req, resp);
	req->principal = NULL; /* it lives in this frame */
}
