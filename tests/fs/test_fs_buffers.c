/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * buffers/ and read_buffers/ on a real mount: mkdir allocates and
 * registers, rmdir releases; write_enable, status, header, data, size,
 * gpu_address; send on read buffers; what the upstream ABI forbids is
 * refused with an errno and an errors line; rmdir of an armed buffer while
 * the engine runs is EBUSY, while rmdir of one with open files wins.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

START_TEST(write_buffer_lifecycle)
{
	mnt_start(NULL);
	ck_assert_int_eq(sh("mkdir $M/buffers/0"), 0);
	ck_assert_int_eq(sh("test \"$(ls $M/buffers)\" = \"$(printf '0\\nalloc_size')\""), 0);
	ck_assert_uint_eq(readnum("buffers/0/size"), 65536);
	ck_assert_uint_ne(readnum("buffers/0/gpu_address"), 0);
	assert_file_eq("buffers/0/status", "IDLE\n");
	ck_assert_uint_eq(readnum("buffers/0/write_enable"), 0);
	/* arm, enable the engine, push one frame: READY with its header and data */
	ck_assert_int_eq(sh("echo 1 > $M/buffers/0/write_enable"), 0);
	ck_assert_uint_eq(readnum("buffers/0/write_enable"), 1);
	assert_file_eq("buffers/0/status", "FREE\n");
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable"), 0);
	ck_assert_int_eq(sh("printf 'hello, gpu' > $M/sim/push"), 0);
	assert_file_eq("buffers/0/status", "READY\n");
	ck_assert_uint_eq(readnum("buffers/0/write_enable"), 0);
	assert_file_eq("buffers/0/header",
		       "size=10 result=0 overflow=0 cont=0 first_user=0x02 last_user=0x00\n");
	ck_assert_int_eq(sh("test \"$(cat $M/buffers/0/data)\" = 'hello, gpu'"), 0);
	ck_assert_int_eq(
		sh("test $(dd if=$M/buffers/0/data bs=3 skip=1 count=1 2>/dev/null) = 'lo,'"), 0);
	/* st_size is what a read returns (the frame), so cmp -s and cp agree
	 * with cat; not cached, so the next frame's size shows at once */
	ck_assert_int_eq(sh("test $(stat -c %%s $M/buffers/0/data) -eq 10"), 0);
	ck_assert_int_eq(
		sh("printf 'hello, gpu' > $M.f && cmp -s $M.f $M/buffers/0/data && "
		   "cp $M/buffers/0/data $M.c && cmp -s $M.f $M.c; rc=$?; rm -f $M.f $M.c; "
		   "exit $rc"),
		0);
	ck_assert_int_eq(sh("echo 1 > $M/buffers/0/write_enable && printf abc > $M/sim/push"), 0);
	ck_assert_int_eq(sh("test $(stat -c %%s $M/buffers/0/data) -eq 3 && "
			    "test \"$(cat $M/buffers/0/data)\" = abc"),
			 0);
	/* the engine is running: an armed buffer cannot go */
	ck_assert_int_eq(sh("echo 1 > $M/buffers/0/write_enable"), 0);
	ck_assert_int_ne(sh("rmdir $M/buffers/0 2>/dev/null"), 0);
	ck_assert_ptr_nonnull(strstr(err_last(), "buffers/0: EBUSY"));
	/* disarming is not something the firmware can do */
	expect_refused("buffers/0/write_enable", "0", EINVAL);
	ck_assert_int_eq(sh("echo 0 > $M/registers/write_enable"), 0);
	ck_assert_int_eq(sh("rmdir $M/buffers/0"), 0);
	ck_assert_int_eq(sh("test \"$(ls $M/buffers)\" = alloc_size"), 0);
}
END_TEST

