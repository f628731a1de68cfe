/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Bad input never changes state (issue 3 item 7): garbage, empty writes,
 * huge writes, out-of-range values, wrong mkdir names, too many buffers,
 * writes to read-only files, operations on removed buffers and concurrent
 * writers.  Each refusal has the right errno and leaves an errors line;
 * the value read back afterwards is the one before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

START_TEST(garbage_and_ranges)
{
	mnt_start(NULL);
	ck_assert_int_eq(writef("registers/ar_cache", "0x3\n"), 0);
	expect_refused("registers/ar_cache", "garbage\n", EINVAL);
	expect_refused("registers/ar_cache", "\n", EINVAL);    /* empty value */
	expect_refused("registers/ar_cache", "1 2\n", EINVAL); /* two values */
	expect_refused("registers/ar_cache", "-1\n", EINVAL);  /* signs */
	expect_refused("registers/ar_cache", "16\n", ERANGE);  /* 4-bit field */
	expect_refused("registers/ar_cache", "99999999999999999999999", ERANGE);
	expect_refused("registers/demux_select", "2", ERANGE); /* a bool */
	expect_refused("registers/write_enable", "maybe", EINVAL);
	expect_refused("sim/pattern", "plaid\n", EINVAL);
	expect_refused("sim/fault_code", "9", ERANGE);
	ck_assert_int_eq(writen("registers/ar_cache", "1\0", 2), -EINVAL); /* embedded NUL */
	ck_assert_uint_eq(readnum("registers/ar_cache"), 3);
	/* accepted spellings */
	ck_assert_int_eq(writef("registers/ar_cache", "1"), 0);
	ck_assert_int_eq(writef("registers/ar_cache", "0x2\n"), 0);
	ck_assert_int_eq(writef("registers/demux_select", "1\n"), 0);
	ck_assert_int_eq(writef("sim/size", "2K\n"), 0);
	ck_assert_uint_eq(readnum("sim/size"), 2048);
}
END_TEST

/* One value and at most one newline, in every kind of file: booleans and
 * names were once trimmed twice.  The errors line shows what was written,
 * escaped. */
START_TEST(one_value_one_newline)
{
	char *s;

	mnt_start(NULL);
	ck_assert_int_eq(sh("mkdir $M/buffers/0"), 0);
	expect_refused("buffers/0/write_enable", "1\n\n", EINVAL);
	ck_assert_ptr_nonnull(strstr(err_last(), "'1\\n\\n'"));
	s = readf("buffers/0/status");
	ck_assert_ptr_nonnull(strstr(s, "IDLE")); /* not armed */
	free(s);
	expect_refused("sim/running", "1\n\n", EINVAL);
	ck_assert_uint_eq(readnum("sim/running"), 0);
	expect_refused("sim/pattern", "zero\n\n\n", EINVAL);
	expect_refused("sim/pattern", "zero\nprbs\n", EINVAL);
	expect_refused("registers/ar_cache", "1\n\n", EINVAL);
	expect_refused("sim/size", "2K\n\n", EINVAL);
	ck_assert_int_eq(writef("sim/pattern", "zero\n"), 0);
	assert_file_eq("sim/pattern", "zero\n");
	ck_assert_int_eq(writef("buffers/0/write_enable", "1\n"), 0);
}
END_TEST

START_TEST(huge_writes)
{
	mnt_start(NULL);
	ck_assert_int_eq(writef("registers/ar_cache", "5"), 0);
	/* 1 MiB of digits: split by the kernel, refused at the first piece */
	ck_assert_int_ne(sh("head -c 1048576 /dev/zero | tr '\\0' 1 | dd of=$M/registers/ar_cache "
			    "bs=1M 2>/dev/null"),
			 0);
	ck_assert_ptr_nonnull(strstr(err_last(), "registers/ar_cache: EINVAL"));
	ck_assert_uint_eq(readnum("registers/ar_cache"), 5);
	{
		char big[8192];

		memset(big, '1', sizeof(big));
		ck_assert_int_eq(writen("registers/ar_cache", big, sizeof(big)), -EINVAL);
	}
	ck_assert_uint_eq(readnum("registers/ar_cache"), 5);
}
END_TEST

