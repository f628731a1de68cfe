/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The GpuAsyncCore firmware model, part of core/: plain C built into
 * libgpuasync, whose simulated card (lib/src/backends/sim*.c) runs it, and into
 * gpuasync.ko, whose emulated card (kmod/ga_emu.c) runs it.
 * It uses no libc and no kernel API; everything it needs from its host
 * comes through struct ga_model_env.  Offsets come only from the register
 * table (gpuasync/regs.h).
 *
 * The register block is a plain array of 32-bit little-endian words that
 * other agents (a CPU process, a GPU stream, a driver) may write at any
 * time.  The host calls ga_model_reg_write() for writes it can see (so
 * strobes and triggers act at once) and ga_model_poll() regularly to pick
 * up writes it cannot see (shared memory); both must be called with the
 * host's model lock held.  Side-effect registers (free list, read size,
 * count reset) read back 0 once taken, so a repeated write is never lost.
 *
 * What it models (docs/firmware.md §2-3): free-list arming
 * and round-robin write index over 0..write_count, the 8-byte header at +0
 * with the size doorbell at +4 and payload at +dma_data_bytes, max size and
 * overflow, drop while disabled (header still written to write address 0),
 * frame/error/timeout counters (saturating on V4), count_reset, min free
 * write buffers and read-queue watermarks, latency counters in clock
 * cycles (V1 per buffer, V4 buffer 0 with max/min), the read path in strict
 * index order with the completion word at +0 (V4) or none (V1), the V5
 * active bits, stream monitors, and injected faults.
 *
 * Deviations from the RTL, all because software is not a clock-driven
 * state machine: every DMA completes within the call that starts it (so
 * the engines are always idle between calls and the V5 active bits simply
 * mirror the enables); V1 GPU latency stops when the buffer is re-armed
 * (as on V4) rather than at the RTL's idle-state sampling; a read that
 * fails with an AXI error emits no frame; free-list, read-size and
 * count_reset words read back 0 once taken (see above).
 *
 * struct ga_model is about 25 KiB (per-buffer state for 1024 buffers):
 * allocate it (calloc, kzalloc), never put it on a kernel stack.  64-bit
 * divisions appear in the latency and rate arithmetic (fine on 64-bit
 * kernels; a 32-bit kernel build would need div_u64).
 */
#ifndef GA_MODEL_H
#define GA_MODEL_H

#include "ga_base.h"
#include "gpuasync/abi.h"
#include "gpuasync/regs.h"

/* Largest firmware ring: per-buffer state is sized for it. */
#define GA_MODEL_MAX_BUFFERS GA_MAX_BUFFERS

struct ga_model_env {
	void *ctx;
	/* DMA into/out of "bus" memory: 0 or a negative errno, which the
	 * model reports as an AXI error (result 2, SLVERR). */
	int (*dma_write)(void *ctx, uint64_t bus, const void *src, uint32_t len);
	int (*dma_read)(void *ctx, uint64_t bus, void *dst, uint32_t len);
	/* Monotonic time in nanoseconds (latency counters, rates). */
	uint64_t (*now_ns)(void *ctx);
	/* A GPU->FPGA frame left the card (may be NULL). */
	void (*frame_out)(void *ctx, const void *data, uint32_t len);
	/* Host memory of at least @len bytes the model may use until its next
	 * call (read-path staging, generated payloads); NULL when there is
	 * none, which the model reports as an AXI error.  May be NULL. */
	void *(*scratch)(void *ctx, uint32_t len);
	/* Optional: write the 8-byte descriptor @desc (encoded by
	 * ga_header_encode: word 0 at @bus, the size at @bus + 4) as one
	 * transaction, as a DMA engine writing device memory
	 * does; 0 or a negative errno as dma_write, or 1 when it cannot, and
	 * the model then writes word 0, a barrier, then the size.  One write
	 * instead of two is what lets the simulated card reach real frame
	 * rates when each write is a queued copy.  May be NULL. */
	int (*dma_write_desc)(void *ctx, uint64_t bus, const uint8_t desc[GA_HDR_BYTES]);
	/* Optional: write @len payload bytes at @bus that @fill would produce
	 * (a ga_model_push_fill frame), made wherever the environment likes
	 * (the simulated card: on the GPU, next to the memory).  0 or a
	 * negative errno as dma_write, or 1 when it cannot, and the model
	 * then fills scratch memory and writes that.  May be NULL. */
	int (*dma_write_fill)(void *ctx, uint64_t bus, uint32_t len,
			      void (*fill)(void *, void *, uint32_t), void *fill_ctx);
};

