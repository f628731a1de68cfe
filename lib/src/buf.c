/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Buffers of the public device API: create/destroy, arm, send, state and
 * memory access, and the 8-byte frame header.
 *
 * The upstream driver's rules shape this file: indices are handed out in
 * call order (so a create must name the next index), only all buffers can
 * be removed at once (so removing the last one is emulated by removing all
 * and registering the others again when the driver lacks GA_Rem_Buffer),
 * V4 write buffers share one size register, and main's add ioctl sets the
 * engine enable bits as a side effect (so we put them back).  Each buffer
 * also gets a payload limit of size - dma_data_bytes: the payload starts
 * at +dma_data_bytes, and upstream's add would let a frame run past the
 * end of the registered memory.
 *
 * Everything here runs under dev->lock except the plain memory accessors
 * (ga_buf_read/write/header/ipc_handle), which touch only the buffer's own
 * memory and may run in parallel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static bool dir_valid(enum ga_dir dir)
{
	return dir == GA_DIR_WRITE || dir == GA_DIR_READ;
}

static const char *dir_name(enum ga_dir dir)
{
	return dir == GA_DIR_WRITE ? "write" : "read";
}

/* Where the payload starts: V1 read buffers are read from their base (no
 * header, no completion word); everything else has the header area. */
static size_t payload_offset(const struct ga_dev *dev, enum ga_dir dir)
{
	if (dir == GA_DIR_READ && dev->info.layout == GA_LAYOUT_V1)
		return 0;
	return dev->info.dma_data_bytes;
}

static bool is_v4(const struct ga_dev *dev)
{
	return dev->info.layout != GA_LAYOUT_V1;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

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

/* ---- state --------------------------------------------------------------- */

static int mem_read(struct ga_buf *b, size_t off, void *dst, size_t len)
{
	return b->dev->mem->read(b->dev->mem_ctx, &b->mem, off, dst, len);
}

static int mem_write(struct ga_buf *b, size_t off, const void *src, size_t len)
{
	return b->dev->mem->write(b->dev->mem_ctx, &b->mem, off, src, len);
}

/* Does the state of @b come from its header (else no read is needed)? */
static bool state_needs_header(const struct ga_buf *b)
{
	return !b->error && !b->gone && (b->dir == GA_DIR_WRITE || is_v4(b->dev));
}

/*
 * The state of @b from its 8-byte header @raw, read with result @read_rc
 * (unused when state_needs_header is false).  dev->lock held.  Also
 * notices a frame that landed in an armed buffer, and a completed read.
 */
static enum ga_buf_state state_from_header_locked(struct ga_buf *b, const uint8_t raw[8],
						  int read_rc)
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
		if (h.size != 0)
			b->armed = false; /* the engine took it and filled it */
		if (h.result != 0)
			return GA_BUF_ERROR;
		if (h.size != 0)
			return GA_BUF_READY;
		return b->armed ? GA_BUF_FREE : GA_BUF_IDLE;
	}
	if (le32(raw) >= 1) {
		b->send_busy = false;
		return GA_BUF_READY;
	}
	return b->send_busy ? GA_BUF_BUSY : GA_BUF_IDLE;
}

/* dev->lock held. */
static enum ga_buf_state state_locked(struct ga_buf *b)
{
	uint8_t raw[8] = {0};
	int rc = 0;

	if (state_needs_header(b))
		rc = mem_read(b, 0, raw, sizeof(raw));
	return state_from_header_locked(b, raw, rc);
}

/* ---- registration -------------------------------------------------------- */

static void zero_addresses(struct ga_dev *dev, enum ga_dir dir, unsigned int index)
{
	enum ga_reg_id lo = dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO;
	enum ga_reg_id hi = dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI;

	/* Stale addresses let an idle core write headers into memory that is
	 * no longer ours (upstream PR #284); upstream's remove-all also clears
	 * the wrong read slots.  Clearing them ourselves costs nothing. */
	if (ga_field_write_locked(dev, lo, index, 0) || ga_field_write_locked(dev, hi, index, 0))
		ga_log("could not clear %s address %u: %s", dir_name(dir), index, ga_last_error());
}

static int read_enables(struct ga_dev *dev, uint32_t *wr, uint32_t *rd)
{
	int rc = ga_field_read_locked(dev, GA_REG_WRITE_ENABLE, 0, wr);

	return rc ? rc : ga_field_read_locked(dev, GA_REG_READ_ENABLE, 0, rd);
}

/* Put the enable bits back where they were (upstream main's add sets them). */
static int restore_enables(struct ga_dev *dev, uint32_t wr, uint32_t rd)
{
	uint32_t cw, cr;
	int rc = read_enables(dev, &cw, &cr);

	if (rc)
		return rc;
	if (cw != wr && (rc = ga_field_write_locked(dev, GA_REG_WRITE_ENABLE, 0, wr)))
		return rc;
	if (cr != rd && (rc = ga_field_write_locked(dev, GA_REG_READ_ENABLE, 0, rd)))
		return rc;
	return 0;
}

