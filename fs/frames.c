/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * frames/: what the daemon learns from the frames themselves, where it can
 * read them (its own write buffers: the simulated card, or a card whose
 * buffers this mount made; not an observer's, docs/drp.md):
 *
 *   $ cat /mnt/gpuasync/frames/pulse_id_gaps        # jumps in the pulse ID
 *   $ cat /mnt/gpuasync/frames/not_seen             # frames it did not get to read
 *   $ cat /mnt/gpuasync/frames/batch_corrupt        # batches the DRP would reject
 *   $ grep frame_age /mnt/gpuasync/metrics          # a Prometheus histogram
 *
 * The daemon follows the write ring as a consumer does, without re-arming:
 * from buffer 0 (where the card starts when its engine is enabled), each
 * buffer in turn, as long as the next one holds a frame it has not seen.
 * It looks (fs_frames_scan) from a thread of its own (every 1 ms while
 * frames come, every 10 ms after a quiet second), before the mount re-arms
 * a buffer (buffers/<i>/write_enable: so every frame consumed through the
 * mount is seen, in order), and before frames/ or metrics is read.
 *
 * A frame is "there" when its 8-byte descriptor has a size (the card
 * writes the size word last; the DRP zeroes it when it hands the buffer
 * back), and "new" when its descriptor or first payload bytes differ from
 * what the daemon last saw in that buffer.  Its TimingHeader is where the
 * DRP finds it (gpuasync/batch.h): a payload of exactly 32 bytes is a bare
 * TimingHeader (transitions); any other is an AxiStream Batcher v1 batch
 * whose sub-frame 0 is the TimingHeader, found by walking the tails back
 * from the end.  A payload that is neither, or a TimingHeader whose
 * service is no transition, is "unchecked"; a batch the DRP would reject
 * counts its error (too short, zero size, corrupt, overflow).
 *
 * Pulse IDs are compared only between frames known to be consecutive: the
 * card's count of delivered frames (the simulated card's, else
 * rx_frame_count) says whether every frame up to now was seen.  Frames
 * seen while some were not wait (pending) until the count shows none was
 * missed after all, or until the card has gone round the ring since, so
 * the ones missed are gone: then they are not compared (not_compared), the
 * watcher starts afresh from what the ring holds (resync), and the frames
 * it did not see are counted apart (not_seen), never as pulse-ID gaps.  A
 * new run (the write engine switched on, the simulated card's generator
 * restarted) starts a new sequence.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpuasync/batch.h>

#include "fs.h"

/* Upper bounds of the histogram buckets, seconds (+Inf follows). */
/* clang-format off */
static const double le_bounds[] = {
	1e-7, 2.5e-7, 5e-7,   1e-6, 2.5e-6, 5e-6,   1e-5, 2.5e-5, 5e-5,   1e-4, 2.5e-4, 5e-4,
	1e-3, 2.5e-3, 5e-3,   1e-2, 2.5e-2, 5e-2,   0.1, 0.25, 0.5,       1, 2.5, 5,   10,
};
/* clang-format on */
#define NBOUNDS (sizeof(le_bounds) / sizeof(le_bounds[0]))

struct hist {
	uint64_t bucket[NBOUNDS + 1]; /* per bucket, not cumulative; the last is +Inf */
	uint64_t count;
	double sum;
};

/* The latency registers sampled at a frame, and their label. */
static const struct {
	enum ga_reg_id reg;
	const char *label;
} lat_regs[] = {
	{GA_REG_TOTAL_LATENCY, "total"},
	{GA_REG_GPU_LATENCY, "gpu"},
	{GA_REG_WRITE_LATENCY, "write"},
};
#define NLAT (sizeof(lat_regs) / sizeof(lat_regs[0]))

/* Payload bytes read with each descriptor: a TimingHeader behind a batch
 * header line of up to 32 bytes comes in the same read. */
#define PREFIX_BYTES 64u
/* Frames seen while the count says some were not, waiting to be compared. */
#define PEND_MAX 256u
/* The highest TransitionId (L1Accept): a service above it is no TimingHeader. */
#define SERVICE_MAX 12u

/* What the daemon last saw in one write buffer. */
struct seen {
	uint32_t gen; /* fs->slots generation it was seen in */
	bool valid;
	uint8_t hdr[GA_HDR_BYTES];
	uint8_t prefix[PREFIX_BYTES];
	uint32_t len; /* bytes of prefix that hold payload */
	size_t payload_max;
};

/* A frame seen, in the order seen, until its pulse ID can be compared. */
struct pend {
	bool th; /* has a TimingHeader (else unchecked) */
	uint64_t pulse;
};

enum counter {
	C_SEEN,
	C_NOT_SEEN,
	C_UNCHECKED,
	C_NOT_COMPARED,
	C_GAPS,
	C_MISSED,
	C_DUPLICATES,
	C_BACKWARDS,
	C_LAPS,
	C_BATCH, /* + enum ga_batch_result - 1: too short, zero size, corrupt, overflow */
	C_BATCH_LAST = C_BATCH + GA_BATCH_NERR - 2,
	C_COUNT
};

