/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * GPU memory through the CUDA Driver API, loaded at run time.
 *
 * Only cuda.h is needed to build: libcuda.so.1 is dlopen()ed when a device
 * is opened, so one binary runs with and without an NVIDIA driver.  When
 * anything is missing (no driver, no GPU, cuInit failing) ga_mem_cuda_open
 * returns a negative errno and says why, and the device falls back to host
 * memory.
 *
 * Buffers are cuMemAlloc'ed in 64 KiB multiples (the RDMA pinning unit),
 * zeroed, and marked CU_POINTER_ATTRIBUTE_SYNC_MEMOPS as GPUDirect RDMA
 * requires.  Every call may come from any thread (the simulated card runs
 * in its own), so each one makes the device's primary context current
 * first, and restores a different context the caller had.
 *
 * All copies go through one stream per context so that they land in the
 * order they were issued; that is what lets the simulated card queue a
 * frame's payload and then its header (the size doorbell) without waiting:
 * a consumer polling the doorbell never sees it before the payload.  Host
 * data that is not pinned is first copied into a pinned staging ring, so
 * the caller may reuse its buffer at once and the copy engine still runs
 * asynchronously.  Reads and plain writes wait for the stream, so the
 * library's callers (the filesystem's data file, ipc consumers) always see
 * completed bytes.  read_many reads the same few bytes of many buffers (the
 * library's frame headers) into a pinned landing area with one wait: one
 * launch of the kernel of fill.cu (copy jobs), else one batched copy
 * (cuMemcpyBatchAsync), else single copies.  The simulated card's bursts
 * (write_defer) go as one batch each: copy-engine copies, one kernel launch
 * for generated patterns and small copies, then the descriptors.
 *
 * This file is the ops, allocation, reads, open and close: the top of the
 * layer, calling the others and called by none of them.  The writes
 * (staging ring, batches) are in mem_cuda_write.c, the kernel's side in
 * mem_cuda_kernel.c, frees in mem_cuda_free.c, dma-buf export in
 * mem_cuda_dmabuf.c, entering the context and CUDA's errors in cuda_ctx.c;
 * cuda_ctx.h holds what they share.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifndef GA_HAVE_CUDA_H

int ga_mem_cuda_open(int gpu_index, const struct ga_mem_ops **ops, void **ctx, char *gpu_name,
		     size_t name_len, char *why, size_t why_len)
{
	(void)gpu_index;
	(void)ops;
	(void)ctx;
	if (name_len)
		gpu_name[0] = '\0';
	snprintf(why, why_len, "built without CUDA headers");
	return ga_err(-ENOTSUP, "GPU memory: built without CUDA headers");
}

long long ga_mem_cuda_kernel_copies(void *ctx)
{
	(void)ctx;
	return -1;
}

long long ga_mem_cuda_resident_batches(void *ctx)
{
	(void)ctx;
	return -1;
}

int ga_mem_cuda_resident_work(void *ctx, uint64_t *ns, uint64_t *batches)
{
	(void)ctx;
	(void)ns;
	(void)batches;
	return -ENOTSUP;
}

#else /* GA_HAVE_CUDA_H */

#include "cuda_ctx.h"
#include "resident.h"

/* ---- ops ---------------------------------------------------------------- */

/* Everything queued so far has happened: writes landed, frees done. */
static int cuda_sync(void *ctx)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	CUresult res;
	int rc = cuda_enter(c, &pushed);

	if (rc)
		return rc;
	rc = cuda_batch_sync(c);
	res = c->f.cuStreamSynchronize(c->stream);
	cuda_leave(c, pushed);
	cuda_frees_wait(c);
	if (rc)
		return rc;
	return res == CUDA_SUCCESS ? 0 : cuda_fail(c, res, "cuStreamSynchronize");
}

