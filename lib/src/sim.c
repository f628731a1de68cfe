// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated GpuAsyncCore card: ga_backend_sim and gpuasync/sim.h.
 *
 *   struct ga_dev *dev;
 *   ga_dev_open("sim:version=4,max_buffers=8,dma_data_bytes=32", &dev);
 *   ga_buf_create(dev, GA_DIR_WRITE, 0, 65536, &buf);   // add_buffer
 *   ga_buf_arm(buf); ga_dev_enable(dev, GA_DIR_WRITE, true);
 *   ga_sim_gen_set(dev, &(struct ga_sim_gen){.running = true, .size = 4096, ...});
 *
 * The sim plays two parts.  As the *driver* (add_buffer, remove_all, arm,
 * enable) it does what the upstream pre-release datadev driver does:
 * indices in call order, sizes in 64 KiB multiples, address/size registers
 * programmed, counts written to 0x08 with the engines left off.  As the
 * *card* it runs the firmware model (lib/model/ga_model.c) in a thread
 * that polls the register block, runs the frame generator and services
 * the read engine.
 *
 * The register block is a POSIX shared-memory file (/dev/shm/NAME,
 * GA_CORE_SIZE bytes, unlinked on close), so another process can map it
 * and arm buffers or queue reads by plain stores, as a CUDA consumer does
 * on hardware.  The model notices those stores at its next poll.
 *
 * Bus addresses: each registered buffer gets a fake bus address that
 * encodes direction, index and a generation number, so a DMA resolves to
 * its buffer in O(1) and a stale address (a buffer removed and re-added)
 * resolves to nothing, which the model reports as an AXI error.  DMA goes
 * through the memory layer (dev->mem): host memory, or CUDA memory.
 *
 * Locking: dev->lock (held by dev.c around backend ops) comes before
 * s->lock, the model lock, which guards everything in struct sim below
 * it.  The sim thread and the ga_sim_* calls take only s->lock, so they
 * never wait for dev->lock; the memory layer takes no library lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ga_model.h"
#include "gpuasync/parse.h"
#include "gpuasync/sim.h"
#include "internal.h"

/* Fake bus addresses: 0xDEAD | gen(5) | dir(1) | index(10) | offset(32). */
#define SIM_BUS_TAG	    0xDEAD000000000000ull
#define SIM_BUS_TAG_MASK    0xFFFF000000000000ull
#define SIM_BUS_GEN_SHIFT   43
#define SIM_BUS_GEN_MASK    0x1Fu
#define SIM_BUS_DIR_SHIFT   42
#define SIM_BUS_INDEX_SHIFT 32
#define SIM_BUS_INDEX_MASK  0x3FFu
#define SIM_BUS_OFF_MASK    0xFFFFFFFFull

/* Poll intervals of the model thread. */
#define SIM_POLL_BUSY_NS    200000ull  /* buffers registered, recent activity */
#define SIM_POLL_QUIET_NS   2000000ull /* buffers registered, quiet for a while */
#define SIM_POLL_IDLE_NS    5000000ull /* nothing registered, generator off */
#define SIM_QUIET_POLLS	    500	       /* polls without activity before "quiet" */
#define SIM_SPIN_NS	    1000000ull /* a stalled generator watches for an arm this long */
#define SIM_GEN_BURST	    256	       /* frames per loop before polling again */
#define SIM_GEN_BURST_BYTES (8u << 20) /* ... or this many payload bytes */
#define SIM_MAX_FRAME	    (1u << 30)

#define NSEC_PER_SEC_U64 1000000000ull

struct sim_block {
	bool used;
	uint8_t gen;
	uint32_t size; /* bytes registered */
	struct ga_mem_block blk;
};

struct sim {
	struct ga_dev *dev;
	/* identity (fixed after open) */
	unsigned int version, max_buffers, ddb;
	uint64_t clock_hz;
	bool legacy;
	enum ga_layout layout;
	char shm_name[128];
	int shm_fd;
	volatile uint32_t *regs;
	pthread_t thread;
	bool thread_started;

	/* The model lock: guards everything below.  Taken after dev->lock. */
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* the thread: state changed, look again */
	pthread_cond_t changed; /* pushers: the model took an arm or a read */
	bool stop;
	struct ga_model model;
	uint32_t seen_events;
	unsigned int quiet; /* thread polls in a row that changed nothing */
	struct sim_block blocks[2][GA_MAX_BUFFERS];
	unsigned int nbuf[2];
	uint8_t next_gen;
	/* frame generator */
	struct ga_sim_gen gen;
	uint32_t gen_seq;	/* frame number of the frame waiting to go */
	uint64_t gen_t0, gen_n; /* rate schedule: frame gen_n is due at t0 + n/rate */
	bool stalled;
	uint64_t stall_t0;
	struct ga_sim_stats st;
	/* host memory the model borrows (env.scratch) */
	void *scratch;
	size_t scratch_len;
	/* The zero pattern's frame, filled once and pushed as it is: pinned
	 * host memory from the memory layer where it has some (the copy to
	 * the GPU then needs no CPU pass at all), else plain memory. */
	void *zero_frame;
	size_t zero_len;
	bool zero_pinned;
	/* Outgrown zero frames, freed at close: freeing pinned memory waits
	 * for the whole GPU, which may be waiting for our next frame. */
	void *zero_old[8];
	unsigned int nzero_old;
	uint8_t *last_read;
	uint32_t last_read_len;
	bool crc_dirty; /* st.last_read_crc not yet computed from last_read */
	size_t last_read_cap;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC_U64 + (uint64_t)ts.tv_nsec;
}

