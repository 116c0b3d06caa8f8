#ifndef TERRARIUM_TEST_STUBS_H
#define TERRARIUM_TEST_STUBS_H

#include "../../fcgi/router.h"

extern int stub_auth_result;          /* 0: authenticated; -1: 401 */
extern const char *stub_last_handler; /* name of the handler that ran, or NULL */

#endif
