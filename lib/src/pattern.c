// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Payload patterns of the simulated card's frame generator, and CRC-32.
 *
 * A consumer (a test, a CUDA kernel, a Python script) must be able to
 * check a frame knowing only its pattern and frame number, so every
 * pattern is a pure function of (frame number, word index):
 *   prbs     a 32-bit Galois LFSR (x^32 + x^22 + x^2 + x + 1), one step
 *            per 32-bit word, seeded from the frame number;
 *   counter  word k = frame number + k;
 *   zero     all bytes 0.
 * Words are little-endian; a frame whose length is not a multiple of 4
 * ends with the first bytes of the next word.  A truncated frame (overflow)
 * is therefore a prefix of the full one.
 *
 * CRC-32 (IEEE 802.3, reflected, as zlib's crc32) lets the sim summarise a
 * received GPU->FPGA frame in its statistics.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "gpuasync/sim.h"
#include "internal.h"

#define LFSR_TAPS 0x80200003u

static uint32_t prbs_seed(uint32_t seq)
{
	/* Never 0 (an all-zero LFSR stays zero); spread nearby frame numbers. */
	uint32_t s = seq * 0x9E3779B1u ^ 0xA5A5A5A5u;

	return s ? s : 1u;
}

static uint32_t lfsr_next(uint32_t s)
{
	return (s >> 1) ^ (-(s & 1u) & LFSR_TAPS);
}

static uint32_t pattern_word(enum ga_pattern p, uint32_t seq, uint32_t *state, uint32_t k)
{
	uint32_t w;

	switch (p) {
	case GA_PATTERN_PRBS:
		w = *state;
		*state = lfsr_next(*state);
		return w;
	case GA_PATTERN_COUNTER:
		return seq + k;
	default:
		return 0;
	}
}

static void put_le32(uint8_t *d, uint32_t w, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		d[i] = (uint8_t)(w >> (8 * i));
}

const char *ga_pattern_name(enum ga_pattern p)
{
	switch (p) {
	case GA_PATTERN_PRBS:
		return "prbs";
	case GA_PATTERN_COUNTER:
		return "counter";
	case GA_PATTERN_ZERO:
		return "zero";
	}
	return "unknown";
}

int ga_pattern_parse(const char *s, enum ga_pattern *p)
{
	static const enum ga_pattern all[] = {GA_PATTERN_PRBS, GA_PATTERN_COUNTER, GA_PATTERN_ZERO};
	size_t len, i;

	if (!s || !p)
		return ga_err(-EINVAL, "pattern: no value");
	len = strlen(s);
	while (len && (s[len - 1] == '\n' || s[len - 1] == ' '))
		len--;
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		const char *n = ga_pattern_name(all[i]);

		if (strlen(n) == len && strncasecmp(s, n, len) == 0) {
			*p = all[i];
			return 0;
		}
	}
	return ga_err(-EINVAL, "pattern '%.*s' unknown: use prbs, counter or zero", (int)len, s);
}

void ga_pattern_fill(enum ga_pattern p, uint32_t seq, void *dst, uint32_t len)
{
	uint8_t *d = dst;
	uint32_t state = prbs_seed(seq);
	uint32_t k, words = len / 4;

	if (p == GA_PATTERN_ZERO) {
		memset(dst, 0, len);
		return;
	}
	for (k = 0; k < words; k++) {
		uint32_t w = pattern_word(p, seq, &state, k);

		/* Byte stores: little-endian on any host, any alignment (the
		 * compiler merges them into one store). */
		put_le32(d + 4 * k, w, 4);
	}
	if (len % 4)
		put_le32(d + 4 * words, pattern_word(p, seq, &state, words), len % 4);
}

long ga_pattern_check(enum ga_pattern p, uint32_t seq, const void *src, uint32_t len)
{
	const uint8_t *s = src;
	uint32_t state = prbs_seed(seq);
	uint32_t k, i, words = (len + 3) / 4;

	for (k = 0; k < words; k++) {
		uint32_t w = pattern_word(p, seq, &state, k);
		uint32_t n = len - 4 * k < 4 ? len - 4 * k : 4;

		for (i = 0; i < n; i++)
			if (s[4 * k + i] != (uint8_t)(w >> (8 * i)))
				return (long)(4 * k + i);
	}
	return -1;
}

/* ---- CRC-32 --------------------------------------------------------------- */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	uint32_t i, k, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (-(c & 1u) & 0xEDB88320u);
		crc_table[i] = c;
	}
}

uint32_t ga_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
	return ~crc;
}