struct fs_frames {
	/* Guards everything below; taken after fs->bufs_lock. */
	pthread_mutex_t lock;
	unsigned int next; /* ring position of the next frame */
	struct seen seen[GA_MAX_BUFFERS];
	uint64_t count[C_COUNT]; /* C_NOT_SEEN unused: derived (counter_of) */
	/* The card's count of delivered frames (card_count) when the watcher
	 * started, and the frames it saw since; frames written off: missed
	 * for good, or seen beyond the count. */
	uint64_t base, delivered;
	int64_t written_off;
	bool have_raw; /* rx_frame_count: its last raw value, extended to 64 bits */
	uint32_t raw;
	/* Frames waiting: some were not seen when these were, since the card's
	 * count read deficit_at. */
	struct pend pend[PEND_MAX];
	unsigned int npend;
	bool deficit;
	uint64_t deficit_at;
	/* Since the last resync (at the card's count synced_at), until the
	 * first commit: the watcher may not be where the card writes. */
	bool resynced;
	uint64_t synced_at;
	/* The sequence: the last compared pulse ID, and unchecked frames since. */
	bool have_pulse;
	uint64_t last_pulse;
	uint64_t skipped;
	bool have_seen_pulse; /* last_pulse_id: the last TimingHeader seen */
	uint64_t seen_pulse;
	/* The card's count when a scan last ended with every delivered frame
	 * seen: while it stays there, nothing new is in the ring. */
	bool quiet;
	uint64_t quiet_at;
	struct hist age, lat[NLAT];
	fs_frame_hook *hook; /* fs_frames_observe: frames/record */

	/* Held by the watcher's scans instead of fs->bufs_lock, and by
	 * write-buffer adds and removals (fs_frames_exclude) after bufs_lock:
	 * so that a scan, which can take milliseconds while frames flow,
	 * holds off only what changes the write buffers it reads, not every
	 * mkdir and rmdir (issue 30: rmdir of a read buffer 58 -> 915 us). */
	pthread_mutex_t scan_lock;
	/* The watcher thread: mx/cv wake it for fs_frames_stop. */
	pthread_t thread;
	bool running;
	atomic_bool stop;
	pthread_mutex_t mx;
	pthread_cond_t cv;
};

