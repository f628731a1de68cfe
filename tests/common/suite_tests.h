/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A Check TCase from a table of its tests, so a suite is a list of names
 * rather than a tcase_add_test() line each:
 *
 *	suite_add_tests(s, "open", 0, SUITE_TESTS({ test_open }, { test_each, NFLAV }));
 */
#ifndef GA_TEST_SUITE_TESTS_H
#define GA_TEST_SUITE_TESTS_H

#include <check.h>
#include <stddef.h>

/* A test, run once, or as a loop test over _i = 0 .. @loops - 1. */
struct suite_test {
	const TTest *test;
	int loops; /* 0: once */
};

/* The rows, ended by the { NULL } row suite_add_tests stops at. */
#define SUITE_TESTS(...) ((const struct suite_test[]){__VA_ARGS__, {NULL, 0}})

/* An includer that defines SUITE_TEARDOWN (the fs harness: the test's
 * mount must stop cleanly) has every TCase run it after each test that
 * passed, in the test's process (a checked fixture). */
#ifdef SUITE_TEARDOWN
void SUITE_TEARDOWN(void);
#endif

/* Add the TCase @name holding @tests, in order, with a timeout of @timeout
 * seconds (0: Check's default); the TCase, for fixtures. */
static inline TCase *suite_add_tests(Suite *s, const char *name, int timeout,
				     const struct suite_test *tests)
{
	TCase *tc = tcase_create(name);

	if (timeout > 0)
		tcase_set_timeout(tc, timeout);
	/* tcase_add_test is the loop test over 0 .. 1 */
	for (; tests->test; tests++)
		tcase_add_loop_test(tc, tests->test, 0, tests->loops > 0 ? tests->loops : 1);
#ifdef SUITE_TEARDOWN
	tcase_add_checked_fixture(tc, NULL, SUITE_TEARDOWN);
#endif
	suite_add_tcase(s, tc);
	return tc;
}

/* A suite named @name of the one TCase @tcase. */
static inline Suite *suite_of(const char *name, const char *tcase, int timeout,
			      const struct suite_test *tests)
{
	Suite *s = suite_create(name);

	suite_add_tests(s, tcase, timeout, tests);
	return s;
}

/* The whole main() of a suite of the one TCase @tcase, its rows after
 * @timeout; run_suite is the includer's (common/run_suite.h, or the fs
 * harness's, which also counts skipped parts):
 *
 *	SUITE_MAIN("prbs", "core", 0, {test_words_by_hand}, {test_rejects})
 */
#define SUITE_MAIN(name, tcase, timeout, ...)                                                      \
	int main(void)                                                                             \
	{                                                                                          \
		return run_suite(suite_of(name, tcase, timeout, SUITE_TESTS(__VA_ARGS__)));        \
	}

#endif