START_TEST(index_order_and_removal)
{
	unsigned int lines;

	mnt_start("-o version=4");
	/* indices are assigned in call order: 1 before 0 is refused */
	lines = err_lines();
	ck_assert_int_ne(sh("mkdir $M/buffers/1 2>/dev/null"), 0);
	ck_assert_uint_eq(err_lines(), lines + 1);
	ck_assert_ptr_nonnull(strstr(err_last(), "buffers/1: EINVAL"));
	ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/buffers/1 $M/buffers/2"), 0);
	ck_assert_int_eq(sh("test $(ls $M/buffers | grep -c '^[0-9]') -eq 3"), 0);
	/* only the last buffer can go on its own */
	ck_assert_int_ne(sh("rmdir $M/buffers/0 2>/dev/null"), 0);
	ck_assert_ptr_nonnull(strstr(err_last(), "buffers/0: EBUSY"));
	ck_assert_int_eq(sh("test -d $M/buffers/0"), 0);
	ck_assert_int_eq(sh("rmdir $M/buffers/2 $M/buffers/1 $M/buffers/0"), 0);
	/* made again: a new buffer, same name */
	ck_assert_int_eq(sh("mkdir $M/buffers/0 && cat $M/buffers/0/status >/dev/null"), 0);
}
END_TEST

/* Removal wins over open files (issue 24 item 12: a reader must not keep
 * root from removing a buffer); the open file then fails with ENODEV. */
