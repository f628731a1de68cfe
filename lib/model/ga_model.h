/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The GpuAsyncCore firmware model: plain C shared by libgpuasync's
 * simulated card (lib/src/sim.c) and gpuasync.ko's emulated card (kmod/).
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
 * What it models (research/gpuasynccore-facts.md §2-3): free-list arming
 * and round-robin write index over 0..write_count, the 8-byte header at +0
 * with the size doorbell at +4 and payload at +dma_data_bytes, max size and
 * overflow, drop while disabled (header still written to write address 0),
 * frame/error/timeout counters (saturating on V4), count_reset, min free
 * write buffers and read-queue watermarks, latency counters in clock
 * cycles (V1 per buffer, V4 buffer 0 with max/min), the read path in strict
 * index order with the completion word at +0 (V4) or none (V1), the V5
 * active bits, stream monitors, and injected faults.
 */
#ifndef GA_MODEL_H
#define GA_MODEL_H

#include "gpuasync/regs.h"

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
#endif

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
};

struct ga_model_params {
	unsigned int version;       /* 1..5 */
	bool latency_legacy;        /* V4/V5: 0x48/0x50/0x58 latency block */
	unsigned int max_buffers;   /* 1..16 (V1) or 1..1024 (V4+) */
	unsigned int dma_data_bytes;/* payload offset, e.g. 32 */
	uint64_t clock_hz;          /* axiClk for latency counters */
};

/* Faults armed for the next operations (host sets, model consumes). */
struct ga_model_faults {
	uint32_t write_error;   /* frames left to fail with write_error_code */
	uint32_t write_error_code;
	uint32_t write_timeout; /* frames left to time out */
	uint32_t read_error;    /* reads left to fail with read_error_code */
	uint32_t read_error_code;
};

enum ga_model_push {
	GA_PUSH_DELIVERED, /* written into a buffer */
	GA_PUSH_DROPPED,   /* engine off: dropped, header to address 0 */
	GA_PUSH_NO_BUFFER, /* engine on, next buffer not armed: try later */
};

struct ga_model {
	volatile uint32_t *regs; /* GA_CORE_SIZE / 4 words, host-owned */
	struct ga_model_params p;
	enum ga_layout layout;
	struct ga_model_env env;
	struct ga_model_faults faults;
	/* engine state */
	unsigned int write_index;
	unsigned int read_index;
	bool write_was_enabled, read_was_enabled;
	/* per-buffer bookkeeping; sized for the largest firmware */
	uint8_t armed[1024];        /* free-list bit */
	uint8_t read_pending[1024];
	uint32_t read_len[1024];
	uint64_t lat_start_ns[1024];/* write accepted */
	uint64_t gpu_start_ns[1024];/* write done, waiting for re-arm */
	uint32_t free_count;        /* armed buffers within 0..write_count */
	uint32_t read_queue;        /* pending read requests */
	/* stream monitors */
	uint64_t ib_frames, ob_frames;
	uint64_t ib_rate_t0, ob_rate_t0, ib_rate_n, ob_rate_n;
};

/* Reset the register block and state to power-on values. */
void ga_model_init(struct ga_model *m, volatile uint32_t *regs,
		   const struct ga_model_params *p, const struct ga_model_env *env);
/* A register write the host saw (API, ioctl): stores it, acts on it. */
void ga_model_reg_write(struct ga_model *m, uint32_t offset, uint32_t val);
uint32_t ga_model_reg_read(struct ga_model *m, uint32_t offset);
/* Pick up writes made behind the host's back; run the read engine. */
void ga_model_poll(struct ga_model *m);
/* A frame arrives on the input stream. */
enum ga_model_push ga_model_push(struct ga_model *m, const void *payload,
				 uint32_t len, uint8_t first_user,
				 uint8_t last_user);

#endif /* GA_MODEL_H */
