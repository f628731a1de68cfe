// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Host memory that can be handed to a driver as a dma-buf, through the
 * kernel's udmabuf device (/dev/udmabuf, CONFIG_UDMABUF): it wraps pages of
 * a sealed memfd in a dma-buf.  This is the dmabuf pin path without a GPU
 * (the simulated card, gpuasync.ko in QEMU).
 *
 * The card takes one base address per buffer, so the buffer must be
 * contiguous on the bus.  Ordinary memfd pages are scattered, so each block
 * gets its own hugetlb memfd (MFD_HUGETLB: pages of the default huge page
 * size, 2 MiB on x86-64) and must fit in one huge page.  udmabuf wants the
 * memfd sealed against shrinking and not against writes; the pages are
 * faulted in before the export (older kernels take only pages already in
 * the page cache).  The library keeps its own shared mapping of the memfd
 * and reads and writes the buffer through it, as it does host memory.
 *
 * What is missing is said at open (the probe makes one block and exports
 * it): no /dev/udmabuf, no hugetlbfs, no free huge page.  In strict mode
 * (pin=dmabuf) a block that cannot be a huge page fails to allocate; else
 * (pin=auto) it is plain host memory, and dmabuf_export refuses it so the
 * library registers that buffer by address (p2p).
 */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

struct udmabuf_ctx {
	int dev_fd;  /* /dev/udmabuf */
	size_t huge; /* huge page size: the largest block that exports */
	bool strict; /* pin=dmabuf: no fallback to plain host memory */
};

/* Per block: the memfd behind a huge-page block; NULL priv = plain host
 * memory (posix_memalign), which does not export. */
struct udmabuf_block {
	int memfd;
	size_t map_len; /* whole huge pages mapped */
};

/* A hugetlb memfd of @len bytes (a multiple of the huge page size), sealed
 * as udmabuf wants, mapped and faulted in.  Negative errno with @why. */
static int huge_block(size_t len, int *memfd, void **map, char *why, size_t why_len)
{
	int fd, e;
	void *p;

	fd = memfd_create("gpuasync-buffer", MFD_CLOEXEC | MFD_HUGETLB | MFD_ALLOW_SEALING);
	if (fd < 0) {
		e = errno;
		snprintf(why, why_len,
			 "memfd_create(MFD_HUGETLB) failed: %s (the kernel needs hugetlbfs, "
			 "CONFIG_HUGETLBFS)",
			 strerror(e));
		return -e;
	}
	if (ftruncate(fd, (off_t)len) < 0) {
		e = errno;
		snprintf(why, why_len, "sizing the hugetlb memfd to %zu bytes: %s", len,
			 strerror(e));
		goto out_close;
	}
	/* A shared hugetlb mapping reserves its pages now: ENOMEM here is an
	 * empty huge page pool, said plainly. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (p == MAP_FAILED) {
		e = errno;
		if (e == ENOMEM)
			snprintf(why, why_len,
				 "no free %zu KiB huge page (HugePages_Free in /proc/meminfo; "
				 "reserve some: echo N > /proc/sys/vm/nr_hugepages)",
				 len / 1024);
		else
			snprintf(why, why_len, "mapping the hugetlb memfd: %s", strerror(e));
		goto out_close;
	}
	memset(p, 0, len); /* faults every page in, and zeroes the buffer */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		e = errno;
		snprintf(why, why_len, "sealing the memfd (udmabuf needs F_SEAL_SHRINK): %s",
			 strerror(e));
		munmap(p, len);
		goto out_close;
	}
	*memfd = fd;
	*map = p;
	return 0;

out_close:
	close(fd);
	return -e;
}

/* A dma-buf of [0, @size) of @memfd; negative errno with @why. */
static int udmabuf_make(int dev_fd, int memfd, size_t size, int *out, char *why, size_t why_len)
{
	struct udmabuf_create c = {
		.memfd = (__u32)memfd,
		.flags = UDMABUF_FLAGS_CLOEXEC,
		.offset = 0,
		.size = size,
	};
	int fd = ioctl(dev_fd, UDMABUF_CREATE, &c);

	if (fd < 0) {
		int e = errno;

		snprintf(why, why_len, "%s: UDMABUF_CREATE of %zu bytes failed: %s",
			 GA_UDMABUF_PATH, size, strerror(e));
		return -e;
	}
	*out = fd;
	return 0;
}

static int udmabuf_alloc(void *ctx, size_t size, struct ga_mem_block *blk)
{
	struct udmabuf_ctx *c = ctx;
	struct udmabuf_block *ub;
	char why[192];
	void *p = NULL;
	int rc;

	if (size == 0)
		return ga_err(-EINVAL, "host memory: size 0");
	if (size > c->huge) {
		if (c->strict)
			return ga_err(-EINVAL,
				      "pin=dmabuf with host memory: a %zu-byte buffer does not fit "
				      "in one %zu KiB huge page, and only memory inside one huge "
				      "page is contiguous on the bus (the card takes one base "
				      "address): use buffers of at most %zu KiB, or pin=auto",
				      size, c->huge / 1024, c->huge / 1024);
		return ga_mem_host_ops.alloc(NULL, size, blk); /* goes p2p */
	}
	ub = calloc(1, sizeof(*ub));
	if (!ub)
		return ga_err(-ENOMEM, "out of memory");
	ub->map_len = c->huge;
	rc = huge_block(c->huge, &ub->memfd, &p, why, sizeof(why));
	if (rc) {
		free(ub);
		if (c->strict)
			return ga_err(rc, "pin=dmabuf with host memory: %s", why);
		ga_log("udmabuf: %s: this buffer is plain host memory (p2p)", why);
		return ga_mem_host_ops.alloc(NULL, size, blk);
	}
	blk->dptr = (uint64_t)(uintptr_t)p;
	blk->host = p;
	blk->size = size;
	blk->priv = ub;
	return 0;
}

