// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Recorded runs: the file format of gpuasync/record.h, its encoder and a
 * reader that holds one record at a time.  Here in the library, not in
 * core/: the daemon's recorder, the simulated card's replay and the
 * synthesis tool all use it, and it does file I/O, which core/ (shared
 * with the kernel module) must not.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuasync/frame.h"
#include "gpuasync/record.h"
#include "gpuasync/timing.h"
#include "internal.h"

#define CRC_OFF 92u /* of a record's CRC field */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

void ga_rec_file_encode(const struct ga_rec_file *f, uint8_t out[GA_REC_FILE_BYTES])
{
	memset(out, 0, GA_REC_FILE_BYTES);
	memcpy(out, GA_REC_MAGIC, 8);
	put32(out + 8, GA_REC_VERSION);
	put32(out + 12, GA_REC_FILE_BYTES);
	put32(out + 16, GA_REC_HEADER_BYTES);
	put32(out + 20, f->dma_data_bytes);
	put64(out + 24, f->created_ns);
	put32(out + 32, f->card_version);
	put32(out + 36, f->flags);
	memcpy(out + 40, f->source, strnlen(f->source, sizeof(f->source)));
	put32(out + 60, ga_crc32(0, out, 60));
}

size_t ga_rec_frame_bytes(const struct ga_rec_frame *f)
{
	size_t n = GA_REC_HEADER_BYTES + (size_t)f->nsub * GA_REC_SUB_BYTES + f->payload_bytes;

	return (n + 7) & ~(size_t)7;
}

void ga_rec_frame_encode(const struct ga_rec_frame *f, uint8_t *out)
{
	size_t n = ga_rec_frame_bytes(f), off = GA_REC_HEADER_BYTES;
	uint32_t crc;

	memset(out, 0, GA_REC_HEADER_BYTES);
	put32(out, GA_REC_FRAME_MAGIC);
	put32(out + 4, (uint32_t)n);
	put64(out + 8, f->number);
	memcpy(out + 16, f->desc, 8);
	put32(out + 24, f->payload_bytes);
	put16(out + 28, f->nsub);
	put16(out + 30, f->flags);
	put64(out + 32, f->realtime_ns);
	put64(out + 40, f->monotonic_ns);
	put64(out + 48, f->seen);
	put32(out + 56, f->rx_frame_count);
	put32(out + 60, f->buffer);
	put64(out + 64, f->pulse_ctl);
	put32(out + 72, f->th_time_ns);
	put32(out + 76, f->th_time_s);
	put32(out + 80, f->th_off);
	out[84] = f->batch;
	for (unsigned int i = 0; i < f->nsub; i++, off += GA_REC_SUB_BYTES) {
		put32(out + off, f->sub[i].off);
		put32(out + off + 4, f->sub[i].size);
		out[off + 8] = f->sub[i].tdest;
		out[off + 9] = f->sub[i].first_user;
		out[off + 10] = f->sub[i].last_user;
		out[off + 11] = 0;
	}
	/* A payload read into its place already (the recorder's) stays. */
	if (f->payload_bytes && f->payload != out + off)
		memcpy(out + off, f->payload, f->payload_bytes);
	memset(out + off + f->payload_bytes, 0, n - off - f->payload_bytes);
	crc = ga_crc32(0, out, CRC_OFF);
	crc = ga_crc32(crc, out + GA_REC_HEADER_BYTES, n - GA_REC_HEADER_BYTES);
	put32(out + CRC_OFF, crc);
}

struct mem_payload {
	const uint8_t *p;
	uint32_t len;
};

static int mem_read(void *ctx, uint32_t off, void *dst, uint32_t len)
{
	const struct mem_payload *m = ctx;

	if (off > m->len || len > m->len - off)
		return -ERANGE;
	memcpy(dst, m->p + off, len);
	return 0;
}

void ga_rec_derive(struct ga_rec_frame *f, const uint8_t *payload, uint32_t len)
{
	struct mem_payload m = {payload, len};
	struct ga_timing_header th;
	struct ga_header h;
	unsigned int n = 0;
	int r;

	f->flags &= (uint16_t)~GA_REC_F_TIMING;
	f->nsub = 0;
	f->batch = GA_REC_BATCH_NONE;
	f->pulse_ctl = 0;
	f->th_time_ns = f->th_time_s = f->th_off = 0;
	ga_header_decode(f->desc, &h);
	/* An error frame, or one cut short: no TimingHeader (frames.c). */
	if (h.result || h.overflow || (f->flags & GA_REC_F_CUT) || len < 2)
		return;
	if (len == GA_TIMING_HDR_BYTES) {
		f->th_off = 0;
	} else {
		r = ga_batch_walk(payload, len, GA_TIMING_HDR_BYTES, mem_read, &m, f->sub, &n);
		if (r < 0 || r == GA_BATCH_NOT_BATCH)
			return;
		f->batch = (uint8_t)r;
		if (r != GA_BATCH_OK)
			return;
		f->nsub = (uint16_t)n;
		f->th_off = f->sub[0].off;
	}
	ga_timing_decode(payload + f->th_off, &th);
	f->pulse_ctl = th.pulse_ctl;
	f->th_time_ns = th.time_ns;
	f->th_time_s = th.time_s;
	f->flags |= GA_REC_F_TIMING;
}

