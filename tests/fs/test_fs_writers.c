/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What one open writes is one text, whatever writes it: bash's and dash's
 * builtins (one write(2) per line, and a redirection undone with dup2, so
 * close's status never reaches them), /usr/bin/printf, cat, tee, dd and
 * Python (one write, close checked).  Each writer puts good and bad texts
 * into a register, settings and settings.yaml: a good text is applied and
 * the writer exits 0; a bad one leaves the value as it was, the writer
 * exits non-zero and errors gets one line naming the right line.
 * Also: writers of nothing (O_TRUNC alone), sed -i, writes out of order,
 * appends, a block writer's cut inside a line, a refusal only the card can
 * make (at close), and reads past the end of registers/raw.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define YCORE "Root:\n  AxiPcieCore:\n    AxiGpuAsyncCore:\n"
#define BASE  1 /* registers/ar_cache before each text */

/* Each writes the text in file $SRC (printf's format of it in $FMT) to $T. */
static const struct writer {
	const char *name;
	const char *cmd;
} writers[] = {
	{"bash printf", "bash -c 'printf \"$FMT\" > \"$T\"'"},
	{"bash echo -e", "bash -c 'echo -ne \"$FMT\" > \"$T\"'"},
	{"bash echo, a line each", "bash -c 'while IFS= read -r l || [ -n \"$l\" ]; do echo "
				   "\"$l\"; done < \"$SRC\" > \"$T\"'"},
	{"dash printf", "printf \"$FMT\" > \"$T\""},
	{"/usr/bin/printf", "/usr/bin/printf \"$FMT\" > \"$T\""},
	{"cat FILE >", "cat \"$SRC\" > \"$T\""},
	{"tee", "tee \"$T\" < \"$SRC\" > /dev/null"},
	{"dd", "dd if=\"$SRC\" of=\"$T\" status=none"},
	{"python3 write", "python3 -c 'import sys\nwith open(sys.argv[2], \"w\") as f:\n"
			  "    f.write(open(sys.argv[1]).read())' \"$SRC\" \"$T\""},
};

/* A text for @file: applied (err 0, ar_cache then reads @want) or refused
 * with @err and an errors line holding @what. */
static const struct text {
	const char *file;
	const char *text;
	int err;
	const char *what;
	unsigned int want;
} texts[] = {
	{"registers/ar_cache", "3\n", 0, NULL, 3},
	{"registers/ar_cache", "0x4", 0, NULL, 4},
	{"registers/ar_cache", "7\n8\n", EINVAL, "more than one value", 0},
	{"registers/ar_cache", "99999999999", ERANGE, "out of range", 0},
	{"settings", "[registers]\nar_cache = 5\n", 0, NULL, 5},
	{"settings", "[regs]\nar_cache = 3\n", EINVAL, "line 1: unknown section [regs]", 0},
	{"settings", "[registers]\nar_cache = 5\nbogus = 1\n", EINVAL,
	 "line 3: unknown setting 'bogus'", 0},
	{"settings", "[registers]\nar_cache = 6\naw_cache = 99", ERANGE, "line 3: 'aw_cache = 99'",
	 0},
	{"settings.yaml", YCORE "      AxiReadCache: 0x6\n", 0, NULL, 6},
	{"settings.yaml", YCORE "      AxiReadCache: 0x6\n      AxiWriteCache: 0x10\n", ERANGE,
	 "line 5: AxiGpuAsyncCore.AxiWriteCache", 0},
};

static char tmpdir[] = "/tmp/gafs-writers-XXXXXX";

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

/* @text as a printf format: newlines as \n (the texts hold no %, ' or \). */
static void as_format(const char *text, char *out, size_t len)
{
	size_t o = 0;

	for (; *text && o + 3 < len; text++) {
		if (*text == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *text;
		}
	}
	out[o] = '\0';
}

/* Run writer @w on @t's text; its exit status. */
static int run_writer(const struct writer *w, const char *file, const char *text)
{
	char src[128], fmt[512];

	snprintf(src, sizeof(src), "%s/text", tmpdir);
	put_file(src, text);
	as_format(text, fmt, sizeof(fmt));
	return sh("export SRC='%s' FMT='%s' T=\"$M/%s\"; %s 2>/dev/null", src, fmt, file, w->cmd);
}

START_TEST(every_writer_whole_or_nothing)
{
	const struct writer *w = &writers[_i];

	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	mnt_start("-o version=4");
	for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
		const struct text *x = &texts[t];
		unsigned int before;
		int rc;

		ck_assert_int_eq(writef("registers/ar_cache", "1\n"), 0);
		before = err_lines();
		rc = run_writer(w, x->file, x->text);
		if (!x->err) {
			ck_assert_msg(rc == 0, "%s > %s '%s': exit %d, %s", w->name, x->file,
				      x->text, rc, err_last());
			ck_assert_msg(readnum("registers/ar_cache") == x->want,
				      "%s > %s '%s': ar_cache %llu, not %u", w->name, x->file,
				      x->text, readnum("registers/ar_cache"), x->want);
			ck_assert_uint_eq(err_lines(), before);
			continue;
		}
		ck_assert_msg(rc != 0, "%s > %s '%s': exit 0 for a refused text", w->name, x->file,
			      x->text);
		ck_assert_msg(readnum("registers/ar_cache") == BASE,
			      "%s > %s '%s': ar_cache changed to %llu", w->name, x->file, x->text,
			      readnum("registers/ar_cache"));
		ck_assert_msg(err_lines() == before + 1, "%s > %s '%s': %u errors lines, not 1",
			      w->name, x->file, x->text, err_lines() - before);
		ck_assert_msg(strstr(err_last(), x->what) &&
				      strstr(err_last(), x->err == EINVAL ? "EINVAL" : "ERANGE"),
			      "%s > %s '%s': errors says %s", w->name, x->file, x->text,
			      err_last());
	}
	ck_assert_int_eq(mnt_stop(), 0);
	ck_assert_int_eq(sh("rm -rf %s", tmpdir), 0);
}
END_TEST

