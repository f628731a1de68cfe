/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A test's own fixture files, written in one call. */
#ifndef GA_TEST_PUT_FILE_H
#define GA_TEST_PUT_FILE_H

#include <check.h>
#include <stdio.h>

/* @text into the new file @dir/@name (fails the test if it cannot open it). */
static inline void put_file_in(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

#endif
