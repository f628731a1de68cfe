// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * AxiStream Batcher v1 (gpuasync/batch.h): the walk a reader makes from the
 * end of a batch back to its TimingHeader, and the header and tail encoders
 * the simulated card builds its batched patterns with.  One walk for every
 * reader, so the mount and the tests judge a batch the same way.
 */
#include "ga_base.h"
#include "gpuasync/batch.h"

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int ga_batch_walk(const uint8_t hdr[2], uint32_t len, uint32_t min0, ga_batch_read_fn rd, void *ctx,
		  struct ga_batch_sub sub[GA_BATCH_MAX_SUB], unsigned int *count)
{
	struct ga_batch_sub found[GA_BATCH_MAX_SUB];
	unsigned int width = hdr[0] >> 4, n = 0;
	uint32_t line, tl, pos = len, i;
	uint8_t pad[16];

	*count = 0;
	if ((hdr[0] & 0x0fu) != GA_BATCH_VERSION || width < GA_BATCH_MIN_WIDTH ||
	    width > GA_BATCH_MAX_WIDTH)
		return GA_BATCH_NOT_BATCH;
	line = ga_batch_line(width);
	tl = ga_batch_tail_line(width);
	/* The header line's padding is zero (what of it there is): six
	 * bytes at least, which no other payload here starts with by chance
	 * (the timing record's control byte, prbs, counter words). */
	for (i = 2; i < line && i < len; i += sizeof(pad)) {
		uint32_t k = line - i < sizeof(pad) ? line - i : (uint32_t)sizeof(pad);
		int rc;

		if (k > len - i)
			k = len - i;
		rc = rd(ctx, i, pad, k);
		if (rc < 0)
			return rc;
		for (uint32_t j = 0; j < k; j++)
			if (pad[j])
				return GA_BATCH_NOT_BATCH;
	}
	if (len < line + tl)
		return GA_BATCH_TOO_SHORT;
	/* From the end: each tail says how much data lies before it. */
	while (pos > line) {
		uint8_t t[GA_BATCH_TAIL_BYTES];
		uint32_t size, room;
		int rc;

		if (pos - line < tl)
			return GA_BATCH_CORRUPT; /* bytes left that hold no tail */
		rc = rd(ctx, pos - tl, t, GA_BATCH_TAIL_BYTES);
		if (rc < 0)
			return rc;
		/* The last tail decides whether this is a batch at all. */
		if (t[7] != width)
			return n ? GA_BATCH_CORRUPT : GA_BATCH_NOT_BATCH;
		if (n == GA_BATCH_MAX_SUB || t[4] >= GA_BATCH_MAX_SUB)
			return GA_BATCH_OVERFLOW;
		size = get_le32(t);
		if (size == 0)
			return GA_BATCH_ZERO_SIZE;
		room = pos - line - tl;
		if (size > room || ga_batch_pad(size, width) > room)
			return GA_BATCH_CORRUPT; /* runs past the header */
		pos -= tl + ga_batch_pad(size, width);
		found[n].off = pos;
		found[n].size = size;
		found[n].tdest = t[4];
		found[n].first_user = t[5];
		found[n].last_user = t[6];
		n++;
	}
	for (i = 0; i < n; i++)
		sub[i] = found[n - 1 - i];
	if (sub[0].tdest != 0 || sub[0].size < min0)
		return GA_BATCH_CORRUPT; /* no TimingHeader where it belongs */
	*count = n;
	return GA_BATCH_OK;
}

void ga_batch_put_header(uint8_t *p, unsigned int width, uint8_t seq)
{
	uint32_t i;

	p[0] = (uint8_t)(GA_BATCH_VERSION | width << 4);
	p[1] = seq;
	for (i = 2; i < ga_batch_line(width); i++)
		p[i] = 0;
}

void ga_batch_put_tail(uint8_t *p, unsigned int width, uint32_t size, uint8_t tdest,
		       uint8_t first_user, uint8_t last_user)
{
	uint32_t i, tl = ga_batch_tail_line(width);

	p[0] = (uint8_t)size;
	p[1] = (uint8_t)(size >> 8);
	p[2] = (uint8_t)(size >> 16);
	p[3] = (uint8_t)(size >> 24);
	p[4] = tdest;
	p[5] = first_user;
	p[6] = last_user;
	p[7] = (uint8_t)width;
	for (i = GA_BATCH_TAIL_BYTES; i < tl; i++)
		p[i] = 0;
}

const char *ga_batch_result_name(enum ga_batch_result r)
{
	switch (r) {
	case GA_BATCH_OK:
		return "ok";
	case GA_BATCH_TOO_SHORT:
		return "too_short";
	case GA_BATCH_ZERO_SIZE:
		return "zero_size";
	case GA_BATCH_CORRUPT:
		return "corrupt";
	case GA_BATCH_OVERFLOW:
		return "overflow";
	case GA_BATCH_NOT_BATCH:
		return "not_batch";
	}
	return "unknown";
}
