// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated card plays a recorded run (gpuasync/record.h) into its
 * write buffers: a source for the generator (sim_thread.c gen_run) in
 * place of the patterns.
 *
 * ga_sim_replay_start reads the whole file once, checking every record,
 * before anything reaches the card.  A reader thread then reads it again,
 * play after play, into a queue bounded in bytes (the read-ahead); the
 * card thread takes frames from its head as they are due and pushes each
 * through ga_model_push_fill, as the generator's batched patterns go.  So
 * memory is the read-ahead and one record, whatever the file's size.
 *
 * Held (ga_sim_replay.hold): start also copies every payload once into a
 * block of the card's memory (GPU memory on a CUDA card) and keeps what
 * the schedule needs of each frame; the reader then queues frames without
 * reading the file, and the card thread has the memory layer copy each
 * payload where the memory is (write_from), as a card's DMA lands bytes:
 * no file read and no host copy per frame.
 *
 * Locking: rp->mx guards the queue and the counts; it is a leaf, taken by
 * the card thread under s->lock and by the reader with nothing else held.
 * The reader takes s->lock only to wake the card thread (sim_lock), with
 * rp->mx released.  s->replay is set and cleared under s->lock.
 *
 * The card thread (sim_thread.c), the generator's controls (sim_api.c) and
 * close (sim.c) call into this file; it calls only the core (sim_core.c),
 * which wakes the card thread for it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuasync/record.h"
#include "gpuasync/timing.h"
#include "sim_core.h"

#define REPLAY_QUEUE_DEFAULT (16u << 20)
#define REPLAY_PATH_MAX	     256
#define HOLD_AUTO_MAX	     (1ull << 30) /* payload bytes held without being asked */
#define HOLD_FRAMES_MAX	     (4u << 20)	  /* frames held at most (their table) */
#define HOLD_ALIGN	     16u	  /* each payload: the GPU copies 16 bytes a step */

/* What a held frame's play needs (the payload is in the held block). */
struct rp_held {
	uint64_t off; /* in the held block */
	uint64_t rel; /* recorded time from the play's first frame, ns */
	uint32_t len, th_off;
	uint8_t desc[8];
	bool timing;
	uint8_t th[GA_TIMING_HDR_BYTES]; /* the recorded TimingHeader (live) */
};

struct rp_item {
	struct rp_item *next;
	const struct rp_held *held; /* a held frame: no payload below */
	uint32_t len, th_off;
	uint8_t desc[8];
	bool timing;
	uint64_t play; /* which play of the file */
	uint64_t rel;  /* recorded time from the first frame of the first play, ns */
	uint8_t payload[];
};

struct sim_replay {
	struct sim *s;
	struct ga_sim_replay cfg;
	char path[REPLAY_PATH_MAX];
	pthread_t thread;
	/* what the check found */
	uint64_t file_frames, span_ns, pulse_span, payload_bytes;
	/* the copy in the card's memory (hold), or held false */
	bool held;
	struct ga_mem_block block;
	struct rp_held *hf;
	/* guarded by mx */
	pthread_mutex_t mx;
	pthread_cond_t cv; /* the reader: room in the queue, or stop */
	bool stop, read_done, ended, failed;
	char error[400];
	struct rp_item *head, *tail;
	uint64_t queued, queued_most, plays, frames;
	/* the card thread's, under s->lock: the recorded-timing schedule */
	bool started;
	uint64_t start;
};

/* ---- the card thread (s->lock held) ---------------------------------------- */

int sim_replay_next(struct sim *s, uint64_t t, uint32_t *len, uint8_t *first_user,
		    uint8_t *last_user)
{
	struct sim_replay *rp = s->replay;
	struct rp_item *it;
	struct ga_header h;
	int ret = 0;

	pthread_mutex_lock(&rp->mx);
	it = rp->head;
	if (!it) {
		if (rp->read_done) {
			rp->ended = true;
			ret = -1;
		}
		goto out;
	}
	if (rp->cfg.rate_hz == GA_SIM_REPLAY_RECORDED) {
		uint64_t due;

		if (!rp->started) {
			rp->start = t - it->rel;
			rp->started = true;
		}
		due = rp->start + it->rel;
		if (due > t)
			goto out;
		/* Far behind (a long stall): go on from now, no burst. */
		if (t > due + NSEC_PER_SEC_U64)
			rp->start += t - due;
	}
	ga_header_decode(it->desc, &h);
	*len = it->len;
	*first_user = h.first_user;
	*last_user = h.last_user;
	ret = 1;
out:
	pthread_mutex_unlock(&rp->mx);
	return ret;
}