static int cuda_alloc(void *ctx, size_t size, struct ga_mem_block *blk)
{
	struct cuda_ctx *c = ctx;
	CUdeviceptr d = 0;
	unsigned int one = 1;
	double t0, t1;
	bool pushed;
	CUresult res;
	int rc;

	if (size == 0 || size % GA_GPU_PAGE_SIZE)
		return ga_err(-EINVAL, "GPU buffer size %zu is not a non-zero multiple of 64 KiB",
			      size);
	rc = cuda_enter(c, &pushed);
	if (rc)
		return rc;
	t0 = ga_mono_us();
	res = c->f.cuMemAlloc(&d, size);
	if (res == CUDA_ERROR_OUT_OF_MEMORY) {
		/* Memory an rmdir gave back may still be on its way. */
		cuda_frees_wait(c);
		res = c->f.cuMemAlloc(&d, size);
	}
	/*
	 * GPUDirect RDMA pins 64 KiB pages, so a block must start on one.
	 * The driver packs blocks below 2 MiB behind earlier ones: after any
	 * other program's or library's block that is not a 64 KiB multiple
	 * (the 4 KiB one the GPU kernel's table once took) the next one is
	 * off.  Then it is made again from whole 2 MiB pages, which start on
	 * 2 MiB; the rest of the last page is unused.
	 */
	if (res == CUDA_SUCCESS && d % GA_GPU_PAGE_SIZE) {
		size_t big = (size + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);

		ga_log("cuda: block at 0x%llx is not 64 KiB aligned: %zu bytes taken instead",
		       (unsigned long long)d, big);
		cuda_mem_free(c, d);
		d = 0;
		res = c->f.cuMemAlloc(&d, big);
		if (res == CUDA_SUCCESS && d % GA_GPU_PAGE_SIZE) {
			cuda_mem_free(c, d);
			rc = ga_err(-ENOMEM, "cuMemAlloc gave no 64 KiB aligned block of %zu bytes",
				    size);
			goto out;
		}
	}
	if (res != CUDA_SUCCESS) {
		rc = cuda_fail(c, res, "cuMemAlloc");
		goto out;
	}
	t1 = ga_mono_us();
	/* GPUDirect RDMA needs synchronous memory operations on this range:
	 * without it a CPU-side copy can complete before third-party writes
	 * to the same memory are visible. */
	res = c->f.cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d);
	if (res != CUDA_SUCCESS) {
		rc = cuda_fail(c, res, "cuPointerSetAttribute(SYNC_MEMOPS)");
		goto out_free;
	}
	res = c->f.cuMemsetD8Async(d, 0, size, c->astream);
	if (res == CUDA_SUCCESS)
		res = c->f.cuStreamSynchronize(c->astream);
	if (res != CUDA_SUCCESS) {
		rc = cuda_fail(c, res, "zeroing the buffer");
		goto out_free;
	}
	blk->dptr = (uint64_t)d;
	blk->host = NULL;
	blk->size = size;
	blk->priv = NULL;
	ga_log("cuda: allocated %zu bytes at 0x%llx (cuMemAlloc %.0f us, zeroing %.0f us)", size,
	       (unsigned long long)d, t1 - t0, ga_mono_us() - t1);
	goto out;

out_free:
	cuda_mem_free(c, d);
out:
	cuda_leave(c, pushed);
	return rc;
}

static void cuda_free(void *ctx, struct ga_mem_block *blk)
{
	struct cuda_ctx *c = ctx;
	CUdeviceptr d = (CUdeviceptr)blk->dptr;
	bool pushed;

	if (!d)
		return;
	blk->dptr = 0;
	if (cuda_free_later(c, d))
		return;
	if (cuda_enter(c, &pushed))
		return;
	cuda_free_now(c, &d, 1);
	cuda_leave(c, pushed);
}

