// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated card's card half: the thread that runs the firmware model
 * (core/ga_model.c) over the shared register block, the model's
 * environment (DMA into registered buffers through the memory layer, the
 * clock, frames leaving the card) and the frame generator.
 *
 * The thread polls the register block (arms and read requests stored by
 * other processes are noticed there), runs the generator when frames are
 * due and sleeps until the next poll or a ga_simdev_kick(); docs/sim.md
 * gives the intervals.  Everything here runs with s->lock held, except
 * where a wait releases it.
 *
 * Only sim.c calls into this file; it calls sim_replay.c (a recorded
 * run's frames) and the core (sim_core.c: wake-ups, statistics).
 */
#include <errno.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <string.h>

#include "sim_core.h"

/* ---- the model's environment (called with s->lock held) ----------------- */

/* The registered block a DMA of @len bytes at @bus falls in, or NULL. */
static struct sim_block *bus_resolve(struct sim *s, uint64_t bus, uint32_t len, size_t *off)
{
	enum ga_dir dir;
	unsigned int index;
	struct sim_block *b;
	uint64_t o;

	if ((bus & SIM_BUS_TAG_MASK) != SIM_BUS_TAG)
		return NULL;
	dir = ((bus >> SIM_BUS_DIR_SHIFT) & 1) ? GA_DIR_WRITE : GA_DIR_READ;
	index = (bus >> SIM_BUS_INDEX_SHIFT) & SIM_BUS_INDEX_MASK;
	if (index >= s->nbuf[dir])
		return NULL;
	b = &s->blocks[dir][index];
	o = bus & SIM_BUS_OFF_MASK;
	if (!b->used || b->gen != ((bus >> SIM_BUS_GEN_SHIFT) & SIM_BUS_GEN_MASK) ||
	    o + len > b->blk.size)
		return NULL;
	*off = (size_t)o;
	return b;
}

/* The block a model DMA of @len bytes at @bus reaches, or NULL (no memory
 * layer, or an address no buffer of ours holds: the card's AXI error). */
static struct sim_block *env_block(struct sim *s, uint64_t bus, uint32_t len, size_t *off)
{
	return s->dev->mem ? bus_resolve(s, bus, len, off) : NULL;
}

/* Write descriptor @desc at @off of @blk now: one queued 8-byte write
 * where the memory layer queues (CUDA: the card's one 64-bit write), else
 * word 0, a barrier, then the size doorbell, as the model itself would. */
static int desc_write(struct sim *s, const struct ga_mem_block *blk, size_t off,
		      const uint8_t desc[GA_HDR_BYTES])
{
	const struct ga_mem_ops *mem = s->dev->mem;
	int rc;

	if (s->desc_hold && mem->write_defer)
		return mem->write_defer(s->dev->mem_ctx, blk, off, desc, GA_HDR_BYTES);
	if (mem->write_async)
		return mem->write_async(s->dev->mem_ctx, blk, off, desc, GA_HDR_BYTES);
	rc = mem->write(s->dev->mem_ctx, blk, off + GA_HDR_FLAGS_OFFSET, desc + GA_HDR_FLAGS_OFFSET,
			4);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!rc)
		rc = mem->write(s->dev->mem_ctx, blk, off + GA_HDR_SIZE_OFFSET,
				desc + GA_HDR_SIZE_OFFSET, 4);
	return rc;
}

/* Send the held-back descriptor, if any (see struct sim).  Its frame was
 * counted when the model wrote it; a memory layer failing now (CUDA gone
 * wrong) is logged, as the model can no longer report it. */
static void desc_flush(struct sim *s)
{
	int rc;

	if (!s->desc_pending)
		return;
	s->desc_pending = false;
	rc = desc_write(s, &s->desc_blk, s->desc_off, s->desc);
	if (rc)
		ga_log("sim: descriptor write at 0x%llx failed (%d)",
		       (unsigned long long)s->desc_bus, rc);
}

