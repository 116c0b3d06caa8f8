#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../common/config.h"
#include "../../sandbox/http.h"

#define CHECK_FAKE_TIMEOUT_S 10

static int passed, failed;

int check_args(int argc, char **argv, int opt, const char *usage, int value_required,
	       const char **value, const char **config_file, struct config *cfg)
{
	char opts[] = { 'c', ':', (char)opt, ':', '\0' };
	int o;

	*config_file = NULL;
	while ((o = getopt(argc, argv, opts)) != -1) {
		if (o == 'c')
			*config_file = optarg;
		else if (o == opt)
			*value = optarg;
		else
			return 2;
	}
	if (!*config_file || (value_required && !*value)) {
		fprintf(stderr, "usage: %s -c CONFIG %s\n", argv[0], usage);
		return 2;
	}
	if (config_load(cfg, *config_file)) {
		fprintf(stderr, "config: %s\n", cfg->error);
		return 2;
	}
	return 0;
}

void check(int ok, const char *fmt, ...)
{
	va_list ap;
	printf("%s ", ok ? "ok  " : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

int check_summary(void)
{
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

json_t *fake_json(const char *url, const char *method, const char *path)
{
	struct remote_conf rc;
	struct http_client c;
	struct http_request rq;
	struct http_response rs;
	json_t *root = NULL;
	char err[512] = "";

	memset(&rc, 0, sizeof(rc));
	snprintf(rc.url, sizeof(rc.url), "%s", url);
	rc.timeout_s = CHECK_FAKE_TIMEOUT_S;
	if (http_init(&c, "fake", &rc, err, sizeof(err))) {
		printf("     fake %s %s: %s\n", method, path, err);
		return NULL;
	}
	memset(&rq, 0, sizeof(rq));
	rq.method = method;
	rq.path = path;
	if (!http_do(&c, &rq, &rs, err, sizeof(err)) && rs.status == 200)
		root = http_json(&rs);
	else
		printf("     fake %s %s: %s (status %ld)\n", method, path, err, rs.status);
	http_response_release(&rs);
	http_release(&c);
	return root;
}