/* O_TRUNC and nothing written: nothing happens, no errors line. */
START_TEST(writers_of_nothing)
{
	unsigned int before;

	mnt_start(NULL);
	ck_assert_int_eq(writef("registers/ar_cache", "2\n"), 0);
	before = err_lines();
	ck_assert_int_eq(sh("for f in registers/ar_cache settings settings.yaml; do "
			    ": > $M/$f && bash -c \": > $M/$f\" && printf '' > $M/$f && "
			    "truncate -s 0 $M/$f && dd of=$M/$f count=0 status=none && "
			    "cp /dev/null $M/$f || exit 1; done"),
			 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 2);
	ck_assert_uint_eq(err_lines(), before);
}
END_TEST

/* sed -i writes a file beside the old one and renames it over: the mount
 * makes no files, so sed fails (exit 4) and nothing changes. */
START_TEST(sed_in_place_refused)
{
	mnt_start(NULL);
	ck_assert_int_eq(writef("registers/ar_cache", "2\n"), 0);
	ck_assert_int_eq(sh("sed -i 's/2/3/' $M/registers/ar_cache 2>/dev/null; test $? -eq 4"), 0);
	ck_assert_int_eq(sh("sed -i 's/= 0x2/= 0x3/' $M/settings 2>/dev/null; test $? -eq 4"), 0);
	ck_assert_msg(strstr(err_last(), "EACCES") && strstr(err_last(), "cannot be created"), "%s",
		      err_last());
	ck_assert_uint_eq(readnum("registers/ar_cache"), 2);
	/* what works: edit a copy, write it back */
	ck_assert_int_eq(sh("sed 's/ar_cache = .*/ar_cache = 0x3/' $M/settings > %s && "
			    "cat %s > $M/settings",
			    "/tmp/gafs-sed.ini", "/tmp/gafs-sed.ini"),
			 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 3);
	unlink("/tmp/gafs-sed.ini");
}
END_TEST

/* One open writes one text, in order: a write elsewhere (pwrite at 0
 * twice, as a program rewriting a value might) is refused, and the text
 * with it; an append (O_APPEND: at the kernel's end of file) is one text. */
START_TEST(order_and_append)
{
	mnt_start(NULL);
	ck_assert_int_eq(writef("registers/ar_cache", "2\n"), 0);
	ck_assert_int_eq(sh("python3 -c 'import os, sys\n"
			    "fd = os.open(sys.argv[1], os.O_WRONLY)\n"
			    "os.pwrite(fd, b\"5\", 0)\n"
			    "try:\n"
			    "    os.pwrite(fd, b\"6\", 0)\n"
			    "    sys.exit(1)\n"
			    "except OSError as e:\n"
			    "    assert e.errno == 22, e\n"
			    "os.close(fd)' $M/registers/ar_cache"),
			 0);
	ck_assert_msg(strstr(err_last(), "offset 0") && strstr(err_last(), "in order"), "%s",
		      err_last());
	ck_assert_uint_eq(readnum("registers/ar_cache"), 2);
	ck_assert_int_eq(sh("echo 4 >> $M/registers/ar_cache"), 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 4);
	ck_assert_int_eq(sh("printf '[registers]\\nar_cache = 6\\n' >> $M/settings"), 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 6);
}
END_TEST

