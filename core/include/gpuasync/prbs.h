/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * SLAC's PRBS frame payload, as the aes-stream-drivers tools check it
 * (PrbsData with 32-bit words and feedback taps 1, 2, 6 and 31) and as
 * upstream's emulator generates it.  Words are little-endian:
 *   word 0     the frame's sequence number (consecutive frames count up)
 *   word 1     (length - 4) / 4, so a checker can tell a cut frame
 *   word k>=2  step(word k-1), starting from step(sequence) at word 2,
 * where step(v) shifts v left by one and feeds in the XOR of its bits 1,
 * 2, 6 and 31.  A valid frame is a multiple of 4 bytes and at least 12.
 * Used by the emulated card's upstream mode (kmod) and by tests.
 */
#ifndef GPUASYNC_PRBS_H
#define GPUASYNC_PRBS_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
#endif

#define GA_PRBS_MIN_BYTES 12u

static inline uint32_t ga_prbs_step(uint32_t v)
{
	return (v << 1) | (((v >> 1) ^ (v >> 2) ^ (v >> 6) ^ (v >> 31)) & 1u);
}

/* Fill @len bytes at @dst with frame @seq.  A length that is not a
 * multiple of 4 ends with the first bytes of the next word. */
void ga_prbs_fill(void *dst, uint32_t len, uint32_t seq);

/* Check @len bytes at @src.  Returns true when they are a whole valid
 * frame; *@seq (may be NULL) receives word 0 whenever there is one. */
bool ga_prbs_check(const void *src, uint32_t len, uint32_t *seq);

#endif /* GPUASYNC_PRBS_H */
