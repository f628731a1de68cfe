/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Issue 12 ("Field-ready"), driven with cat and echo on real mounts:
 *   - the two stream monitors (registers/inbound_*, outbound_*): 64-bit
 *     counts, sizes with max/min, count_reset clearing both monitors and
 *     each monitor's own reset clearing only itself;
 *   - ring sizes under names that cannot be misread: registers/write_buffers
 *     and read_buffers are the count fields + 1, the raw fields stay.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* Wait until the number in @rel reaches @want (bounded; fails the test). */
static void wait_num(const char *rel, unsigned long long want)
{
	for (int i = 0; i < 1000; i++) {
		if (readnum(rel) >= want)
			return;
		usleep(10000);
	}
	ck_abort_msg("%s stayed below %llu", rel, want);
}

START_TEST(monitors)
{
	char *s;

	mnt_start(NULL);
	ck_assert_int_eq(
		sh("cd $M && mkdir read_buffers/0 read_buffers/1 && "
		   "for i in 0 1 2 3; do mkdir buffers/$i && "
		   "echo 1 > buffers/$i/write_enable || exit 1; done && "
		   "echo 1 > registers/write_enable && echo 0 > sim/rate && echo 300 > sim/size && "
		   "echo 3 > sim/remaining && echo 1 > sim/running"),
		0);
	wait_num("sim/stats/delivered", 3);
	ck_assert_uint_eq(readnum("registers/inbound_frames"), 3);
	ck_assert_uint_eq(readnum("registers/inbound_frame_size"), 300);
	ck_assert_uint_eq(readnum("registers/inbound_frame_size_max"), 300);
	ck_assert_uint_eq(readnum("registers/inbound_frame_size_min"), 300);
	/* GPU->FPGA: two frames of 100 and 40 bytes through read buffer 0 and 1 */
	ck_assert_int_eq(sh("cd $M && "
			    "echo 1 > registers/read_enable && echo 100 > read_buffers/0/send && "
			    "echo 40 > read_buffers/1/send"),
			 0);
	wait_num("registers/outbound_frames", 2);
	ck_assert_uint_eq(readnum("registers/outbound_frame_size_max"), 100);
	ck_assert_uint_eq(readnum("registers/outbound_frame_size_min"), 40);
	ck_assert_uint_eq(readnum("registers/outbound_frame_size"), 40);

	/* each monitor's reset is a strobe: 0200, refuses reads and values
	 * wider than its bit, and clears only its own monitor */
	ck_assert_int_eq(sh("test \"$(stat -c %%a $M/registers/inbound_monitor_reset)\" = 200"), 0);
	s = readf("registers/inbound_monitor_reset");
	ck_assert_ptr_null(s);
	ck_assert_int_eq(errno, EACCES);
	expect_refused("registers/outbound_monitor_reset", "2", ERANGE);
	ck_assert_uint_eq(readnum("registers/outbound_frames"), 2);
	ck_assert_int_eq(sh("echo 1 > $M/registers/outbound_monitor_reset"), 0);
	ck_assert_uint_eq(readnum("registers/outbound_frames"), 0);
	ck_assert_uint_eq(readnum("registers/inbound_frames"), 3);
	ck_assert_uint_eq(readnum("registers/tx_frame_count"), 2);

	/* count_reset: the core's counters and both monitors */
	ck_assert_int_eq(sh("echo 1 > $M/sim/remaining && echo 1 > $M/sim/running && "
			    "echo 7 > $M/read_buffers/0/send"),
			 0);
	wait_num("registers/inbound_frames", 4);
	wait_num("registers/outbound_frames", 1);
	ck_assert_int_eq(sh("echo 1 > $M/registers/count_reset"), 0);
	ck_assert_uint_eq(readnum("registers/inbound_frames"), 0);
	ck_assert_uint_eq(readnum("registers/outbound_frames"), 0);
	ck_assert_uint_eq(readnum("registers/rx_frame_count"), 0);
	ck_assert_uint_eq(readnum("registers/tx_frame_count"), 0);
	/* re-armed: both ends hold the last frame's size until the next one */
	ck_assert_uint_eq(readnum("registers/outbound_frame_size_max"), 7);
	ck_assert_uint_eq(readnum("registers/outbound_frame_size_min"), 7);
	ck_assert_int_eq(mnt_stop(), 0);
}
END_TEST

/* The firmware's V1 map has no monitor blocks: no such files. */
START_TEST(monitors_absent_v1)
{
	mnt_start("-o version=3");
	ck_assert_int_ne(access(P("registers/inbound_frames"), F_OK), 0);
	ck_assert_int_ne(access(P("registers/outbound_monitor_reset"), F_OK), 0);
	ck_assert_int_eq(access(P("registers/write_buffers"), F_OK), 0);
	ck_assert_int_eq(mnt_stop(), 0);
}
END_TEST

/* write_buffers = write_count + 1, read_buffers = read_count + 1, read-only. */
START_TEST(buffer_counts)
{
	static const char *const versions[] = {"-o version=2", "-o version=5"};

	for (unsigned int v = 0; v < 2; v++) {
		mnt_start(versions[v]);
		ck_assert_uint_eq(readnum("registers/write_count"), 0);
		ck_assert_uint_eq(readnum("registers/write_buffers"), 1);
		ck_assert_int_eq(sh("cd $M && mkdir buffers/0 buffers/1 buffers/2 read_buffers/0 "
				    "read_buffers/1"),
				 0);
		ck_assert_uint_eq(readnum("registers/write_buffers"), 3);
		ck_assert_uint_eq(readnum("registers/write_count"), 2);
		ck_assert_uint_eq(readnum("registers/read_buffers"), 2);
		ck_assert_uint_eq(readnum("registers/read_count"), 1);
		ck_assert_int_eq(sh("test \"$(stat -c %%a $M/registers/write_buffers)\" = 444"), 0);
		expect_refused("registers/write_buffers", "5", EACCES);
		ck_assert_int_eq(sh("rmdir $M/buffers/2"), 0);
		ck_assert_uint_eq(readnum("registers/write_buffers"), 2);
		ck_assert_int_eq(mnt_stop(), 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("firmware");
	TCase *tc = tcase_create("monitors");

	tcase_set_timeout(tc, TEST_TIMEOUT);
	tcase_add_test(tc, monitors);
	tcase_add_test(tc, monitors_absent_v1);
	tcase_add_test(tc, buffer_counts);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
