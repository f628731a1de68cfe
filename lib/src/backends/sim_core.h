// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated card's core, private to lib/src/backends/sim*.c: the state
 * they share (struct sim, the bus-address encoding), the model lock, and
 * in sim_core.c what every file calls on that state (waking the card
 * thread, the statistics).  The files stand in layers over it, each
 * calling only down, so none calls back into a file that calls it:
 *
 *   sim.c          the backend: spec, open/close, the driver half
 *     sim_thread.c the card: model thread, DMA environment, generator
 *     sim_trap.c   trap=yes: the mapping whose stores are each seen
 *   sim_api.c      the ga_sim_* controls of gpuasync/sim.h
 *   sim_replay.c   a recorded run, the generator's other source (called
 *                  by sim_thread.c, sim_api.c and sim.c)
 *   sim_core.[ch]  this: calls none of them
 *
 * The core knows a sim device by its backend's flag (sim_of), not by the
 * backend's address, which would tie it to sim.c.
 *
 * Locking: dev->lock (held by dev.c around backend ops) comes before
 * s->lock, the model lock, which guards everything in struct sim below
 * it.  The sim thread and the ga_sim_* calls take only s->lock, so they
 * never wait for dev->lock; the memory layer takes no library lock.
 * Register reads take no lock at all (the block is shared memory).
 */
#ifndef GA_SIM_CORE_H
#define GA_SIM_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ga_model.h"
#include "gpuasync/batch.h"
#include "gpuasync/sim.h"
#include "gpuasync/sysmon.h"
#include "gpuasync/timing.h"
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
#define SIM_ARM_POLL_MIN_NS 2000ull    /* a stalled generator looks for a shared-memory */
#define SIM_ARM_POLL_MAX_NS 1000000ull /* arm after MIN, doubling up to MAX (wait_for_arm) */
#define SIM_GEN_BURST	    256	       /* frames per loop before polling again */
#define SIM_GEN_BURST_BYTES (8u << 20) /* ... or this many payload bytes */
#define SIM_YIELD_MAX_NS    (10u * 1000u * 1000u) /* longest wait for API callers */
#define SIM_MAX_FRAME	    (1u << 30)

#define NSEC_PER_SEC_U64 1000000000ull

struct sim_block {
	bool used;
	uint8_t gen;
	uint32_t size; /* bytes registered */
	struct ga_mem_block blk;
	bool dmabuf;	     /* registered from a dma-buf (checked, then closed) */
	uint64_t dmabuf_off; /* where the buffer starts in it */
};

struct sim {
	struct ga_dev *dev;
	/* identity (fixed after open) */
	unsigned int version, max_buffers, ddb;
	uint64_t clock_hz;
	bool legacy;
	enum ga_layout layout;
	/* AxiVersion words (sim.c sim_fw_words) and power-up time for uptime */
	uint32_t fw[GA_FW_SIZE / 4];
	uint64_t power_up_ns;
	/* Link down (ga_sim_link_set): every register reads all-ones and
	 * writes go nowhere, as over a lost PCIe link.  No lock: one flag. */
	_Atomic bool link_down;
	char shm_name[128];
	int shm_fd;
	uint32_t core_offset; /* of the core block in the shm file */
	volatile uint32_t *regs;
	/* ga_dev_map_regs's mapping where stores are trapped (trap=yes,
	 * sim_trap.c): its control page is read-only to the MMU.  Made by
	 * the first ga_dev_map_regs, unmapped by the last ga_dev_unmap_regs
	 * (user_maps, guarded by sim_trap.c's trap_mutex) or at close. */
	bool trap;
	volatile uint32_t *user_regs;
	unsigned int user_maps;
	_Atomic uint64_t trapped_stores; /* stores to that page, seen one by one */
	_Atomic int trap_busy;		 /* a thread's store to that page is being stepped */
	pthread_t thread;
	bool thread_started;

