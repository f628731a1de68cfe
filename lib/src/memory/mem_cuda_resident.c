/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The resident delivery kernel's host side (resident.h; the kernel is
 * fill.cu's ga_deliver).  With GPUASYNC_CUDA_RESIDENT=1 the simulated
 * card's deferred batches go into a mailbox in pinned host memory that one
 * kernel, launched once, polls: a frame then costs the card no CUDA call,
 * as a real card's DMA costs none, and reaches the GPU in about one PCIe
 * round trip instead of a copy and a stream write queued behind each other.
 *
 * A batch done is a number: the kernel writes done = seq + 1 into the
 * mailbox, so the staging ring's records carry a ticket instead of an
 * event (mem_cuda_write.c).  cuMemFree and cuMemFreeHost wait for every
 * kernel of the context to end, this one too, so the calls that free park
 * the kernel first (it returns once no batch is waiting) and start it
 * again after; batches posted meanwhile wait in the mailbox.
 *
 * Below mem_cuda_write.c and mem_cuda.c, which call into it; it calls only
 * the context.
 */
#ifdef GA_HAVE_CUDA_H

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cuda_ctx.h"
#include "resident.h"

#define RES_THREADS 256 /* a 4 KiB copy in one pass of 16-byte units */

static uint64_t res_done(struct cuda_ctx *c)
{
	return __atomic_load_n(&c->res_box->done, __ATOMIC_ACQUIRE);
}

/* The mailbox, the stream and the kernel, at open (GPUASYNC_CUDA_RESIDENT).
 * Prerequisite: context current, fill_state 1. */
