// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated card's payload patterns generated on the GPU (mem_cuda_kernel.c,
 * write_pattern): word k of frame seq exactly as lib/src/backends/pattern.c
 * makes it on the CPU, so a counter or PRBS frame costs no CPU pass and no
 * copy over PCIe.  Built to PTX by nvcc when it is there (lib/CMakeLists.txt)
 * and loaded with cuModuleLoadData, so the driver compiles it for the GPU
 * at hand; without nvcc the library generates on the CPU as before.
 *
 * One job per frame (blockIdx.y); each thread writes GA_FILL_CHUNK
 * consecutive 32-bit words.  PRBS is a Galois LFSR, linear over GF(2): the
 * state k steps on is M^k applied to the seed, and @jump holds M^(2^b) for
 * b = 0..31 as 32 columns each, so a thread reaches its first word in at
 * most 32 matrix-vector products and then steps word by word.
 *
 * A job can also be a plain copy (GA_FILL_COPY) between any two addresses
 * the GPU reaches: pinned host memory to a buffer (a small frame of the
 * card's, read over PCIe by the SMs: one launch for a burst instead of a
 * copy-engine operation per frame) or a buffer to pinned host memory (the
 * headers of many buffers, gathered in one launch).  Threads copy in the
 * widest unit that the addresses and length allow.
 */
#include "../prbs_lfsr.h"
#include "../../include/gpuasync/timing.h"
#include "resident.h"

#define GA_FILL_CHUNK 16
#define GA_FILL_QUAD  4
#define GA_FILL_COPY  0xFFu

struct ga_fill_job {
	unsigned long long dst, src; /* src: a copy's source; timing: the time stamp */
	unsigned int len, seq, pattern, pad;
};

__device__ static unsigned long long gtimer(void)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__device__ static unsigned int matvec(const unsigned int *col, unsigned int s)
{
	unsigned int r = 0;

	for (int i = 0; i < 32; i++)
		if (s & (1u << i))
			r ^= col[i];
	return r;
}

/* Loads that go to memory every time: the resident kernel (ga_deliver)
 * reads pinned host memory that the host rewrites while the kernel runs,
 * where a cached line could be a previous lap's. */
template <typename T> __device__ static T load(const T *p, bool fresh)
{
	return fresh ? __ldcv(p) : *p;
}

/* Work item i of a job's items, i = first, first + stride, ... */
template <typename T>
__device__ static void copy_units(const ga_fill_job &j, unsigned int first, unsigned int stride,
				  bool fresh)
{
	const T *src = (const T *)j.src;
	T *dst = (T *)j.dst;
	unsigned int n = j.len / sizeof(T);

	for (unsigned int i = first; i < n; i += stride)
		dst[i] = load(src + i, fresh);
}

__device__ static void copy_job(const ga_fill_job &j, unsigned int first, unsigned int stride,
				bool fresh)
{
	unsigned long long a = j.dst | j.src | j.len;

	if (!(a & 15))
		copy_units<uint4>(j, first, stride, fresh);
	else if (!(a & 7))
		copy_units<unsigned long long>(j, first, stride, fresh);
	else if (!(a & 3))
		copy_units<unsigned int>(j, first, stride, fresh);
	else
		copy_units<unsigned char>(j, first, stride, fresh);
}

/* The counter and timing patterns, GA_FILL_QUAD words per work item: one
 * 16-byte store each where the frame allows, so that neighbouring threads
 * write neighbouring bytes (a 4 KiB frame is 256 stores side by side). */
__device__ static unsigned int counter_word(const ga_fill_job &j, unsigned int w)
{
	if (j.pattern == 3 && w < GA_TIMING_HDR_BYTES / 4)
		return ga_timing_word(j.seq, j.src, w);
	return j.seq + w;
}

