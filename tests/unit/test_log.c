// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Error explanations (log.c): ga_err returns its errno and records text
 * that only the calling thread sees; long text is cut, never overflows;
 * errno survives; nothing reaches stderr unless GPUASYNC_LOG is set.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuasync/device.h"
#include "internal.h"
#include "common/run_suite.h"

START_TEST(test_err_basics)
{
	ga_err_clear();
	ck_assert_str_eq(ga_last_error(), "");
	ck_assert_int_eq(ga_err(-EINVAL, "size %u is not a multiple of %u", 100u, 64u), -EINVAL);
	ck_assert_str_eq(ga_last_error(), "size 100 is not a multiple of 64");
	ck_assert_int_eq(ga_err(-ENOENT, "second"), -ENOENT);
	ck_assert_str_eq(ga_last_error(), "second");
	ga_err_clear();
	ck_assert_str_eq(ga_last_error(), "");
	/* no format: the errno's own text */
	ga_err(-ENOENT, NULL);
	ck_assert_str_eq(ga_last_error(), strerror(ENOENT));
}
END_TEST

START_TEST(test_err_keeps_errno)
{
	errno = EAGAIN;
	ga_err(-EINVAL, "x");
	ck_assert_int_eq(errno, EAGAIN);
}
END_TEST

START_TEST(test_err_long)
{
	char big[2000];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ga_err(-E2BIG, "%s", big);
	ck_assert_uint_ge(strlen(ga_last_error()), 255);
	ck_assert_uint_lt(strlen(ga_last_error()), sizeof(big) - 1);
	ck_assert(strspn(ga_last_error(), "a") == strlen(ga_last_error()));
}
END_TEST

static void *other_thread(void *arg)
{
	char *seen = arg;

	/* A fresh thread starts with no error, whatever the others did. */
	snprintf(seen, 64, "%s", ga_last_error());
	ga_err(-EIO, "from the other thread");
	return NULL;
}

START_TEST(test_err_per_thread)
{
	char seen[64] = "unset";
	pthread_t t;

	ga_err(-EINVAL, "from the main thread");
	ck_assert_int_eq(pthread_create(&t, NULL, other_thread, seen), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_str_eq(seen, "");
	ck_assert_str_eq(ga_last_error(), "from the main thread");
}
END_TEST

/* Run @fn with stderr sent to a file; return what was written. */
static void capture_stderr(void (*fn)(void), char *out, size_t len)
{
	char path[] = "/tmp/ga-test-log-XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	dup2(fd, 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, out, len - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
}

static void say_things(void)
{
	ga_log("hello %d", 42);
	ga_err(-EINVAL, "bad value");
}

START_TEST(test_log_quiet_by_default)
{
	char out[512];

	unsetenv("GPUASYNC_LOG");
	capture_stderr(say_things, out, sizeof(out));
	ck_assert_str_eq(out, "");
	setenv("GPUASYNC_LOG", "0", 1);
	capture_stderr(say_things, out, sizeof(out));
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_log_enabled)
{
	char out[512];

	setenv("GPUASYNC_LOG", "1", 1);
	capture_stderr(say_things, out, sizeof(out));
	unsetenv("GPUASYNC_LOG");
	ck_assert_ptr_nonnull(strstr(out, "hello 42\n"));
	ck_assert_ptr_nonnull(strstr(out, "bad value\n"));
}
END_TEST

SUITE_MAIN("log", "log", 0, {test_err_basics}, {test_err_keeps_errno}, {test_err_long},
	   {test_err_per_thread}, {test_log_quiet_by_default}, {test_log_enabled})