int cuda_res_open(struct cuda_ctx *c)
{
	CUresult res;
	void *p = NULL;

	if (!c->f.cuStreamQuery)
		return ga_err(-ENOTSUP, "cuda: no cuStreamQuery: no resident delivery kernel");
	res = c->f.cuModuleGetFunction(&c->res_fn, c->fill_mod, "ga_deliver");
	if (res == CUDA_SUCCESS)
		res = c->f.cuMemHostAlloc(&p, sizeof(struct res_box),
					  CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
	if (res == CUDA_SUCCESS) {
		memset(p, 0, sizeof(struct res_box));
		res = c->f.cuMemHostGetDevicePointer(&c->res_box_dev, p, 0);
	}
	if (res == CUDA_SUCCESS)
		res = c->f.cuStreamCreate(&c->res_stream, CU_STREAM_NON_BLOCKING);
	if (res != CUDA_SUCCESS) {
		if (p)
			c->f.cuMemFreeHost(p);
		c->res_stream = NULL;
		return cuda_fail(c, res, "resident delivery kernel");
	}
	c->res_box = p;
	ga_log("cuda: the card's batches go through a resident kernel (%zu-byte mailbox)",
	       sizeof(struct res_box));
	return 0;
}

/* Start the kernel where it is not running and not held, from the first
 * batch not done.  Prerequisite: c->res_lock held, context current. */
static int res_launch_locked(struct cuda_ctx *c)
{
	unsigned long long first;
	void *args[3];
	CUresult res;

	if (c->res_running || c->res_hold)
		return 0;
	first = res_done(c);
	__atomic_store_n(&c->res_box->stop, 0, __ATOMIC_RELEASE);
	args[0] = &c->res_box_dev;
	args[1] = &c->fill_jump;
	args[2] = &first;
	res = c->f.cuLaunchKernel(c->res_fn, 1, 1, 1, RES_THREADS, 1, 1, 0, c->res_stream, args,
				  NULL);
	if (res != CUDA_SUCCESS)
		return cuda_fail(c, res, "cuLaunchKernel(ga_deliver)");
	c->res_running = true;
	return 0;
}

static int res_kick(struct cuda_ctx *c)
{
	int rc;

	pthread_mutex_lock(&c->res_lock);
	rc = res_launch_locked(c);
	pthread_mutex_unlock(&c->res_lock);
	return rc;
}

/* One step of waiting for the kernel: spin, then yield, then sleep; now
 * and then make sure it runs (or say why it cannot).  Prerequisite:
 * context current. */
static int res_wait_step(struct cuda_ctx *c, unsigned int *spins)
{
	unsigned int n = ++*spins;

	if (n < 256) {
#if defined(__SSE2__)
		_mm_pause();
#endif
		return 0;
	}
	if (n < 1024) {
		sched_yield();
		return 0;
	}
	if (n % 64 == 0) {
		/* A kernel that ended on an error: say so instead of waiting
		 * for ever. */
		bool running;
		CUresult res;

		pthread_mutex_lock(&c->res_lock);
		running = c->res_running;
		pthread_mutex_unlock(&c->res_lock);
		if (running) {
			res = c->f.cuStreamQuery(c->res_stream);
			if (res != CUDA_SUCCESS && res != CUDA_ERROR_NOT_READY)
				return cuda_fail(c, res, "resident delivery kernel");
		} else {
			int rc = res_kick(c);

			if (rc)
				return rc;
		}
	}
	nanosleep(&(struct timespec){0, 20000}, NULL);
	return 0;
}

/* Until the kernel has done batch @ticket - 1 and all before it.
 * Prerequisite: context current. */
int cuda_res_wait(struct cuda_ctx *c, uint64_t ticket)
{
	unsigned int spins = 0;
	int rc = 0;

	while (!rc && res_done(c) < ticket)
		rc = res_wait_step(c, &spins);
	return rc;
}

bool cuda_res_landed(struct cuda_ctx *c, uint64_t ticket)
{
	return res_done(c) >= ticket;
}

/* Until every batch posted so far is done. */
int cuda_res_drain(struct cuda_ctx *c)
{
	return cuda_res_wait(c, __atomic_load_n(&c->res_posted, __ATOMIC_ACQUIRE));
}

/* One chunk, in one 16-byte store: the kernel must never see half of one. */
static void chunk_store(struct res_chunk *dst, const uint32_t w[4])
{
#if defined(__SSE2__)
	_mm_store_si128((__m128i *)dst, _mm_loadu_si128((const __m128i *)w));
#else
	__atomic_store_n((unsigned __int128 *)dst, *(const unsigned __int128 *)w, __ATOMIC_RELAXED);
#endif
}

/*
 * Put a batch of @nj jobs and @nd descriptors into the mailbox and make
 * sure the kernel runs; *@ticket is what cuda_res_wait waits for.  Stream
 * work queued since the last batch (a large copy, a host write) lands
 * first: the kernel does not wait for the stream.
 * Prerequisite: c->lock held, context current.
 */
int cuda_res_post_locked(struct cuda_ctx *c, const struct fill_job *jobs, unsigned int nj,
			 const CUstreamBatchMemOpParams *descs, unsigned int nd, uint64_t *ticket)
{
	uint32_t words[RES_CHUNKS * 3] = {nj, nd, 0};
	uint64_t seq = c->res_posted;
	struct res_chunk *slot = c->res_box->slot[seq % RES_SLOTS];
	unsigned int n = RES_BATCH_CHUNKS(nj, nd), spins = 0;
	char *b = (char *)words + RES_HDR_BYTES;
	int rc = 0;

	if (nj > RES_JOBS || nd > RES_DESCS)
		return ga_err(-EINVAL, "cuda: a batch of %u jobs and %u descriptors", nj, nd);
	if (c->res_dirty) {
		CUresult res = c->f.cuStreamSynchronize(c->stream);

		if (res != CUDA_SUCCESS)
			return cuda_fail(c, res, "cuStreamSynchronize");
		c->res_dirty = false;
	}
	memcpy(b, jobs, nj * sizeof(*jobs));
	b += nj * RES_JOB_BYTES;
	for (unsigned int i = 0; i < nd; i++, b += RES_DESC_BYTES) {
		uint64_t a = descs[i].writeValue.address, v = descs[i].writeValue.value64;

		memcpy(b, &a, 8);
		memcpy(b + 8, &v, 8);
	}
	/* The slot is free once the batch a lap before is done. */
	while (!rc && seq - res_done(c) >= RES_SLOTS)
		rc = res_wait_step(c, &spins);
	if (rc)
		return rc;
	/* The first chunk last: the kernel takes a batch from it. */
	for (unsigned int i = n; i-- > 0;) {
		uint32_t w[4] = {words[3 * i], words[3 * i + 1], words[3 * i + 2],
				 (uint32_t)seq + 1};

		if (!i)
			__atomic_thread_fence(__ATOMIC_RELEASE);
		chunk_store(&slot[i], w);
	}
	__atomic_store_n(&c->res_posted, seq + 1, __ATOMIC_RELEASE);
	*ticket = seq + 1;
	return res_kick(c);
}

/* Stop the kernel (after the batches posted so far) and keep it stopped
 * until cuda_res_unpark: for cuMemFree and cuMemFreeHost, which wait for
 * every kernel of the context.  Prerequisite: context current. */
void cuda_res_park(struct cuda_ctx *c)
{
	bool running;

	if (!c->res_box)
		return;
	pthread_mutex_lock(&c->res_lock);
	c->res_hold++;
	running = c->res_running;
	if (running)
		__atomic_store_n(&c->res_box->stop, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->res_lock);
	if (!running)
		return;
	c->f.cuStreamSynchronize(c->res_stream);
	pthread_mutex_lock(&c->res_lock);
	c->res_running = false;
	c->res_work_ns += c->res_box->work_ns;
	c->res_work_batches += c->res_box->work_batches;
	c->res_box->work_ns = c->res_box->work_batches = 0;
	pthread_mutex_unlock(&c->res_lock);
}

/* Start it again where batches wait.  Prerequisite: context current. */
void cuda_res_unpark(struct cuda_ctx *c)
{
	if (!c->res_box)
		return;
	pthread_mutex_lock(&c->res_lock);
	if (c->res_hold && !--c->res_hold &&
	    res_done(c) < __atomic_load_n(&c->res_posted, __ATOMIC_ACQUIRE))
		res_launch_locked(c);
	pthread_mutex_unlock(&c->res_lock);
}

CUresult cuda_mem_free(struct cuda_ctx *c, CUdeviceptr d)
{
	CUresult res;

	cuda_res_park(c);
	res = c->f.cuMemFree(d);
	cuda_res_unpark(c);
	return res;
}

CUresult cuda_host_free_pinned(struct cuda_ctx *c, void *p)
{
	CUresult res;

	cuda_res_park(c);
	res = c->f.cuMemFreeHost(p);
	cuda_res_unpark(c);
	return res;
}

/* At close: the kernel ends for good, after what was posted.
 * Prerequisite: context current. */
void cuda_res_close(struct cuda_ctx *c)
{
	if (!c->res_box) {
		if (c->res_stream)
			c->f.cuStreamDestroy(c->res_stream);
		return;
	}
	cuda_res_drain(c);
	cuda_res_park(c);
	c->f.cuStreamDestroy(c->res_stream);
	c->f.cuMemFreeHost(c->res_box);
	c->res_box = NULL;
	c->res_stream = NULL;
}

#endif /* GA_HAVE_CUDA_H */
