// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * SLAC's PRBS payload (core/prbs.c): the words worked out by hand from the
 * format's definition, a round trip, and every way a frame can be wrong.
 * Upstream's own checker (PrbsData) accepting our frames is proven in QEMU
 * by tests/upstream/tools.sh.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gpuasync/prbs.h"
#include "common/run_suite.h"

static uint32_t w(const uint8_t *p, unsigned int k)
{
	uint32_t v;

	memcpy(&v, p + 4 * k, 4);
	return v;
}

START_TEST(test_words_by_hand)
{
	uint8_t f[24];

	ga_prbs_fill(f, sizeof(f), 1);
	ck_assert_uint_eq(w(f, 0), 1);			  /* sequence */
	ck_assert_uint_eq(w(f, 1), 5);			  /* (24 - 4) / 4 */
	ck_assert_uint_eq(w(f, 2), 2);			  /* 1 << 1, bits 1/2/6/31 of 1 are 0 */
	ck_assert_uint_eq(w(f, 3), 5);			  /* 2 << 1 | bit 1 of 2 */
	ck_assert_uint_eq(w(f, 4), 11);			  /* 5 << 1 | bit 2 of 5 */
	ck_assert_uint_eq(w(f, 5), 23);			  /* 11 << 1 | bit 1 of 11 */
	ck_assert_uint_eq(ga_prbs_step(0x80000000u), 1u); /* bit 31 feeds back, shifts out */
}
END_TEST

START_TEST(test_round_trip)
{
	static uint8_t f[65536];
	uint32_t seq = 0, len;

	for (len = 12; len <= sizeof(f); len = len * 3 + 4) {
		len &= ~3u;
		ga_prbs_fill(f, len, 0xC0FFEE00u + len);
		ck_assert(ga_prbs_check(f, len, &seq));
		ck_assert_uint_eq(seq, 0xC0FFEE00u + len);
	}
}
END_TEST

START_TEST(test_rejects)
{
	uint8_t f[64], g[64];
	uint32_t seq = 0;

	ga_prbs_fill(f, sizeof(f), 7);
	memcpy(g, f, sizeof(g));
	g[40] ^= 0x10; /* one bit */
	ck_assert(!ga_prbs_check(g, sizeof(g), &seq));
	ck_assert_uint_eq(seq, 7);
	ck_assert(!ga_prbs_check(f, sizeof(f) - 4, NULL)); /* cut: length word */
	ck_assert(!ga_prbs_check(f, 8, NULL));		   /* too short */
	ga_prbs_fill(g, 18, 7);				   /* not whole words */
	ck_assert(!ga_prbs_check(g, 18, NULL));
	ck_assert_uint_eq(w(g, 1), 3);	   /* (18 - 4) / 4, rounded down */
	ck_assert_mem_eq(g + 8, f + 8, 8); /* same words, then the next word's bytes */
	ck_assert_uint_eq(g[16], f[16]);
	ck_assert_uint_eq(g[17], f[17]);
}
END_TEST

SUITE_MAIN("prbs", "core", 0, {test_words_by_hand}, {test_round_trip}, {test_rejects})
