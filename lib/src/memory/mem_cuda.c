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

#else /* GA_HAVE_CUDA_H */

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <cuda.h>

/* cuda.h maps names like cuMemAlloc to versioned symbols (cuMemAlloc_v2)
 * with macros; stringifying after expansion gives the symbol to dlsym. */
#define GA_STR_(x) #x
#define GA_STR(x)  GA_STR_(x)

/* Every driver entry point we use: one line each, name as in cuda.h. */
#define GA_CUDA_FUNCS(X)                                                                           \
	X(cuInit)                                                                                  \
	X(cuGetErrorName)                                                                          \
	X(cuGetErrorString)                                                                        \
	X(cuDeviceGetCount)                                                                        \
	X(cuDeviceGet)                                                                             \
	X(cuDeviceGetName)                                                                         \
	X(cuDevicePrimaryCtxRetain)                                                                \
	X(cuDevicePrimaryCtxRelease)                                                               \
	X(cuCtxGetCurrent)                                                                         \
	X(cuCtxSetCurrent)                                                                         \
	X(cuCtxPushCurrent)                                                                        \
	X(cuCtxPopCurrent)                                                                         \
	X(cuMemAlloc)                                                                              \
	X(cuMemFree)                                                                               \
	X(cuMemsetD8Async)                                                                         \
	X(cuMemcpyHtoDAsync)                                                                       \
	X(cuMemcpyDtoHAsync)                                                                       \
	X(cuMemHostAlloc)                                                                          \
	X(cuMemFreeHost)                                                                           \
	X(cuStreamCreate)                                                                          \
	X(cuStreamDestroy)                                                                         \
	X(cuStreamSynchronize)                                                                     \
	X(cuEventCreate)                                                                           \
	X(cuEventDestroy)                                                                          \
	X(cuEventRecord)                                                                           \
	X(cuEventSynchronize)                                                                      \
	X(cuEventQuery)                                                                            \
	X(cuPointerSetAttribute)                                                                   \
	X(cuIpcGetMemHandle)

/* Entry points we use when present (NULL otherwise). */
#define GA_CUDA_OPTIONAL(X)                                                                        \
	X(cuDeviceGetAttribute)                                                                    \
	X(cuStreamWriteValue32)                                                                    \
	X(cuStreamWriteValue64)                                                                    \
	X(cuStreamBatchMemOp)                                                                      \
	X(cuModuleLoadData)                                                                        \
	X(cuModuleGetFunction)                                                                     \
	X(cuModuleUnload)                                                                          \
	X(cuLaunchKernel)                                                                          \
	X(cuMemHostGetDevicePointer)

/* cuMemcpyBatchAsync (CUDA 12.8+; cuda.h 13 maps it to the _v2 symbol,
 * without the failIdx argument): optional, for batched reads. */
#if CUDA_VERSION >= 13000
#define GA_HAVE_BATCH 1
#else
#define GA_HAVE_BATCH 0
#endif

/* cuMemGetHandleForAddressRange (CUDA 11.7+): optional, for the dmabuf pin
 * path; present in the driver, it still needs the device attribute. */
#if CUDA_VERSION >= 11070
#define GA_HAVE_DMABUF 1
#else
#define GA_HAVE_DMABUF 0
#endif

struct cuda_fns {
#define GA_CUDA_FN_PTR(name) __typeof__(name) *name;
	GA_CUDA_FUNCS(GA_CUDA_FN_PTR)
	GA_CUDA_OPTIONAL(GA_CUDA_FN_PTR)
#if GA_HAVE_BATCH
	GA_CUDA_FN_PTR(cuMemcpyBatchAsync)
#endif
#if GA_HAVE_DMABUF
	GA_CUDA_FN_PTR(cuMemGetHandleForAddressRange)
#endif
#undef GA_CUDA_FN_PTR
};

#define STAGE_BYTES   (16u << 20) /* pinned staging ring */
#define STAGE_RECORDS 1024	  /* copies in flight out of the ring */
#define PINNED_MAX    16	  /* host_alloc regions we recognise */

/* Queued copies out of the staging ring: bytes [start, end) in ring-linear
 * positions stay busy until @ev has completed.  Consecutive small copies
 * share one record (and one event) while it is @open: an event per 8-byte
 * header would cost more than the copy. */
struct stage_rec {
	uint64_t start, end;
	unsigned int copies;
	bool open;
	CUevent ev;
};

#define REC_BYTES   (STAGE_BYTES / 64) /* close a record after this many bytes */
#define REC_COPIES  32		       /* ... or this many copies */

/*
 * Deferred writes (write_defer): a batch of at most WB_COPIES copies and
 * WB_BYTES bytes, then at most WB_DESCS descriptors, sent as one
 * cuMemcpyBatchAsync and one cuStreamBatchMemOp.  At most WB_INFLIGHT sent
 * batches may be queued on the GPU when another is sent (write_room): that
 * keeps the copy engine busy while bounding how long anything that waits
 * for the stream (a read, a free) waits behind the card's frames.
 */
#define WB_COPIES   32
#define WB_BYTES    (4u << 20)
#define WB_DESCS    64
#define WB_INFLIGHT 3

#ifdef GA_HAVE_FILL_PTX
#include "fill_ptx.h" /* ga_fill_ptx: fill.cu as PTX, NUL-terminated */
#endif

/* One job for the GPU kernel (struct ga_fill_job of fill.cu): a frame's
 * pattern, or with pattern FILL_COPY a copy from @src. */
#define FILL_COPY	  0xFFu
struct fill_job {
	uint64_t dst, src;
	uint32_t len, seq, pattern, pad;
};

/*
 * Copies of at most this many bytes from pinned host memory go into the
 * burst's kernel launch (the SMs read them over PCIe) instead of the copy
 * engine: a copy-engine operation costs a few microseconds each however
 * small, a kernel reads many small frames at once.  Larger copies keep the
 * copy engine, which moves big ones faster.  GPUASYNC_CUDA_KCOPY_MAX
 * overrides it (0: the copy engine always).
 */
#define KCOPY_MAX_DEFAULT (64u << 10)

struct pinned_region {
	char *p;
	size_t size;
	CUdeviceptr dev; /* its address for the GPU, 0 if unknown */
};