uint64_t sim_replay_due(struct sim *s)
{
	struct sim_replay *rp = s->replay;
	uint64_t due = 0;

	pthread_mutex_lock(&rp->mx);
	if (rp->head && rp->started && rp->cfg.rate_hz == GA_SIM_REPLAY_RECORDED)
		due = rp->start + rp->head->rel;
	else if (!rp->head && !rp->read_done)
		due = ga_mono_ns() + SIM_POLL_BUSY_NS; /* the reader wakes us sooner */
	pthread_mutex_unlock(&rp->mx);
	return due;
}

void sim_replay_fill(void *ctx, void *dst, uint32_t len)
{
	struct sim *s = ctx;
	struct sim_replay *rp = s->replay;
	struct rp_item *it = rp->head; /* only the card thread takes items */

	if (len > it->len)
		len = it->len;
	memcpy(dst, it->payload, len);
	/* Live: the TimingHeader says now, and pulse IDs go on across plays. */
	if (rp->cfg.live && it->timing && it->th_off + GA_TIMING_HDR_BYTES <= len)
		ga_rec_live((uint8_t *)dst + it->th_off, it->play * rp->pulse_span);
}

const struct ga_mem_block *sim_replay_held(struct sim *s, uint64_t *src_off, uint32_t *th_off,
					   uint8_t th[GA_TIMING_HDR_BYTES])
{
	struct sim_replay *rp = s->replay;
	const struct rp_item *it = rp ? rp->head : NULL; /* only the card thread takes items */

	if (!it || !it->held)
		return NULL;
	*src_off = it->held->off;
	*th_off = UINT32_MAX;
	if (rp->cfg.live && it->timing) {
		memcpy(th, it->held->th, GA_TIMING_HDR_BYTES);
		ga_rec_live(th, it->play * rp->pulse_span);
		*th_off = it->th_off;
	}
	return &rp->block;
}

void sim_replay_sent(struct sim *s)
{
	struct sim_replay *rp = s->replay;
	struct rp_item *it;

	pthread_mutex_lock(&rp->mx);
	it = rp->head;
	rp->head = it->next;
	if (!rp->head)
		rp->tail = NULL;
	rp->queued -= sizeof(*it) + (it->held ? 0 : it->len);
	rp->frames++;
	pthread_cond_signal(&rp->cv);
	pthread_mutex_unlock(&rp->mx);
	free(it);
}

/* ---- the reader ------------------------------------------------------------- */

static void reader_fail(struct sim_replay *rp, int err)
{
	pthread_mutex_lock(&rp->mx);
	rp->failed = true;
	snprintf(rp->error, sizeof(rp->error), "%s", ga_last_error());
	pthread_mutex_unlock(&rp->mx);
	ga_log("sim replay: stopped: %s (%s)", ga_last_error(), strerror(-err));
}

/* Wake the card thread: frames to send where there were none. */
static void kick(struct sim *s)
{
	sim_lock(s);
	ga_simdev_kick(s);
	pthread_mutex_unlock(&s->lock);
}

/* Queue @it behind the others, waiting for room (one frame is let in
 * whatever its size).  False when the replay stops (@it freed). */
static bool reader_queue(struct sim_replay *rp, struct rp_item *it)
{
	uint64_t bytes = sizeof(*it) + (it->held ? 0 : it->len);
	bool was_empty;

	pthread_mutex_lock(&rp->mx);
	while (!rp->stop && rp->head && rp->queued + bytes > rp->cfg.queue_bytes)
		pthread_cond_wait(&rp->cv, &rp->mx);
	if (rp->stop) {
		pthread_mutex_unlock(&rp->mx);
		free(it);
		return false;
	}
	was_empty = !rp->head;
	if (rp->tail)
		rp->tail->next = it;
	else
		rp->head = it;
	rp->tail = it;
	rp->queued += bytes;
	if (rp->queued > rp->queued_most)
		rp->queued_most = rp->queued;
	pthread_mutex_unlock(&rp->mx);
	if (was_empty)
		kick(rp->s);
	return true;
}

