/* Checks of a validator's answer shared by the unit tests (tests/unit/unit_verr.c): a refused
 * case checks the status, the error_code and that the message names the field. */
#ifndef TERRARIUM_TESTS_UNIT_VERR_H
#define TERRARIUM_TESTS_UNIT_VERR_H

#include "handlers/verr.h"

/* A test failure naming LINE unless the validator succeeded (FAILED is 0); ERR says why not. */
void unit_verr_ok(int line, int failed, const struct verr *err);

/* A test failure naming LINE unless the validator failed (FAILED is not 0) and set ERR to
 * STATUS and CODE with a message containing NEEDLE. */
void unit_verr_refused(int line, int failed, const struct verr *err, int status, const char *code,
		       const char *needle);

#endif