struct cuda_ctx {
	void *lib; /* dlopen handle */
	struct cuda_fns f;
	CUdevice dev;
	CUcontext ctx; /* the device's primary context (retained) */
	CUstream stream;
	/* Small aligned writes (the card's 8-byte descriptor, a doorbell)
	 * go as stream write-value operations: no staging, no copy-engine
	 * time, and a fence orders them after the copies before them. */
	bool memop32, memop64;
	/*
	 * @lock guards everything below: the staging ring (head, records)
	 * and the pinned-region list.  It is held across enqueueing a copy so
	 * that two threads' copies enter the stream in the order their ring
	 * space was taken.  Taken with no library lock order constraint (the
	 * memory layer takes no library lock).
	 */
	pthread_mutex_t lock;
	char *stage;   /* STAGE_BYTES pinned */
	uint64_t head; /* ring-linear position of the next byte */
	struct stage_rec rec[STAGE_RECORDS];
	unsigned int rec_first, rec_count;
	struct pinned_region pinned[PINNED_MAX];
	/* The batch write_defer collects (also under @lock): copies, then
	 * descriptors; wb_bytes counts the copies' bytes. */
	CUdeviceptr wb_dst[WB_COPIES], wb_src[WB_COPIES];
	size_t wb_size[WB_COPIES];
	unsigned int wb_n, wb_nd;
	size_t wb_bytes;
	CUstreamBatchMemOpParams wb_desc[WB_DESCS];
	struct fill_job wb_job[WB_COPIES]; /* the kernel's jobs, after the copies */
	unsigned int wb_nj;
	size_t kcopy_max;	    /* copies up to this size as kernel jobs (KCOPY_MAX_DEFAULT) */
	unsigned long long kcopies; /* copies made by the kernel (atomic) */
	/* The pattern generator (fill.cu): fill_state 0 untried, 1 loaded, -1
	 * unusable; fill_jump holds the PRBS jump matrices on the GPU. */
	int fill_state;
	CUmodule fill_mod;
	CUfunction fill_fn;
	CUdeviceptr fill_jump, stage_dev;
	bool wb_batch;	/* cuMemcpyBatchAsync usable for the copies (so far) */
	bool wb_memops; /* cuStreamBatchMemOp usable for the descriptors (so far) */
	/* Allocation zeroes buffers on its own stream: a mkdir must not wait
	 * for the card's frames queued on @stream. */
	CUstream astream;
	/*
	 * Batched reads (read_many): @rd_lock guards the pinned landing area
	 * and the batch argument arrays, grown on demand, and is held from
	 * queueing the copies until they are copied out, so that it is never
	 * taken under @lock nor held by a writer.
	 */
	pthread_mutex_t rd_lock;
	char *rd_stage;		  /* rd_cap bytes pinned */
	CUdeviceptr rd_stage_dev; /* its address for the GPU (0: none) */
	size_t rd_cap;
	CUdeviceptr *rd_addr; /* 2 * rd_n: destinations, then sources */
	size_t *rd_sizes;     /* rd_n */
	unsigned int rd_n;
	bool batch; /* cuMemcpyBatchAsync usable (so far) */
	/*
	 * Frees (free_later): a buffer's memory goes back to the driver on a
	 * thread of its own, after the card's queued writes, so that an rmdir
	 * waits neither for those nor for cuMemFree.  @fr_lock guards the
	 * queue; @fr_cond announces work and finished frees; @fr_busy counts
	 * frees taken off the queue and not yet done.
	 */
	pthread_mutex_t fr_lock;
	pthread_cond_t fr_cond;
	CUdeviceptr *fr_q;
	unsigned int fr_n, fr_cap, fr_busy;
	bool fr_started, fr_stop;
	pthread_t fr_thread;
	/* dma-buf export: 0 when the device and driver can, else a negative
	 * errno with the reason in dmabuf_why (set once at open). */
	int dmabuf;
	char dmabuf_why[160];
};

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" */
static const char *cu_errtext(struct cuda_ctx *c, CUresult r, char *buf, size_t len)
{
	const char *name = NULL, *str = NULL;

	if (c->f.cuGetErrorName)
		c->f.cuGetErrorName(r, &name);
	if (c->f.cuGetErrorString)
		c->f.cuGetErrorString(r, &str);
	if (name && str)
		snprintf(buf, len, "%s (%s)", name, str);
	else
		snprintf(buf, len, "CUDA error %d", (int)r);
	return buf;
}

static int cu_errno(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_INVALID_VALUE:
		return -EINVAL;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
		return -ENODEV;
	case CUDA_ERROR_NOT_PERMITTED:
		return -EPERM;
	case CUDA_ERROR_NOT_SUPPORTED:
		return -ENOTSUP;
	default:
		return -EIO;
	}
}

/* Record the failure of @what and return the matching negative errno. */
static int cu_fail(struct cuda_ctx *c, CUresult r, const char *what)
{
	char buf[160];

	return ga_err(cu_errno(r), "CUDA %s failed: %s", what, cu_errtext(c, r, buf, sizeof(buf)));
}

/*
 * Make our primary context current on this thread.  Returns true when a
 * different context was current and was pushed aside, so cu_leave must pop
 * it back; a thread with no context simply keeps ours afterwards (that is
 * what cuCtxSetCurrent does and it costs nothing later).
 */
static int cu_enter(struct cuda_ctx *c, bool *pushed)
{
	CUcontext cur = NULL;
	CUresult r;

	*pushed = false;
	r = c->f.cuCtxGetCurrent(&cur);
	if (r == CUDA_SUCCESS && cur == c->ctx)
		return 0;
	if (r == CUDA_SUCCESS && cur) {
		r = c->f.cuCtxPushCurrent(c->ctx);
		if (r == CUDA_SUCCESS)
			*pushed = true;
	} else {
		r = c->f.cuCtxSetCurrent(c->ctx);
	}
	return r == CUDA_SUCCESS ? 0 : cu_fail(c, r, "context switch");
}

static void cu_leave(struct cuda_ctx *c, bool pushed)
{
	CUcontext dummy;

	if (pushed)
		c->f.cuCtxPopCurrent(&dummy);
}

/* ---- staging ring ------------------------------------------------------ */

static int batch_send_locked(struct cuda_ctx *c);
static int fill_launch_locked(struct cuda_ctx *c, unsigned int nj);
static int check_range(const struct ga_mem_block *blk, size_t off, size_t len);

/* Put the event behind the open record's copies.  If that fails, wait for
 * the stream instead, after which every record is free.
 * Prerequisite: c->lock held, no deferred batch pending. */
static int rec_close_locked(struct cuda_ctx *c)
{
	struct stage_rec *r;
	CUresult res;

	if (!c->rec_count)
		return 0;
	r = &c->rec[(c->rec_first + c->rec_count - 1) % STAGE_RECORDS];
	if (!r->open)
		return 0;
	r->open = false;
	res = c->f.cuEventRecord(r->ev, c->stream);
	if (res == CUDA_SUCCESS)
		return 0;
	res = c->f.cuStreamSynchronize(c->stream);
	c->rec_count = 0;
	return res == CUDA_SUCCESS ? 0 : cu_fail(c, res, "staging wait");
}

/* Send the deferred batch, if any (which closes the open record), else
 * close the open record.  Prerequisite: c->lock held. */
