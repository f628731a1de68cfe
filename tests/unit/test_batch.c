// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * AxiStream Batcher v1 (core/batch.c) and the simulated card's batched
 * patterns (lib/src/backends/pattern.c): a batch laid out by hand walked
 * back to its sub-frames, the jungfrau and epixuhr layouts, each batch
 * error the DRP latches made on purpose and found, and the payloads that
 * are no batch (prbs, the timing pattern) never taken for a bad one.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "gpuasync/batch.h"
#include "gpuasync/sim.h"
#include "common/run_suite.h"

struct mem {
	const uint8_t *p;
	uint32_t len;
};

static int rd(void *ctx, uint32_t off, void *dst, uint32_t len)
{
	const struct mem *m = ctx;

	ck_assert_uint_le(off + len, m->len);
	memcpy(dst, m->p + off, len);
	return 0;
}

static int walk(const uint8_t *p, uint32_t len, struct ga_batch_sub *sub, unsigned int *n)
{
	struct mem m = {p, len};

	return ga_batch_walk(p, len, GA_TIMING_HDR_BYTES, rd, &m, sub, n);
}

/* Width 2 (8-byte lines): header line, a 32-byte TimingHeader (tdest 0),
 * 5 bytes for tdest 2 padded to 8, each followed by its 8-byte tail. */