static int env_dma_write(void *ctx, uint64_t bus, const void *src, uint32_t len)
{
	struct sim *s = ctx;
	const struct ga_mem_ops *mem = s->dev->mem;
	size_t off;
	struct sim_block *b = env_block(s, bus, len, &off);

	if (!b)
		return -EFAULT;
	desc_flush(s); /* DMA lands in the order the model wrote it */
	/* In a burst the copy joins the memory layer's batch, which sends
	 * payloads before descriptors (internal.h, write_defer). */
	if (s->desc_hold && mem->write_defer) {
		int rc;

		sim_phase(s, "burst: memory layer, copy");
		rc = mem->write_defer(s->dev->mem_ctx, &b->blk, off, src, len);
		sim_phase(s, "burst");
		return rc;
	}
	/* Queued copies land in order (payload before header), see internal.h. */
	if (mem->write_async)
		return mem->write_async(s->dev->mem_ctx, &b->blk, off, src, len);
	return mem->write(s->dev->mem_ctx, &b->blk, off, src, len);
}

/*
 * The descriptor as one write (see desc_write).  During a generator burst
 * it is held back: a descriptor to the same address that comes next
 * replaces it unsent.  Only dropped frames do that (each writes its header
 * to write address 0; a delivered frame's next DMA is its successor's
 * payload, which sends it first), and it is what software can observe of
 * a run of drops anyway: the header of the last, at write address 0.
 */
static int env_dma_write_desc(void *ctx, uint64_t bus, const uint8_t desc[GA_HDR_BYTES])
{
	struct sim *s = ctx;
	size_t off;
	struct sim_block *b;

	if (!s->dev->mem || (bus & 7))
		return 1; /* the model writes it in two words through env_dma_write */
	b = env_block(s, bus, GA_HDR_BYTES, &off);
	if (!b)
		return -EFAULT;
	if (s->desc_pending && s->desc_bus != bus)
		desc_flush(s);
	if (!s->desc_hold)
		return desc_write(s, &b->blk, off, desc);
	s->desc_pending = true;
	s->desc_bus = bus;
	s->desc_blk = b->blk;
	s->desc_off = off;
	memcpy(s->desc, desc, GA_HDR_BYTES);
	return 0;
}

static void gen_fill(void *ctx, void *dst, uint32_t len);

/* A replayed frame from the replay's held copy: the memory layer copies
 * it where the memory is, then a live replay's TimingHeader goes over it. */
static int replay_held_write(struct sim *s, uint64_t bus, struct sim_block *b, size_t off,
			     uint32_t len, const struct ga_mem_block *held, uint64_t src_off,
			     uint32_t th_off, const uint8_t *th)
{
	int rc;

	sim_phase(s, "burst: memory layer, held replay copy");
	rc = s->dev->mem->write_from(s->dev->mem_ctx, &b->blk, off, held, src_off, len);
	sim_phase(s, "burst");
	if (!rc && th_off != UINT32_MAX && th_off + GA_TIMING_HDR_BYTES <= len)
		rc = env_dma_write(s, bus + th_off, th, GA_TIMING_HDR_BYTES);
	return rc;
}

/* A frame's payload made by the memory layer where it can instead of on
 * this CPU: a generated pattern (CUDA: on the GPU, in the burst's batch),
 * or a replayed frame from the replay's held copy. */
static int env_dma_write_fill(void *ctx, uint64_t bus, uint32_t len,
			      void (*fill)(void *, void *, uint32_t), void *fill_ctx)
{
	struct sim *s = ctx;
	const struct ga_mem_ops *mem = s->dev->mem;
	const struct ga_mem_block *held = NULL;
	uint8_t th[GA_TIMING_HDR_BYTES];
	uint32_t th_off = UINT32_MAX;
	uint64_t src_off = 0;
	struct sim_block *b;
	size_t off;
	int rc;

	if (fill == sim_replay_fill && fill_ctx == s)
		held = sim_replay_held(s, &src_off, &th_off, th);
	if (!held &&
	    (!s->desc_hold || !mem || !mem->write_pattern || fill != gen_fill || fill_ctx != s))
		return 1;
	b = env_block(s, bus, len, &off);
	if (!b)
		return -EFAULT;
	desc_flush(s);
	if (held)
		return replay_held_write(s, bus, b, off, len, held, src_off, th_off, th);
	sim_phase(s, "burst: memory layer, pattern");
	rc = mem->write_pattern(s->dev->mem_ctx, &b->blk, off, s->gen.pattern, s->gen_seq, len);
	sim_phase(s, "burst");
	return rc;
}

