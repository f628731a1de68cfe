/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The CUDA memory layer's dma-buf export (the dmabuf pin path).
 */
#ifdef GA_HAVE_CUDA_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cuda_ctx.h"

int cuda_dmabuf_probe(void *ctx, char *why, size_t why_len)
{
	struct cuda_ctx *c = ctx;

	snprintf(why, why_len, "%s", c->dmabuf_why);
	return c->dmabuf;
}

/* The whole allocation as one dma-buf: cuMemAlloc'ed blocks are 64 KiB
 * multiples at 64 KiB aligned addresses, so both host-page rules hold. */
int cuda_dmabuf_export(void *ctx, const struct ga_mem_block *blk, int *fd, uint64_t *offset)
{
	struct cuda_ctx *c = ctx;
	int out = -1, rc;
	double t0;
	bool pushed;
	CUresult res;

	if (c->dmabuf)
		return ga_err(c->dmabuf, "CUDA memory: %s", c->dmabuf_why);
#if GA_HAVE_DMABUF
	rc = cuda_enter(c, &pushed);
	if (rc)
		return rc;
	t0 = ga_mono_us();
	res = c->f.cuMemGetHandleForAddressRange(&out, (CUdeviceptr)blk->dptr, blk->size,
						 CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	cuda_leave(c, pushed);
	if (res != CUDA_SUCCESS)
		return cuda_fail(c, res, "cuMemGetHandleForAddressRange(DMA_BUF_FD)");
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
	       (unsigned long long)blk->dptr, out, ga_mono_us() - t0);
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
void cuda_dmabuf_check(struct cuda_ctx *c, int gpu_index)
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

#endif /* GA_HAVE_CUDA_H */
