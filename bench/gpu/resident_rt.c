/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gpuasync-resident-rt: round trips through the CUDA memory layer's resident
 * delivery kernel (GPUASYNC_CUDA_RESIDENT, lib/src/memory/mem_cuda_resident.c),
 * one batch at a time: the host posts a frame's writes and spins until the
 * kernel's done count moves (the kernel writes it after the frame's
 * descriptor).  Three kinds of batch: a descriptor alone (8 bytes), a 4 KiB
 * timing pattern made on the GPU and its descriptor, a 4 KiB copy from host
 * memory and its descriptor.  Prints the time to post (the card's CPU
 * cost) and the round trip, p50 / p90 / p99, in microseconds, and the
 * kernel's own part of each batch by the GPU's clock: from seeing the
 * batch to its descriptors' stores (the mean; what a reader waits for
 * beyond the kernel's look across PCIe, before its own look).  Set against
 * the doorbell ping-pong (gpuasync-drp-consumer -F) it says what the kernel
 * adds to the floor.  A measurement, not a test.
 *
 *   gpuasync-resident-rt [ROUNDS]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void print(const char *what, double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	printf(" %s p50 %.2f p90 %.2f p99 %.2f", what, v[n / 2], v[n * 9 / 10], v[n * 99 / 100]);
}

int main(int argc, char **argv)
{
	enum { LEN = 4096 };
	static uint8_t payload[LEN];
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	double *post = calloc(n, sizeof(double)), *rt = calloc(n, sizeof(double));
	const char *kinds[] = {"descriptor", "timing 4096", "copy 4096"};
	const struct ga_mem_ops *o;
	struct ga_mem_block b;
	char gpu[128], why[256] = "";
	void *c;

	setenv("GPUASYNC_CUDA_RESIDENT", "1", 1);
	if (!post || !rt || n < 100 ||
	    ga_mem_cuda_open(0, &o, &c, gpu, sizeof(gpu), why, sizeof(why))) {
		fprintf(stderr, "no GPU context: %s\n", why);
		return 1;
	}
	if (ga_mem_cuda_resident_batches(c) < 0 || o->alloc(c, 64 << 10, &b)) {
		fprintf(stderr, "no resident kernel\n");
		return 1;
	}
	printf("%s, %d round trips each, us\n", gpu, n);
	for (int k = 0; k < 3; k++) {
		uint64_t w0 = 0, b0 = 0, w1 = 0, b1 = 0;

		if (ga_mem_cuda_resident_work(c, &w0, &b0)) {
			fprintf(stderr, "no report from the resident kernel\n");
			return 1;
		}
		for (int i = -n / 10; i < n; i++) {
			long long done = ga_mem_cuda_resident_batches(c);
			uint64_t size = LEN | (uint64_t)i << 32;
			double t0 = now_us(), t1;

			if (k == 1 && o->write_pattern(c, &b, 8, GA_PATTERN_TIMING, i, LEN)) {
				fprintf(stderr, "no GPU patterns\n");
				return 1;
			}
			if (k == 2)
				o->write_defer(c, &b, 8, payload, LEN);
			o->write_defer(c, &b, 0, &size, 8);
			o->write_flush(c);
			t1 = now_us();
			while (ga_mem_cuda_resident_batches(c) == done)
				;
			if (i >= 0) {
				post[i] = t1 - t0;
				rt[i] = now_us() - t0;
			}
		}
		printf("%-12s", kinds[k]);
		print("post", post, n);
		print("round trip", rt, n);
		if (!ga_mem_cuda_resident_work(c, &w1, &b1) && b1 > b0)
			printf(" kernel seen->descriptors mean %.2f", (w1 - w0) / 1e3 / (b1 - b0));
		printf("\n");
	}
	o->free(c, &b);
	o->close(c);
	return 0;
}
