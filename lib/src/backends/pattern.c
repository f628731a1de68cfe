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
 *   zero     all bytes 0;
 *   timing   an LCLS-II TimingHeader-shaped record (gpuasync/timing.h),
 *            then the counter pattern's words; its time stamp is the
 *            host's clock when the frame was made, the one thing a
 *            check does not compare.
 *   jungfrau, epixuhr
 *            batches (AxiStream Batcher v1, gpuasync/batch.h) shaped as
 *            those detectors send L1Accepts: sub-frame 0 the timing
 *            record, then the detector's sub-frames; their layout depends
 *            on the frame's size (batch_layout below).
 * Words are little-endian; a frame whose length is not a multiple of 4
 * ends with the first bytes of the next word.  A truncated frame (overflow)
 * is therefore a prefix of the full one.
 *
 * CRC-32 (IEEE 802.3, reflected, as zlib's crc32) lets the sim summarise a
 * received GPU->FPGA frame in its statistics.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gpuasync/batch.h"
#include "gpuasync/sim.h"
#include "internal.h"
#include "prbs_lfsr.h"

static uint32_t prbs_seed(uint32_t seq)
{
	uint32_t s = GA_PRBS_MIX(seq);

	return s ? s : 1u;
}

static uint32_t lfsr_next(uint32_t s)
{
	return GA_LFSR_NEXT(s);
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
	case GA_PATTERN_TIMING:
		return "timing";
	case GA_PATTERN_JUNGFRAU:
		return "jungfrau";
	case GA_PATTERN_EPIXUHR:
		return "epixuhr";
	}
	return "unknown";
}

int ga_pattern_parse(const char *s, enum ga_pattern *p)
{
	static const enum ga_pattern all[] = {GA_PATTERN_PRBS,	   GA_PATTERN_COUNTER,
					      GA_PATTERN_ZERO,	   GA_PATTERN_TIMING,
					      GA_PATTERN_JUNGFRAU, GA_PATTERN_EPIXUHR};
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
	return ga_err(
		-EINVAL,
		"pattern '%.*s' unknown: use prbs, counter, zero, timing, jungfrau or epixuhr",
		(int)len, s);
}

/*
 * Words in blocks.  The LFSR is linear over GF(2), so eight steps at once
 * are a shift and a table lookup, like a bytewise CRC: next8(s) =
 * (s >> 8) ^ T[s & 0xff], T[b] being eight steps from b alone.  Keeping
 * the states of eight consecutive words and moving each on by eight gives
 * eight independent chains, which a CPU runs in parallel: generation
 * costs about what a memcpy does, instead of a serial step per word
 * (which capped the simulated card near 1 GB/s).  The words are exactly
 * those of lfsr_next() applied one at a time.
 */
#define PGEN_WORDS 1024 /* per block; a multiple of 8 */

struct pgen {
	enum ga_pattern p;
	uint32_t seq, k; /* k: index of the next word */
	uint64_t t;	 /* timing: the time stamp (s << 32 | ns) */
	uint32_t st[8];	 /* PRBS: states of words k..k+7 */
};

static uint32_t prbs_t8[256];
static pthread_once_t prbs_once = PTHREAD_ONCE_INIT;

static void prbs_init(void)
{
	for (uint32_t b = 0; b < 256; b++) {
		uint32_t s = b;

		for (int i = 0; i < 8; i++)
			s = lfsr_next(s);
		prbs_t8[b] = s;
	}
}

static void pgen_init(struct pgen *g, enum ga_pattern p, uint32_t seq, uint64_t t)
{
	uint32_t s = prbs_seed(seq);

	g->p = p;
	g->seq = seq;
	g->k = 0;
	g->t = t;
	if (p == GA_PATTERN_PRBS) {
		pthread_once(&prbs_once, prbs_init);
		for (int j = 0; j < 8; j++) {
			g->st[j] = s;
			s = lfsr_next(s);
		}
	}
}