START_TEST(busy_with_open_files)
{
	char buf[16];
	int fd;

	mnt_start(NULL);
	ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/buffers/1"), 0);
	fd = open(P("buffers/1/status"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(rmdir(P("buffers/1")), 0);
	ck_assert_int_eq(access(P("buffers/1"), F_OK), -1);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, ENODEV);
	ck_assert_ptr_nonnull(strstr(err_last(), "buffers/1 was removed"));
	close(fd);
}
END_TEST

START_TEST(sizes)
{
	mnt_start("-o version=4");
	ck_assert_int_eq(sh("echo 128K > $M/buffers/alloc_size && mkdir $M/buffers/0"), 0);
	ck_assert_uint_eq(readnum("buffers/0/size"), 131072);
	/* write buffer data is the last frame: none yet */
	ck_assert_int_eq(sh("test $(stat -c %%s $M/buffers/0/data) -eq 0"), 0);
	/* V4 write buffers share one size: a different one is refused while
	 * buffers exist */
	expect_refused("buffers/alloc_size", "64K", EINVAL);
	ck_assert_ptr_nonnull(strstr(err_last(), "share one size"));
	expect_refused("buffers/alloc_size", "100000", EINVAL); /* not 64K pages */
	expect_refused("buffers/alloc_size", "0", EINVAL);
	expect_refused("buffers/alloc_size", "8G", ERANGE);
	/* read buffers may differ */
	ck_assert_int_eq(sh("echo 64K > $M/read_buffers/alloc_size && mkdir $M/read_buffers/0"), 0);
	ck_assert_uint_eq(readnum("read_buffers/0/size"), 65536);
	ck_assert_int_eq(sh("rmdir $M/buffers/0 $M/read_buffers/0"), 0);
	/* V1 buffers have their own sizes */
	mnt_stop();
	mnt_start("-o version=1");
	ck_assert_int_eq(sh("mkdir $M/buffers/0 && echo 128K > $M/buffers/alloc_size && "
			    "mkdir $M/buffers/1"),
			 0);
	ck_assert_uint_eq(readnum("buffers/1/size"), 131072);
}
END_TEST

START_TEST(read_buffer_send)
{
	struct stat st;

	mnt_start("-o version=4");
	ck_assert_int_eq(sh("mkdir $M/read_buffers/0"), 0);
	ck_assert_int_eq(stat(P("read_buffers/0/send"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0200);
	ck_assert_int_eq(stat(P("read_buffers/0/write_enable"), &st), -1);
	ck_assert_int_eq(stat(P("read_buffers/0/header"), &st), -1);
	ck_assert_int_eq(sh("printf 'frame to the FPGA' > $M/read_buffers/0/data"), 0);
	ck_assert_int_eq(
		sh("printf 'FRAME' | dd of=$M/read_buffers/0/data conv=notrunc 2>/dev/null"), 0);
	ck_assert_int_eq(sh("echo 1 > $M/registers/read_enable"), 0);
	ck_assert_int_eq(sh("echo 17 > $M/read_buffers/0/send"), 0);
	assert_file_eq("read_buffers/0/status", "READY\n");
	ck_assert_int_eq(sh("test \"$(cat $M/sim/last_read)\" = 'FRAME to the FPGA'"), 0);
	/* offsets: inside the frame, at its end, and 4 GiB away (once cost a
	 * 4 GiB allocation; now what the frame holds, or nothing) */
	ck_assert_int_eq(sh("test \"$(dd if=$M/sim/last_read bs=1 skip=6 count=2 2>/dev/null)\" = "
			    "to"),
			 0);
	ck_assert_int_eq(
		sh("test $(dd if=$M/sim/last_read bs=1 skip=17 2>/dev/null | wc -c) -eq 0"), 0);
	ck_assert_int_eq(sh("test $(dd if=$M/sim/last_read bs=65536 skip=65535 count=1 2>/dev/null "
			    "| wc -c) -eq 0"),
			 0);
	/* read buffer data is the whole payload area, at any offset */
	ck_assert_int_eq(sh("test $(stat -c %%s $M/read_buffers/0/data) -eq %u", 65536 - 32), 0);
	ck_assert_int_eq(sh("test $(wc -c < $M/read_buffers/0/data) -eq %u", 65536 - 32), 0);
	ck_assert_uint_eq(readnum("sim/stats/reads"), 1);
	ck_assert_uint_eq(readnum("registers/tx_frame_count"), 1);
	/* bigger than the payload area, zero, garbage: refused */
	expect_refused("read_buffers/0/send", "1M", ERANGE);
	expect_refused("read_buffers/0/send", "0", EINVAL);
	expect_refused("read_buffers/0/send", "lots", EINVAL);
	ck_assert_int_eq(sh("head -c 70000 /dev/zero > $M/read_buffers/0/data 2>/dev/null"), 1);
	ck_assert_ptr_nonnull(strstr(err_last(), "EFBIG"));
	ck_assert_int_eq(sh("echo 0 > $M/registers/read_enable && rmdir $M/read_buffers/0"), 0);
	ck_assert_int_eq(mnt_stop(), 0);

	/* V1 reads the payload from offset 0 of the buffer: all of it is data */
	mnt_start("-o version=1");
	ck_assert_int_eq(sh("mkdir $M/read_buffers/0 && printf v1frame > $M/read_buffers/0/data && "
			    "echo 1 > $M/registers/read_enable && echo 7 > $M/read_buffers/0/send"),
			 0);
	ck_assert_int_eq(sh("test $(stat -c %%s $M/read_buffers/0/data) -eq 65536"), 0);
	ck_assert_int_eq(sh("test \"$(cat $M/sim/last_read)\" = v1frame"), 0);
}
END_TEST

START_TEST(stale_inode_after_rmdir)
{
	struct stat a, b;

	mnt_start(NULL);
	ck_assert_int_eq(sh("mkdir $M/buffers/0"), 0);
	ck_assert_int_eq(stat(P("buffers/0/status"), &a), 0);
	/* a shell whose cwd is the removed directory gets ENOENT (from the
	 * kernel: a removed directory is never asked again) */
	ck_assert_int_eq(sh("cd $M/buffers/0 && rmdir ../0 && ! cat status 2>/dev/null"), 0);
	ck_assert_int_eq(sh("mkdir $M/buffers/0"), 0);
	ck_assert_int_eq(stat(P("buffers/0/status"), &b), 0);
	/* a new buffer at the same index: new inode numbers (the generation is
	 * part of them), so nothing of the old one is confused with it */
	ck_assert_uint_ne(a.st_ino, b.st_ino);
	/* and a shell still in the old directory, with a new buffer 0 made
	 * meanwhile, gets ENOENT, not EIO */
	ck_assert_int_eq(
		sh("cd $M/buffers/0 && rmdir ../0 && mkdir ../0 && "
		   "cat status 2>&1 | grep -q 'No such file' && ls 2>&1 | grep -q 'No such file'"),
		0);
}
END_TEST

SUITE_MAIN("fs_buffers", "buffers", TEST_TIMEOUT, {write_buffer_lifecycle},
	   {index_order_and_removal}, {busy_with_open_files}, {sizes}, {read_buffer_send},
	   {stale_inode_after_rmdir})
