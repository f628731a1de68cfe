/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Concurrency on the multi-threaded loop: readers, writers, pollers and
 * mkdir/rmdir of the same buffer at once, while frames flow.  Nothing is
 * timed; the test fails if any process sees an error it should not, or if
 * the daemon dies or does not exit cleanly (under ASan/UBSan a
 * use-after-free or a leak makes it exit non-zero).  Written after TSan
 * found a read that touched its open file after replying; with a daemon
 * built with -fsanitize=thread (GAFS=path/to/it) this test reports that
 * kind of race again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define ROUNDS 400

/* Each worker exits 0, or the round it failed in + 1. */
static void reader(void)
{
	static const char *const files[] = {
		"registers/rx_frame_count", "metrics",		"errors",
		"buffers/0/status",	    "buffers/0/header", "README"};

	for (int i = 0; i < ROUNDS; i++) {
		const char *rel = files[i % 6];
		int fd = open(P(rel), O_RDONLY);
		char buf[256];

		if (fd < 0) {
			if (errno == ENOENT && !strncmp(rel, "buffers/", 8))
				continue; /* the buffer is between rmdir and mkdir */
			_exit(i + 1);
		}
		/* several small reads: offsets past 0 come from the snapshot */
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
	_exit(0);
}

static void writer(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		char v[8];

		snprintf(v, sizeof(v), "%d", i % 16);
		if (writef("registers/ar_cache", v) != 0 || writef("registers/aw_cache", v) != 0)
			_exit(i + 1);
		if (writef("registers/ar_cache", "junk") != -EINVAL)
			_exit(i + 1);
	}
	_exit(0);
}

static void buffer_churn(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		int r = mkdir(P("buffers/1"), 0755);

		if (r < 0 && errno != EEXIST)
			_exit(i + 1);
		writef("buffers/1/write_enable", "1");
		r = rmdir(P("buffers/1"));
		/* armed while the engine runs, or a file open elsewhere: EBUSY */
		if (r < 0 && errno != EBUSY && errno != ENOENT)
			_exit(i + 1);
		if (r < 0 && errno == EBUSY) {
			writef("registers/write_enable", "0");
			rmdir(P("buffers/1"));
			writef("registers/write_enable", "1");
		}
	}
	_exit(0);
}

static void poller(void)
{
	for (int i = 0; i < ROUNDS / 4; i++) {
		int fd = open(P("registers/rx_frame_count"), O_RDONLY);
		struct pollfd p = {.fd = fd, .events = POLLPRI};
		char buf[32];

		if (fd < 0 || pread(fd, buf, sizeof(buf), 0) <= 0)
			_exit(i + 1);
		if (poll(&p, 1, 20) < 0)
			_exit(i + 1);
		close(fd); /* with a poll handle pending half of the time */
	}
	_exit(0);
}

START_TEST(everything_at_once)
{
	void (*const workers[])(void) = {reader, reader, writer, buffer_churn, poller};
	enum { N = sizeof(workers) / sizeof(workers[0]) };
	pid_t pids[N];

	mnt_start("-o threads=4,interval_ms=1");
	ck_assert_int_eq(sh("cd $M && mkdir buffers/0 && echo 1 > buffers/0/write_enable && "
			    "echo 1 > registers/write_enable && echo 0 > sim/rate && "
			    "echo 1 > sim/running"),
			 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			workers[i]();
		ck_assert_int_gt(pids[i], 0);
	}
	for (int i = 0; i < N; i++) {
		int st;

		ck_assert_int_eq(waitpid(pids[i], &st, 0), pids[i]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "worker %d failed in round %d (status 0x%x)", i,
			      WIFEXITED(st) ? WEXITSTATUS(st) - 1 : -1, st);
	}
	ck_assert(is_mounted(M.dir));
	ck_assert_int_eq(sh("cat $M/device/version >/dev/null"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fs_stress");
	TCase *tc = tcase_create("stress");

	tcase_set_timeout(tc, TEST_TIMEOUT * 2);
	tcase_add_test(tc, everything_at_once);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
