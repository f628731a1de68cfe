// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Value parsing and formatting (parse.c): what every file of the mount,
 * every config key and every -o option accepts and rejects.  Cases are
 * tables of (input, max, expected result); inputs carry explicit lengths
 * so embedded NULs and unterminated buffers are covered too.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/run_suite.h"
#include "gpuasync/parse.h"

struct pcase {
	const char *s;
	size_t len; /* 0: strlen(s) */
	uint64_t max;
	int rc;
	uint64_t v;
};

#define L(lit) lit, sizeof(lit) - 1 /* a literal with its exact length (NULs kept) */

static const struct pcase u64_cases[] = {
	{"1", 0, UINT64_MAX, 0, 1},
	{"1\n", 0, UINT64_MAX, 0, 1},
	{"0x1", 0, UINT64_MAX, 0, 1},
	{"0X1f", 0, UINT64_MAX, 0, 0x1f},
	{"0xDeadBeef", 0, UINT64_MAX, 0, 0xdeadbeef},
	{"0b101", 0, UINT64_MAX, 0, 5},
	{"0B1", 0, UINT64_MAX, 0, 1},
	{" 7 ", 0, UINT64_MAX, 0, 7},
	{"\t7\t\n", 0, UINT64_MAX, 0, 7},
	{"7 \n", 0, UINT64_MAX, 0, 7},
	{"0", 0, 0, 0, 0},
	{"010", 0, UINT64_MAX, 0, 10}, /* decimal, never octal */
	{"18446744073709551615", 0, UINT64_MAX, 0, UINT64_MAX},
	{"0xffffffffffffffff", 0, UINT64_MAX, 0, UINT64_MAX},
	{"00000000000000000000000000001", 0, UINT64_MAX, 0, 1},
	/* rejected */
	{"", 0, UINT64_MAX, -EINVAL, 0},
	{"\n", 0, UINT64_MAX, -EINVAL, 0},
	{"  ", 0, UINT64_MAX, -EINVAL, 0},
	{" \n ", 0, UINT64_MAX, -EINVAL, 0},
	{"-1", 0, UINT64_MAX, -EINVAL, 0},
	{"+1", 0, UINT64_MAX, -EINVAL, 0},
	{"1 2", 0, UINT64_MAX, -EINVAL, 0},
	{"1\n2", 0, UINT64_MAX, -EINVAL, 0},
	{"1\n\n", 0, UINT64_MAX, -EINVAL, 0},
	{"0x", 0, UINT64_MAX, -EINVAL, 0},
	{"0b", 0, UINT64_MAX, -EINVAL, 0},
	{"0b2", 0, UINT64_MAX, -EINVAL, 0},
	{"0xg", 0, UINT64_MAX, -EINVAL, 0},
	{"x1", 0, UINT64_MAX, -EINVAL, 0},
	{"abc", 0, UINT64_MAX, -EINVAL, 0},
	{"1.0", 0, UINT64_MAX, -EINVAL, 0},
	{"1e3", 0, UINT64_MAX, -EINVAL, 0},
	{"1K", 0, UINT64_MAX, -EINVAL, 0}, /* suffixes only for sizes */
	{"1\r\n", 0, UINT64_MAX, -EINVAL, 0},
	{L("1\0"), UINT64_MAX, -EINVAL, 0},
	{L("1\0junk"), UINT64_MAX, -EINVAL, 0},
	{L("\0"), UINT64_MAX, -EINVAL, 0},
	/* out of range */
	{"18446744073709551616", 0, UINT64_MAX, -ERANGE, 0},
	{"99999999999999999999999999", 0, UINT64_MAX, -ERANGE, 0},
	{"0x10000000000000000", 0, UINT64_MAX, -ERANGE, 0},
	{"0b11111111111111111111111111111111111111111111111111111111111111111", 0, UINT64_MAX,
	 -ERANGE, 0},
	{"2", 0, 1, -ERANGE, 0},
	{"1", 0, 1, 0, 1},
	{"1", 0, 0, -ERANGE, 0},
	{"4294967295", 0, UINT32_MAX, 0, UINT32_MAX},
	{"4294967296", 0, UINT32_MAX, -ERANGE, 0},
	{"0x100000000", 0, UINT32_MAX, -ERANGE, 0},
};