static void hist_add(struct hist *h, double v)
{
	unsigned int i = 0;

	while (i < NBOUNDS && v > le_bounds[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum += v;
}

/* Sample the latency registers of buffer @b, where it has them. */
static void sample_latencies(struct fs *fs, struct fs_frames *fr, unsigned int b)
{
	double hz = fs->info.clock_hz ? (double)fs->info.clock_hz : 1.0;
	bool barrier = false;

	for (unsigned int i = 0; i < NLAT; i++) {
		uint32_t off, v;

		if (ga_reg_offset(lat_regs[i].reg, fs->info.layout, fs->info.version, b,
				  fs->info.max_buffers, &off) < 0)
			continue;
		/* The simulated card writes a frame's descriptor, then its
		 * write latency, both under its model lock: taking that lock
		 * once waits for the frame to be finished. */
		if (fs->sim && !barrier) {
			struct ga_sim_stats st;

			ga_sim_stats(fs->dev, &st);
			barrier = true;
		}
		/* 0: nothing measured yet (no re-arm, no read), not 0 s */
		if (ga_reg_read(fs->dev, lat_regs[i].reg, b, &v) < 0 || v == 0)
			continue;
		hist_add(&fr->lat[i], (double)v / hz);
	}
}

/* ---- the sequence ------------------------------------------------------------ */

/* Compare a frame's pulse ID with the frame before it in the sequence;
 * unchecked frames between them may each have carried one pulse. */
static void compare(struct fs_frames *fr, const struct pend *p)
{
	uint64_t step;

	if (!p->th) {
		fr->skipped++;
		return;
	}
	if (!fr->have_pulse) {
		fr->count[C_NOT_COMPARED]++; /* the first of a sequence */
	} else if (p->pulse == fr->last_pulse) {
		fr->count[C_DUPLICATES]++;
	} else if (p->pulse < fr->last_pulse) {
		fr->count[C_BACKWARDS]++;
	} else {
		step = p->pulse - fr->last_pulse - 1;
		if (step > fr->skipped) {
			fr->count[C_GAPS]++;
			fr->count[C_MISSED] += step - fr->skipped;
		}
	}
	fr->last_pulse = p->pulse;
	fr->have_pulse = true;
	fr->skipped = 0;
}

/* Every frame up to the card's count was seen: the pending ones are
 * consecutive, compare them. */
static void commit(struct fs_frames *fr)
{
	for (unsigned int i = 0; i < fr->npend; i++)
		compare(fr, &fr->pend[i]);
	fr->npend = 0;
	fr->deficit = false;
}

/* Frames were missed for good (or the count cannot tell): the pending
 * ones are not compared, and the next frame starts a new sequence. */
static void break_sequence(struct fs_frames *fr)
{
	for (unsigned int i = 0; i < fr->npend; i++)
		if (fr->pend[i].th)
			fr->count[C_NOT_COMPARED]++;
	fr->npend = 0;
	fr->deficit = false;
	fr->have_pulse = false;
	fr->skipped = 0;
}

static void pend_add(struct fs_frames *fr, bool th, uint64_t pulse)
{
	if (fr->npend == PEND_MAX) /* a ring longer than PEND_MAX, all new */
		break_sequence(fr);
	fr->pend[fr->npend].th = th;
	fr->pend[fr->npend].pulse = pulse;
	fr->npend++;
}

/* The card's count of frames delivered into buffers: the simulated card
 * keeps it exactly; elsewhere rx_frame_count (dropped frames included,
 * 32 bits, cleared by count_reset), extended to 64 bits here. */
static int card_count(struct fs *fs, struct fs_frames *fr, uint64_t *n)
{
	uint32_t raw;

	if (fs->sim) {
		struct ga_sim_stats st;
		int ret = ga_sim_stats(fs->dev, &st);

		if (ret < 0)
			return ret;
		*n = st.delivered;
		return 0;
	}
	if (ga_reg_read(fs->dev, GA_REG_RX_FRAME_COUNT, 0, &raw) < 0)
		return -EIO;
	/* Below the last value: count_reset (or V1's wrap); the frames since
	 * are all this can know (a shortfall settle() notices) */
	if (fr->have_raw)
		fr->delivered += raw >= fr->raw ? raw - fr->raw : raw;
	fr->raw = raw;
	fr->have_raw = true;
	if (raw == UINT32_MAX)
		return -ERANGE; /* saturated (V4-5): counts no more until count_reset */
	*n = fr->delivered;
	return 0;
}

/* ---- reading frames ------------------------------------------------------- */

struct tail_reader {
	struct ga_buf *buf;
	unsigned int ddb;
};

static int read_payload(void *ctx, uint32_t off, void *dst, uint32_t len)
{
	struct tail_reader *t = ctx;
	int ret = ga_buf_read(t->buf, t->ddb + (size_t)off, dst, len);

	return ret < 0 ? ret : 0;
}

/*
 * Where frame @h's TimingHeader is (@p: its first @len payload bytes):
 * true and the header in @th, or false (unchecked) with the batch error in
 * *@err (GA_BATCH_OK when the payload was no batch at all).
 */
static bool find_timing(struct fs *fs, struct ga_buf *buf, const struct ga_header *h,
			const uint8_t *p, uint32_t len, size_t payload_max,
			struct ga_timing_header *th, int *err, struct ga_batch_sub *rec_sub,
			unsigned int *rec_nsub)
{
	struct ga_batch_sub sub[GA_BATCH_MAX_SUB];
	struct tail_reader tr = {buf, fs->info.dma_data_bytes};
	uint8_t rec[GA_TIMING_HDR_BYTES];
	unsigned int nsub;
	int r;

	*err = GA_BATCH_OK;
	*rec_nsub = 0; /* the batch's sub-frames, for frames/record */
	/* An error frame, or one cut at the max size (its tails are gone). */
	if (h->result || h->overflow || h->size > payload_max || len < 2)
		return false;
	if (h->size == GA_TIMING_HDR_BYTES) {
		ga_timing_decode(p, th); /* bare: a transition */
	} else {
		r = ga_batch_walk(p, h->size, GA_TIMING_HDR_BYTES, read_payload, &tr, sub, &nsub);
		if (r < 0 || r == GA_BATCH_NOT_BATCH)
			return false;
		if (r != GA_BATCH_OK) {
			*err = r;
			return false;
		}
		memcpy(rec_sub, sub, nsub * sizeof(*sub)); /* frames/record keeps them */
		*rec_nsub = nsub;
		if (sub[0].off + GA_TIMING_HDR_BYTES <= len) {
			ga_timing_decode(p + sub[0].off, th);
		} else {
			if (read_payload(&tr, sub[0].off, rec, sizeof(rec)) < 0)
				return false;
			ga_timing_decode(rec, th);
		}
	}
	return ((th->pulse_ctl >> 56) & 0x0f) <= SERVICE_MAX;
}

/* One new frame in buffer @b: its descriptor @h and first @len payload
 * bytes @p.  Counted at once; its pulse ID waits for commit. */
static void account(struct fs *fs, struct fs_frames *fr, unsigned int b, struct ga_buf *buf,
		    const struct ga_header *h, const uint8_t *p, uint32_t len)
{
	struct ga_batch_sub rec_sub[GA_BATCH_MAX_SUB]; /* for frames/record */
	unsigned int rec_nsub;
	struct ga_timing_header th;
	struct timespec now;
	double age;
	int err;
	bool ok;

	fr->count[C_SEEN]++;
	if (b == 0)
		fr->count[C_LAPS]++;
	sample_latencies(fs, fr, b);
	ok = find_timing(fs, buf, h, p, len, fr->seen[b].payload_max, &th, &err, rec_sub,
			 &rec_nsub);
	if (err != GA_BATCH_OK)
		fr->count[C_BATCH + err - 1]++;
	if (fr->hook)
		fr->hook(fs, b, buf, p - fs->info.dma_data_bytes, fr->seen[b].payload_max,
			 fr->count[C_SEEN], ok ? &th : NULL, err, rec_sub, rec_nsub);
	if (!ok) {
		fr->count[C_UNCHECKED]++;
		pend_add(fr, false, 0);
		return;
	}
	pend_add(fr, true, th.pulse_ctl & GA_TIMING_PULSE_MASK);
	fr->seen_pulse = th.pulse_ctl & GA_TIMING_PULSE_MASK;
	fr->have_seen_pulse = true;
	/* The stamp is the card's clock when it made the frame: the host's
	 * CLOCK_REALTIME on the simulated card.  A stamp ahead of ours says
	 * the clocks differ; no age then. */
	clock_gettime(CLOCK_REALTIME, &now);
	age = (double)((int64_t)now.tv_sec - (int64_t)th.time_s) +
	      ((double)now.tv_nsec - (double)th.time_ns) / 1e9;
	if (age >= 0)
		hist_add(&fr->age, age);
}

/* Read buffer @b's descriptor and first payload bytes into @raw: the
 * bytes of @len payload (*@len: at most PREFIX_BYTES, at most the
 * frame's size; 0 when the buffer holds no frame). */
static int peek(struct fs *fs, struct seen *s, struct ga_buf *buf, uint8_t *raw, uint32_t *len)
{
	unsigned int ddb = fs->info.dma_data_bytes;
	struct ga_header h;
	int ret;

	*len = s->payload_max < PREFIX_BYTES ? (uint32_t)s->payload_max : PREFIX_BYTES;
	ret = ga_buf_read(buf, 0, raw, ddb + *len);
	if (ret < 0)
		return ret;
	ga_header_decode(raw, &h);
	if (h.size < *len)
		*len = h.size;
	return 0;
}

/* Look at write buffer @b: 1 and the frame accounted when it holds one not
 * seen yet, 0 when not, or a negative errno. */
static int look(struct fs *fs, struct fs_frames *fr, unsigned int b)
{
	uint8_t raw[GA_HDR_BYTES + 128 + PREFIX_BYTES], again[sizeof(raw)];
	unsigned int ddb = fs->info.dma_data_bytes;
	struct ga_buf *buf = ga_buf_get(fs->dev, GA_DIR_WRITE, b);
	struct seen *s = &fr->seen[b];
	const uint8_t *p = raw + ddb;
	struct ga_header h;
	uint32_t len;
	int ret;

	if (!buf || ddb < GA_HDR_BYTES || ddb > 128)
		return -ENODEV;
	if (s->gen != fs->slots[GA_DIR_WRITE][b].gen) {
		struct ga_buf_info bi;

		/* A new buffer under this index: nothing seen in it yet. */
		if (ga_buf_info(buf, &bi) < 0)
			return -ENODEV;
		memset(s, 0, sizeof(*s));
		s->gen = fs->slots[GA_DIR_WRITE][b].gen;
		s->payload_max = bi.payload_max;
	}
	/* Descriptor and the payload's first bytes in one read (one round
	 * trip to GPU memory); the descriptor is written last, so a frame
	 * whose descriptor we read is whole. */
	ret = peek(fs, s, buf, raw, &len);
	if (ret < 0)
		return ret;
	if (len == 0) {
		/* Nothing landed (armed, or handed back: the DRP zeroes the
		 * size word): the next frame here is new, whatever it holds. */
		s->valid = false;
		return 0;
	}
	ga_header_decode(raw, &h);
	if (s->valid && s->len == len && !memcmp(s->hdr, raw, GA_HDR_BYTES) &&
	    !memcmp(s->prefix, p, len))
		return 0; /* seen already */
	/* A new frame: read it again.  A consumer that re-arms without
	 * zeroing the size word leaves the old descriptor in place while the
	 * card writes the next payload under it; what changed between the
	 * two reads was being written, and is looked at again next time. */
	ret = ga_buf_read(buf, 0, again, ddb + len);
	if (ret < 0)
		return ret;
	if (memcmp(raw, again, ddb + len))
		return 0;
	s->valid = true;
	s->len = len;
	memcpy(s->hdr, raw, GA_HDR_BYTES);
	memcpy(s->prefix, p, len);
	account(fs, fr, b, buf, &h, p, len);
	return 1;
}

/* Every buffer in ring order from the next one, while each holds a new
 * frame (the card fills them in that order); how many. */
static unsigned int ring_walk(struct fs *fs, struct fs_frames *fr, unsigned int n)
{
	unsigned int found = 0;

	if (fr->next >= n)
		fr->next = 0;
	while (found < n && look(fs, fr, fr->next) > 0) {
		fr->next = (fr->next + 1) % n;
		found++;
	}
	return (unsigned int)found;
}

/*
 * Start counting afresh from what the ring holds now: every frame in it
 * taken as seen (without counting it: the card's count says how many
 * were not), the sequence broken.  After frames were missed, a frame the
 * watcher had not reached could still be read later, out of its place; a
 * frame read after this was delivered after it.  Consistent only when
 * the card's count did not move while the ring was read (tried thrice).
 */
static void resync(struct fs *fs, struct fs_frames *fr, unsigned int n)
{
	uint8_t raw[GA_HDR_BYTES + 128 + PREFIX_BYTES];
	unsigned int ddb = fs->info.dma_data_bytes;
	uint64_t c1, c2;

	break_sequence(fr);
	for (int tries = 0; tries < 3; tries++) {
		if (card_count(fs, fr, &c1) < 0)
			return;
		for (unsigned int b = 0; b < n; b++) {
			struct ga_buf *buf = ga_buf_get(fs->dev, GA_DIR_WRITE, b);
			struct seen *s = &fr->seen[b];
			uint32_t len;

			if (!buf || s->gen != fs->slots[GA_DIR_WRITE][b].gen ||
			    peek(fs, s, buf, raw, &len) < 0)
				continue;
			s->valid = len != 0;
			s->len = len;
			memcpy(s->hdr, raw, GA_HDR_BYTES);
			memcpy(s->prefix, raw + ddb, len);
		}
		if (card_count(fs, fr, &c2) < 0)
			return;
		if (c1 == c2) {
			fr->written_off = (int64_t)(c2 - fr->base) - (int64_t)fr->count[C_SEEN];
			fr->resynced = true;
			fr->synced_at = c2;
			return;
		}
	}
	/* Frames kept coming: the deficit stays, tried again next time. */
	fr->deficit = true;
	fr->deficit_at = c2;
}

/*
 * After frames were seen: were they all the card delivered?  Then they
 * are consecutive and their pulse IDs are compared.  A frame that lands
 * just after the walk would say no: the ring is walked again (twice at
 * most) before the answer counts.  Frames still missing once the card
 * has filled the whole ring since are gone: the watcher starts afresh
 * (resync), and the frames seen meanwhile are not compared.
 */
static unsigned int settle(struct fs *fs, struct fs_frames *fr, unsigned int n)
{
	unsigned int found = 0, more;
	uint64_t c = 0;
	int64_t missing = 0;

	for (int round = 0;; round++) {
		if (card_count(fs, fr, &c) < 0) {
			break_sequence(fr); /* cannot tell */
			return found;
		}
		missing = (int64_t)(c - fr->base) - (int64_t)fr->count[C_SEEN] - fr->written_off;
		if (missing <= 0 || round == 2)
			break;
		more = ring_walk(fs, fr, n);
		if (!more)
			break;
		found += more;
	}
	if (missing == 0 && fr->resynced && c - fr->synced_at >= n) {
		/* Every frame since the resync seen, but the card may have
		 * filled every buffer anew before the watcher found where it
		 * writes: read from another buffer, the ring's order is not the
		 * card's (frames of one lap, rotated).  Fewer than a ring's worth
		 * can only be seen from where the card began. */
		resync(fs, fr, n);
	} else if (missing == 0) {
		commit(fr);
		fr->resynced = false;
	} else if (missing < 0 || fr->npend == PEND_MAX) {
		/* More seen than delivered (a frame from before the count
		 * began, or read twice), or too many waiting. */
		resync(fs, fr, n);
	} else if (!fr->deficit) {
		fr->deficit = true;
		fr->deficit_at = c;
	} else if (c - fr->deficit_at >= n) {
		resync(fs, fr, n);
	}
	return found;
}

/* fs_frames_scan with fr->lock held. */
static int scan_locked(struct fs *fs, struct fs_frames *fr)
{
	unsigned int n = ga_buf_count(fs->dev, GA_DIR_WRITE), found;
	uint32_t enabled = 1;
	uint64_t c = 0;

	if (n > GA_MAX_BUFFERS)
		n = GA_MAX_BUFFERS;
	/* The card counts a frame once it is whole: a count that did not move
	 * since every frame was seen is one register read instead of a look
	 * into (GPU) memory, which metrics would otherwise pay at every render. */
	if (fr->quiet && card_count(fs, fr, &c) == 0 && c == fr->quiet_at) {
		found = 0;
	} else {
		found = ring_walk(fs, fr, n);
		if (found || fr->npend)
			found += settle(fs, fr, n);
		fr->quiet = !fr->npend && card_count(fs, fr, &c) == 0 &&
			    (int64_t)(c - fr->base) - (int64_t)fr->count[C_SEEN] - fr->written_off == 0;
		fr->quiet_at = c;
	}
	/* An engine switched off starts again at buffer 0 (firmware.md
	 * 3.1), and the next frame starts a new run. */
	if (ga_reg_read(fs->dev, GA_REG_WRITE_ENABLE, 0, &enabled) == 0 && !enabled) {
		fr->next = 0;
		if (fr->npend)
			break_sequence(fr);
		fr->have_pulse = false;
	}
	return (int)found;
}

int fs_frames_scan(struct fs *fs)
{
	struct fs_frames *fr = fs->frames;
	int found;

	if (!fr)
		return 0;
	pthread_mutex_lock(&fr->lock);
	found = scan_locked(fs, fr);
	pthread_mutex_unlock(&fr->lock);
	return found;
}

int fs_frames_arm(struct fs *fs, unsigned int idx, struct ga_buf *buf)
{
	struct fs_frames *fr = fs->frames;
	int ret;

	if (!fr)
		return ga_buf_arm(buf);
	/* Read the frame being handed back (and any before it in the ring)
	 * first: every frame consumed through the mount is seen.  Arm with
	 * the watcher held off: the next frame there is new, even one with
	 * the same payload (the zero pattern), and a frame the card writes
	 * the moment the buffer is armed is not taken for the old one's
	 * second coming (it was: seen ran above delivered). */
	pthread_mutex_lock(&fr->lock);
	scan_locked(fs, fr);
	ret = ga_buf_arm(buf);
	if (ret == 0 && idx < GA_MAX_BUFFERS)
		fr->seen[idx].valid = false;
	pthread_mutex_unlock(&fr->lock);
	return ret;
}

void fs_frames_observe(struct fs *fs, fs_frame_hook *hook)
{
	struct fs_frames *fr = fs->frames;

	if (!fr)
		return;
	pthread_mutex_lock(&fr->lock);
	fr->hook = hook;
	pthread_mutex_unlock(&fr->lock);
}

void fs_frames_new_run(struct fs *fs, bool ring_reset)
{
	struct fs_frames *fr = fs->frames;

	if (!fr)
		return;
	pthread_rwlock_rdlock(&fs->bufs_lock);
	fs_frames_scan(fs); /* the old run's frames still there */
	pthread_mutex_lock(&fr->lock);
	if (fr->npend)
		break_sequence(fr);
	fr->have_pulse = false;
	fr->skipped = 0;
	fr->quiet = false;
	if (ring_reset)
		fr->next = 0;
	pthread_mutex_unlock(&fr->lock);
	pthread_rwlock_unlock(&fs->bufs_lock);
}

/* ---- the watcher thread --------------------------------------------------- */

#define WATCH_BUSY_MS  1   /* while frames come */
#define WATCH_QUIET_MS 10  /* after a quiet second */
#define WATCH_IDLE_MS  100 /* no write buffer */

static void *watch_main(void *arg)
{
	struct fs *fs = arg;
	struct fs_frames *fr = fs->frames;
	unsigned int quiet = 0;

	pthread_mutex_lock(&fr->mx);
	while (!atomic_load(&fr->stop)) {
		unsigned int ms = WATCH_IDLE_MS;
		struct timespec ts;

		pthread_mutex_unlock(&fr->mx);
		/* The card's queued copies land first, outside bufs_lock: a
		 * look reads on the card's stream, and waiting behind them
		 * under the lock held mkdir and rmdir up to a millisecond
		 * while frames flowed (issue 30). */
		ga_dev_sync(fs->dev);
		pthread_mutex_lock(&fr->scan_lock);
		if (ga_buf_count(fs->dev, GA_DIR_WRITE)) {
			quiet = fs_frames_scan(fs) > 0 ? 0 : quiet + 1;
			ms = quiet < 1000 ? WATCH_BUSY_MS : WATCH_QUIET_MS;
		}
		pthread_mutex_unlock(&fr->scan_lock);
		pthread_mutex_lock(&fr->mx);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)ms * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (!atomic_load(&fr->stop))
			pthread_cond_timedwait(&fr->cv, &fr->mx, &ts);
	}
	pthread_mutex_unlock(&fr->mx);
	return NULL;
}

/* The watcher's state gone (its thread never started, or joined). */
static void frames_free(struct fs *fs)
{
	struct fs_frames *fr = fs->frames;

	fs->frames = NULL;
	pthread_cond_destroy(&fr->cv);
	pthread_mutex_destroy(&fr->mx);
	pthread_mutex_destroy(&fr->scan_lock);
	pthread_mutex_destroy(&fr->lock);
	free(fr);
}

int fs_frames_start(struct fs *fs)
{
	struct fs_frames *fr;
	pthread_condattr_t ca;
	int ret;

	if (fs->cfg.observe)
		return 0; /* an observer cannot read the owner's buffers */
	fr = calloc(1, sizeof(*fr));
	if (!fr)
		return -ENOMEM;
	pthread_mutex_init(&fr->lock, NULL);
	pthread_mutex_init(&fr->scan_lock, NULL);
	pthread_mutex_init(&fr->mx, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fr->cv, &ca);
	pthread_condattr_destroy(&ca);
	/* Frames are counted from here (no buffer exists yet). */
	if (card_count(fs, fr, &fr->base) < 0)
		fr->base = 0;
	fs->frames = fr;
	ret = pthread_create(&fr->thread, NULL, watch_main, fs);
	if (ret) {
		frames_free(fs);
		return -ret;
	}
	fr->running = true;
	return 0;
}

void fs_frames_stop(struct fs *fs)
{
	struct fs_frames *fr = fs->frames;

	if (!fr)
		return;
	pthread_mutex_lock(&fr->mx);
	atomic_store(&fr->stop, true);
	pthread_cond_signal(&fr->cv);
	pthread_mutex_unlock(&fr->mx);
	if (fr->running)
		pthread_join(fr->thread, NULL);
	frames_free(fs);
}

void fs_frames_exclude(struct fs *fs)
{
	if (fs->frames)
		pthread_mutex_lock(&fs->frames->scan_lock);
}

void fs_frames_unexclude(struct fs *fs)
{
	if (fs->frames)
		pthread_mutex_unlock(&fs->frames->scan_lock);
}

/* ---- files and metrics ------------------------------------------------------ */

/* The count @c; not_seen is derived: what the card delivered since the
 * watcher started, less what it saw (frames not read yet included). */
static uint64_t counter_of(struct fs *fs, struct fs_frames *fr, enum counter c)
{
	uint64_t n;

	if (c != C_NOT_SEEN)
		return fr->count[c];
	if (card_count(fs, fr, &n) < 0 || n - fr->base < fr->count[C_SEEN])
		return 0;
	return n - fr->base - fr->count[C_SEEN];
}

/* Bring the counts up to date (a look at the ring), then lock them. */
static struct fs_frames *frames_current(struct fs *fs)
{
	struct fs_frames *fr = fs->frames;

	if (!fr)
		return NULL;
	pthread_rwlock_rdlock(&fs->bufs_lock);
	fs_frames_scan(fs);
	pthread_rwlock_unlock(&fs->bufs_lock);
	pthread_mutex_lock(&fr->lock);
	return fr;
}

static int show_counter(struct fs_ctx *c, struct strbuf *sb, enum counter which)
{
	struct fs_frames *fr = frames_current(c->fs);
	uint64_t v;

	if (!fr)
		return fs_err(-ENODATA, "no frames are read on an observer mount");
	v = counter_of(c->fs, fr, which);
	pthread_mutex_unlock(&fr->lock);
	return sb_printf(sb, "%llu\n", (unsigned long long)v) ? -ENOMEM : 0;
}

#define COUNTER_SHOW(nm, C)                                                                        \
	static int show_##nm(struct fs_ctx *c, struct strbuf *sb)                                  \
	{                                                                                          \
		return show_counter(c, sb, C);                                                     \
	}
COUNTER_SHOW(seen, C_SEEN)
COUNTER_SHOW(not_seen, C_NOT_SEEN)
COUNTER_SHOW(unchecked, C_UNCHECKED)
COUNTER_SHOW(not_compared, C_NOT_COMPARED)
COUNTER_SHOW(pulse_id_gaps, C_GAPS)
COUNTER_SHOW(pulse_ids_missed, C_MISSED)
COUNTER_SHOW(pulse_id_duplicates, C_DUPLICATES)
COUNTER_SHOW(pulse_id_backwards, C_BACKWARDS)
COUNTER_SHOW(ring_laps, C_LAPS)
COUNTER_SHOW(batch_too_short, C_BATCH + GA_BATCH_TOO_SHORT - 1)
COUNTER_SHOW(batch_zero_size, C_BATCH + GA_BATCH_ZERO_SIZE - 1)
COUNTER_SHOW(batch_corrupt, C_BATCH + GA_BATCH_CORRUPT - 1)
COUNTER_SHOW(batch_overflow, C_BATCH + GA_BATCH_OVERFLOW - 1)
#undef COUNTER_SHOW

static int show_last_pulse_id(struct fs_ctx *c, struct strbuf *sb)
{
	struct fs_frames *fr = frames_current(c->fs);
	int ret;

	if (!fr)
		return fs_err(-ENODATA, "no frames are read on an observer mount");
	ret = fr->have_seen_pulse ? sb_printf(sb, "0x%014llx\n", (unsigned long long)fr->seen_pulse)
				  : sb_printf(sb, "none\n");
	pthread_mutex_unlock(&fr->lock);
	return ret ? -ENOMEM : 0;
}

/* The bounds' label text, made once: a render prints every bucket of
 * every histogram, without formatting a double for each line. */
static char le_text[NBOUNDS + 1][16];
static pthread_once_t le_once = PTHREAD_ONCE_INIT;

static void le_init(void)
{
	for (unsigned int i = 0; i < NBOUNDS; i++)
		snprintf(le_text[i], sizeof(le_text[i]), "%.9g", le_bounds[i]);
	snprintf(le_text[NBOUNDS], sizeof(le_text[NBOUNDS]), "+Inf");
}

static void put_hist(struct strbuf *sb, const char *name, const char *labels, const struct hist *h)
{
	uint64_t cum = 0;

	pthread_once(&le_once, le_init);
	for (unsigned int i = 0; i <= NBOUNDS; i++) {
		cum += h->bucket[i];
		sb_puts(sb, name);
		sb_puts(sb, "_bucket{");
		sb_puts(sb, labels);
		sb_puts(sb, ",le=\"");
		sb_puts(sb, le_text[i]);
		sb_puts(sb, "\"} ");
		sb_put_uint(sb, cum);
		sb_puts(sb, "\n");
	}
	sb_printf(sb, "%s_sum{%s} %.9g\n", name, labels, h->sum);
	sb_puts(sb, name);
	sb_puts(sb, "_count{");
	sb_puts(sb, labels);
	sb_puts(sb, "} ");
	sb_put_uint(sb, h->count);
	sb_puts(sb, "\n");
}

static const struct {
	enum counter c;
	const char *name, *help;
} metric_counters[] = {
	{C_SEEN, "gpuasync_frames_seen_total",
	 "frames the daemon read in its write buffers (frames/seen)"},
	{C_NOT_SEEN, "gpuasync_frames_not_seen_total",
	 "frames the card delivered that the daemon did not read (taken by another consumer "
	 "first, or not read yet)"},
	{C_UNCHECKED, "gpuasync_frames_unchecked_total",
	 "frames seen without a TimingHeader where the DRP finds one: an error or cut frame, a "
	 "payload neither a bare TimingHeader (32 bytes) nor a batch, a bad batch"},
	{C_NOT_COMPARED, "gpuasync_frames_not_compared_total",
	 "frames whose pulse ID was not compared: the first of a run, or frames before them not "
	 "seen"},
	{C_GAPS, "gpuasync_pulse_id_gaps_total",
	 "frames whose pulse ID is more than the previous frame's + 1"},
	{C_MISSED, "gpuasync_pulse_ids_missed_total", "pulse IDs those gaps skipped"},
	{C_DUPLICATES, "gpuasync_pulse_id_duplicates_total",
	 "frames whose pulse ID equals the previous frame's"},
	{C_BACKWARDS, "gpuasync_pulse_id_backwards_total",
	 "frames whose pulse ID is below the previous frame's (out of order)"},
	{C_LAPS, "gpuasync_ring_laps_total",
	 "frames seen in write buffer 0: laps of the ring (latency samples on V4-5)"},
};

void fs_frames_metrics(struct fs *fs, struct strbuf *sb, const char *id)
{
	struct fs_frames *fr = fs->frames;
	struct strbuf lab = {0};

	if (!fr)
		return;
	fs_frames_scan(fs); /* the caller holds bufs_lock for reading */
	pthread_mutex_lock(&fr->lock);
	/* Piece by piece, not sb_printf: metrics renders these every time. */
	for (unsigned int i = 0; i < sizeof(metric_counters) / sizeof(metric_counters[0]); i++) {
		const char *name = metric_counters[i].name;

		fs_metrics_family(sb, name, "counter", metric_counters[i].help, NULL);
		sb_puts(sb, name);
		sb_puts(sb, "{");
		sb_puts(sb, id);
		sb_puts(sb, "} ");
		sb_put_uint(sb, counter_of(fs, fr, metric_counters[i].c));
		sb_puts(sb, "\n");
	}
	fs_metrics_family(sb, "gpuasync_batch_errors_total", "counter",
			  "batches (AxiStream Batcher v1) the DRP would reject, by its error",
			  NULL);
	for (int e = GA_BATCH_TOO_SHORT; e < GA_BATCH_NERR; e++) {
		sb_puts(sb, "gpuasync_batch_errors_total{");
		sb_puts(sb, id);
		sb_puts(sb, ",error=\"");
		sb_puts(sb, ga_batch_result_name(e));
		sb_puts(sb, "\"} ");
		sb_put_uint(sb, fr->count[C_BATCH + e - 1]);
		sb_puts(sb, "\n");
	}
	fs_metrics_family(sb, "gpuasync_frame_age_seconds", "histogram",
			  "time from the TimingHeader's stamp (when the card made the frame) to "
			  "when the daemon first saw it",
			  NULL);
	put_hist(sb, "gpuasync_frame_age_seconds", id, &fr->age);
	fs_metrics_family(sb, "gpuasync_frame_latency_seconds", "histogram",
			  "the card's latency registers of the buffer a frame was seen in, sampled "
			  "at that frame (V4-5: buffer 0, once per ring lap)",
			  NULL);
	for (unsigned int i = 0; i < NLAT; i++) {
		uint32_t off;

		/* Only the latencies this card has (on buffer 0 at least). */
		if (ga_reg_offset(lat_regs[i].reg, fs->info.layout, fs->info.version, 0,
				  fs->info.max_buffers, &off) < 0)
			continue;
		sb_reset(&lab);
		sb_printf(&lab, "%s,latency=\"%s\"", id, lat_regs[i].label);
		sb->oom |= lab.oom;
		if (!lab.oom)
			put_hist(sb, "gpuasync_frame_latency_seconds", lab.buf, &fr->lat[i]);
	}
	pthread_mutex_unlock(&fr->lock);
	sb_free(&lab);
}

static bool has_frames(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	(void)n;
	(void)idx;
	return !fs->cfg.observe;
}

/* clang-format off */
#define FRAME_ROW(nm, docstr) \
	{ .name = #nm, .parent = FS_D_FRAMES, .dir = FS_D_NONE, .mode = 0444, .flags = FS_LIVE, \
	  .show = show_##nm, .visible = has_frames, .reg = -1, .doc = docstr }

const struct fs_node fs_frame_rows[] = {
	{ .name = "frames", .parent = FS_D_ROOT, .dir = FS_D_FRAMES, .mode = 0555,
	  .visible = has_frames, .reg = -1,
	  .doc = "what the daemon read in the frames of its write buffers (LCLS-II TimingHeader, bare or batched)" },
	FRAME_ROW(seen, "frames the daemon read in its write buffers, in ring order"),
	FRAME_ROW(not_seen, "frames the card delivered that the daemon did not read (another consumer took them first)"),
	FRAME_ROW(unchecked, "frames seen without a TimingHeader where the DRP finds one (error frame, neither 32 bytes nor a good batch)"),
	FRAME_ROW(not_compared, "frames whose pulse ID was not compared: first of a run, or frames before them not seen"),
	FRAME_ROW(pulse_id_gaps, "frames whose pulse ID is more than the previous frame's + 1"),
	FRAME_ROW(pulse_ids_missed, "pulse IDs those gaps skipped"),
	FRAME_ROW(pulse_id_duplicates, "frames whose pulse ID equals the previous frame's"),
	FRAME_ROW(pulse_id_backwards, "frames whose pulse ID is below the previous frame's (out of order)"),
	FRAME_ROW(last_pulse_id, "pulse ID of the last frame seen (hex), or none"),
	FRAME_ROW(ring_laps, "frames seen in write buffer 0: laps of the ring"),
	FRAME_ROW(batch_too_short, "batches shorter than a header and one tail"),
	FRAME_ROW(batch_zero_size, "batches with a sub-frame of 0 bytes"),
	FRAME_ROW(batch_corrupt, "batches whose tails do not add up (or no TimingHeader first)"),
	FRAME_ROW(batch_overflow, "batches with a tdest of 16 or more (more sub-frames than a reader keeps)"),
};
const unsigned int fs_frame_nrows = sizeof(fs_frame_rows) / sizeof(fs_frame_rows[0]);
/* clang-format on */
