/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * AxiStream Batcher protocol v1: how the LCLS-II detectors that batch
 * (Jungfrau, EpixUHR3x2) pack one event's sub-frames into one DMA frame,
 * and how a reader finds them (docs/drp.md "Where the TimingHeader is").
 *
 *   +0            header, one line: byte 0 = version (bits 3:0, 1) | width
 *                 (bits 7:4), byte 1 = sequence count; a line is
 *                 2 << width bytes (the rest of the line is padding)
 *   then          each sub-frame: its data padded to a whole line, then
 *                 its tail in a line of its own (at least 8 bytes):
 *                 u32 size (data bytes, no padding), u8 tdest,
 *                 u8 tuser_first, u8 tuser_last, u8 width
 *
 * A reader starts at the end and walks back tail by tail: each tail gives
 * the size of the data before it.  Sub-frame 0 (tdest 0) is the event's
 * TimingHeader.  Little-endian.  The facts this was written from say the
 * header is 2 bytes and the tail 8; that each fills a line of its own
 * (zero padding) is this project's reading (docs/drp.md).
 */
#ifndef GPUASYNC_BATCH_H
#define GPUASYNC_BATCH_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
#endif

#define GA_BATCH_VERSION    1u
#define GA_BATCH_TAIL_BYTES 8u
/* Widths a reader accepts: lines of 8 bytes (a tail fills one) to 8 KiB. */
#define GA_BATCH_MIN_WIDTH 2u
#define GA_BATCH_MAX_WIDTH 12u
/* Sub-frames a reader keeps, and the tdest values it accepts: a tdest at
 * or above it is the DRP's "overflow" (tdest >= count). */
#define GA_BATCH_MAX_SUB 16u

/* What a walk found.  OK and the four errors the DRP latches
 * (DRP_ebStatus); NOT_BATCH: the payload is not a v1 batch at all. */
enum ga_batch_result {
	GA_BATCH_OK,
	GA_BATCH_TOO_SHORT, /* shorter than a header and one tail */
	GA_BATCH_ZERO_SIZE, /* a tail says 0 data bytes */
	GA_BATCH_CORRUPT,   /* sizes that do not add up to the frame, a tail
			     * of another width, no TimingHeader first */
	GA_BATCH_OVERFLOW,  /* tdest >= GA_BATCH_MAX_SUB, or more sub-frames */
	GA_BATCH_NOT_BATCH,
};
#define GA_BATCH_NERR GA_BATCH_NOT_BATCH /* OK and the four errors */

struct ga_batch_sub {
	uint32_t off, size; /* data bytes from the payload's start */
	uint8_t tdest, first_user, last_user;
};

static inline uint32_t ga_batch_line(unsigned int width)
{
	return 2u << width;
}

/* Bytes a tail takes: 8, or one line when lines are wider. */
static inline uint32_t ga_batch_tail_line(unsigned int width)
{
	return ga_batch_line(width) > GA_BATCH_TAIL_BYTES ? ga_batch_line(width)
							  : GA_BATCH_TAIL_BYTES;
}

/* @n rounded up to whole lines. */
static inline uint32_t ga_batch_pad(uint32_t n, unsigned int width)
{
	uint32_t line = ga_batch_line(width);

	return (n + line - 1) & ~(line - 1);
}

/* Reads @len bytes at @off of the payload into @dst: 0 or a negative errno. */
typedef int (*ga_batch_read_fn)(void *ctx, uint32_t off, void *dst, uint32_t len);

/*
 * Walk the batch of @len payload bytes whose first two bytes are @hdr,
 * reading tails through @rd.  A payload is a batch when its header says
 * version 1 and its last tail has the header's width; anything else is
 * GA_BATCH_NOT_BATCH.  On GA_BATCH_OK, @sub[0..*@count) are the sub-frames
 * in order, the first of them tdest 0 and at least @min0 bytes (the
 * TimingHeader).  Returns an enum ga_batch_result, or a negative errno from
 * @rd.
 */
int ga_batch_walk(const uint8_t hdr[2], uint32_t len, uint32_t min0, ga_batch_read_fn rd, void *ctx,
		  struct ga_batch_sub sub[GA_BATCH_MAX_SUB], unsigned int *count);

/* Header and tail encoders for generators (the simulated card). */
void ga_batch_put_header(uint8_t *p, unsigned int width, uint8_t seq);
void ga_batch_put_tail(uint8_t *p, unsigned int width, uint32_t size, uint8_t tdest,
		       uint8_t first_user, uint8_t last_user);

const char *ga_batch_result_name(enum ga_batch_result r);

#endif /* GPUASYNC_BATCH_H */
