/* Wall-clock timestamps in the two forms the project uses. */
#ifndef TERRARIUM_CLOCK_H
#define TERRARIUM_CLOCK_H

#define CLOCK_DB_LEN 27   /* "YYYY-MM-DD HH:MM:SS.ffffff" + NUL */
#define CLOCK_API_LEN 28  /* "YYYY-MM-DDTHH:MM:SS.ffffffZ" + NUL */

/* Current UTC time as a MariaDB DATETIME(6) literal and as RFC 3339. Either may be NULL. */
void clock_now(char db[CLOCK_DB_LEN], char api[CLOCK_API_LEN]);

/* The same, SECONDS from now. */
void clock_in(long seconds, char db[CLOCK_DB_LEN], char api[CLOCK_API_LEN]);

#endif
