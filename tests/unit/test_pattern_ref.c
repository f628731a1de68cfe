/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Payload patterns and CRC-32 against plain reference implementations.
 *
 * A consumer checks frames knowing only the pattern's definition (a CUDA
 * kernel, a Python script), so the fast generator in pattern.c (eight LFSR
 * chains, block copies) and the sliced CRC must give exactly the words of
 * the definition written out one step at a time here: prbs = Galois LFSR
 * x^32 + x^22 + x^2 + x + 1 (taps 0x80200003), one step per 32-bit word,
 * seeded with seq * 0x9E3779B1 ^ 0xA5A5A5A5 (1 if that is 0); counter =
 * seq + word index; little-endian words, a short tail is the next word's
 * first bytes.  Also: ga_pattern_check finds the first wrong byte.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gpuasync/sim.h"
#include "internal.h"
#include "common/run_suite.h"

static uint32_t ref_word(enum ga_pattern p, uint32_t seq, uint32_t k, uint32_t *st)
{
	uint32_t w;

	switch (p) {
	case GA_PATTERN_PRBS:
		w = *st;
		*st = (*st >> 1) ^ ((*st & 1u) ? 0x80200003u : 0u);
		return w;
	case GA_PATTERN_COUNTER:
		return seq + k;
	default:
		return 0;
	}
}

static void ref_fill(enum ga_pattern p, uint32_t seq, uint8_t *d, uint32_t len)
{
	uint32_t st = seq * 0x9E3779B1u ^ 0xA5A5A5A5u;

	if (!st)
		st = 1;
	for (uint32_t k = 0; 4 * k < len; k++) {
		uint32_t w = ref_word(p, seq, k, &st);

		for (uint32_t b = 0; b < 4 && 4 * k + b < len; b++)
			d[4 * k + b] = (uint8_t)(w >> (8 * b));
	}
}

static uint32_t ref_crc(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1u) ? 0xEDB88320u : 0u);
	}
	return ~c;
}

/* Lengths around the block size (4096 bytes) and the 8-word chains. */
static const uint32_t lens[] = {0,  1,	  3,	4,    5,    31,	   32,
				33, 4095, 4096, 4097, 8191, 12291, 65536 + 7};

START_TEST(test_patterns_match_reference)
{
	static const enum ga_pattern pats[] = {GA_PATTERN_PRBS, GA_PATTERN_COUNTER,
					       GA_PATTERN_ZERO};
	static const uint32_t seqs[] = {0, 1, 2, 0xC969B435u /* seed would be 0: uses 1 */,
					0xFFFFFFFFu};
	uint8_t *want = malloc(70000), *got = malloc(70000);

	for (size_t pi = 0; pi < 3; pi++)
		for (size_t si = 0; si < sizeof(seqs) / sizeof(seqs[0]); si++)
			for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
				uint32_t n = lens[li];

				memset(got, 0xEE, n + 8);
				ref_fill(pats[pi], seqs[si], want, n);
				ga_pattern_fill(pats[pi], seqs[si], got, n);
				ck_assert_msg(memcmp(want, got, n) == 0,
					      "%s seq %u len %u differs from the definition",
					      ga_pattern_name(pats[pi]), seqs[si], n);
				ck_assert_msg(got[n] == 0xEE, "wrote past %u bytes", n);
				ck_assert_int_eq(ga_pattern_check(pats[pi], seqs[si], want, n), -1);
				if (n) {
					want[n / 2] ^= 0x10;
					ck_assert_int_eq(
						ga_pattern_check(pats[pi], seqs[si], want, n),
						n / 2);
				}
			}
	free(want);
	free(got);
}
END_TEST

START_TEST(test_crc_matches_reference)
{
	uint8_t buf[5000];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	ck_assert_uint_eq(ga_crc32(0, "123456789", 9), 0xCBF43926u);
	for (size_t off = 0; off < 9; off++)
		for (size_t n = 0; n < 40; n++)
			ck_assert_uint_eq(ga_crc32(0, buf + off, n), ref_crc(buf + off, n));
	ck_assert_uint_eq(ga_crc32(0, buf, sizeof(buf)), ref_crc(buf, sizeof(buf)));
	/* chunks feed in order */
	ck_assert_uint_eq(ga_crc32(ga_crc32(0, buf, 1234), buf + 1234, sizeof(buf) - 1234),
			  ref_crc(buf, sizeof(buf)));
}
END_TEST

SUITE_MAIN("pattern_ref", "core", 0, {test_patterns_match_reference}, {test_crc_matches_reference})
