// SPDX-License-Identifier: GPL-2.0
/*
 * The buffer layer: what both ways of registering a buffer (by GPU
 * address, ga_p2p.c; from a dma-buf, ga_dmabuf.c) and the driver above
 * them (ga_drv.c) sit on.  The register helpers, programming a buffer into
 * the card and stopping DMA to it, the card's buffer table (who owns it,
 * the next slot, placing a buffer, taking buffers out) and the quiesce
 * rule.  It knows neither pin path: releasing a buffer's memory is the
 * caller's, by the path that registered it.
 */
#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "ga_buf.h"

/* ---- module parameters --------------------------------------------------- */

/* 0: the firmware version's quiesce rule (gpuasync/versions.def). */
static unsigned int quiesce_ms;
module_param(quiesce_ms, uint, 0644);
MODULE_PARM_DESC(quiesce_ms,
		 "firmware without active bits: wait this long after stopping DMA before unpinning (ms; 0: the version's figure, 50)");

static unsigned int quiesce_timeout_ms;
module_param(quiesce_timeout_ms, uint, 0644);
MODULE_PARM_DESC(quiesce_timeout_ms,
		 "firmware with active bits (V5): longest wait for them to clear (ms; 0: the version's figure, 1000)");

/* ---- register helpers ---------------------------------------------------- */

u32 ga_core_rd(struct ga_card *card, u32 off)
{
	return card->ops->read32(card, card->core_offset + off);
}

static void ga_core_wr(struct ga_card *card, u32 off, u32 val)
{
	card->ops->write32(card, card->core_offset + off, val);
}

/* The core block's words, for core's field accessor (gpuasync/regs.h). */
static int ga_io_rd(void *ctx, u32 off, u32 *word)
{
	*word = ga_core_rd(ctx, off);
	return 0;
}

static int ga_io_wr(void *ctx, u32 off, u32 word)
{
	ga_core_wr(ctx, off, word);
	return 0;
}

int ga_field_rd(struct ga_card *card, enum ga_reg_id id, u32 index, u32 *val)
{
	const struct ga_reg_io io = { card, ga_io_rd, ga_io_wr };
	u32 off;
	int ret = ga_reg_offset(id, card->layout, card->version, index, card->max_buffers, &off);

	if (ret)
		return ret;
	return ga_field_read(&io, id, card->layout, off, val);
}

/*
 * Write one field with core's accessor: a value wider than the field is
 * -ERANGE and nothing is written.
 * Locking: card->reg_lock held (it is the only writer of shared words).
 */
int ga_field_wr(struct ga_card *card, enum ga_reg_id id, u32 index, u32 val)
{
	const struct ga_reg_io io = { card, ga_io_rd, ga_io_wr };
	u32 off;
	int ret = ga_reg_offset(id, card->layout, card->version, index, card->max_buffers, &off);

	lockdep_assert_held(&card->reg_lock);
	if (ret)
		return ret;
	return ga_field_write(&io, id, card->layout, off, val);
}

enum ga_reg_id ga_enable_id(bool write)
{
	return write ? GA_REG_WRITE_ENABLE : GA_REG_READ_ENABLE;
}

bool ga_engine_on(struct ga_card *card, bool write)
{
	u32 v = 0;

	ga_field_rd(card, ga_enable_id(write), 0, &v);
	return v != 0;
}

/*
 * Program the bus address of buffer @index.  Both layouts put the high
 * word right after the low one, so where the card can take a 64-bit write
 * it gets one: between two 32-bit writes a frame dropped by a disabled core
 * would have its header written to half an address.
 * Locking: card->reg_lock held.
 */
static void ga_set_addr(struct ga_card *card, bool write, u32 index, u64 bus)
{
	enum ga_reg_id lo_id = write ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO;
	enum ga_reg_id hi_id = write ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI;
	u32 lo, hi;

	lockdep_assert_held(&card->reg_lock);
	if (card->ops->write64 &&
	    !ga_reg_offset(lo_id, card->layout, card->version, index, card->max_buffers, &lo) &&
	    !ga_reg_offset(hi_id, card->layout, card->version, index, card->max_buffers, &hi) &&
	    hi == lo + 4) {
		card->ops->write64(card, card->core_offset + lo, bus);
		return;
	}
	ga_field_wr(card, lo_id, index, lower_32_bits(bus));
	ga_field_wr(card, hi_id, index, upper_32_bits(bus));
}

/* Locking: card->reg_lock held. */
void ga_zero_addr(struct ga_card *card, bool write, u32 index)
{
	lockdep_assert_held(&card->reg_lock);
	ga_set_addr(card, write, index, 0);
	if (write && ga_reg_present(GA_REG_WRITE_SIZE, card->layout, card->version))
		ga_field_wr(card, GA_REG_WRITE_SIZE, index, 0);
}

/*
 * Program the ring sizes of both directions from card->count.
 * Locking: card->lock and card->reg_lock held.
 */