static const struct pcase size_cases[] = {
	{"4096", 0, UINT64_MAX, 0, 4096},
	{"64K", 0, UINT64_MAX, 0, 65536},
	{"64k", 0, UINT64_MAX, 0, 65536},
	{"64KiB", 0, UINT64_MAX, 0, 65536},
	{"64KB", 0, UINT64_MAX, 0, 65536},
	{"1M", 0, UINT64_MAX, 0, 1048576},
	{"1MiB", 0, UINT64_MAX, 0, 1048576},
	{"1MiB\n", 0, UINT64_MAX, 0, 1048576},
	{" 2G ", 0, UINT64_MAX, 0, 2147483648ull},
	{"0x10K", 0, UINT64_MAX, 0, 16384},
	{"0x1B", 0, UINT64_MAX, 0, 27}, /* B is a hex digit */
	{"100B", 0, UINT64_MAX, 0, 100},
	{"0B", 0, UINT64_MAX, 0, 0},
	{"0", 0, UINT64_MAX, 0, 0},
	{"16777215G", 0, UINT64_MAX, 0, 16777215ull << 30},
	/* rejected */
	{"", 0, UINT64_MAX, -EINVAL, 0},
	{"\n", 0, UINT64_MAX, -EINVAL, 0},
	{"K", 0, UINT64_MAX, -EINVAL, 0},
	{"-1K", 0, UINT64_MAX, -EINVAL, 0},
	{"64 K", 0, UINT64_MAX, -EINVAL, 0},
	{"64T", 0, UINT64_MAX, -EINVAL, 0},
	{"64Ki", 0, UINT64_MAX, -EINVAL, 0},
	{"64KiBB", 0, UINT64_MAX, -EINVAL, 0},
	{"64iB", 0, UINT64_MAX, -EINVAL, 0},
	{"1.5M", 0, UINT64_MAX, -EINVAL, 0},
	{"1M 2M", 0, UINT64_MAX, -EINVAL, 0},
	{L("1M\0"), UINT64_MAX, -EINVAL, 0},
	/* out of range, including overflow of the multiplication */
	{"17179869184G", 0, UINT64_MAX, -ERANGE, 0},
	{"18446744073709551615K", 0, UINT64_MAX, -ERANGE, 0},
	{"18446744073709551616", 0, UINT64_MAX, -ERANGE, 0},
	{"64K", 0, 65535, -ERANGE, 0},
	{"64K", 0, 65536, 0, 65536},
	{"4G", 0, UINT32_MAX, -ERANGE, 0},
};

static void run_cases(const struct pcase *c, size_t n, bool size)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = c[i].len ? c[i].len : strlen(c[i].s);
		uint64_t v = 0x5a5a5a5a;
		int rc = size ? ga_parse_size(c[i].s, len, c[i].max, &v)
			      : ga_parse_u64(c[i].s, len, c[i].max, &v);

		ck_assert_msg(rc == c[i].rc, "%s case %zu \"%.*s\": rc %d, want %d",
			      size ? "size" : "u64", i, (int)len, c[i].s, rc, c[i].rc);
		if (rc == 0)
			ck_assert_msg(v == c[i].v, "case %zu \"%s\": %llu, want %llu", i, c[i].s,
				      (unsigned long long)v, (unsigned long long)c[i].v);
		else
			ck_assert_msg(v == 0x5a5a5a5a, "case %zu: output written on error", i);
	}
}

START_TEST(test_u64)
{
	run_cases(u64_cases, sizeof(u64_cases) / sizeof(u64_cases[0]), false);
}
END_TEST

START_TEST(test_size)
{
	run_cases(size_cases, sizeof(size_cases) / sizeof(size_cases[0]), true);
}
END_TEST