struct ga_model_params {
	unsigned int version;	     /* a row of versions.def */
	bool latency_legacy;	     /* the version's legacy layout (V4: 0x48/0x50/0x58) */
	unsigned int max_buffers;    /* 1..ga_layout_max_buffers() */
	unsigned int dma_data_bytes; /* payload offset, e.g. 32 */
	uint64_t clock_hz;	     /* axiClk for latency counters */
	/* Free-list and read-size words as upstream's emulator keeps them:
	 * a word holds its value until the engine uses it and then clears
	 * it; writing 0 withdraws an arm or a request.  Off: the firmware's
	 * write strobes (any write arms or requests; they read back 0). */
	bool level_words;
};

/* Faults armed for the next operations (host sets, model consumes). */
struct ga_model_faults {
	uint32_t write_error; /* frames left to fail with write_error_code */
	uint32_t write_error_code;
	uint32_t write_timeout; /* frames left to time out */
	uint32_t read_error;	/* reads left to fail with read_error_code */
	uint32_t read_error_code;
};

enum ga_model_push {
	GA_PUSH_DELIVERED, /* written into a buffer */
	GA_PUSH_DROPPED,   /* engine off: dropped, header to address 0 */
	GA_PUSH_NO_BUFFER, /* engine on, next buffer not armed: try later */
	GA_PUSH_DIVERTED,  /* demux_select = 0: went to the CPU DMA path */
};

/* Produces @len payload bytes of the frame being pushed into @dst. */
typedef void (*ga_model_fill_fn)(void *fill_ctx, void *dst, uint32_t len);

/* What the last delivered or dropped frame did (for host statistics). */
struct ga_model_last {
	unsigned int index; /* buffer written (0 for a drop) */
	uint32_t size;	    /* bytes written (the doorbell value) */
	uint32_t result;    /* 4-bit return: 1:0 AXI, 2 overflow, 3 timeout */
	bool overflow;
};

/* One stream monitor's window and max/min state. */
struct ga_model_mon {
	uint64_t t0;			       /* start of the current one-second window */
	uint32_t frames;		       /* frames in the window */
	uint64_t bytes;			       /* bytes in the window */
	bool rate_armed, bw_armed, size_armed; /* max/min hold a measurement */
};

/*
 * Values the control word (write/read enable and counts) held after each
 * store a host observed one at a time, oldest first (ga_model_ctl_stored):
 * a host whose register block is plain memory sees a store through a user
 * mapping only when it looks, so an enable 0 then 1 between two looks
 * would be lost; logged, the model plays each value before the current
 * one, as firmware acts on every write.  Many producers (lock-free, safe
 * in a signal handler), one consumer (the model, under the host's lock).
 */
#define GA_MODEL_CTL_LOG 16
struct ga_model_ctl_log {
	uint32_t val[GA_MODEL_CTL_LOG];
	uint32_t seq[GA_MODEL_CTL_LOG]; /* slot n holds entry n once seq is n + 1 */
	uint32_t head, tail;		/* entries reserved, entries played */
	uint32_t lost;			/* stores not logged: the log was full */
};

/* One table row as the running firmware has it (see ga_model_init). */
struct ga_model_loc {
	uint32_t offset; /* of index 0 */
	uint32_t stride; /* 0: one instance */
	uint32_t last;	 /* offset of the last instance */
	uint32_t mask;	 /* the field's bits in its word */
	uint8_t lsb;
	bool present; /* in this layout and version */
};