__device__ static void counter_job(const ga_fill_job &j, unsigned int first, unsigned int stride)
{
	unsigned int words = (j.len + 3) / 4;
	unsigned char *dst = (unsigned char *)j.dst;

	for (unsigned int q = first; q < (words + GA_FILL_QUAD - 1) / GA_FILL_QUAD; q += stride) {
		unsigned int w = q * GA_FILL_QUAD, off = 4 * w;

		if (!(j.dst & 15) && off + 16 <= j.len) {
			*(uint4 *)(dst + off) =
				make_uint4(counter_word(j, w), counter_word(j, w + 1),
					   counter_word(j, w + 2), counter_word(j, w + 3));
			continue;
		}
		for (unsigned int k = 0; k < GA_FILL_QUAD && w < words; k++, w++, off += 4) {
			unsigned int v = counter_word(j, w);

			if (off + 4 <= j.len) {
				*(unsigned int *)(dst + off) = v;
			} else {
				for (unsigned int b = 0; off + b < j.len; b++)
					dst[off + b] = (unsigned char)(v >> (8 * b));
			}
		}
	}
}

/* PRBS: a thread steps the LFSR through GA_FILL_CHUNK consecutive words. */
__device__ static void pattern_job(const ga_fill_job &j, const unsigned int *jump,
				   unsigned int first, unsigned int stride)
{
	unsigned int pattern = j.pattern, words = (j.len + 3) / 4;
	unsigned char *dst = (unsigned char *)j.dst;

	if (pattern != 0) {
		counter_job(j, first, stride);
		return;
	}

	for (unsigned int c = first; c < (words + GA_FILL_CHUNK - 1) / GA_FILL_CHUNK; c += stride) {
		unsigned int w = c * GA_FILL_CHUNK, s = 0;

		if (pattern == 0) {
			s = GA_PRBS_MIX(j.seq);
			if (!s)
				s = 1;
			for (int b = 0; b < 32; b++)
				if (w & (1u << b))
					s = matvec(jump + 32 * b, s);
		}
		for (int k = 0; k < GA_FILL_CHUNK && w < words; k++, w++) {
			unsigned int v = pattern == 0 ? s : j.seq + w;
			unsigned int off = 4 * w;

			if (pattern == 3 && w < GA_TIMING_HDR_BYTES / 4)
				v = ga_timing_word(j.seq, j.src, w);

			if (off + 4 <= j.len) {
				*(unsigned int *)(dst + off) = v;
			} else {
				for (unsigned int b = 0; off + b < j.len; b++)
					dst[off + b] = (unsigned char)(v >> (8 * b));
			}
			if (pattern == 0)
				s = GA_LFSR_NEXT(s);
		}
	}
}

__device__ static void run_job(const ga_fill_job &j, const unsigned int *jump, unsigned int first,
			       unsigned int stride, bool fresh)
{
	if (j.pattern == GA_FILL_COPY)
		copy_job(j, first, stride, fresh);
	else
		pattern_job(j, jump, first, stride);
}

/* pattern: 0 prbs, 1 counter, 3 timing (enum ga_pattern), GA_FILL_COPY a copy. */
extern "C" __global__ void ga_fill(const ga_fill_job *jobs, const unsigned int *jump)
{
	run_job(jobs[blockIdx.y], jump, blockIdx.x * blockDim.x + threadIdx.x,
		gridDim.x * blockDim.x, false);
}

/*
 * The resident delivery kernel (resident.h): one block that stays on the
 * GPU, takes batches from the mailbox in order and runs their jobs, then
 * makes their descriptors visible and says done.  Warp 0 looks at the next
 * slot's first RES_LOOK chunks with the readers' back-off (8 ns doubling
 * to 256 ns); a batch counts as there when every chunk it takes carries
 * its tag.  Returns when asked to stop and no batch is waiting.
 */
