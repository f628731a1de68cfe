/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The CUDA memory layer's context (with cuda_ctx.h): making the device's
 * primary context current around a call and restoring the caller's, the
 * range check every access starts with, and CUDA's errors as a negative
 * errno with the reason.  The bottom of the layer: every other mem_cuda
 * file calls into it and it calls none of them.
 */
#ifdef GA_HAVE_CUDA_H

#include <errno.h>
#include <stdio.h>

#include "cuda_ctx.h"

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" */
const char *cuda_errtext(struct cuda_ctx *c, CUresult r, char *buf, size_t len)
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

int cuda_errno(CUresult r)
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
int cuda_fail(struct cuda_ctx *c, CUresult r, const char *what)
{
	char buf[160];

	return ga_err(cuda_errno(r), "CUDA %s failed: %s", what,
		      cuda_errtext(c, r, buf, sizeof(buf)));
}

/*
 * Make our primary context current on this thread.  Returns true when a
 * different context was current and was pushed aside, so cuda_leave must pop
 * it back; a thread with no context simply keeps ours afterwards (that is
 * what cuCtxSetCurrent does and it costs nothing later).
 */
int cuda_enter(struct cuda_ctx *c, bool *pushed)
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
	return r == CUDA_SUCCESS ? 0 : cuda_fail(c, r, "context switch");
}

void cuda_leave(struct cuda_ctx *c, bool pushed)
{
	CUcontext dummy;

	if (pushed)
		c->f.cuCtxPopCurrent(&dummy);
}

int cuda_check_range(const struct ga_mem_block *blk, size_t off, size_t len)
{
	if (off > blk->size || len > blk->size - off)
		return ga_err(-ERANGE, "GPU buffer access [%zu, +%zu) outside its %zu bytes", off,
			      len, blk->size);
	return 0;
}

/* The start of an access of @len bytes at @off of @blk: 0 with our context
 * current (cuda_leave after), 1 when there is nothing to do (@len 0), or a
 * negative errno (out of range, no context). */
int cuda_op_enter(struct cuda_ctx *c, const struct ga_mem_block *blk, size_t off, size_t len,
		  bool *pushed)
{
	int rc = cuda_check_range(blk, off, len);

	if (rc || len == 0)
		return rc ? rc : 1;
	return cuda_enter(c, pushed);
}

#endif /* GA_HAVE_CUDA_H */