static void reader_play_begins(struct sim_replay *rp)
{
	pthread_mutex_lock(&rp->mx);
	rp->plays++;
	pthread_mutex_unlock(&rp->mx);
}

/* The held copy's plays: frames queued from the table, the file unread. */
static void reader_held(struct sim_replay *rp)
{
	uint64_t sent = 0;

	for (uint64_t play = 0; !rp->cfg.repeat || play < rp->cfg.repeat; play++) {
		reader_play_begins(rp);
		for (uint64_t k = 0; k < rp->file_frames; k++) {
			const struct rp_held *h = &rp->hf[k];
			struct rp_item *it;

			if (rp->cfg.count && sent == rp->cfg.count)
				return;
			it = calloc(1, sizeof(*it));
			if (!it) {
				reader_fail(rp, ga_err(-ENOMEM, "no memory for frame %llu",
						       (unsigned long long)k));
				return;
			}
			it->held = h;
			it->len = h->len;
			it->th_off = h->th_off;
			it->timing = h->timing;
			memcpy(it->desc, h->desc, 8);
			it->play = play;
			it->rel = play * rp->span_ns + h->rel;
			if (!reader_queue(rp, it))
				return;
			sent++;
		}
	}
}

static void *reader_main(void *arg)
{
	struct sim_replay *rp = arg;
	struct ga_rec_reader *r = NULL;
	struct ga_rec_frame f;
	uint64_t sent = 0, first_mono = 0;
	int ret;

	if (rp->held) {
		reader_held(rp);
		goto out;
	}
	ret = ga_rec_open(rp->path, &r, NULL);
	if (ret < 0) {
		reader_fail(rp, ret);
		goto out;
	}
	for (uint64_t play = 0; !rp->cfg.repeat || play < rp->cfg.repeat; play++) {
		if (play && ga_rec_rewind(r) < 0)
			break;
		reader_play_begins(rp);
		while ((ret = ga_rec_next(r, &f)) > 0) {
			struct rp_item *it;

			if (rp->cfg.count && sent == rp->cfg.count)
				goto out;
			if (!play && !f.number)
				first_mono = f.monotonic_ns;
			it = malloc(sizeof(*it) + f.payload_bytes);
			if (!it) {
				reader_fail(rp, ga_err(-ENOMEM, "no memory for frame %llu",
						       (unsigned long long)f.number));
				goto out;
			}
			it->next = NULL;
			it->held = NULL;
			it->len = f.payload_bytes;
			it->th_off = f.th_off;
			it->timing = f.flags & GA_REC_F_TIMING;
			memcpy(it->desc, f.desc, 8);
			it->play = play;
			it->rel = play * rp->span_ns + (f.monotonic_ns - first_mono);
			memcpy(it->payload, f.payload, f.payload_bytes);
			if (!reader_queue(rp, it))
				goto out;
			sent++;
		}
		if (ret < 0) {
			reader_fail(rp, ret); /* changed since it was checked */
			break;
		}
	}
out:
	ga_rec_close(r);
	pthread_mutex_lock(&rp->mx);
	rp->read_done = true;
	pthread_mutex_unlock(&rp->mx);
	kick(rp->s);
	return NULL;
}

/* ---- the controls ------------------------------------------------------------ */

/* The held copy goes (the memory layer's free waits for the copies still
 * queued from it). */
static void replay_unhold(struct sim_replay *rp)
{
	if (rp->held)
		rp->s->dev->mem->free(rp->s->dev->mem_ctx, &rp->block);
	rp->held = false;
	free(rp->hf);
	rp->hf = NULL;
}

static void replay_free(struct sim_replay *rp)
{
	struct rp_item *it, *next;

	if (!rp)
		return;
	pthread_mutex_lock(&rp->mx);
	rp->stop = true;
	pthread_cond_broadcast(&rp->cv);
	pthread_mutex_unlock(&rp->mx);
	pthread_join(rp->thread, NULL);
	for (it = rp->head; it; it = next) {
		next = it->next;
		free(it);
	}
	replay_unhold(rp);
	pthread_cond_destroy(&rp->cv);
	pthread_mutex_destroy(&rp->mx);
	free(rp);
}

