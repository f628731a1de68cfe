/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Host memory layer: the fallback when there is no GPU, and the memory the
 * simulated card DMAs into.  Blocks are 64 KiB aligned, like the GPU pages
 * the RDMA path pins, so the same size and alignment rules hold with and
 * without CUDA.  The device pointer is simply the host address.  There is
 * no IPC handle for host memory: a consumer in another process cannot open
 * it the way it opens CUDA memory, and we say so rather than invent one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpuasync/dma.h"
#include "internal.h"

static int host_alloc(void *ctx, size_t size, struct ga_mem_block *blk)
{
	void *p = NULL;
	int rc;

	(void)ctx;
	if (size == 0)
		return ga_err(-EINVAL, "host memory: size 0");
	rc = posix_memalign(&p, GA_GPU_PAGE_SIZE, size);
	if (rc != 0)
		return ga_err(-rc, "host memory: cannot allocate %zu bytes aligned to 64 KiB",
			      size);
	memset(p, 0, size);
	blk->dptr = (uint64_t)(uintptr_t)p;
	blk->host = p;
	blk->size = size;
	blk->priv = NULL;
	return 0;
}

static void host_free(void *ctx, struct ga_mem_block *blk)
{
	(void)ctx;
	free(blk->host);
	blk->host = NULL;
	blk->dptr = 0;
	blk->size = 0;
}

/* Bounds: the range must lie inside the block; -ERANGE otherwise (the
 * library-wide choice for a position outside an object). */
int ga_mem_host_check(const struct ga_mem_block *blk, size_t off, size_t len)
{
	if (!blk->host)
		return ga_err(-EINVAL, "host memory: block not allocated");
	if (off > blk->size || len > blk->size - off)
		return ga_err(-ERANGE,
			      "host memory: %zu bytes at offset %zu exceed the %zu-byte buffer",
			      len, off, blk->size);
	return 0;
}

int ga_mem_host_read(void *ctx, const struct ga_mem_block *blk, size_t off, void *dst, size_t len)
{
	int rc;

	(void)ctx;
	rc = ga_mem_host_check(blk, off, len);
	if (rc)
		return rc;
	memcpy(dst, (const uint8_t *)blk->host + off, len);
	return 0;
}

int ga_mem_host_write(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
		      size_t len)
{
	int rc;

	(void)ctx;
	rc = ga_mem_host_check(blk, off, len);
	if (rc)
		return rc;
	ga_dma_put((uint8_t *)blk->host + off, src, len);
	return 0;
}

static int host_write_from(void *ctx, const struct ga_mem_block *blk, size_t off,
			   const struct ga_mem_block *src, size_t src_off, size_t len)
{
	int rc = ga_mem_host_check(src, src_off, len);

	return rc ? rc
		  : ga_mem_host_write(ctx, blk, off, (const uint8_t *)src->host + src_off, len);
}

int ga_mem_no_ipc(char *hex, size_t len, const char *what)
{
	if (hex && len)
		hex[0] = '\0';
	return ga_err(-ENOTSUP, "buffer is %s: there is no CUDA IPC handle; see device/memory_note",
		      what);
}

static int host_ipc_handle(void *ctx, const struct ga_mem_block *blk, char *hex, size_t len)
{
	(void)ctx;
	(void)blk;
	return ga_mem_no_ipc(hex, len, "in host memory (no GPU in use)");
}

static void host_close(void *ctx)
{
	(void)ctx;
}

const struct ga_mem_ops ga_mem_host_ops = {
	.name = "host",
	.alloc = host_alloc,
	.free = host_free,
	.read = ga_mem_host_read,
	.write = ga_mem_host_write,
	.write_from = host_write_from,
	.ipc_handle = host_ipc_handle,
	.close = host_close,
};

static int host_provider_open(const struct ga_dev *dev, const struct ga_mem_ops **ops, void **ctx,
			      char *gpu, size_t gpu_len, char *why, size_t why_len)
{
	(void)dev, (void)gpu, (void)gpu_len, (void)why, (void)why_len;
	*ops = &ga_mem_host_ops;
	*ctx = NULL;
	return 0;
}

/* The provider (internal.h): always there, so the list's last. */
const struct ga_mem_provider ga_mem_host = {
	.memory = "host",
	.flags = GA_MEMP_UDMABUF,
	.open = host_provider_open,
	.gpu = "none (host memory)",
	.note = "%s",
	/* A real NVIDIA driver only pins CUDA memory, upstream's emulator
	 * only its stub's. */
	.note_driver = "%s; host memory on a driver: only gpuasync.ko's stub pins it (a real "
		       "NVIDIA driver refuses it, upstream's emulator never sees it)",
};
