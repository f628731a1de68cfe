/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The CUDA memory layer's context, shared by its files, which call each
 * other only down this list: mem_cuda.c (the ops, allocation and reads,
 * open and close), mem_cuda_free.c (the free thread), mem_cuda_write.c
 * (the staging ring, the card's batches), mem_cuda_dmabuf.c (dma-buf
 * export), mem_cuda_kernel.c (the kernel of fill.cu: patterns, copies,
 * gathered reads), mem_cuda_resident.c (the resident delivery kernel),
 * cuda_ctx.c (entering the context, CUDA's errors).
 * Only built with cuda.h (GA_HAVE_CUDA_H).
 */
#ifndef GA_MEM_CUDA_CTX_H
#define GA_MEM_CUDA_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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
	X(cuMemcpyDtoDAsync)                                                                       \
	X(cuMemHostAlloc)                                                                          \
	X(cuMemFreeHost)                                                                           \
	X(cuStreamCreate)                                                                          \
	X(cuStreamDestroy)                                                                         \
	X(cuStreamSynchronize)                                                                     \
	X(cuStreamQuery)                                                                           \
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
	uint64_t ticket; /* non-zero: done when the resident kernel is (not @ev) */
};

#define REC_BYTES  (STAGE_BYTES / 64) /* close a record after this many bytes */
#define REC_COPIES 32		      /* ... or this many copies */

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

/* One job for the GPU kernel (struct ga_fill_job of fill.cu): a frame's
 * pattern, or with pattern FILL_COPY a copy from @src. */
#define FILL_COPY 0xFFu
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
	 * Frees (cuda_free_later): a buffer's memory goes back to the driver on a
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
	/*
	 * The resident delivery kernel (mem_cuda_resident.c), when asked for
	 * (GPUASYNC_CUDA_RESIDENT): its mailbox, stream and function.
	 * @res_posted counts batches put in the mailbox (written under @lock);
	 * @res_dirty says stream work was queued since the last batch (under
	 * @lock); @res_lock guards whether the kernel runs and who holds it
	 * stopped (taken under @lock, never the other way round).
	 */
	struct res_box *res_box;
	CUdeviceptr res_box_dev;
	CUstream res_stream;
	CUfunction res_fn;
	uint64_t res_posted;
	bool res_dirty;
	pthread_mutex_t res_lock;
	bool res_running;
	unsigned int res_hold;
	uint64_t res_work_ns, res_work_batches; /* the kernel's reports (under @res_lock) */
	bool fill_patterns; /* patterns on the GPU (not GPUASYNC_CUDA_NO_FILL) */
	/* dma-buf export: 0 when the device and driver can, else a negative
	 * errno with the reason in dmabuf_why (set once at open). */
	int dmabuf;
	char dmabuf_why[160];
	char pci[16]; /* the GPU's PCI address (sysfs form), "" when CUDA did not say */
};

/* GPUASYNC_CUDA_RESIDENT set and not "0": the card's batches through the
 * resident delivery kernel (mem_cuda_resident.c). */
static inline bool cuda_resident_wanted(void)
{
	const char *v = getenv("GPUASYNC_CUDA_RESIDENT");

	return v && strcmp(v, "0");
}

/* ---- shared between the files (see each for what it does) -------------- */

/* cuda_ctx.c */
/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" into @buf */
const char *cuda_errtext(struct cuda_ctx *c, CUresult r, char *buf, size_t len);
int cuda_errno(CUresult r);
int cuda_fail(struct cuda_ctx *c, CUresult r, const char *what);
int cuda_enter(struct cuda_ctx *c, bool *pushed);
void cuda_leave(struct cuda_ctx *c, bool pushed);
int cuda_check_range(const struct ga_mem_block *blk, size_t off, size_t len);
int cuda_op_enter(struct cuda_ctx *c, const struct ga_mem_block *blk, size_t off, size_t len,
		  bool *pushed);

/* mem_cuda_kernel.c */
bool cuda_fill_ready_locked(struct cuda_ctx *c);
int cuda_fill_launch(struct cuda_ctx *c, CUdeviceptr jobs, const struct fill_job *tab,
		     unsigned int nj);
int cuda_rd_gather_locked(struct cuda_ctx *c, const struct ga_mem_block *const *blks,
			  unsigned int n, size_t off, size_t len);

/* The gathered read's landing area: the @n results of @len bytes, then
 * the kernel's job table, 64-byte aligned. */
static inline size_t cuda_rd_table_off(unsigned int n, size_t len)
{
	return ((size_t)n * len + 63) & ~(size_t)63;
}

static inline size_t cuda_rd_gather_bytes(unsigned int n, size_t len)
{
	return cuda_rd_table_off(n, len) + (size_t)n * sizeof(struct fill_job);
}

/* mem_cuda_write.c */
int cuda_queue_write(struct cuda_ctx *c, CUdeviceptr dst, const void *src, size_t len);
int cuda_write_defer(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
		     size_t len);
int cuda_write_flush(void *ctx);
bool cuda_write_room(void *ctx, size_t bytes, bool batch, bool wait);
int cuda_write_from(void *ctx, const struct ga_mem_block *blk, size_t off,
		    const struct ga_mem_block *src, size_t src_off, size_t len);
int cuda_write_pattern(void *ctx, const struct ga_mem_block *blk, size_t off,
		       enum ga_pattern pattern, uint32_t seq, size_t len);
int cuda_batch_sync(struct cuda_ctx *c);

/* mem_cuda_resident.c */
struct res_box;
int cuda_res_open(struct cuda_ctx *c);
int cuda_res_post_locked(struct cuda_ctx *c, const struct fill_job *jobs, unsigned int nj,
			 const CUstreamBatchMemOpParams *descs, unsigned int nd, uint64_t *ticket);
int cuda_res_wait(struct cuda_ctx *c, uint64_t ticket);
bool cuda_res_landed(struct cuda_ctx *c, uint64_t ticket);
int cuda_res_drain(struct cuda_ctx *c);
void cuda_res_park(struct cuda_ctx *c);
void cuda_res_unpark(struct cuda_ctx *c);
CUresult cuda_mem_free(struct cuda_ctx *c, CUdeviceptr d);
CUresult cuda_host_free_pinned(struct cuda_ctx *c, void *p);
void cuda_res_close(struct cuda_ctx *c);

/* mem_cuda_free.c */
void cuda_free_now(struct cuda_ctx *c, const CUdeviceptr *d, unsigned int n);
bool cuda_free_later(struct cuda_ctx *c, CUdeviceptr d);
void cuda_frees_wait(struct cuda_ctx *c);

/* mem_cuda_dmabuf.c */
int cuda_dmabuf_probe(void *ctx, char *why, size_t why_len);
int cuda_dmabuf_export(void *ctx, const struct ga_mem_block *blk, int *fd, uint64_t *offset);
void cuda_dmabuf_check(struct cuda_ctx *c, int gpu_index);

#endif