void ga_rec_extent_add(struct ga_rec_extent *e, const struct ga_rec_frame *f)
{
	if (!e->frames++) {
		e->first_ns = f->monotonic_ns;
		e->pulse_min = UINT64_MAX;
	}
	e->last_ns = f->monotonic_ns;
	if (f->flags & GA_REC_F_TIMING) {
		uint64_t p = f->pulse_ctl & GA_TIMING_PULSE_MASK;

		e->pulse_min = p < e->pulse_min ? p : e->pulse_min;
		e->pulse_max = p > e->pulse_max ? p : e->pulse_max;
	}
}

uint64_t ga_rec_play_ns(const struct ga_rec_extent *e)
{
	uint64_t span = e->last_ns - e->first_ns;

	return e->frames > 1 ? span + span / (e->frames - 1) : span;
}

uint64_t ga_rec_pulse_span(const struct ga_rec_extent *e)
{
	return e->frames && e->pulse_min <= e->pulse_max ? e->pulse_max - e->pulse_min + 1 : 0;
}

void ga_rec_live(uint8_t *p, uint64_t pulse_add)
{
	struct ga_timing_header th;
	struct timespec now;
	uint64_t w;

	ga_timing_decode(p, &th);
	w = (th.pulse_ctl & ~GA_TIMING_PULSE_MASK) |
	    ((th.pulse_ctl + pulse_add) & GA_TIMING_PULSE_MASK);
	clock_gettime(CLOCK_REALTIME, &now);
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(w >> (8 * i));
	for (int i = 0; i < 4; i++) {
		p[GA_TIMING_TIME_OFF + i] = (uint8_t)((uint32_t)now.tv_nsec >> (8 * i));
		p[GA_TIMING_TIME_OFF + 4 + i] = (uint8_t)((uint32_t)now.tv_sec >> (8 * i));
	}
}

/* ---- reading ---------------------------------------------------------------- */

struct ga_rec_reader {
	FILE *f;
	char path[256];
	uint64_t off;	 /* of the next record */
	uint64_t number; /* it should carry */
	uint8_t *buf;	 /* the record read last */
	size_t cap;
};

int ga_rec_open(const char *path, struct ga_rec_reader **out, struct ga_rec_file *info)
{
	uint8_t h[GA_REC_FILE_BYTES];
	struct ga_rec_reader *r;
	size_t got;
	FILE *f;

	f = fopen(path, "rbe");
	if (!f)
		return ga_err(-errno, "%s: %s", path, strerror(errno));
	got = fread(h, 1, sizeof(h), f);
	if (got < sizeof(h) || memcmp(h, GA_REC_MAGIC, 8)) {
		fclose(f);
		return ga_err(-EBADMSG, "%s: not a recorded run (no \"GARUN\" header of %u bytes)",
			      path, GA_REC_FILE_BYTES);
	}
	if (get32(h + 60) != ga_crc32(0, h, 60)) {
		fclose(f);
		return ga_err(-EBADMSG, "%s: the file header's CRC does not match", path);
	}
	if (get32(h + 8) != GA_REC_VERSION || get32(h + 12) != GA_REC_FILE_BYTES ||
	    get32(h + 16) != GA_REC_HEADER_BYTES) {
		fclose(f);
		return ga_err(-EPROTONOSUPPORT,
			      "%s: format version %u (this library reads version %u)", path,
			      get32(h + 8), GA_REC_VERSION);
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		fclose(f);
		return -ENOMEM;
	}
	r->f = f;
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->off = GA_REC_FILE_BYTES;
	if (info) {
		memset(info, 0, sizeof(*info));
		info->version = get32(h + 8);
		info->dma_data_bytes = get32(h + 20);
		info->created_ns = get64(h + 24);
		info->card_version = get32(h + 32);
		info->flags = get32(h + 36);
		memcpy(info->source, h + 40, sizeof(info->source));
		info->source[sizeof(info->source) - 1] = '\0';
	}
	*out = r;
	return 0;
}

