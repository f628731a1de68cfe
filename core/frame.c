// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The frame descriptor codec (gpuasync/frame.h): the only place that packs
 * or unpacks the 8-byte header, for user space and the kernel alike.
 */
#include "ga_base.h"
#include "gpuasync/frame.h"

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

uint32_t ga_header_flags(const struct ga_header *h)
{
	return (h->result & GA_HDR_RESULT_MASK) | (h->overflow ? GA_HDR_OVERFLOW : 0) |
	       (h->cont ? GA_HDR_CONT : 0) | (uint32_t)h->last_user << GA_HDR_LAST_USER_SHIFT |
	       (uint32_t)h->first_user << GA_HDR_FIRST_USER_SHIFT;
}

void ga_header_encode(const struct ga_header *h, uint8_t raw[GA_HDR_BYTES])
{
	put_le32(raw + GA_HDR_FLAGS_OFFSET, ga_header_flags(h));
	put_le32(raw + GA_HDR_SIZE_OFFSET, h->size);
}

void ga_header_decode(const uint8_t raw[GA_HDR_BYTES], struct ga_header *h)
{
	uint32_t flags = get_le32(raw + GA_HDR_FLAGS_OFFSET);

	h->result = flags & GA_HDR_RESULT_MASK;
	h->overflow = (flags & GA_HDR_OVERFLOW) != 0;
	h->cont = (flags & GA_HDR_CONT) != 0;
	h->last_user = (uint8_t)(flags >> GA_HDR_LAST_USER_SHIFT);
	h->first_user = (uint8_t)(flags >> GA_HDR_FIRST_USER_SHIFT);
	h->size = get_le32(raw + GA_HDR_SIZE_OFFSET);
}
