/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Issue 24 item 5: the files people tail, page and copy (errors, metrics,
 * README, config, settings) with the real tools.  Their st_size is their
 * real length (it was the sysfs page, 4096, so tail -n 2 errors showed an
 * old line cut at byte 4096, and tail -f errors saw nothing); errors only
 * grows between drops, so tail -f shows every new line, and a drop of the
 * ring is a truncation tail reports.  Every file of a mount, on every
 * firmware version and an observer mount, reports as st_size what a read
 * returns (pyrogue said 4096 and held 6093, so tail and less +G stopped
 * short).
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
	/* every text file reports its length, registers too (was 4096) */
	ck_assert_int_eq(sh("cd $M && test $(stat -c %%s registers/version) = "
			    "$(cat registers/version | wc -c)"),
			 0);
}
END_TEST

/* What a read returns, for every file of a mount: st_size through the
 * open file (as tail's fstat and lseek) and by path equal the bytes read;
 * a write-only file reports 0. */
static const char every_file_py[] =
	"import os, sys\n"
	"bad = []\n"
	"n = 0\n"
	"for top, dirs, files in os.walk(sys.argv[1]):\n"
	"    for f in files:\n"
	"        p = os.path.join(top, f)\n"
	"        st = os.stat(p)\n"
	"        if not st.st_mode & 0o444:\n"
	"            if st.st_size: bad.append((p, 'write-only, size', st.st_size))\n"
	"            continue\n"
	"        fd = os.open(p, os.O_RDONLY)\n"
	"        size = os.fstat(fd).st_size\n"
	"        data = b''\n"
	"        while True:\n"
	"            b = os.read(fd, 65536)\n"
	"            if not b: break\n"
	"            data += b\n"
	"        os.close(fd)\n"
	"        n += 1\n"
	"        if len(data) != size: bad.append((p, size, len(data)))\n"
	"        live = ('registers/', 'errors', 'metrics', '.prom', 'state.yaml', 'frames/',\n"
	"                'latency/', 'uptime', 'link', 'device/pinned', 'status', 'sim/')\n"
	"        if not any(x in p for x in live) and os.stat(p).st_size != len(data):\n"
	"            bad.append((p, 'by path', os.stat(p).st_size, len(data)))\n"
	"print(n, 'files', bad)\n"
	"sys.exit(1 if bad or n < 40 else 0)\n";

START_TEST(every_file_sized)
{
	static const char *const mounts[] = {"-o version=1", "-o version=2", "-o version=3",
					     "-o version=4", "-o version=5", "-o observe"};
	char py[] = "/tmp/gafs-sizes-XXXXXX";
	int fd = mkstemp(py);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, every_file_py, strlen(every_file_py)),
			 (ssize_t)strlen(every_file_py));
	close(fd);
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		char *out;

		mnt_start(mounts[i]);
		if (!strstr(mounts[i], "observe"))
			ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/read_buffers/0"), 0);
		out = sh_out("python3 %s $M 2>&1; echo rc=$?", py);
		ck_assert_msg(strstr(out, "files []") && strstr(out, "rc=0"), "%s: %s", mounts[i],
			      out);
		free(out);
		ck_assert_int_eq(mnt_stop(), 0);
	}
	unlink(py);
}
END_TEST

/* pyrogue (6093 bytes, was 4096 by stat) and other files under 4096 or
 * over it, with tail, tail -f, less +G and wc -c. */
START_TEST(tail_less_wc_every_kind)
{
	static const char *const files[] = {"pyrogue",	      "README",
					    "settings.yaml",  "registers/version",
					    "device/version", "registers/ar_cache"};
	char out[] = "/tmp/gafs-tailf-XXXXXX";
	char *pid, *last;
	int fd;

	mnt_start("-o version=4");
	ck_assert_int_gt(sh("exit $(( $(cat $M/pyrogue | wc -c) > 4096 ))"), 0);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *f = files[i];

		ck_assert_msg(sh("cd $M && s=$(stat -c %%s %s) && c=$(cat %s | wc -c) && "
				 "test $s = $c && test $(wc -c < %s) = $c && "
				 "test \"$(wc -c %s)\" = \"$c %s\"",
				 f, f, f, f, f) == 0,
			      "%s: stat, wc -c and cat disagree", f);
		ck_assert_msg(sh("cd $M && test \"$(tail -n 2 %s)\" = \"$(cat %s | tail -n 2)\"", f,
				 f) == 0,
			      "%s: tail -n 2 differs from the end of cat", f);
		/* less +G on a terminal (script's pty, lines chopped): the last
		 * line shown begins as cat's last line */
		if (have_cmd("less", "less") && have_cmd("script", "bsdutils"))
			ck_assert_msg(sh("cd $M && a=$(TERM=vt100 script -qc 'less -E -X -S +G %s' "
					 "/dev/null < /dev/null | "
					 "sed 's/\\x1b\\[[0-9;?]*[a-zA-Z]//g; s/\\x1b[=>]//g' | "
					 "tr -d '\\r' | grep -v '^$' | tail -n 1 | cut -c1-24) && "
					 "test \"$a\" = \"$(tail -n 1 %s | cut -c1-24)\"",
					 f, f) == 0,
				      "%s: less +G does not end where cat does", f);
	}
	/* tail -f prints the whole end of pyrogue (it reads to st_size first) */
	fd = mkstemp(out);
	ck_assert_int_ge(fd, 0);
	close(fd);
	last = sh_out("tail -n 1 $M/pyrogue");
	last[strcspn(last, "\n")] = '\0';
	pid = sh_out("timeout 60 tail -n 3 -f -s 0.2 $M/pyrogue > %s 2>&1 & echo $!", out);
	ck_assert_msg(wait_for(out, last), "tail -f never showed '%s'", last);
	ck_assert_int_eq(sh("kill %d; cat %s | wc -l | grep -qx 3", atoi(pid), out), 0);
	free(pid);
	free(last);
	unlink(out);
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

SUITE_MAIN("tools", "tools", TEST_TIMEOUT * 2, {real_sizes}, {tail_follow}, {every_file_sized},
	   {tail_less_wc_every_kind})
