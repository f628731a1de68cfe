/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Value parsing and formatting shared by the library, the config file, the
 * filesystem and the tools, so "1", "1\n", "0x1", "64K" mean the same
 * everywhere.  All functions are pure and thread-safe.
 *
 * Accepted: optional surrounding blanks and one trailing newline; decimal,
 * 0x hex, 0b binary; for sizes a suffix K, M, G (powers of 1024, optional
 * "iB"/"B").  Rejected with -EINVAL: empty input, signs, garbage, embedded
 * NUL, two values.  -ERANGE when the value exceeds @max.
 */
#ifndef GPUASYNC_PARSE_H
#define GPUASYNC_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* @s need not be NUL-terminated: @len bytes are parsed. */
int ga_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out);
/* The one value in @s: blanks around it and one trailing newline dropped;
 * -EINVAL when empty or when another newline follows (a second line). */
int ga_parse_value(const char *s, size_t len, const char **start, size_t *n);
int ga_parse_size(const char *s, size_t len, uint64_t max, uint64_t *out);
/* 1/0, true/false, yes/no, on/off (any case). */
int ga_parse_bool(const char *s, size_t len, bool *out);

/* Format with a trailing newline; returns length written (as snprintf). */
int ga_format_u64(char *buf, size_t len, uint64_t v, bool hex);
int ga_format_size(char *buf, size_t len, uint64_t bytes); /* "64K" style */

#ifdef __cplusplus
}
#endif
#endif /* GPUASYNC_PARSE_H */