static struct timespec abs_ts(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / NSEC_PER_SEC_U64),
			      .tv_nsec = (long)(ns % NSEC_PER_SEC_U64)};

	return ts;
}

static struct sim *dev_sim(struct ga_dev *dev)
{
	return dev->priv;
}

/* ---- the model's environment (called with s->lock held) ----------------- */

static uint64_t bus_encode(enum ga_dir dir, unsigned int index, uint8_t gen)
{
	return SIM_BUS_TAG | ((uint64_t)(gen & SIM_BUS_GEN_MASK) << SIM_BUS_GEN_SHIFT) |
	       ((uint64_t)(dir == GA_DIR_WRITE) << SIM_BUS_DIR_SHIFT) |
	       ((uint64_t)index << SIM_BUS_INDEX_SHIFT);
}

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

static int env_dma_write(void *ctx, uint64_t bus, const void *src, uint32_t len)
{
	struct sim *s = ctx;
	const struct ga_mem_ops *mem = s->dev->mem;
	struct sim_block *b;
	size_t off;

	b = bus_resolve(s, bus, len, &off);
	if (!b || !mem)
		return -EFAULT;
	/* Queued copies land in order (payload before header), see internal.h. */
	if (mem->write_async)
		return mem->write_async(s->dev->mem_ctx, &b->blk, off, src, len);
	return mem->write(s->dev->mem_ctx, &b->blk, off, src, len);
}

/* The descriptor in one queued copy when the memory layer is a DMA engine
 * (CUDA): 8 aligned bytes land together, as the card's one 64-bit write
 * does, and it saves a copy per frame.  Host memory keeps the model's two
 * ordered stores (1 = not done here). */
static int env_dma_write_desc(void *ctx, uint64_t bus, uint32_t w0, uint32_t size)
{
	struct sim *s = ctx;
	const struct ga_mem_ops *mem = s->dev->mem;
	uint8_t d[8];

	if (!mem || !mem->write_async || (bus & 7))
		return 1;
	/* Little-endian, as the card writes it. */
	for (int i = 0; i < 4; i++) {
		d[i] = (uint8_t)(w0 >> (8 * i));
		d[4 + i] = (uint8_t)(size >> (8 * i));
	}
	return env_dma_write(ctx, bus, d, 8);
}

static int env_dma_read(void *ctx, uint64_t bus, void *dst, uint32_t len)
{
	struct sim *s = ctx;
	const struct ga_mem_ops *mem = s->dev->mem;
	struct sim_block *b;
	size_t off;

	b = bus_resolve(s, bus, len, &off);
	if (!b || !mem)
		return -EFAULT;
	return mem->read(s->dev->mem_ctx, &b->blk, off, dst, len);
}

