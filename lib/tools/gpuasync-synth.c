// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * gpuasync-synth: write a recorded run (gpuasync/record.h) that no card
 * sent, from the simulated card's patterns, so a DRP developer can feed a
 * GPU graph a Jungfrau- or EpixUHR-shaped run with the faults it must
 * survive, and the simulated card can play it (sim/replay):
 *
 *   $ gpuasync-synth -o /tmp/jf.gar -p jungfrau -s 64K -n 1000 -r 1000 \
 *         -g 100:3 -d 200 -e 300:corrupt
 *
 * Frame i (from 0) carries pulse ID 0x123400000000 + its number; a gap of
 * N before frame i adds N to the numbers from there on, a duplicate makes
 * frame i repeat the number of the frame before it (as sim/inject_pulse_*
 * do), a batch error is made into frame i as sim/inject_batch_* make it.
 * The TimingHeader's time stamp and the record's times follow the rate.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpuasync/frame.h>
#include <gpuasync/device.h>
#include <gpuasync/record.h>
#include <gpuasync/sim.h>

#define MAX_EVENTS 256

struct event {
	uint64_t frame;
	char kind;  /* g gap, d duplicate, e batch error */
	uint64_t n; /* gap: numbers skipped; error: enum ga_batch_result */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpuasync-synth -o FILE [-p jungfrau|epixuhr|timing] [-s SIZE] [-n FRAMES]\n"
		"                      [-r RATE_HZ] [-g FRAME:N]... [-d FRAME]... [-e "
		"FRAME:KIND]...\n"
		"  -o FILE       the run to write (never over an existing file)\n"
		"  -p PATTERN    jungfrau (default), epixuhr, or timing (bare 32-byte "
		"TimingHeaders)\n"
		"  -s SIZE       payload bytes per frame (default 4096; suffixes K, M)\n"
		"  -n FRAMES     frames to write (default 100)\n"
		"  -r RATE_HZ    frames per second of the recorded timing (default 1000)\n"
		"  -g FRAME:N    N pulse IDs lost before FRAME\n"
		"  -d FRAME      FRAME repeats the previous frame's pulse ID\n"
		"  -e FRAME:KIND FRAME carries a batch error: too_short, zero_size, corrupt, "
		"overflow\n");
}

static int parse_u64(const char *s, uint64_t *v, bool size)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	if (size && (*end == 'K' || *end == 'k'))
		x <<= 10, end++;
	else if (size && *end == 'M')
		x <<= 20, end++;
	if (*end)
		return -1;
	*v = x;
	return 0;
}

static int parse_event(char kind, const char *arg, struct event *e)
{
	static const char *const kinds[] = {"too_short", "zero_size", "corrupt", "overflow"};
	char buf[64], *colon;

	snprintf(buf, sizeof(buf), "%s", arg);
	colon = strchr(buf, ':');
	e->kind = kind;
	e->n = 0;
	if (kind == 'd') {
		return colon ? -1 : parse_u64(buf, &e->frame, false);
	}
	if (!colon)
		return -1;
	*colon++ = '\0';
	if (parse_u64(buf, &e->frame, false) < 0)
		return -1;
	if (kind == 'g')
		return parse_u64(colon, &e->n, false) < 0 || !e->n ? -1 : 0;
	for (unsigned int i = 0; i < 4; i++)
		if (!strcmp(colon, kinds[i])) {
			e->n = GA_BATCH_TOO_SHORT + i;
			return 0;
		}
	return -1;
}

