#include "startup.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "log.h"

#define STARTUP_HOST_MAX 64
#define STARTUP_RANDOM_LEN 8

int startup_config(struct config *cfg, const char *path)
{
	if (config_load(cfg, path)) {
		fprintf(stderr, "config: %s\n", cfg->error);
		return -1;
	}
	log_set_level(cfg->log_level);
	return 0;
}

void startup_signals(void (*on_stop)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void startup_owner(char *out, size_t outsz, const char *prefix)
{
	char host[STARTUP_HOST_MAX] = "host", rnd[STARTUP_RANDOM_LEN + 1];

	gethostname(host, sizeof(host) - 1);
	random_id(rnd, sizeof(rnd), "", STARTUP_RANDOM_LEN);
	snprintf(out, outsz, "%s%.60s:%d:%s", prefix, host, (int)getpid(), rnd);
}
