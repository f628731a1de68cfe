/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * How a simulated or emulated card's DMA lands in memory that a consumer
 * polls and clears: every byte of a short write is stored once, as a PCIe
 * write lands.  memcpy() does not promise that: for 4 to 16 bytes the C
 * library's and the kernel's both load the first and the last word and
 * store both, so a 4-byte doorbell is stored twice.  A consumer that sees
 * the first store, takes the frame and clears the doorbell before the
 * second store (a CPU preempted between two instructions: seen in QEMU)
 * finds it set again, and the ring stalls.  Short writes are the
 * descriptor words and the read engine's completion block; a longer one is
 * a payload, which nobody else writes while the card does, and is copied
 * by memcpy() at its speed.
 */
#ifndef GPUASYNC_DMA_H
#define GPUASYNC_DMA_H

#ifdef __KERNEL__
#include <linux/string.h>
#include <linux/types.h>
#else
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#endif

/* Writes longer than this are payloads (see above). */
#define GA_DMA_EXACT_BYTES 16u

/* Store @len bytes from @src at @dst as the card's DMA does. */
static inline void ga_dma_put(void *dst, const void *src, size_t len)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	uint32_t w;

	if (len > GA_DMA_EXACT_BYTES) {
		memcpy(d, s, len);
		return;
	}
	/* Atomic stores: a compiler may not turn them into a memcpy() call. */
	while (len) {
		if (len >= 4 && !((uintptr_t)d & 3)) {
			memcpy(&w, s, 4);
			__atomic_store_n((uint32_t *)d, w, __ATOMIC_RELAXED);
			d += 4, s += 4, len -= 4;
		} else {
			__atomic_store_n(d, *s, __ATOMIC_RELAXED);
			d++, s++, len--;
		}
	}
}

#endif /* GPUASYNC_DMA_H */
