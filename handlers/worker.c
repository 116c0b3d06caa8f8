/* The API's process state: what the supervisor sets up once before it forks (api_init) and
 * what each worker holds (api_worker_new): its configuration, backend, database handle and the
 * vault key. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "handlers.h"

/* The vault key (docs/vaults.md): loaded once, by the supervisor before it forks (as root it
 * reads a key file the workers cannot), or by the one worker of the fd 0 and CGI modes, and
 * read-only afterwards; the workers borrow it. */
static struct vault_key api_vault_key;
static int api_vault_key_tried;

static void api_vault_key_load(const struct config *cfg)
{
	if (api_vault_key_tried)
		return;
	api_vault_key_tried = 1;
	if (!vault_key_load(&api_vault_key, cfg->vault_key_file))
		return;
	if (cfg->vault_key_file[0])
		log_error("%s: vault credentials cannot be created or updated until it is fixed",
			  api_vault_key.error);
	else
		log_info("%s: vault credentials are refused", api_vault_key.error);
}

int api_init(const struct config *cfg)
{
	api_vault_key_load(cfg);
	/* the streams workers hold (without a publisher) are counted across workers */
	if (stream_slots_init())
		log_warn("supervisor: no shared memory for the stream slots: %s", strerror(errno));
	return auth_init();
}

void *api_worker_new(const struct config *cfg)
{
	struct worker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->cfg = cfg;
	w->caps = backend_lookup(cfg->backend);
	api_vault_key_load(cfg); /* the fd 0 and CGI modes: no supervisor loaded it */
	w->vault_key = &api_vault_key;
	w->db = db_new(cfg);
	if (!w->db) {
		free(w);
		return NULL;
	}
	return w;
}

void api_worker_free(void *worker)
{
	struct worker *w = worker;

	if (!w)
		return;
	db_free(w->db);
	free(w);
}
