/* Driver checks beyond the conformance suite for the e2b/cube and daytona drivers, run against
 * their protocol fakes (tests/backends/fake-e2b.mjs, fake-daytona.mjs):
 *
 *   remote_extra -c CONFIG -f FAKE_URL
 *
 * FAKE_URL is the fake's base (http://127.0.0.1:PORT). Checks: a command past its time limit
 * comes back timed out; an unknown command is "could not be started" (run returns -1 with a
 * message); a new sandbox gets the network its spec's share_net asks for; a sandbox that went to
 * sleep (E2B: paused by its timeout; Daytona: auto-stopped) is woken before a command; Daytona
 * refuses an empty argument it could not pass; and the fake saw no protocol violation. Prints
 * "N passed, N failed"; exit status 1 when any failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../common/config.h"
#include "../../sandbox/backend.h"
#include "check.h"

/* The fake's record of sandbox ID (borrowed from LOG), or NULL. */
static json_t *fake_sandbox(json_t *log, const char *id)
{
	size_t i;
	json_t *sb;

	json_array_foreach (json_object_get(log, "sandboxes"), i, sb) {
		const char *sid = json_string_value(json_object_get(sb, "sandboxID"));
		if (!sid)
			sid = json_string_value(json_object_get(sb, "id"));
		if (sid && !strcmp(sid, id))
			return sb;
	}
	return NULL;
}

static int run(struct sbx *s, const char *id, const char *const argv[], long timeout_s,
	       struct proc_result *res)
{
	static const char *const envp[] = { "PATH=/usr/bin:/bin", "LANG=C.UTF-8", NULL };
	struct sbx_exec ex = { .argv = (char *const *)argv,
			       .envp = (char *const *)envp,
			       .share_net = 1,
			       .timeout_s = timeout_s };
	return sbx_run(s, id, &ex, res);
}

int main(int argc, char **argv)
{
	const char *config_file = NULL, *fake = NULL;
	const char *const sleep5[] = { "sleep", "5", NULL };
	const char *const nosuch[] = { "no-such-command", "x", NULL };
	const char *const echo[] = { "echo", "awake", NULL };
	const char *const empty[] = { "echo", "", NULL };
	char name[64], name2[64], id[SBX_ID_MAX] = "", id2[SBX_ID_MAX] = "", err[SBX_ERR_MAX];
	char path[SBX_ID_MAX + 64];
	struct proc_result res;
	struct config cfg;
	struct sbx s;
	json_t *log;
	int rc, daytona;
	time_t t0;

	rc = check_args(argc, argv, 'f', "-f FAKE_URL", 1, &fake, &config_file, &cfg);
	if (rc)
		return rc;
	daytona = !strcmp(cfg.backend, "daytona");
	printf("== %s driver checks (%s)\n", cfg.backend, config_file);
	snprintf(name, sizeof(name), "extra-%ld-%ld-a", (long)getpid(), (long)time(NULL));
	snprintf(name2, sizeof(name2), "extra-%ld-%ld-b", (long)getpid(), (long)time(NULL));
	rc = sbx_open(&s, &cfg, config_file, err, sizeof(err));
	check(rc == 0, "sbx_open (%s)", rc ? err : "ok");
	if (rc)
		goto done;

	/* the network of a new sandbox follows its spec's share_net */
	rc = sbx_create(&s, &(struct sbx_spec){ .name = name, .share_net = 1 }, id, sizeof(id), err,
			sizeof(err));
	check(rc == 0, "create with the network shared (%s)", rc ? err : id);
	rc |= sbx_create(&s, &(struct sbx_spec){ .name = name2 }, id2, sizeof(id2), err,
			 sizeof(err));
	check(rc == 0, "create without network (%s)", rc ? err : id2);
	if (rc)
		goto close;
	log = fake_json(fake, "GET", "/__fake/log");
	if (daytona) {
		json_t *a = fake_sandbox(log, id), *b = fake_sandbox(log, id2);
		check(json_is_false(json_object_get(a, "networkBlockAll")) &&
			      json_is_true(json_object_get(b, "networkBlockAll")),
		      "networkBlockAll only on the sandbox created without network");
	} else {
		json_t *a = fake_sandbox(log, id), *b = fake_sandbox(log, id2);
		check(json_is_true(json_object_get(a, "allowInternet")) &&
			      json_is_false(json_object_get(b, "allowInternet")),
		      "allow_internet_access only on the sandbox created with network");
		check(json_is_true(json_object_get(fake_sandbox(log, id), "autoPause")),
		      "sandboxes are created with autoPause");
	}
	json_decref(log);

	/* time limit */
	t0 = time(NULL);
	rc = run(&s, id, sleep5, 1, &res);
	check(rc == 0 && res.timed_out && res.exit_code != 0 && time(NULL) - t0 < 5,
	      "a command past its limit comes back timed out (rc %d, timed_out %d, exit %d)", rc,
	      res.timed_out, res.exit_code);
	proc_result_release(&res);

	/* an executable that does not exist: envd cannot start it; on Daytona `env` runs and
	 * exits 127, as a shell would report it */
	rc = run(&s, id, nosuch, 10, &res);
	if (daytona)
		check(rc == 0 && res.exit_code == 127 && res.output &&
			      strstr(res.output, "no-such-command"),
		      "an unknown command exits 127 (rc %d, exit %d, '%.120s')", rc, res.exit_code,
		      res.output ? res.output : "");
	else
		check(rc == -1 && res.exit_code == -1 && res.output &&
			      strstr(res.output, "no-such-command"),
		      "an unknown command could not be started (rc %d, '%.120s')", rc,
		      res.output ? res.output : "");
	proc_result_release(&res);

	/* a sandbox put to sleep by the service is woken up before a command */
	snprintf(path, sizeof(path), "/__fake/%s/%s", daytona ? "stop" : "pause", id);
	json_decref(fake_json(fake, "POST", path));
	rc = run(&s, id, echo, 10, &res);
	check(rc == 0 && res.exit_code == 0 && res.output && !strcmp(res.output, "awake\n"),
	      "a %s sandbox is woken for a command (rc %d, '%.120s')",
	      daytona ? "stopped" : "paused", rc, res.output ? res.output : "");
	proc_result_release(&res);

	if (daytona) {
		rc = run(&s, id, empty, 10, &res);
		check(rc == -1 && res.output && strstr(res.output, "empty"),
		      "an empty argument is refused, not silently dropped ('%.120s')",
		      res.output ? res.output : "");
		proc_result_release(&res);
	}

	rc = sbx_destroy(&s, id, NULL, err, sizeof(err));
	rc |= sbx_destroy(&s, id2, NULL, err, sizeof(err));
	check(rc == 0, "destroy both (%s)", rc ? err : "ok");
close:
	sbx_close(&s);
	log = fake_json(fake, "GET", "/__fake/log");
	{
		json_t *v = json_object_get(log, "violations");
		char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
		check(log && json_array_size(v) == 0,
		      "the fake recorded no protocol violation (%.1000s)", text ? text : "no log");
		free(text);
	}
	json_decref(log);
done:
	return check_summary();
}
