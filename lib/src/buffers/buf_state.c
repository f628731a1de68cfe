// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What a buffer is doing (IDLE, FREE, READY, BUSY, ERROR), decoded from its
 * header, and looking buffers up: ga_buf_get, ga_buf_count, ga_buf_info.
 * ga_buf_info_all, the same for every buffer with one batched read, is in
 * buf_info_all.c.  Everything here runs under dev->lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf_internal.h"

const char *ga_buf_state_name(enum ga_buf_state s)
{
	switch (s) {
	case GA_BUF_IDLE:
		return "IDLE";
	case GA_BUF_FREE:
		return "FREE";
	case GA_BUF_READY:
		return "READY";
	case GA_BUF_BUSY:
		return "BUSY";
	case GA_BUF_ERROR:
		return "ERROR";
	}
	return "UNKNOWN";
}

/* Does the state of @b come from its header (else no read is needed)? */
bool buf_state_needs_header(const struct ga_buf *b)
{
	return !b->error && !b->gone && (b->dir == GA_DIR_WRITE || is_v4(b->dev));
}

/*
 * The state of @b from its 8-byte header @raw, read with result @read_rc
 * (unused when buf_state_needs_header is false).  dev->lock held.
 *
 * A pure function of the header and of what the library itself did (arm,
 * send): reading a state never changes one, so what one reader sees does
 * not depend on whether another looked first.  A write buffer the library
 * armed is FREE whenever its doorbell is 0: the free list cannot be read
 * back, and a consumer that clears the doorbell re-arms the buffer (the
 * GPU protocol); a read buffer is READY once the card wrote its completion
 * word, which a send clears first.
 */
enum ga_buf_state buf_state_from_header_locked(struct ga_buf *b, const uint8_t raw[8], int read_rc)
{
	struct ga_header h;

	if (b->error || b->gone)
		return GA_BUF_ERROR;
	/* Read buffers: V4 writes a completion word of 1 at +0; V1 signals
	 * nothing, so a queued read cannot be told from an idle buffer. */
	if (b->dir == GA_DIR_READ && !is_v4(b->dev))
		return GA_BUF_IDLE;
	if (read_rc)
		return GA_BUF_ERROR;
	if (b->dir == GA_DIR_WRITE) {
		ga_header_decode(raw, &h);
		if (h.result != 0)
			return GA_BUF_ERROR;
		if (h.size != 0)
			return GA_BUF_READY;
		return b->armed ? GA_BUF_FREE : GA_BUF_IDLE;
	}
	if (le32(raw) >= 1)
		return GA_BUF_READY;
	return b->send_busy ? GA_BUF_BUSY : GA_BUF_IDLE;
}

/* dev->lock held. */
enum ga_buf_state buf_state_locked(struct ga_buf *b)
{
	uint8_t raw[8] = {0};
	int rc = 0;

	if (buf_state_needs_header(b))
		rc = buf_mem_read(b, 0, raw, sizeof(raw));
	return buf_state_from_header_locked(b, raw, rc);
}

struct ga_buf *ga_buf_get(struct ga_dev *dev, enum ga_dir dir, unsigned int index)
{
	struct ga_buf *b = NULL;

	if (!dev || !dir_valid(dir))
		return NULL;
	pthread_mutex_lock(&dev->lock);
	if (index < dev->nbufs[dir])
		b = dev->bufs[dir][index];
	pthread_mutex_unlock(&dev->lock);
	return b;
}

unsigned int ga_buf_count(struct ga_dev *dev, enum ga_dir dir)
{
	unsigned int n;

	if (!dev || !dir_valid(dir))
		return 0;
	pthread_mutex_lock(&dev->lock);
	n = dev->nbufs[dir];
	pthread_mutex_unlock(&dev->lock);
	return n;
}

static bool reg_is(struct ga_dev *dev, enum ga_reg_id id, unsigned int index, uint32_t want)
{
	uint32_t v;

	/* A register we cannot read proves nothing: a dead link reads all
	 * ones, which ga_field_read_locked turns into -ENOLINK, so a link
	 * flap never passes for buffers taken away. */
	return ga_field_read_locked(dev, id, index, &v) != 0 || v == want;
}

/*
 * Does the card still hold what we registered?  A driver that removes
 * every buffer at once (another program's remove-all on upstream 7.4,
 * which has no owner; upstream 7.5 when one buffer's memory goes away)
 * leaves the counts in 0x08 at 0 and the address registers cleared.  The
 * counts (count - 1) are checked where that is not 0 anyway, and write
 * buffer 0's address.  When they differ, every buffer is marked lost
 * (ERROR; removing them still works, creating needs them removed first).
 */
void buf_check_registration_locked(struct ga_dev *dev)
{
	static const enum ga_reg_id count[2] = {
		[GA_DIR_WRITE] = GA_REG_WRITE_COUNT, [GA_DIR_READ] = GA_REG_READ_COUNT};
	bool held = true;
	unsigned int d, i;

	for (d = 0; d < 2; d++) {
		if (dev->nbufs[d] == 0)
			continue;
		for (i = 0; i < dev->nbufs[d]; i++)
			if (dev->bufs[d][i]->gone)
				return; /* already known */
		if (dev->nbufs[d] >= 2)
			held = held && reg_is(dev, count[d], 0, dev->nbufs[d] - 1);
	}
	/* A remove-all clears the address registers; ours was not 0. */
	if (held && dev->nbufs[GA_DIR_WRITE] && dev->bufs[GA_DIR_WRITE][0]->card_address_lo)
		held = reg_is(dev, GA_REG_WRITE_ADDR_LO, 0,
			      dev->bufs[GA_DIR_WRITE][0]->card_address_lo);
	if (held)
		return;
	for (d = 0; d < 2; d++)
		for (i = 0; i < dev->nbufs[d]; i++)
			dev->bufs[d][i]->gone = dev->bufs[d][i]->error = true;
	dev->lost++;
	ga_log("the card no longer holds our buffers (removed by another program or by the "
	       "driver): all marked lost");
}

unsigned int ga_dev_registrations_lost(struct ga_dev *dev)
{
	return dev ? __atomic_load_n(&dev->lost, __ATOMIC_RELAXED) : 0;
}

uint64_t ga_dev_add_stopped_frames(struct ga_dev *dev)
{
	return dev ? __atomic_load_n(&dev->add_stopped_frames, __ATOMIC_RELAXED) : 0;
}

int ga_dev_sync(struct ga_dev *dev)
{
	if (!dev)
		return -EINVAL;
	return dev->mem && dev->mem->sync ? dev->mem->sync(dev->mem_ctx) : 0;
}

/* Everything but the state.  dev->lock held. */
void buf_info_fill_locked(struct ga_buf *b, struct ga_buf_info *info)
{
	struct ga_dev *dev = b->dev;

	memset(info, 0, sizeof(*info));
	info->dir = b->dir;
	info->index = b->index;
	info->size = b->mem.size;
	info->payload_max = b->mem.size - payload_offset(dev, b->dir);
	info->gpu_address = b->mem.dptr;
	info->bus_address = b->bus_address;
	info->gpu_memory = ga_mem_is_gpu(dev);
	info->dmabuf = b->dmabuf;
}

int ga_buf_info(struct ga_buf *b, struct ga_buf_info *info)
{
	struct ga_dev *dev;

	if (!b || !info)
		return ga_err(-EINVAL, "ga_buf_info: NULL argument");
	dev = b->dev;
	pthread_mutex_lock(&dev->lock);
	buf_check_registration_locked(dev);
	buf_info_fill_locked(b, info);
	info->state = buf_state_locked(b);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}
