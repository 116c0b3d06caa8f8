/* The control requests of the tests that drive a fake or a test server over HTTP
 * (tests/unit/unit_http.c; libcurl). */
#ifndef TERRARIUM_TESTS_UNIT_HTTP_H
#define TERRARIUM_TESTS_UNIT_HTTP_H

#include <jansson.h>

#define UNIT_HTTP_TIMEOUT_S 10L /* one control request */

/* METHOD BASE PATH with BODY (JSON text, or NULL: none): the answer's JSON (new reference). A
 * test failure unless it answers 200 with JSON. */
json_t *unit_http_json(const char *method, const char *base, const char *path, const char *body);

#endif
