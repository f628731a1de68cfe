/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Tests that check a generated listing inside a doc of the source tree
 * (docs/registers.md, docs/abi.md, docs/platform.md): find the doc, read
 * it, and compare the text between its markers with what the table renders.
 */
#ifndef GA_TEST_DOC_FILE_H
#define GA_TEST_DOC_FILE_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A listing being rendered: printf-appended text (aborts on no memory). */
struct doc_text {
	char *buf;
	size_t len, cap;
};

static inline void doc_put(struct doc_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline void doc_put(struct doc_text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			abort();
		if ((size_t)n < t->cap - t->len)
			break;
		t->cap = (t->cap + (size_t)n + 1) * 2;
		t->buf = realloc(t->buf, t->cap);
		if (!t->buf)
			abort();
	}
	t->len += (size_t)n;
}

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

/* A listing test's --print: write the rendered listing (markers included)
 * to stdout for its generator to splice into the doc.  Returns -1 when the
 * argument is not --print, else the exit status. */
static inline int doc_file_print(int argc, char **argv, char *(*render)(void))
{
	char *gen;

	if (argc < 2 || strcmp(argv[1], "--print") != 0)
		return -1;
	gen = render();
	fputs(gen, stdout);
	free(gen);
	return ferror(stdout) ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* The whole main() of a listing test: --print prints what @render gives,
 * anything else runs the suite SUITE_MAIN would (common/suite_tests.h;
 * run_suite is the includer's). */
#define DOC_FILE_MAIN(render, name, tcase, timeout, ...)                                           \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		int printed = doc_file_print(argc, argv, render);                                  \
                                                                                                   \
		if (printed >= 0)                                                                  \
			return printed;                                                            \
		return run_suite(suite_of(name, tcase, timeout, SUITE_TESTS(__VA_ARGS__)));        \
	}

#endif