static int env_dma_read(void *ctx, uint64_t bus, void *dst, uint32_t len)
{
	struct sim *s = ctx;
	size_t off;
	struct sim_block *b = env_block(s, bus, len, &off);

	if (!b)
		return -EFAULT;
	desc_flush(s);
	return s->dev->mem->read(s->dev->mem_ctx, &b->blk, off, dst, len);
}

static uint64_t env_now(void *ctx)
{
	(void)ctx;
	return ga_mono_ns();
}

static void *env_scratch(void *ctx, uint32_t len)
{
	struct sim *s = ctx;
	void *p;

	if (len > s->scratch_len) {
		p = realloc(s->scratch, len);
		if (!p)
			return NULL;
		s->scratch = p;
		s->scratch_len = len;
	}
	return s->scratch;
}

static void env_frame_out(void *ctx, const void *data, uint32_t len)
{
	struct sim *s = ctx;

	if (len > s->last_read_cap) {
		void *p = realloc(s->last_read, len);

		if (!p) {
			s->last_read_len = 0;
			return;
		}
		s->last_read = p;
		s->last_read_cap = len;
	}
	memcpy(s->last_read, data, len);
	s->last_read_len = len;
	s->st.reads++;
	s->st.read_bytes += len;
	/* The CRC is computed when someone asks (ga_sim_stats): at PCIe
	 * rates a CRC of every frame would be most of the read path's cost. */
	s->crc_dirty = true;
}

void ga_simdev_env(struct sim *s, struct ga_model_env *env)
{
	memset(env, 0, sizeof(*env));
	env->ctx = s;
	env->dma_write = env_dma_write;
	env->dma_read = env_dma_read;
	env->now_ns = env_now;
	env->frame_out = env_frame_out;
	env->scratch = env_scratch;
	env->dma_write_desc = env_dma_write_desc;
	env->dma_write_fill = env_dma_write_fill;
}

/* ---- the model thread ----------------------------------------------------- */

/* The card thread's own lock and unlock: with GPUASYNC_LOG, a long hold
 * is logged with what the thread was doing. */

static void card_lock(struct sim *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->log_waits)
		s->held_since = ga_mono_ns();
}

static void card_held(struct sim *s)
{
	if (s->log_waits && ga_mono_ns() - s->held_since > 300000)
		ga_log("sim: card thread held the model lock %llu us (%s)",
		       (unsigned long long)((ga_mono_ns() - s->held_since) / 1000),
		       __atomic_load_n(&s->phase, __ATOMIC_RELAXED));
}

static void card_unlock(struct sim *s)
{
	card_held(s);
	pthread_mutex_unlock(&s->lock);
}

static void gen_fill(void *ctx, void *dst, uint32_t len)
{
	struct sim *s = ctx;

	if (ga_pattern_batched(s->gen.pattern))
		ga_pattern_fill_batch(s->gen.pattern, s->gen_seq, s->gen_fault, s->gen.size, dst,
				      len);
	else
		ga_pattern_fill(s->gen.pattern, s->gen_seq, dst, len);
}

/* The batch error the next frame of a batched pattern carries (injected
 * with ga_sim_inject), and its length: a frame cut short is 8 bytes. */
static uint32_t gen_batch_fault(struct sim *s)
{
	s->gen_fault = GA_BATCH_OK;
	if (!ga_pattern_batched(s->gen.pattern))
		return s->gen.size;
	for (int i = 0; i < 4; i++)
		if (s->batch_fault[i]) {
			s->gen_fault = GA_BATCH_TOO_SHORT + i;
			break;
		}
	return s->gen_fault == GA_BATCH_TOO_SHORT ? 8 : s->gen.size;
}

static uint64_t gen_due(const struct sim *s)
{
	return s->gen_t0 + s->gen_n * NSEC_PER_SEC_U64 / s->gen.rate_hz;
}

static void zero_block_free(struct sim *s, void *p)
{
	const struct ga_mem_ops *mem = s->dev->mem;

	if (p && s->zero_pinned)
		mem->host_free(s->dev->mem_ctx, p);
	else
		free(p);
}

