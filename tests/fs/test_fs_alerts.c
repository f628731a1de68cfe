/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * examples/gpuasyncfs.rules.yml, the alerting rules: promtool check rules
 * accepts them, and promtool test rules runs them over series recorded
 * from a simulated card driven through each fault (alert_series.py: the
 * engine off while frames arrive, injected write errors, no buffer
 * re-armed, healthy stretches between).  Each alert must fire at the end
 * of the phases that cause it and at no other phase's end.  The same
 * recording run against a rules file whose write-error alert watches the
 * wrong counter must fail, so the expectations are known to bite.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define RULES  GAFS_SRC "/examples/gpuasyncfs.rules.yml"
#define SERIES GAFS_SRC "/tests/fs/alert_series.py"

START_TEST(rules_are_valid)
{
	if (!have_cmd("promtool", "prometheus"))
		return;
	ck_assert_int_eq(sh("promtool check rules " RULES), 0);
}
END_TEST

START_TEST(alerts_follow_recorded_faults)
{
	char dir[] = "/tmp/gafs-alerts-XXXXXX";
	char *out;

	if (!have_cmd("promtool", "prometheus") || !have_py("yaml", "python3-yaml"))
		return;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	mnt_start("-o version=4");
	out = sh_out("python3 " SERIES " $M " RULES " %s/test.yml 2>&1 && echo RECORDED", dir);
	ck_assert_msg(strstr(out, "RECORDED\n"), "alert_series.py:\n%.1500s", out);
	free(out);
	ck_assert_int_eq(mnt_stop(), 0);

	out = sh_out("promtool test rules %s/test.yml 2>&1 && echo PASSED", dir);
	ck_assert_msg(strstr(out, "PASSED\n"), "promtool test rules:\n%.3000s", out);
	free(out);

	/* A write-error alert watching the read-error counter misses the
	 * recorded write errors: the same test must now fail. */
	ck_assert_int_eq(
		sh("cd %s && sed 's/increase(gpuasync_axi_write_error_count_total/"
		   "increase(gpuasync_axi_read_error_count_total/' " RULES " > bad.yml && "
		   "! cmp -s bad.yml " RULES " && "
		   "sed 's|^- .*gpuasyncfs.rules.yml$|- %s/bad.yml|' test.yml > bad-test.yml",
		   dir, dir),
		0);
	out = sh_out("promtool test rules %s/bad-test.yml 2>&1; echo rc=$?", dir);
	ck_assert_msg(strstr(out, "GpuAsyncWriteErrors") && strstr(out, "rc=1\n"),
		      "the broken rule was not caught:\n%.1500s", out);
	free(out);
	sh("rm -rf %s", dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fs_alerts");
	TCase *tc = tcase_create("alerts");

	tcase_set_timeout(tc, TEST_TIMEOUT);
	tcase_add_test(tc, rules_are_valid);
	tcase_add_test(tc, alerts_follow_recorded_faults);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
