/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * frames/: what the daemon learns from the frames themselves, where it can
 * read them (its own write buffers: the simulated card, or a card whose
 * buffers this mount made; not an observer's, docs/drp.md):
 *
 *   $ cat /mnt/gpuasync/frames/pulse_id_gaps        # jumps in the pulse ID
 *   $ cat /mnt/gpuasync/frames/pulse_ids_missed     # pulse IDs those jumps skipped
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
 * A frame is "there" when its 8-byte descriptor is not all zero, and
 * "new" when the first 32 payload bytes (the TimingHeader) differ from
 * those the daemon last saw in that buffer: a dropped frame's descriptor,
 * which the card writes over buffer 0 while its engine is off, brings no
 * payload and so is not a frame.  Each frame's first 32 payload bytes are
 * read as an LCLS-II TimingHeader (gpuasync/timing.h), as the DRP reads
 * them at +dma_data_bytes, and its pulse ID compared with the frame seen
 * before it.  At a frame in a buffer that has latency registers (buffer 0
 * on V4-5: once per ring lap; every buffer on V1-3) those registers are
 * sampled into histograms.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* What the daemon last saw in one write buffer. */
struct seen {
	uint32_t gen; /* fs->slots generation it was seen in */
	bool valid;
	uint8_t hdr[GA_HDR_BYTES];
	uint8_t prefix[GA_TIMING_HDR_BYTES];
	uint32_t len; /* bytes of prefix that hold payload */
	size_t payload_max;
};

struct fs_frames {
	/* Guards everything below; taken after fs->bufs_lock. */
	pthread_mutex_t lock;
	unsigned int next; /* ring position of the next frame */
	struct seen seen[GA_MAX_BUFFERS];
	uint64_t frames, unchecked, gaps, missed, duplicates, backwards, laps;
	bool have_pulse;
	uint64_t last_pulse;
	struct hist age, lat[NLAT];

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

/* One new frame in buffer @b: its descriptor @hdr and payload @p (@len of
 * GA_TIMING_HDR_BYTES read). */
static void account(struct fs *fs, struct fs_frames *fr, unsigned int b, const struct ga_header *h,
		    const uint8_t *p, uint32_t len)
{
	struct ga_timing_header th;
	uint64_t pulse;
	struct timespec now;
	double age;

	fr->frames++;
	if (b == 0)
		fr->laps++;
	sample_latencies(fs, fr, b);
	if (h->result || len < GA_TIMING_HDR_BYTES) {
		fr->unchecked++; /* an error frame, or too short for a TimingHeader */
		return;
	}
	ga_timing_decode(p, &th);
	pulse = th.pulse_ctl & GA_TIMING_PULSE_MASK;
	if (fr->have_pulse) {
		if (pulse == fr->last_pulse) {
			fr->duplicates++;
		} else if (pulse < fr->last_pulse) {
			fr->backwards++;
		} else if (pulse != fr->last_pulse + 1) {
			fr->gaps++;
			fr->missed += pulse - fr->last_pulse - 1;
		}
	}
	fr->last_pulse = pulse;
	fr->have_pulse = true;
	/* The stamp is the card's clock when it made the frame: the host's
	 * CLOCK_REALTIME on the simulated card.  A stamp ahead of ours says
	 * the clocks differ; no age then. */
	clock_gettime(CLOCK_REALTIME, &now);
	age = (double)((int64_t)now.tv_sec - (int64_t)th.time_s) +
	      ((double)now.tv_nsec - (double)th.time_ns) / 1e9;
	if (age >= 0)
		hist_add(&fr->age, age);
}

/* Look at write buffer @b: 1 and the frame accounted when it holds one not
 * seen yet, 0 when not, or a negative errno. */
static int look(struct fs *fs, struct fs_frames *fr, unsigned int b)
{
	static const uint8_t zero[GA_HDR_BYTES];
	uint8_t raw[GA_HDR_BYTES + 128 + GA_TIMING_HDR_BYTES];
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
	len = s->payload_max < GA_TIMING_HDR_BYTES ? (uint32_t)s->payload_max : GA_TIMING_HDR_BYTES;
	ret = ga_buf_read(buf, 0, raw, ddb + len);
	if (ret < 0)
		return ret;
	if (!memcmp(raw, zero, GA_HDR_BYTES))
		return 0; /* nothing landed (armed, or consumed) */
	ga_header_decode(raw, &h);
	if (h.size < len)
		len = h.size;
	/* Seen already?  By its payload; a frame without payload by its
	 * descriptor. */
	if (s->valid && s->len == len &&
	    (len ? !memcmp(s->prefix, p, len) : !memcmp(s->hdr, raw, GA_HDR_BYTES)))
		return 0;
	s->valid = true;
	s->len = len;
	memcpy(s->hdr, raw, GA_HDR_BYTES);
	memcpy(s->prefix, p, len);
	account(fs, fr, b, &h, p, len);
	return 1;
}

int fs_frames_scan(struct fs *fs)
{
	struct fs_frames *fr = fs->frames;
	unsigned int n, found = 0;
	uint32_t enabled = 1;

	if (!fr)
		return 0;
	n = ga_buf_count(fs->dev, GA_DIR_WRITE);
	if (n > GA_MAX_BUFFERS)
		n = GA_MAX_BUFFERS;
	pthread_mutex_lock(&fr->lock);
	if (fr->next >= n)
		fr->next = 0;
	/* Every buffer in ring order from the next one, while each holds a
	 * new frame: the card fills them in that order. */
	while (found < n && look(fs, fr, fr->next) > 0) {
		fr->next = (fr->next + 1) % n;
		found++;
	}
	/* An engine switched off starts again at buffer 0 (firmware.md
	 * 3.1), and so does the next frame. */
	if (ga_reg_read(fs->dev, GA_REG_WRITE_ENABLE, 0, &enabled) == 0 && !enabled)
		fr->next = 0;
	pthread_mutex_unlock(&fr->lock);
	return (int)found;
}

void fs_frames_rearmed(struct fs *fs, unsigned int idx)
{
	struct fs_frames *fr = fs->frames;

	if (!fr || idx >= GA_MAX_BUFFERS)
		return;
	/* The mount emptied it: the next frame there is new, even one with
	 * the same payload (the zero pattern). */
	pthread_mutex_lock(&fr->lock);
	fr->seen[idx].valid = false;
	pthread_mutex_unlock(&fr->lock);
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
		pthread_rwlock_rdlock(&fs->bufs_lock);
		if (ga_buf_count(fs->dev, GA_DIR_WRITE)) {
			quiet = fs_frames_scan(fs) > 0 ? 0 : quiet + 1;
			ms = quiet < 1000 ? WATCH_BUSY_MS : WATCH_QUIET_MS;
		}
		pthread_rwlock_unlock(&fs->bufs_lock);
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
	pthread_mutex_init(&fr->mx, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fr->cv, &ca);
	pthread_condattr_destroy(&ca);
	fs->frames = fr;
	ret = pthread_create(&fr->thread, NULL, watch_main, fs);
	if (ret) {
		fs->frames = NULL;
		pthread_cond_destroy(&fr->cv);
		pthread_mutex_destroy(&fr->mx);
		pthread_mutex_destroy(&fr->lock);
		free(fr);
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
	fs->frames = NULL;
	pthread_cond_destroy(&fr->cv);
	pthread_mutex_destroy(&fr->mx);
	pthread_mutex_destroy(&fr->lock);
	free(fr);
}

/* ---- files and metrics ------------------------------------------------------ */

enum counter { C_SEEN, C_UNCHECKED, C_GAPS, C_MISSED, C_DUPLICATES, C_BACKWARDS, C_LAPS };

static uint64_t counter_of(const struct fs_frames *fr, enum counter c)
{
	switch (c) {
	case C_SEEN:
		return fr->frames;
	case C_UNCHECKED:
		return fr->unchecked;
	case C_GAPS:
		return fr->gaps;
	case C_MISSED:
		return fr->missed;
	case C_DUPLICATES:
		return fr->duplicates;
	case C_BACKWARDS:
		return fr->backwards;
	case C_LAPS:
		return fr->laps;
	}
	return 0;
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
	v = counter_of(fr, which);
	pthread_mutex_unlock(&fr->lock);
	return sb_printf(sb, "%llu\n", (unsigned long long)v) ? -ENOMEM : 0;
}

#define COUNTER_SHOW(nm, C)                                                                        \
	static int show_##nm(struct fs_ctx *c, struct strbuf *sb)                                  \
	{                                                                                          \
		return show_counter(c, sb, C);                                                     \
	}
COUNTER_SHOW(seen, C_SEEN)
COUNTER_SHOW(unchecked, C_UNCHECKED)
COUNTER_SHOW(pulse_id_gaps, C_GAPS)
COUNTER_SHOW(pulse_ids_missed, C_MISSED)
COUNTER_SHOW(pulse_id_duplicates, C_DUPLICATES)
COUNTER_SHOW(pulse_id_backwards, C_BACKWARDS)
COUNTER_SHOW(ring_laps, C_LAPS)
#undef COUNTER_SHOW

static int show_last_pulse_id(struct fs_ctx *c, struct strbuf *sb)
{
	struct fs_frames *fr = frames_current(c->fs);
	int ret;

	if (!fr)
		return fs_err(-ENODATA, "no frames are read on an observer mount");
	ret = fr->have_pulse ? sb_printf(sb, "0x%014llx\n", (unsigned long long)fr->last_pulse)
			     : sb_printf(sb, "none\n");
	pthread_mutex_unlock(&fr->lock);
	return ret ? -ENOMEM : 0;
}

static void put_hist(struct strbuf *sb, const char *name, const char *labels, const struct hist *h)
{
	uint64_t cum = 0;

	for (unsigned int i = 0; i <= NBOUNDS; i++) {
		cum += h->bucket[i];
		if (i < NBOUNDS)
			sb_printf(sb, "%s_bucket{%s,le=\"%.9g\"} %llu\n", name, labels,
				  le_bounds[i], (unsigned long long)cum);
		else
			sb_printf(sb, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels,
				  (unsigned long long)cum);
	}
	sb_printf(sb, "%s_sum{%s} %.9g\n", name, labels, h->sum);
	sb_printf(sb, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

static const struct {
	enum counter c;
	const char *name, *help;
} metric_counters[] = {
	{C_SEEN, "gpuasync_frames_seen_total",
	 "frames the daemon read in its write buffers (frames/seen)"},
	{C_UNCHECKED, "gpuasync_frames_unchecked_total",
	 "frames seen without a TimingHeader to check: an error result, or under 32 bytes"},
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
	for (unsigned int i = 0; i < sizeof(metric_counters) / sizeof(metric_counters[0]); i++) {
		sb_printf(sb, "# HELP %s %s\n# TYPE %s counter\n", metric_counters[i].name,
			  metric_counters[i].help, metric_counters[i].name);
		sb_printf(sb, "%s{%s} %llu\n", metric_counters[i].name, id,
			  (unsigned long long)counter_of(fr, metric_counters[i].c));
	}
	sb_printf(sb, "# HELP gpuasync_frame_age_seconds time from the TimingHeader's stamp (when "
		      "the card made the frame) to when the daemon first saw it\n"
		      "# TYPE gpuasync_frame_age_seconds histogram\n");
	put_hist(sb, "gpuasync_frame_age_seconds", id, &fr->age);
	sb_printf(sb, "# HELP gpuasync_frame_latency_seconds the card's latency registers of the "
		      "buffer a frame was seen in, sampled at that frame (V4-5: buffer 0, once "
		      "per ring lap)\n"
		      "# TYPE gpuasync_frame_latency_seconds histogram\n");
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
	  .doc = "what the daemon read in the frames of its write buffers (LCLS-II TimingHeader)" },
	FRAME_ROW(seen, "frames the daemon read in its write buffers, in ring order"),
	FRAME_ROW(unchecked, "frames seen without a TimingHeader to check (error result, under 32 bytes)"),
	FRAME_ROW(pulse_id_gaps, "frames whose pulse ID is more than the previous frame's + 1"),
	FRAME_ROW(pulse_ids_missed, "pulse IDs those gaps skipped"),
	FRAME_ROW(pulse_id_duplicates, "frames whose pulse ID equals the previous frame's"),
	FRAME_ROW(pulse_id_backwards, "frames whose pulse ID is below the previous frame's (out of order)"),
	FRAME_ROW(last_pulse_id, "pulse ID of the last frame seen (hex), or none"),
	FRAME_ROW(ring_laps, "frames seen in write buffer 0: laps of the ring"),
};
const unsigned int fs_frame_nrows = sizeof(fs_frame_rows) / sizeof(fs_frame_rows[0]);
/* clang-format on */
