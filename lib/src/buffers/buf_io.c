// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A buffer's I/O: arming write buffers (one or many), queueing reads of
 * read buffers, and access to a buffer's memory and header.  Creation and
 * removal are in buf_register.c (and buf_remove_one.c for drivers that can
 * only remove all) over buf_card.c (one buffer and the card), state and
 * lookup in buf_state.c, the batched state of all buffers in
 * buf_info_all.c; what they share is buf_internal.h, below them all.
 * This file calls into buf_state.c (the registration check before an arm
 * or a send); no other buffer file calls into it.
 *
 * Arming and sending run under dev->lock; the plain memory accessors
 * (ga_buf_read/write/header/ipc_handle) touch only the buffer's own memory
 * and may run in parallel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf_internal.h"

/* ---- arming and sending -------------------------------------------------- */

static int arm_locked(struct ga_dev *dev, const uint32_t *idx, unsigned int n)
{
	static const uint8_t zero[8];
	unsigned int i;
	int rc;

	buf_check_registration_locked(dev);

	for (i = 0; i < n; i++) {
		struct ga_buf *b;

		if (idx[i] >= dev->nbufs[GA_DIR_WRITE])
			return ga_err(-ERANGE, "write buffer %u does not exist (%u created)",
				      idx[i], dev->nbufs[GA_DIR_WRITE]);
		b = dev->bufs[GA_DIR_WRITE][idx[i]];
		if (b->gone)
			return ga_err(-EIO,
				      "write buffer %u is no longer registered with the card "
				      "(removed by another program or by the driver): rmdir it "
				      "and mkdir again",
				      idx[i]);
	}
	/* Clear the header (doorbell at +4 included) before the card may fill
	 * the buffer, so a doorbell seen later belongs to a new frame. */
	for (i = 0; i < n; i++) {
		rc = buf_mem_write(dev->bufs[GA_DIR_WRITE][idx[i]], 0, zero, sizeof(zero));
		if (rc)
			return rc;
	}
	rc = dev->be->arm(dev, idx, n);
	if (rc == -ENXIO && n == 1)
		dev->bufs[GA_DIR_WRITE][idx[0]]->error = true; /* memory invalidated */
	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		dev->bufs[GA_DIR_WRITE][idx[i]]->armed = true;
		dev->bufs[GA_DIR_WRITE][idx[i]]->error = false;
	}
	return 0;
}

int ga_buf_arm(struct ga_buf *b)
{
	uint32_t idx;
	int rc;

	if (!b)
		return ga_err(-EINVAL, "ga_buf_arm: NULL buffer");
	if (b->dir != GA_DIR_WRITE)
		return ga_err(-EINVAL,
			      "read buffer %u: only write buffers are armed; queue a read "
			      "with ga_buf_send",
			      b->index);
	pthread_mutex_lock(&b->dev->lock);
	idx = b->index;
	rc = ga_link_check_locked(b->dev);
	if (rc == 0)
		rc = arm_locked(b->dev, &idx, 1);
	pthread_mutex_unlock(&b->dev->lock);
	return rc;
}

int ga_buf_arm_many(struct ga_dev *dev, const unsigned int *indices, unsigned int n)
{
	uint32_t *idx;
	unsigned int i;
	int rc;

	if (!dev || (n && !indices))
		return ga_err(-EINVAL, "ga_buf_arm_many: NULL argument");
	if (n == 0)
		return 0;
	if (n > GA_MAX_BUFFERS)
		return ga_err(-EINVAL, "%u indices: at most %u at once", n, GA_MAX_BUFFERS);
	idx = malloc(n * sizeof(*idx));
	if (!idx)
		return ga_err(-ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		idx[i] = indices[i];
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	if (rc == 0)
		rc = arm_locked(dev, idx, n);
	pthread_mutex_unlock(&dev->lock);
	free(idx);
	return rc;
}

int ga_buf_send(struct ga_buf *b, uint32_t bytes)
{
	static const uint8_t zero[4];
	struct ga_dev *dev;
	size_t max;
	int rc;

	if (!b)
		return ga_err(-EINVAL, "ga_buf_send: NULL buffer");
	dev = b->dev;
	if (b->dir != GA_DIR_READ)
		return ga_err(-EINVAL,
			      "write buffer %u: only read buffers send; write buffers are "
			      "armed",
			      b->index);
	max = b->mem.size - payload_offset(dev, b->dir);
	if (bytes == 0)
		return ga_err(-EINVAL, "read buffer %u: nothing to send (0 bytes)", b->index);
	if (bytes > max)
		return ga_err(-ERANGE, "read buffer %u: %u bytes exceed its payload of %zu bytes",
			      b->index, bytes, max);
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	if (rc)
		goto out_unlock;
	buf_check_registration_locked(dev);
	if (b->gone) {
		rc = ga_err(-EIO,
			    "read buffer %u is no longer registered with the card (removed by "
			    "another program or by the driver): rmdir it and mkdir again",
			    b->index);
		goto out_unlock;
	}
	/* V4 writes 1 at +0 when the read completes; clear it first.  On V1
	 * the payload itself starts at +0, so leave it alone. */
	if (is_v4(dev)) {
		rc = buf_mem_write(b, 0, zero, sizeof(zero));
		if (rc)
			goto out_unlock;
	}
	rc = ga_field_write_locked(dev, GA_REG_READ_SIZE, b->index, bytes);
	if (rc == 0)
		b->send_busy = true;
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

/* ---- memory -------------------------------------------------------------- */

static int range_check(struct ga_buf *b, size_t off, size_t len)
{
	if (off > b->mem.size || len > b->mem.size - off)
		return ga_err(-ERANGE, "%s buffer %u: %zu bytes at offset %zu exceed its %zu bytes",
			      dir_name(b->dir), b->index, len, off, b->mem.size);
	return 0;
}

/* The arguments of ga_buf_read/ga_buf_write (@fn): no NULL buffer, no NULL
 * @p for a non-empty range, and the range inside the buffer. */
static int io_check(struct ga_buf *b, size_t offset, const void *p, size_t len, const char *fn)
{
	if (!b || (len && !p))
		return ga_err(-EINVAL, "%s: NULL argument", fn);
	return range_check(b, offset, len);
}

int ga_buf_read(struct ga_buf *b, size_t offset, void *dst, size_t len)
{
	int rc = io_check(b, offset, dst, len, "ga_buf_read");

	if (rc || len == 0)
		return rc;
	return buf_mem_read(b, offset, dst, len);
}

int ga_buf_write(struct ga_buf *b, size_t offset, const void *src, size_t len)
{
	int rc = io_check(b, offset, src, len, "ga_buf_write");

	if (rc || len == 0)
		return rc;
	return buf_mem_write(b, offset, src, len);
}

int ga_buf_header(struct ga_buf *b, struct ga_header *h)
{
	uint8_t raw[8];
	int rc;

	if (!b || !h)
		return ga_err(-EINVAL, "ga_buf_header: NULL argument");
	rc = buf_mem_read(b, 0, raw, sizeof(raw));
	if (rc)
		return rc;
	ga_header_decode(raw, h);
	return 0;
}

int ga_buf_ipc_handle(struct ga_buf *b, char *hex, size_t len)
{
	if (!b || !hex)
		return ga_err(-EINVAL, "ga_buf_ipc_handle: NULL argument");
	if (len < 129)
		return ga_err(-ENOSPC, "IPC handle needs 129 bytes (128 hex digits + NUL)");
	return b->dev->mem->ipc_handle(b->dev->mem_ctx, &b->mem, hex, len);
}
