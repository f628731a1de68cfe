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

static int sb_grow(struct strbuf *sb, size_t need)
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

int sb_put(struct strbuf *sb, const void *data, size_t len)
{
	if (sb_grow(sb, len))
		return -1;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int sb_puts(struct strbuf *sb, const char *s)
{
	return sb_put(sb, s, strlen(s));
}

/* @v in decimal, without printf (for lines written by the thousand). */
int sb_put_uint(struct strbuf *sb, uint64_t v)
{
	char d[24];
	int i = sizeof(d);

	do
		d[--i] = (char)('0' + v % 10);
	while ((v /= 10) && i);
	return sb_put(sb, d + i, sizeof(d) - (size_t)i);
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