static int stage_close_locked(struct cuda_ctx *c)
{
	if (c->wb_n || c->wb_nd || c->wb_nj)
		return batch_send_locked(c);
	return rec_close_locked(c);
}

/* Wait for the oldest staged copies and give their ring space back.
 * Prerequisite: c->lock held, rec_count > 0. */
static int stage_retire_oldest_locked(struct cuda_ctx *c)
{
	struct stage_rec *r = &c->rec[c->rec_first];
	CUresult res;
	int rc;

	if (r->open) {
		rc = stage_close_locked(c);
		if (rc || !c->rec_count)
			return rc;
	}
	res = c->f.cuEventSynchronize(r->ev);
	c->rec_first = (c->rec_first + 1) % STAGE_RECORDS;
	c->rec_count--;
	return res == CUDA_SUCCESS ? 0 : cu_fail(c, res, "staging wait");
}

/*
 * Ring space for @len bytes at ring-linear position *@pos, waiting for the
 * oldest copies where it is short (a piece never wraps: it skips to the
 * ring start instead).  Prerequisite: c->lock held, context current.
 */
static int stage_space_locked(struct cuda_ctx *c, size_t len, uint64_t *pos)
{
	uint64_t p = c->head, off = p % STAGE_BYTES;
	int rc;

	if (off + len > STAGE_BYTES)
		p += STAGE_BYTES - off;
	while (c->rec_count && (p + len - c->rec[c->rec_first].start > STAGE_BYTES ||
				c->rec_count == STAGE_RECORDS)) {
		rc = stage_retire_oldest_locked(c);
		if (rc)
			return rc;
	}
	*pos = p;
	return 0;
}

/* Add [pos, pos + len) with @copies copies to the open record, opening one
 * if none is.  Prerequisite: c->lock held, a record slot free. */
static struct stage_rec *stage_note_locked(struct cuda_ctx *c, uint64_t pos, size_t len,
					   unsigned int copies)
{
	struct stage_rec *r =
		c->rec_count ? &c->rec[(c->rec_first + c->rec_count - 1) % STAGE_RECORDS] : NULL;

	c->head = pos + len;
	if (r && r->open) {
		r->end = pos + len;
		r->copies += copies;
		return r;
	}
	r = &c->rec[(c->rec_first + c->rec_count) % STAGE_RECORDS];
	r->start = pos;
	r->end = pos + len;
	r->copies = copies;
	r->open = true;
	c->rec_count++;
	return r;
}

/*
 * Copy @len (<= STAGE_BYTES) bytes of @src into the ring and queue the
 * host-to-device copy to @dst.  Space is taken in ring-linear positions;
 * a piece never wraps (it skips to the ring start instead), and space is
 * reclaimed oldest first by waiting on that record's event.
 * Prerequisite: c->lock held, context current.
 */
static int stage_copy_locked(struct cuda_ctx *c, CUdeviceptr dst, const void *src, size_t len)
{
	struct stage_rec *r;
	uint64_t pos;
	CUresult res;
	int rc = stage_space_locked(c, len, &pos);

	if (rc)
		return rc;
	memcpy(c->stage + pos % STAGE_BYTES, src, len);
	res = c->f.cuMemcpyHtoDAsync(dst, c->stage + pos % STAGE_BYTES, len, c->stream);
	if (res != CUDA_SUCCESS)
		return cu_fail(c, res, "cuMemcpyHtoDAsync");
	r = stage_note_locked(c, pos, len, 1);
	if (r->end - r->start >= REC_BYTES || r->copies >= REC_COPIES)
		return rec_close_locked(c);
	return 0;
}

/* The region we pinned with host_alloc that holds [p, p+len), or NULL.
 * Prerequisite: c->lock held. */
static const struct pinned_region *pinned_locked(struct cuda_ctx *c, const void *p, size_t len)
{
	const char *q = p;

	for (unsigned int i = 0; i < PINNED_MAX; i++) {
		struct pinned_region *pr = &c->pinned[i];

		if (pr->p && q >= pr->p && len <= pr->size &&
		    q - pr->p <= (ptrdiff_t)(pr->size - len))
			return pr;
	}
	return NULL;
}

/* Queue a copy of host @src to device @dst on the stream, staging it if it
 * is not pinned, after the deferred batch.  Prerequisite: c->lock held,
 * context current. */
static int queue_write_locked(struct cuda_ctx *c, CUdeviceptr dst, const void *src, size_t len)
{
	int rc = stage_close_locked(c);

	if (rc)
		return rc;
	if ((len == 8 && c->memop64 && !(dst & 7)) || (len == 4 && c->memop32 && !(dst & 3))) {
		CUresult res;

		if (len == 8) {
			cuuint64_t v;

			memcpy(&v, src, 8);
			res = c->f.cuStreamWriteValue64(c->stream, dst, v,
							CU_STREAM_WRITE_VALUE_DEFAULT);
		} else {
			cuuint32_t v;

			memcpy(&v, src, 4);
			res = c->f.cuStreamWriteValue32(c->stream, dst, v,
							CU_STREAM_WRITE_VALUE_DEFAULT);
		}
		if (res == CUDA_SUCCESS)
			return 0;
		/* Not usable after all (old driver settings): copy instead,
		 * from now on. */
		ga_log("cuda: stream write-value failed (%d), using copies", (int)res);
		c->memop32 = c->memop64 = false;
	}
	if (pinned_locked(c, src, len)) {
		CUresult res = c->f.cuMemcpyHtoDAsync(dst, src, len, c->stream);

		if (res != CUDA_SUCCESS)
			rc = cu_fail(c, res, "cuMemcpyHtoDAsync");
	} else {
		const char *s = src;

		/* Pieces of at most a quarter ring: the memcpy of one piece
		 * overlaps the DMA of the previous ones. */
		while (len && !rc) {
			size_t n = len < STAGE_BYTES / 4 ? len : STAGE_BYTES / 4;

			rc = stage_copy_locked(c, dst, s, n);
			dst += n;
			s += n;
			len -= n;
		}
	}
	return rc;
}