static int cuda_read(void *ctx, const struct ga_mem_block *blk, size_t off, void *dst, size_t len)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	CUresult res;
	int rc = cuda_op_enter(c, blk, off, len, &pushed);

	if (rc)
		return rc < 0 ? rc : 0;
	/* On our stream, so every write queued before is already in. */
	rc = cuda_batch_sync(c);
	if (rc) {
		cuda_leave(c, pushed);
		return rc;
	}
	res = c->f.cuMemcpyDtoHAsync(dst, (CUdeviceptr)(blk->dptr + off), len, c->stream);
	if (res == CUDA_SUCCESS)
		res = c->f.cuStreamSynchronize(c->stream);
	if (res != CUDA_SUCCESS)
		rc = cuda_fail(c, res, "device-to-host copy");
	cuda_leave(c, pushed);
	return rc;
}

/* Grow the landing area to @bytes and the argument arrays to @n copies.
 * Prerequisite: c->rd_lock held, context current. */
static int rd_reserve_locked(struct cuda_ctx *c, size_t bytes, unsigned int n)
{
	if (bytes > c->rd_cap) {
		size_t cap = (bytes + 0xFFFF) & ~(size_t)0xFFFF;
		void *p = NULL;
		CUresult res = c->f.cuMemHostAlloc(&p, cap, CU_MEMHOSTALLOC_PORTABLE);

		if (res != CUDA_SUCCESS)
			return cuda_fail(c, res, "cuMemHostAlloc (read staging)");
		if (c->rd_stage)
			cuda_host_free_pinned(c, c->rd_stage);
		c->rd_stage = p;
		c->rd_cap = cap;
		/* The gather kernel writes here through the mapping. */
		c->rd_stage_dev = 0;
		if (c->f.cuMemHostGetDevicePointer &&
		    c->f.cuMemHostGetDevicePointer(&c->rd_stage_dev, p, 0) != CUDA_SUCCESS)
			c->rd_stage_dev = 0;
	}
	if (n > c->rd_n) {
		CUdeviceptr *a = malloc(2 * (size_t)n * sizeof(*a));
		size_t *sz = malloc((size_t)n * sizeof(*sz));

		if (!a || !sz) {
			free(a);
			free(sz);
			return ga_err(-ENOMEM, "out of memory for %u batched reads", n);
		}
		free(c->rd_addr);
		free(c->rd_sizes);
		c->rd_addr = a;
		c->rd_sizes = sz;
		c->rd_n = n;
	}
	return 0;
}

/*
 * Queue the @n copies into the landing area on our stream: one
 * cuMemcpyBatchAsync when the driver has it (sources read in stream order,
 * so every write queued before is in), else one cuMemcpyDtoHAsync each.
 * A batch the driver refuses is retried as single copies (copying the same
 * bytes twice is harmless); "not supported" turns batches off for good.
 * Prerequisite: c->rd_lock held, context current, rd_reserve_locked done.
 */
static int rd_queue_locked(struct cuda_ctx *c, const struct ga_mem_block *const *blks,
			   unsigned int n, size_t off, size_t len)
{
	CUresult res;

#if GA_HAVE_BATCH
	if (c->batch) {
		CUmemcpyAttributes attr;
		size_t attr_idx = 0;

		memset(&attr, 0, sizeof(attr));
		attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		for (unsigned int i = 0; i < n; i++) {
			c->rd_addr[i] = (CUdeviceptr)(uintptr_t)(c->rd_stage + (size_t)i * len);
			c->rd_addr[n + i] = (CUdeviceptr)(blks[i]->dptr + off);
			c->rd_sizes[i] = len;
		}
		res = c->f.cuMemcpyBatchAsync(c->rd_addr, c->rd_addr + n, c->rd_sizes, n, &attr,
					      &attr_idx, 1, c->stream);
		if (res == CUDA_SUCCESS)
			return 0;
		ga_log("cuda: cuMemcpyBatchAsync failed (%d), single copies%s", (int)res,
		       res == CUDA_ERROR_NOT_SUPPORTED ? " from now on" : "");
		if (res == CUDA_ERROR_NOT_SUPPORTED)
			c->batch = false;
	}
#endif
	for (unsigned int i = 0; i < n; i++) {
		res = c->f.cuMemcpyDtoHAsync(c->rd_stage + (size_t)i * len,
					     (CUdeviceptr)(blks[i]->dptr + off), len, c->stream);
		if (res != CUDA_SUCCESS)
			return cuda_fail(c, res, "device-to-host copy");
	}
	return 0;
}

