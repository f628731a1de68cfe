/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The simulated GpuAsyncCore card: controls that only exist on it.
 *
 * Spec string keys for ga_dev_open("sim:k=v,..."):
 *   version=1..GA_VERSION_MAX (default 4)
 *   max_buffers=N (default: all the version's map holds, ga_layout_max_buffers)
 *   dma_data_bytes=N (32)      clock_hz=N (250000000)   latency=legacy|current
 *   shm=NAME (register file /dev/shm/NAME; default gpuasync-sim-<pid>-<n>)
 *   rate=HZ size=BYTES pattern=prbs|counter|zero|timing  (frame generator defaults)
 *   link=up|down (default up; down: the card answers all-ones, see below)
 *   memory_map=N (AxiVersion's BAR0 memory-map version, 0..255; default 1,
 *             with the SysMon block at 0x24000; 0 has none; above 1 is
 *             newer than known, so readers refuse it)
 *   trap=yes|no (default no: stores through ga_dev_map_regs's mapping land in
 *             the shared block and the model sees the word as it is when it
 *             looks, so of two stores back to back it may see only the last.
 *             yes, on x86-64 Linux only: each store to the control word's page
 *             is seen one by one, so enable 0 then 1 back to back resets the
 *             ring index as on firmware.  It installs SIGSEGV and SIGTRAP
 *             handlers while a trapped mapping exists, only over the default
 *             actions: ga_dev_map_regs fails with -EBUSY in a program that has
 *             a handler of its own.  The page is then read-only to the MMU, so
 *             CUDA's cuMemHostRegister cannot pin it; docs/sim.md)
 *
 * The model runs in its own thread.  It watches the register block (which
 * lives in shared memory, so a CUDA consumer in another process can map it
 * and write free-list and read-size registers from the GPU) and services
 * it the way firmware does.  Deviation from hardware, required because
 * plain memory cannot trap a write: free-list, read-size and count_reset
 * words read back as 0 once the model has taken the request.
 *
 * All calls are thread-safe; they return -ENOTSUP on a non-sim device.
 */
#ifndef GPUASYNC_SIM_H
#define GPUASYNC_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuasync/device.h"
#include "gpuasync/sysmon.h"
#include "gpuasync/timing.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ga_pattern {
	GA_PATTERN_PRBS,    /* 32-bit LFSR words, seeded by the frame number */
	GA_PATTERN_COUNTER, /* 32-bit words: frame number + word index */
	GA_PATTERN_ZERO,
	GA_PATTERN_TIMING, /* an LCLS-II TimingHeader, then counter words
			    * (gpuasync/timing.h); its time stamp is not
			    * compared by ga_pattern_check */
	/* Batched as the DRP's detectors send L1Accepts (AxiStream Batcher
	 * v1, gpuasync/batch.h; 16-byte lines): the TimingHeader of the
	 * timing pattern as sub-frame 0, then the detector's sub-frames,
	 * sized to fill the frame (a multiple of 16 bytes; docs/sim.md). */
	GA_PATTERN_JUNGFRAU, /* tdest 1 auxiliary timing, 2 module 0 (u16 pixels) */
	GA_PATTERN_EPIXUHR,  /* tdest 1..6: six ASICs of fp16 pixels */
};
#define GA_PATTERN_LAST GA_PATTERN_EPIXUHR
const char *ga_pattern_name(enum ga_pattern p);
int ga_pattern_parse(const char *s, enum ga_pattern *p);
/* Fill/check @len bytes of frame @seq's payload: check returns the first
 * bad byte offset, or -1 when all match. */
void ga_pattern_fill(enum ga_pattern p, uint32_t seq, void *dst, uint32_t len);
long ga_pattern_check(enum ga_pattern p, uint32_t seq, const void *src, uint32_t len);
/* Batched patterns: their layout depends on the frame's size, so a
 * truncated frame is a prefix of the frame of the size it was made for.
 * Fill the first @len bytes of frame @seq of @frame_len bytes, with the
 * batch error @fault (an enum ga_batch_result; GA_BATCH_OK: none) made on
 * purpose. */
bool ga_pattern_batched(enum ga_pattern p);
void ga_pattern_fill_batch(enum ga_pattern p, uint32_t seq, int fault, uint32_t frame_len,
			   void *dst, uint32_t len);
/* 0 when pattern @p can make frames of @size bytes, else -EINVAL and why
 * (ga_last_error). */
int ga_pattern_size_ok(enum ga_pattern p, uint32_t size);

struct ga_sim_gen {
	bool running;          /* generator on */
	uint64_t rate_hz;      /* frames per second; 0 = as fast as possible */
	uint32_t size;         /* payload bytes per frame */
	enum ga_pattern pattern;
	uint64_t remaining;    /* frames left to send; 0 = unlimited */
	uint8_t first_user;    /* TUSER of the first beat (0x02 = SOF) */
	uint8_t last_user;
};
/* Frame numbers (the pattern seed, see ga_pattern_fill) start at 0 each
 * time the generator is switched on.  A frame that meets backpressure
 * (next buffer not armed) waits and keeps its number; frames that arrive
 * while the engine is off are dropped (the header still goes to write
 * buffer 0's address, as on hardware) and use up their number. */

int ga_sim_gen_get(struct ga_dev *dev, struct ga_sim_gen *gen);
int ga_sim_gen_set(struct ga_dev *dev, const struct ga_sim_gen *gen);

/* Push one frame into the card's input stream now (blocks up to
 * timeout_ms while the engine waits for a free buffer; -EAGAIN after).
 * TUSER comes from the generator settings.  Returns 0 when the card took
 * the frame, delivered or dropped: see the registers and ga_sim_stats. */
int ga_sim_push(struct ga_dev *dev, const void *payload, uint32_t len,
		int timeout_ms);

enum ga_sim_fault {
	GA_FAULT_WRITE_ERROR,   /* next frames: AXI write error (value = code 1..3) */
	GA_FAULT_WRITE_TIMEOUT, /* next frames: write DMA timeout */
	GA_FAULT_READ_ERROR,    /* next reads: AXI read error (code 1..7) */
	GA_FAULT_REG_IGNORED,   /* next register writes do nothing, as a field a
				 * firmware build holds fixed (code unused) */
	GA_FAULT_PULSE_GAP,     /* the next generated frame's number (pulse ID,
				 * evtCounter, pattern seed) jumps on by count:
				 * count frames lost before the card */
	GA_FAULT_PULSE_DUPLICATE, /* the next count generated frames repeat the
				   * number of the frame before them */
	/* Batched patterns only: the next count generated frames carry the
	 * batch error the DRP latches (gpuasync/batch.h) */
	GA_FAULT_BATCH_TOO_SHORT, /* cut to 8 bytes: a header, no whole tail */
	GA_FAULT_BATCH_ZERO_SIZE, /* the last sub-frame's tail says 0 bytes */
	GA_FAULT_BATCH_CORRUPT,	  /* sub-frame 0's tail has another width */
	GA_FAULT_BATCH_OVERFLOW,  /* the last sub-frame's tdest is 16 */
	GA_FAULT_COUNT
};
const char *ga_sim_fault_name(enum ga_sim_fault f);
/* Make the next @count operations fail with @fault (code where it applies);
 * for GA_FAULT_PULSE_GAP @count is the frame numbers to skip. */
int ga_sim_inject(struct ga_dev *dev, enum ga_sim_fault fault, uint32_t count,
		  uint32_t code);

/* The card's PCIe link: down, every register and AxiVersion word reads
 * 0xffffffff and writes are lost, as with a card that fell off the bus or
 * reloads its firmware; the library then refuses writes and register
 * reads (-ENOLINK).  The
 * model keeps its state and resumes when the link is up again. */
int ga_sim_link_set(struct ga_dev *dev, bool up);

/* The FPGA's die temperature in millidegrees C, as its SysMon measures
 * it (gpuasync/telemetry.h reads it back, with the highest and lowest
 * since power-up following each set).  The card starts at the table's
 * power-up value (gpuasync/sysmon.def).  set: -ERANGE outside what the
 * 16-bit code holds (nothing changes), -ENODEV on a card without SysMon
 * (spec memory_map=0, or a version newer than known). */
int ga_sim_temperature(struct ga_dev *dev, int32_t *mC);
int ga_sim_temperature_set(struct ga_dev *dev, int32_t mC);
/* The temperatures the card's SysMon code can hold (mC), for checking a
 * value before setting it. */
int ga_sim_temperature_range(struct ga_dev *dev, int32_t *min_mC, int32_t *max_mC);
/* The same for any SysMon sensor of gpuasync/sysmon.def (a supply in mV):
 * -EINVAL for a sensor that is not a row. */
int ga_sim_sysmon(struct ga_dev *dev, enum ga_sysmon_sensor sensor, int32_t *milli);
int ga_sim_sysmon_set(struct ga_dev *dev, enum ga_sysmon_sensor sensor, int32_t milli);
int ga_sim_sysmon_range(struct ga_dev *dev, enum ga_sysmon_sensor sensor, int32_t *min,
			int32_t *max);

struct ga_sim_stats {
	uint64_t generated;     /* frames the generator produced */
	uint64_t delivered;     /* frames written into a buffer */
	uint64_t dropped;       /* frames dropped while the engine was off
				 * (or sent to the CPU path, demux_select=0) */
	uint64_t overflowed;    /* frames truncated at the max size */
	uint64_t stalled_ns;    /* time the input waited for a free buffer */
	uint64_t reads;         /* GPU->FPGA frames received by the card */
	uint64_t read_bytes;
	uint32_t last_read_crc; /* CRC-32 of the last received frame */
	uint64_t cpu_ns;        /* CPU time the card's thread (model, generator,
				 * DMA submission) has used since open */
	uint64_t ctl_stores;    /* stores through ga_dev_map_regs's mapping to the
				 * control word's page, seen one by one (trap=yes) */
	uint32_t ctl_lost;      /* control-word values seen but not logged (more
				 * than 16 between two looks): as if missed */
};
int ga_sim_stats(struct ga_dev *dev, struct ga_sim_stats *st);

/* Copy up to @len bytes of the last GPU->FPGA frame the card received;
 * *got = bytes copied (0 when nothing was received yet).  With @len 0,
 * *got is the frame's whole length (how much a copy would need). */
int ga_sim_last_read(struct ga_dev *dev, void *dst, uint32_t len, uint32_t *got);

/*
 * Replay: the card plays a recorded run (gpuasync/record.h) into its write
 * buffers instead of generating frames, through the generator's path (the
 * model, its backpressure, the memory layer), each frame with the payload,
 * size and TUSER bytes of its record.  The whole file is checked before
 * the first frame goes (-EBADMSG naming the bad frame: nothing reaches the
 * card); it is then read again as it plays, a bounded read-ahead at a time,
 * so a file of any size plays in bounded memory.  The generator is off
 * while a replay plays (ga_sim_gen_set: -EBUSY), and a replay does not
 * start while the generator runs (-EBUSY).
 */
#define GA_SIM_REPLAY_RECORDED 0ull	  /* rate_hz: the recorded timing */
#define GA_SIM_REPLAY_MAX      UINT64_MAX /* rate_hz: as fast as buffers allow */
struct ga_sim_replay {
	const char *path;
	uint64_t rate_hz;     /* frames per second, or one of the two above */
	uint64_t repeat;      /* plays of the file; 0 = until stopped */
	uint64_t count;	      /* frames in all; 0 = every frame of every play */
	bool live;	      /* rewrite each TimingHeader: pulse IDs go on
			       * across plays, time stamps are the host's now */
	uint64_t queue_bytes; /* read-ahead bound; 0 = 16 MiB */
	/* Hold the file's payloads in the card's memory and play from there
	 * (a copy where the memory is, as a card's DMA lands them: no file
	 * read and no host copy per frame).  AUTO: where the memory makes
	 * data itself (GPU memory) and the payloads take at most 1 GiB. */
	enum ga_sim_replay_hold {
		GA_SIM_REPLAY_HOLD_AUTO,
		GA_SIM_REPLAY_HOLD_OFF,
		GA_SIM_REPLAY_HOLD_ON
	} hold;
};
struct ga_sim_replay_status {
	bool running, failed;
	uint64_t frames;      /* frames the card took (delivered or dropped) */
	uint64_t plays;	      /* plays of the file begun */
	uint64_t file_frames; /* frames in the file */
	uint64_t queued_bytes, queue_max, queued_most;
	bool held;	     /* played from a copy in the card's memory */
	uint64_t held_bytes; /* what that copy takes */
	char path[256];
	char error[400];
};
int ga_sim_replay_start(struct ga_dev *dev, const struct ga_sim_replay *r);
/* What start checks before it plays, without playing: the card free, the
 * file whole (read once through). */
int ga_sim_replay_check(struct ga_dev *dev, const struct ga_sim_replay *r);
/* Stop (the frames read ahead are dropped, not sent); 0 when none plays. */
int ga_sim_replay_stop(struct ga_dev *dev);
int ga_sim_replay_status(struct ga_dev *dev, struct ga_sim_replay_status *st);

/* Remove register files that simulated cards of killed processes left in
 * /dev/shm (default names only; lib/src/backends/fs_support_sim.c).  Returns how
 * many were removed, or a negative errno. */
int ga_sim_sweep_stale(void);

#ifdef __cplusplus
}
#endif
#endif /* GPUASYNC_SIM_H */