/* Frame payload limit of write buffer @b (its index must be registered). */
static int set_payload_limit(struct ga_dev *dev, struct ga_buf *b)
{
	uint32_t limit = (uint32_t)(b->mem.size - dev->info.dma_data_bytes);

	if (b->dir != GA_DIR_WRITE)
		return 0;
	if (is_v4(dev))
		return ga_field_write_locked(dev, GA_REG_WRITE_MAX_SIZE, 0, limit);
	return ga_field_write_locked(dev, GA_REG_WRITE_SIZE, b->index, limit);
}

/*
 * Register @b with the card as the next index of its direction and make it
 * the last element of the array.  On failure nothing stays registered.
 */
static int register_locked(struct ga_dev *dev, struct ga_buf *b)
{
	enum ga_dir dir = b->dir;
	uint32_t wr = 0, rd = 0, old_max = 0;
	bool v4w = is_v4(dev) && dir == GA_DIR_WRITE;
	int rc, rc2;

	rc = read_enables(dev, &wr, &rd);
	if (rc)
		return rc;
	/* Upstream main refuses a size different from write_max_size when it
	 * is > 1; ours is size - dma_data_bytes, so clear it for the add. */
	if (v4w) {
		rc = ga_field_read_locked(dev, GA_REG_WRITE_MAX_SIZE, 0, &old_max);
		if (!rc)
			rc = ga_field_write_locked(dev, GA_REG_WRITE_MAX_SIZE, 0, 0);
		if (rc)
			return rc;
	}
	b->index = dev->nbufs[dir];
	rc = dev->be->add_buffer(dev, dir, &b->mem, (uint32_t)b->mem.size, &b->bus_address);
	if (rc) {
		if (v4w)
			ga_field_write_locked(dev, GA_REG_WRITE_MAX_SIZE, 0, old_max);
		restore_enables(dev, wr, rd);
		return rc;
	}
	dev->bufs[dir][b->index] = b;
	dev->nbufs[dir]++;

	rc = set_payload_limit(dev, b);
	rc2 = restore_enables(dev, wr, rd);
	return rc ? rc : rc2;
}

static void free_buf(struct ga_dev *dev, struct ga_buf *b)
{
	dev->mem->free(dev->mem_ctx, &b->mem);
	free(b);
}

static int engines_off(struct ga_dev *dev)
{
	uint32_t wr, rd;
	int rc = read_enables(dev, &wr, &rd);

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
			zero_addresses(dev, (enum ga_dir)d, i);
		}
}

/*
 * Remove the last buffer of @dir the way the upstream driver allows: remove
 * all, free the one going away (its unpin callback then finds nothing
 * registered), register the others again in index order with the same
 * memory and payload limit, and re-arm those that were waiting for a frame.
 */