START_TEST(walk_by_hand)
{
	uint8_t b[8 + 32 + 8 + 8 + 8] = {0};
	struct ga_batch_sub sub[GA_BATCH_MAX_SUB];
	unsigned int n;

	ga_batch_put_header(b, 2, 7);
	ck_assert_uint_eq(b[0], 0x21); /* version 1, width 2 */
	ck_assert_uint_eq(b[1], 7);
	memset(b + 8, 0xAA, 32);
	ga_batch_put_tail(b + 40, 2, 32, 0, 0x02, 0);
	memset(b + 48, 0xBB, 5);
	ga_batch_put_tail(b + 56, 2, 5, 2, 0, 0x01);
	ck_assert_int_eq(walk(b, sizeof(b), sub, &n), GA_BATCH_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(sub[0].off, 8);
	ck_assert_uint_eq(sub[0].size, 32);
	ck_assert_uint_eq(sub[0].tdest, 0);
	ck_assert_uint_eq(sub[0].first_user, 0x02);
	ck_assert_uint_eq(sub[1].off, 48);
	ck_assert_uint_eq(sub[1].size, 5);
	ck_assert_uint_eq(sub[1].tdest, 2);
	ck_assert_uint_eq(sub[1].last_user, 0x01);
	/* a byte more at the end: the last tail is no tail, no batch */
	ck_assert_int_eq(walk(b, sizeof(b) - 8, sub, &n), GA_BATCH_NOT_BATCH);
	/* sizes that run past the header */
	ga_batch_put_tail(b + 56, 2, 50, 2, 0, 0);
	ck_assert_int_eq(walk(b, sizeof(b), sub, &n), GA_BATCH_CORRUPT);
	/* sub-frame 0 not the TimingHeader (tdest 1) */
	ga_batch_put_tail(b + 56, 2, 5, 2, 0, 0);
	ga_batch_put_tail(b + 40, 2, 32, 1, 0, 0);
	ck_assert_int_eq(walk(b, sizeof(b), sub, &n), GA_BATCH_CORRUPT);
	/* too short: a header and part of a tail */
	ck_assert_int_eq(walk(b, 12, sub, &n), GA_BATCH_TOO_SHORT);
	/* version 2: not this protocol */
	b[0] = 0x22;
	ck_assert_int_eq(walk(b, sizeof(b), sub, &n), GA_BATCH_NOT_BATCH);
}
END_TEST

/* The batched patterns: their layouts, their TimingHeader, a round trip. */
START_TEST(patterns_walk)
{
	static const struct {
		enum ga_pattern p;
		uint32_t size;
		unsigned int nsub;
	} c[] = {{GA_PATTERN_JUNGFRAU, 4096, 3},
		 {GA_PATTERN_JUNGFRAU, 144, 3},
		 {GA_PATTERN_EPIXUHR, 16384, 7},
		 {GA_PATTERN_EPIXUHR, 256, 7}};

	for (unsigned int k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		uint8_t *f = malloc(c[k].size);
		struct ga_batch_sub sub[GA_BATCH_MAX_SUB];
		struct ga_timing_header th;
		uint32_t data = 0;
		unsigned int n;

		ck_assert_ptr_nonnull(f);
		ck_assert_int_eq(ga_pattern_size_ok(c[k].p, c[k].size), 0);
		ga_pattern_fill(c[k].p, 41, f, c[k].size);
		ck_assert_int_eq(walk(f, c[k].size, sub, &n), GA_BATCH_OK);
		ck_assert_uint_eq(n, c[k].nsub);
		for (unsigned int i = 0; i < n; i++) {
			ck_assert_uint_eq(sub[i].tdest, i); /* jungfrau 0, 1, 2; epix 0..6 */
			data += sub[i].size;
		}
		/* header line, data, a 16-byte tail each: the whole frame */
		ck_assert_uint_eq(16 + data + 16 * n, c[k].size);
		ga_timing_decode(f + sub[0].off, &th);
		ck_assert_uint_eq(th.pulse_ctl & GA_TIMING_PULSE_MASK, GA_TIMING_PULSE0 + 41);
		ck_assert_uint_eq(th.evt_counter, 41);
		ck_assert_int_eq(ga_pattern_check(c[k].p, 41, f, c[k].size), -1);
		ck_assert_int_ne(ga_pattern_check(c[k].p, 42, f, c[k].size), -1);
		free(f);
	}
	/* Sizes a batch cannot fill exactly are refused, with the reason. */
	ck_assert_int_eq(ga_pattern_size_ok(GA_PATTERN_JUNGFRAU, 4100), -EINVAL);
	ck_assert_int_eq(ga_pattern_size_ok(GA_PATTERN_EPIXUHR, 240), -EINVAL);
	ck_assert_int_eq(ga_pattern_size_ok(GA_PATTERN_TIMING, 5), 0);
}
END_TEST

/* A frame cut at the max size is a prefix of the frame it was made for. */
START_TEST(truncated_is_prefix)
{
	uint8_t full[4096], cut[1000];

	ga_pattern_fill_batch(GA_PATTERN_JUNGFRAU, 3, GA_BATCH_OK, sizeof(full), full,
			      sizeof(full));
	ga_pattern_fill_batch(GA_PATTERN_JUNGFRAU, 3, GA_BATCH_OK, sizeof(full), cut, sizeof(cut));
	/* the time stamps (bytes 24..31 and 72..79) may differ */
	memcpy(cut + 24, full + 24, 8);
	memcpy(cut + 72, full + 72, 8);
	ck_assert_mem_eq(cut, full, sizeof(cut));
}
END_TEST

/* Each batch error the simulated card injects is the one a reader finds. */
START_TEST(faults_found)
{
	static const enum ga_batch_result errs[] = {GA_BATCH_TOO_SHORT, GA_BATCH_ZERO_SIZE,
						    GA_BATCH_CORRUPT, GA_BATCH_OVERFLOW};
	static const char *const names[] = {"too_short", "zero_size", "corrupt", "overflow"};
	struct ga_batch_sub sub[GA_BATCH_MAX_SUB];
	uint8_t f[16384];
	unsigned int n;

	for (unsigned int p = GA_PATTERN_JUNGFRAU; p <= GA_PATTERN_EPIXUHR; p++)
		for (unsigned int e = 0; e < 4; e++) {
			/* the card cuts a too-short frame to 8 bytes */
			uint32_t len = errs[e] == GA_BATCH_TOO_SHORT ? 8 : sizeof(f);

			ga_pattern_fill_batch((enum ga_pattern)p, 9, errs[e], sizeof(f), f, len);
			ck_assert_int_eq(walk(f, len, sub, &n), errs[e]);
			ck_assert_str_eq(ga_batch_result_name(errs[e]), names[e]);
		}
}
END_TEST

/* Payloads that are no batch are never a bad batch: the prbs pattern and
 * the timing pattern (a TimingHeader and counter words) over many frames. */
START_TEST(others_not_batches)
{
	static const enum ga_pattern pats[] = {GA_PATTERN_PRBS, GA_PATTERN_TIMING,
					       GA_PATTERN_COUNTER};
	static const uint32_t sizes[] = {64, 4096};
	struct ga_batch_sub sub[GA_BATCH_MAX_SUB];
	uint8_t f[4096];
	unsigned int n;

	for (unsigned int p = 0; p < 3; p++)
		for (unsigned int z = 0; z < 2; z++)
			for (uint32_t seq = 0; seq < 2000; seq++) {
				ga_pattern_fill(pats[p], seq, f, sizes[z]);
				ck_assert_msg(walk(f, sizes[z], sub, &n) == GA_BATCH_NOT_BATCH,
					      "%s frame %u of %u bytes taken for a batch",
					      ga_pattern_name(pats[p]), seq, sizes[z]);
			}
}
END_TEST

SUITE_MAIN("batch", "core", 0, {walk_by_hand}, {patterns_walk}, {truncated_is_prefix},
	   {faults_found}, {others_not_batches})
