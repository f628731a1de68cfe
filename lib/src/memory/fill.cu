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

#define GA_FILL_CHUNK 16
#define GA_FILL_COPY  0xFFu

struct ga_fill_job {
	unsigned long long dst, src; /* src: a copy's source; timing: the time stamp */
	unsigned int len, seq, pattern, pad;
};

__device__ static unsigned int matvec(const unsigned int *col, unsigned int s)
{
	unsigned int r = 0;

	for (int i = 0; i < 32; i++)
		if (s & (1u << i))
			r ^= col[i];
	return r;
}

template <typename T> __device__ static void copy_units(const ga_fill_job &j)
{
	const T *src = (const T *)j.src;
	T *dst = (T *)j.dst;
	unsigned int n = j.len / sizeof(T);

	for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		dst[i] = src[i];
}

__device__ static void copy_job(const ga_fill_job &j)
{
	unsigned long long a = j.dst | j.src | j.len;

	if (!(a & 15))
		copy_units<uint4>(j);
	else if (!(a & 7))
		copy_units<unsigned long long>(j);
	else if (!(a & 3))
		copy_units<unsigned int>(j);
	else
		copy_units<unsigned char>(j);
}

/* pattern: 0 prbs, 1 counter, 3 timing (enum ga_pattern), GA_FILL_COPY a copy. */
extern "C" __global__ void ga_fill(const ga_fill_job *jobs, const unsigned int *jump)
{
	const ga_fill_job j = jobs[blockIdx.y];
	unsigned int pattern = j.pattern, words = (j.len + 3) / 4;
	unsigned char *dst = (unsigned char *)j.dst;

	if (pattern == GA_FILL_COPY) {
		copy_job(j);
		return;
	}

	for (unsigned int c = blockIdx.x * blockDim.x + threadIdx.x; c < (words + GA_FILL_CHUNK - 1) / GA_FILL_CHUNK;
	     c += gridDim.x * blockDim.x) {
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