static int cuda_read_many(void *ctx, const struct ga_mem_block *const *blks, unsigned int n,
			  size_t off, void *dst, size_t len)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	CUresult res;
	int rc = 0;

	for (unsigned int i = 0; i < n && !rc; i++)
		rc = cuda_check_range(blks[i], off, len);
	if (rc || n == 0 || len == 0)
		return rc;
	if (len > SIZE_MAX / n)
		return ga_err(-EOVERFLOW, "batched read of %u x %zu bytes", n, len);
	rc = cuda_enter(c, &pushed);
	if (rc)
		return rc;
	rc = cuda_batch_sync(c);
	if (rc) {
		cuda_leave(c, pushed);
		return rc;
	}
	pthread_mutex_lock(&c->rd_lock);
	rc = rd_reserve_locked(c, cuda_rd_gather_bytes(n, len), n);
	if (!rc)
		rc = cuda_rd_gather_locked(c, blks, n, off, len);
	if (rc > 0)
		rc = rd_queue_locked(c, blks, n, off, len);
	if (!rc) {
		res = c->f.cuStreamSynchronize(c->stream);
		if (res != CUDA_SUCCESS)
			rc = cuda_fail(c, res, "cuStreamSynchronize");
	}
	if (!rc)
		memcpy(dst, c->rd_stage, (size_t)n * len);
	pthread_mutex_unlock(&c->rd_lock);
	cuda_leave(c, pushed);
	return rc;
}

static int cuda_write_async(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
			    size_t len)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	int rc = cuda_op_enter(c, blk, off, len, &pushed);

	if (rc)
		return rc < 0 ? rc : 0;
	rc = cuda_queue_write(c, (CUdeviceptr)(blk->dptr + off), src, len);
	cuda_leave(c, pushed);
	return rc;
}

static int cuda_write(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
		      size_t len)
{
	int rc = cuda_write_async(ctx, blk, off, src, len);

	return rc ? rc : cuda_sync(ctx);
}

static int cuda_ipc_handle(void *ctx, const struct ga_mem_block *blk, char *hex, size_t len)
{
	struct cuda_ctx *c = ctx;
	CUipcMemHandle h;
	bool pushed;
	CUresult res;
	int rc;

	if (len < 2 * sizeof(h.reserved) + 1)
		return ga_err(-ENOSPC, "IPC handle needs %zu bytes of text",
			      2 * sizeof(h.reserved) + 1);
	rc = cuda_enter(c, &pushed);
	if (rc)
		return rc;
	res = c->f.cuIpcGetMemHandle(&h, (CUdeviceptr)blk->dptr);
	cuda_leave(c, pushed);
	if (res != CUDA_SUCCESS)
		return cuda_fail(c, res, "cuIpcGetMemHandle");
	for (size_t i = 0; i < sizeof(h.reserved); i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)h.reserved[i]);
	return 0;
}

static int cuda_host_alloc(void *ctx, size_t size, void **p)
{
	struct cuda_ctx *c = ctx;
	unsigned int i;
	bool pushed;
	CUresult res;
	int rc;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i < PINNED_MAX && c->pinned[i].p; i++)
		;
	pthread_mutex_unlock(&c->lock);
	if (i == PINNED_MAX)
		return ga_err(-ENOSPC, "too many pinned host regions (%d)", PINNED_MAX);
	rc = cuda_enter(c, &pushed);
	if (rc)
		return rc;
	res = c->f.cuMemHostAlloc(p, size, CU_MEMHOSTALLOC_PORTABLE);
	cuda_leave(c, pushed);
	if (res != CUDA_SUCCESS)
		return cuda_fail(c, res, "cuMemHostAlloc");
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < PINNED_MAX && c->pinned[i].p; i++)
		;
	if (i < PINNED_MAX) {
		c->pinned[i].p = *p;
		c->pinned[i].size = size;
		c->pinned[i].dev = 0;
		if (c->f.cuMemHostGetDevicePointer &&
		    c->f.cuMemHostGetDevicePointer(&c->pinned[i].dev, *p, 0) != CUDA_SUCCESS)
			c->pinned[i].dev = 0;
	}
	pthread_mutex_unlock(&c->lock);
	/* Lost a race for the last slot: the memory still works, it just is
	 * copied through the staging ring. */
	return 0;
}

