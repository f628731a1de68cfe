/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The CUDA memory layer's free thread: a buffer's memory goes back to the
 * driver after the card's queued writes, so that an rmdir waits neither for
 * those nor for cuMemFree.
 */
#ifdef GA_HAVE_CUDA_H

#include <stdlib.h>

#include "cuda_ctx.h"

/* Send what waits, wait for the card's queued writes, then free @n blocks.
 * Prerequisite: context current. */
void cuda_free_now(struct cuda_ctx *c, const CUdeviceptr *d, unsigned int n)
{
	double t0 = ga_mono_us(), t1;

	/* Queued copies may still target this memory. */
	cuda_batch_sync(c);
	c->f.cuStreamSynchronize(c->stream);
	t1 = ga_mono_us();
	cuda_res_park(c); /* cuMemFree waits for every kernel */
	for (unsigned int i = 0; i < n; i++) {
		CUresult res = c->f.cuMemFree(d[i]);

		if (res != CUDA_SUCCESS)
			cuda_fail(c, res, "cuMemFree");
	}
	cuda_res_unpark(c);
	ga_log("cuda: freed %u block%s at 0x%llx%s (waiting for the stream %.0f us, cuMemFree "
	       "%.0f us)",
	       n, n == 1 ? "" : "s", (unsigned long long)d[0], n > 1 ? "..." : "", t1 - t0,
	       ga_mono_us() - t1);
}

static void *free_thread(void *arg)
{
	struct cuda_ctx *c = arg;

	pthread_mutex_lock(&c->fr_lock);
	for (;;) {
		CUdeviceptr *q;
		unsigned int n;
		bool pushed;

		while (!c->fr_n && !c->fr_stop)
			pthread_cond_wait(&c->fr_cond, &c->fr_lock);
		if (!c->fr_n)
			break; /* stopping, nothing left */
		q = c->fr_q;
		n = c->fr_n;
		c->fr_q = NULL;
		c->fr_n = c->fr_cap = 0;
		c->fr_busy = n;
		pthread_mutex_unlock(&c->fr_lock);
		if (cuda_enter(c, &pushed) == 0) {
			cuda_free_now(c, q, n);
			cuda_leave(c, pushed);
		}
		free(q);
		pthread_mutex_lock(&c->fr_lock);
		c->fr_busy = 0;
		pthread_cond_broadcast(&c->fr_cond);
	}
	pthread_mutex_unlock(&c->fr_lock);
	return NULL;
}

/* Queue @d for the free thread (started on first use).  False when that
 * cannot be done: the caller frees at once. */
bool cuda_free_later(struct cuda_ctx *c, CUdeviceptr d)
{
	bool ok = false;

	pthread_mutex_lock(&c->fr_lock);
	if (!c->fr_started && !c->fr_stop &&
	    pthread_create(&c->fr_thread, NULL, free_thread, c) == 0)
		c->fr_started = true;
	if (c->fr_started && c->fr_n == c->fr_cap) {
		unsigned int cap = c->fr_cap ? 2 * c->fr_cap : 16;
		CUdeviceptr *q = realloc(c->fr_q, cap * sizeof(*q));

		if (q) {
			c->fr_q = q;
			c->fr_cap = cap;
		}
	}
	if (c->fr_started && c->fr_n < c->fr_cap) {
		c->fr_q[c->fr_n++] = d;
		pthread_cond_broadcast(&c->fr_cond);
		ok = true;
	}
	pthread_mutex_unlock(&c->fr_lock);
	return ok;
}

/* Until every free queued so far is done. */
void cuda_frees_wait(struct cuda_ctx *c)
{
	pthread_mutex_lock(&c->fr_lock);
	while (c->fr_n || c->fr_busy)
		pthread_cond_wait(&c->fr_cond, &c->fr_lock);
	pthread_mutex_unlock(&c->fr_lock);
}

#endif /* GA_HAVE_CUDA_H */
