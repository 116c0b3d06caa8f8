#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048

/* Process-wide, set once at start-up before workers fork. */
static int log_level = LOG_INFO;

void log_set_level(int level)
{
	log_level = level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *names[] = { "debug", "info", "warn", "error" };
	char line[LOG_LINE_MAX];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if ((int)level < log_level)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s [%d] ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     ts.tv_nsec / 1000000, names[level], (int)getpid());
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}
