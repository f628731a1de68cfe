/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Issue 25 item 1: the observer mount (-o observe), on the simulated card
 * with real cat, echo, mkdir and rmdir.  Everything stays readable (card
 * identity, registers, metrics, errors); the mount is read-only (ro in
 * /proc/mounts, no write bits, test -w false), every write and mkdir is
 * refused with EROFS by the kernel, and nothing on the
 * card changes: every readable register, the buffer list and the settings
 * read the same before and after.  Beside another process that owns the
 * card it is tested in QEMU (tests/drp/guest_drp.sh).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* Every readable file under registers/, one "name value" line each. */
static char *registers_snapshot(void)
{
	char *s = sh_out("cd $M/registers && for f in *; do "
			 "[ -r \"$f\" ] && [ \"$(stat -c %%a \"$f\")\" != 200 ] && "
			 "printf '%%s %%s\\n' \"$f\" \"$(cat \"$f\")\"; done; ls $M/buffers");

	ck_assert_ptr_nonnull(s);
	return s;
}

START_TEST(observe_refuses_and_changes_nothing)
{
	char *before, *after, *s;

	mnt_start("-o observe");
	/* The card is shown. */
	ck_assert_uint_gt(readnum("device/version"), 0);
	s = readf("metrics");
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(strstr(s, "rx_frame_count"));
	free(s);
	s = readf("config");
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(strstr(s, "observe = yes"));
	free(s);
	before = registers_snapshot();

	/* The mount is read-only, and says so: findmnt, /proc/mounts, test -w
	 * (false even for root on a read-only mount), no write bit anywhere. */
	if (have_cmd("findmnt", "util-linux"))
		ck_assert_int_eq(sh("findmnt -no OPTIONS $M | tr , '\\n' | grep -qx ro"), 0);
	ck_assert_int_eq(sh("awk -v m=$M '$2 == m { print $4 }' /proc/mounts | "
			    "tr , '\\n' | grep -qx ro"),
			 0);
	ck_assert_int_ne(sh("test -w $M/registers/aw_cache"), 0);
	ck_assert_int_ne(sh("test -w $M/settings"), 0);
	s = sh_out("find $M -perm /222");
	ck_assert_msg(!strcmp(s, ""), "write bits on an observer mount:\n%s", s);
	free(s);
	ck_assert_int_eq(sh("test $(stat -c %%a $M/registers/aw_cache) = 444 && "
			    "test $(stat -c %%a $M/registers/count_reset) = 0 && "
			    "test $(stat -c %%a $M/registers/raw) = 400 && "
			    "test $(stat -c %%a $M/buffers) = 555"),
			 0);

	/* Writes, mkdir, rmdir: EROFS from the kernel (the daemon never sees
	 * them, so no errors line), nothing changed. */
	{
		unsigned int lines = err_lines();
		static const char *const files[] = {
			"registers/demux_select", "registers/write_enable", "registers/count_reset",
			"registers/aw_cache", "settings"};

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			ck_assert_int_eq(writef(files[i], "0\n"), -EROFS);
			s = sh_out("{ echo 1 > $M/%s; } 2>&1; echo rc=$?", files[i]);
			ck_assert_msg(strstr(s, "Read-only file system") && strstr(s, "rc=2"), "%s",
				      s);
			free(s);
		}
		s = sh_out("mkdir $M/buffers/0 2>&1; echo rc=$?");
		ck_assert_ptr_nonnull(strstr(s, "Read-only file system"));
		free(s);
		ck_assert_int_ne(access(P("buffers/0"), F_OK), 0);
		ck_assert_uint_eq(err_lines(), lines);
	}

	after = registers_snapshot();
	ck_assert_str_eq(after, before);
	free(before);
	free(after);
}
END_TEST

/* The same card mounted normally still takes writes (the refusals above
 * come from -o observe, not from the card). */
START_TEST(plain_mount_writes)
{
	mnt_start(NULL);
	ck_assert_int_eq(sh("awk -v m=$M '$2 == m { print $4 }' /proc/mounts | "
			    "tr , '\\n' | grep -qx rw"),
			 0);
	ck_assert_int_eq(sh("test -w $M/registers/aw_cache && "
			    "test $(stat -c %%a $M/registers/aw_cache) = 644"),
			 0);
	ck_assert_int_eq(sh("echo 5 > $M/registers/aw_cache && mkdir $M/buffers/0"), 0);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 5);
}
END_TEST

SUITE_MAIN("observe", "observe", TEST_TIMEOUT, {observe_refuses_and_changes_nothing},
	   {plain_mount_writes})