START_TEST(read_only_and_write_only)
{
	unsigned int lines;

	mnt_start(NULL);
	/* root passes the kernel's mode check; the daemon still refuses */
	expect_refused("registers/version", "5", EACCES);
	expect_refused("registers/rx_frame_count", "0", EACCES);
	ck_assert_int_eq(writef("metrics", "x"), -EACCES); /* (metrics counts errors) */
	ck_assert_int_ne(sh("echo 1 > $M/README 2>/dev/null"), 0);
	ck_assert_int_ne(sh(": > $M/registers/version 2>/dev/null"), 0);
	lines = err_lines();
	ck_assert_int_ne(sh("truncate -s 0 $M/registers/version 2>/dev/null"), 0);
	ck_assert_uint_eq(err_lines(), lines + 1);
	ck_assert_uint_eq(readnum("registers/version"), 4);
	lines = err_lines();
	ck_assert_ptr_null(readf("registers/count_reset"));
	ck_assert_int_eq(errno, EACCES);
	ck_assert_uint_eq(err_lines(), lines); /* a write-only strobe: its mode says so */
	/* files cannot be created, removed or chmod'ed */
	ck_assert_int_ne(sh("touch $M/registers/new 2>/dev/null"), 0);
	ck_assert_ptr_nonnull(strstr(err_last(), "registers/new: EACCES"));
	ck_assert_int_ne(sh("rm -f $M/registers/ar_cache 2>/dev/null"), 0);
	ck_assert_ptr_nonnull(strstr(err_last(), "registers/ar_cache: EPERM"));
	ck_assert_int_ne(sh("chmod 666 $M/registers/ar_cache 2>/dev/null"), 0);
	ck_assert_int_ne(sh("mkdir $M/registers/x 2>/dev/null"), 0);
	ck_assert_int_ne(sh("rmdir $M/registers 2>/dev/null"), 0);
}
END_TEST

START_TEST(mkdir_names_and_limits)
{
	static const char *bad[] = {"abc", "01", "-1", "1x", " 1", "0x1", ""};

	mnt_start("-o max=2");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned int lines = err_lines();
		char rel[64];

		if (!*bad[i])
			continue;
		snprintf(rel, sizeof(rel), "buffers/%s", bad[i]);
		ck_assert_int_eq(mkdir(P(rel), 0755), -1);
		ck_assert_msg(errno == EINVAL, "mkdir %s: %s", rel, strerror(errno));
		ck_assert_uint_eq(err_lines(), lines + 1);
	}
	ck_assert_int_eq(mkdir(P("buffers/5000"), 0755), -1);
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/buffers/1"), 0);
	/* -o max=2: the third is one too many */
	ck_assert_int_eq(mkdir(P("buffers/2"), 0755), -1);
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_ptr_nonnull(strstr(err_last(), "buffers/2: ENOSPC"));
	ck_assert_int_eq(mkdir(P("buffers/1"), 0755), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(sh("test $(ls $M/buffers | grep -c '^[0-9]') -eq 2"), 0);
	ck_assert_int_eq(mnt_stop(), 0);

	/* the firmware's own limit (V1: 16 here) */
	mnt_start("-o version=1");
	ck_assert_int_eq(sh("for i in $(seq 0 15); do mkdir $M/buffers/$i || exit 1; done"), 0);
	ck_assert_int_eq(mkdir(P("buffers/16"), 0755), -1);
	ck_assert_int_eq(errno, ERANGE);
}
END_TEST

