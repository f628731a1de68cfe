// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The one value parser: register files, sysfs-style writes, config keys
 * and -o options all come through here, so "1", "1\n", "0x1" and "64K"
 * mean the same thing everywhere and every caller rejects the same junk.
 *
 * Strict on purpose (like the kernel's kstrto*, unlike strtoul): no signs
 * (strtoul happily turns "-1" into 2^64-1), no trailing garbage, no second
 * value, no embedded NUL (a write(2) of "1\0junk" must not pass as "1").
 * Leading zeros are plain decimal, never octal: "010" is ten.
 *
 * Everything works on (pointer, length) because FUSE write buffers are
 * not NUL-terminated.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gpuasync/parse.h"

static bool ga_blank(char c)
{
	return c == ' ' || c == '\t';
}

static char ga_lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/*
 * Find the value inside @s: blanks on both sides and one newline at the
 * end (echo adds it) are dropped; any other newline means a second line,
 * and the whole is refused.
 */
static int ga_trim(const char *s, size_t len, const char **start, size_t *n)
{
	size_t b = 0, e = len;

	if (!s || memchr(s, '\0', len))
		return -EINVAL;
	while (e > b && ga_blank(s[e - 1]))
		e--;
	if (e > b && s[e - 1] == '\n')
		e--;
	while (e > b && ga_blank(s[e - 1]))
		e--;
	while (b < e && ga_blank(s[b]))
		b++;
	if (b == e || memchr(s + b, '\n', e - b))
		return -EINVAL;
	*start = s + b;
	*n = e - b;
	return 0;
}

int ga_parse_value(const char *s, size_t len, const char **start, size_t *n)
{
	return ga_trim(s, len, start, n);
}

static int ga_digit(char c, unsigned int base)
{
	int d;

	if (c >= '0' && c <= '9')
		d = c - '0';
	else if (ga_lower(c) >= 'a' && ga_lower(c) <= 'f')
		d = ga_lower(c) - 'a' + 10;
	else
		return -1;
	return d < (int)base ? d : -1;
}

/*
 * An unsigned number at the start of @p: decimal, 0x hex or 0b binary.
 * *used says how many bytes it took; the caller decides what may follow.
 * Overflow is detected before it happens, so the arithmetic is never UB.
 */
static int ga_number(const char *p, size_t n, size_t *used, uint64_t *out)
{
	unsigned int base = 10;
	size_t i = 0, first;
	uint64_t v = 0;
	int d;

	/*
	 * A prefix counts only with a digit after it: "0x" is then "0" followed
	 * by garbage (EINVAL), and the size "0B" is zero bytes.  Note that in
	 * hex "0x1B" is 27: B is a digit there, so hex sizes take only K/M/G.
	 */
	if (n >= 3 && p[0] == '0' && ga_lower(p[1]) == 'x' && ga_digit(p[2], 16) >= 0) {
		base = 16;
		i = 2;
	} else if (n >= 3 && p[0] == '0' && ga_lower(p[1]) == 'b' && ga_digit(p[2], 2) >= 0) {
		base = 2;
		i = 2;
	}
	first = i;
	for (; i < n && (d = ga_digit(p[i], base)) >= 0; i++) {
		if (v > (UINT64_MAX - (uint64_t)d) / base)
			return -ERANGE;
		v = v * base + (uint64_t)d;
	}
	if (i == first) /* "", "-1", "K" */
		return -EINVAL;
	*used = i;
	*out = v;
	return 0;
}

/* "", "B", or K/M/G (any case) followed by nothing, "B" or "iB". */
static int ga_size_shift(const char *p, size_t n, unsigned int *shift)
{
	const char *rest;
	size_t m;

	if (n == 0) {
		*shift = 0;
		return 0;
	}
	switch (ga_lower(p[0])) {
	case 'b':
		*shift = 0;
		return n == 1 ? 0 : -EINVAL;
	case 'k':
		*shift = 10;
		break;
	case 'm':
		*shift = 20;
		break;
	case 'g':
		*shift = 30;
		break;
	default:
		return -EINVAL;
	}
	rest = p + 1;
	m = n - 1;
	if (m == 0 || (m == 1 && ga_lower(rest[0]) == 'b') ||
	    (m == 2 && ga_lower(rest[0]) == 'i' && ga_lower(rest[1]) == 'b'))
		return 0;
	return -EINVAL;
}

/*
 * A number, then (with @suffix) an optional size suffix; nothing else
 * around it but blanks and one newline.  ga_parse_u64 and ga_parse_size
 * differ only in the suffix.
 */
static int ga_parse_scaled(const char *s, size_t len, bool suffix, uint64_t max, uint64_t *out)
{
	unsigned int shift = 0;
	const char *p;
	size_t n, used;
	uint64_t v;
	int rc;

	rc = ga_trim(s, len, &p, &n);
	if (rc)
		return rc;
	rc = ga_number(p, n, &used, &v);
	if (rc)
		return rc;
	if (suffix)
		rc = ga_size_shift(p + used, n - used, &shift);
	else if (used != n)
		rc = -EINVAL;
	if (rc)
		return rc;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	v <<= shift;
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int ga_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	return ga_parse_scaled(s, len, false, max, out);
}

int ga_parse_size(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	return ga_parse_scaled(s, len, true, max, out);
}

static bool ga_word_eq(const char *p, size_t n, const char *word)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (word[i] == '\0' || ga_lower(p[i]) != word[i])
			return false;
	return word[n] == '\0';
}

int ga_parse_bool(const char *s, size_t len, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on"};
	static const char *const no[] = {"false", "no", "off"};
	const char *p;
	uint64_t v;
	size_t n, i;
	int rc;

	rc = ga_trim(s, len, &p, &n);
	if (rc)
		return rc;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (ga_word_eq(p, n, yes[i])) {
			*out = true;
			return 0;
		}
		if (ga_word_eq(p, n, no[i])) {
			*out = false;
			return 0;
		}
	}
	/* Numbers as every other file takes them: "1", "0x1", "0b0"; 2 is ERANGE. */
	rc = ga_parse_u64(p, n, 1, &v);
	if (rc)
		return rc;
	*out = v != 0;
	return 0;
}

int ga_format_u64(char *buf, size_t len, uint64_t v, bool hex)
{
	if (hex)
		return snprintf(buf, len, "0x%" PRIx64 "\n", v);
	return snprintf(buf, len, "%" PRIu64 "\n", v);
}

/* The largest unit that divides exactly, so parsing it back is lossless. */
int ga_format_size(char *buf, size_t len, uint64_t bytes)
{
	static const struct {
		unsigned int shift;
		const char *suffix;
	} units[] = {{30, "G"}, {20, "M"}, {10, "K"}};
	size_t i;

	for (i = 0; bytes && i < sizeof(units) / sizeof(units[0]); i++) {
		uint64_t unit = (uint64_t)1 << units[i].shift;

		if (bytes % unit == 0)
			return snprintf(buf, len, "%" PRIu64 "%s\n", bytes >> units[i].shift,
					units[i].suffix);
	}
	return snprintf(buf, len, "%" PRIu64 "\n", bytes);
}
