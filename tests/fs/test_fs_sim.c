/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * sim/ (issue 3 item 4): the frame generator and fault injection, driven
 * with a shell: frames arrive in armed buffers at the set size and
 * pattern, remaining counts down and stops the generator, injected write
 * errors, timeouts and read errors show in headers, status and counters.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/*
 * Issue 24 item 10: adding a buffer while frames flow drops none and cuts
 * none short.  The generator runs flat out into four write buffers that a
 * second thread keeps re-arming (every buffer there is, as a consumer
 * would), while the main thread makes more write and read buffers.  The
 * simulated driver programs a new slot (address, size) before the count
 * that lets the engine use it, with the engines left running, and the
 * library no longer clears the payload limit around such an add: before,
 * each mkdir turned the engines off (frames dropped) and set the limit to
 * 1 byte (frames cut short).
 */
static const char *const ADD_FLAVOURS[] = {"-o version=4", "-o version=1"};
static atomic_bool rearm_stop;

static void *rearm_all(void *arg)
{
	(void)arg;
	while (!atomic_load(&rearm_stop))
		for (unsigned int i = 0; i < 64 && !atomic_load(&rearm_stop); i++) {
			char rel[48];

			snprintf(rel, sizeof(rel), "buffers/%u/write_enable", i);
			if (writef(rel, "1") == -ENOENT)
				break; /* past the last buffer: from 0 again */
		}
	return NULL;
}

START_TEST(mkdir_while_flowing)
{
	unsigned int nw = _i == 0 ? 40 : 8, nr = _i == 0 ? 8 : 4; /* V1: 16 buffers at most */
	unsigned long long d0, d1, dropped, overflowed;
	pthread_t t;

	mnt_start(ADD_FLAVOURS[_i]);
	ck_assert_int_eq(sh("cd $M && for i in 0 1 2 3; do mkdir buffers/$i && "
			    "echo 1 > buffers/$i/write_enable || exit 1; done && "
			    "echo 1 > registers/write_enable && echo 1 > registers/read_enable && "
			    "echo 0 > sim/rate && echo 256 > sim/size && echo 1 > sim/running"),
			 0);
	atomic_store(&rearm_stop, false);
	ck_assert_int_eq(pthread_create(&t, NULL, rearm_all, NULL), 0);
	wait_num("sim/stats/delivered", 1000);
	d0 = readnum("sim/stats/delivered");
	for (unsigned int k = 0; k < nw || k < nr; k++) {
		if (k < nw)
			ck_assert_int_eq(sh("mkdir $M/buffers/%u", 4 + k), 0);
		if (k < nr)
			ck_assert_int_eq(sh("mkdir $M/read_buffers/%u", k), 0);
	}
	d1 = readnum("sim/stats/delivered");
	atomic_store(&rearm_stop, true);
	pthread_join(t, NULL);
	dropped = readnum("sim/stats/dropped");
	overflowed = readnum("sim/stats/overflowed");
	printf("mkdir_while_flowing %s: %u+%u mkdirs, %llu frames delivered meanwhile, %llu "
	       "dropped, %llu cut short\n",
	       ADD_FLAVOURS[_i], nw, nr, d1 - d0, dropped, overflowed);
	ck_assert_msg(d1 > d0, "no frame flowed during the mkdirs");
	ck_assert_msg(dropped == 0, "%llu frames dropped", dropped);
	ck_assert_msg(overflowed == 0, "%llu frames cut short", overflowed);
	ck_assert_uint_eq(readnum("registers/write_enable"), 1);
	ck_assert_uint_eq(readnum("registers/read_enable"), 1);
}
END_TEST

START_TEST(generator)
{
	char *s;
	uint32_t w[4];
	int fd;

	mnt_start(NULL);
	ck_assert_int_eq(
		sh("cd $M && for i in 0 1 2 3; do mkdir buffers/$i && "
		   "echo 1 > buffers/$i/write_enable || exit 1; done && "
		   "echo 1 > registers/write_enable && echo 0 > sim/rate && echo 256 > sim/size && "
		   "echo counter > sim/pattern && echo 3 > sim/remaining && echo 1 > sim/running"),
		0);
	wait_num("sim/stats/delivered", 3);
	/* the generator stops itself after the last one: then nothing more */
	for (int i = 0; i < 1000 && readnum("sim/running") != 0; i++)
		usleep(10000);
	ck_assert_uint_eq(readnum("sim/running"), 0);
	ck_assert_uint_eq(readnum("sim/stats/delivered"), 3);
	ck_assert_uint_eq(readnum("sim/remaining"), 0);
	ck_assert_uint_eq(readnum("sim/running"), 0);
	assert_file_eq("sim/pattern", "counter\n");
	assert_file_eq("buffers/2/header",
		       "size=256 result=0 overflow=0 cont=0 first_user=0x02 last_user=0x00\n");
	assert_file_eq("buffers/3/status", "FREE\n");
	/* counter pattern: consecutive 32-bit words */
	fd = open(P("buffers/1/data"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, w, sizeof(w)), sizeof(w));
	close(fd);
	ck_assert_uint_eq(w[1], w[0] + 1);
	ck_assert_uint_eq(w[3], w[0] + 3);
	/* data is the frame: read and stat agree */
	ck_assert_int_eq(sh("test $(stat -c %%s $M/buffers/1/data) -eq 256 && "
			    "test $(cat $M/buffers/1/data | wc -c) -eq 256"),
			 0);
	/* frames bigger than the buffer overflow */
	ck_assert_int_eq(sh("echo 1M > $M/sim/size && echo 1 > $M/sim/remaining && "
			    "echo 1 > $M/sim/running"),
			 0);
	wait_num("sim/stats/delivered", 4);
	s = readf("buffers/3/header");
	ck_assert_ptr_nonnull(strstr(s, "overflow=1"));
	free(s);
	/* an overflowed frame is cut at the payload area: so is st_size */
	ck_assert_int_eq(sh("test $(stat -c %%s $M/buffers/3/data) -eq "
			    "$(cat $M/buffers/3/data | wc -c)"),
			 0);
	ck_assert_uint_eq(readnum("sim/stats/overflowed"), 1);
}
END_TEST

