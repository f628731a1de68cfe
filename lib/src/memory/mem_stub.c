// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Memory from upstream's nvidia_p2p_stub (aes-stream-drivers'
 * emulator/gpu_stub), the stand-in for GPU memory when upstream's datadev
 * driver runs on its emulated card without a GPU.
 *
 * That stub pins real pages only for addresses inside a mapping of
 * /dev/nvidia_p2p_stub_mem: a STUB_RESERVE_BUF ioctl reserves physically
 * contiguous pages and names them by an id, and an mmap at offset
 * id << PAGE_SHIFT maps them.  Any other address gets a private kernel page
 * that user space never sees, so host memory cannot work there.  Each
 * block has its own file: the stub (7.5) fires the driver's free callback
 * when the mapping or the file goes away, which is how upstream 7.5 frees a
 * removed buffer's page table, so a block is unmapped and closed only after
 * the driver has removed it, and is not inherited by children (whose exit
 * would fire it too).  Mappings are placed at 64 KiB alignment
 * because the driver programs the card with the stub's address of the
 * 64 KiB page plus the offset into it.
 *
 * The struct below is the stub's documented ioctl argument (two 32-bit
 * words: size in, id out), written from its behaviour.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

struct ga_stub_reserve {
	uint32_t size;	 /* in: bytes */
	uint32_t buf_id; /* out: the mmap offset is buf_id << PAGE_SHIFT */
};
#define GA_STUB_RESERVE_BUF _IOWR('S', 1, struct ga_stub_reserve)

struct stub_block {
	int fd;
	uint32_t buf_id;
};

static int stub_alloc(void *ctx, size_t size, struct ga_mem_block *blk)
{
	struct ga_stub_reserve req = {.size = (uint32_t)size};
	long page = sysconf(_SC_PAGESIZE);
	struct stub_block *sb;
	uint8_t *area, *at;
	size_t span = size + GA_GPU_PAGE_SIZE;
	int rc;

	(void)ctx;
	if (size == 0 || size > UINT32_MAX || page <= 0)
		return ga_err(-EINVAL, "p2p stub memory: bad size %zu", size);
	sb = calloc(1, sizeof(*sb));
	if (!sb)
		return ga_err(-ENOMEM, "out of memory");
	sb->fd = open(GA_STUB_MEM_PATH, O_RDWR | O_CLOEXEC);
	if (sb->fd < 0) {
		rc = ga_err(-errno, "%s: %s", GA_STUB_MEM_PATH, strerror(errno));
		goto out_free;
	}
	if (ioctl(sb->fd, GA_STUB_RESERVE_BUF, &req) < 0) {
		rc = ga_err(-errno,
			    "%s: reserving %zu bytes failed (%s): the stub hands out physically "
			    "contiguous pages, at most 4 MiB on x86-64",
			    GA_STUB_MEM_PATH, size, strerror(errno));
		goto out_close;
	}
	/* A 64 KiB aligned place for the mapping: reserve more, keep the
	 * aligned middle. */
	area = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (area == MAP_FAILED) {
		rc = ga_err(-errno, "p2p stub memory: no address space: %s", strerror(errno));
		goto out_close;
	}
	at = (uint8_t *)(((uintptr_t)area + GA_GPU_PAGE_SIZE - 1) &
			 ~(uintptr_t)(GA_GPU_PAGE_SIZE - 1));
	if (mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, sb->fd,
		 (off_t)req.buf_id * page) == MAP_FAILED) {
		rc = ga_err(-errno, "%s: mmap of buffer %u: %s", GA_STUB_MEM_PATH, req.buf_id,
			    strerror(errno));
		munmap(area, span);
		goto out_close;
	}
	if (at > area)
		munmap(area, (size_t)(at - area));
	if (at + size < area + span)
		munmap(at + size, (size_t)(area + span - (at + size)));
	/* A child must not inherit the mapping: the stub fires the driver's
	 * free callback when any copy of it goes away (the child's exit), and
	 * upstream 7.5 then clears every buffer of the card. */
	if (madvise(at, size, MADV_DONTFORK) != 0) {
		rc = ga_err(-errno, "p2p stub memory: madvise(MADV_DONTFORK): %s", strerror(errno));
		munmap(at, size);
		goto out_close;
	}
	sb->buf_id = req.buf_id;
	memset(at, 0, size);
	blk->dptr = (uint64_t)(uintptr_t)at;
	blk->host = at;
	blk->size = size;
	blk->priv = sb;
	return 0;

