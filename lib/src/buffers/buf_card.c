// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One buffer and the card: registering it as the next index of its
 * direction (the engine enable bits and the payload limit around the
 * driver's add), clearing its address registers, waiting until no RDMA is
 * in flight before its memory goes, and freeing it.  buf_register.c
 * (create, destroy, remove-all) and buf_remove_one.c (the rebuild for
 * drivers that can only remove all) are built on these.
 *
 * Upstream main's add ioctl sets the engine enable bits as a side effect
 * (so we put them back), upstream pre-release's clears them (frames that
 * arrive until we put them back are dropped), and each write buffer gets a
 * payload limit of size - dma_data_bytes: the payload starts at
 * +dma_data_bytes, and upstream's add would let a frame run past the end
 * of the registered memory.  Upstream main refuses an add while the limit
 * is another size, so it is cleared for the add (frames meanwhile are cut
 * to 1 byte).  A device whose add runs live (GA_CAP_ADD_LIVE: the
 * simulated card, gpuasync.ko) needs neither.  Elsewhere the frames the card
 * counts while an add has the engine stopped or the limit cleared are
 * added to dev->add_stopped_frames (dropped or cut short: the counter cannot
 * say which, nor whether a few of them landed just before the driver
 * stopped the engine).  Everything here runs under dev->lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "buf_internal.h"

void buf_zero_addresses(struct ga_dev *dev, enum ga_dir dir, unsigned int index)
{
	enum ga_reg_id lo = dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO;
	enum ga_reg_id hi = dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI;

	/* Stale addresses let an idle core write headers into memory that is
	 * no longer ours (upstream PR #284); upstream's remove-all also clears
	 * the wrong read slots.  Clearing them ourselves costs nothing. */
	if (ga_field_write_locked(dev, lo, index, 0) || ga_field_write_locked(dev, hi, index, 0))
		ga_log("could not clear %s address %u: %s", dir_name(dir), index, ga_last_error());
}

int buf_read_enables(struct ga_dev *dev, uint32_t *wr, uint32_t *rd)
{
	int rc = ga_field_read_locked(dev, GA_REG_WRITE_ENABLE, 0, wr);

	return rc ? rc : ga_field_read_locked(dev, GA_REG_READ_ENABLE, 0, rd);
}

/* Put the enable bits back where they were (upstream main's add sets them). */
static int restore_enables(struct ga_dev *dev, uint32_t wr, uint32_t rd)
{
	uint32_t cw, cr;
	int rc = buf_read_enables(dev, &cw, &cr);

	if (rc)
		return rc;
	/* Through the driver where it has enable ioctls: 0x08 also holds the
	 * counts the driver updates under its own lock. */
	if (cw != wr && (rc = ga_enable_locked(dev, GA_DIR_WRITE, wr != 0)))
		return rc;
	if (cr != rd && (rc = ga_enable_locked(dev, GA_DIR_READ, rd != 0)))
		return rc;
	return 0;
}

/* Frame payload limit of write buffer @b (its index must be registered). */
static int set_payload_limit(struct ga_dev *dev, struct ga_buf *b)
{
	uint32_t limit = (uint32_t)(b->mem.size - dev->info.dma_data_bytes);

	enum ga_reg_id id = is_v4(dev) ? GA_REG_WRITE_MAX_SIZE : GA_REG_WRITE_SIZE;
	unsigned int index = is_v4(dev) ? 0 : b->index;
	uint32_t cur;

	if (b->dir != GA_DIR_WRITE)
		return 0;
	/* Only a change is stored: on V4/V5 the one limit usually holds it
	 * already, and an emulated card counts every store to that page. */
	if (ga_field_read_locked(dev, id, index, &cur) == 0 && cur == limit)
		return 0;
	return ga_field_write_locked(dev, id, index, limit);
}

/*
 * Hand @b to the driver: as a dma-buf when the device's pin path is dmabuf
 * (the memory exports it, the fd is closed right after the add: a driver
 * keeps its own reference), else by address.  With pin=auto a buffer whose
 * memory will not export goes by address; with pin=dmabuf that fails.
 */
static int add_to_driver(struct ga_dev *dev, struct ga_buf *b)
{
	struct ga_dmabuf_ref db = {.fd = -1};
	uint32_t size = (uint32_t)b->mem.size;
	int rc;

	b->dmabuf = false;
	if (dev->dmabuf) {
		rc = dev->mem->dmabuf_export(dev->mem_ctx, &b->mem, &db.fd, &db.offset);
		if (rc && dev->opts.pin == GA_PIN_DMABUF)
			return rc;
		if (rc)
			ga_log("%s buffer %u goes p2p: %s", dir_name(b->dir), b->index,
			       ga_last_error());
	}
	rc = dev->be->add_buffer(dev, b->dir, &b->mem, size, db.fd >= 0 ? &db : NULL,
				 &b->bus_address);
	if (db.fd >= 0) {
		close(db.fd);
		b->dmabuf = rc == 0;
	}
	return rc;
}