/* The next @n words (n a multiple of 8 except in the last call). */
static void pgen_words(struct pgen *g, uint32_t *w, uint32_t n)
{
	uint32_t i, j;

	switch (g->p) {
	case GA_PATTERN_PRBS:
		for (i = 0; i + 8 <= n; i += 8)
			for (j = 0; j < 8; j++) {
				w[i + j] = g->st[j];
				g->st[j] = (g->st[j] >> 8) ^ prbs_t8[g->st[j] & 0xffu];
			}
		for (j = 0; i + j < n; j++)
			w[i + j] = g->st[j];
		break;
	case GA_PATTERN_COUNTER:
		for (i = 0; i < n; i++)
			w[i] = g->seq + g->k + i;
		break;
	case GA_PATTERN_TIMING:
		for (i = 0; i < n; i++)
			w[i] = g->k + i < GA_TIMING_HDR_BYTES / 4
				       ? ga_timing_word(g->seq, g->t, g->k + i)
				       : g->seq + g->k + i;
		break;
	default:
		memset(w, 0, n * sizeof(*w));
		break;
	}
	g->k += n;
}

/* Words to little-endian bytes (the first @len bytes of them). */
static void words_le(uint8_t *d, uint32_t *w, uint32_t len)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(d, w, len);
#else
	for (uint32_t i = 0; i < len; i++)
		d[i] = (uint8_t)(w[i / 4] >> (8 * (i % 4)));
#endif
}

/* ---- batched patterns ------------------------------------------------------ */

/*
 * A batch of the jungfrau or epixuhr pattern, @len bytes: a header line,
 * then each sub-frame's data and its tail, 16-byte lines (width 3, a
 * 128-bit stream).  Sub-frame 0 (tdest 0) is the timing record (32 bytes);
 * jungfrau adds the auxiliary timing (tdest 1, the record again) and module
 * 0 (tdest 2) with the rest; epixuhr six ASICs (tdest 1..6) sharing the
 * rest, the last taking what does not divide.  Every size is whole lines,
 * so the last tail ends the frame.
 */
#define BATCH_WIDTH 3u
#define BATCH_LINE  16u
#define BATCH_NSUB  7u
#define EPIX_ASICS  6u

struct batch_layout {
	unsigned int n;
	uint32_t off[BATCH_NSUB], size[BATCH_NSUB];
	uint8_t tdest[BATCH_NSUB];
};

bool ga_pattern_batched(enum ga_pattern p)
{
	return p == GA_PATTERN_JUNGFRAU || p == GA_PATTERN_EPIXUHR;
}

/* Fixed bytes of @p's batch: the header, the timing sub-frames, every tail. */
static uint32_t batch_fixed(enum ga_pattern p)
{
	uint32_t tl = BATCH_LINE, th = GA_TIMING_HDR_BYTES;

	if (p == GA_PATTERN_JUNGFRAU)
		return BATCH_LINE + 2 * (th + tl) + tl;
	return BATCH_LINE + (th + tl) + EPIX_ASICS * tl;
}

/* The smallest frame @p makes: one line of data in each detector sub-frame. */
static uint32_t batch_min(enum ga_pattern p)
{
	return batch_fixed(p) + (p == GA_PATTERN_JUNGFRAU ? 1 : EPIX_ASICS) * BATCH_LINE;
}

int ga_pattern_size_ok(enum ga_pattern p, uint32_t size)
{
	if (!ga_pattern_batched(p))
		return 0;
	if (size % BATCH_LINE || size < batch_min(p))
		return ga_err(-EINVAL,
			      "pattern %s: size %u must be a multiple of %u bytes (the batch's "
			      "line) and at least %u (a line of data in every sub-frame)",
			      ga_pattern_name(p), size, BATCH_LINE, batch_min(p));
	return 0;
}

static void batch_layout(enum ga_pattern p, uint32_t len, struct batch_layout *l)
{
	uint32_t rest = len - batch_fixed(p), off = BATCH_LINE, each;
	unsigned int i;

	l->n = p == GA_PATTERN_JUNGFRAU ? 3 : 1 + EPIX_ASICS;
	each = p == GA_PATTERN_JUNGFRAU ? rest : rest / EPIX_ASICS / BATCH_LINE * BATCH_LINE;
	for (i = 0; i < l->n; i++) {
		if (i == 0 || (p == GA_PATTERN_JUNGFRAU && i == 1))
			l->size[i] = GA_TIMING_HDR_BYTES;
		else if (i == l->n - 1)
			l->size[i] = rest - each * (l->n - 2 - (p == GA_PATTERN_JUNGFRAU));
		else
			l->size[i] = each;
		l->tdest[i] = (uint8_t)i;
		l->off[i] = off;
		off += l->size[i] + BATCH_LINE;
	}
}