void ga_simdev_zero_frame_free(struct sim *s)
{
	zero_block_free(s, s->zero_frame);
	for (unsigned int i = 0; i < s->nzero_old; i++)
		zero_block_free(s, s->zero_old[i]);
	s->zero_frame = NULL;
	s->zero_len = 0;
	s->nzero_old = 0;
}

/*
 * The payload of every generated frame when it does not depend on the
 * frame number (the zero pattern), else NULL.  Generating it per frame
 * would cost a CPU pass over every byte, which at PCIe rates is the whole
 * budget; the frame is immutable, so the memory layer may copy from it
 * asynchronously.  When the size grows a larger one replaces it (at least
 * doubling, so that is rare) and the old one is kept until close, since
 * copies from it may still be queued.
 */
static const void *gen_const_frame(struct sim *s)
{
	const struct ga_mem_ops *mem = s->dev->mem;
	size_t len;
	void *p = NULL;

	if (s->gen.pattern != GA_PATTERN_ZERO)
		return NULL;
	if (s->zero_frame && s->zero_len >= s->gen.size)
		return s->zero_frame;
	if (s->zero_frame && s->nzero_old == sizeof(s->zero_old) / sizeof(s->zero_old[0]))
		return NULL; /* grown too often: generate instead */
	len = s->zero_len * 2 > (1u << 20) ? s->zero_len * 2 : (1u << 20);
	if (len < s->gen.size)
		len = s->gen.size;
	if (!s->zero_frame)
		s->zero_pinned = mem && mem->host_alloc;
	if (s->zero_pinned) {
		if (mem->host_alloc(s->dev->mem_ctx, len, &p))
			p = NULL;
		else
			memset(p, 0, len);
	} else {
		p = calloc(1, len);
	}
	if (!p)
		return NULL; /* the fill path still works */
	if (s->zero_frame)
		s->zero_old[s->nzero_old++] = s->zero_frame;
	s->zero_frame = p;
	s->zero_len = len;
	return p;
}

/*
 * Could the next frame go to the memory layer without waiting for the GPU
 * (write_room)?  A frame that would wait ends the burst: the thread waits
 * with the model lock released (ga_simdev_thread), so no control call ever
 * waits behind the GPU's queue.
 */
static bool gen_room(struct sim *s, size_t bytes, bool batch)
{
	const struct ga_mem_ops *mem = s->dev->mem;

	if (!mem || !mem->write_room)
		return true;
	s->room_bytes = bytes;
	s->room_batch = batch;
	sim_phase(s, "burst: memory layer, room");
	if (mem->write_room(s->dev->mem_ctx, bytes, batch, false)) {
		sim_phase(s, "burst");
		return true;
	}
	sim_phase(s, "burst");
	s->room_wait = true;
	return false;
}

/* Send the frames that are due.  A frame that meets backpressure stays
 * the next frame (same number) until a buffer is armed. */
