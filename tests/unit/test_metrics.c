/* Unit tests of reconciler/metrics.c: the totals read from a metrics file, a run's counts added,
 * the file written whole, and read back to the same totals. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../reconciler/metrics.h"
#include "unit.h"

/* A file as an earlier run wrote it: gauges (not totals: left out), counters, a step this run
 * does not know any more ("cache_store") and one it adds to ("sandbox"). */
static const char earlier[] =
	"# HELP terrarium_intents Provisioning intents by kind and state.\n"
	"# TYPE terrarium_intents gauge\n"
	"terrarium_intents{kind=\"provision\",state=\"done\"} 7\n"
	"terrarium_intents_due 2\n"
	"# TYPE terrarium_reconciler_attempts_total counter\n"
	"terrarium_reconciler_attempts_total 10\n"
	"terrarium_reconciler_done_total 8\n"
	"terrarium_reconciler_failures_total 2\n"
	"terrarium_reconciler_orphans_removed_total 1\n"
	"terrarium_reconciler_step_seconds_sum{step=\"sandbox\"} 4.500000\n"
	"terrarium_reconciler_step_seconds_count{step=\"sandbox\"} 9\n"
	"terrarium_reconciler_step_seconds_sum{step=\"cache_store\"} 1.250000\n"
	"terrarium_reconciler_step_seconds_count{step=\"cache_store\"} 5\n"
	"terrarium_reconciler_step_seconds_sum{step=\"\"} 3\n"
	"terrarium_reconciler_last_run_timestamp_seconds 1700000000\n";

static const struct metrics_step *step(const struct metrics *m, const char *name)
{
	for (int i = 0; i < m->nsteps; i++)
		if (!strcmp(m->steps[i].name, name))
			return &m->steps[i];
	fail_msg("no step %s", name);
	return NULL;
}

static void test_totals_over_runs(void **state)
{
	/* the run wrote once already (WAS), and has done more since (NOW) */
	struct recon_stats was = { .claimed = 1, .done = 1 }, now = { .claimed = 4, .done = 3 };
	struct metrics m, back;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	(void)state;

	was.steps[was.nsteps++] = (struct step_stat){ "sandbox", 0.5, 1 };
	now.failed = 1;
	now.steps[now.nsteps++] = (struct step_stat){ "sandbox", 2.0, 3 };
	now.steps[now.nsteps++] = (struct step_stat){ "network", 0.25, 1 };

	metrics_parse(&m, earlier);
	assert_int_equal((long)m.counter[METRICS_ATTEMPTS], 10);
	assert_int_equal((long)m.counter[METRICS_LEASES_LOST], 0); /* absent: none yet */
	assert_int_equal(m.nsteps, 2); /* the nameless sample is left out */
	metrics_add(&m, &now, &was);
	assert_int_equal((long)m.counter[METRICS_ATTEMPTS], 13);
	assert_int_equal((long)m.counter[METRICS_DONE], 10);
	assert_int_equal((long)m.counter[METRICS_FAILURES], 3);
	assert_int_equal((long)m.counter[METRICS_ORPHANS_REMOVED], 1);
	assert_true(step(&m, "sandbox")->seconds == 6.0 && step(&m, "sandbox")->count == 11);
	assert_true(step(&m, "cache_store")->seconds == 1.25 &&
		    step(&m, "cache_store")->count == 5);
	assert_true(step(&m, "network")->seconds == 0.25 && step(&m, "network")->count == 1);

	f = open_memstream(&text, &len);
	assert_non_null(f);
	metrics_print(f, &m, 1800000000);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(text, "\nterrarium_reconciler_attempts_total 13\n"));
	assert_non_null(strstr(text, "\nterrarium_reconciler_leases_lost_total 0\n"));
	assert_non_null(strstr(text, "# TYPE terrarium_reconciler_done_total counter\n"));
	assert_non_null(strstr(
		text, "\nterrarium_reconciler_step_seconds_sum{step=\"sandbox\"} 6.000000\n"));
	assert_non_null(
		strstr(text, "\nterrarium_reconciler_step_seconds_count{step=\"network\"} 1\n"));
	assert_non_null(strstr(text, "\nterrarium_reconciler_last_run_timestamp_seconds "
				     "1800000000\n"));
	/* what was written reads back to the same totals */
	metrics_parse(&back, text);
	assert_memory_equal(back.counter, m.counter, sizeof(m.counter));
	assert_int_equal(back.nsteps, m.nsteps);
	for (int i = 0; i < m.nsteps; i++) {
		assert_string_equal(back.steps[i].name, m.steps[i].name);
		assert_true(back.steps[i].seconds == m.steps[i].seconds);
		assert_true(back.steps[i].count == m.steps[i].count);
	}
	free(text);
}

/* No file yet, or a file cut short: what is whole counts, the rest is zero. */
static void test_no_file(void **state)
{
	struct recon_stats none = { 0 }, now = { .claimed = 2 };
	struct metrics m;
	(void)state;

	metrics_parse(&m, NULL);
	metrics_add(&m, &now, &none);
	assert_int_equal((long)m.counter[METRICS_ATTEMPTS], 2);
	assert_int_equal(m.nsteps, 0);
	metrics_parse(&m, "terrarium_reconciler_done_total 4\nterrarium_reconciler_step_sec");
	assert_int_equal((long)m.counter[METRICS_DONE], 4);
	assert_int_equal(m.nsteps, 0);
}

UNIT_MAIN(cmocka_unit_test(test_totals_over_runs), cmocka_unit_test(test_no_file))