static int queue_write(struct cuda_ctx *c, CUdeviceptr dst, const void *src, size_t len)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = queue_write_locked(c, dst, src, len);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- deferred writes (the simulated card's bursts) ------------------------ */

/*
 * Send the deferred batch: the copies as one cuMemcpyBatchAsync (single
 * copies where the driver has none or refuses), then the descriptors as
 * one cuStreamBatchMemOp (single stream writes likewise), then an event
 * behind it all, which write_room counts as one batch in flight.
 * Prerequisite: c->lock held, context current.
 */
static int batch_send_locked(struct cuda_ctx *c)
{
	unsigned int n = c->wb_n, nd = c->wb_nd, nj = c->wb_nj;
	CUresult res = CUDA_SUCCESS;
	int rc = 0;

	if (!n && !nd && !nj)
		return 0;
	c->wb_n = c->wb_nd = c->wb_nj = 0;
	c->wb_bytes = 0;
#if GA_HAVE_BATCH
	if (n > 1 && c->wb_batch) {
		CUmemcpyAttributes attr;
		size_t attr_idx = 0;

		memset(&attr, 0, sizeof(attr));
		attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		res = c->f.cuMemcpyBatchAsync(c->wb_dst, c->wb_src, c->wb_size, n, &attr, &attr_idx,
					      1, c->stream);
		if (res == CUDA_SUCCESS) {
			n = 0;
		} else {
			ga_log("cuda: batched write of %u copies failed (%d), single copies%s", n,
			       (int)res, res == CUDA_ERROR_NOT_SUPPORTED ? " from now on" : "");
			if (res == CUDA_ERROR_NOT_SUPPORTED)
				c->wb_batch = false;
		}
	}
#endif
	for (unsigned int i = 0; i < n && !rc; i++) {
		res = c->f.cuMemcpyHtoDAsync(c->wb_dst[i], (const void *)(uintptr_t)c->wb_src[i],
					     c->wb_size[i], c->stream);
		if (res != CUDA_SUCCESS)
			rc = cu_fail(c, res, "cuMemcpyHtoDAsync");
	}
	if (nj && !rc)
		rc = fill_launch_locked(c, nj);
	if (nd && !rc && c->wb_memops) {
		res = c->f.cuStreamBatchMemOp(c->stream, nd, c->wb_desc, 0);
		if (res == CUDA_SUCCESS) {
			nd = 0;
		} else {
			ga_log("cuda: batched stream writes failed (%d), single writes from now on",
			       (int)res);
			c->wb_memops = false;
		}
	}
	for (unsigned int i = 0; i < nd && !rc; i++) {
		res = c->f.cuStreamWriteValue64(c->stream, c->wb_desc[i].writeValue.address,
						c->wb_desc[i].writeValue.value64,
						CU_STREAM_WRITE_VALUE_DEFAULT);
		if (res != CUDA_SUCCESS)
			rc = cu_fail(c, res, "cuStreamWriteValue64");
	}
	if (rc)
		return rc;
	/* An event behind the batch, in the open record (a new, empty one
	 * when the copies needed no staging). */
	if (!c->rec_count || !c->rec[(c->rec_first + c->rec_count - 1) % STAGE_RECORDS].open) {
		while (c->rec_count == STAGE_RECORDS) {
			rc = stage_retire_oldest_locked(c);
			if (rc)
				return rc;
		}
		stage_note_locked(c, c->head, 0, 0);
	}
	return rec_close_locked(c);
}

/* Does [dst, dst + len) overlap a write in the deferred batch?
 * Prerequisite: c->lock held. */
static bool batch_overlaps_locked(struct cuda_ctx *c, CUdeviceptr dst, size_t len)
{
	for (unsigned int i = 0; i < c->wb_n; i++)
		if (dst < c->wb_dst[i] + c->wb_size[i] && c->wb_dst[i] < dst + len)
			return true;
	for (unsigned int i = 0; i < c->wb_nd; i++)
		if (dst < c->wb_desc[i].writeValue.address + 8 &&
		    c->wb_desc[i].writeValue.address < dst + len)
			return true;
	for (unsigned int i = 0; i < c->wb_nj; i++)
		if (dst < c->wb_job[i].dst + c->wb_job[i].len && c->wb_job[i].dst < dst + len)
			return true;
	return false;
}

/* ---- the GPU pattern generator (fill.cu) ---------------------------------- */

#define LFSR_TAPS 0x80200003u /* pattern.c's LFSR */

static uint32_t lfsr_next(uint32_t s)
{
	return (s >> 1) ^ (-(s & 1u) & LFSR_TAPS);
}

static uint32_t matvec(const uint32_t *col, uint32_t s)
{
	uint32_t r = 0;

	for (int i = 0; i < 32; i++)
		if (s & (1u << i))
			r ^= col[i];
	return r;
}

/* Load the kernel and its PRBS jump table (at open; later calls only
 * answer).  Prerequisite: c->lock held, context current. */
static bool fill_ready_locked(struct cuda_ctx *c)
{
#ifdef GA_HAVE_FILL_PTX
	uint32_t jump[32][32];
	CUresult res;

	if (c->fill_state)
		return c->fill_state > 0;
	c->fill_state = -1;
	if (!c->f.cuModuleLoadData || !c->f.cuModuleGetFunction || !c->f.cuLaunchKernel ||
	    !c->f.cuMemHostGetDevicePointer || getenv("GPUASYNC_CUDA_NO_FILL"))
		return false;
	/* M^(2^b) as columns: M^1 is one LFSR step, each next one the square. */
	for (int i = 0; i < 32; i++)
		jump[0][i] = lfsr_next(1u << i);
	for (int b = 1; b < 32; b++)
		for (int i = 0; i < 32; i++)
			jump[b][i] = matvec(jump[b - 1], jump[b - 1][i]);
	res = c->f.cuModuleLoadData(&c->fill_mod, ga_fill_ptx);
	if (res == CUDA_SUCCESS)
		res = c->f.cuModuleGetFunction(&c->fill_fn, c->fill_mod, "ga_fill");
	if (res == CUDA_SUCCESS)
		res = c->f.cuMemHostGetDevicePointer(&c->stage_dev, c->stage, 0);
	if (res == CUDA_SUCCESS)
		res = c->f.cuMemAlloc(&c->fill_jump, sizeof(jump));
	if (res == CUDA_SUCCESS)
		res = c->f.cuMemcpyHtoDAsync(c->fill_jump, jump, sizeof(jump), c->stream);
	if (res == CUDA_SUCCESS)
		res = c->f.cuStreamSynchronize(c->stream); /* @jump is on our stack */
	if (res != CUDA_SUCCESS) {
		ga_log("cuda: GPU pattern generator unusable (%d): patterns made on the CPU",
		       (int)res);
		if (c->fill_jump)
			c->f.cuMemFree(c->fill_jump);
		if (c->fill_mod)
			c->f.cuModuleUnload(c->fill_mod);
		c->fill_jump = 0;
		c->fill_mod = NULL;
		return false;
	}
	ga_log("cuda: payload patterns made on the GPU");
	c->fill_state = 1;
	return true;
#else
	(void)c;
	(void)matvec;
	(void)lfsr_next;
	return false;
#endif
}

/* Work items of one job: 32-bit word chunks of a pattern, or copy units
 * (as fill.cu's copy_job picks them). */
static uint32_t job_units(const struct fill_job *j)
{
	uint64_t a = j->dst | j->src | j->len;

	if (j->pattern != FILL_COPY)
		return ((j->len + 3) / 4 + 15) / 16; /* fill.cu's GA_FILL_CHUNK */
	return j->len / (!(a & 15) ? 16 : !(a & 7) ? 8 : !(a & 3) ? 4 : 1);
}

/* Launch the kernel over the @nj jobs of the table at @jobs (an address the
 * GPU reads: pinned, mapped host memory) on our stream: one block row per
 * job, blocks no wider than the largest job needs.
 * Prerequisite: context current, fill_state 1. */
static int fill_launch(struct cuda_ctx *c, CUdeviceptr jobs, const struct fill_job *tab,
		       unsigned int nj)
{
	uint32_t most = 1;
	unsigned int gx, bx;
	CUresult res;
	void *args[2];

	for (unsigned int i = 0; i < nj; i++)
		if (job_units(&tab[i]) > most)
			most = job_units(&tab[i]);
	bx = most < 256 ? (most + 31) / 32 * 32 : 256;
	gx = (most + bx - 1) / bx;
	if (gx > 256)
		gx = 256;
	args[0] = &jobs;
	args[1] = &c->fill_jump;
	res = c->f.cuLaunchKernel(c->fill_fn, gx, nj, 1, bx, 1, 1, 0, c->stream, args, NULL);
	return res == CUDA_SUCCESS ? 0 : cu_fail(c, res, "cuLaunchKernel(ga_fill)");
}

/* Launch the kernel over the batch's @nj jobs, its table staged in the
 * ring (the kernel reads it through the mapping).
 * Prerequisite: c->lock held, context current, fill_state 1. */
static int fill_launch_locked(struct cuda_ctx *c, unsigned int nj)
{
	struct fill_job tab[WB_COPIES];
	size_t len = nj * sizeof(struct fill_job);
	uint64_t pos, apos;
	int rc;

	/* The table first: making room may send (nothing pending) or wait.
	 * Aligned for the kernel: staged payloads leave the ring's head at
	 * any byte. */
	memcpy(tab, c->wb_job, len);
	rc = stage_space_locked(c, len + 31, &pos);
	if (rc)
		return rc;
	apos = (pos + 31) & ~(uint64_t)31;
	memcpy(c->stage + apos % STAGE_BYTES, tab, len);
	stage_note_locked(c, pos, apos - pos + len, 1);
	return fill_launch(c, c->stage_dev + apos % STAGE_BYTES, tab, nj);
}

static int cuda_write_pattern(void *ctx, const struct ga_mem_block *blk, size_t off,
			      enum ga_pattern pattern, uint32_t seq, size_t len)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	int rc = check_range(blk, off, len);

	if (rc || len == 0)
		return rc;
	if ((pattern != GA_PATTERN_PRBS && pattern != GA_PATTERN_COUNTER) || len > UINT32_MAX)
		return 1;
	rc = cu_enter(c, &pushed);
	if (rc)
		return rc;
	pthread_mutex_lock(&c->lock);
	if (!fill_ready_locked(c)) {
		rc = 1;
	} else {
		CUdeviceptr dst = (CUdeviceptr)(blk->dptr + off);

		if (batch_overlaps_locked(c, dst, len) || c->wb_nj == WB_COPIES)
			rc = batch_send_locked(c);
		if (!rc)
			c->wb_job[c->wb_nj++] = (struct fill_job){
				.dst = dst, .len = (uint32_t)len, .seq = seq, .pattern = pattern};
	}
	pthread_mutex_unlock(&c->lock);
	cu_leave(c, pushed);
	return rc;
}