/* Read the whole file once: every record whole and in order, and what the
 * schedule and the live rewrite need. */
static int replay_check(struct sim_replay *rp)
{
	struct ga_rec_reader *r;
	struct ga_rec_frame f;
	struct ga_rec_extent x = {0};
	int ret = ga_rec_open(rp->path, &r, NULL);

	if (ret < 0)
		return ret;
	while ((ret = ga_rec_next(r, &f)) > 0) {
		if (f.payload_bytes > SIM_MAX_FRAME) {
			ret = ga_err(-EFBIG, "%s: frame %llu: %u bytes, more than the card's %u",
				     rp->path, (unsigned long long)f.number, f.payload_bytes,
				     SIM_MAX_FRAME);
			break;
		}
		if (f.payload_bytes == 0) {
			ret = ga_err(-EBADMSG, "%s: frame %llu: no payload (the card sends none)",
				     rp->path, (unsigned long long)f.number);
			break;
		}
		if (x.frames && f.monotonic_ns < x.last_ns) {
			ret = ga_err(-EBADMSG,
				     "%s: frame %llu: its CLOCK_MONOTONIC time is before the "
				     "frame's before it",
				     rp->path, (unsigned long long)f.number);
			break;
		}
		ga_rec_extent_add(&x, &f);
		rp->payload_bytes += (f.payload_bytes + HOLD_ALIGN - 1) / HOLD_ALIGN * HOLD_ALIGN;
	}
	ga_rec_close(r);
	if (ret < 0)
		return ret;
	if (!x.frames)
		return ga_err(-ENODATA, "%s: no frames recorded", rp->path);
	rp->file_frames = x.frames;
	rp->span_ns = ga_rec_play_ns(&x);
	rp->pulse_span = ga_rec_pulse_span(&x);
	return 0;
}

/* Whether to hold the payloads in the card's memory (0: no, 1: yes), or a
 * refusal of hold=on. */
static int hold_wanted(const struct sim_replay *rp, const struct ga_mem_ops *mem)
{
	bool can = mem && mem->write_from && mem->alloc && mem->free;

	switch (rp->cfg.hold) {
	case GA_SIM_REPLAY_HOLD_OFF:
		return 0;
	case GA_SIM_REPLAY_HOLD_ON:
		if (!can)
			return ga_err(-ENOTSUP,
				      "sim replay: hold=1: the card's memory (%s) cannot copy "
				      "within itself",
				      mem ? mem->name : "none");
		if (rp->file_frames > HOLD_FRAMES_MAX)
			return ga_err(-EFBIG, "sim replay: hold=1: %llu frames, more than %u held",
				      (unsigned long long)rp->file_frames, HOLD_FRAMES_MAX);
		return 1;
	default: /* where the memory makes data itself, and not too much */
		return can && mem->write_pattern && rp->payload_bytes <= HOLD_AUTO_MAX &&
		       rp->file_frames <= HOLD_FRAMES_MAX;
	}
}

/* Copy every payload of the file into a block of the card's memory and
 * keep what each frame's play needs: read once more, frame by frame. */
