/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * poll(POLLPRI) and select() wake-ups on live files (issue 3 item 5):
 * a reader waits on registers/rx_frame_count while frames flow and wakes
 * with a new value each time; a file whose value does not change does not
 * wake it; a buffer's status wakes when a frame lands; errors wakes when
 * a request is refused.  Timeouts only bound a failing test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include "harness.h"

static unsigned long long read_at0(int fd)
{
	char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	return strtoull(buf, NULL, 0);
}

static int wait_pri(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLPRI};
	int n = poll(&p, 1, timeout_ms);

	ck_assert_int_ge(n, 0);
	return n ? p.revents : 0;
}

START_TEST(rx_frame_count_wakes_poll)
{
	int fd;
	unsigned long long v, w;

	mnt_start("-o interval_ms=10");
	fd = open(P("registers/rx_frame_count"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	v = read_at0(fd);
	/* frames dropped while the engine is off still count */
	ck_assert_int_eq(sh("echo 50 > $M/sim/rate && echo 1 > $M/sim/running"), 0);
	for (int i = 0; i < 3; i++) {
		int re = wait_pri(fd, 10000);

		ck_assert_msg(re & POLLPRI, "no POLLPRI (revents 0x%x) while frames flow", re);
		w = read_at0(fd);
		ck_assert_uint_gt(w, v);
		v = w;
	}
	close(fd);
}
END_TEST

START_TEST(rx_frame_count_wakes_select)
{
	int fd;
	unsigned long long v;
	fd_set ex;
	struct timeval tv = {10, 0};

	mnt_start("-o interval_ms=10");
	fd = open(P("registers/rx_frame_count"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	v = read_at0(fd);
	ck_assert_int_eq(sh("echo 50 > $M/sim/rate && echo 1 > $M/sim/running"), 0);
	FD_ZERO(&ex);
	FD_SET(fd, &ex);
	ck_assert_int_eq(select(fd + 1, NULL, NULL, &ex, &tv), 1);
	ck_assert(FD_ISSET(fd, &ex));
	ck_assert_uint_gt(read_at0(fd), v);
	close(fd);
}
END_TEST

/* The sampler's passes so far (metrics: gpuasyncfs_poll_samples_total). */
static unsigned long long samples(void)
{
	char *m = readf("metrics"), *p;
	unsigned long long n = 0;

	ck_assert_ptr_nonnull(m);
	p = strstr(m, "\ngpuasyncfs_poll_samples_total{");
	ck_assert_ptr_nonnull(p);
	p = strchr(p, '}');
	n = strtoull(p + 1, NULL, 10);
	free(m);
	return n;
}

/* A poll(POLLPRI) of up to 30 s in a thread. */
struct waiter {
	pthread_t th;
	int fd, revents;
	atomic_int done;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->revents = wait_pri(w->fd, 30000);
	atomic_store(&w->done, 1);
	return NULL;
}

/*
 * Absence, decided by events: a poll on @fd stays asleep while the
 * sampler looks at the file three more times.  Returns with the waiter
 * still polling; the caller changes the file and joins it.
 */
static void quiet_for_three_samples(struct waiter *w, int fd)
{
	unsigned long long s0;

	w->fd = fd;
	atomic_store(&w->done, 0);
	ck_assert_int_eq(pthread_create(&w->th, NULL, waiter_main, w), 0);
	s0 = samples();
	for (int i = 0; i < 20000 && samples() < s0 + 3 && !atomic_load(&w->done); i++)
		usleep(1000);
	ck_assert_msg(!atomic_load(&w->done), "woken without a change (revents 0x%x)", w->revents);
	ck_assert_msg(samples() >= s0 + 3, "the sampler did not run");
}

START_TEST(quiet_when_unchanged)
{
	struct waiter w;
	int fd;

	mnt_start("-o interval_ms=5");
	fd = open(P("registers/ar_cache"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	read_at0(fd);
	quiet_for_three_samples(&w, fd);
	/* a change made through another file wakes it */
	ck_assert_int_eq(writef("registers/ar_cache", "7"), 0);
	pthread_join(w.th, NULL);
	ck_assert(w.revents & POLLPRI);
	ck_assert_uint_eq(read_at0(fd), 7);
	quiet_for_three_samples(&w, fd); /* consumed by the read */
	ck_assert_int_eq(writef("registers/ar_cache", "3"), 0);
	pthread_join(w.th, NULL);
	ck_assert(w.revents & POLLPRI);
	close(fd);
}
END_TEST

START_TEST(buffer_status_and_errors_wake)
{
	int st, er;
	char buf[64];

	mnt_start("-o interval_ms=10");
	ck_assert_int_eq(sh("mkdir $M/buffers/0 && echo 1 > $M/buffers/0/write_enable && "
			    "echo 1 > $M/registers/write_enable"),
			 0);
	st = open(P("buffers/0/status"), O_RDONLY);
	er = open(P("errors"), O_RDONLY);
	ck_assert_int_ge(st, 0);
	ck_assert_int_ge(er, 0);
	ck_assert_int_eq(pread(st, buf, sizeof(buf), 0), 5); /* FREE\n */
	ck_assert_int_ge(pread(er, buf, sizeof(buf), 0), 0);
	ck_assert_int_eq(sh("printf x > $M/sim/push"), 0);
	ck_assert(wait_pri(st, 10000) & POLLPRI);
	ck_assert_int_eq(pread(st, buf, sizeof(buf), 0), 6);
	ck_assert(!memcmp(buf, "READY\n", 6));
	ck_assert_int_eq(writef("registers/version", "1"), -EACCES);
	ck_assert(wait_pri(er, 10000) & POLLPRI);
	close(st);
	close(er);
}
END_TEST

/* What docs/guide.md promises for header, write_enable and sim/ files too:
 * each wakes when its value changes, and says the new value. */
START_TEST(header_write_enable_and_sim_wake)
{
	int hd, we, dl, rn;
	char buf[128];

	mnt_start("-o interval_ms=10");
	ck_assert_int_eq(sh("mkdir $M/buffers/0 && echo 1 > $M/registers/write_enable"), 0);
	hd = open(P("buffers/0/header"), O_RDONLY);
	we = open(P("buffers/0/write_enable"), O_RDONLY);
	dl = open(P("sim/stats/delivered"), O_RDONLY);
	rn = open(P("sim/running"), O_RDONLY);
	ck_assert(hd >= 0 && we >= 0 && dl >= 0 && rn >= 0);
	ck_assert_int_gt(pread(hd, buf, sizeof(buf), 0), 0);
	ck_assert_uint_eq(read_at0(we), 0);
	ck_assert_uint_eq(read_at0(dl), 0);
	ck_assert_uint_eq(read_at0(rn), 0);

	ck_assert_int_eq(writef("buffers/0/write_enable", "1"), 0); /* armed */
	ck_assert(wait_pri(we, 10000) & POLLPRI);
	ck_assert_uint_eq(read_at0(we), 1);
	ck_assert_int_eq(sh("printf abc > $M/sim/push"), 0); /* filled */
	ck_assert(wait_pri(hd, 10000) & POLLPRI);
	ck_assert_int_gt(pread(hd, buf, sizeof(buf) - 1, 0), 0);
	ck_assert_ptr_nonnull(strstr(buf, "size=3 "));
	ck_assert(wait_pri(we, 10000) & POLLPRI);
	ck_assert_uint_eq(read_at0(we), 0);
	ck_assert(wait_pri(dl, 10000) & POLLPRI);
	ck_assert_uint_eq(read_at0(dl), 1);
	ck_assert_int_eq(writef("sim/running", "1"), 0);
	ck_assert(wait_pri(rn, 10000) & POLLPRI);
	ck_assert_uint_eq(read_at0(rn), 1);
	ck_assert_int_eq(writef("sim/running", "0"), 0);
	close(hd);
	close(we);
	close(dl);
	close(rn);
}
END_TEST

SUITE_MAIN("fs_poll", "poll", TEST_TIMEOUT, {rx_frame_count_wakes_poll},
	   {rx_frame_count_wakes_select}, {quiet_when_unchanged}, {buffer_status_and_errors_wake},
	   {header_write_enable_and_sim_wake})