extern "C" __global__ void ga_deliver(res_box *box, const unsigned int *jump,
				      unsigned long long seq)
{
	__shared__ unsigned int bytes[RES_CHUNKS * 3];
	__shared__ unsigned int njobs, ndescs, quit;
	unsigned long long seen = 0, work_ns = 0, work_batches = 0; /* thread 0's */

	for (;; seq++) {
		const unsigned int tag = (unsigned int)seq + 1;
		const res_chunk *slot = box->slot[seq % RES_SLOTS];

		if (threadIdx.x < 32) {
			unsigned int lane = threadIdx.x, ns = 8, need = 0, stop = 0;

			for (;;) {
				uint4 v = make_uint4(0, 0, 0, tag);
				unsigned int hx, hy, hw;
				bool ok;

				if (lane < RES_LOOK)
					v = __ldcv((const uint4 *)&slot[lane]);
				else if (lane == RES_LOOK)
					v.x = __ldcv(&box->stop);
				hx = __shfl_sync(0xffffffffu, v.x, 0);
				hy = __shfl_sync(0xffffffffu, v.y, 0);
				hw = __shfl_sync(0xffffffffu, v.w, 0);
				need = hw == tag && hx <= RES_JOBS && hy <= RES_DESCS
					       ? RES_BATCH_CHUNKS(hx, hy)
					       : 0;
				ok = need && (lane >= need || v.w == tag);
				if (__all_sync(0xffffffffu, ok)) {
					if (lane < need) {
						bytes[3 * lane] = v.x;
						bytes[3 * lane + 1] = v.y;
						bytes[3 * lane + 2] = v.z;
					}
					if (!lane) {
						njobs = hx;
						ndescs = hy;
						seen = gtimer();
					}
					break;
				}
				/* Asked to stop: only between batches (the host
				 * writes a batch's first chunk last). */
				stop = __shfl_sync(0xffffffffu, v.x, RES_LOOK);
				if (stop && !need)
					break;
				__nanosleep(ns);
				ns = ns < 256 ? 2 * ns : 256;
			}
			/* The rest of a larger batch: each chunk once its tag is there. */
			for (unsigned int i = RES_LOOK + lane; i < need; i += 32) {
				uint4 v;

				do
					v = __ldcv((const uint4 *)&slot[i]);
				while (v.w != tag);
				bytes[3 * i] = v.x;
				bytes[3 * i + 1] = v.y;
				bytes[3 * i + 2] = v.z;
			}
			if (!lane)
				quit = !need;
			/* No fence here: a staged payload was written before
			 * the chunks, and the copies read it with loads that
			 * bypass the caches (run_job fresh), issued only once
			 * the chunks' loads have completed. */
		}
		__syncthreads();
		if (quit) {
			if (!threadIdx.x) {
				box->work_ns = work_ns;
				box->work_batches = work_batches;
			}
			return;
		}
		for (unsigned int i = 0; i < njobs; i++) {
			ga_fill_job j;

			memcpy(&j, (const char *)bytes + RES_HDR_BYTES + i * RES_JOB_BYTES,
			       sizeof(j));
			run_job(j, jump, threadIdx.x, blockDim.x, true);
		}
		__syncthreads();
		if (!threadIdx.x) {
			const char *d = (const char *)bytes + RES_HDR_BYTES + njobs * RES_JOB_BYTES;

			/* The payloads before the descriptors for the readers,
			 * which are on this GPU; a system-wide fence here would
			 * wait for the last batch's done to cross PCIe. */
			__threadfence();
			for (unsigned int i = 0; i < ndescs; i++) {
				unsigned long long a, v;

				memcpy(&a, d + i * RES_DESC_BYTES, 8);
				memcpy(&v, d + i * RES_DESC_BYTES + 8, 8);
				*(volatile unsigned long long *)a = v;
			}
			work_ns += gtimer() - seen;
			work_batches++;
			/* Everything before done, for the host (this fence
			 * costs about 0.5 us of the host's round trip, none
			 * of a reader's: the descriptors are out). */
			__threadfence_system();
			*(volatile unsigned long long *)&box->done = seq + 1;
			/* No fence after done: with one, the host saw a batch of
			 * descriptors or a pattern done about 1 us sooner, but a
			 * batch with a 4 KiB copy from host memory 0.6 us later
			 * (H200, gpuasync-resident-rt), and readers not at all. */
		}
		__syncthreads();
	}
}