static int replay_hold(struct sim_replay *rp)
{
	const struct ga_mem_ops *mem = rp->s->dev->mem;
	void *ctx = rp->s->dev->mem_ctx;
	struct ga_rec_reader *r = NULL;
	struct ga_rec_frame f;
	uint64_t k = 0, off = 0, first_ns = 0;
	int ret = hold_wanted(rp, mem);
	/* Whole GPU pages, as every block of the card's memory. */
	size_t size =
		(rp->payload_bytes + GA_GPU_PAGE_SIZE - 1) / GA_GPU_PAGE_SIZE * GA_GPU_PAGE_SIZE;

	if (ret <= 0)
		return ret;
	rp->hf = calloc(rp->file_frames, sizeof(*rp->hf));
	if (!rp->hf)
		return ga_err(-ENOMEM, "sim replay: no memory for the table of %llu frames",
			      (unsigned long long)rp->file_frames);
	ret = mem->alloc(ctx, size, &rp->block);
	if (ret < 0 && rp->cfg.hold != GA_SIM_REPLAY_HOLD_ON) {
		/* auto: the file plays from itself instead */
		ga_log("sim replay: %s: not held (%zu bytes of the card's memory: %s)", rp->path,
		       size, ga_last_error());
		free(rp->hf);
		rp->hf = NULL;
		return 0;
	}
	if (ret < 0) {
		ret = ga_err(ret, "sim replay: hold=1: %zu bytes of the card's memory: %s", size,
			     ga_last_error());
		goto fail;
	}
	rp->held = true;
	ret = ga_rec_open(rp->path, &r, NULL);
	while (ret >= 0 && (ret = ga_rec_next(r, &f)) > 0 && k < rp->file_frames) {
		struct rp_held *h = &rp->hf[k++];

		if (k == 1)
			first_ns = f.monotonic_ns;
		h->off = off;
		h->rel = f.monotonic_ns - first_ns;
		h->len = f.payload_bytes;
		h->th_off = f.th_off;
		h->timing = f.flags & GA_REC_F_TIMING;
		memcpy(h->desc, f.desc, 8);
		if (h->timing && f.th_off + GA_TIMING_HDR_BYTES <= f.payload_bytes)
			memcpy(h->th, f.payload + f.th_off, GA_TIMING_HDR_BYTES);
		else
			h->timing = false;
		/* Queued copies take the bytes before the call returns. */
		ret = mem->write_async ? mem->write_async(ctx, &rp->block, off, f.payload, h->len)
				       : mem->write(ctx, &rp->block, off, f.payload, h->len);
		off += (h->len + HOLD_ALIGN - 1) / HOLD_ALIGN * HOLD_ALIGN;
	}
	ga_rec_close(r);
	if (!ret && k != rp->file_frames)
		ret = ga_err(-EBADMSG, "%s: changed since it was checked", rp->path);
	if (!ret && mem->write_async && mem->sync)
		ret = mem->sync(ctx);
	if (!ret)
		return 0;
fail:
	replay_unhold(rp);
	return ret;
}

static int get_sim_dev(struct ga_dev *dev, struct sim **s)
{
	*s = sim_of(dev);
	if (!*s)
		return ga_err(-ENOTSUP, "not a simulated device: replay does not apply");
	return 0;
}

/* The card's input is taken: the generator runs, or a replay that has
 * not ended plays.  s->lock held. */
static bool input_busy(const struct sim *s)
{
	return s->gen.running && !(s->replay && s->replay->ended);
}

/* What ga_sim_replay_check and ga_sim_replay_start refuse before the file
 * is read: not a sim, no file or a path too long, a rate above 1e9, the
 * card's input busy (start asks again as it puts the replay on). */
static int replay_refused(struct ga_dev *dev, const struct ga_sim_replay *cfg, struct sim **s)
{
	int ret = get_sim_dev(dev, s);
	bool busy;

	if (ret)
		return ret;
	if (!cfg || !cfg->path || !cfg->path[0])
		return ga_err(-EINVAL, "sim replay: no file");
	if (strlen(cfg->path) >= REPLAY_PATH_MAX)
		return ga_err(-ENAMETOOLONG, "sim replay: the path is too long");
	if (cfg->rate_hz != GA_SIM_REPLAY_MAX && cfg->rate_hz > NSEC_PER_SEC_U64)
		return ga_err(-ERANGE, "sim replay: rate %llu above 1e9 frames per second",
			      (unsigned long long)cfg->rate_hz);
	sim_lock(*s);
	busy = input_busy(*s);
	pthread_mutex_unlock(&(*s)->lock);
	if (busy)
		return ga_err(-EBUSY, "sim replay: the card's input is busy (a replay plays, or "
				      "the generator runs: sim running 0 first)");
	return 0;
}

int ga_sim_replay_check(struct ga_dev *dev, const struct ga_sim_replay *cfg)
{
	struct sim_replay rp = {0};
	struct sim *s = NULL;
	int ret = replay_refused(dev, cfg, &s);

	if (ret)
		return ret;
	snprintf(rp.path, sizeof(rp.path), "%s", cfg->path);
	return replay_check(&rp);
}