static int rebuild_without_last(struct ga_dev *dev, enum ga_dir dir)
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
		rearm[i] = state_locked(keep[GA_DIR_WRITE][i]) == GA_BUF_FREE;

	rc = dev->be->remove_all(dev);
	if (rc)
		return rc;
	victim = keep[dir][n[dir] - 1];
	n[dir]--;
	for (d = 0; d < 2; d++) {
		for (i = 0; i < dev->nbufs[d]; i++) {
			zero_addresses(dev, (enum ga_dir)d, i);
			dev->bufs[d][i] = NULL;
		}
		dev->nbufs[d] = 0;
	}
	free_buf(dev, victim);

	for (d = 0; d < 2; d++) {
		for (i = 0; i < n[d]; i++) {
			rc = register_locked(dev, keep[d][i]);
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
			return rebuild_without_last(dev, dir); /* frees b */
		if (rc)
			return rc;
		zero_addresses(dev, dir, last);
	}
	dev->bufs[dir][last] = NULL;
	dev->nbufs[dir]--;
	free_buf(dev, b);
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

int ga_buf_create(struct ga_dev *dev, enum ga_dir dir, unsigned int index, size_t size,
		  struct ga_buf **out)
{
	struct ga_buf *b;
	unsigned int n, dbytes;
	int rc;

	if (out)
		*out = NULL;
	if (!dev)
		return ga_err(-EINVAL, "ga_buf_create: NULL device");
	if (!dir_valid(dir))
		return ga_err(-EINVAL, "direction %d is neither write nor read", (int)dir);

	pthread_mutex_lock(&dev->lock);
	n = dev->nbufs[dir];
	dbytes = dev->info.dma_data_bytes;
	if (any_gone(dev)) {
		rc = ga_err(-EIO, "buffers were lost after a failed re-registration: destroy them "
				  "first");
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
	rc = register_locked(dev, b);
	if (rc) {
		int saved = rc;

		if (dev->nbufs[dir] > index && dev->bufs[dir][index] == b) {
			/* registered, but the payload limit or enables failed */
			if (remove_last_locked(dev, dir))
				ga_log("undo of buffer %u failed: %s", index, ga_last_error());
		} else {
			free_buf(dev, b);
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
	struct ga_dev *dev;
	enum ga_buf_state st;
	uint32_t on = 0;
	unsigned int n;
	int rc = 0;

	if (!b)
		return ga_err(-EINVAL, "ga_buf_destroy: NULL buffer");
	dev = b->dev;
	pthread_mutex_lock(&dev->lock);
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
		st = state_locked(b);
		rc = ga_field_read_locked(
			dev, b->dir == GA_DIR_WRITE ? GA_REG_WRITE_ENABLE : GA_REG_READ_ENABLE, 0,
			&on);
		if (rc)
			goto out_unlock;
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
	rc = remove_last_locked(dev, b->dir);
out_unlock:
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

/* Wait until the card has no RDMA in flight before memory goes away:
 * V5 says so in write/read_active; V4 and older cannot, so allow the 50 ms
 * the reference driver waits. */
static void wait_idle(struct ga_dev *dev, bool was_on)
{
	struct timespec ms = {0, 1000000};
	uint32_t wa = 0, ra = 0;
	int i;

	if (dev->info.version >= 5) {
		for (i = 0; i < 1000; i++) {
			if (ga_field_read_locked(dev, GA_REG_WRITE_ACTIVE, 0, &wa) ||
			    ga_field_read_locked(dev, GA_REG_READ_ACTIVE, 0, &ra) || (!wa && !ra))
				return;
			nanosleep(&ms, NULL);
		}
		ga_log("engines still active after 1 s");
	} else if (was_on && !ga_dev_has(dev, GA_CAP_SIM)) {
		struct timespec t = {0, 50000000};

		nanosleep(&t, NULL);
	}
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

	if (!force && dev->nbufs[GA_DIR_WRITE] == 0 && dev->nbufs[GA_DIR_READ] == 0)
		return 0;
	/* Engines off first: the card must stop using the memory before it is
	 * unpinned and freed. */
	if (read_enables(dev, &wr, &rd) == 0) {
		if (wr)
			ga_enable_locked(dev, GA_DIR_WRITE, false);
		if (rd)
			ga_enable_locked(dev, GA_DIR_READ, false);
	}
	wait_idle(dev, wr || rd);
	rc = dev->be->remove_all(dev);
	if (rc)
		return rc;
	for (d = 0; d < 2; d++) {
		for (i = 0; i < dev->nbufs[d]; i++) {
			zero_addresses(dev, (enum ga_dir)d, i);
			free_buf(dev, dev->bufs[d][i]);
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

/* ---- lookup and state ---------------------------------------------------- */

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

/* Everything but the state.  dev->lock held. */
static void info_fill_locked(struct ga_buf *b, struct ga_buf_info *info)
{
	struct ga_dev *dev = b->dev;

	memset(info, 0, sizeof(*info));
	info->dir = b->dir;
	info->index = b->index;
	info->size = b->mem.size;
	info->payload_max = b->mem.size - payload_offset(dev, b->dir);
	info->gpu_address = b->mem.dptr;
	info->bus_address = b->bus_address;
	info->gpu_memory = dev->mem != &ga_mem_host_ops;
}

int ga_buf_info(struct ga_buf *b, struct ga_buf_info *info)
{
	struct ga_dev *dev;

	if (!b || !info)
		return ga_err(-EINVAL, "ga_buf_info: NULL argument");
	dev = b->dev;
	pthread_mutex_lock(&dev->lock);
	info_fill_locked(b, info);
	info->state = state_locked(b);
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

/*
 * The headers of the @n buffers in @bufs into @raw (8 bytes each) and
 * each read's result into @rcs: one batched read where the memory layer
 * has one.  When the batch fails as a whole, each header is read on its
 * own, so one bad buffer reads as it would through ga_buf_info.
 * dev->lock held.
 */
static void read_headers_locked(struct ga_dev *dev, struct ga_buf *const *bufs, unsigned int n,
				uint8_t (*raw)[8], int *rcs)
{
	if (dev->mem->read_many) {
		const struct ga_mem_block **blks = malloc((n ? n : 1) * sizeof(*blks));

		if (blks) {
			int rc;

			for (unsigned int i = 0; i < n; i++)
				blks[i] = &bufs[i]->mem;
			rc = dev->mem->read_many(dev->mem_ctx, blks, n, 0, raw, 8);
			free(blks);
			if (rc == 0) {
				memset(rcs, 0, n * sizeof(*rcs));
				return;
			}
		}
	}
	for (unsigned int i = 0; i < n; i++)
		rcs[i] = mem_read(bufs[i], 0, raw[i], 8);
}

int ga_buf_info_all(struct ga_dev *dev, enum ga_dir dir, struct ga_buf_info *out, unsigned int cap,
		    unsigned int *count)
{
	struct ga_buf *rd[GA_MAX_BUFFERS];
	unsigned int total, n, nrd = 0;
	uint8_t(*raw)[8] = NULL;
	int *rcs = NULL;

	if (!dev || !count || (cap && !out))
		return ga_err(-EINVAL, "ga_buf_info_all: NULL argument");
	if (!dir_valid(dir))
		return ga_err(-EINVAL, "ga_buf_info_all: bad direction %d", (int)dir);
	pthread_mutex_lock(&dev->lock);
	total = dev->nbufs[dir];
	n = total < cap ? total : cap;
	for (unsigned int i = 0; i < n; i++)
		if (dev->bufs[dir][i] && state_needs_header(dev->bufs[dir][i]))
			rd[nrd++] = dev->bufs[dir][i];
	if (nrd) {
		raw = calloc(nrd, sizeof(*raw));
		rcs = calloc(nrd, sizeof(*rcs));
		if (!raw || !rcs) {
			pthread_mutex_unlock(&dev->lock);
			free(raw);
			free(rcs);
			return ga_err(-ENOMEM, "ga_buf_info_all: out of memory");
		}
		read_headers_locked(dev, rd, nrd, raw, rcs);
	}
	for (unsigned int i = 0, k = 0; i < n; i++) {
		struct ga_buf *b = dev->bufs[dir][i];
		static const uint8_t none[8];

		if (!b) { /* not expected: indices are dense under the lock */
			memset(&out[i], 0, sizeof(out[i]));
			out[i].dir = dir;
			out[i].index = i;
			out[i].state = GA_BUF_ERROR;
			continue;
		}
		info_fill_locked(b, &out[i]);
		if (k < nrd && rd[k] == b) {
			out[i].state = state_from_header_locked(b, raw[k], rcs[k]);
			k++;
		} else {
			out[i].state = state_from_header_locked(b, none, 0);
		}
	}
	*count = total;
	pthread_mutex_unlock(&dev->lock);
	free(raw);
	free(rcs);
	return 0;
}

/* ---- arming and sending -------------------------------------------------- */

static int arm_locked(struct ga_dev *dev, const uint32_t *idx, unsigned int n)
{
	static const uint8_t zero[8];
	unsigned int i;
	int rc;

	for (i = 0; i < n; i++) {
		struct ga_buf *b;

		if (idx[i] >= dev->nbufs[GA_DIR_WRITE])
			return ga_err(-ERANGE, "write buffer %u does not exist (%u created)",
				      idx[i], dev->nbufs[GA_DIR_WRITE]);
		b = dev->bufs[GA_DIR_WRITE][idx[i]];
		if (b->gone)
			return ga_err(-EIO, "write buffer %u is no longer registered with the card",
				      idx[i]);
	}
	/* Clear the header (doorbell at +4 included) before the card may fill
	 * the buffer, so a doorbell seen later belongs to a new frame. */
	for (i = 0; i < n; i++) {
		rc = mem_write(dev->bufs[GA_DIR_WRITE][idx[i]], 0, zero, sizeof(zero));
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
	if (b->gone) {
		rc = ga_err(-EIO, "read buffer %u is no longer registered with the card", b->index);
		goto out_unlock;
	}
	/* V4 writes 1 at +0 when the read completes; clear it first.  On V1
	 * the payload itself starts at +0, so leave it alone. */
	if (is_v4(dev)) {
		rc = mem_write(b, 0, zero, sizeof(zero));
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

int ga_buf_read(struct ga_buf *b, size_t offset, void *dst, size_t len)
{
	int rc;

	if (!b || (len && !dst))
		return ga_err(-EINVAL, "ga_buf_read: NULL argument");
	rc = range_check(b, offset, len);
	if (rc || len == 0)
		return rc;
	return mem_read(b, offset, dst, len);
}

int ga_buf_write(struct ga_buf *b, size_t offset, const void *src, size_t len)
{
	int rc;

	if (!b || (len && !src))
		return ga_err(-EINVAL, "ga_buf_write: NULL argument");
	rc = range_check(b, offset, len);
	if (rc || len == 0)
		return rc;
	return mem_write(b, offset, src, len);
}

int ga_buf_header(struct ga_buf *b, struct ga_header *h)
{
	uint8_t raw[8];
	int rc;

	if (!b || !h)
		return ga_err(-EINVAL, "ga_buf_header: NULL argument");
	rc = mem_read(b, 0, raw, sizeof(raw));
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