out_close:
	close(sb->fd);
out_free:
	free(sb);
	return rc;
}

static void stub_free(void *ctx, struct ga_mem_block *blk)
{
	struct stub_block *sb = blk->priv;

	(void)ctx;
	if (blk->host)
		munmap(blk->host, blk->size);
	if (sb) {
		close(sb->fd);
		free(sb);
	}
	*blk = (struct ga_mem_block){0};
}

/* The stub fires a driver's free callback when the mapping it pinned goes
 * away; the file keeps the pages, so mapping them again at the same place
 * gives the same memory back, contents and all. */
static int stub_drop_pins(void *ctx, struct ga_mem_block *blk)
{
	struct stub_block *sb = blk->priv;
	long page = sysconf(_SC_PAGESIZE);

	(void)ctx;
	if (!sb || !blk->host || page <= 0)
		return ga_err(-EINVAL, "p2p stub memory: block not allocated");
	if (munmap(blk->host, blk->size) ||
	    mmap(blk->host, blk->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
		 sb->fd, (off_t)sb->buf_id * page) != blk->host ||
	    madvise(blk->host, blk->size, MADV_DONTFORK) != 0)
		return ga_err(-errno, "%s: mapping buffer %u again: %s", GA_STUB_MEM_PATH,
			      sb->buf_id, strerror(errno));
	return 0;
}

static int stub_ipc_handle(void *ctx, const struct ga_mem_block *blk, char *hex, size_t len)
{
	(void)ctx;
	(void)blk;
	return ga_mem_no_ipc(hex, len, "p2p stub memory (upstream's emulator, no GPU)");
}

static void stub_close(void *ctx)
{
	(void)ctx;
}

const struct ga_mem_ops ga_mem_stub_ops = {
	.name = "stub",
	.alloc = stub_alloc,
	.free = stub_free,
	.read = ga_mem_host_read,
	.write = ga_mem_host_write,
	.ipc_handle = stub_ipc_handle,
	.close = stub_close,
	.drop_pins = stub_drop_pins,
};

int ga_mem_stub_open(const struct ga_mem_ops **ops, void **ctx, char *why, size_t why_len)
{
	if (access(GA_STUB_MEM_PATH, R_OK | W_OK) != 0) {
		int e = errno;

		snprintf(why, why_len, "%s: %s", GA_STUB_MEM_PATH, strerror(e));
		return -e;
	}
	*ops = &ga_mem_stub_ops;
	*ctx = NULL;
	return 0;
}

static int stub_provider_open(const struct ga_dev *dev, const struct ga_mem_ops **ops, void **ctx,
			      char *gpu, size_t gpu_len, char *why, size_t why_len)
{
	(void)dev, (void)gpu, (void)gpu_len;
	return ga_mem_stub_open(ops, ctx, why, why_len);
}

/* The provider (internal.h): no GPU in front of a driver, and upstream's
 * emulator pins only memory of its p2p stub. */
const struct ga_mem_provider ga_mem_stub = {
	.memory = "stub",
	.flags = GA_MEMP_DRIVER | GA_MEMP_UDMABUF,
	.open = stub_provider_open,
	.gpu = "none (p2p stub memory)",
	.note = "%s; " GA_STUB_MEM_PATH " present: buffers are upstream p2p stub memory "
		"(emulator testing only)",
};
