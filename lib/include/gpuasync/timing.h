/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The simulated card's "timing" pattern (gpuasync/sim.h): every payload
 * begins with a 32-byte record laid out like the LCLS-II timing system's
 * TimingHeader, which the GPU DRP finds at +dma_data_bytes of each buffer,
 * followed by counter words (word k = frame number + k, as the counter
 * pattern).  Little-endian:
 *
 *   +0   pulse ID, 56 bits, frame number + GA_TIMING_PULSE0; control byte
 *        in bits 56..63 (GA_TIMING_CONTROL: 12 in the service bits, the
 *        number LCLS-II gives an L1Accept)
 *   +8   time stamp: nanoseconds (u32), then seconds (u32): the host's
 *        CLOCK_REALTIME when the card made the frame (Unix epoch, where
 *        the timing system uses EPICS's); the one field no check compares
 *   +16  env (GA_TIMING_ENV: readout group 0)
 *   +20  evtCounter = frame number
 *   +24  two opaque words, 0
 *
 * Plain macros and one inline function, so that the GPU pattern generator
 * (lib/src/memory/fill.cu) and CUDA consumers include it too.
 */
#ifndef GPUASYNC_TIMING_H
#define GPUASYNC_TIMING_H

#include <stdint.h>

#define GA_TIMING_HDR_BYTES  32u
#define GA_TIMING_PULSE0     0x0000123400000000ull /* frame 0's pulse ID */
#define GA_TIMING_PULSE_MASK 0x00FFFFFFFFFFFFFFull
#define GA_TIMING_CONTROL    0x0Cu
#define GA_TIMING_ENV	     0x00000001u
#define GA_TIMING_TIME_OFF   8u /* the time stamp's 8 bytes */

struct ga_timing_header {
	uint64_t pulse_ctl; /* pulse ID | control << 56 */
	uint32_t time_ns, time_s;
	uint32_t env;
	uint32_t evt_counter;
	uint32_t opaque[2];
};

#ifdef __CUDACC__
#define GA_TIMING_FN static inline __host__ __device__
#else
#define GA_TIMING_FN static inline
#endif

/* Word @k (0..7) of frame @seq's record, @t its time stamp as
 * seconds << 32 | nanoseconds. */
GA_TIMING_FN uint32_t ga_timing_word(uint32_t seq, uint64_t t, uint32_t k)
{
	uint64_t pulse = (GA_TIMING_PULSE0 + seq) & GA_TIMING_PULSE_MASK;

	switch (k) {
	case 0:
		return (uint32_t)pulse;
	case 1:
		return (uint32_t)(pulse >> 32) | GA_TIMING_CONTROL << 24;
	case 2:
		return (uint32_t)t;
	case 3:
		return (uint32_t)(t >> 32);
	case 4:
		return GA_TIMING_ENV;
	case 5:
		return seq;
	default:
		return 0;
	}
}

/* The record at @p (eight little-endian words, as ga_timing_word makes
 * them) into @th, whatever the host's byte order. */
GA_TIMING_FN void ga_timing_decode(const uint8_t *p, struct ga_timing_header *th)
{
	uint32_t w[8];

	for (unsigned int k = 0; k < 8; k++)
		w[k] = (uint32_t)p[4 * k] | (uint32_t)p[4 * k + 1] << 8 |
		       (uint32_t)p[4 * k + 2] << 16 | (uint32_t)p[4 * k + 3] << 24;
	th->pulse_ctl = (uint64_t)w[1] << 32 | w[0];
	th->time_ns = w[2];
	th->time_s = w[3];
	th->env = w[4];
	th->evt_counter = w[5];
	th->opaque[0] = w[6];
	th->opaque[1] = w[7];
}

#endif /* GPUASYNC_TIMING_H */
