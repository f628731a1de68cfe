// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Buffers created and destroyed: the checks of what the driver allows
 * before a create, undoing a create that failed half way, removal of the
 * last buffer (the driver's own, or the rebuild in buf_remove_one.c), and
 * removal of all with the engines stopped and idle first.  What the card is
 * told about one buffer (registration, address registers, waiting for
 * idle) is in buf_card.c.
 *
 * The upstream driver's rules shape this file: indices are handed out in
 * call order (so a create must name the next index) and V4 write buffers
 * share one size register.  Everything here runs under dev->lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf_internal.h"

/* Remove the last buffer of @dir from the card and free it. */
static int remove_last_locked(struct ga_dev *dev, enum ga_dir dir)
{
	unsigned int last = dev->nbufs[dir] - 1;
	struct ga_buf *b = dev->bufs[dir][last];
	int rc = -ENOSYS;

	if (!b->gone) {
		if (dev->be->remove_last)
			rc = dev->be->remove_last(dev, dir);
		if (rc == -ENOSYS)
			return buf_rebuild_without_last(dev, dir); /* frees b */
		if (rc)
			return rc;
		buf_zero_addresses(dev, dir, last);
	}
	dev->bufs[dir][last] = NULL;
	dev->nbufs[dir]--;
	buf_free(dev, b);
	return 0;
}

static bool any_gone(struct ga_dev *dev)
{
	unsigned int d, i;

	for (d = 0; d < 2; d++)
		for (i = 0; i < dev->nbufs[d]; i++)
			if (dev->bufs[d][i]->gone)
				return true;
	return false;
}

/* Keep @b's memory (not @b) until the driver has let go of it: the next
 * remove-all frees parked memory.  If even that cannot be recorded the
 * memory is leaked, never freed under the card. */
static void park(struct ga_dev *dev, struct ga_buf *b)
{
	struct ga_mem_block *p = realloc(dev->parked, (dev->nparked + 1) * sizeof(*p));

	if (p) {
		dev->parked = p;
		dev->parked[dev->nparked++] = b->mem;
	} else {
		ga_log("no memory to remember a parked block: leaked");
	}
	free(b);
	dev->add_kept = false;
}

static void free_parked(struct ga_dev *dev)
{
	for (unsigned int i = 0; i < dev->nparked; i++)
		dev->mem->free(dev->mem_ctx, &dev->parked[i]);
	free(dev->parked);
	dev->parked = NULL;
	dev->nparked = 0;
}

/*
 * Registrations the card holds in @dir beyond this device's own: from the
 * ring size in 0x08 (count - 1, so 0 means none or one) and, for that
 * ambiguity, write slot 0's address (every driver zeroes it on removal,
 * and so do we).  Not read slot 0's: upstream's removals clear the wrong
 * read slots, so an address left there proves nothing; a lone foreign read
 * buffer is then missed here and caught after the add (dd_added_check).
 * A lower bound.  dev->lock held.
 */
static int foreign_locked(struct ga_dev *dev, enum ga_dir dir, unsigned int *n)
{
	unsigned int have = dev->nbufs[dir], total;
	uint32_t cf = 0, lo = 0, hi = 0;
	int rc;

	rc = ga_field_read_locked(dev, dir == GA_DIR_WRITE ? GA_REG_WRITE_COUNT : GA_REG_READ_COUNT,
				  0, &cf);
	if (!rc && !cf && !have && dir == GA_DIR_WRITE) {
		rc = ga_field_read_locked(
			dev, dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO, 0,
			&lo);
		if (!rc)
			rc = ga_field_read_locked(dev,
						  dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_HI
								      : GA_REG_READ_ADDR_HI,
						  0, &hi);
	}
	if (rc)
		return rc;
	total = cf ? cf + 1 : (have || lo || hi) ? 1 : 0;
	*n = total > have ? total - have : 0;
	return 0;
}

int ga_dev_foreign_buffers(struct ga_dev *dev, unsigned int count[2])
{
	int rc;

	if (!dev || !count)
		return ga_err(-EINVAL, "ga_dev_foreign_buffers: NULL argument");
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	if (!rc)
		rc = foreign_locked(dev, GA_DIR_WRITE, &count[GA_DIR_WRITE]);
	if (!rc)
		rc = foreign_locked(dev, GA_DIR_READ, &count[GA_DIR_READ]);
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

/* Refuse an add while the card holds buffers of @dir we did not register:
 * the driver would number ours after them (upstream 7.4 has no owner to
 * refuse it), and undoing that takes a remove-all of everyone's. */
static int check_foreign_locked(struct ga_dev *dev, enum ga_dir dir)
{
	unsigned int n = 0;
	int rc = foreign_locked(dev, dir, &n);

	if (rc || !n)
		return rc;
	rc = ga_err(-EBUSY,
		    "the card already holds %u %s buffer%s not registered here (another "
		    "program's, or left by one that exited without removing them: upstream's "
		    "datadev keeps them, and the card keeps writing into them): nothing was "
		    "changed; stop the program that holds them, or if none does, mount with "
		    "-o reclaim or reload the driver",
		    n, dir_name(dir), n == 1 ? "" : "s");
	return dev->be->busy ? dev->be->busy(dev, rc) : rc;
}

int ga_buf_create(struct ga_dev *dev, enum ga_dir dir, unsigned int index, size_t size,
		  struct ga_buf **out)
{
	double t0 = ga_mono_us(), t1, t2, t3;
	struct ga_buf *b;
	unsigned int n, dbytes;
	int rc;

	if (out)
		*out = NULL;
	if (!dev)
		return ga_err(-EINVAL, "ga_buf_create: NULL device");
	if (dev->opts.observe)
		return ga_err(-EROFS, "observer: adds no buffers (opened with observe)");
	if (!dir_valid(dir))
		return ga_err(-EINVAL, "direction %d is neither write nor read", (int)dir);

	pthread_mutex_lock(&dev->lock);
	t1 = ga_mono_us();
	n = dev->nbufs[dir];
	dbytes = dev->info.dma_data_bytes;
	rc = ga_link_check_locked(dev);
	if (rc)
		goto out_unlock;
	if (any_gone(dev)) {
		rc = ga_err(-EIO,
			    "the card no longer holds buffers listed here (removed by another "
			    "program, by the driver, or a failed re-registration): remove "
			    "them (rmdir, highest index first) before creating one");
		goto out_unlock;
	}
	if (index != n) {
		rc = ga_err(-EINVAL,
			    "%s buffer %u: upstream assigns indices in call order: next "
			    "index is %u",
			    dir_name(dir), index, n);
		goto out_unlock;
	}
	if (n >= dev->info.max_buffers) {
		rc = ga_err(-ENOSPC, "all %u %s buffers the firmware supports are in use",
			    dev->info.max_buffers, dir_name(dir));
		goto out_unlock;
	}
	if (size == 0 || size % GA_GPU_PAGE_SIZE) {
		rc = ga_err(-EINVAL,
			    "buffer size %zu is not a multiple of 64 KiB (RDMA pins 64 KiB "
			    "pages)",
			    size);
		goto out_unlock;
	}
	if (size > 0xffff0000u) {
		rc = ga_err(-ERANGE,
			    "buffer size %zu is too large (the driver takes at most "
			    "4 GiB - 64 KiB)",
			    size);
		goto out_unlock;
	}
	if (size <= payload_offset(dev, dir)) {
		rc = ga_err(-EINVAL, "buffer size %zu leaves no room after the %u-byte header area",
			    size, dbytes);
		goto out_unlock;
	}
	if (dir == GA_DIR_WRITE && is_v4(dev) && n > 0 &&
	    dev->bufs[GA_DIR_WRITE][0]->mem.size != size) {
		rc = ga_err(-EINVAL,
			    "version %u write buffers share one size register: the others "
			    "are %zu bytes, not %zu",
			    dev->info.version, dev->bufs[GA_DIR_WRITE][0]->mem.size, size);
		goto out_unlock;
	}
	rc = check_foreign_locked(dev, dir);
	if (rc)
		goto out_unlock;

	b = calloc(1, sizeof(*b));
	if (!b) {
		rc = ga_err(-ENOMEM, "out of memory");
		goto out_unlock;
	}
	b->dev = dev;
	b->dir = dir;
	b->index = index;
	rc = dev->mem->alloc(dev->mem_ctx, size, &b->mem);
	if (rc) {
		free(b);
		goto out_unlock;
	}
	t2 = ga_mono_us();
	dev->add_kept = false;
	rc = buf_register_locked(dev, b);
	t3 = ga_mono_us();
	ga_log("%s buffer %u: waiting for the device %.0f us, memory %.0f us, registration "
	       "%.0f us",
	       dir_name(dir), index, t1 - t0, t2 - t1, t3 - t2);
	if (rc) {
		int saved = rc;

		if (dev->nbufs[dir] > index && dev->bufs[dir][index] == b) {
			/* registered, but the payload limit or enables failed */
			if (remove_last_locked(dev, dir))
				ga_log("undo of buffer %u failed: %s", index, ga_last_error());
		} else if (dev->add_kept) {
			park(dev, b); /* the driver still holds it */
		} else {
			buf_free(dev, b);
		}
		rc = saved;
		goto out_unlock;
	}
	if (out)
		*out = b;
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

int ga_buf_destroy(struct ga_buf *b)
{
	double t0 = ga_mono_us(), t1, t2;
	struct ga_dev *dev;
	enum ga_buf_state st;
	uint32_t on = 0;
	unsigned int n;
	int rc = 0;

	if (!b)
		return ga_err(-EINVAL, "ga_buf_destroy: NULL buffer");
	dev = b->dev;
	pthread_mutex_lock(&dev->lock);
	t1 = ga_mono_us();
	n = dev->nbufs[b->dir];
	if (b->index + 1 != n) {
		rc = ga_err(-EBUSY,
			    "%s buffer %u: only the last one (%u) can be removed on its "
			    "own, since the driver hands out indices in order; remove %u..%u "
			    "first",
			    dir_name(b->dir), b->index, n - 1, b->index + 1, n - 1);
		goto out_unlock;
	}
	if (!b->gone) {
		rc = ga_field_read_locked(
			dev, b->dir == GA_DIR_WRITE ? GA_REG_WRITE_ENABLE : GA_REG_READ_ENABLE, 0,
			&on);
		if (rc)
			goto out_unlock;
		/* The state only matters while the engine runs; reading it
		 * from GPU memory waits behind the card's queued frames. */
		st = on ? buf_state_locked(b) : GA_BUF_IDLE;
		if (on && st == GA_BUF_FREE) {
			rc = ga_err(-EBUSY,
				    "write buffer %u is armed and the write engine is "
				    "running: set write_enable to 0 first",
				    b->index);
			goto out_unlock;
		}
		if (on && st == GA_BUF_BUSY) {
			rc = ga_err(-EBUSY,
				    "read buffer %u has a read queued and the read engine is "
				    "running: wait for it or set read_enable to 0",
				    b->index);
			goto out_unlock;
		}
	}
	t2 = ga_mono_us();
	n = b->index;
	rc = remove_last_locked(dev, b->dir);
	ga_log("buffer %u removed: waiting for the device %.0f us, checks %.0f us, removal %.0f us",
	       n, t1 - t0, t2 - t1, ga_mono_us() - t2);
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

/* @force: ask the driver to remove everything even when we registered
 * nothing, which clears buffers an earlier process left behind (closing
 * the device file does not release them upstream).  Close does not force:
 * it must not tear down another process's buffers. */
static int destroy_all(struct ga_dev *dev, bool force)
{
	uint32_t wr = 0, rd = 0;
	unsigned int d, i;
	int rc;

	if (!force && dev->nbufs[GA_DIR_WRITE] == 0 && dev->nbufs[GA_DIR_READ] == 0 &&
	    dev->nparked == 0)
		return 0;
	/* Engines off first: the card must stop using the memory before it is
	 * unpinned and freed. */
	if (buf_read_enables(dev, &wr, &rd) == 0) {
		if (wr)
			ga_enable_locked(dev, GA_DIR_WRITE, false);
		if (rd)
			ga_enable_locked(dev, GA_DIR_READ, false);
	}
	buf_wait_idle(dev, wr || rd);
	rc = dev->be->remove_all(dev);
	if (rc)
		return rc;
	free_parked(dev);
	/* Every slot's address, not only ours: upstream 7.4's remove-all
	 * clears the wrong read slots, and an address left there would read
	 * as a registration (foreign_locked). */
	for (d = 0; d < 2; d++) {
		for (i = 0; i < dev->info.max_buffers && i < GA_MAX_BUFFERS; i++)
			buf_zero_addresses(dev, (enum ga_dir)d, i);
		for (i = 0; i < dev->nbufs[d]; i++) {
			buf_free(dev, dev->bufs[d][i]);
			dev->bufs[d][i] = NULL;
		}
		dev->nbufs[d] = 0;
	}
	return 0;
}

int ga_buf_destroy_all_locked(struct ga_dev *dev)
{
	return destroy_all(dev, false);
}

int ga_buf_destroy_all(struct ga_dev *dev)
{
	int rc;

	if (!dev)
		return ga_err(-EINVAL, "ga_buf_destroy_all: NULL device");
	pthread_mutex_lock(&dev->lock);
	rc = destroy_all(dev, true);
	pthread_mutex_unlock(&dev->lock);
	return rc;
}