START_TEST(removed_buffer)
{
	mnt_start(NULL);
	ck_assert_int_eq(sh("mkdir $M/buffers/0 && rmdir $M/buffers/0"), 0);
	ck_assert_int_ne(sh("{ echo 1 > $M/buffers/0/write_enable; } 2>/dev/null"), 0);
	ck_assert_int_eq(rmdir(P("buffers/0")), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* a shell still inside it: ENOENT, answered by the kernel itself */
	ck_assert_int_eq(sh("mkdir $M/buffers/0"), 0);
	ck_assert_int_eq(sh("cd $M/buffers/0 && rmdir $M/buffers/0 && "
			    "! echo 1 2>/dev/null > write_enable"),
			 0);
	/* removal wins over an open file (issue 24 item 12, as sysfs): the
	 * file then fails cleanly with ENODEV and an errors line, also once a
	 * new buffer has the same name */
	ck_assert_int_eq(sh("mkdir $M/buffers/0"), 0);
	{
		int fd = open(P("buffers/0/header"), O_RDONLY);
		char buf[128];

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(rmdir(P("buffers/0")), 0);
		ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), -1);
		ck_assert_int_eq(errno, ENODEV);
		ck_assert_ptr_nonnull(strstr(err_last(), "buffers/0/header: ENODEV"));
		ck_assert_int_eq(sh("mkdir $M/buffers/0 && cat $M/buffers/0/status >/dev/null"), 0);
		ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), -1);
		ck_assert_int_eq(errno, ENODEV);
		close(fd);
	}
}
END_TEST

/* Two writers hammer the two fields sharing word 0x04 while a reader
 * checks that neither ever sees the other's field clobbered. */
static void writer(const char *rel, const char *a, const char *b, int n)
{
	for (int i = 0; i < n; i++)
		if (writef(rel, i & 1 ? a : b) != 0)
			_exit(1);
	_exit(0);
}

START_TEST(concurrent_writers)
{
	pid_t p1, p2;
	int st1, st2, fd;
	uint32_t w;

	mnt_start("-o threads=4");
	ck_assert_int_eq(writef("registers/ar_cache", "0x5"), 0);
	ck_assert_int_eq(writef("registers/aw_cache", "0xa"), 0);
	p1 = fork();
	if (p1 == 0)
		writer("registers/ar_cache", "0x5", "0x6", 2000);
	p2 = fork();
	if (p2 == 0)
		writer("registers/aw_cache", "0xa", "0x9", 2000);
	fd = open(P("registers/raw"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 2000; i++) {
		uint32_t ar, aw;

		ck_assert_int_eq(pread(fd, &w, 4, 0x04), 4);
		ar = w & 0xf;
		aw = (w >> 8) & 0xf;
		ck_assert_msg(ar == 5 || ar == 6, "ar_cache clobbered: word 0x%08x", w);
		ck_assert_msg(aw == 0xa || aw == 9, "aw_cache clobbered: word 0x%08x", w);
	}
	close(fd);
	ck_assert_int_eq(waitpid(p1, &st1, 0), p1);
	ck_assert_int_eq(waitpid(p2, &st2, 0), p2);
	ck_assert(WIFEXITED(st1) && WEXITSTATUS(st1) == 0);
	ck_assert(WIFEXITED(st2) && WEXITSTATUS(st2) == 0);
	/* the last writes: i = 1999 is odd */
	ck_assert_uint_eq(readnum("registers/ar_cache"), 5);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 0xa);

	/* concurrent mkdir of the same buffer: exactly one wins */
	ck_assert_int_eq(sh("for i in 1 2 3 4; do (mkdir $M/buffers/0 2>/dev/null) & done; "
			    "wait"),
			 0);
	ck_assert_int_eq(sh("test $(ls $M/buffers | grep -c '^0$') -eq 1"), 0);
}
END_TEST

SUITE_MAIN("fs_input", "input", TEST_TIMEOUT, {garbage_and_ranges}, {one_value_one_newline},
	   {huge_writes}, {read_only_and_write_only}, {mkdir_names_and_limits}, {removed_buffer},
	   {concurrent_writers})
