/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Issue 24 item 12, bad input that used to get through, each with the real
 * tools or system calls: a FIFO as -o settings= or -o config= (start-up
 * hung); control characters from names and written text reaching errors
 * raw; thousands of open metrics files growing the daemon; sim/push on a
 * dead link blaming buffers; unknown -o keys and -o max_threads; rename,
 * link, symlink and xattr refusals without an errors line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"

START_TEST(fifo_refused)
{
	char dir[] = "/tmp/gafs-fifo.XXXXXX", *out;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(sh("mkfifo %s/f && mkdir %s/m", dir, dir), 0);
	/* timeout: the old daemon never returned; 124 would be that hang */
	out = sh_out("timeout 30 $GAFS --sim %s/m -o settings=%s/f 2>&1; echo rc=$?", dir, dir);
	ck_assert_msg(strstr(out, "not a regular file") && strstr(out, "rc=1"), "%s", out);
	free(out);
	out = sh_out("timeout 30 $GAFS --sim %s/m -o config=%s/f 2>&1; echo rc=$?", dir, dir);
	ck_assert_msg(strstr(out, "not a regular file") && strstr(out, "rc=1"), "%s", out);
	free(out);
	ck_assert(!is_mounted(dir));
	sh("rm -rf %s", dir);
}
END_TEST

START_TEST(bad_options)
{
	char dir[] = "/tmp/gafs-opt.XXXXXX", *out;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	out = sh_out("timeout 30 $GAFS --sim %s -o bogus_key=1 2>&1; echo rc=$?", dir);
	ck_assert_msg(strstr(out, "unknown option -o bogus_key=1: neither a gpuasyncfs option") &&
			      strstr(out, "rc=1"),
		      "%s", out);
	free(out);
	out = sh_out("timeout 30 $GAFS --sim %s -o max_threads=4 2>&1; echo rc=$?", dir);
	ck_assert_msg(strstr(out, "-o threads=N") && strstr(out, "rc=1"), "%s", out);
	free(out);
	ck_assert(!is_mounted(dir));
	rmdir(dir);
	/* FUSE's own options still pass */
	mnt_start("-o fsname=gafs-test,noatime");
}
END_TEST

/* ESC, CR, BEL from a buffer name and from written text: \xNN in errors. */
START_TEST(controls_escaped)
{
	mnt_start(NULL);
	ck_assert_int_ne(sh("mkdir \"$M/buffers/$(printf 'x\\033[31mred\\r\\a')\" 2>/dev/null"), 0);
	ck_assert_int_eq(writef("settings", "\033[2Jbogus\r = 1\n"), -EINVAL);
	ck_assert_int_eq(writef("registers/aw_cache", "\a\033"), -EINVAL);
	/* no control byte but the newlines */
	ck_assert_int_ne(sh("LC_ALL=C grep -q '[[:cntrl:]]' $M/errors"), 0);
	ck_assert_int_eq(sh("grep -qF 'buffers/x\\x1b[31mred\\x0d\\x07' $M/errors"), 0);
	ck_assert_int_eq(sh("grep -qF '\\x1b[2Jbogus' $M/errors"), 0);
}
END_TEST

/* Each refusal the daemon makes itself is an errno and an errors line. */
START_TEST(names_refused)
{
	unsigned int lines;

	mnt_start(NULL);
	lines = err_lines();
	ck_assert_int_eq(rename(P("errors"), P("errors2")), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_ptr_nonnull(strstr(err_last(), "errors: EPERM: names are fixed"));
	ck_assert_int_eq(link(P("errors"), P("sim/e")), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_ptr_nonnull(strstr(err_last(), "sim/e: EPERM: hard links"));
	ck_assert_int_eq(symlink("/tmp", P("sim/e")), -1);
	ck_assert_int_eq(errno, EPERM);
	ck_assert_ptr_nonnull(strstr(err_last(), "sim/e: EPERM: symbolic links"));
	ck_assert_int_eq(setxattr(P("errors"), "user.x", "1", 1, 0), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	ck_assert_ptr_nonnull(strstr(err_last(), "errors: ENOTSUP: extended attributes"));
	ck_assert_int_eq(removexattr(P("errors"), "user.x"), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	ck_assert_uint_eq(err_lines(), lines + 5);
	ck_assert_int_eq(access(P("errors2"), F_OK), -1);
}
END_TEST

START_TEST(push_on_dead_link)
{
	mnt_start(NULL);
	ck_assert_int_eq(sh("mkdir $M/buffers/0 && echo 1 > $M/buffers/0/write_enable"), 0);
	ck_assert_int_eq(writef("sim/link", "down"), 0);
	ck_assert_int_eq(writef("sim/push", "frame"), -ENOLINK);
	/* (reading errors adds the link note after it: grep, not the last line) */
	ck_assert_int_eq(
		sh("grep -qF \"sim/push: ENOLINK: push: the card's link is down\" $M/errors"), 0);
	ck_assert_int_eq(writef("sim/link", "up"), 0);
	ck_assert_int_eq(writef("sim/push", "frame"), 0);
}
END_TEST

static long daemon_rss_kib(void)
{
	char *s = sh_out("awk '/^VmRSS/ {print $2}' /proc/%d/status", (int)M.pid);
	long v = atol(s);

	free(s);
	return v;
}

/* 8000 open metrics files, each read once in part (so each would keep a
 * snapshot of about 16 KiB: 130 MB): the daemon holds at most its budget
 * (64 MiB) of snapshots.  Read to the end, a file keeps nothing. */
START_TEST(many_open_metrics)
{
	enum { N = 8000 };
	static int fds[N];
	struct rlimit rl;
	long before, after;
	char buf[64];

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max < N + 100) {
		skip_part("many_open_metrics: the hard limit on open files is below 8100");
		return;
	}
	rl.rlim_cur = N + 100;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	{
		/* The bound is the daemon's own memory: in the ASan build the
		 * sanitizer's quarantine (256 MB of freed blocks by default)
		 * would be counted too.  A plain daemon ignores the variable. */
		const char *old = getenv("ASAN_OPTIONS");
		char *opts;

		ck_assert_int_ge(asprintf(&opts, "%s%squarantine_size_mb=1", old ? old : "",
					  old && *old ? ":" : ""),
				 0);
		setenv("ASAN_OPTIONS", opts, 1);
		free(opts);
	}
	mnt_start(NULL);
	before = daemon_rss_kib();
	for (int i = 0; i < N; i++) {
		fds[i] = open(P("metrics"), O_RDONLY);
		ck_assert_int_ge(fds[i], 0);
		ck_assert_int_eq(read(fds[i], buf, sizeof(buf)), (ssize_t)sizeof(buf));
	}
	after = daemon_rss_kib();
	fprintf(stderr, "many_open_metrics: daemon grew by %ld KiB\n", after - before);
	ck_assert_msg(after - before < 90 * 1024, "daemon grew by %ld KiB for %d open files",
		      after - before, N);
	/* still served: a later part of the file, rendered for this read */
	ck_assert_int_gt(pread(fds[N - 1], buf, sizeof(buf), 100), 0);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	/* Not checked: unmounting while thousands of releases are still queued
	 * ends the daemon's loop with ECONNABORTED, exit status 1 (as before
	 * this change; seen with the main branch's daemon too). */
	mnt_stop();
}
END_TEST

SUITE_MAIN("operator", "operator", TEST_TIMEOUT * 2, {fifo_refused}, {bad_options},
	   {controls_escaped}, {names_refused}, {push_on_dead_link}, {many_open_metrics})