static void udmabuf_free(void *ctx, struct ga_mem_block *blk)
{
	struct udmabuf_block *ub = blk->priv;

	(void)ctx;
	if (!ub) {
		ga_mem_host_ops.free(NULL, blk);
		return;
	}
	if (blk->host)
		munmap(blk->host, ub->map_len);
	close(ub->memfd);
	free(ub);
	*blk = (struct ga_mem_block){0};
}

static int udmabuf_export(void *ctx, const struct ga_mem_block *blk, int *fd, uint64_t *offset)
{
	struct udmabuf_ctx *c = ctx;
	struct udmabuf_block *ub = blk->priv;
	char why[192];
	int rc;

	if (!ub)
		return ga_err(-ENOTSUP,
			      "this %zu-byte buffer is plain host memory (larger than a %zu KiB "
			      "huge page, or none was free): no dma-buf",
			      blk->size, c->huge / 1024);
	rc = udmabuf_make(c->dev_fd, ub->memfd, blk->size, fd, why, sizeof(why));
	if (rc)
		return ga_err(rc, "%s", why);
	*offset = 0;
	return 0;
}

static int udmabuf_probe(void *ctx, char *why, size_t why_len)
{
	(void)ctx;
	(void)why;
	(void)why_len;
	return 0; /* ga_mem_udmabuf_open already exported a block */
}

static int udmabuf_ipc_handle(void *ctx, const struct ga_mem_block *blk, char *hex, size_t len)
{
	(void)ctx;
	(void)blk;
	return ga_mem_no_ipc(hex, len, "in host memory (no GPU in use)");
}

static void udmabuf_close(void *ctx)
{
	struct udmabuf_ctx *c = ctx;

	if (!c)
		return;
	close(c->dev_fd);
	free(c);
}

static const struct ga_mem_ops ga_mem_udmabuf_ops = {
	.name = "udmabuf",
	.alloc = udmabuf_alloc,
	.free = udmabuf_free,
	.read = ga_mem_host_read,
	.write = ga_mem_host_write,
	.ipc_handle = udmabuf_ipc_handle,
	.close = udmabuf_close,
	.dmabuf_probe = udmabuf_probe,
	.dmabuf_export = udmabuf_export,
};

int ga_mem_udmabuf_open(bool strict, const struct ga_mem_ops **ops, void **ctxp, char *why,
			size_t why_len)
{
	struct udmabuf_ctx *c;
	struct stat st;
	int memfd = -1, dbuf = -1, rc, e;
	void *p = NULL;

	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	c->strict = strict;
	c->dev_fd = open(GA_UDMABUF_PATH, O_RDWR | O_CLOEXEC);
	if (c->dev_fd < 0) {
		e = errno;
		if (e == ENOENT)
			snprintf(why, why_len,
				 "%s does not exist: the kernel has no udmabuf "
				 "(CONFIG_UDMABUF; modprobe udmabuf where it is a module)",
				 GA_UDMABUF_PATH);
		else
			snprintf(why, why_len, "%s: %s", GA_UDMABUF_PATH, strerror(e));
		rc = -e;
		goto out_free;
	}
	/* The huge page size, from a hugetlb memfd itself (st_blksize). */
	memfd = memfd_create("gpuasync-probe", MFD_CLOEXEC | MFD_HUGETLB);
	if (memfd < 0 || fstat(memfd, &st) < 0 || st.st_blksize <= 0) {
		e = errno ? errno : EINVAL;
		if (memfd >= 0)
			close(memfd);
		snprintf(why, why_len,
			 "no hugetlb memfd (%s): host buffers must lie in one huge page to be "
			 "contiguous on the bus (CONFIG_HUGETLBFS)",
			 strerror(e));
		rc = -e;
		goto out_close;
	}
	close(memfd);
	memfd = -1;
	c->huge = (size_t)st.st_blksize;
	/* One block, exported and dropped: everything the path needs works. */
	rc = huge_block(c->huge, &memfd, &p, why, why_len);
	if (rc)
		goto out_close;
	rc = udmabuf_make(c->dev_fd, memfd, c->huge, &dbuf, why, why_len);
	munmap(p, c->huge);
	close(memfd);
	if (rc)
		goto out_close;
	close(dbuf);
	*ops = &ga_mem_udmabuf_ops;
	*ctxp = c;
	snprintf(why, why_len, "host memory from %zu KiB huge pages, exported through %s",
		 c->huge / 1024, GA_UDMABUF_PATH);
	return 0;

out_close:
	close(c->dev_fd);
out_free:
	free(c);
	return rc;
}