struct ga_model {
	volatile uint32_t *regs; /* GA_CORE_SIZE / 4 words, host-owned */
	/* Every row's location, resolved once: the model reads and writes a
	 * few dozen fields per frame, and the table lookup each time was most
	 * of a frame's cost. */
	struct ga_model_loc loc[GA_REG_COUNT];
	unsigned int buf_limit; /* indices of per-buffer rows: 0..buf_limit-1 */
	struct ga_model_params p;
	enum ga_layout layout;
	struct ga_model_env env;
	struct ga_model_faults faults;
	struct ga_model_last last;
	/* Bumped whenever the model changes state a waiter may care about
	 * (an arm, a completed read, a reset): hosts compare it to decide
	 * whether to wake blocked pushers. */
	uint32_t events;
	/* cached locations of the arrays poll() scans (from the table) */
	uint32_t free_base, free_stride, rsize_base, rsize_stride;
	/* engine state */
	unsigned int write_index;
	unsigned int read_index;
	uint32_t write_count, read_count; /* last seen count fields */
	bool write_enabled, read_enabled; /* last seen enable bits */
	/* The write engine's 0->1 transitions as the card saw them (each one
	 * resets the ring index): a DRP's start-up makes exactly one. */
	uint32_t write_rises;
	/* per-buffer bookkeeping; sized for the largest firmware */
	uint8_t armed[GA_MODEL_MAX_BUFFERS]; /* free-list bit */
	uint8_t read_pending[GA_MODEL_MAX_BUFFERS];
	uint8_t lat_valid[GA_MODEL_MAX_BUFFERS]; /* lat_start_ns is set */
	uint8_t gpu_valid[GA_MODEL_MAX_BUFFERS]; /* gpu_start_ns is set */
	uint32_t read_len[GA_MODEL_MAX_BUFFERS];
	uint64_t lat_start_ns[GA_MODEL_MAX_BUFFERS]; /* write accepted */
	uint64_t gpu_start_ns[GA_MODEL_MAX_BUFFERS]; /* write done, waiting for re-arm */
	uint32_t free_count;			     /* armed buffers within 0..write_count */
	uint32_t read_queue;			     /* pending read requests */
	/* stream monitors [0] inbound, [1] outbound */
	struct ga_model_mon mon[2];
	uint32_t ctl_offset; /* the control word (write/read enable and counts) */
	struct ga_model_ctl_log ctl;
};

/* Reset the register block and state to power-on values (the register
 * table's reset flags): 0, or -EINVAL for a version versions.def does not
 * have, which leaves @m unusable. */
int ga_model_init(struct ga_model *m, volatile uint32_t *regs, const struct ga_model_params *p,
		  const struct ga_model_env *env);
/* A register write the host saw (API, ioctl): stores it, acts on it.
 * Writes to read-only fields and unmapped words are ignored, as the
 * firmware ignores them. */
void ga_model_reg_write(struct ga_model *m, uint32_t offset, uint32_t val);
uint32_t ga_model_reg_read(struct ga_model *m, uint32_t offset);
/* Pick up writes made behind the host's back; run the read engine. */
void ga_model_poll(struct ga_model *m);
/* The control word held @val right after a store the host observed
 * (see struct ga_model_ctl_log); the model acts on it before its next
 * frame, poll or register write.  Any context, no lock. */
void ga_model_ctl_stored(struct ga_model *m, uint32_t val);
/* A frame arrives on the input stream. */
enum ga_model_push ga_model_push(struct ga_model *m, const void *payload, uint32_t len,
				 uint8_t first_user, uint8_t last_user);
/* Same, with the payload produced by @fill only once the frame is
 * accepted (and only the bytes that fit), through env.scratch: a frame
 * that meets backpressure or is dropped costs nothing. */
enum ga_model_push ga_model_push_fill(struct ga_model *m, uint32_t len, uint8_t first_user,
				      uint8_t last_user, ga_model_fill_fn fill, void *fill_ctx);
/* Host-side removal of one buffer (not a firmware operation; the
 * upstream remove-all path leaves the free list alone, as hardware does):
 * forget write buffer @index's free-list bit, or read buffer @index's
 * pending request. */
void ga_model_forget(struct ga_model *m, bool write, unsigned int index);
/* The bus address write (@write) or read buffer @index is programmed with
 * (0 when unset): where the model's DMA for it goes. */
uint64_t ga_model_buf_addr(const struct ga_model *m, bool write, unsigned int index);
/* Is the next write buffer armed (a push would not meet backpressure)? */
bool ga_model_write_ready(const struct ga_model *m);
/* Are there read requests the engine could service now? */
bool ga_model_reads_pending(const struct ga_model *m);

#endif /* GA_MODEL_H */
