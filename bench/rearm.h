/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The benches' consumer (and their writes to a mount's files): a thread that re-arms write buffers
 * 0..n-1 of a gpuasyncfs --sim mount (firmware version 4) over and over through the mapped register
 * block (device/registers_path), as a GPU does, so that frames land as fast as the card writes
 * them.
 */
#ifndef GAFS_REARM_H
#define GAFS_REARM_H

#include <stdatomic.h>
#include <stdint.h>

#define REARM_MAX 1024

struct rearm {
	volatile uint32_t *regs;
	uint32_t free_off[REARM_MAX];
	unsigned int n;
	atomic_bool run, stop; /* run: re-arming (else idle); stop: the thread ends */
};

/* Map @dir's registers and find the free-list words of buffers 0..@n-1. */
int rearm_map(const char *dir, struct rearm *ra, unsigned int n);
void rearm_unmap(struct rearm *ra);
/* The thread (pthread_create(..., rearm_main, ra)). */
void *rearm_main(void *arg);
/* Write @val to @dir's file @rel, as echo does (applied at close): 0 or -1. */
int mnt_put(const char *dir, const char *rel, const char *val);

#endif
