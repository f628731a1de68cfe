// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A check's result: its verdict's name, and what fills in found, todo and
 * the verdict.  Below every other file of the platform doctor (the checks,
 * device/topology and the table all use it; it uses none of them), so the
 * table can call topology.c without topology.c calling back into it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pf.h"

const char *ga_verdict_name(enum ga_verdict v)
{
	static const char *const n[] = {"OK", "WARN", "FAIL"};

	return (unsigned int)v < 3 ? n[v] : "?";
}

static void vappend(char *dst, size_t cap, const char *fmt, va_list ap)
{
	size_t n = strlen(dst);

	if (n + 1 < cap)
		vsnprintf(dst + n, cap - n, fmt, ap);
}

void pf_found(struct ga_check_result *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(r->found, sizeof(r->found), fmt, ap);
	va_end(ap);
}

void pf_todo(struct ga_check_result *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(r->todo, sizeof(r->todo), fmt, ap);
	va_end(ap);
}

void pf_unknown(struct ga_check_result *r, const char *fmt, ...)
{
	va_list ap;

	pf_at_least(r, GA_VERDICT_WARN);
	pf_found(r, "could not tell: ");
	va_start(ap, fmt);
	vappend(r->found, sizeof(r->found), fmt, ap);
	va_end(ap);
}

void pf_at_least(struct ga_check_result *r, enum ga_verdict v)
{
	if (v > r->verdict)
		r->verdict = v;
}