	/* API callers waiting for the model lock (sim_lock): the card thread
	 * lets go of it between frames while there are any. */
	unsigned int lock_waiters;
	/* With GPUASYNC_LOG: callers log a long wait for the model lock with
	 * what the card thread was doing (@phase, set by that thread). */
	bool log_waits;
	const char *phase;
	uint64_t held_since; /* the card thread's, when it took the lock */
	/* The model lock: guards everything below.  Taken after dev->lock. */
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* the thread: state changed, look again */
	bool kicked;		/* wake was signalled since the thread last waited */
	uint64_t arm_poll_ns;	/* a stalled generator's look-again interval */
	pthread_cond_t changed; /* pushers: the model took an arm or a read */
	bool stop;
	struct ga_model model;
	uint32_t seen_events;
	unsigned int quiet; /* thread polls in a row that changed nothing */
	struct sim_block blocks[2][GA_MAX_BUFFERS];
	unsigned int nbuf[2];
	uint8_t next_gen;
	/* A replay playing (sim_replay.c), or NULL: the generator's source */
	struct sim_replay *replay;
	/* frame generator */
	struct ga_sim_gen gen;
	uint32_t gen_seq;  /* frame number of the frame waiting to go */
	uint32_t gen_last; /* number of the last frame sent, once gen_sent */
	bool gen_sent;	   /* a frame was sent since the generator started */
	/* GA_FAULT_PULSE_GAP: numbers the next frame skips; GA_FAULT_PULSE_DUPLICATE:
	 * frames left that repeat gen_last (applied before a gap) */
	uint32_t seq_gap, seq_dup;
	/* GA_FAULT_BATCH_*: frames of a batched pattern left to carry each batch
	 * error (too short, zero size, corrupt, overflow: enum ga_batch_result
	 * 1..4), and the one the frame being made carries (0: none) */
	uint32_t batch_fault[4];
	int gen_fault;
	uint64_t gen_t0, gen_n; /* rate schedule: frame gen_n is due at t0 + n/rate */
	bool stalled;
	uint64_t stall_t0;
	struct ga_sim_stats st;
	uint32_t reg_ignored; /* GA_FAULT_REG_IGNORED: register writes left to ignore */
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
	/*
	 * A descriptor the model wrote during a generator burst, not yet
	 * passed to the memory layer (sim_thread.c, env_dma_write_desc): the
	 * next one to the same address replaces it, any other DMA and the end
	 * of the burst send it.  So a run of dropped frames, each writing its
	 * header to write address 0, costs one write per burst.
	 */
	bool desc_hold;	   /* in a generator burst: hold descriptors back, defer DMA */
	bool room_wait;	   /* the burst ended for want of room in the memory layer */
	bool send_burst;   /* the burst's writes wait to be sent (without s->lock) */
	size_t room_bytes; /* ... for a frame of this many staged bytes */
	bool room_batch;   /* ... sent as a batch of its own (a burst of drops) */
	bool desc_pending;
	uint64_t desc_bus;
	struct ga_mem_block desc_blk;
	size_t desc_off;
	uint8_t desc[GA_HDR_BYTES];
	uint8_t *last_read;
	uint32_t last_read_len;
	bool crc_dirty; /* st.last_read_crc not yet computed from last_read */
	size_t last_read_cap;
	/* The SysMon block (gpuasync/sysmon.h's model) where the card's
	 * AxiVersion says it has one (memory_map= of the spec): has_sysmon
	 * is fixed after open, the words change under s->lock. */
	bool has_sysmon;
	struct ga_sysmon sysmon;
	uint32_t sysmon_regs[GA_SYSMON_WORDS];
};

static inline struct timespec sim_abs_ts(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / NSEC_PER_SEC_U64),
			      .tv_nsec = (long)(ns % NSEC_PER_SEC_U64)};

	return ts;
}

/* Bus address of buffer @index of @dir, registration generation @gen. */
static inline uint64_t sim_bus_encode(enum ga_dir dir, unsigned int index, uint8_t gen)
{
	return SIM_BUS_TAG | ((uint64_t)(gen & SIM_BUS_GEN_MASK) << SIM_BUS_GEN_SHIFT) |
	       ((uint64_t)(dir == GA_DIR_WRITE) << SIM_BUS_DIR_SHIFT) |
	       ((uint64_t)index << SIM_BUS_INDEX_SHIFT);
}

/*
 * The register block is shared memory that the card's thread, the API and
 * other processes read and write without a lock, as a card's registers
 * (see Locking above): under ThreadSanitizer each mapping of it is marked
 * as such, so that its reports are about the library's own state.
 */
#ifdef __SANITIZE_THREAD__
void AnnotateBenignRaceSized(const char *file, int line, const volatile void *mem,
			     unsigned long size, const char *desc);
#define sim_regs_shared(p)                                                                         \
	AnnotateBenignRaceSized(__FILE__, __LINE__, (p), GA_CORE_SIZE,                             \
				"the register block: shared memory, no lock by design")
#else
#define sim_regs_shared(p) ((void)(p))
#endif

/* @dev's simulated card, or NULL when @dev is none (GA_BE_SIM, as GA_CAP_SIM). */
static inline struct sim *sim_of(struct ga_dev *dev)
{
	return dev && (dev->kind->flags & GA_BE_SIM) ? dev->priv : NULL;
}

/* ---- sim_core.c: the model lock, wake-ups, statistics ------------------------ */

/*
 * The model lock, for everyone but the card thread.  A mutex is not fair:
 * a generator running flat out would take it back between bursts before a
 * waiting caller wakes, and with GPU memory a burst of frames can take
 * seconds (each a queued copy), starving every register read and mkdir.
 * Callers announce themselves; the card thread ends its burst and waits
 * for them to have had their turn.
 */
void sim_lock_waited(struct sim *s, uint64_t ns, const char *phase);

