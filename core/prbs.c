// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* SLAC's PRBS payload format (gpuasync/prbs.h), for user space and kernel. */
#include "ga_base.h"
#include "gpuasync/prbs.h"

/* Little-endian words; a whole one is one store (the emulated card fills
 * 64 KiB frames per tick, so this is its hot loop). */
static uint32_t to_le(uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap32(v);
#else
	return v;
#endif
}

static void put_word(uint8_t *p, uint32_t v, uint32_t n)
{
	uint32_t i;

	if (n >= 4) {
		v = to_le(v);
		memcpy(p, &v, 4);
		return;
	}
	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_word(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return to_le(v);
}

void ga_prbs_fill(void *dst, uint32_t len, uint32_t seq)
{
	uint8_t *p = dst;
	uint32_t v = seq, off;

	put_word(p, seq, len);
	if (len > 4)
		put_word(p + 4, len >= 4 ? (len - 4) / 4 : 0, len - 4);
	for (off = 8; off < len; off += 4) {
		v = ga_prbs_step(v);
		put_word(p + off, v, len - off);
	}
}

bool ga_prbs_check(const void *src, uint32_t len, uint32_t *seq)
{
	const uint8_t *p = src;
	uint32_t v, off;

	if (len >= 4 && seq)
		*seq = get_word(p);
	if (len < GA_PRBS_MIN_BYTES || len % 4 || get_word(p + 4) != (len - 4) / 4)
		return false;
	v = get_word(p);
	for (off = 8; off < len; off += 4) {
		v = ga_prbs_step(v);
		if (get_word(p + off) != v)
			return false;
	}
	return true;
}
