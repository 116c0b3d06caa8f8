/* The reconciler's Prometheus textfile (--metrics-file), held in memory: the counters and the
 * per-step time summary are totals over every run that wrote the file. A run reads the totals
 * the file holds (metrics_parse), adds what it did since it last wrote (metrics_add) and writes
 * the whole file from the struct (metrics_print), under a lock reconciler/main.c takes. */
#ifndef TERRARIUM_RECON_METRICS_H
#define TERRARIUM_RECON_METRICS_H

#include <stdio.h>

#include "recon.h"

#define METRICS_STEPS_MAX 64	 /* steps kept from the file and this run: older names too */
#define METRICS_STEP_NAME_MAX 64 /* bytes of a step's name, NUL included */

/* The counters, one row each of metrics.c's table. */
enum metrics_counter {
	METRICS_ATTEMPTS,	 /* intents claimed */
	METRICS_DONE,		 /* bound or torn down */
	METRICS_FAILURES,	 /* attempts that failed */
	METRICS_LEASES_LOST,	 /* intents dropped after losing the lease */
	METRICS_ORPHANS_REMOVED, /* sandboxes no session owned, removed by the sweep */
	METRICS_COUNTERS,
};

struct metrics_step {
	char name[METRICS_STEP_NAME_MAX];
	double seconds, count;
};

struct metrics {
	double counter[METRICS_COUNTERS];
	struct metrics_step steps[METRICS_STEPS_MAX];
	int nsteps;
};

/* The totals TEXT holds (the file as an earlier run wrote it; NULL or "" for none) into M, which
 * starts at zero: the counters' samples and the step summary's _sum and _count samples; other
 * lines, and steps past METRICS_STEPS_MAX, are left out. */
void metrics_parse(struct metrics *m, const char *text);

/* Add what a run counted since WAS (its counters and step times when it last wrote) to M. */
void metrics_add(struct metrics *m, const struct recon_stats *now, const struct recon_stats *was);

/* Write M to F as the textfile's counters, step summary and last-run time NOW (seconds since the
 * epoch), each with its HELP and TYPE lines. */
void metrics_print(FILE *f, const struct metrics *m, long long now);

#endif