static void cuda_host_free(void *ctx, void *p)
{
	struct cuda_ctx *c = ctx;
	bool pushed;

	if (!p || cuda_enter(c, &pushed))
		return;
	cuda_batch_sync(c);
	c->f.cuStreamSynchronize(c->stream); /* copies from it may be queued */
	pthread_mutex_lock(&c->lock);
	for (unsigned int i = 0; i < PINNED_MAX; i++)
		if (c->pinned[i].p == p)
			c->pinned[i].p = NULL;
	pthread_mutex_unlock(&c->lock);
	cuda_host_free_pinned(c, p);
	cuda_leave(c, pushed);
}

static void cuda_close(void *ctx)
{
	struct cuda_ctx *c = ctx;
	bool pushed = false;

	if (!c)
		return;
	/* The free thread finishes what is queued, then ends. */
	pthread_mutex_lock(&c->fr_lock);
	c->fr_stop = true;
	pthread_cond_broadcast(&c->fr_cond);
	pthread_mutex_unlock(&c->fr_lock);
	if (c->fr_started)
		pthread_join(c->fr_thread, NULL);
	free(c->fr_q);
	if (c->ctx && cuda_enter(c, &pushed) == 0) {
		if (c->stream) {
			cuda_batch_sync(c);
			c->f.cuStreamSynchronize(c->stream);
		}
		cuda_res_close(c); /* before any free: those wait for it */
		for (unsigned int i = 0; i < STAGE_RECORDS; i++)
			if (c->rec[i].ev)
				c->f.cuEventDestroy(c->rec[i].ev);
		if (c->fill_jump)
			c->f.cuMemFree(c->fill_jump);
		if (c->fill_mod)
			c->f.cuModuleUnload(c->fill_mod);
		if (c->stage)
			c->f.cuMemFreeHost(c->stage);
		if (c->rd_stage)
			c->f.cuMemFreeHost(c->rd_stage);
		for (unsigned int i = 0; i < PINNED_MAX; i++)
			if (c->pinned[i].p)
				c->f.cuMemFreeHost(c->pinned[i].p);
		if (c->stream)
			c->f.cuStreamDestroy(c->stream);
		if (c->astream)
			c->f.cuStreamDestroy(c->astream);
		cuda_leave(c, pushed);
		/* Leave no dangling current context on this thread. */
		if (!pushed) {
			CUcontext cur = NULL;

			if (c->f.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == c->ctx)
				c->f.cuCtxSetCurrent(NULL);
		}
		c->f.cuDevicePrimaryCtxRelease(c->dev);
	}
	free(c->rd_addr);
	free(c->rd_sizes);
	pthread_cond_destroy(&c->fr_cond);
	pthread_mutex_destroy(&c->fr_lock);
	pthread_mutex_destroy(&c->rd_lock);
	pthread_mutex_destroy(&c->res_lock);
	pthread_mutex_destroy(&c->lock);
	/* libcuda stays loaded: unloading a driver library while other code
	 * in the process (an application's own CUDA use) holds it is unsafe,
	 * and dlclose would only drop our reference anyway. */
	free(c);
}

long long ga_mem_cuda_kernel_copies(void *ctx)
{
	struct cuda_ctx *c = ctx;

	if (c->fill_state <= 0)
		return -1;
	return (long long)__atomic_load_n(&c->kcopies, __ATOMIC_RELAXED);
}

