// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Removing one buffer on a driver that can only remove all of them
 * (upstream datadev, which has no GA_Rem_Buffer): remove all, free the one
 * going away, register the others again in index order with the same
 * memory, and re-arm those that were waiting for a frame.  Both engines
 * must be off.  If the rebuild fails every buffer is marked lost (ERROR).
 * Runs under dev->lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf_internal.h"

static int engines_off(struct ga_dev *dev)
{
	uint32_t wr, rd;
	int rc = buf_read_enables(dev, &wr, &rd);

	if (rc)
		return rc;
	if (wr || rd)
		return ga_err(-EBUSY,
			      "this driver can only remove all buffers at once, so removing "
			      "one means removing and re-adding the others, which needs "
			      "both engines off (write_enable=0, read_enable=0)");
	return 0;
}

/* Mark every buffer lost after a failed rebuild: they stay listed (ERROR)
 * so the caller can destroy them, but the card knows none of them. */
static void lose_all(struct ga_dev *dev)
{
	unsigned int d, i;

	dev->be->remove_all(dev);
	for (d = 0; d < 2; d++)
		for (i = 0; i < dev->nbufs[d]; i++) {
			dev->bufs[d][i]->gone = true;
			dev->bufs[d][i]->error = true;
			buf_zero_addresses(dev, (enum ga_dir)d, i);
		}
}

/*
 * Remove the last buffer of @dir the way the upstream driver allows: remove
 * all, free the one going away (its unpin callback then finds nothing
 * registered), register the others again in index order with the same
 * memory and payload limit, and re-arm those that were waiting for a frame.
 */
int buf_rebuild_without_last(struct ga_dev *dev, enum ga_dir dir)
{
	struct ga_buf *keep[2][GA_MAX_BUFFERS];
	bool rearm[GA_MAX_BUFFERS] = {false};
	unsigned int n[2], d, i;
	struct ga_buf *victim;
	int rc, saved_rc;

	rc = engines_off(dev);
	if (rc)
		return rc;
	for (d = 0; d < 2; d++) {
		n[d] = dev->nbufs[d];
		memcpy(keep[d], dev->bufs[d], n[d] * sizeof(keep[d][0]));
	}
	for (i = 0; i < n[GA_DIR_WRITE]; i++)
		rearm[i] = buf_state_locked(keep[GA_DIR_WRITE][i]) == GA_BUF_FREE;

	/* The engines are off, but may have been switched off just now: the
	 * victim's memory goes below, so let RDMA in flight finish first, as
	 * a remove-all does. */
	buf_wait_idle(dev, true);
	rc = dev->be->remove_all(dev);
	if (rc)
		return rc;
	victim = keep[dir][n[dir] - 1];
	n[dir]--;
	for (d = 0; d < 2; d++) {
		for (i = 0; i < dev->nbufs[d]; i++) {
			buf_zero_addresses(dev, (enum ga_dir)d, i);
			dev->bufs[d][i] = NULL;
		}
		dev->nbufs[d] = 0;
	}
	buf_free(dev, victim);
	/* Pins a driver left to the memory's free callbacks go first, before
	 * any buffer is registered again (7.5's callback clears the card). */
	for (d = 0; d < 2 && dev->mem->drop_pins; d++) {
		for (i = 0; i < n[d]; i++) {
			rc = dev->mem->drop_pins(dev->mem_ctx, &keep[d][i]->mem);
			if (rc)
				goto out_lost;
		}
	}

	for (d = 0; d < 2; d++) {
		for (i = 0; i < n[d]; i++) {
			rc = buf_register_locked(dev, keep[d][i]);
			if (rc)
				goto out_lost;
		}
	}
	for (i = 0; i < n[GA_DIR_WRITE]; i++) {
		uint32_t idx = i;

		if (!rearm[i])
			continue;
		rc = dev->be->arm(dev, &idx, 1);
		if (rc)
			goto out_lost;
	}
	return 0;

out_lost:
	saved_rc = rc;
	for (d = 0; d < 2; d++) {
		memcpy(dev->bufs[d], keep[d], n[d] * sizeof(keep[d][0]));
		dev->nbufs[d] = n[d];
	}
	lose_all(dev);
	return ga_err(saved_rc,
		      "re-registering the remaining buffers failed (%s): every buffer "
		      "is now unregistered (state ERROR); destroy them and create again",
		      ga_last_error());
}