/* dd's 512-byte blocks cut a long settings.yaml inside a line: the cut
 * line is checked with the next block, so the file applies (and a bad
 * value in it is still refused, at its line). */
START_TEST(block_cut_inside_a_line)
{
	char src[] = "/tmp/gafs-cut-XXXXXX";
	char text[2048];
	size_t n;
	int fd;

	mnt_start("-o version=4");
	ck_assert_int_eq(writef("registers/ar_cache", "1\n"), 0);
	n = (size_t)snprintf(text, sizeof(text), YCORE);
	while (n + 23 < 470)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "      # a comment line\n");
	/* block 1 ends inside "AxiReadCache: 0x6", after "0x" (not a number) */
	n += (size_t)snprintf(text + n, sizeof(text) - n, "%*s\n      AxiReadCache: 0x6\n",
			      (int)(489 - n), "#");
	ck_assert_int_eq(strncmp(text + 510, "0x6", 3), 0);
	fd = mkstemp(src);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, n), (ssize_t)n);
	close(fd);
	ck_assert_int_eq(sh("dd if=%s of=$M/settings.yaml status=none", src), 0);
	ck_assert_uint_eq(readnum("registers/ar_cache"), 6);
	ck_assert_int_eq(sh("sed -i 's/0x6/0x16/' %s && "
			    "! dd if=%s of=$M/settings.yaml status=none 2>/dev/null",
			    src, src),
			 0);
	ck_assert_msg(strstr(err_last(), "ERANGE") && strstr(err_last(), "AxiReadCache"), "%s",
		      err_last());
	ck_assert_uint_eq(readnum("registers/ar_cache"), 6);
	unlink(src);
}
END_TEST

/* A refusal only the card can make (a value it does not hold) comes at
 * close: the writers that check close see it. */
START_TEST(card_refusal_at_close)
{
	static const char *const cmds[] = {
		"cat /tmp/gafs-ign.ini > $M/settings",
		"/usr/bin/printf '[registers]\\nar_cache = 7\\n' > $M/settings",
		"tee $M/settings < /tmp/gafs-ign.ini > /dev/null",
		"dd if=/tmp/gafs-ign.ini of=$M/settings status=none",
		"python3 -c 'import sys\nwith open(sys.argv[1], \"w\") as f:\n"
		"    f.write(\"[registers]\\nar_cache = 7\\n\")' $M/settings",
	};

	mnt_start("-o version=4");
	ck_assert_int_eq(writef("registers/ar_cache", "1\n"), 0);
	ck_assert_int_eq(sh("printf '[registers]\\nar_cache = 7\\n' > /tmp/gafs-ign.ini"), 0);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		ck_assert_int_eq(writef("sim/inject_register_ignored", "1"), 0);
		ck_assert_msg(sh("%s 2>/dev/null", cmds[i]) != 0, "%s: exit 0", cmds[i]);
		ck_assert_msg(strstr(err_last(), "EIO") && strstr(err_last(), "line 2"), "%s: %s",
			      cmds[i], err_last());
		ck_assert_uint_eq(readnum("registers/ar_cache"), 1);
	}
	unlink("/tmp/gafs-ign.ini");
}
END_TEST

/* registers/raw: Python's read() asks for st_size + 1 bytes and gets the
 * block; a read past its end gets what there is. */
START_TEST(raw_read_past_end)
{
	mnt_start(NULL);
	ck_assert_int_eq(sh("python3 -c 'import os, sys\n"
			    "data = open(sys.argv[1], \"rb\").read()\n"
			    "assert len(data) == os.stat(sys.argv[1]).st_size == 32768, len(data)\n"
			    "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
			    "assert len(os.pread(fd, 4099, 0)) == 4096\n"
			    "assert len(os.pread(fd, 9, 32764)) == 4\n"
			    "assert os.pread(fd, 4, 32768) == b\"\"\n"
			    "try:\n"
			    "    os.pread(fd, 3, 0)\n"
			    "    sys.exit(1)\n"
			    "except OSError as e:\n"
			    "    assert e.errno == 22\n"
			    "' $M/registers/raw"),
			 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("writers");
	TCase *tc = tcase_create("writers");

	tcase_set_timeout(tc, TEST_TIMEOUT);
	tcase_add_loop_test(tc, every_writer_whole_or_nothing, 0,
			    (int)(sizeof(writers) / sizeof(writers[0])));
	tcase_add_test(tc, writers_of_nothing);
	tcase_add_test(tc, sed_in_place_refused);
	tcase_add_test(tc, order_and_append);
	tcase_add_test(tc, block_cut_inside_a_line);
	tcase_add_test(tc, card_refusal_at_close);
	tcase_add_test(tc, raw_read_past_end);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