static void ga_program_counts(struct ga_card *card)
{
	lockdep_assert_held(&card->lock);
	ga_field_wr(card, GA_REG_WRITE_COUNT, 0, card->count[1] ? card->count[1] - 1 : 0);
	ga_field_wr(card, GA_REG_READ_COUNT, 0, card->count[0] ? card->count[0] - 1 : 0);
	/* V4: the shared write size goes back to its reset value with the last
	 * write buffer, so the next set of buffers may have another size.
	 */
	if (!card->count[1] && ga_reg_present(GA_REG_WRITE_MAX_SIZE, card->layout, card->version))
		ga_field_wr(card, GA_REG_WRITE_MAX_SIZE, 0, 0);
}

/*
 * After DMA to some buffers was stopped (enable bit off or address zeroed),
 * wait until none can still be in flight: V5 reports it in its active
 * bits (only meaningful with the engine off), older firmware cannot say,
 * so it gets a fixed wait unless the card knows better (emulated card).
 * @dirs: bit 0 read engine, bit 1 write engine.
 * Context: process context, sleeps; no lock needed (reads only).
 */
static void ga_wait_idle(struct ga_card *card, unsigned int dirs)
{
	const struct ga_version *v = ga_version_find(card->version);
	unsigned int poll_ms, wait_ms;
	unsigned long deadline;
	int d;

	if (!v)
		return;
	/* The version's quiesce rule, unless a module parameter overrides it. */
	poll_ms = quiesce_timeout_ms ?: v->quiesce_poll_ms;
	wait_ms = quiesce_ms ?: v->quiesce_wait_ms;
	if (v->quiesce_poll_ms) {
		deadline = jiffies + msecs_to_jiffies(poll_ms);
		for (d = 0; d < 2; d++) {
			enum ga_reg_id id = d ? GA_REG_WRITE_ACTIVE : GA_REG_READ_ACTIVE;
			u32 active = 0;

			if (!(dirs & (1u << d)) || ga_engine_on(card, d))
				continue;
			while (!ga_field_rd(card, id, 0, &active) && active) {
				if (time_after(jiffies, deadline)) {
					atomic_inc(&card->quiesce_timeouts);
					dev_warn(card->dev, "%s engine still active after %u ms\n",
						 d ? "write" : "read", poll_ms);
					break;
				}
				/* Short steps: the wait ends within 50 us of the bits clearing. */
				usleep_range(20, 50);
			}
		}
		return;
	}
	if (card->ops->dma_barrier)
		card->ops->dma_barrier(card);
	else /* usleep_range: msleep would add up to two jiffies */
		usleep_range(wait_ms * 1000, wait_ms * 1000 + 200);
}

/* ---- stopping DMA, programming --------------------------------------------- */

/*
 * Stop all DMA to @buf: engine off if it ran, address zeroed, wait.
 * Context: an nvidia_p2p free callback or a dma-buf move_notify, buf->lock
 * held (or the re-entered caller's).
 */
void ga_buf_stop_dma(struct ga_buf *buf)
{
	struct ga_card *card = buf->card;
	bool was_on;
	ktime_t t0;
	s64 us;

	mutex_lock(&card->reg_lock);
	was_on = ga_engine_on(card, buf->write);
	if (was_on)
		ga_field_wr(card, ga_enable_id(buf->write), 0, 0);
	ga_zero_addr(card, buf->write, buf->index);
	mutex_unlock(&card->reg_lock);
	if (was_on)
		dev_warn(card->dev,
			 "%s buffer %u invalidated while its engine ran: engine stopped, "
			 "re-enable to continue\n",
			 buf->write ? "write" : "read", buf->index);
	/*
	 * NVIDIA's (or the exporter's) callback waits here, holding their
	 * locks: no longer than the firmware needs (V5: until its active bits
	 * clear, capped at quiesce_timeout_ms; before V5: quiesce_ms, as the
	 * reference driver).  callback_quiesce_us shows the longest wait.
	 */
	t0 = ktime_get();
	ga_wait_idle(card, buf->write ? 2 : 1);
	us = ktime_us_delta(ktime_get(), t0);
	if (us > atomic64_read(&card->cb_quiesce_max_us))
		atomic64_set(&card->cb_quiesce_max_us, us);
}

/*
 * The most payload the card may write into a write buffer of @size bytes:
 * the payload starts at +DmaDataBytes.  (Upstream programs @size itself, so
 * a full-size frame runs DmaDataBytes past the pinned memory.)
 */
static u32 ga_payload_max(const struct ga_card *card, u32 size)
{
	return size - card->dma_data_bytes;
}

/* Program @buf's bus address (and sizes of a write buffer) into the card. */
void ga_buf_program(struct ga_card *card, struct ga_buf *buf)
{
	mutex_lock(&card->reg_lock);
	ga_set_addr(card, buf->write, buf->index, buf->bus);
	if (buf->write) {
		if (ga_reg_present(GA_REG_WRITE_SIZE, card->layout, card->version))
			ga_field_wr(card, GA_REG_WRITE_SIZE, buf->index, ga_payload_max(card, buf->size));
		if (ga_reg_present(GA_REG_WRITE_MAX_SIZE, card->layout, card->version))
			ga_field_wr(card, GA_REG_WRITE_MAX_SIZE, 0, ga_payload_max(card, buf->size));
	}
	mutex_unlock(&card->reg_lock);
}