long long ga_mem_cuda_resident_batches(void *ctx)
{
	struct cuda_ctx *c = ctx;

	if (!c->res_box)
		return -1;
	return (long long)__atomic_load_n(&c->res_box->done, __ATOMIC_ACQUIRE);
}

int ga_mem_cuda_resident_work(void *ctx, uint64_t *ns, uint64_t *batches)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	int rc;

	if (!c->res_box)
		return -ENOTSUP;
	rc = cuda_enter(c, &pushed);
	if (rc)
		return rc;
	cuda_res_park(c); /* the kernel reports as it returns */
	cuda_res_unpark(c);
	cuda_leave(c, pushed);
	pthread_mutex_lock(&c->res_lock);
	*ns = c->res_work_ns;
	*batches = c->res_work_batches;
	pthread_mutex_unlock(&c->res_lock);
	return 0;
}

static int cuda_pci_address(void *ctx, char *bdf, size_t len)
{
	struct cuda_ctx *c = ctx;

	if (!c->pci[0])
		return -ENODATA;
	snprintf(bdf, len, "%s", c->pci);
	return 0;
}

static const struct ga_mem_ops cuda_ops = {
	.name = "cuda",
	.alloc = cuda_alloc,
	.free = cuda_free,
	.read = cuda_read,
	.write = cuda_write,
	.ipc_handle = cuda_ipc_handle,
	.close = cuda_close,
	.write_async = cuda_write_async,
	.sync = cuda_sync,
	.write_defer = cuda_write_defer,
	.write_flush = cuda_write_flush,
	.write_room = cuda_write_room,
	.write_pattern = cuda_write_pattern,
	.write_from = cuda_write_from,
	.host_alloc = cuda_host_alloc,
	.host_free = cuda_host_free,
	.read_many = cuda_read_many,
	.dmabuf_probe = cuda_dmabuf_probe,
	.dmabuf_export = cuda_dmabuf_export,
	.pci_address = cuda_pci_address,
};

/* ---- open --------------------------------------------------------------- */

static int load_driver(struct cuda_ctx *c, char *why, size_t why_len)
{
	c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!c->lib) {
		snprintf(why, why_len, "no NVIDIA driver (libcuda.so.1 not found)");
		return -ENOENT;
	}
#define GA_CUDA_FN_LOAD(name)                                                                      \
	*(void **)&c->f.name = dlsym(c->lib, GA_STR(name));                                        \
	if (!c->f.name) {                                                                          \
		snprintf(why, why_len, "NVIDIA driver too old: libcuda.so.1 lacks %s",             \
			 GA_STR(name));                                                            \
		return -ENOSYS;                                                                    \
	}
	GA_CUDA_FUNCS(GA_CUDA_FN_LOAD)
#undef GA_CUDA_FN_LOAD
#define GA_CUDA_FN_OPT(name) *(void **)&c->f.name = dlsym(c->lib, GA_STR(name));
	GA_CUDA_OPTIONAL(GA_CUDA_FN_OPT)
#if GA_HAVE_BATCH
	GA_CUDA_FN_OPT(cuMemcpyBatchAsync)
#endif
#if GA_HAVE_DMABUF
	GA_CUDA_FN_OPT(cuMemGetHandleForAddressRange)
#endif
#undef GA_CUDA_FN_OPT
	return 0;
}