static int check_range(const struct ga_mem_block *blk, size_t off, size_t len);
static int batch_send_locked(struct cuda_ctx *c);

static int cuda_write_defer(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
			    size_t len)
{
	struct cuda_ctx *c = ctx;
	CUdeviceptr dst;
	bool pushed;
	int rc = check_range(blk, off, len);

	if (rc || len == 0)
		return rc;
	rc = cu_enter(c, &pushed);
	if (rc)
		return rc;
	dst = (CUdeviceptr)(blk->dptr + off);
	pthread_mutex_lock(&c->lock);
	if (batch_overlaps_locked(c, dst, len))
		rc = batch_send_locked(c);
	if (rc) {
		/* nothing more */
	} else if (len == 8 && !(dst & 7) && c->memop64) {
		CUstreamBatchMemOpParams *p;

		if (c->wb_nd == WB_DESCS)
			rc = batch_send_locked(c);
		if (!rc) {
			p = &c->wb_desc[c->wb_nd++];
			memset(p, 0, sizeof(*p));
			p->writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
			p->writeValue.address = dst;
			memcpy(&p->writeValue.value64, src, 8);
			p->writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
		}
	} else if (len > WB_BYTES) {
		rc = queue_write_locked(c, dst, src, len); /* sends the batch first */
	} else {
		const struct pinned_region *pr = pinned_locked(c, src, len);
		/* A small copy goes to the kernel when its source has a GPU
		 * address (KCOPY_MAX_DEFAULT); @from is what the copy reads. */
		bool kernel = len <= c->kcopy_max && c->fill_state > 0 && (!pr || pr->dev);
		CUdeviceptr from = 0;
		uint64_t pos;

		/* Room first: staging below must stay behind the send. */
		if (kernel ? c->wb_nj == WB_COPIES
			   : (c->wb_n == WB_COPIES || c->wb_bytes + len > WB_BYTES))
			rc = batch_send_locked(c);
		if (!rc && pr) {
			from = kernel ? pr->dev + (uint64_t)((const char *)src - pr->p)
				      : (CUdeviceptr)(uintptr_t)src;
		} else if (!rc) {
			rc = stage_space_locked(c, len, &pos);
			if (!rc) {
				memcpy(c->stage + pos % STAGE_BYTES, src, len);
				stage_note_locked(c, pos, len, 1);
				from = kernel ? c->stage_dev + pos % STAGE_BYTES
					      : (CUdeviceptr)(uintptr_t)(c->stage +
									 pos % STAGE_BYTES);
			}
		}
		if (rc) {
			/* nothing more */
		} else if (kernel) {
			c->wb_job[c->wb_nj++] = (struct fill_job){.dst = dst,
								  .src = from,
								  .len = (uint32_t)len,
								  .pattern = FILL_COPY};
			__atomic_add_fetch(&c->kcopies, 1, __ATOMIC_RELAXED);
		} else {
			c->wb_src[c->wb_n] = from;
			c->wb_dst[c->wb_n] = dst;
			c->wb_size[c->wb_n++] = len;
			c->wb_bytes += len;
		}
	}
	pthread_mutex_unlock(&c->lock);
	cu_leave(c, pushed);
	return rc;
}

