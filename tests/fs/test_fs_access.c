/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Access (issue 3 item 6): by default only the mounting user (root here)
 * gets in; allow_other lets others read; uid/gid/mode give a group write
 * access to writable files and buffer directories; read-only files stay
 * read-only for everyone, root included.  Other users are played by
 * setpriv as nobody/nogroup (65534).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define AS_NOBODY "setpriv --reuid=65534 --regid=65534 --clear-groups "

static bool have_setpriv(void)
{
	return have_cmd("setpriv", "util-linux");
}

START_TEST(default_root_only)
{
	if (!have_setpriv())
		return;
	mnt_start(NULL);
	ck_assert_int_eq(sh("cat $M/device/version >/dev/null"), 0);
	ck_assert_int_ne(sh(AS_NOBODY "cat $M/device/version 2>/dev/null"), 0);
	ck_assert_int_ne(sh(AS_NOBODY "ls $M 2>/dev/null"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
}
END_TEST

START_TEST(allow_other_reads_only)
{
	struct stat st;

	if (!have_setpriv())
		return;
	mnt_start("-o allow_other");
	ck_assert_int_eq(sh(AS_NOBODY "cat $M/device/version >/dev/null"), 0);
	ck_assert_int_eq(sh(AS_NOBODY "cat $M/metrics >/dev/null"), 0);
	ck_assert_int_ne(sh(AS_NOBODY "sh -c 'echo 1 > $M/registers/ar_cache' 2>/dev/null"), 0);
	ck_assert_int_ne(sh(AS_NOBODY "mkdir $M/buffers/0 2>/dev/null"), 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 0);
	ck_assert_int_eq(stat(P("registers/ar_cache"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	ck_assert_uint_eq(st.st_uid, getuid());
	ck_assert_int_eq(mnt_stop(), 0);
}
END_TEST

START_TEST(group_with_write_access)
{
	struct stat st;

	if (!have_setpriv())
		return;
	mnt_start("-o allow_other,gid=65534,mode=0664");
	ck_assert_int_eq(stat(P("registers/ar_cache"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0664);
	ck_assert_uint_eq(st.st_gid, 65534);
	ck_assert_int_eq(stat(P("registers/count_reset"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0220);
	ck_assert_int_eq(stat(P("registers/version"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0444);
	ck_assert_int_eq(stat(P("buffers"), &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0775);
	/* the group writes values and makes buffers */
	ck_assert_int_eq(sh(AS_NOBODY "sh -c 'echo 6 > $M/registers/ar_cache'"), 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 6);
	ck_assert_int_eq(sh(AS_NOBODY "mkdir $M/buffers/0"), 0);
	ck_assert_int_eq(sh(AS_NOBODY "sh -c 'echo 1 > $M/buffers/0/write_enable'"), 0);
	/* but not read-only files, and not the raw window (0600, owner only) */
	ck_assert_int_ne(sh(AS_NOBODY "sh -c 'echo 1 > $M/registers/version' 2>/dev/null"), 0);
	ck_assert_int_ne(sh(AS_NOBODY "dd if=$M/registers/raw bs=4 count=1 2>/dev/null"), 0);
	ck_assert_int_eq(sh(AS_NOBODY "rmdir $M/buffers/0"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fs_access");
	TCase *tc = tcase_create("access");

	tcase_set_timeout(tc, TEST_TIMEOUT);
	tcase_add_test(tc, default_root_only);
	tcase_add_test(tc, allow_other_reads_only);
	tcase_add_test(tc, group_with_write_access);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