int ga_mem_cuda_open(int gpu_index, const struct ga_mem_ops **ops, void **ctxp, char *gpu_name,
		     size_t name_len, char *why, size_t why_len)
{
	struct cuda_ctx *c;
	char buf[160], name[128] = "";
	bool pushed = false;
	CUresult res;
	int count = 0, rc;

	if (why_len)
		why[0] = '\0';
	if (gpu_index < 0) {
		snprintf(why, why_len, "GPU memory disabled (gpu index %d)", gpu_index);
		return ga_err(-ENODEV, "%s", why);
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, why_len, "out of memory");
		return ga_err(-ENOMEM, "%s", why);
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->rd_lock, NULL);
	pthread_mutex_init(&c->fr_lock, NULL);
	pthread_mutex_init(&c->res_lock, NULL);
	pthread_cond_init(&c->fr_cond, NULL);
	rc = load_driver(c, why, why_len);
	if (rc)
		goto out_free;

	res = c->f.cuInit(0);
	if (res != CUDA_SUCCESS) {
		const char *en = NULL;

		c->f.cuGetErrorName(res, &en);
		snprintf(why, why_len, "cuInit failed: %s", en ? en : "unknown error");
		rc = cuda_errno(res);
		goto out_free;
	}
	res = c->f.cuDeviceGetCount(&count);
	if (res != CUDA_SUCCESS || count == 0) {
		snprintf(why, why_len, "no CUDA device found");
		rc = -ENODEV;
		goto out_free;
	}
	if (gpu_index >= count) {
		snprintf(why, why_len, "GPU index %d out of range (%d GPU%s present)", gpu_index,
			 count, count == 1 ? "" : "s");
		rc = -ENODEV;
		goto out_free;
	}
	res = c->f.cuDeviceGet(&c->dev, gpu_index);
	if (res == CUDA_SUCCESS)
		res = c->f.cuDeviceGetName(name, sizeof(name), c->dev);
	if (res == CUDA_SUCCESS)
		res = c->f.cuDevicePrimaryCtxRetain(&c->ctx, c->dev);
	if (res != CUDA_SUCCESS) {
		snprintf(why, why_len, "GPU %d unusable: %s", gpu_index,
			 cuda_errtext(c, res, buf, sizeof(buf)));
		c->ctx = NULL;
		rc = cuda_errno(res);
		goto out_free;
	}
	if (c->f.cuDeviceGetAttribute) {
		int v32 = 0, v64 = 0;

		/* Stream memory operations are on by default since CUDA 11.7;
		 * older drivers report them off unless the nvidia module has
		 * NVreg_EnableStreamMemOPs=1. */
		c->f.cuDeviceGetAttribute(&v32, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1,
					  c->dev);
		c->f.cuDeviceGetAttribute(&v64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
					  c->dev);
		c->memop32 = c->f.cuStreamWriteValue32 != NULL;
		/* Where it sits on the bus, for the link metrics (sysfs form). */
		{
			int dom = -1, bus = -1, slot = -1;

			if (c->f.cuDeviceGetAttribute(&dom, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
						      c->dev) == CUDA_SUCCESS &&
			    c->f.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
						      c->dev) == CUDA_SUCCESS &&
			    c->f.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
						      c->dev) == CUDA_SUCCESS &&
			    dom >= 0 && dom <= 0xffff && bus >= 0 && bus <= 0xff && slot >= 0 &&
			    slot <= 0x1f)
				snprintf(c->pci, sizeof(c->pci), "%04x:%02x:%02x.0", dom, bus,
					 slot);
		}
		c->memop64 = c->f.cuStreamWriteValue64 != NULL && v64;
		(void)v32;
	}
	rc = cuda_enter(c, &pushed);
	if (rc) {
		snprintf(why, why_len, "GPU %d: cannot make its context current", gpu_index);
		goto out_release;
	}
	res = c->f.cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING);
	if (res == CUDA_SUCCESS)
		res = c->f.cuStreamCreate(&c->astream, CU_STREAM_NON_BLOCKING);
	if (res == CUDA_SUCCESS)
		res = c->f.cuMemHostAlloc((void **)&c->stage, STAGE_BYTES,
					  CU_MEMHOSTALLOC_PORTABLE);
	for (unsigned int i = 0; i < STAGE_RECORDS && res == CUDA_SUCCESS; i++)
		res = c->f.cuEventCreate(&c->rec[i].ev, CU_EVENT_DISABLE_TIMING);
	cuda_leave(c, pushed);
	if (res != CUDA_SUCCESS) {
		snprintf(why, why_len, "GPU %d: setting up copies failed: %s", gpu_index,
			 cuda_errtext(c, res, buf, sizeof(buf)));
		rc = cuda_errno(res);
		cuda_close(c); /* releases the context and what was made */
		return ga_err(rc, "%s", why);
	}