static uint64_t env_now(void *ctx)
{
	(void)ctx;
	return mono_ns();
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

/* ---- helpers (s->lock held) ----------------------------------------------- */

static int sim_off(struct sim *s, enum ga_reg_id id, unsigned int index, uint32_t *off)
{
	return ga_reg_offset(id, s->layout, s->version, index, s->max_buffers, off);
}

/* Read-modify-write of one field through the model, as a driver would. */
static void field_write(struct sim *s, enum ga_reg_id id, unsigned int index, uint32_t val)
{
	uint32_t off;

	if (sim_off(s, id, index, &off))
		return;
	ga_model_reg_write(&s->model, off, ga_reg_field_set(id, s->layout, s->regs[off / 4], val));
}

/* Tell the thread to look again, and pushers if the model moved. */
static void kick(struct sim *s)
{
	if (s->model.events != s->seen_events) {
		s->seen_events = s->model.events;
		pthread_cond_broadcast(&s->changed);
	}
	pthread_cond_signal(&s->wake);
}

static void account(struct sim *s, enum ga_model_push r, bool generated)
{
	if (generated)
		s->st.generated++;
	if (r == GA_PUSH_DELIVERED) {
		s->st.delivered++;
		if (s->model.last.overflow)
			s->st.overflowed++;
	} else if (r == GA_PUSH_DROPPED || r == GA_PUSH_DIVERTED) {
		s->st.dropped++;
	}
}

static void stall_begin(struct sim *s, uint64_t t)
{
	if (!s->stalled) {
		s->stalled = true;
		s->stall_t0 = t;
	}
}

static void stall_end(struct sim *s, uint64_t t)
{
	if (s->stalled) {
		s->st.stalled_ns += t - s->stall_t0;
		s->stalled = false;
	}
}

/* ---- the model thread ----------------------------------------------------- */

static void gen_fill(void *ctx, void *dst, uint32_t len)
{
	struct sim *s = ctx;

	ga_pattern_fill(s->gen.pattern, s->gen_seq, dst, len);
}

static uint64_t gen_due(const struct sim *s)
{
	return s->gen_t0 + s->gen_n * NSEC_PER_SEC_U64 / s->gen.rate_hz;
}

/* Send the frames that are due.  A frame that meets backpressure stays
 * the next frame (same number) until a buffer is armed. */
static void zero_block_free(struct sim *s, void *p)
{
	const struct ga_mem_ops *mem = s->dev->mem;

	if (p && s->zero_pinned)
		mem->host_free(s->dev->mem_ctx, p);
	else
		free(p);
}

/* At close, after the thread stopped and before the memory layer closes. */
static void zero_frame_free(struct sim *s)
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

static void gen_run(struct sim *s)
{
	unsigned int burst;
	uint64_t t = mono_ns(), bytes = 0;
	const void *frame;

	for (burst = 0; s->gen.running && burst < SIM_GEN_BURST && bytes < SIM_GEN_BURST_BYTES;
	     burst++) {
		enum ga_model_push r;

		if (s->gen.rate_hz && gen_due(s) > t)
			break;
		frame = gen_const_frame(s);
		if (frame)
			r = ga_model_push(&s->model, frame, s->gen.size, s->gen.first_user,
					  s->gen.last_user);
		else
			r = ga_model_push_fill(&s->model, s->gen.size, s->gen.first_user,
					       s->gen.last_user, gen_fill, s);
		if (r == GA_PUSH_NO_BUFFER) {
			stall_begin(s, t);
			break;
		}
		stall_end(s, mono_ns());
		account(s, r, true);
		bytes += s->gen.size;
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
}

static uint64_t next_wake(struct sim *s)
{
	uint64_t t = mono_ns();
	bool busy = s->nbuf[0] || s->nbuf[1] || s->gen.running || s->model.read_queue;
	uint64_t w = t + (!busy				? SIM_POLL_IDLE_NS
			  : s->quiet >= SIM_QUIET_POLLS ? SIM_POLL_QUIET_NS
							: SIM_POLL_BUSY_NS);

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
 * A consumer on the GPU (or in another process) arms it with a plain store
 * into the shared register block, which nothing announces; sleeping a poll
 * interval would cap it at one ring of frames per interval.  So watch that
 * one free-list word, and the model's own flag for arms made through the
 * API, with the lock released, for up to SIM_SPIN_NS.  Returns true when
 * an arm showed up (the caller polls at once).  Prerequisite: s->lock held.
 */
static bool spin_for_arm(struct sim *s)
{
	unsigned int i = s->model.write_index;
	volatile uint32_t *word = &s->regs[(s->model.free_base + i * s->model.free_stride) / 4];
	uint8_t *armed = &s->model.armed[i];
	uint64_t end = mono_ns() + SIM_SPIN_NS;
	bool seen = false;

	pthread_mutex_unlock(&s->lock);
	while (!seen && mono_ns() < end) {
		seen = __atomic_load_n(word, __ATOMIC_ACQUIRE) != 0 ||
		       __atomic_load_n(armed, __ATOMIC_ACQUIRE) != 0 ||
		       __atomic_load_n(&s->stop, __ATOMIC_ACQUIRE);
		if (!seen)
			sched_yield();
	}
	pthread_mutex_lock(&s->lock);
	return seen;
}

static void *sim_thread(void *arg)
{
	struct sim *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		uint32_t ev = s->model.events;
		uint64_t w;

		ga_model_poll(&s->model);
		gen_run(s);
		s->quiet = (s->model.events == ev && !s->gen.running) ? s->quiet + 1 : 0;
		kick(s);
		if (s->gen.running && s->stalled && spin_for_arm(s))
			continue;
		w = next_wake(s);
		if (w <= mono_ns()) {
			/* Full speed: still let API callers in between bursts. */
			pthread_mutex_unlock(&s->lock);
			sched_yield();
			pthread_mutex_lock(&s->lock);
		} else {
			struct timespec ts = abs_ts(w);

			pthread_cond_timedwait(&s->wake, &s->lock, &ts);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* ---- spec parsing --------------------------------------------------------- */

struct sim_cfg {
	unsigned int version, max_buffers, ddb;
	uint64_t clock_hz;
	bool legacy;
	char shm[128];
	struct ga_sim_gen gen;
};

static bool shm_name_ok(const char *v, size_t len)
{
	size_t i;

	if (len == 0 || len >= 100)
		return false;
	for (i = 0; i < len; i++) {
		char c = v[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return false;
	}
	return v[0] != '.';
}

static int parse_kv(struct sim_cfg *c, const char *k, size_t klen, const char *v, size_t vlen)
{
	uint64_t x;
	int rc;

#define KEY(name) (klen == sizeof(name) - 1 && strncmp(k, name, klen) == 0)
	if (KEY("version")) {
		rc = ga_parse_u64(v, vlen, 5, &x);
		if (rc || x < 1)
			return ga_err(rc ? rc : -ERANGE, "sim: version must be 1..5");
		c->version = (unsigned int)x;
	} else if (KEY("max_buffers")) {
		rc = ga_parse_u64(v, vlen, GA_MAX_BUFFERS, &x);
		if (rc || x < 1)
			return ga_err(rc ? rc : -ERANGE, "sim: max_buffers must be 1..%u",
				      GA_MAX_BUFFERS);
		c->max_buffers = (unsigned int)x;
	} else if (KEY("dma_data_bytes")) {
		rc = ga_parse_u64(v, vlen, 128, &x);
		if (rc || x < 8 || (x & (x - 1)))
			return ga_err(rc ? rc : -EINVAL,
				      "sim: dma_data_bytes must be a power of two from 8 to 128 "
				      "(the AXI width; the 8-byte header must fit)");
		c->ddb = (unsigned int)x;
	} else if (KEY("clock_hz")) {
		rc = ga_parse_u64(v, vlen, 10000000000ull, &x);
		if (rc || x < 1)
			return ga_err(rc ? rc : -ERANGE, "sim: clock_hz must be 1..10000000000");
		c->clock_hz = x;
	} else if (KEY("latency")) {
		if (vlen == 6 && strncmp(v, "legacy", 6) == 0)
			c->legacy = true;
		else if (vlen == 7 && strncmp(v, "current", 7) == 0)
			c->legacy = false;
		else
			return ga_err(-EINVAL, "sim: latency must be legacy or current");
	} else if (KEY("shm")) {
		if (!shm_name_ok(v, vlen))
			return ga_err(-EINVAL, "sim: shm name must be 1-99 characters of "
					       "[A-Za-z0-9._-], not starting with '.'");
		memcpy(c->shm, v, vlen);
		c->shm[vlen] = '\0';
	} else if (KEY("rate")) {
		rc = ga_parse_u64(v, vlen, NSEC_PER_SEC_U64, &x);
		if (rc)
			return ga_err(rc, "sim: rate must be 0..1000000000 frames per second");
		c->gen.rate_hz = x;
	} else if (KEY("size")) {
		rc = ga_parse_size(v, vlen, SIM_MAX_FRAME, &x);
		if (rc || x < 1)
			return ga_err(rc ? rc : -ERANGE, "sim: size must be 1 byte to 1G");
		c->gen.size = (uint32_t)x;
	} else if (KEY("pattern")) {
		char tmp[16];

		if (vlen >= sizeof(tmp))
			return ga_err(-EINVAL, "sim: pattern must be prbs, counter or zero");
		memcpy(tmp, v, vlen);
		tmp[vlen] = '\0';
		return ga_pattern_parse(tmp, &c->gen.pattern);
	} else {
		return ga_err(-EINVAL,
			      "sim: unknown option '%.*s' (known: version, max_buffers, "
			      "dma_data_bytes, clock_hz, latency, shm, rate, size, pattern)",
			      (int)klen, k);
	}
#undef KEY
	return 0;
}

static int parse_spec(const char *spec, struct sim_cfg *c)
{
	const char *p;
	bool max_given = false;
	int rc;

	memset(c, 0, sizeof(*c));
	c->version = 4;
	c->ddb = 32;
	c->clock_hz = 250000000ull;
	c->gen.size = 4096;
	c->gen.pattern = GA_PATTERN_PRBS;
	c->gen.first_user = 0x02; /* SOF, as the firmware's read path sends */

	if (strncmp(spec, "sim", 3) != 0 || (spec[3] && spec[3] != ':'))
		return ga_err(-EINVAL, "'%s' is not a sim spec (sim[:key=value,...])", spec);
	p = spec[3] ? spec + 4 : spec + 3;
	while (*p) {
		const char *end = strchr(p, ',');
		const char *eq;
		size_t n = end ? (size_t)(end - p) : strlen(p);

		eq = memchr(p, '=', n);
		if (n == 0 || !eq)
			return ga_err(-EINVAL, "sim: expected key=value, got '%.*s'", (int)n, p);
		rc = parse_kv(c, p, (size_t)(eq - p), eq + 1, n - (size_t)(eq - p) - 1);
		if (rc)
			return rc;
		if ((size_t)(eq - p) == 11 && strncmp(p, "max_buffers", 11) == 0)
			max_given = true;
		p += n;
		if (*p == ',')
			p++;
	}
	if (c->version <= 3) {
		if (!max_given)
			c->max_buffers = 16;
		else if (c->max_buffers > 16)
			return ga_err(-ERANGE, "sim: version %u (V1 map) holds at most 16 buffers",
				      c->version);
	} else if (!max_given) {
		c->max_buffers = GA_MAX_BUFFERS;
	}
	return 0;
}

/* ---- backend ops ---------------------------------------------------------- */

static void sim_free(struct sim *s)
{
	if (s->regs)
		munmap((void *)s->regs, GA_CORE_SIZE);
	if (s->shm_fd >= 0) {
		close(s->shm_fd);
		shm_unlink(s->shm_name);
	}
	pthread_cond_destroy(&s->changed);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s->scratch);
	free(s->last_read);
	free(s);
}

static int sim_open(struct ga_dev *dev, const char *spec)
{
	static atomic_uint instance;
	struct ga_model_params mp;
	struct ga_model_env env;
	pthread_condattr_t ca;
	struct sim_cfg c;
	struct sim *s = NULL;
	int rc;

	rc = parse_spec(spec, &c);
	if (rc)
		return rc;
	if (dev->opts.latency_legacy)
		c.legacy = true;

	s = calloc(1, sizeof(*s));
	if (!s)
		return ga_err(-ENOMEM, "sim: out of memory");
	s->dev = dev;
	s->shm_fd = -1;
	s->version = c.version;
	s->max_buffers = c.max_buffers;
	s->ddb = c.ddb;
	s->clock_hz = c.clock_hz;
	s->legacy = c.legacy;
	s->layout = ga_layout_for_version(c.version, c.legacy);
	s->gen = c.gen;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_cond_init(&s->changed, &ca);
	pthread_condattr_destroy(&ca);

	if (c.shm[0])
		snprintf(s->shm_name, sizeof(s->shm_name), "/%.100s", c.shm);
	else
		snprintf(s->shm_name, sizeof(s->shm_name), "/gpuasync-sim-%ld-%u", (long)getpid(),
			 atomic_fetch_add(&instance, 1));
	s->shm_fd = shm_open(s->shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (s->shm_fd < 0) {
		rc = -errno;
		s->shm_fd = -1;
		rc = ga_err(rc, "sim: cannot create shared memory /dev/shm%s: %s%s", s->shm_name,
			    strerror(-rc),
			    rc == -EEXIST ? " (another sim uses that name; pick another shm=)"
					  : "");
		goto out_free;
	}
	if (ftruncate(s->shm_fd, GA_CORE_SIZE) < 0) {
		rc = ga_err(-errno, "sim: cannot size /dev/shm%s: %s", s->shm_name,
			    strerror(errno));
		goto out_free;
	}
	s->regs = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, s->shm_fd, 0);
	if (s->regs == MAP_FAILED) {
		s->regs = NULL;
		rc = ga_err(-errno, "sim: cannot map /dev/shm%s: %s", s->shm_name, strerror(errno));
		goto out_free;
	}

	memset(&mp, 0, sizeof(mp));
	mp.version = c.version;
	mp.latency_legacy = c.legacy;
	mp.max_buffers = c.max_buffers;
	mp.dma_data_bytes = c.ddb;
	mp.clock_hz = c.clock_hz;
	memset(&env, 0, sizeof(env));
	env.ctx = s;
	env.dma_write = env_dma_write;
	env.dma_read = env_dma_read;
	env.now_ns = env_now;
	env.frame_out = env_frame_out;
	env.scratch = env_scratch;
	env.dma_write_desc = env_dma_write_desc;
	ga_model_init(&s->model, s->regs, &mp, &env);

	rc = pthread_create(&s->thread, NULL, sim_thread, s);
	if (rc) {
		rc = ga_err(-rc, "sim: cannot start the model thread");
		goto out_free;
	}
	s->thread_started = true;

	dev->priv = s;
	dev->info.version = c.version;
	dev->info.max_buffers = c.max_buffers;
	dev->info.dma_data_bytes = c.ddb;
	dev->info.clock_hz = c.clock_hz;
	dev->info.layout = s->layout;
	return 0;

out_free:
	sim_free(s);
	return rc;
}

static void sim_close(struct ga_dev *dev)
{
	struct sim *s = dev_sim(dev);

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->wake);
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	zero_frame_free(s); /* before the memory layer closes (dev.c order) */
	sim_free(s);
	dev->priv = NULL;
}

static int sim_reg_read(struct ga_dev *dev, uint32_t off, uint32_t *val)
{
	struct sim *s = dev_sim(dev);

	pthread_mutex_lock(&s->lock);
	*val = ga_model_reg_read(&s->model, off);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int sim_reg_write(struct ga_dev *dev, uint32_t off, uint32_t val)
{
	struct sim *s = dev_sim(dev);

	pthread_mutex_lock(&s->lock);
	ga_model_reg_write(&s->model, off, val);
	kick(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int sim_map_regs(struct ga_dev *dev, volatile uint32_t **regs)
{
	*regs = dev_sim(dev)->regs;
	return 0;
}

static void sim_unmap_regs(struct ga_dev *dev, volatile uint32_t *regs)
{
	/* The mapping is the sim's own and lives until close. */
	(void)dev;
	(void)regs;
}

static int sim_reg_path(struct ga_dev *dev, char *path, size_t len, uint64_t *off)
{
	struct sim *s = dev_sim(dev);
	int n = snprintf(path, len, "/dev/shm%s", s->shm_name);

	if (n < 0 || (size_t)n >= len)
		return ga_err(-ENAMETOOLONG, "sim: register path needs %d bytes", n + 1);
	if (off)
		*off = 0;
	return 0;
}

/* Write the counts into 0x08 with both engines off (pre-release driver). */
static void program_counts(struct sim *s)
{
	field_write(s, GA_REG_WRITE_ENABLE, 0, 0);
	field_write(s, GA_REG_READ_ENABLE, 0, 0);
	field_write(s, GA_REG_WRITE_COUNT, 0,
		    s->nbuf[GA_DIR_WRITE] ? s->nbuf[GA_DIR_WRITE] - 1 : 0);
	field_write(s, GA_REG_READ_COUNT, 0, s->nbuf[GA_DIR_READ] ? s->nbuf[GA_DIR_READ] - 1 : 0);
}

static void program_address(struct sim *s, enum ga_dir dir, unsigned int i, uint64_t bus)
{
	bool w = dir == GA_DIR_WRITE;

	field_write(s, w ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO, i, (uint32_t)bus);
	field_write(s, w ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI, i, (uint32_t)(bus >> 32));
}

static int sim_add_buffer(struct ga_dev *dev, enum ga_dir dir, const struct ga_mem_block *blk,
			  uint32_t size, uint64_t *bus_address)
{
	struct sim *s = dev_sim(dev);
	const char *what = dir == GA_DIR_WRITE ? "write" : "read";
	struct sim_block *b;
	unsigned int i;
	uint64_t bus;
	int rc = 0;

	if (size == 0 || size % GA_GPU_PAGE_SIZE)
		return ga_err(-EINVAL,
			      "sim: buffer size %u is not a non-zero multiple of 64 KiB "
			      "(RDMA pins 64 KiB GPU pages)",
			      size);
	if (!blk || blk->size < size)
		return ga_err(-EINVAL, "sim: registering %u bytes of a %zu-byte block", size,
			      blk ? blk->size : (size_t)0);

	pthread_mutex_lock(&s->lock);
	i = s->nbuf[dir];
	if (i >= s->max_buffers) {
		rc = ga_err(-ENOSPC, "sim: all %u %s buffers the firmware supports are in use",
			    s->max_buffers, what);
		goto out;
	}
	if (dir == GA_DIR_WRITE && i > 0 && s->layout != GA_LAYOUT_V1 &&
	    s->blocks[dir][0].size != size) {
		rc = ga_err(-EINVAL,
			    "sim: write buffers must all be the same size on version %u "
			    "(one shared write_max_size): existing %u, new %u",
			    s->version, s->blocks[dir][0].size, size);
		goto out;
	}
	b = &s->blocks[dir][i];
	b->used = true;
	b->gen = s->next_gen++ & SIM_BUS_GEN_MASK;
	b->size = size;
	b->blk = *blk;
	bus = bus_encode(dir, i, b->gen);
	s->nbuf[dir]++;

	program_address(s, dir, i, bus);
	if (dir == GA_DIR_WRITE) {
		/* The payload starts at +dma_data_bytes: that much less fits. */
		field_write(s, GA_REG_WRITE_SIZE, i, size - s->ddb);
		field_write(s, GA_REG_WRITE_MAX_SIZE, 0, size - s->ddb);
	}
	program_counts(s);
	*bus_address = bus;
	kick(s);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static void forget_buffer(struct sim *s, enum ga_dir dir, unsigned int i)
{
	program_address(s, dir, i, 0);
	if (dir == GA_DIR_WRITE)
		field_write(s, GA_REG_WRITE_SIZE, i, 0);
	memset(&s->blocks[dir][i], 0, sizeof(s->blocks[dir][i]));
}

static int sim_remove_all(struct ga_dev *dev)
{
	struct sim *s = dev_sim(dev);
	unsigned int d, i;

	pthread_mutex_lock(&s->lock);
	/* Disable both engines and zero the counts in one go, as upstream.
	 * The model is idle whenever we hold its lock, so V5's active bits
	 * are already 0 and there is nothing in flight to wait for. */
	s->nbuf[0] = s->nbuf[1] = 0;
	program_counts(s);
	for (d = 0; d < 2; d++)
		for (i = 0; i < GA_MAX_BUFFERS; i++)
			if (s->blocks[d][i].used)
				forget_buffer(s, (enum ga_dir)d, i);
	field_write(s, GA_REG_WRITE_MAX_SIZE, 0, 0); /* the firmware stores 1 */
	/* Free-list bits stay set, as on hardware (facts §8.6). */
	kick(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int sim_remove_last(struct ga_dev *dev, enum ga_dir dir)
{
	struct sim *s = dev_sim(dev);
	enum ga_reg_id count = dir == GA_DIR_WRITE ? GA_REG_WRITE_COUNT : GA_REG_READ_COUNT;
	enum ga_reg_id enable = dir == GA_DIR_WRITE ? GA_REG_WRITE_ENABLE : GA_REG_READ_ENABLE;
	unsigned int i;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	if (s->nbuf[dir] == 0) {
		rc = ga_err(-ENOENT, "sim: no %s buffer to remove",
			    dir == GA_DIR_WRITE ? "write" : "read");
		goto out;
	}
	i = --s->nbuf[dir];
	/* Shrink the ring first so the engine never picks the buffer again;
	 * with none left the engine goes off (buffer 0 has no address). */
	if (s->nbuf[dir])
		field_write(s, count, 0, s->nbuf[dir] - 1);
	else
		field_write(s, enable, 0, 0);
	forget_buffer(s, dir, i);
	ga_model_forget(&s->model, dir == GA_DIR_WRITE, i);
	if (dir == GA_DIR_WRITE && s->nbuf[dir] == 0)
		field_write(s, GA_REG_WRITE_MAX_SIZE, 0, 0);
	kick(s);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int sim_arm(struct ga_dev *dev, const uint32_t *indices, unsigned int n)
{
	struct sim *s = dev_sim(dev);
	unsigned int k;
	uint32_t off;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	/* Validate all first: never half-apply. */
	for (k = 0; k < n; k++) {
		if (indices[k] >= s->nbuf[GA_DIR_WRITE]) {
			rc = ga_err(-EINVAL, "sim: cannot arm write buffer %u: %u registered",
				    indices[k], s->nbuf[GA_DIR_WRITE]);
			goto out;
		}
	}
	for (k = 0; k < n; k++)
		if (!sim_off(s, GA_REG_FREE_LIST, indices[k], &off))
			ga_model_reg_write(&s->model, off, 1);
	kick(s);
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static int sim_enable(struct ga_dev *dev, enum ga_dir dir, bool on)
{
	struct sim *s = dev_sim(dev);

	pthread_mutex_lock(&s->lock);
	field_write(s, dir == GA_DIR_WRITE ? GA_REG_WRITE_ENABLE : GA_REG_READ_ENABLE, 0, on);
	kick(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static bool sim_has(struct ga_dev *dev, enum ga_cap cap)
{
	switch (cap) {
	case GA_CAP_SUPPORTED:
	case GA_CAP_REG_MMAP:
	case GA_CAP_REMOVE_ONE:
	case GA_CAP_ARM_MANY:
	case GA_CAP_ENABLE_IOCTL:
	case GA_CAP_SIM:
		return true;
	case GA_CAP_GPU_MEMORY:
		return dev->mem && dev->mem != &ga_mem_host_ops;
	default:
		return false;
	}
}

const struct ga_backend_ops ga_backend_sim = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.reg_read = sim_reg_read,
	.reg_write = sim_reg_write,
	.map_regs = sim_map_regs,
	.unmap_regs = sim_unmap_regs,
	.reg_path = sim_reg_path,
	.add_buffer = sim_add_buffer,
	.remove_all = sim_remove_all,
	.remove_last = sim_remove_last,
	.arm = sim_arm,
	.enable = sim_enable,
	.has = sim_has,
};

/* ---- gpuasync/sim.h --------------------------------------------------------- */

static int get_sim(struct ga_dev *dev, struct sim **s)
{
	if (!dev)
		return ga_err(-EINVAL, "sim: no device");
	if (dev->be != &ga_backend_sim || !dev->priv)
		return ga_err(-ENOTSUP, "not a simulated device: sim controls do not apply");
	*s = dev->priv;
	return 0;
}

/* get_sim() for the calls that also need an argument (@what names it). */
static int get_sim_arg(struct ga_dev *dev, const void *arg, const char *what, struct sim **s)
{
	int rc = get_sim(dev, s);

	if (rc)
		return rc;
	if (!arg)
		return ga_err(-EINVAL, "sim: NULL %s", what);
	return 0;
}

int ga_sim_gen_get(struct ga_dev *dev, struct ga_sim_gen *gen)
{
	struct sim *s = NULL;
	int rc = get_sim_arg(dev, gen, "generator settings", &s);

	if (rc)
		return rc;
	pthread_mutex_lock(&s->lock);
	*gen = s->gen;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int ga_sim_gen_set(struct ga_dev *dev, const struct ga_sim_gen *gen)
{
	struct sim *s = NULL;
	int rc = get_sim_arg(dev, gen, "generator settings", &s);
	uint64_t t;

	if (rc)
		return rc;
	if (gen->size < 1 || gen->size > SIM_MAX_FRAME)
		return ga_err(-ERANGE, "sim: frame size %u out of range 1..%u", gen->size,
			      SIM_MAX_FRAME);
	if (gen->rate_hz > NSEC_PER_SEC_U64)
		return ga_err(-ERANGE, "sim: rate %llu above 1e9 frames per second",
			      (unsigned long long)gen->rate_hz);
	if ((unsigned int)gen->pattern > GA_PATTERN_ZERO)
		return ga_err(-EINVAL, "sim: unknown pattern %d", (int)gen->pattern);

	pthread_mutex_lock(&s->lock);
	t = mono_ns();
	if (gen->running && !s->gen.running) {
		/* A new run: frame numbers (the pattern seed) restart at 0. */
		s->gen_seq = 0;
		s->gen_t0 = t;
		s->gen_n = 0;
	} else if (gen->rate_hz != s->gen.rate_hz) {
		s->gen_t0 = t;
		s->gen_n = 0;
	}
	if (!gen->running)
		stall_end(s, t);
	s->gen = *gen;
	kick(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int ga_sim_push(struct ga_dev *dev, const void *payload, uint32_t len, int timeout_ms)
{
	struct sim *s = NULL;
	int rc = get_sim(dev, &s);
	enum ga_model_push r;
	uint64_t t0, deadline;
	bool waited = false;

	if (rc)
		return rc;
	if (!payload || len == 0)
		return ga_err(-EINVAL, "sim: a frame needs at least one byte");
	if (len > SIM_MAX_FRAME)
		return ga_err(-ERANGE, "sim: frame of %u bytes above 1G", len);
	t0 = mono_ns();
	deadline = t0 + (timeout_ms > 0 ? (uint64_t)timeout_ms * 1000000ull : 0);

	pthread_mutex_lock(&s->lock);
	for (;;) {
		uint64_t t, w;
		struct timespec ts;

		ga_model_poll(&s->model); /* arms made through shared memory */
		r = ga_model_push(&s->model, payload, len, s->gen.first_user, s->gen.last_user);
		if (r != GA_PUSH_NO_BUFFER || s->stop)
			break;
		t = mono_ns();
		if (t >= deadline)
			break;
		waited = true;
		/* Woken by the thread after it saw an arm; re-poll at least
		 * every poll interval for arms nobody announces. */
		w = t + SIM_POLL_BUSY_NS < deadline ? t + SIM_POLL_BUSY_NS : deadline;
		ts = abs_ts(w);
		pthread_cond_timedwait(&s->changed, &s->lock, &ts);
	}
	if (waited || r == GA_PUSH_NO_BUFFER)
		s->st.stalled_ns += mono_ns() - t0;
	if (r != GA_PUSH_NO_BUFFER)
		account(s, r, false);
	kick(s);
	pthread_mutex_unlock(&s->lock);
	if (r == GA_PUSH_NO_BUFFER)
		return ga_err(-EAGAIN,
			      "sim: no free buffer within %d ms (next write buffer not armed)",
			      timeout_ms);
	return 0;
}

const char *ga_sim_fault_name(enum ga_sim_fault f)
{
	switch (f) {
	case GA_FAULT_WRITE_ERROR:
		return "write_error";
	case GA_FAULT_WRITE_TIMEOUT:
		return "write_timeout";
	case GA_FAULT_READ_ERROR:
		return "read_error";
	default:
		return "unknown";
	}
}

int ga_sim_inject(struct ga_dev *dev, enum ga_sim_fault fault, uint32_t count, uint32_t code)
{
	struct sim *s = NULL;
	int rc = get_sim(dev, &s);

	if (rc)
		return rc;
	switch (fault) {
	case GA_FAULT_WRITE_ERROR:
		if (code > 3)
			return ga_err(-ERANGE,
				      "sim: AXI write error code %u: must be 1..3 "
				      "(0 = SLVERR, 2)",
				      code);
		break;
	case GA_FAULT_READ_ERROR:
		if (code > 7)
			return ga_err(-ERANGE,
				      "sim: AXI read error code %u: must be 1..7 "
				      "(0 = SLVERR, 2)",
				      code);
		break;
	case GA_FAULT_WRITE_TIMEOUT:
		break;
	default:
		return ga_err(-EINVAL, "sim: unknown fault %d", (int)fault);
	}
	if (code == 0)
		code = 2;
	pthread_mutex_lock(&s->lock);
	switch (fault) {
	case GA_FAULT_WRITE_ERROR:
		s->model.faults.write_error = count;
		s->model.faults.write_error_code = code;
		break;
	case GA_FAULT_WRITE_TIMEOUT:
		s->model.faults.write_timeout = count;
		break;
	default:
		s->model.faults.read_error = count;
		s->model.faults.read_error_code = code;
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int ga_sim_stats(struct ga_dev *dev, struct ga_sim_stats *st)
{
	struct sim *s = NULL;
	int rc = get_sim_arg(dev, st, "stats", &s);

	if (rc)
		return rc;
	pthread_mutex_lock(&s->lock);
	if (s->crc_dirty) {
		s->st.last_read_crc = ga_crc32(0, s->last_read, s->last_read_len);
		s->crc_dirty = false;
	}
	*st = s->st;
	if (s->stalled)
		st->stalled_ns += mono_ns() - s->stall_t0;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int ga_sim_last_read(struct ga_dev *dev, void *dst, uint32_t len, uint32_t *got)
{
	struct sim *s = NULL;
	int rc = get_sim(dev, &s);
	uint32_t n;

	if (rc)
		return rc;
	if (!dst && len)
		return ga_err(-EINVAL, "sim: NULL destination");
	pthread_mutex_lock(&s->lock);
	n = s->last_read_len < len ? s->last_read_len : len;
	if (n)
		memcpy(dst, s->last_read, n);
	if (got)
		*got = n;
	pthread_mutex_unlock(&s->lock);
	return 0;
}
