/* JSON helpers shared by the unit tests (tests/unit/unit_json.c). */
#ifndef TERRARIUM_TESTS_UNIT_JSON_H
#define TERRARIUM_TESTS_UNIT_JSON_H

#include <stddef.h>

#include <jansson.h>

/* New reference: TEXT parsed the way the request layer parses bodies (duplicate keys refused,
 * any value at the top); a test failure naming LINE when TEXT is not JSON. */
json_t *unit_parse(int line, const char *text);

/* Caller frees: UNIT repeated N times. */
char *unit_rep(const char *unit, size_t n);

/* A test failure naming LINE unless ACTUAL equals the JSON EXPECTED_TEXT. */
void unit_assert_json(int line, json_t *actual, const char *expected_text);
#define assert_json(actual, text) unit_assert_json(__LINE__, actual, text)

#endif