#if GA_HAVE_BATCH
	/* GPUASYNC_CUDA_NO_BATCH (tests, comparisons): single copies. */
	c->batch = c->f.cuMemcpyBatchAsync && !getenv("GPUASYNC_CUDA_NO_BATCH");
#endif
	ga_log("cuda: batched reads %s",
	       c->batch ? "through cuMemcpyBatchAsync" : "as single copies");
	/* The card's deferred writes: batches where the driver has them
	 * (GPUASYNC_CUDA_NO_BATCH turns both off, for comparisons). */
	c->wb_batch = c->batch;
	c->wb_memops = c->memop64 && c->f.cuStreamBatchMemOp && !getenv("GPUASYNC_CUDA_NO_BATCH");
	c->kcopy_max = KCOPY_MAX_DEFAULT;
	if (getenv("GPUASYNC_CUDA_KCOPY_MAX"))
		c->kcopy_max = strtoul(getenv("GPUASYNC_CUDA_KCOPY_MAX"), NULL, 0);
	/* Load the pattern generator now: loading a module later could wait
	 * for work on other streams of the context, such as a consumer's
	 * wait for the frames the generator is to make. */
	if (cuda_enter(c, &pushed) == 0) {
		bool fill;

		pthread_mutex_lock(&c->lock);
		fill = cuda_fill_ready_locked(c);
		pthread_mutex_unlock(&c->lock);
		/* GPUASYNC_CUDA_RESIDENT=1: the card's small frames through
		 * the resident kernel (mem_cuda_resident.c). */
		if (cuda_resident_wanted()) {
			if (!fill)
				ga_log("cuda: no GPU kernel here: no resident delivery kernel");
			else if (cuda_res_open(c))
				ga_log("cuda: the card's batches go on the stream instead");
		}
		cuda_leave(c, pushed);
	}
	cuda_dmabuf_check(c, gpu_index);
	ga_log("cuda: dma-buf: %s", c->dmabuf_why);
	snprintf(gpu_name, name_len, "%s", name);
	*ops = &cuda_ops;
	*ctxp = c;
	ga_log("cuda: using GPU %d (%s)", gpu_index, name);
	return 0;

out_release:
	c->f.cuDevicePrimaryCtxRelease(c->dev);
out_free:
	pthread_cond_destroy(&c->fr_cond);
	pthread_mutex_destroy(&c->fr_lock);
	pthread_mutex_destroy(&c->rd_lock);
	pthread_mutex_destroy(&c->res_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return ga_err(rc, "%s", why);
}

#endif /* GA_HAVE_CUDA_H */

/* The provider (internal.h): CUDA memory on GPU opts.gpu_index. */
static int cuda_provider_open(const struct ga_dev *dev, const struct ga_mem_ops **ops, void **ctx,
			      char *gpu, size_t gpu_len, char *why, size_t why_len)
{
	int rc = ga_mem_cuda_open(dev->opts.gpu_index, ops, ctx, gpu, gpu_len, why, why_len);

	if (rc == 0 && !*ops)
		rc = -EIO;
	if (rc && !why[0])
		snprintf(why, why_len, "CUDA unavailable: %s", strerror(rc < 0 ? -rc : EIO));
	if (rc == 0 && !gpu[0])
		snprintf(gpu, gpu_len, "CUDA device");
	return rc;
}

const struct ga_mem_provider ga_mem_cuda = {
	.memory = "gpu",
	.flags = GA_MEMP_GPU,
	.open = cuda_provider_open,
	.note = "",
};