START_TEST(dropped_while_disabled)
{
	mnt_start(NULL);
	ck_assert_int_eq(sh("echo 0 > $M/sim/rate && echo 5 > $M/sim/remaining && "
			    "echo 1 > $M/sim/running"),
			 0);
	wait_num("sim/stats/dropped", 5);
	ck_assert_uint_eq(readnum("sim/stats/delivered"), 0);
	ck_assert_uint_eq(readnum("registers/rx_frame_count"), 5);
}
END_TEST

START_TEST(fault_injection)
{
	char *s;

	mnt_start(NULL);
	ck_assert_int_eq(sh("cd $M && mkdir buffers/0 buffers/1 read_buffers/0 && "
			    "echo 1 > registers/write_enable && echo 1 > registers/read_enable && "
			    "echo 1 > buffers/0/write_enable && echo 2 > sim/fault_code && "
			    "echo 1 > sim/inject_write_error && printf a > sim/push"),
			 0);
	s = readf("buffers/0/header");
	ck_assert_ptr_nonnull(strstr(s, "result=2"));
	free(s);
	assert_file_eq("buffers/0/status", "ERROR\n");
	ck_assert_uint_eq(readnum("registers/axi_write_error_count"), 1);
	ck_assert_uint_eq(readnum("registers/axi_write_error_value"), 2);
	ck_assert_int_eq(sh("cd $M && echo 1 > buffers/1/write_enable && "
			    "echo 1 > sim/inject_write_timeout && printf b > sim/push"),
			 0);
	ck_assert_uint_eq(readnum("registers/axi_write_timeout_count"), 1);
	ck_assert_int_eq(sh("cd $M && echo 5 > sim/fault_code && echo 1 > sim/inject_read_error && "
			    "echo 4 > read_buffers/0/send"),
			 0);
	ck_assert_uint_eq(readnum("registers/axi_read_error_count"), 1);
	ck_assert_uint_eq(readnum("registers/axi_read_error_value"), 5);
	/* bad input to the controls changes nothing */
	expect_refused("sim/inject_write_error", "many", EINVAL);
	expect_refused("sim/fault_code", "0", EINVAL);
	expect_refused("sim/rate", "fast", EINVAL);
	expect_refused("sim/running", "2", ERANGE);
	expect_refused("sim/first_user", "0x100", ERANGE);
}
END_TEST

START_TEST(push_without_buffer)
{
	mnt_start(NULL);
	/* engine on, nothing armed: the frame cannot go anywhere now */
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable"), 0);
	ck_assert_int_eq(writef("sim/push", "x"), -EAGAIN);
	ck_assert_ptr_nonnull(strstr(err_last(), "sim/push: EAGAIN"));
}
END_TEST

/* One write is one frame, or refused (EFBIG) when the kernel would hand it
 * over in pieces: 2 MiB once became 2 frames, and an unaligned 1 MiB write
 * a frame of 65504 bytes plus a phantom one of 48. */
START_TEST(push_one_write_one_frame)
{
	const size_t whole = 1044480; /* FS_WHOLE_WRITE: 1 MiB - 4 KiB */
	char *big = malloc(2 * 1048576 + 1);
	char *hdr;
	int fd;

	ck_assert_ptr_nonnull(big);
	memset(big, 'p', 2 * 1048576 + 1);
	mnt_start(NULL);
	ck_assert_int_eq(sh("cd $M && echo 2M > buffers/alloc_size && mkdir buffers/0 && "
			    "echo 1 > buffers/0/write_enable && echo 1 > registers/write_enable"),
			 0);
	fd = open(P("sim/push"), O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, big, 2 * 1048576), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_int_eq(write(fd, big + 1, 1048576), -1); /* unaligned */
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_int_eq(write(fd, big + 1, whole + 1), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_uint_eq(readnum("sim/stats/delivered"), 0);
	ck_assert_ptr_nonnull(strstr(err_last(), "sim/push: EFBIG"));
	/* the largest whole write, from an unaligned buffer: one frame */
	ck_assert_int_eq(write(fd, big + 1, whole), (ssize_t)whole);
	close(fd);
	ck_assert_uint_eq(readnum("sim/stats/delivered"), 1);
	hdr = readf("buffers/0/header");
	ck_assert_ptr_nonnull(strstr(hdr, "size=1044480 "));
	free(hdr);
	ck_assert_int_eq(mnt_stop(), 0);
	free(big);
}
END_TEST

SUITE_MAIN("fs_sim", "sim", TEST_TIMEOUT, {generator}, {dropped_while_disabled}, {fault_injection},
	   {push_without_buffer}, {push_one_write_one_frame}, {mkdir_while_flowing, 2})
