/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The frame descriptor codec: the 8-byte AxiWrDesc64 the card writes at
 * offset 0 of a write buffer after each frame (layout GA_HDR_* in abi.h).
 * One encoder and one decoder, used by the library (header files, the
 * upstream remove-one emulation, tests) and by the firmware model in both
 * the simulated and the emulated card.
 */
#ifndef GPUASYNC_FRAME_H
#define GPUASYNC_FRAME_H

#include "gpuasync/abi.h"

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
#endif

struct ga_header {
	uint32_t size;	    /* bytes at +4: the doorbell, 0 = nothing yet */
	uint8_t result;	    /* bits 1:0 */
	bool overflow;	    /* bit 2 */
	bool cont;	    /* bit 3 */
	uint8_t last_user;  /* bits 23:16 */
	uint8_t first_user; /* bits 31:24 */
};

/* The word at +0 (everything but the size). */
uint32_t ga_header_flags(const struct ga_header *h);
/* Both words, little-endian, as the card writes them. */
void ga_header_encode(const struct ga_header *h, uint8_t raw[GA_HDR_BYTES]);
void ga_header_decode(const uint8_t raw[GA_HDR_BYTES], struct ga_header *h);

#endif
