// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Error explanations and optional logging.
 *
 * An errno alone cannot say why a call failed ("EINVAL" for a size that is
 * not a multiple of 64 KiB, or for an index out of order?), so every
 * failing path records a sentence with ga_err() and callers fetch it with
 * ga_last_error().  The text lives in a per-thread buffer: the filesystem
 * calls the library from many threads at once and each must see its own
 * last error, with no lock.
 *
 * The library prints nothing by default (it runs inside a daemon and in
 * other people's programs); GPUASYNC_LOG=1 in the environment sends every
 * recorded error and every ga_log() line to stderr.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define GA_ERR_LEN 512

static _Thread_local char ga_err_buf[GA_ERR_LEN];

/* Read per call: cheap, and a test may set the variable after start-up. */
bool ga_log_enabled(void)
{
	const char *v = getenv("GPUASYNC_LOG");

	return v && *v && strcmp(v, "0") != 0;
}

static void ga_vlog(const char *fmt, va_list ap)
{
	char line[GA_ERR_LEN];

	/* Format first, then one stdio call, so concurrent lines stay whole. */
	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "gpuasync: %s\n", line);
}

int ga_err(int err, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(ga_err_buf, sizeof(ga_err_buf), fmt, ap);
		va_end(ap);
	} else {
		snprintf(ga_err_buf, sizeof(ga_err_buf), "%s", strerror(err < 0 ? -err : err));
	}
	if (ga_log_enabled())
		fprintf(stderr, "gpuasync: error %d: %s\n", err, ga_err_buf);
	/* Callers often read errno after us (e.g. right after a failed open). */
	errno = saved;
	return err;
}

void ga_err_clear(void)
{
	ga_err_buf[0] = '\0';
}

const char *ga_last_error(void)
{
	return ga_err_buf;
}

void ga_log(const char *fmt, ...)
{
	va_list ap;

	if (!ga_log_enabled())
		return;
	va_start(ap, fmt);
	ga_vlog(fmt, ap);
	va_end(ap);
}