/*
 * Register @b with the card as the next index of its direction and make it
 * the last element of the array.  On failure nothing stays registered.
 */
int buf_register_locked(struct ga_dev *dev, struct ga_buf *b)
{
	enum ga_dir dir = b->dir;
	uint32_t wr = 0, rd = 0, old_max = 0, f0 = 0, f1 = 0;
	bool live = ga_dev_has(dev, GA_CAP_ADD_LIVE);
	bool v4w = is_v4(dev) && dir == GA_DIR_WRITE && !live;
	bool counted;
	int rc, rc2;

	rc = buf_read_enables(dev, &wr, &rd);
	if (rc)
		return rc;
	/* Frames only go missing while the write engine was meant to run. */
	counted = !live && wr && ga_field_read_locked(dev, GA_REG_RX_FRAME_COUNT, 0, &f0) == 0;
	/* Upstream main refuses a size different from write_max_size when it
	 * is > 1; ours is size - dma_data_bytes, so clear it for the add.
	 * gpuasync.ko lets nobody but the owner (or CAP_SYS_RAWIO) write
	 * registers, so before our first buffer the clear may be refused
	 * (EPERM): it checks sizes only against buffers already there. */
	if (v4w) {
		rc = ga_field_read_locked(dev, GA_REG_WRITE_MAX_SIZE, 0, &old_max);
		if (!rc)
			rc = ga_field_write_locked(dev, GA_REG_WRITE_MAX_SIZE, 0, 0);
		if (rc == -EPERM && dev->nbufs[dir] == 0) {
			v4w = false;
			rc = 0;
		}
		if (rc)
			return rc;
	}
	b->index = dev->nbufs[dir];
	rc = add_to_driver(dev, b);
	/* Without the limit cleared frames go missing only if the driver
	 * turned the write engine off (7.5; 7.4 turns it on). */
	if (counted && !v4w) {
		uint32_t cw = 1;

		counted = ga_field_read_locked(dev, GA_REG_WRITE_ENABLE, 0, &cw) == 0 && !cw;
	}
	if (rc) {
		if (v4w)
			ga_field_write_locked(dev, GA_REG_WRITE_MAX_SIZE, 0, old_max);
		restore_enables(dev, wr, rd);
		return rc;
	}
	dev->bufs[dir][b->index] = b;
	dev->nbufs[dir]++;
	/* What the driver programmed, to tell later whether it still holds the
	 * buffer (buf_check_registration_locked); 0 when unreadable. */
	b->card_address_lo = 0;
	ga_field_read_locked(dev, dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO,
			     b->index, &b->card_address_lo);

	rc = set_payload_limit(dev, b);
	rc2 = restore_enables(dev, wr, rd);
	if (counted && ga_field_read_locked(dev, GA_REG_RX_FRAME_COUNT, 0, &f1) == 0 && f1 != f0)
		__atomic_add_fetch(&dev->add_stopped_frames, (uint64_t)(uint32_t)(f1 - f0),
				   __ATOMIC_RELAXED);
	return rc ? rc : rc2;
}

void buf_free(struct ga_dev *dev, struct ga_buf *b)
{
	dev->mem->free(dev->mem_ctx, &b->mem);
	free(b);
}

/* Wait until the card has no RDMA in flight before memory goes away, by
 * the version's quiesce rule (versions.def): poll write/read_active where
 * the firmware reports them, else the fixed wait of the reference driver. */
void buf_wait_idle(struct ga_dev *dev, bool was_on)
{
	const struct ga_version *v = ga_version_find(dev->info.version);
	struct timespec ms = {0, 1000000};
	uint32_t wa = 0, ra = 0;
	unsigned int i;

	if (!v)
		return;
	if (v->quiesce_poll_ms) {
		for (i = 0; i < v->quiesce_poll_ms; i++) {
			if (ga_field_read_locked(dev, GA_REG_WRITE_ACTIVE, 0, &wa) ||
			    ga_field_read_locked(dev, GA_REG_READ_ACTIVE, 0, &ra) || (!wa && !ra))
				return;
			nanosleep(&ms, NULL);
		}
		ga_log("engines still active after %u ms", v->quiesce_poll_ms);
	} else if (was_on && !ga_dev_has(dev, GA_CAP_SIM)) {
		struct timespec t = {v->quiesce_wait_ms / 1000,
				     (long)(v->quiesce_wait_ms % 1000) * 1000000L};

		nanosleep(&t, NULL);
	}
}
