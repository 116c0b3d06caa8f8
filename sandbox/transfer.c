#include "transfer.h"

int transfer_list_add(struct curl_slist **list, const char *line)
{
	struct curl_slist *l = curl_slist_append(*list, line);

	if (!l)
		return -1;
	*list = l;
	return 0;
}

int transfer_perform(CURLM *multi)
{
	int running = 0;

	if (curl_multi_perform(multi, &running) != CURLM_OK)
		return -1;
	return running ? 1 : 0;
}

void transfer_wait(CURLM *multi, long long due_ms, long long cap_ms)
{
	if (due_ms > cap_ms)
		due_ms = cap_ms;
	curl_multi_poll(multi, NULL, 0, due_ms > 0 ? (int)due_ms : 1, NULL);
}

CURLcode transfer_result(CURLM *multi, CURL *easy)
{
	CURLcode rc = CURLE_OK;
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(multi, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy)
			rc = msg->data.result;
	return rc;
}
