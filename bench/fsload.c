/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gafs-fsbench, control under load: how long a register read, an echo to a
 * register, a mkdir and an rmdir take while the simulated card runs flat out,
 * as ratios to the same operations on the same mount while idle (goal:
 * p50 and p99 within 2x).  Phases:
 *   idle        generator off;
 *   delivering  write engine on, generator unpaced (rate 0), and a
 *               "consumer" thread that re-arms every buffer through the
 *               mapped register block (device/registers_path), as a GPU
 *               does, so frames land as fast as the card can write them;
 *   dropping    write engine off, generator unpaced: every frame dropped;
 *   stalling    write engine on, nobody re-arms: every buffer full, the
 *               input waits.
 * The mount is the caller's (gpuasyncfs --sim, -o threads=4), with
 * NBUF write buffers made here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gpuasync/abi.h>
#include <gpuasync/regs.h>

#include "fsload.h"
#include "rearm.h"
#include "measure.h"

#define NBUF 8

struct ops {
	struct stat_out rd, wr, mk, rm;
};

/* One phase's samples, gathered over the rounds. */
struct samples {
	double *rd, *wr, *mk, *rm;
	int n;
};

static void measure(const char *dir, int n, struct samples *o)
{
	char reg[256], rb[256];

	snprintf(reg, sizeof(reg), "%s/registers/rx_frame_count", dir);
	snprintf(rb, sizeof(rb), "%s/read_buffers/0", dir);
	for (int i = 0; i < n; i++, o->n++) {
		double t0;

		o->rd[o->n] = open_read_close_us(reg);
		t0 = now_us();
		if (mnt_put(dir, "registers/ar_cache", i & 1 ? "1\n" : "2\n")) {
			perror("echo > registers/ar_cache");
			exit(1);
		}
		o->wr[o->n] = now_us() - t0;
		t0 = now_us();
		if (mkdir(rb, 0755)) {
			perror("mkdir read_buffers/0");
			exit(1);
		}
		o->mk[o->n] = now_us() - t0;
		t0 = now_us();
		if (rmdir(rb)) {
			perror("rmdir read_buffers/0");
			exit(1);
		}
		o->rm[o->n] = now_us() - t0;
	}
}

static void summarize_all(struct samples *sm, struct ops *o)
{
	o->rd = summarize(sm->rd, sm->n);
	o->wr = summarize(sm->wr, sm->n);
	o->mk = summarize(sm->mk, sm->n);
	o->rm = summarize(sm->rm, sm->n);
}

/* Put the card into phase @p (see the top of the file): the write engine
 * and the generator as the phase has them; the re-arming thread runs while
 * delivering; stalling arms every buffer once (they fill, then the input
 * waits). */
static void enter_phase(const char *dir, struct rearm *ra, int p)
{
	static const char *const engine[4] = {"0\n", "1\n", "0\n", "1\n"};
	static const char *const generator[4] = {"0\n", "1\n", "1\n", "1\n"};

	atomic_store(&ra->run, p == 1);
	mnt_put(dir, "sim/rate", "0\n");
	mnt_put(dir, "registers/write_enable", engine[p]);
	mnt_put(dir, "sim/running", generator[p]);
	if (p == 3)
		for (int i = 0; i < NBUF; i++)
			ra->regs[ra->free_off[i] / 4] = 1;
}

/* Phases take turns in ROUNDS blocks each, so that a disturbance of the
 * machine (these are shared VMs) falls on all of them alike. */
#define ROUNDS 5

int bench_load(const char *dir, int n)
{
	static const char *const names[] = {"idle", "delivering", "dropping", "stalling"};
	struct samples sm[4];
	struct ops o[4];
	struct rearm ra = {0};
	unsigned long long delivered = 0;
	int per = (n + ROUNDS - 1) / ROUNDS;
	pthread_t th;
	char rel[64];

	for (int i = 0; i < NBUF; i++) {
		snprintf(rel, sizeof(rel), "%s/buffers/%d", dir, i);
		if (mkdir(rel, 0755))
			return -1;
	}
	if (rearm_map(dir, &ra, NBUF) || pthread_create(&th, NULL, rearm_main, &ra))
		return -1;
	for (int p = 0; p < 4; p++) {
		size_t len = (size_t)(per * ROUNDS + per) * sizeof(double);

		sm[p] = (struct samples){malloc(len), malloc(len), malloc(len), malloc(len), 0};
		if (!sm[p].rd || !sm[p].wr || !sm[p].mk || !sm[p].rm)
			return -1;
	}
	measure(dir, per, &sm[0]); /* warm-up */
	sm[0].n = 0;
	for (int r = 0; r < ROUNDS; r++)
		for (int p = 0; p < 4; p++) {
			unsigned long long d0 = read_num(dir, "sim/stats/delivered");

			enter_phase(dir, &ra, p);
			measure(dir, per, &sm[p]);
			if (p == 1)
				delivered += read_num(dir, "sim/stats/delivered") - d0;
		}
	enter_phase(dir, &ra, 0);
	atomic_store(&ra.stop, true);
	pthread_join(th, NULL);
	rearm_unmap(&ra);
	for (int p = 0; p < 4; p++) {
		summarize_all(&sm[p], &o[p]);
		free(sm[p].rd);
		free(sm[p].wr);
		free(sm[p].mk);
		free(sm[p].rm);
	}

	printf("\ncontrol while the simulated card runs flat out (%d buffers, %llu frames "
	       "delivered during the delivering blocks; phases in turn, %d rounds of %d calls of "
	       "each "
	       "kind):\n\n",
	       NBUF, delivered, ROUNDS, per);
	printf("| phase | register read p50 / p99 | echo to a register p50 / p99 | mkdir p50 / p99 "
	       "| rmdir p50 / p99 | worst ratio to idle |\n|---|---|---|---|---|---|\n");
	for (int p = 0; p < 4; p++) {
		double worst = 0, r[8] = {
					  o[p].rd.p50 / o[0].rd.p50, o[p].rd.p99 / o[0].rd.p99,
					  o[p].wr.p50 / o[0].wr.p50, o[p].wr.p99 / o[0].wr.p99,
					  o[p].mk.p50 / o[0].mk.p50, o[p].mk.p99 / o[0].mk.p99,
					  o[p].rm.p50 / o[0].rm.p50, o[p].rm.p99 / o[0].rm.p99,
				  };

		for (int k = 0; k < 8; k++)
			worst = r[k] > worst ? r[k] : worst;
		printf("| %s | %.0f / %.0f us | %.0f / %.0f us | %.0f / %.0f us | %.0f / %.0f us | "
		       "%.2fx%s |\n",
		       names[p], o[p].rd.p50, o[p].rd.p99, o[p].wr.p50, o[p].wr.p99, o[p].mk.p50,
		       o[p].mk.p99, o[p].rm.p50, o[p].rm.p99, worst,
		       p ? (worst <= 2.0 ? " (goal <= 2x: met)" : " (goal <= 2x: missed)") : "");
	}
	return 0;
}