/* A bad record: its number and where it starts, and why. */
#define BAD(r, ...) bad_record(r, __VA_ARGS__)
__attribute__((format(printf, 2, 3))) static int bad_record(struct ga_rec_reader *r,
							    const char *fmt, ...)
{
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return ga_err(-EBADMSG, "%s: frame %llu (record at byte %llu): %s", r->path,
		      (unsigned long long)r->number, (unsigned long long)r->off, why);
}

int ga_rec_next(struct ga_rec_reader *r, struct ga_rec_frame *f)
{
	uint8_t h[GA_REC_HEADER_BYTES];
	size_t got, n, body;
	uint32_t crc, plen;
	unsigned int nsub;

	got = fread(h, 1, sizeof(h), r->f);
	if (got == 0 && feof(r->f))
		return 0;
	if (ferror(r->f))
		return ga_err(-EIO, "%s: reading at byte %llu failed", r->path,
			      (unsigned long long)r->off);
	if (got < 8 || get32(h) != GA_REC_FRAME_MAGIC)
		return got < 8 ? BAD(r, "truncated: the file ends %zu bytes into it", got)
			       : BAD(r, "no record starts here (magic 0x%08x)", get32(h));
	n = get32(h + 4);
	nsub = get16(h + 28);
	plen = get32(h + 24);
	if (nsub > GA_BATCH_MAX_SUB || plen > GA_REC_MAX_PAYLOAD ||
	    n != ((GA_REC_HEADER_BYTES + (size_t)nsub * GA_REC_SUB_BYTES + plen + 7) & ~(size_t)7))
		return BAD(r,
			   "its length fields do not agree (%zu bytes, %u sub-frames, %u "
			   "payload bytes)",
			   n, nsub, plen);
	if (get64(h + 8) != r->number)
		return BAD(r, "it says it is frame %llu", (unsigned long long)get64(h + 8));
	if (n > r->cap) {
		uint8_t *p = realloc(r->buf, n);

		if (!p)
			return -ENOMEM;
		r->buf = p;
		r->cap = n;
	}
	memcpy(r->buf, h, got);
	body = got < sizeof(h) ? 0 : fread(r->buf + sizeof(h), 1, n - sizeof(h), r->f);
	if (got < sizeof(h) || body < n - sizeof(h))
		return BAD(r, "truncated: the file ends %zu bytes into its %zu", got + body, n);
	crc = ga_crc32(0, r->buf, CRC_OFF);
	crc = ga_crc32(crc, r->buf + GA_REC_HEADER_BYTES, n - GA_REC_HEADER_BYTES);
	if (crc != get32(h + CRC_OFF))
		return BAD(r, "CRC mismatch (0x%08x stored, 0x%08x computed)", get32(h + CRC_OFF),
			   crc);
	memset(f, 0, sizeof(*f));
	f->number = r->number;
	memcpy(f->desc, h + 16, 8);
	f->payload_bytes = plen;
	f->nsub = (uint16_t)nsub;
	f->flags = get16(h + 30);
	f->realtime_ns = get64(h + 32);
	f->monotonic_ns = get64(h + 40);
	f->seen = get64(h + 48);
	f->rx_frame_count = get32(h + 56);
	f->buffer = get32(h + 60);
	f->pulse_ctl = get64(h + 64);
	f->th_time_ns = get32(h + 72);
	f->th_time_s = get32(h + 76);
	f->th_off = get32(h + 80);
	f->batch = h[84];
	for (unsigned int i = 0; i < nsub; i++) {
		const uint8_t *s = r->buf + GA_REC_HEADER_BYTES + i * GA_REC_SUB_BYTES;

		f->sub[i].off = get32(s);
		f->sub[i].size = get32(s + 4);
		f->sub[i].tdest = s[8];
		f->sub[i].first_user = s[9];
		f->sub[i].last_user = s[10];
	}
	f->payload = r->buf + GA_REC_HEADER_BYTES + nsub * GA_REC_SUB_BYTES;
	if ((f->flags & GA_REC_F_TIMING) && (f->th_off > plen || plen - f->th_off < 32))
		return BAD(r, "its TimingHeader offset %u is outside its %u payload bytes",
			   f->th_off, plen);
	r->off += n;
	r->number++;
	return 1;
}

int ga_rec_rewind(struct ga_rec_reader *r)
{
	if (fseeko(r->f, GA_REC_FILE_BYTES, SEEK_SET))
		return ga_err(-errno, "%s: %s", r->path, strerror(errno));
	clearerr(r->f);
	r->off = GA_REC_FILE_BYTES;
	r->number = 0;
	return 0;
}

uint64_t ga_rec_offset(const struct ga_rec_reader *r)
{
	return r->off;
}

void ga_rec_close(struct ga_rec_reader *r)
{
	if (!r)
		return;
	fclose(r->f);
	free(r->buf);
	free(r);
}
