/* The metrics textfile's counters and step summary as a struct: parsed once from the file,
 * added to, printed whole. */
#include "metrics.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define STEP_SUM "terrarium_reconciler_step_seconds_sum{step=\""
#define STEP_COUNT "terrarium_reconciler_step_seconds_count{step=\""

static const struct {
	const char *name, *help;
	size_t field; /* the long of struct recon_stats it totals */
} counters[METRICS_COUNTERS] = {
	[METRICS_ATTEMPTS] = { "terrarium_reconciler_attempts_total", "Intents claimed (attempts).",
			       offsetof(struct recon_stats, claimed) },
	[METRICS_DONE] = { "terrarium_reconciler_done_total",
			   "Intents completed (bound or torn down).",
			   offsetof(struct recon_stats, done) },
	[METRICS_FAILURES] = { "terrarium_reconciler_failures_total", "Attempts that failed.",
			       offsetof(struct recon_stats, failed) },
	[METRICS_LEASES_LOST] = { "terrarium_reconciler_leases_lost_total",
				  "Intents dropped after losing the lease.",
				  offsetof(struct recon_stats, lost) },
	[METRICS_ORPHANS_REMOVED] = { "terrarium_reconciler_orphans_removed_total",
				      "Sandboxes no session owned, removed by the sweep.",
				      offsetof(struct recon_stats, orphans) },
};

static long stat_of(const struct recon_stats *s, size_t field)
{
	return *(const long *)((const char *)s + field);
}

/* M's step NAME (LEN bytes), added when missing; NULL when M is full or NAME too long. */
static struct metrics_step *step_of(struct metrics *m, const char *name, size_t len)
{
	for (int i = 0; i < m->nsteps; i++)
		if (strlen(m->steps[i].name) == len && !strncmp(m->steps[i].name, name, len))
			return &m->steps[i];
	if (m->nsteps >= METRICS_STEPS_MAX || len >= METRICS_STEP_NAME_MAX)
		return NULL;
	memcpy(m->steps[m->nsteps].name, name, len);
	m->steps[m->nsteps].name[len] = '\0';
	return &m->steps[m->nsteps++];
}

/* One sample line LINE (LEN bytes, no newline) of the file into M. */
static void parse_line(struct metrics *m, const char *line, size_t len)
{
	const char *space = memchr(line, ' ', len), *name;
	size_t name_len = space ? (size_t)(space - line) : 0;
	struct metrics_step *s;
	double value;
	int sum;

	if (!name_len || *line == '#')
		return;
	value = strtod(space + 1, NULL);
	for (int i = 0; i < METRICS_COUNTERS; i++)
		if (strlen(counters[i].name) == name_len &&
		    !strncmp(line, counters[i].name, name_len)) {
			m->counter[i] = value;
			return;
		}
	sum = !strncmp(line, STEP_SUM, strlen(STEP_SUM));
	if (!sum && strncmp(line, STEP_COUNT, strlen(STEP_COUNT)))
		return;
	name = line + (sum ? strlen(STEP_SUM) : strlen(STEP_COUNT));
	/* the name runs to the '"}' that ends the sample's name */
	if (space < name + 3 || strncmp(space - 2, "\"}", 2))
		return;
	s = step_of(m, name, (size_t)(space - 2 - name));
	if (s && sum)
		s->seconds = value;
	else if (s)
		s->count = value;
}

void metrics_parse(struct metrics *m, const char *text)
{
	memset(m, 0, sizeof(*m));
	while (text && *text) {
		size_t len = strcspn(text, "\n");

		parse_line(m, text, len);
		text += len + (text[len] == '\n');
	}
}

void metrics_add(struct metrics *m, const struct recon_stats *now, const struct recon_stats *was)
{
	for (int i = 0; i < METRICS_COUNTERS; i++)
		m->counter[i] +=
			(double)(stat_of(now, counters[i].field) - stat_of(was, counters[i].field));
	for (int i = 0; i < now->nsteps; i++) {
		const struct step_stat *st = &now->steps[i], *prev = NULL;
		struct metrics_step *s = step_of(m, st->step, strlen(st->step));

		for (int k = 0; k < was->nsteps; k++)
			if (!strcmp(was->steps[k].step, st->step))
				prev = &was->steps[k];
		if (!s)
			continue;
		s->seconds += st->seconds - (prev ? prev->seconds : 0);
		s->count += (double)(st->count - (prev ? prev->count : 0));
	}
}

void metrics_print(FILE *f, const struct metrics *m, long long now)
{
	for (int i = 0; i < METRICS_COUNTERS; i++)
		fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %.0f\n", counters[i].name,
			counters[i].help, counters[i].name, counters[i].name, m->counter[i]);
	fprintf(f, "# HELP terrarium_reconciler_step_seconds Time spent per provisioning step.\n"
		   "# TYPE terrarium_reconciler_step_seconds summary\n");
	for (int i = 0; i < m->nsteps; i++)
		fprintf(f, "%s%s\"} %.6f\n%s%s\"} %.0f\n", STEP_SUM, m->steps[i].name,
			m->steps[i].seconds, STEP_COUNT, m->steps[i].name, m->steps[i].count);
	fprintf(f,
		"# HELP terrarium_reconciler_last_run_timestamp_seconds End of the last run.\n"
		"# TYPE terrarium_reconciler_last_run_timestamp_seconds gauge\n"
		"terrarium_reconciler_last_run_timestamp_seconds %lld\n",
		now);
}
