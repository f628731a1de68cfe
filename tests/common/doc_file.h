/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Tests that check a generated listing inside a doc of the source tree
 * (docs/registers.md, docs/abi.md, docs/platform.md): find the doc, read
 * it, and compare the text between its markers with what the table renders.
 */
#ifndef GA_TEST_DOC_FILE_H
#define GA_TEST_DOC_FILE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* <repo>/@rel, found from this test's source path (__FILE__ is
 * <repo>/tests/unit/<test>.c under CMake), unless environment variable @env
 * names another file. */
static inline const char *doc_file_path(const char *env, const char *src, const char *rel)
{
	static char path[4096];
	const char *e = getenv(env);
	char *slash;

	if (e && *e)
		return e;
	snprintf(path, sizeof(path), "%s", src);
	for (int up = 0; up < 3; up++) {
		slash = strrchr(path, '/');
		if (!slash)
			return rel;
		*slash = '\0';
	}
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", rel);
	return path;
}

/* The whole file, NUL-terminated (free it), or NULL. */
static inline char *doc_file_read(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Fails the test unless the doc at @path holds @gen (which starts with
 * @begin and ends with @end, the markers) exactly; the message names the
 * first differing line and the command that regenerates it. */
static inline void doc_file_check(const char *path, const char *gen, const char *begin,
				  const char *end, const char *regen)
{
	char *doc = doc_file_read(path);
	const char *b, *e;
	size_t len;

	ck_assert_msg(doc != NULL, "cannot read %s", path);
	b = strstr(doc, begin);
	ck_assert_msg(b != NULL, "%s: no begin marker; run %s", path, regen);
	e = strstr(b, end);
	ck_assert_msg(e != NULL, "%s: no end marker; run %s", path, regen);
	len = (size_t)(e - b) + strlen(end);
	if (len != strlen(gen) || memcmp(b, gen, len) != 0) {
		/* Point at the first differing line: that is what needs a look. */
		size_t i = 0, line = 1;

		while (i < len && gen[i] && b[i] == gen[i])
			line += b[i++] == '\n';
		ck_abort_msg("%s: the listing differs from the table at its line %zu; run %s", path,
			     line, regen);
	}
	free(doc);
}

#endif
