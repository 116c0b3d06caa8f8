/* What the libcurl clients share (the HTTP sandbox drivers, sandbox/http.c, and the runner's
 * model and MCP clients, runner/model.c and runner/mcp.c): request header lists and the steps of
 * a transfer driven on a multi handle. It includes curl/curl.h: only those clients include it. */
#ifndef TERRARIUM_SANDBOX_TRANSFER_H
#define TERRARIUM_SANDBOX_TRANSFER_H

#include <curl/curl.h>

/* Append LINE (copied) to *LIST. 0, or -1 when out of memory (*LIST is left as it was: the
 * caller still frees it with curl_slist_free_all). */
int transfer_list_add(struct curl_slist **list, const char *line);

/* One curl_multi_perform of MULTI: 1 while its transfers run, 0 once they have ended, -1 when
 * the multi handle failed. */
int transfer_perform(CURLM *multi);

/* Wait on MULTI for activity for DUE_MS, at most CAP_MS and at least 1 ms (a due time already
 * past still waits that 1 ms). */
void transfer_wait(CURLM *multi, long long due_ms, long long cap_ms);

/* The result of EASY's transfer on MULTI once it has ended (CURLE_OK when MULTI reports none). */
CURLcode transfer_result(CURLM *multi, CURL *easy);

#endif
