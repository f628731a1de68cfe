/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Every unit test's main ends here: run the suite, exit status from it. */
#ifndef GA_TEST_RUN_SUITE_H
#define GA_TEST_RUN_SUITE_H

#include <check.h>
#include <stdlib.h>

#include "suite_tests.h"

static inline int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