static void stage_reap_locked(struct cuda_ctx *c);

/* Send the deferred batch now.  Also what every other call on the context
 * does first (batch_sync), so nothing ever waits behind an unsent batch. */
static int cuda_write_flush(void *ctx)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	int rc = cu_enter(c, &pushed);

	if (rc)
		return rc;
	pthread_mutex_lock(&c->lock);
	rc = stage_close_locked(c);
	stage_reap_locked(c); /* what write_room without waiting goes by */
	pthread_mutex_unlock(&c->lock);
	cu_leave(c, pushed);
	return rc;
}

/* Give back the records whose copies have landed, without waiting.
 * Prerequisite: c->lock held. */
static void stage_reap_locked(struct cuda_ctx *c)
{
	while (c->rec_count && !c->rec[c->rec_first].open &&
	       c->f.cuEventQuery(c->rec[c->rec_first].ev) == CUDA_SUCCESS) {
		c->rec_first = (c->rec_first + 1) % STAGE_RECORDS;
		c->rec_count--;
	}
}

/* Could a deferred write of @bytes staged bytes go now without waiting
 * for the GPU?  Prerequisite: c->lock held. */
static bool room_locked(struct cuda_ctx *c, size_t bytes, bool batch)
{
	bool sends = c->wb_n == WB_COPIES || c->wb_bytes + bytes > WB_BYTES ||
		     c->wb_nd == WB_DESCS || c->wb_nj == WB_COPIES;
	bool empty = !c->wb_n && !c->wb_nd && !c->wb_nj;
	unsigned int closed = c->rec_count;
	uint64_t pos = c->head, off = pos % STAGE_BYTES;

	if (closed && c->rec[(c->rec_first + closed - 1) % STAGE_RECORDS].open)
		closed--;
	/* A write that sends the batch it fills, or one that asks for a batch
	 * of its own (@batch: a burst of dropped frames' one header, which no
	 * ring of buffers bounds), adds a batch to those in flight: at most
	 * WB_INFLIGHT, so that a read or a free never waits behind more. */
	if (batch && closed >= WB_INFLIGHT)
		return false;
	if (sends && !empty && closed + 1 > WB_INFLIGHT)
		return false;
	if (c->rec_count + 2 >= STAGE_RECORDS)
		return false;
	if (!bytes || !c->rec_count)
		return true;
	if (off + bytes > STAGE_BYTES)
		pos += STAGE_BYTES - off;
	return pos + bytes - c->rec[c->rec_first].start <= STAGE_BYTES;
}

static bool cuda_write_room(void *ctx, size_t bytes, bool batch, bool wait)
{
	struct cuda_ctx *c = ctx;
	bool pushed, ok;

	if (bytes > WB_BYTES)
		return true; /* goes as a plain queued write: may wait inside */
	if (!wait) {
		/* Asked under the card's model lock: no driver call (one can
		 * block for milliseconds while another thread allocates or
		 * frees), no waiting for our lock. */
		if (pthread_mutex_trylock(&c->lock))
			return false;
		ok = room_locked(c, bytes, batch);
		pthread_mutex_unlock(&c->lock);
		return ok;
	}
	if (cu_enter(c, &pushed))
		return true; /* the write will report the failure */
	pthread_mutex_lock(&c->lock);
	stage_reap_locked(c);
	ok = room_locked(c, bytes, batch);
	while (!ok) {
		if (c->rec_count && !c->rec[c->rec_first].open) {
			/* Wait for the oldest batch without the lock, so that
			 * readers and writers on other threads go on. */
			CUevent ev = c->rec[c->rec_first].ev;

			pthread_mutex_unlock(&c->lock);
			c->f.cuEventSynchronize(ev);
			pthread_mutex_lock(&c->lock);
			stage_reap_locked(c);
		} else if (c->rec_count || c->wb_n || c->wb_nd || c->wb_nj) {
			if (stage_close_locked(c))
				break;
		} else {
			break;
		}
		ok = room_locked(c, bytes, batch);
	}
	pthread_mutex_unlock(&c->lock);
	cu_leave(c, pushed);
	return true;
}

static int check_range(const struct ga_mem_block *blk, size_t off, size_t len)
{
	if (off > blk->size || len > blk->size - off)
		return ga_err(-ERANGE, "GPU buffer access [%zu, +%zu) outside its %zu bytes", off,
			      len, blk->size);
	return 0;
}

/* ---- ops ---------------------------------------------------------------- */

/* Send a deferred batch before anything that must see its writes (a read,
 * a wait for the stream, a free).  Prerequisite: context current. */
static int batch_sync(struct cuda_ctx *c)
{
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (c->wb_n || c->wb_nd || c->wb_nj)
		rc = batch_send_locked(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void frees_wait(struct cuda_ctx *c);

/* Everything queued so far has happened: writes landed, frees done. */
static int cuda_sync(void *ctx)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	CUresult res;
	int rc = cu_enter(c, &pushed);

	if (rc)
		return rc;
	rc = batch_sync(c);
	res = c->f.cuStreamSynchronize(c->stream);
	cu_leave(c, pushed);
	frees_wait(c);
	if (rc)
		return rc;
	return res == CUDA_SUCCESS ? 0 : cu_fail(c, res, "cuStreamSynchronize");
}

/* Microseconds on the monotonic clock, for the log's timings. */
static double mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
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
	rc = cu_enter(c, &pushed);
	if (rc)
		return rc;
	t0 = mono_us();
	res = c->f.cuMemAlloc(&d, size);
	if (res == CUDA_ERROR_OUT_OF_MEMORY) {
		/* Memory an rmdir gave back may still be on its way. */
		frees_wait(c);
		res = c->f.cuMemAlloc(&d, size);
	}
	if (res != CUDA_SUCCESS) {
		rc = cu_fail(c, res, "cuMemAlloc");
		goto out;
	}
	t1 = mono_us();
	/* GPUDirect RDMA needs synchronous memory operations on this range:
	 * without it a CPU-side copy can complete before third-party writes
	 * to the same memory are visible. */
	res = c->f.cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d);
	if (res != CUDA_SUCCESS) {
		rc = cu_fail(c, res, "cuPointerSetAttribute(SYNC_MEMOPS)");
		goto out_free;
	}
	res = c->f.cuMemsetD8Async(d, 0, size, c->astream);
	if (res == CUDA_SUCCESS)
		res = c->f.cuStreamSynchronize(c->astream);
	if (res != CUDA_SUCCESS) {
		rc = cu_fail(c, res, "zeroing the buffer");
		goto out_free;
	}
	blk->dptr = (uint64_t)d;
	blk->host = NULL;
	blk->size = size;
	blk->priv = NULL;
	ga_log("cuda: allocated %zu bytes at 0x%llx (cuMemAlloc %.0f us, zeroing %.0f us)", size,
	       (unsigned long long)d, t1 - t0, mono_us() - t1);
	goto out;

