/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A growable text buffer for show handlers.  Running out of memory is
 * sticky (sb->oom) so a renderer can print many lines and check once.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

/* Room for @need more bytes and the NUL (the slow path of sb_put). */
int sb_grow(struct strbuf *sb, size_t need)
{
	size_t cap = sb->cap ? sb->cap : 256;
	char *p;

	if (sb->oom)
		return -1;
	if (sb->len + need + 1 <= sb->cap)
		return 0;
	while (cap < sb->len + need + 1)
		cap *= 2;
	p = realloc(sb->buf, cap);
	if (!p) {
		sb->oom = true;
		return -1;
	}
	sb->buf = p;
	sb->cap = cap;
	return 0;
}

/*
 * Capacity for @cap bytes in all (NUL included), in one allocation: a
 * renderer that knows about how long its text will be (metrics: its last
 * length) saves the doublings, each a copy of all written so far.
 */
int sb_reserve(struct strbuf *sb, size_t cap)
{
	char *p;

	if (sb->oom)
		return -1;
	if (cap <= sb->cap)
		return 0;
	p = realloc(sb->buf, cap);
	if (!p) {
		sb->oom = true;
		return -1;
	}
	p[sb->len] = '\0'; /* a reserved empty buffer reads as "" */
	sb->buf = p;
	sb->cap = cap;
	return 0;
}

/* @v in decimal, without printf (for lines written by the thousand): the
 * digits are counted first and written in place, last one first. */
int sb_put_uint(struct strbuf *sb, uint64_t v)
{
	size_t n = 1;
	char *p;

	for (uint64_t t = v; t >= 10; t /= 10)
		n++;
	if ((sb->oom || sb->len + n + 1 > sb->cap) && sb_grow(sb, n))
		return -1;
	sb->len += n;
	p = sb->buf + sb->len;
	*p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	return 0;
}

int sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sb_grow(sb, 128))
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n >= sb->cap - sb->len) {
		if (sb_grow(sb, (size_t)n))
			return -1;
		va_start(ap, fmt);
		vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
		va_end(ap);
	}
	sb->len += (size_t)n;
	return 0;
}

void sb_reset(struct strbuf *sb)
{
	sb->len = 0;
	sb->oom = false;
	if (sb->buf)
		sb->buf[0] = '\0';
}

void sb_free(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	sb->oom = false;
}
