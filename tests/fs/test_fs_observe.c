/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Issue 25 item 1: the observer mount (-o observe), on the simulated card
 * with real cat, echo, mkdir and rmdir.  Everything stays readable (card
 * identity, registers, metrics, errors); every write, mkdir and rmdir is
 * refused with EROFS and one errors line naming it, and nothing on the
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

	/* Writes: EROFS, one errors line each, the value unchanged. */
	expect_refused("registers/demux_select", "0", EROFS);
	expect_refused("registers/write_enable", "1", EROFS);
	expect_refused("registers/count_reset", "1", EROFS);
	expect_refused("registers/aw_cache", "5", EROFS);
	expect_refused("settings", "demux_select = 0\n", EROFS);
	ck_assert_ptr_nonnull(strstr(err_last(), "observer mount"));

	/* mkdir and rmdir, from a shell: EROFS, one errors line each. */
	{
		unsigned int lines = err_lines();

		s = sh_out("mkdir $M/buffers/0 2>&1; echo rc=$?");
		ck_assert_ptr_nonnull(strstr(s, "Read-only file system"));
		free(s);
		ck_assert_uint_eq(err_lines(), lines + 1);
		ck_assert_ptr_nonnull(strstr(err_last(), "EROFS"));
		ck_assert_ptr_nonnull(strstr(err_last(), "buffers/0"));
		ck_assert_int_ne(access(P("buffers/0"), F_OK), 0);
	}

	after = registers_snapshot();
	ck_assert_str_eq(after, before);
	free(before);
	free(after);
	ck_assert_int_eq(mnt_stop(), 0);
}
END_TEST

/* The same card mounted normally still takes writes (the refusals above
 * come from -o observe, not from the card). */
START_TEST(plain_mount_writes)
{
	mnt_start(NULL);
	ck_assert_int_eq(sh("echo 5 > $M/registers/aw_cache && mkdir $M/buffers/0"), 0);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 5);
	ck_assert_int_eq(mnt_stop(), 0);
}
END_TEST

int main(void)
{
	return run_suite(
		suite_of("observe", "observe", TEST_TIMEOUT,
			 SUITE_TESTS({observe_refuses_and_changes_nothing}, {plain_mount_writes})));
}