static void gen_run(struct sim *s)
{
	const struct ga_mem_ops *mem = s->dev->mem;
	unsigned int burst;
	uint64_t t = ga_mono_ns(), bytes = 0;
	unsigned int most = SIM_GEN_BURST;
	const void *frame;

	/* With deferred writes (CUDA), one pass of the ring at most: a second
	 * write to a buffer would make the memory layer send the batch there,
	 * under the model lock, while a control call waits for it. */
	if (mem && mem->write_defer && s->model.write_count + 1 < most)
		most = s->model.write_count + 1; /* the count field is buffers - 1 */
	/* Frames that will be dropped write one header per burst, and nothing
	 * (no ring of armed buffers) bounds how many bursts a fast generator
	 * makes: each waits until the GPU's queue has room for its batch. */
	if (s->gen.running && !(s->model.write_enabled && ga_model_write_ready(&s->model)) &&
	    !gen_room(s, 0, true))
		return;
	s->desc_hold = true;
	for (burst = 0;
	     s->gen.running && burst < most && bytes < SIM_GEN_BURST_BYTES && !sim_lock_wanted(s);
	     burst++) {
		enum ga_model_push r;
		uint32_t size;
		uint8_t replay_fu = 0, replay_lu = 0;
		bool dup = false;
		int replay_rc = 0;

		if (s->gen.rate_hz && gen_due(s) > t)
			break;
		if (s->replay) {
			/* A recorded frame, as it was (sim_replay.c), when due. */
			replay_rc = sim_replay_next(s, t, &size, &replay_fu, &replay_lu);
			if (replay_rc < 0)
				s->gen.running = false; /* the replay has ended */
			if (replay_rc <= 0)
				break;
			frame = NULL;
			s->gen_fault = GA_BATCH_OK;
		} else {
			/* Injected pulse-ID faults (ga_sim_inject) number this frame;
			 * a frame that waits for a buffer keeps the number. */
			dup = s->seq_dup && s->gen_sent;
			if (dup) {
				s->gen_seq = s->gen_last;
			} else if (s->seq_gap) {
				s->gen_seq += s->seq_gap;
				s->seq_gap = 0;
			}
			frame = gen_const_frame(s);
			size = gen_batch_fault(s);
		}
		if (s->model.write_enabled && ga_model_write_ready(&s->model) &&
		    !gen_room(s, frame && s->zero_pinned ? 0 : size, false))
			break;
		uint64_t tf = s->log_waits ? ga_mono_ns() : 0;

		if (s->replay)
			r = ga_model_push_fill(&s->model, size, replay_fu, replay_lu,
					       sim_replay_fill, s);
		else if (frame)
			r = ga_model_push(&s->model, frame, size, s->gen.first_user,
					  s->gen.last_user);
		else
			r = ga_model_push_fill(&s->model, size, s->gen.first_user, s->gen.last_user,
					       gen_fill, s);
		if (tf && ga_mono_ns() - tf > 300000)
			ga_log("sim: one frame took %llu us in the model (burst frame %u)",
			       (unsigned long long)((ga_mono_ns() - tf) / 1000), burst);
		if (r == GA_PUSH_NO_BUFFER) {
			ga_simdev_stall_begin(s, t);
			break;
		}
		ga_simdev_stall_end(s, ga_mono_ns());
		ga_simdev_account(s, r, true);
		bytes += size;
		if (s->replay)
			sim_replay_sent(s);
		if (s->gen_fault)
			s->batch_fault[s->gen_fault - GA_BATCH_TOO_SHORT]--;
		s->gen_last = s->gen_seq;
		s->gen_sent = true;
		if (dup)
			s->seq_dup--;
		s->gen_seq++;
		/* Keep the schedule's numbers small: move t0 a second on. */
		if (++s->gen_n == s->gen.rate_hz) {
			s->gen_t0 += NSEC_PER_SEC_U64;
			s->gen_n = 0;
		}
		if (s->gen.remaining && --s->gen.remaining == 0)
			s->gen.running = false;
		/* Far behind (a long stall): restart the schedule, no burst. */
		if (s->gen.rate_hz && t > gen_due(s) + NSEC_PER_SEC_U64) {
			s->gen_t0 = t;
			s->gen_n = 0;
		}
	}
	desc_flush(s);
	s->desc_hold = false;
	if (s->log_waits && ga_mono_ns() - t > 300000)
		ga_log("sim: a burst of %u frames took %llu us", burst,
		       (unsigned long long)((ga_mono_ns() - t) / 1000));
	/* Sent by the thread with the model lock released (send_burst): the
	 * submission is the slow part, and control calls need only the model. */
	s->send_burst = mem && mem->write_flush;
}

/*
 * Send the burst's writes to the GPU without the model lock.  The memory
 * layer keeps its own order (a read, sync or free sends what waits first).
 * Prerequisite: s->lock held; it is dropped and taken again.
 */
static void send_burst(struct sim *s)
{
	const struct ga_mem_ops *mem = s->dev->mem;

	s->send_burst = false;
	card_unlock(s);
	if (mem->write_flush(s->dev->mem_ctx))
		ga_log("sim: sending the burst's writes failed");
	card_lock(s);
}

