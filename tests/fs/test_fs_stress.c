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
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define ROUNDS 400
/* One operation of a worker taking longer than this means the control
 * plane is starved (it takes milliseconds): fail and say where. */
#define STUCK_S 60
/* The whole run: every worker done well within this, or the parent stops
 * them and reports (before Check's own timeout, which says nothing). */
#define DEADLINE_S (TEST_TIMEOUT * 2 - 15)

/* Each worker reports what went wrong on a pipe (round, step, errno) and
 * exits 1, or exits 0; exit codes never carry a count, so nothing wraps. */
static int report_fd = -1;
static const char *worker_name = "?";
static const char *volatile step = "start";
static volatile int round_no;

/* Where each worker is, in memory the parent shares: when the whole run
 * outlasts its deadline the parent says who was stuck where. */
struct progress {
	int round;
	char step[48];
};
static struct progress *progress; /* [N] */
static int worker_no;

static void worker_fail(const char *what, int err)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "%s, round %d: %s: %s\n", worker_name, round_no, what,
			 err ? strerror(err) : "unexpected result");

	if (write(report_fd, line, (size_t)n) < 0)
		_exit(2);
	_exit(1);
}

static void on_alarm(int sig)
{
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "%s, round %d: '%s' took over %d s (control starved)\n", worker_name,
			 round_no, step, STUCK_S);

	(void)sig;
	if (write(report_fd, line, (size_t)n) < 0)
		_exit(3);
	_exit(1);
}

static void begin(const char *name)
{
	worker_name = name;
	signal(SIGALRM, on_alarm);
}

/* Start step @what of round @i: each step gets STUCK_S seconds. */
static void at(int i, const char *what)
{
	round_no = i;
	step = what;
	progress[worker_no].round = i;
	snprintf(progress[worker_no].step, sizeof(progress[worker_no].step), "%s", what);
	alarm(STUCK_S);
}

static void reader(void)
{
	static const char *const files[] = {
		"registers/rx_frame_count", "metrics",		"errors",
		"buffers/0/status",	    "buffers/0/header", "README"};

	begin("reader");
	for (int i = 0; i < ROUNDS; i++) {
		const char *rel = files[i % 6];
		char buf[256];
		ssize_t n;
		int fd;

		at(i, rel);
		fd = open(P(rel), O_RDONLY);
		if (fd < 0) {
			if (errno == ENOENT && !strncmp(rel, "buffers/", 8))
				continue; /* the buffer is between rmdir and mkdir */
			worker_fail(rel, errno);
		}
		/* several small reads: offsets past 0 come from the snapshot */
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			;
		if (n < 0)
			worker_fail(rel, errno);
		close(fd);
	}
	_exit(0);
}

static void writer(void)
{
	begin("writer");
	for (int i = 0; i < ROUNDS; i++) {
		char v[8];
		int r;

		snprintf(v, sizeof(v), "%d", i % 16);
		at(i, "write ar_cache/aw_cache");
		if ((r = writef("registers/ar_cache", v)) != 0 ||
		    (r = writef("registers/aw_cache", v)) != 0)
			worker_fail("write ar_cache/aw_cache", -r);
		at(i, "write junk");
		if (writef("registers/ar_cache", "junk") != -EINVAL)
			worker_fail("junk was not refused with EINVAL", 0);
	}
	_exit(0);
}

static void buffer_churn(void)
{
	int r;

	begin("buffer_churn");
	for (int i = 0; i < ROUNDS; i++) {
		at(i, "mkdir buffers/1");
		r = mkdir(P("buffers/1"), 0755);
		if (r < 0 && errno != EEXIST)
			worker_fail("mkdir buffers/1", errno);
		at(i, "arm buffers/1");
		r = writef("buffers/1/write_enable", "1");
		if (r != 0)
			worker_fail("arm buffers/1", -r);
		at(i, "rmdir buffers/1");
		r = rmdir(P("buffers/1"));
		/* armed while the engine runs, or a file open elsewhere: EBUSY */
		if (r < 0 && errno != EBUSY)
			worker_fail("rmdir buffers/1", errno);
		if (r < 0) {
			at(i, "engine off, rmdir, engine on");
			if ((r = writef("registers/write_enable", "0")) != 0)
				worker_fail("write_enable 0", -r);
			if (rmdir(P("buffers/1")) < 0 && errno != EBUSY)
				worker_fail("rmdir buffers/1 with the engine off", errno);
			if ((r = writef("registers/write_enable", "1")) != 0)
				worker_fail("write_enable 1", -r);
		}
	}
	_exit(0);
}

