/* Time: wall-clock timestamps in the two forms the project uses, the monotonic clock for
 * durations and deadlines, and sleeping. */
#ifndef TERRARIUM_CLOCK_H
#define TERRARIUM_CLOCK_H

#define CLOCK_DB_LEN 27	 /* "YYYY-MM-DD HH:MM:SS.ffffff" + NUL */
#define CLOCK_API_LEN 28 /* "YYYY-MM-DDTHH:MM:SS.ffffffZ" + NUL */

/* Current UTC time as a MariaDB DATETIME(6) literal and as RFC 3339. Either may be NULL. */
void clock_now(char db[CLOCK_DB_LEN], char api[CLOCK_API_LEN]);

/* The same, SECONDS from now. */
void clock_in(long seconds, char db[CLOCK_DB_LEN], char api[CLOCK_API_LEN]);

/* Seconds since the epoch of the UTC calendar time YEAR-MONTH-DAY HOUR:MIN:SEC (MONTH 1-12);
 * fields out of range carry over as timegm's do (February 30 is March 1 or 2). */
long long clock_utc(int year, int month, int day, int hour, int min, int sec);

/* The monotonic clock (CLOCK_MONOTONIC: never steps back, unrelated to the wall clock), in
 * milliseconds and in seconds with a fraction. For durations and deadlines only. */
long long clock_mono_ms(void);
double clock_mono_s(void);

/* Sleep MS milliseconds (nothing when MS <= 0). A signal whose handler runs meanwhile ends the
 * sleep early, so a stop request is seen at once. */
void clock_sleep_ms(long ms);

#endif