out_free:
	c->f.cuMemFree(d);
out:
	cu_leave(c, pushed);
	return rc;
}

/* Send what waits, wait for the card's queued writes, then free @n blocks.
 * Prerequisite: context current. */
static void free_now(struct cuda_ctx *c, const CUdeviceptr *d, unsigned int n)
{
	double t0 = mono_us(), t1;

	/* Queued copies may still target this memory. */
	batch_sync(c);
	c->f.cuStreamSynchronize(c->stream);
	t1 = mono_us();
	for (unsigned int i = 0; i < n; i++) {
		CUresult res = c->f.cuMemFree(d[i]);

		if (res != CUDA_SUCCESS)
			cu_fail(c, res, "cuMemFree");
	}
	ga_log("cuda: freed %u block%s at 0x%llx%s (waiting for the stream %.0f us, cuMemFree "
	       "%.0f us)",
	       n, n == 1 ? "" : "s", (unsigned long long)d[0], n > 1 ? "..." : "", t1 - t0,
	       mono_us() - t1);
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
		if (cu_enter(c, &pushed) == 0) {
			free_now(c, q, n);
			cu_leave(c, pushed);
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
static bool free_later(struct cuda_ctx *c, CUdeviceptr d)
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
static void frees_wait(struct cuda_ctx *c)
{
	pthread_mutex_lock(&c->fr_lock);
	while (c->fr_n || c->fr_busy)
		pthread_cond_wait(&c->fr_cond, &c->fr_lock);
	pthread_mutex_unlock(&c->fr_lock);
}

static void cuda_free(void *ctx, struct ga_mem_block *blk)
{
	struct cuda_ctx *c = ctx;
	CUdeviceptr d = (CUdeviceptr)blk->dptr;
	bool pushed;

	if (!d)
		return;
	blk->dptr = 0;
	if (free_later(c, d))
		return;
	if (cu_enter(c, &pushed))
		return;
	free_now(c, &d, 1);
	cu_leave(c, pushed);
}

static int cuda_read(void *ctx, const struct ga_mem_block *blk, size_t off, void *dst, size_t len)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	CUresult res;
	int rc = check_range(blk, off, len);

	if (rc || len == 0)
		return rc;
	rc = cu_enter(c, &pushed);
	if (rc)
		return rc;
	/* On our stream, so every write queued before is already in. */
	rc = batch_sync(c);
	if (rc) {
		cu_leave(c, pushed);
		return rc;
	}
	res = c->f.cuMemcpyDtoHAsync(dst, (CUdeviceptr)(blk->dptr + off), len, c->stream);
	if (res == CUDA_SUCCESS)
		res = c->f.cuStreamSynchronize(c->stream);
	if (res != CUDA_SUCCESS)
		rc = cu_fail(c, res, "device-to-host copy");
	cu_leave(c, pushed);
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
			return cu_fail(c, res, "cuMemHostAlloc (read staging)");
		if (c->rd_stage)
			c->f.cuMemFreeHost(c->rd_stage);
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
 * Gather with one kernel launch where the kernel is loaded: each job copies
 * one buffer's bytes into the landing area, its table after the landed
 * bytes.  Returns 1 when it cannot (the caller copies instead).
 * Prerequisite: c->rd_lock held, context current, room reserved for
 * rd_gather_bytes(n, len).
 */
static size_t rd_table_off(unsigned int n, size_t len)
{
	return ((size_t)n * len + 63) & ~(size_t)63;
}

static size_t rd_gather_bytes(unsigned int n, size_t len)
{
	return rd_table_off(n, len) + (size_t)n * sizeof(struct fill_job);
}

static int rd_gather_locked(struct cuda_ctx *c, const struct ga_mem_block *const *blks,
			    unsigned int n, size_t off, size_t len)
{
	struct fill_job *tab = (struct fill_job *)(c->rd_stage + rd_table_off(n, len));
	int rc;

	if (c->fill_state <= 0 || !c->rd_stage_dev || n > 65535 || len > UINT32_MAX)
		return 1;
	for (unsigned int i = 0; i < n; i++)
		tab[i] = (struct fill_job){.dst = c->rd_stage_dev + (uint64_t)i * len,
					   .src = blks[i]->dptr + off,
					   .len = (uint32_t)len,
					   .pattern = FILL_COPY};
	rc = fill_launch(c, c->rd_stage_dev + rd_table_off(n, len), tab, n);
	if (!rc)
		__atomic_add_fetch(&c->kcopies, n, __ATOMIC_RELAXED);
	return rc;
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
			return cu_fail(c, res, "device-to-host copy");
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
		rc = check_range(blks[i], off, len);
	if (rc || n == 0 || len == 0)
		return rc;
	if (len > SIZE_MAX / n)
		return ga_err(-EOVERFLOW, "batched read of %u x %zu bytes", n, len);
	rc = cu_enter(c, &pushed);
	if (rc)
		return rc;
	rc = batch_sync(c);
	if (rc) {
		cu_leave(c, pushed);
		return rc;
	}
	pthread_mutex_lock(&c->rd_lock);
	rc = rd_reserve_locked(c, rd_gather_bytes(n, len), n);
	if (!rc)
		rc = rd_gather_locked(c, blks, n, off, len);
	if (rc > 0)
		rc = rd_queue_locked(c, blks, n, off, len);
	if (!rc) {
		res = c->f.cuStreamSynchronize(c->stream);
		if (res != CUDA_SUCCESS)
			rc = cu_fail(c, res, "cuStreamSynchronize");
	}
	if (!rc)
		memcpy(dst, c->rd_stage, (size_t)n * len);
	pthread_mutex_unlock(&c->rd_lock);
	cu_leave(c, pushed);
	return rc;
}

static int cuda_write_async(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
			    size_t len)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	int rc = check_range(blk, off, len);

	if (rc || len == 0)
		return rc;
	rc = cu_enter(c, &pushed);
	if (rc)
		return rc;
	rc = queue_write(c, (CUdeviceptr)(blk->dptr + off), src, len);
	cu_leave(c, pushed);
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
	rc = cu_enter(c, &pushed);
	if (rc)
		return rc;
	res = c->f.cuIpcGetMemHandle(&h, (CUdeviceptr)blk->dptr);
	cu_leave(c, pushed);
	if (res != CUDA_SUCCESS)
		return cu_fail(c, res, "cuIpcGetMemHandle");
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
	rc = cu_enter(c, &pushed);
	if (rc)
		return rc;
	res = c->f.cuMemHostAlloc(p, size, CU_MEMHOSTALLOC_PORTABLE);
	cu_leave(c, pushed);
	if (res != CUDA_SUCCESS)
		return cu_fail(c, res, "cuMemHostAlloc");
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

	if (!p || cu_enter(c, &pushed))
		return;
	batch_sync(c);
	c->f.cuStreamSynchronize(c->stream); /* copies from it may be queued */
	pthread_mutex_lock(&c->lock);
	for (unsigned int i = 0; i < PINNED_MAX; i++)
		if (c->pinned[i].p == p)
			c->pinned[i].p = NULL;
	pthread_mutex_unlock(&c->lock);
	c->f.cuMemFreeHost(p);
	cu_leave(c, pushed);
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
	if (c->ctx && cu_enter(c, &pushed) == 0) {
		if (c->stream) {
			batch_sync(c);
			c->f.cuStreamSynchronize(c->stream);
		}
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
		cu_leave(c, pushed);
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
	pthread_mutex_destroy(&c->lock);
	/* libcuda stays loaded: unloading a driver library while other code
	 * in the process (an application's own CUDA use) holds it is unsafe,
	 * and dlclose would only drop our reference anyway. */
	free(c);
}

/* ---- dma-buf export (the dmabuf pin path) -------------------------------- */

static int cuda_dmabuf_probe(void *ctx, char *why, size_t why_len)
{
	struct cuda_ctx *c = ctx;

	snprintf(why, why_len, "%s", c->dmabuf_why);
	return c->dmabuf;
}

/* The whole allocation as one dma-buf: cuMemAlloc'ed blocks are 64 KiB
 * multiples at 64 KiB aligned addresses, so both host-page rules hold. */
static int cuda_dmabuf_export(void *ctx, const struct ga_mem_block *blk, int *fd, uint64_t *offset)
{
	struct cuda_ctx *c = ctx;
	int out = -1, rc;
	double t0;
	bool pushed;
	CUresult res;

	if (c->dmabuf)
		return ga_err(c->dmabuf, "CUDA memory: %s", c->dmabuf_why);
#if GA_HAVE_DMABUF
	rc = cu_enter(c, &pushed);
	if (rc)
		return rc;
	t0 = mono_us();
	res = c->f.cuMemGetHandleForAddressRange(&out, (CUdeviceptr)blk->dptr, blk->size,
						 CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	cu_leave(c, pushed);
	if (res != CUDA_SUCCESS)
		return cu_fail(c, res, "cuMemGetHandleForAddressRange(DMA_BUF_FD)");
	/* The driver's fd is not close-on-exec: a child must not keep the
	 * GPU memory exported after we close ours. */
	if (fcntl(out, F_SETFD, FD_CLOEXEC) < 0) {
		rc = ga_err(-errno, "CUDA dma-buf fd %d: F_SETFD: %s", out, strerror(errno));
		close(out);
		return rc;
	}
	*fd = out;
	*offset = 0;
	ga_log("cuda: exported %zu bytes at 0x%llx as dma-buf fd %d (%.0f us)", blk->size,
	       (unsigned long long)blk->dptr, out, mono_us() - t0);
	return 0;
#else
	(void)blk;
	(void)fd;
	(void)offset;
	(void)out;
	(void)rc;
	(void)pushed;
	(void)res;
	(void)t0;
	return ga_err(-ENOTSUP, "CUDA memory: built with cuda.h older than 11.7 (no dma-buf)");
#endif
}

/* Can this device export dma-bufs?  Sets c->dmabuf and c->dmabuf_why. */
static void cuda_dmabuf_check(struct cuda_ctx *c, int gpu_index)
{
	int v = 0;

	c->dmabuf = -ENOTSUP;
#if GA_HAVE_DMABUF
	if (!c->f.cuMemGetHandleForAddressRange) {
		snprintf(c->dmabuf_why, sizeof(c->dmabuf_why),
			 "the NVIDIA driver's libcuda.so.1 lacks cuMemGetHandleForAddressRange "
			 "(dma-buf export needs driver 515 or later)");
		return;
	}
	if (!c->f.cuDeviceGetAttribute ||
	    c->f.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, c->dev) !=
		    CUDA_SUCCESS) {
		snprintf(c->dmabuf_why, sizeof(c->dmabuf_why),
			 "GPU %d: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED cannot be read", gpu_index);
		return;
	}
	if (v != 1) {
		snprintf(c->dmabuf_why, sizeof(c->dmabuf_why),
			 "GPU %d reports CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = %d (no dma-buf "
			 "export: the open kernel modules and a recent kernel are needed)",
			 gpu_index, v);
		return;
	}
	c->dmabuf = 0;
	snprintf(c->dmabuf_why, sizeof(c->dmabuf_why),
		 "GPU %d exports dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 1)", gpu_index);
#else
	(void)v;
	snprintf(c->dmabuf_why, sizeof(c->dmabuf_why),
		 "built with cuda.h older than 11.7 (no cuMemGetHandleForAddressRange)");
	(void)gpu_index;
#endif
}

long long ga_mem_cuda_kernel_copies(void *ctx)
{
	struct cuda_ctx *c = ctx;

	if (c->fill_state <= 0)
		return -1;
	return (long long)__atomic_load_n(&c->kcopies, __ATOMIC_RELAXED);
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
	.host_alloc = cuda_host_alloc,
	.host_free = cuda_host_free,
	.read_many = cuda_read_many,
	.dmabuf_probe = cuda_dmabuf_probe,
	.dmabuf_export = cuda_dmabuf_export,
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
	pthread_cond_init(&c->fr_cond, NULL);
	rc = load_driver(c, why, why_len);
	if (rc)
		goto out_free;

	res = c->f.cuInit(0);
	if (res != CUDA_SUCCESS) {
		const char *en = NULL;

		c->f.cuGetErrorName(res, &en);
		snprintf(why, why_len, "cuInit failed: %s", en ? en : "unknown error");
		rc = cu_errno(res);
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
			 cu_errtext(c, res, buf, sizeof(buf)));
		c->ctx = NULL;
		rc = cu_errno(res);
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
		c->memop64 = c->f.cuStreamWriteValue64 != NULL && v64;
		(void)v32;
	}
	rc = cu_enter(c, &pushed);
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
	cu_leave(c, pushed);
	if (res != CUDA_SUCCESS) {
		snprintf(why, why_len, "GPU %d: setting up copies failed: %s", gpu_index,
			 cu_errtext(c, res, buf, sizeof(buf)));
		rc = cu_errno(res);
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
	if (cu_enter(c, &pushed) == 0) {
		pthread_mutex_lock(&c->lock);
		fill_ready_locked(c);
		pthread_mutex_unlock(&c->lock);
		cu_leave(c, pushed);
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
	pthread_mutex_destroy(&c->lock);
	free(c);
	return ga_err(rc, "%s", why);
}

#endif /* GA_HAVE_CUDA_H */