static void poller(void)
{
	begin("poller");
	for (int i = 0; i < ROUNDS / 4; i++) {
		int fd;
		struct pollfd p = {.events = POLLPRI};
		char buf[32];

		at(i, "open+pread rx_frame_count");
		fd = open(P("registers/rx_frame_count"), O_RDONLY);
		if (fd < 0 || pread(fd, buf, sizeof(buf), 0) <= 0)
			worker_fail("open+pread rx_frame_count", errno);
		p.fd = fd;
		at(i, "poll");
		if (poll(&p, 1, 20) < 0)
			worker_fail("poll", errno);
		close(fd); /* with a poll handle pending half of the time */
	}
	_exit(0);
}

START_TEST(everything_at_once)
{
	void (*const workers[])(void) = {reader, reader, writer, buffer_churn, poller};
	enum { N = sizeof(workers) / sizeof(workers[0]) };
	pid_t pids[N];
	int pfd[2];
	char report[4096] = "";
	ssize_t got;
	bool all_ok = true;

	mnt_start("-o threads=4,interval_ms=1");
	/* close-on-exec: only the forked workers may hold the write end, so
	 * the read below ends when they have */
	ck_assert_int_eq(pipe2(pfd, O_CLOEXEC), 0);
	progress = mmap(NULL, N * sizeof(*progress), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert(progress != MAP_FAILED);
	ck_assert_int_eq(sh("cd $M && mkdir buffers/0 && echo 1 > buffers/0/write_enable && "
			    "echo 1 > registers/write_enable && echo 0 > sim/rate && "
			    "echo 1 > sim/running"),
			 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(pfd[0]);
			report_fd = pfd[1];
			worker_no = i;
			workers[i]();
		}
		ck_assert_int_gt(pids[i], 0);
	}
	close(pfd[1]);
	{
		time_t end = time(NULL) + DEADLINE_S;
		bool done[N] = {false};
		int left = N, st;
		char where[1024] = "";

		/* only the workers: the daemon is a child of ours too */
		while (left > 0 && time(NULL) < end) {
			struct timespec ts = {0, 50000000};

			for (int i = 0; i < N; i++) {
				if (done[i] || waitpid(pids[i], &st, WNOHANG) != pids[i])
					continue;
				done[i] = true;
				left--;
				all_ok = all_ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
			}
			if (left > 0)
				nanosleep(&ts, NULL);
		}
		if (left > 0) {
			for (int i = 0; i < N; i++) {
				size_t n = strlen(where);

				if (done[i])
					continue;
				snprintf(where + n, sizeof(where) - n,
					 "\n  worker %d: round %d, '%s'", i, progress[i].round,
					 progress[i].step);
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &st, 0);
			}
			ck_abort_msg("workers not done after %d s (the control plane is starved: "
				     "each request is slow, none hangs):%s",
				     DEADLINE_S, where);
		}
	}
	got = read(pfd[0], report, sizeof(report) - 1);
	close(pfd[0]);
	ck_assert_msg(all_ok && got <= 0, "workers failed:\n%s", got > 0 ? report : "(no report)");
	ck_assert(is_mounted(M.dir));
	ck_assert_int_eq(sh("cat $M/device/version >/dev/null"), 0);
}
END_TEST

SUITE_MAIN("fs_stress", "stress", TEST_TIMEOUT * 2, {everything_at_once})
