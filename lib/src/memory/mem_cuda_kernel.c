/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The CUDA memory layer's kernel (fill.cu, loaded from PTX): frame patterns
 * made on the GPU, small copies of the simulated card's bursts, and reads
 * gathered from many buffers, each a job of one launch.  It only loads and
 * launches: the bursts' jobs are queued in mem_cuda_write.c and the reads'
 * in mem_cuda.c, which call into it; it calls only the context.
 */
#ifdef GA_HAVE_CUDA_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_ctx.h"
#include "prbs_lfsr.h"

#ifdef GA_HAVE_FILL_PTX
#include "fill_ptx.h" /* ga_fill_ptx: fill.cu as PTX, NUL-terminated */
#endif

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
bool cuda_fill_ready_locked(struct cuda_ctx *c)
{
#ifdef GA_HAVE_FILL_PTX
	uint32_t jump[32][32];
	CUresult res;

	if (c->fill_state)
		return c->fill_state > 0;
	c->fill_state = -1;
	/* GPUASYNC_CUDA_NO_FILL: patterns on the CPU, and no kernel at all
	 * unless the resident one is asked for. */
	c->fill_patterns = !getenv("GPUASYNC_CUDA_NO_FILL");
	if (!c->f.cuModuleLoadData || !c->f.cuModuleGetFunction || !c->f.cuLaunchKernel ||
	    !c->f.cuMemHostGetDevicePointer || (!c->fill_patterns && !cuda_resident_wanted()))
		return false;
	/* M^(2^b) as columns: M^1 is one LFSR step, each next one the square. */
	for (int i = 0; i < 32; i++)
		jump[0][i] = GA_LFSR_NEXT(1u << i);
	for (int b = 1; b < 32; b++)
		for (int i = 0; i < 32; i++)
			jump[b][i] = matvec(jump[b - 1], jump[b - 1][i]);
	res = c->f.cuModuleLoadData(&c->fill_mod, ga_fill_ptx);
	if (res == CUDA_SUCCESS)
		res = c->f.cuModuleGetFunction(&c->fill_fn, c->fill_mod, "ga_fill");
	if (res == CUDA_SUCCESS)
		res = c->f.cuMemHostGetDevicePointer(&c->stage_dev, c->stage, 0);
	if (res == CUDA_SUCCESS)
		/* A whole GPU page: a smaller block would leave the driver's
		 * next ones off 64 KiB (cuda_alloc). */
		res = c->f.cuMemAlloc(&c->fill_jump, GA_GPU_PAGE_SIZE);
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
	if (c->fill_patterns)
		ga_log("cuda: payload patterns made on the GPU");
	c->fill_state = 1;
	return true;
#else
	(void)c;
	(void)matvec;
	return false;
#endif
}

/* Work items of one job: 32-bit word chunks of a pattern, or copy units
 * (as fill.cu's copy_job picks them). */
static uint32_t job_units(const struct fill_job *j)
{
	uint64_t a = j->dst | j->src | j->len;

	if (j->pattern == 0)
		return ((j->len + 3) / 4 + 15) / 16; /* PRBS: fill.cu's GA_FILL_CHUNK */
	if (j->pattern != FILL_COPY)
		return ((j->len + 3) / 4 + 3) / 4; /* counter, timing: GA_FILL_QUAD */
	return j->len / (!(a & 15) ? 16 : !(a & 7) ? 8 : !(a & 3) ? 4 : 1);
}

/* Launch the kernel over the @nj jobs of the table at @jobs (an address the
 * GPU reads: pinned, mapped host memory) on our stream: one block row per
 * job, blocks no wider than the largest job needs.
 * Prerequisite: context current, fill_state 1. */
int cuda_fill_launch(struct cuda_ctx *c, CUdeviceptr jobs, const struct fill_job *tab,
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
	return res == CUDA_SUCCESS ? 0 : cuda_fail(c, res, "cuLaunchKernel(ga_fill)");
}

/*
 * Gather with one kernel launch where the kernel is loaded: each job copies
 * one buffer's bytes into the landing area, its table after the landed
 * bytes.  Returns 1 when it cannot (the caller copies instead).
 * Prerequisite: c->rd_lock held, context current, room reserved for
 * cuda_rd_gather_bytes(n, len).
 */
int cuda_rd_gather_locked(struct cuda_ctx *c, const struct ga_mem_block *const *blks,
			  unsigned int n, size_t off, size_t len)
{
	struct fill_job *tab = (struct fill_job *)(c->rd_stage + cuda_rd_table_off(n, len));
	int rc;

	if (c->fill_state <= 0 || !c->rd_stage_dev || n > 65535 || len > UINT32_MAX)
		return 1;
	for (unsigned int i = 0; i < n; i++)
		tab[i] = (struct fill_job){.dst = c->rd_stage_dev + (uint64_t)i * len,
					   .src = blks[i]->dptr + off,
					   .len = (uint32_t)len,
					   .pattern = FILL_COPY};
	rc = cuda_fill_launch(c, c->rd_stage_dev + cuda_rd_table_off(n, len), tab, n);
	if (!rc)
		__atomic_add_fetch(&c->kcopies, n, __ATOMIC_RELAXED);
	return rc;
}

#endif /* GA_HAVE_CUDA_H */