/* ---- the buffer table of a card --------------------------------------------- */

/* May the calling thread group change this card's buffers?  card->lock held. */
int ga_check_owner(struct ga_card *card)
{
	lockdep_assert_held(&card->lock);
	if (card->dead)
		return -ENODEV;
	if (card->owner_tgid && card->owner_tgid != task_tgid_nr(current))
		return -EBUSY;
	return 0;
}

/* A buffer for @gf's list @write, not yet placed (card->lock not held). */
struct ga_buf *ga_buf_new(struct ga_file *gf, bool write, u64 address, u32 size)
{
	struct ga_buf *buf = kzalloc(sizeof(*buf), GFP_KERNEL);

	if (!buf)
		return NULL;
	buf->card = gf->card;
	buf->owner = gf;
	buf->tgid = task_tgid_nr(current);
	buf->write = write;
	buf->gpu_address = address;
	buf->size = size;
	mutex_init(&buf->lock);
	init_completion(&buf->cb_done);
	INIT_LIST_HEAD(&buf->win_node);
	buf->state = GA_PIN_SETUP;
	return buf;
}

/*
 * May @buf join its list?  Sets buf->index to the next slot.  card->lock
 * held; the caller then pins or maps and calls ga_add_commit().
 */
int ga_add_slot(struct ga_card *card, struct ga_buf *buf)
{
	int d = ga_dir(buf->write), ret;
	u32 index, i;

	lockdep_assert_held(&card->lock);
	ret = ga_check_owner(card);
	if (ret)
		return ret;
	/* Indices are positional, as upstream: the next one is the count. */
	index = card->count[d];
	if (index >= card->max_buffers)
		return -EINVAL;
	/*
	 * V4: one size for all write buffers.  Checked against the buffers,
	 * not the shared register, which the owner may have lowered since: an
	 * add while frames flow must not need the limit cleared first
	 * (libgpuasync adds live on this driver; ga_add_commit).
	 */
	if (buf->write && ga_reg_present(GA_REG_WRITE_MAX_SIZE, card->layout, card->version))
		for (i = 0; i < card->count[1]; i++)
			if (card->bufs[1][i] && card->bufs[1][i]->size != buf->size)
				return -EINVAL;
	buf->index = index;
	return 0;
}

/* Place a programmed @buf in its list.  card->lock held. */
void ga_add_commit(struct ga_card *card, struct ga_buf *buf)
{
	int d = ga_dir(buf->write);

	lockdep_assert_held(&card->lock);
	card->bufs[d][buf->index] = buf;
	card->count[d] = buf->index + 1;
	card->owner_tgid = buf->tgid;
	/* Counts only: the enables stay as they are (upstream main turned the
	 * engines on here, before user space could arm anything).
	 */
	mutex_lock(&card->reg_lock);
	ga_program_counts(card);
	mutex_unlock(&card->reg_lock);
}

/*
 * Take every buffer @pick chooses out of the table onto @gone: stop the
 * engines of the directions it belongs to, zero its address registers,
 * shrink the rings, and wait for the card to be idle.  The caller then
 * releases each one by the path that registered it and frees it (ga_drv.c).
 * Returns how many.  Locking: card->lock held.
 */
unsigned int ga_bufs_detach(struct ga_card *card, ga_pick_fn pick, const void *ctx,
			    struct list_head *gone)
{
	unsigned int dirs = 0, n = 0, d, i;
	struct ga_buf *buf;

	lockdep_assert_held(&card->lock);
	for (d = 0; d < 2; d++) {
		for (i = 0; i < card->count[d]; i++) {
			buf = card->bufs[d][i];
			if (!buf || !pick(buf, ctx))
				continue;
			card->bufs[d][i] = NULL;
			list_add_tail(&buf->rm_node, gone);
			dirs |= 1u << d;
			n++;
		}
		/* The ring ends after the highest buffer left. */
		while (card->count[d] && !card->bufs[d][card->count[d] - 1])
			card->count[d]--;
	}
	if (!n)
		return 0;

	mutex_lock(&card->reg_lock);
	for (d = 0; d < 2; d++) {
		if ((dirs & (1u << d)) && ga_engine_on(card, d)) {
			ga_field_wr(card, ga_enable_id(d), 0, 0);
			dev_info(card->dev, "%s engine stopped: its buffers are being removed\n",
				 d ? "write" : "read");
		}
	}
	list_for_each_entry(buf, gone, rm_node)
		ga_zero_addr(card, buf->write, buf->index);
	ga_program_counts(card);
	mutex_unlock(&card->reg_lock);

	ga_wait_idle(card, dirs);
	return n;
}