static uint64_t next_wake(struct sim *s)
{
	uint64_t t = ga_mono_ns();
	bool busy = s->nbuf[0] || s->nbuf[1] || s->gen.running || s->model.read_queue;
	uint64_t w = t + (!busy				? SIM_POLL_IDLE_NS
			  : s->quiet >= SIM_QUIET_POLLS ? SIM_POLL_QUIET_NS
							: SIM_POLL_BUSY_NS);

	if (s->gen.running && !s->stalled && s->replay && !s->gen.rate_hz) {
		uint64_t due = sim_replay_due(s); /* the recorded timing, or data to come */

		return due < w ? due : w;
	}
	if (s->gen.running && !s->stalled) {
		if (!s->gen.rate_hz)
			return t; /* as fast as possible */
		if (gen_due(s) < w)
			w = gen_due(s);
	}
	return w;
}

/*
 * A stalled generator waits for the next buffer in the ring to be armed.
 * Every arm made through the library (ga_buf_arm, a free-list register
 * write) kicks s->wake, so the thread sleeps until then.  A consumer on
 * the GPU or in another process arms with a plain store into the shared
 * register block, which nothing announces: for those the thread also looks
 * at the free-list word after s->arm_poll_ns, which doubles up to
 * SIM_ARM_POLL_MAX_NS while nothing comes and drops back to the minimum
 * when a look finds an arm.  So a stall costs a few wake-ups a millisecond
 * at most, and a consumer arming through shared memory at full rate keeps
 * the short interval.  Returns with s->lock held (prerequisite too); the
 * caller polls the model next.
 */
static void wait_for_arm(struct sim *s)
{
	unsigned int i = s->model.write_index;
	volatile uint32_t *word = &s->regs[(s->model.free_base + i * s->model.free_stride) / 4];
	struct timespec ts = sim_abs_ts(ga_mono_ns() + s->arm_poll_ns);
	bool armed;

	s->kicked = false;
	card_held(s);
	pthread_cond_timedwait(&s->wake, &s->lock, &ts);
	s->held_since = ga_mono_ns();
	if (s->kicked || s->stop)
		return; /* told: an arm through the library, or anything else */
	armed = __atomic_load_n(word, __ATOMIC_ACQUIRE) != 0;
	if (armed)
		s->arm_poll_ns = SIM_ARM_POLL_MIN_NS;
	else if (s->arm_poll_ns < SIM_ARM_POLL_MAX_NS)
		s->arm_poll_ns = s->arm_poll_ns * 2 < SIM_ARM_POLL_MAX_NS ? s->arm_poll_ns * 2
									  : SIM_ARM_POLL_MAX_NS;
}

void *ga_simdev_thread(void *arg)
{
	struct sim *s = arg;

	/* The default 50 us of timer slack would stretch the short looks for
	 * an arm (wait_for_arm) far past their interval. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	card_lock(s);
	while (!s->stop) {
		uint32_t ev = s->model.events;
		uint64_t w;

		sim_phase(s, "poll");
		ga_model_poll(&s->model);
		sim_phase(s, "burst");
		gen_run(s);
		s->quiet = (s->model.events == ev && !s->gen.running) ? s->quiet + 1 : 0;
		sim_phase(s, "kick");
		ga_simdev_kick(s);
		sim_phase(s, "send (lock free)");
		if (s->send_burst)
			send_burst(s);
		sim_phase(s, "room");
		if (s->room_wait) {
			/* The GPU's queue is full: wait for it without the lock. */
			s->room_wait = false;
			card_unlock(s);
			s->dev->mem->write_room(s->dev->mem_ctx, s->room_bytes, s->room_batch,
						true);
			card_lock(s);
			continue;
		}
		sim_phase(s, "stalled: wait for an arm");
		if (s->gen.running && s->stalled) {
			wait_for_arm(s);
			continue;
		}
		sim_phase(s, "yield/sleep");
		w = next_wake(s);
		if (w <= ga_mono_ns()) {
			/* Full speed: let API callers in between bursts, and wait
			 * until those waiting have had the lock (sim_lock). */
			uint64_t end = ga_mono_ns() + SIM_YIELD_MAX_NS;

			card_unlock(s);
			do
				sched_yield();
			while (sim_lock_wanted(s) && ga_mono_ns() < end);
			card_lock(s);
		} else {
			struct timespec ts = sim_abs_ts(w);

			card_held(s);
			pthread_cond_timedwait(&s->wake, &s->lock, &ts);
			s->held_since = ga_mono_ns();
		}
	}
	card_unlock(s);
	return NULL;
}