static inline void sim_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Pause instructions a caller spins on trylock before it sleeps on the
 * mutex: the card thread lets go within a frame, and a sleeping waiter's
 * wake-up alone (futex, a VM's idle vCPU) costs tens of microseconds, a
 * few times over for a call that takes the lock more than once. */
#define SIM_LOCK_SPINS 4000

static inline void sim_lock(struct sim *s)
{
	uint64_t t0 = s->log_waits ? ga_mono_ns() : 0;
	const char *phase = __atomic_load_n(&s->phase, __ATOMIC_RELAXED);
	int i = 0;

	__atomic_add_fetch(&s->lock_waiters, 1, __ATOMIC_ACQ_REL);
	while (pthread_mutex_trylock(&s->lock)) {
		if (++i == SIM_LOCK_SPINS) {
			pthread_mutex_lock(&s->lock);
			break;
		}
		sim_cpu_relax();
	}
	__atomic_sub_fetch(&s->lock_waiters, 1, __ATOMIC_ACQ_REL);
	if (t0)
		sim_lock_waited(s, ga_mono_ns() - t0, phase);
}

/* What the card thread is doing, for sim_lock_waited's log. */
static inline void sim_phase(struct sim *s, const char *what)
{
	__atomic_store_n(&s->phase, what, __ATOMIC_RELAXED);
}

static inline bool sim_lock_wanted(struct sim *s)
{
	return __atomic_load_n(&s->lock_waiters, __ATOMIC_ACQUIRE) != 0;
}

/* Tell the thread to look again, and pushers if the model moved.  s->lock held. */
void ga_simdev_kick(struct sim *s);
/* Count a pushed frame in the statistics (@generated: by the generator).  s->lock held. */
void ga_simdev_account(struct sim *s, enum ga_model_push r, bool generated);
/* The generator's stall (no armed buffer to push into) begins at @t,
 * unless one is on, or ends at @t, its time counted.  s->lock held. */
void ga_simdev_stall_begin(struct sim *s, uint64_t t);
void ga_simdev_stall_end(struct sim *s, uint64_t t);

/* ---- sim_trap.c ------------------------------------------------------------ */

/* Can this build single-step a store (x86-64 Linux)? */
bool sim_trap_supported(void);
/* Take a reference on s->user_regs, made (control page trapped, signal
 * handlers installed over the default actions) on the first; a negative
 * errno with the reason in ga_last_error otherwise (-EBUSY: the program has
 * its own SIGSEGV or SIGTRAP handler). */
int sim_trap_map(struct sim *s);
/* Drop a reference; the last unmaps s->user_regs and, for the process's
 * last trapped mapping, puts the default signal actions back. */
void sim_trap_put(struct sim *s);
/* Unmap s->user_regs whatever its references (at close; safe when never mapped). */
void sim_trap_unmap(struct sim *s);

/* ---- sim_thread.c ---------------------------------------------------------- */

/* Fill the model's environment (DMA through dev->mem, clock, scratch,
 * read-out); its callbacks run with s->lock held. */
void ga_simdev_env(struct sim *s, struct ga_model_env *env);
/* The model thread (pthread start routine, @arg is the struct sim); takes
 * s->lock itself and runs until s->stop. */
void *ga_simdev_thread(void *arg);
/* At close, after the thread stopped and before the memory layer closes. */
void ga_simdev_zero_frame_free(struct sim *s);

/* ---- sim_replay.c ---------------------------------------------------------- */

/* The replay's next frame, if due at @t: 1 with its length and TUSER
 * bytes, 0 when none is due or read yet, -1 when the replay has ended (the
 * generator then stops).  s->lock held. */
int sim_replay_next(struct sim *s, uint64_t t, uint32_t *len, uint8_t *first_user,
		    uint8_t *last_user);
/* ga_model_push_fill's fill for that frame (ctx: the struct sim). */
void sim_replay_fill(void *ctx, void *dst, uint32_t len);
/* The frame at the queue's head when the replay plays from its held copy
 * (else NULL): the copy's block, where the payload is in it, and the
 * TimingHeader a live replay writes over it at *@th_off (UINT32_MAX: none). */
const struct ga_mem_block *sim_replay_held(struct sim *s, uint64_t *src_off, uint32_t *th_off,
					   uint8_t th[GA_TIMING_HDR_BYTES]);
/* The card took that frame (delivered or dropped): the next one.  s->lock held. */
void sim_replay_sent(struct sim *s);
/* When the next frame is due (ns, CLOCK_MONOTONIC), 0 for as soon as
 * possible.  s->lock held. */
uint64_t sim_replay_due(struct sim *s);
/* Generator settings change: -EBUSY while a replay plays; a replay that
 * has ended is taken off the card into *@ended, for sim_replay_release
 * once s->lock is let go.  s->lock held. */
int sim_replay_gen_set(struct sim *s, struct sim_replay **ended);
void sim_replay_release(struct sim_replay *rp);
/* At close, before the card thread stops: end a replay, join its reader. */
void sim_replay_close(struct sim *s);

#endif /* GA_SIM_CORE_H */
