/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Issue 24 item 5: the files people tail, page and copy (errors, metrics,
 * README, config, settings) with the real tools.  Their st_size is their
 * real length (it was the sysfs page, 4096, so tail -n 2 errors showed an
 * old line cut at byte 4096, and tail -f errors saw nothing); errors only
 * grows between drops, so tail -f shows every new line, and a drop of the
 * ring is a truncation tail reports.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* @n refused writes, each naming "@tag<i>" in its errors line. */
static void make_errors(const char *tag, int from, int n)
{
	char v[64];

	for (int i = from; i < from + n; i++) {
		snprintf(v, sizeof(v), "%s%d", tag, i);
		ck_assert_int_eq(writef("registers/aw_cache", v), -EINVAL);
	}
}

/* Wait (15 s at most: tail polls a FUSE file once a second) until file
 * @path holds @needle. */
static bool wait_for(const char *path, const char *needle)
{
	for (int t = 0; t < 15000; t += 50) {
		if (sh("grep -qF -- \"%s\" '%s'", needle, path) == 0)
			return true;
		sleep_ms(50);
	}
	return false;
}

/* Same size by stat, wc -c and cat; tail, head -c, less and cp agree with cat. */
static void check_tools(const char *f)
{
	ck_assert_msg(sh("cd $M && s=$(stat -c %%s %s) && c=$(cat %s | wc -c) && "
			 "w=$(wc -c < %s) && test $s = $c && test $w = $c && test $c -gt 0",
			 f, f, f) == 0,
		      "%s: stat, wc -c and cat disagree", f);
	ck_assert_msg(sh("cd $M && test \"$(tail -n 2 %s)\" = \"$(cat %s | tail -n 2)\"", f, f) ==
			      0,
		      "%s: tail -n 2 differs from the end of cat", f);
	ck_assert_msg(
		sh("cd $M && test \"$(tail -c 100 %s)\" = \"$(cat %s | tail -c 100)\"", f, f) == 0,
		"%s: tail -c", f);
	ck_assert_int_eq(sh("cd $M && test $(head -c 100 %s | wc -c) = 100", f), 0);
	if (have_cmd("less", "less"))
		ck_assert_msg(sh("cd $M && less -FX %s < /dev/null | cmp -s - %s", f, f) == 0,
			      "%s: less", f);
	ck_assert_msg(sh("cd $M && t=$(mktemp) && cp %s $t && cat %s | cmp -s - $t; r=$?; "
			 "rm -f $t; exit $r",
			 f, f) == 0,
		      "%s: cp", f);
}

START_TEST(real_sizes)
{
	char *last;

	mnt_start(NULL);
	make_errors("long-value-to-fill-errors-past-one-page-", 0, 60);
	ck_assert_int_gt(sh("exit $(( $(cat $M/errors | wc -c) > 4096 ))"), 0);
	check_tools("errors");
	/* the newest line, whole */
	last = sh_out("tail -n 1 $M/errors");
	ck_assert_msg(strstr(last, "fill-errors-past-one-page-59' is not a number"), "%s", last);
	free(last);
	check_tools("README");
	check_tools("config");
	check_tools("settings");
	/* metrics and prometheus/gpuasync.prom change between renders (the
	 * poll sample counter): compare names, and nothing is cut */
	ck_assert_int_gt(sh("exit $(( $(wc -c < $M/metrics) > 4096 ))"), 0);
	ck_assert_int_eq(sh("cd $M && test \"$(tail -n 1 metrics | cut -d'{' -f1)\" = "
			    "gpuasyncfs_poll_notifications_total"),
			 0);
	ck_assert_int_eq(sh("cd $M && t=$(mktemp) && cp prometheus/gpuasync.prom $t && "
			    "tail -n 1 $t | grep -q '^gpuasyncfs_poll_notifications_total{.*} 0$'; "
			    "r=$?; rm -f $t; exit $r"),
			 0);
	/* registers keep the sysfs page: live values are not rendered for a stat */
	ck_assert_int_eq(sh("test $(stat -c %%s $M/registers/rx_frame_count) = 4096"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
}
END_TEST

/* tail -f shows each new errors line, also across the ring's drops. */
START_TEST(tail_follow)
{
	char out[64], *pid;
	int fd;

	snprintf(out, sizeof(out), "/tmp/gafs-tail.XXXXXX");
	fd = mkstemp(out);
	ck_assert_int_ge(fd, 0);
	mnt_start("-o errors_kept=2");
	make_errors("before", 0, 3);
	pid = sh_out("timeout 120 tail -f -s 0.2 $M/errors > %s 2>&1 & echo $!", out);
	ck_assert_msg(wait_for(out, "before2"), "tail -f never showed the existing lines");
	/* 12 new lines: the ring (2 to 4 lines) drops old ones several times */
	for (int i = 0; i < 12; i++) {
		char tok[32];

		make_errors("follow", i, 1);
		snprintf(tok, sizeof(tok), "'follow%d'", i);
		ck_assert_msg(wait_for(out, tok), "tail -f missed line %d", i);
	}
	ck_assert_int_eq(sh("grep -q 'errors: file truncated' %s", out), 0);
	/* what is kept: at least errors_kept lines, the newest last */
	ck_assert_int_eq(sh("n=$(wc -l < $M/errors) && test $n -ge 2 && test $n -le 4"), 0);
	ck_assert_int_eq(sh("tail -n 1 $M/errors | grep -q \"'follow11'\""), 0);
	sh("kill %d", atoi(pid));
	free(pid);
	ck_assert_int_eq(mnt_stop(), 0);
	close(fd);
	unlink(out);
}
END_TEST

int main(void)
{
	return run_suite(suite_of("tools", "tools", TEST_TIMEOUT * 2,
				  SUITE_TESTS({real_sizes}, {tail_follow})));
}
