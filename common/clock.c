#include "clock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void clock_now(char db[CLOCK_DB_LEN], char api[CLOCK_API_LEN])
{
	clock_in(0, db, api);
}

void clock_in(long seconds, char db[CLOCK_DB_LEN], char api[CLOCK_API_LEN])
{
	struct timespec ts;
	char base[24];
	struct tm tm;
	unsigned us;
	time_t t;

	clock_gettime(CLOCK_REALTIME, &ts);
	t = ts.tv_sec + seconds;
	gmtime_r(&t, &tm);
	us = (unsigned)(ts.tv_nsec / 1000) % 1000000u;
	if (db) {
		strftime(base, sizeof(base), "%Y-%m-%d %H:%M:%S", &tm);
		snprintf(db, CLOCK_DB_LEN, "%.19s.%06u", base, us);
	}
	if (api) {
		strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(api, CLOCK_API_LEN, "%.19s.%06uZ", base, us);
	}
}

long long clock_utc(int year, int month, int day, int hour, int min, int sec)
{
	struct tm tm = { 0 };

	tm.tm_year = year - 1900;
	tm.tm_mon = month - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	return (long long)timegm(&tm);
}

long long clock_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double clock_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void clock_sleep_ms(long ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
}