int main(int argc, char **argv)
{
	struct event ev[MAX_EVENTS];
	unsigned int nev = 0;
	enum ga_pattern pat = GA_PATTERN_JUNGFRAU;
	uint64_t size = 4096, frames = 100, rate = 1000;
	const char *out = NULL;
	struct ga_rec_file fh = {0};
	uint8_t raw[GA_REC_FILE_BYTES], *payload, *rec;
	struct timespec now;
	uint64_t t0, mono0;
	uint32_t seq = 0, last = 0;
	FILE *f;
	int c, fd;

	while ((c = getopt(argc, argv, "o:p:s:n:r:g:d:e:h")) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'p':
			if (ga_pattern_parse(optarg, &pat) < 0 ||
			    (pat != GA_PATTERN_TIMING && !ga_pattern_batched(pat))) {
				fprintf(stderr,
					"gpuasync-synth: -p %s: jungfrau, epixuhr or timing\n",
					optarg);
				return 2;
			}
			break;
		case 's':
		case 'n':
		case 'r':
			if (parse_u64(optarg,
				      c == 's'	 ? &size
				      : c == 'n' ? &frames
						 : &rate,
				      c == 's') < 0) {
				fprintf(stderr, "gpuasync-synth: -%c %s: a number\n", c, optarg);
				return 2;
			}
			break;
		case 'g':
		case 'd':
		case 'e':
			if (nev == MAX_EVENTS || parse_event((char)c, optarg, &ev[nev]) < 0) {
				fprintf(stderr,
					"gpuasync-synth: -%c %s: see -h (at most %d events)\n", c,
					optarg, MAX_EVENTS);
				return 2;
			}
			nev++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!out || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (pat == GA_PATTERN_TIMING)
		size = 32; /* bare TimingHeaders: what the DRP reads for transitions */
	if (!rate || rate > 1000000000ull || !frames || size > GA_REC_MAX_PAYLOAD ||
	    ga_pattern_size_ok(pat, (uint32_t)size) < 0) {
		fprintf(stderr, "gpuasync-synth: %s\n",
			!rate || rate > 1000000000ull ? "-r: 1..1000000000"
			: !frames		      ? "-n: 1 or more"
						      : ga_last_error());
		return 2;
	}
	fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	f = fd < 0 ? NULL : fdopen(fd, "wb");
	if (!f) {
		fprintf(stderr, "gpuasync-synth: %s: %s\n", out, strerror(errno));
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	t0 = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	clock_gettime(CLOCK_MONOTONIC, &now);
	mono0 = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	fh.created_ns = t0;
	fh.dma_data_bytes = 32;
	fh.card_version = 4;
	fh.flags = GA_REC_FILE_SYNTH;
	snprintf(fh.source, sizeof(fh.source), "synth %s", ga_pattern_name(pat));
	ga_rec_file_encode(&fh, raw);
	payload = malloc(size);
	rec = malloc(GA_REC_HEADER_BYTES + GA_BATCH_MAX_SUB * GA_REC_SUB_BYTES + size + 8);
	if (!payload || !rec || fwrite(raw, sizeof(raw), 1, f) != 1)
		goto fail;
	for (uint64_t i = 0; i < frames; i++) {
		struct ga_rec_frame fr = {0};
		struct ga_header h = {0};
		uint64_t at = i * 1000000000ull / rate;
		uint64_t when = t0 + at;
		int fault = GA_BATCH_OK;
		uint32_t len = (uint32_t)size;

		for (unsigned int k = 0; k < nev; k++) {
			if (ev[k].frame != i)
				continue;
			if (ev[k].kind == 'g')
				seq += (uint32_t)ev[k].n;
			else if (ev[k].kind == 'e')
				fault = (int)ev[k].n;
		}
		for (unsigned int k = 0; k < nev; k++)
			if (ev[k].frame == i && ev[k].kind == 'd' && i)
				seq = last;
		if (!ga_pattern_batched(pat))
			fault = GA_BATCH_OK;
		if (fault == GA_BATCH_TOO_SHORT)
			len = 8;
		if (ga_pattern_batched(pat))
			ga_pattern_fill_batch(pat, seq, fault, (uint32_t)size, payload, len);
		else
			ga_pattern_fill(pat, seq, payload, len);
		h.size = len;
		h.first_user = 0x02;
		ga_header_encode(&h, fr.desc);
		fr.number = i;
		fr.payload_bytes = len;
		fr.realtime_ns = when;
		fr.monotonic_ns = mono0 + at;
		fr.seen = i + 1;
		fr.buffer = (uint32_t)(i % 1024);
		ga_rec_derive(&fr, payload, len);
		if (fr.flags & GA_REC_F_TIMING) {
			/* The stamp the run's clock gives it (the fill put now). */
			uint8_t *p = payload + fr.th_off + GA_TIMING_TIME_OFF;
			uint32_t ns = (uint32_t)(when % 1000000000ull),
				 s = (uint32_t)(when / 1000000000ull);

			for (int b = 0; b < 4; b++) {
				p[b] = (uint8_t)(ns >> (8 * b));
				p[4 + b] = (uint8_t)(s >> (8 * b));
			}
			fr.th_time_ns = ns;
			fr.th_time_s = s;
		}
		fr.payload = payload;
		ga_rec_frame_encode(&fr, rec);
		if (fwrite(rec, ga_rec_frame_bytes(&fr), 1, f) != 1)
			goto fail;
		last = seq++;
	}
	free(payload);
	free(rec);
	if (fclose(f)) {
		fprintf(stderr, "gpuasync-synth: %s: %s\n", out, strerror(errno));
		return 1;
	}
	return 0;
fail:
	fprintf(stderr, "gpuasync-synth: %s: %s\n", out, strerror(errno ? errno : ENOMEM));
	fclose(f);
	free(payload);
	free(rec);
	return 1;
}