/* Only @len bytes are read: a FUSE write buffer has no terminator. */
START_TEST(test_length_bound)
{
	uint64_t v;

	ck_assert_int_eq(ga_parse_u64("12345", 2, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 12);
	ck_assert_int_eq(ga_parse_size("64Kjunk", 3, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, 65536);
	ck_assert_int_eq(ga_parse_u64("1", 0, UINT64_MAX, &v), -EINVAL);
	ck_assert_int_eq(ga_parse_u64(NULL, 0, UINT64_MAX, &v), -EINVAL);
}
END_TEST

START_TEST(test_bool)
{
	static const struct {
		const char *s;
		int rc;
		bool v;
	} c[] = {
		{"1", 0, true},	     {"0", 0, false},	   {"1\n", 0, true},
		{"0x1", 0, true},    {"0b0", 0, false},	   {"true", 0, true},
		{"TRUE", 0, true},   {"False", 0, false},  {"yes\n", 0, true},
		{"no", 0, false},    {" on ", 0, true},	   {"OFF", 0, false},
		{"2", -ERANGE, 0},   {"", -EINVAL, 0},	   {"\n", -EINVAL, 0},
		{"y", -EINVAL, 0},   {"yess", -EINVAL, 0}, {"tru", -EINVAL, 0},
		{"1\n\n", -EINVAL, 0}, {"on\n\n", -EINVAL, 0}, {"1\n0", -EINVAL, 0},
		{"-1", -EINVAL, 0},  {"1 1", -EINVAL, 0},  {"on\n\n", -EINVAL, 0},
		{"o n", -EINVAL, 0},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		bool v = !c[i].v;
		int rc = ga_parse_bool(c[i].s, strlen(c[i].s), &v);

		ck_assert_msg(rc == c[i].rc, "\"%s\": rc %d want %d", c[i].s, rc, c[i].rc);
		if (rc == 0)
			ck_assert_msg(v == c[i].v, "\"%s\": %d", c[i].s, v);
	}
	bool v;
	ck_assert_int_eq(ga_parse_bool("yes\0", 4, &v), -EINVAL);
}
END_TEST

START_TEST(test_format_u64)
{
	char buf[64];

	ck_assert_int_eq(ga_format_u64(buf, sizeof(buf), 0, false), 2);
	ck_assert_str_eq(buf, "0\n");
	ga_format_u64(buf, sizeof(buf), UINT64_MAX, false);
	ck_assert_str_eq(buf, "18446744073709551615\n");
	ga_format_u64(buf, sizeof(buf), 0x1f, true);
	ck_assert_str_eq(buf, "0x1f\n");
	/* as snprintf: the full length even when cut short */
	ck_assert_int_eq(ga_format_u64(buf, 3, 12345, false), 6);
	ck_assert_str_eq(buf, "12");

	/* Everything formatted parses back to the same value. */
	static const uint64_t vals[] = {0, 1, 9, 10, 4095, 65536, UINT32_MAX, UINT64_MAX};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		for (int hex = 0; hex < 2; hex++) {
			uint64_t v;
			int n = ga_format_u64(buf, sizeof(buf), vals[i], hex);

			ck_assert_int_eq(ga_parse_u64(buf, (size_t)n, UINT64_MAX, &v), 0);
			ck_assert_uint_eq(v, vals[i]);
		}
	}
}
END_TEST

START_TEST(test_format_size)
{
	static const struct {
		uint64_t v;
		const char *s;
	} c[] = {
		{0, "0\n"},
		{1, "1\n"},
		{1000, "1000\n"},
		{1024, "1K\n"},
		{4096, "4K\n"},
		{65536, "64K\n"},
		{1536, "1536\n"},
		{1048576, "1M\n"},
		{1572864, "1536K\n"},
		{1ull << 30, "1G\n"},
		{5ull << 40, "5120G\n"},
		{UINT64_MAX, "18446744073709551615\n"},
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		uint64_t v;
		int n = ga_format_size(buf, sizeof(buf), c[i].v);

		ck_assert_str_eq(buf, c[i].s);
		ck_assert_int_eq(n, (int)strlen(buf));
		ck_assert_int_eq(ga_parse_size(buf, (size_t)n, UINT64_MAX, &v), 0);
		ck_assert_uint_eq(v, c[i].v);
	}
}
END_TEST

static Suite *parse_suite(void)
{
	return suite_of("parse", "parse", 0,
			SUITE_TESTS({test_u64}, {test_size}, {test_length_bound}, {test_bool},
				    {test_format_u64}, {test_format_size}));
}

int main(void)
{
	return run_suite(parse_suite());
}