int ga_sim_replay_start(struct ga_dev *dev, const struct ga_sim_replay *cfg)
{
	struct sim_replay *rp, *old = NULL;
	struct sim *s = NULL;
	int ret = replay_refused(dev, cfg, &s); /* busy is said before the file is read */

	if (ret)
		return ret;
	rp = calloc(1, sizeof(*rp));
	if (!rp)
		return -ENOMEM;
	rp->s = s;
	rp->cfg = *cfg;
	snprintf(rp->path, sizeof(rp->path), "%s", cfg->path);
	rp->cfg.path = rp->path;
	if (!rp->cfg.queue_bytes)
		rp->cfg.queue_bytes = REPLAY_QUEUE_DEFAULT;
	/* Before anything reaches the card: a bad file plays not one frame. */
	ret = replay_check(rp);
	if (ret >= 0)
		ret = replay_hold(rp);
	if (ret < 0)
		goto fail;
	pthread_mutex_init(&rp->mx, NULL);
	pthread_cond_init(&rp->cv, NULL);
	sim_lock(s);
	if (input_busy(s)) {
		ret = ga_err(-EBUSY, s->replay ? "sim replay: a replay is playing (stop it first)"
					       : "sim replay: the generator is running (sim "
						 "running 0 first)");
		goto fail_locked;
	}
	ret = -pthread_create(&rp->thread, NULL, reader_main, rp);
	if (ret < 0) {
		ret = ga_err(ret, "sim replay: no reader thread");
		goto fail_locked;
	}
	old = s->replay;
	s->replay = rp;
	s->gen.running = true;
	s->gen.remaining = 0;
	s->gen.rate_hz = cfg->rate_hz == GA_SIM_REPLAY_MAX ? 0 : cfg->rate_hz;
	s->gen_t0 = ga_mono_ns();
	s->gen_n = 0;
	ga_simdev_kick(s);
	pthread_mutex_unlock(&s->lock);
	replay_free(old); /* the one that had ended */
	return 0;

fail_locked:
	pthread_mutex_unlock(&s->lock);
	pthread_cond_destroy(&rp->cv);
	pthread_mutex_destroy(&rp->mx);
fail:
	replay_unhold(rp);
	free(rp);
	return ret;
}

int ga_sim_replay_stop(struct ga_dev *dev)
{
	struct sim_replay *rp;
	struct sim *s = NULL;
	int ret = get_sim_dev(dev, &s);

	if (ret)
		return ret;
	sim_lock(s);
	rp = s->replay;
	s->replay = NULL;
	if (rp) {
		s->gen.running = false;
		s->gen.rate_hz = 0;
		ga_simdev_stall_end(s, ga_mono_ns());
	}
	pthread_mutex_unlock(&s->lock);
	replay_free(rp);
	return 0;
}

int ga_sim_replay_status(struct ga_dev *dev, struct ga_sim_replay_status *st)
{
	struct sim_replay *rp;
	struct sim *s = NULL;
	int ret = get_sim_dev(dev, &s);

	if (ret)
		return ret;
	memset(st, 0, sizeof(*st));
	sim_lock(s);
	rp = s->replay;
	if (rp) {
		pthread_mutex_lock(&rp->mx);
		st->running = !rp->ended;
		st->failed = rp->failed;
		st->frames = rp->frames;
		st->plays = rp->plays;
		st->file_frames = rp->file_frames;
		st->queued_bytes = rp->queued;
		st->queued_most = rp->queued_most;
		st->queue_max = rp->cfg.queue_bytes;
		st->held = rp->held;
		st->held_bytes = rp->held ? rp->payload_bytes : 0;
		snprintf(st->path, sizeof(st->path), "%s", rp->path);
		snprintf(st->error, sizeof(st->error), "%s", rp->error);
		pthread_mutex_unlock(&rp->mx);
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int sim_replay_gen_set(struct sim *s, struct sim_replay **ended)
{
	*ended = NULL;
	if (!s->replay)
		return 0;
	if (!s->replay->ended)
		return ga_err(-EBUSY, "sim: a replay is playing (sim/replay: stop it first)");
	*ended = s->replay; /* its status goes with it */
	s->replay = NULL;
	return 0;
}

void sim_replay_release(struct sim_replay *rp)
{
	replay_free(rp);
}

void sim_replay_close(struct sim *s)
{
	struct sim_replay *rp;

	sim_lock(s);
	rp = s->replay;
	s->replay = NULL;
	pthread_mutex_unlock(&s->lock);
	replay_free(rp);
}