/* Copy @n bytes of the frame at frame offset @off into @dst, clipped to @len. */
static void clip_put(uint8_t *dst, uint32_t len, uint32_t off, const void *src, uint32_t n)
{
	if (off >= len)
		return;
	memcpy(dst + off, src, n < len - off ? n : len - off);
}

/* Word @k of sub-frame @i's data (little-endian words of two pixels). */
static uint32_t batch_word(enum ga_pattern p, unsigned int i, uint32_t seq, uint64_t t, uint32_t k)
{
	uint32_t a = 2 * k, b = 2 * k + 1, lo, hi;

	if (i == 0 || (p == GA_PATTERN_JUNGFRAU && i == 1))
		return ga_timing_word(seq, t, k);
	if (p == GA_PATTERN_JUNGFRAU) {
		/* 14-bit ADC value, gain stage 0 in bits 15:14 */
		lo = (seq + a) & 0x3fffu;
		hi = (seq + b) & 0x3fffu;
	} else {
		/* fp16 from 1.0 up: exponent 15, a 10-bit mantissa */
		lo = 0x3c00u | ((seq + i + a) & 0x3ffu);
		hi = 0x3c00u | ((seq + i + b) & 0x3ffu);
	}
	return lo | hi << 16;
}

void ga_pattern_fill_batch(enum ga_pattern p, uint32_t seq, int fault, uint32_t frame_len,
			   void *dst, uint32_t len)
{
	uint8_t *d = dst, line[BATCH_LINE];
	struct batch_layout l;
	struct timespec ts = {0, 0};
	uint64_t t;
	unsigned int i;

	if (!ga_pattern_batched(p) || ga_pattern_size_ok(p, frame_len) < 0) {
		memset(dst, 0, len);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	t = (uint64_t)ts.tv_sec << 32 | (uint64_t)ts.tv_nsec;
	batch_layout(p, frame_len, &l);
	ga_batch_put_header(line, BATCH_WIDTH, (uint8_t)seq);
	clip_put(d, len, 0, line, BATCH_LINE);
	for (i = 0; i < l.n; i++) {
		uint32_t k, w[PGEN_WORDS], size = l.size[i];
		uint8_t tdest = l.tdest[i];
		unsigned int width = BATCH_WIDTH;

		for (k = 0; k < size / 4 && l.off[i] + 4 * k < len; k += PGEN_WORDS) {
			uint32_t n = size / 4 - k < PGEN_WORDS ? size / 4 - k : PGEN_WORDS;
			uint8_t bytes[4 * PGEN_WORDS];

			for (uint32_t j = 0; j < n; j++)
				w[j] = batch_word(p, i, seq, t, k + j);
			words_le(bytes, w, 4 * n);
			clip_put(d, len, l.off[i] + 4 * k, bytes, 4 * n);
		}
		/* Batch errors the DRP latches, on purpose. */
		if (fault == GA_BATCH_ZERO_SIZE && i == l.n - 1)
			size = 0;
		if (fault == GA_BATCH_CORRUPT && i == 0)
			width = BATCH_WIDTH + 1;
		if (fault == GA_BATCH_OVERFLOW && i == l.n - 1)
			tdest = GA_BATCH_MAX_SUB;
		ga_batch_put_tail(line, BATCH_WIDTH, size, tdest, i == 0 ? 0x02 : 0, 0);
		line[7] = (uint8_t)width;
		clip_put(d, len, l.off[i] + l.size[i], line, BATCH_LINE);
	}
}

static long batch_check(enum ga_pattern p, uint32_t seq, const void *src, uint32_t len)
{
	const uint8_t *s = src;
	uint8_t *want;
	uint32_t th = BATCH_LINE + GA_TIMING_TIME_OFF;
	long bad = -1;

	if (ga_pattern_size_ok(p, len) < 0)
		return 0;
	want = malloc(len);
	if (!want)
		return 0;
	ga_pattern_fill_batch(p, seq, GA_BATCH_OK, len, want, len);
	/* The time stamps (timing record, jungfrau's auxiliary copy) are
	 * whatever the card's clock said. */
	memcpy(want + th, s + th, 8);
	if (p == GA_PATTERN_JUNGFRAU)
		memcpy(want + th + GA_TIMING_HDR_BYTES + BATCH_LINE,
		       s + th + GA_TIMING_HDR_BYTES + BATCH_LINE, 8);
	for (uint32_t i = 0; i < len; i++)
		if (s[i] != want[i]) {
			bad = (long)i;
			break;
		}
	free(want);
	return bad;
}

void ga_pattern_fill(enum ga_pattern p, uint32_t seq, void *dst, uint32_t len)
{
	uint32_t w[PGEN_WORDS];
	uint8_t *d = dst;
	struct pgen g;
	struct timespec ts = {0, 0};

	if (ga_pattern_batched(p)) {
		ga_pattern_fill_batch(p, seq, GA_BATCH_OK, len, dst, len);
		return;
	}
	if (p != GA_PATTERN_PRBS && p != GA_PATTERN_COUNTER && p != GA_PATTERN_TIMING) {
		memset(dst, 0, len);
		return;
	}
	if (p == GA_PATTERN_TIMING)
		clock_gettime(CLOCK_REALTIME, &ts);
	pgen_init(&g, p, seq, (uint64_t)ts.tv_sec << 32 | (uint64_t)ts.tv_nsec);
	while (len) {
		uint32_t n = len < 4 * PGEN_WORDS ? len : 4 * PGEN_WORDS;

		pgen_words(&g, w, (n + 3) / 4);
		words_le(d, w, n);
		d += n;
		len -= n;
	}
}

long ga_pattern_check(enum ga_pattern p, uint32_t seq, const void *src, uint32_t len)
{
	uint8_t want[4 * PGEN_WORDS];
	uint32_t w[PGEN_WORDS], off = 0;
	const uint8_t *s = src;
	struct pgen g;

	if (ga_pattern_batched(p))
		return batch_check(p, seq, src, len);
	if (p != GA_PATTERN_PRBS && p != GA_PATTERN_COUNTER && p != GA_PATTERN_TIMING)
		p = GA_PATTERN_ZERO;
	pgen_init(&g, p, seq, 0);
	while (off < len) {
		uint32_t n = len - off < 4 * PGEN_WORDS ? len - off : 4 * PGEN_WORDS;

		pgen_words(&g, w, (n + 3) / 4);
		words_le(want, w, n);
		/* The time stamp is whatever the card's clock said. */
		for (uint32_t b = GA_TIMING_TIME_OFF;
		     p == GA_PATTERN_TIMING && off == 0 && b < n && b < GA_TIMING_TIME_OFF + 8; b++)
			want[b] = s[b];
		if (memcmp(s + off, want, n))
			for (uint32_t i = 0; i < n; i++)
				if (s[off + i] != want[i])
					return (long)(off + i);
		off += n;
	}
	return -1;
}

/* ---- CRC-32 --------------------------------------------------------------- */

/* Slicing by 8: table k is the CRC of a byte followed by k zero bytes, so
 * eight bytes fold in with eight independent lookups instead of eight
 * dependent ones (the simulated card computes this for every GPU->FPGA
 * frame it receives, and a byte at a time capped that path far below PCIe
 * rates).  Same result as the bytewise loop, which handles the ends. */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	uint32_t i, k, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (-(c & 1u) & 0xEDB88320u);
		crc_table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (k = 1; k < 8; k++)
			crc_table[k][i] = (crc_table[k - 1][i] >> 8) ^
					  crc_table[0][crc_table[k - 1][i] & 0xFFu];
}

uint32_t ga_crc32(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	for (; len >= 8; len -= 8, p += 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);

		crc = crc_table[7][lo & 0xFFu] ^ crc_table[6][(lo >> 8) & 0xFFu] ^
		      crc_table[5][(lo >> 16) & 0xFFu] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^
		      crc_table[0][p[7]];
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
	return ~crc;
}
