/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The CUDA memory layer's writes, all queued on its one stream: host data
 * through the pinned staging ring (or straight from memory we pinned), and
 * the simulated card's bursts as deferred batches (copies, the kernel's
 * jobs with their table staged in the ring, then the descriptors), with
 * cuda_batch_sync sending a batch before anything that must see it.
 *
 * With the resident delivery kernel (GPUASYNC_CUDA_RESIDENT) a batch goes
 * into its mailbox instead, and its record waits for the kernel's count
 * (a ticket) instead of an event.
 *
 * Below mem_cuda.c (the ops) and mem_cuda_free.c, which call into it; it
 * calls only the context (cuda_ctx.c) and the kernels (mem_cuda_kernel.c,
 * mem_cuda_resident.c), none of which calls back.
 */
#ifdef GA_HAVE_CUDA_H

#include <stddef.h>
#include <string.h>
#include <time.h>

#include "cuda_ctx.h"

static int batch_send_locked(struct cuda_ctx *c);

/* ---- staging ring ------------------------------------------------------ */

/* Put the event behind the open record's copies.  If that fails, wait for
 * the stream instead, after which every record is free.
 * Prerequisite: c->lock held, no deferred batch pending. */
static int rec_close_locked(struct cuda_ctx *c)
{
	struct stage_rec *r;
	CUresult res;

	if (!c->rec_count)
		return 0;
	r = &c->rec[(c->rec_first + c->rec_count - 1) % STAGE_RECORDS];
	if (!r->open)
		return 0;
	r->open = false;
	r->ticket = 0;
	res = c->f.cuEventRecord(r->ev, c->stream);
	if (res == CUDA_SUCCESS)
		return 0;
	res = c->f.cuStreamSynchronize(c->stream);
	c->rec_count = 0;
	return res == CUDA_SUCCESS ? 0 : cuda_fail(c, res, "staging wait");
}

/* Has the record's work landed?  @wait: wait until it has.
 * Prerequisite: context current. */
static CUresult rec_landed(struct cuda_ctx *c, const struct stage_rec *r, bool wait)
{
	if (r->ticket) {
		if (!wait)
			return cuda_res_landed(c, r->ticket) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
		return cuda_res_wait(c, r->ticket) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
	}
	return wait ? c->f.cuEventSynchronize(r->ev) : c->f.cuEventQuery(r->ev);
}

/* Send the deferred batch, if any (which closes the open record), else
 * close the open record.  Prerequisite: c->lock held. */
static int stage_close_locked(struct cuda_ctx *c)
{
	if (c->wb_n || c->wb_nd || c->wb_nj)
		return batch_send_locked(c);
	return rec_close_locked(c);
}

/* Wait for the oldest staged copies and give their ring space back.
 * Prerequisite: c->lock held, rec_count > 0. */
static int stage_retire_oldest_locked(struct cuda_ctx *c)
{
	struct stage_rec *r = &c->rec[c->rec_first];
	CUresult res;
	int rc;

	if (r->open) {
		rc = stage_close_locked(c);
		if (rc || !c->rec_count)
			return rc;
	}
	res = rec_landed(c, r, true);
	c->rec_first = (c->rec_first + 1) % STAGE_RECORDS;
	c->rec_count--;
	return res == CUDA_SUCCESS ? 0 : cuda_fail(c, res, "staging wait");
}

/*
 * Ring space for @len bytes at ring-linear position *@pos, waiting for the
 * oldest copies where it is short (a piece never wraps: it skips to the
 * ring start instead).  Prerequisite: c->lock held, context current.
 */
static int stage_space_locked(struct cuda_ctx *c, size_t len, uint64_t *pos)
{
	uint64_t p = c->head, off = p % STAGE_BYTES;
	int rc;

	if (off + len > STAGE_BYTES)
		p += STAGE_BYTES - off;
	while (c->rec_count && (p + len - c->rec[c->rec_first].start > STAGE_BYTES ||
				c->rec_count == STAGE_RECORDS)) {
		rc = stage_retire_oldest_locked(c);
		if (rc)
			return rc;
	}
	*pos = p;
	return 0;
}

/* Add [pos, pos + len) with @copies copies to the open record, opening one
 * if none is.  Prerequisite: c->lock held, a record slot free. */
static struct stage_rec *stage_note_locked(struct cuda_ctx *c, uint64_t pos, size_t len,
					   unsigned int copies)
{
	struct stage_rec *r =
		c->rec_count ? &c->rec[(c->rec_first + c->rec_count - 1) % STAGE_RECORDS] : NULL;

	c->head = pos + len;
	if (r && r->open) {
		r->end = pos + len;
		r->copies += copies;
		return r;
	}
	r = &c->rec[(c->rec_first + c->rec_count) % STAGE_RECORDS];
	r->start = pos;
	r->end = pos + len;
	r->copies = copies;
	r->open = true;
	c->rec_count++;
	return r;
}

/*
 * Copy @len (<= STAGE_BYTES) bytes of @src into the ring and queue the
 * host-to-device copy to @dst.  Space is taken in ring-linear positions;
 * a piece never wraps (it skips to the ring start instead), and space is
 * reclaimed oldest first by waiting on that record's event.
 * Prerequisite: c->lock held, context current.
 */
static int stage_copy_locked(struct cuda_ctx *c, CUdeviceptr dst, const void *src, size_t len)
{
	struct stage_rec *r;
	uint64_t pos;
	CUresult res;
	int rc = stage_space_locked(c, len, &pos);

	if (rc)
		return rc;
	memcpy(c->stage + pos % STAGE_BYTES, src, len);
	res = c->f.cuMemcpyHtoDAsync(dst, c->stage + pos % STAGE_BYTES, len, c->stream);
	if (res != CUDA_SUCCESS)
		return cuda_fail(c, res, "cuMemcpyHtoDAsync");
	r = stage_note_locked(c, pos, len, 1);
	if (r->end - r->start >= REC_BYTES || r->copies >= REC_COPIES)
		return rec_close_locked(c);
	return 0;
}

/* The region we pinned with host_alloc that holds [p, p+len), or NULL.
 * Prerequisite: c->lock held. */
static const struct pinned_region *pinned_locked(struct cuda_ctx *c, const void *p, size_t len)
{
	const char *q = p;

	for (unsigned int i = 0; i < PINNED_MAX; i++) {
		struct pinned_region *pr = &c->pinned[i];

		if (pr->p && q >= pr->p && len <= pr->size &&
		    q - pr->p <= (ptrdiff_t)(pr->size - len))
			return pr;
	}
	return NULL;
}

/* Queue a copy of host @src to device @dst on the stream, staging it if it
 * is not pinned, after the deferred batch.  Prerequisite: c->lock held,
 * context current. */
static int queue_write_locked(struct cuda_ctx *c, CUdeviceptr dst, const void *src, size_t len)
{
	int rc = stage_close_locked(c);

	/* The resident kernel does not wait for the stream, nor the stream
	 * for it: what it was given lands first, and its next batch waits
	 * for this (res_dirty). */
	if (!rc && c->res_box) {
		rc = cuda_res_drain(c);
		c->res_dirty = true;
	}
	if (rc)
		return rc;
	if ((len == 8 && c->memop64 && !(dst & 7)) || (len == 4 && c->memop32 && !(dst & 3))) {
		CUresult res;

		if (len == 8) {
			cuuint64_t v;

			memcpy(&v, src, 8);
			res = c->f.cuStreamWriteValue64(c->stream, dst, v,
							CU_STREAM_WRITE_VALUE_DEFAULT);
		} else {
			cuuint32_t v;

			memcpy(&v, src, 4);
			res = c->f.cuStreamWriteValue32(c->stream, dst, v,
							CU_STREAM_WRITE_VALUE_DEFAULT);
		}
		if (res == CUDA_SUCCESS)
			return 0;
		/* Not usable after all (old driver settings): copy instead,
		 * from now on. */
		ga_log("cuda: stream write-value failed (%d), using copies", (int)res);
		c->memop32 = c->memop64 = false;
	}
	if (pinned_locked(c, src, len)) {
		CUresult res = c->f.cuMemcpyHtoDAsync(dst, src, len, c->stream);

		if (res != CUDA_SUCCESS)
			rc = cuda_fail(c, res, "cuMemcpyHtoDAsync");
	} else {
		const char *s = src;

		/* Pieces of at most a quarter ring: the memcpy of one piece
		 * overlaps the DMA of the previous ones. */
		while (len && !rc) {
			size_t n = len < STAGE_BYTES / 4 ? len : STAGE_BYTES / 4;

			rc = stage_copy_locked(c, dst, s, n);
			dst += n;
			s += n;
			len -= n;
		}
	}
	return rc;
}

int cuda_queue_write(struct cuda_ctx *c, CUdeviceptr dst, const void *src, size_t len)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = queue_write_locked(c, dst, src, len);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- deferred writes (the simulated card's bursts) ------------------------ */

/* Launch the kernel over the batch's @nj jobs, its table staged in the
 * ring (the kernel reads it through the mapping).
 * Prerequisite: c->lock held, context current, fill_state 1. */
static int fill_launch_locked(struct cuda_ctx *c, unsigned int nj)
{
	struct fill_job tab[WB_COPIES];
	size_t len = nj * sizeof(struct fill_job);
	uint64_t pos, apos;
	int rc;

	/* The table first: making room may send (nothing pending) or wait.
	 * Aligned for the kernel: staged payloads leave the ring's head at
	 * any byte. */
	memcpy(tab, c->wb_job, len);
	rc = stage_space_locked(c, len + 31, &pos);
	if (rc)
		return rc;
	apos = (pos + 31) & ~(uint64_t)31;
	memcpy(c->stage + apos % STAGE_BYTES, tab, len);
	stage_note_locked(c, pos, apos - pos + len, 1);
	return cuda_fill_launch(c, c->stage_dev + apos % STAGE_BYTES, tab, nj);
}

/* An open record for what a batch sent: the open one, or a new, empty one
 * where the batch staged nothing.  Prerequisite: c->lock held. */
static int rec_open_locked(struct cuda_ctx *c)
{
	if (c->rec_count && c->rec[(c->rec_first + c->rec_count - 1) % STAGE_RECORDS].open)
		return 0;
	while (c->rec_count == STAGE_RECORDS) {
		int rc = stage_retire_oldest_locked(c);

		if (rc)
			return rc;
	}
	stage_note_locked(c, c->head, 0, 0);
	return 0;
}

/* Send the batch's @nj jobs and @nd descriptors to the resident kernel,
 * and close the open record (an empty one where nothing was staged) on
 * its ticket.  Prerequisite: c->lock held, context current. */
static int res_send_locked(struct cuda_ctx *c, unsigned int nj, unsigned int nd)
{
	struct stage_rec *r;
	uint64_t ticket;
	int rc = cuda_res_post_locked(c, c->wb_job, nj, c->wb_desc, nd, &ticket);

	if (!rc)
		rc = rec_open_locked(c);
	if (rc)
		return rc;
	r = &c->rec[(c->rec_first + c->rec_count - 1) % STAGE_RECORDS];
	r->open = false;
	r->ticket = ticket;
	return 0;
}

/*
 * Send the deferred batch: the copies as one cuMemcpyBatchAsync (single
 * copies where the driver has none or refuses), then the descriptors as
 * one cuStreamBatchMemOp (single stream writes likewise), then an event
 * behind it all, which write_room counts as one batch in flight.
 * Prerequisite: c->lock held, context current.
 */
static int batch_send_locked(struct cuda_ctx *c)
{
	unsigned int n = c->wb_n, nd = c->wb_nd, nj = c->wb_nj;
	CUresult res = CUDA_SUCCESS;
	int rc = 0;

	if (!n && !nd && !nj)
		return 0;
	c->wb_n = c->wb_nd = c->wb_nj = 0;
	c->wb_bytes = 0;
	if (c->res_box && !n)
		return res_send_locked(c, nj, nd);
#if GA_HAVE_BATCH
	if (n > 1 && c->wb_batch) {
		CUmemcpyAttributes attr;
		size_t attr_idx = 0;

		memset(&attr, 0, sizeof(attr));
		attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		res = c->f.cuMemcpyBatchAsync(c->wb_dst, c->wb_src, c->wb_size, n, &attr, &attr_idx,
					      1, c->stream);
		if (res == CUDA_SUCCESS) {
			n = 0;
		} else {
			ga_log("cuda: batched write of %u copies failed (%d), single copies%s", n,
			       (int)res, res == CUDA_ERROR_NOT_SUPPORTED ? " from now on" : "");
			if (res == CUDA_ERROR_NOT_SUPPORTED)
				c->wb_batch = false;
		}
	}
#endif
	for (unsigned int i = 0; i < n && !rc; i++) {
		res = c->f.cuMemcpyHtoDAsync(c->wb_dst[i], (const void *)(uintptr_t)c->wb_src[i],
					     c->wb_size[i], c->stream);
		if (res != CUDA_SUCCESS)
			rc = cuda_fail(c, res, "cuMemcpyHtoDAsync");
	}
	if (nj && !rc)
		rc = fill_launch_locked(c, nj);
	if (nd && !rc && c->wb_memops) {
		res = c->f.cuStreamBatchMemOp(c->stream, nd, c->wb_desc, 0);
		if (res == CUDA_SUCCESS) {
			nd = 0;
		} else {
			ga_log("cuda: batched stream writes failed (%d), single writes from now on",
			       (int)res);
			c->wb_memops = false;
		}
	}
	for (unsigned int i = 0; i < nd && !rc; i++) {
		res = c->f.cuStreamWriteValue64(c->stream, c->wb_desc[i].writeValue.address,
						c->wb_desc[i].writeValue.value64,
						CU_STREAM_WRITE_VALUE_DEFAULT);
		if (res != CUDA_SUCCESS)
			rc = cuda_fail(c, res, "cuStreamWriteValue64");
	}
	if (rc)
		return rc;
	/* An event behind the batch, in the open record. */
	rc = rec_open_locked(c);
	return rc ? rc : rec_close_locked(c);
}

/* Does [dst, dst + len) overlap a write in the deferred batch?
 * Prerequisite: c->lock held. */
static bool batch_overlaps_locked(struct cuda_ctx *c, CUdeviceptr dst, size_t len)
{
	for (unsigned int i = 0; i < c->wb_n; i++)
		if (dst < c->wb_dst[i] + c->wb_size[i] && c->wb_dst[i] < dst + len)
			return true;
	for (unsigned int i = 0; i < c->wb_nd; i++)
		if (dst < c->wb_desc[i].writeValue.address + 8 &&
		    c->wb_desc[i].writeValue.address < dst + len)
			return true;
	for (unsigned int i = 0; i < c->wb_nj; i++)
		if (dst < c->wb_job[i].dst + c->wb_job[i].len && c->wb_job[i].dst < dst + len)
			return true;
	return false;
}

int cuda_write_defer(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
		     size_t len)
{
	struct cuda_ctx *c = ctx;
	CUdeviceptr dst;
	bool pushed;
	int rc = cuda_op_enter(c, blk, off, len, &pushed);

	if (rc)
		return rc < 0 ? rc : 0;
	dst = (CUdeviceptr)(blk->dptr + off);
	pthread_mutex_lock(&c->lock);
	if (batch_overlaps_locked(c, dst, len))
		rc = batch_send_locked(c);
	if (rc) {
		/* nothing more */
	} else if (len == 8 && !(dst & 7) && (c->memop64 || c->res_box)) {
		CUstreamBatchMemOpParams *p;

		if (c->wb_nd == WB_DESCS)
			rc = batch_send_locked(c);
		if (!rc) {
			p = &c->wb_desc[c->wb_nd++];
			memset(p, 0, sizeof(*p));
			p->writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
			p->writeValue.address = dst;
			memcpy(&p->writeValue.value64, src, 8);
			p->writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
		}
	} else if (len > WB_BYTES || (c->res_box && len > KCOPY_MAX_DEFAULT)) {
		rc = queue_write_locked(c, dst, src, len); /* sends the batch first */
	} else {
		const struct pinned_region *pr = pinned_locked(c, src, len);
		/* A small copy goes to the kernel when its source has a GPU
		 * address (KCOPY_MAX_DEFAULT); @from is what the copy reads.
		 * The resident kernel takes every copy it is given (staged
		 * where its source has no GPU address). */
		bool kernel = c->res_box ||
			      (len <= c->kcopy_max && c->fill_state > 0 && (!pr || pr->dev));

		if (c->res_box && pr && !pr->dev)
			pr = NULL;
		CUdeviceptr from = 0;
		uint64_t pos;

		/* Room first: staging below must stay behind the send. */
		if (kernel ? c->wb_nj == WB_COPIES
			   : (c->wb_n == WB_COPIES || c->wb_bytes + len > WB_BYTES))
			rc = batch_send_locked(c);
		if (!rc && pr) {
			from = kernel ? pr->dev + (uint64_t)((const char *)src - pr->p)
				      : (CUdeviceptr)(uintptr_t)src;
		} else if (!rc) {
			rc = stage_space_locked(c, len, &pos);
			if (!rc) {
				memcpy(c->stage + pos % STAGE_BYTES, src, len);
				stage_note_locked(c, pos, len, 1);
				from = kernel ? c->stage_dev + pos % STAGE_BYTES
					      : (CUdeviceptr)(uintptr_t)(c->stage +
									 pos % STAGE_BYTES);
			}
		}
		if (rc) {
			/* nothing more */
		} else if (kernel) {
			c->wb_job[c->wb_nj++] = (struct fill_job){.dst = dst,
								  .src = from,
								  .len = (uint32_t)len,
								  .pattern = FILL_COPY};
			__atomic_add_fetch(&c->kcopies, 1, __ATOMIC_RELAXED);
		} else {
			c->wb_src[c->wb_n] = from;
			c->wb_dst[c->wb_n] = dst;
			c->wb_size[c->wb_n++] = len;
			c->wb_bytes += len;
		}
	}
	pthread_mutex_unlock(&c->lock);
	cuda_leave(c, pushed);
	return rc;
}

/* Give back the records whose copies have landed, without waiting.
 * Prerequisite: c->lock held. */
static void stage_reap_locked(struct cuda_ctx *c)
{
	while (c->rec_count && !c->rec[c->rec_first].open &&
	       rec_landed(c, &c->rec[c->rec_first], false) == CUDA_SUCCESS) {
		c->rec_first = (c->rec_first + 1) % STAGE_RECORDS;
		c->rec_count--;
	}
}

/* Send the deferred batch now.  Also what every other call on the context
 * does first (cuda_batch_sync), so nothing ever waits behind an unsent batch. */
int cuda_write_flush(void *ctx)
{
	struct cuda_ctx *c = ctx;
	bool pushed;
	int rc = cuda_enter(c, &pushed);

	if (rc)
		return rc;
	pthread_mutex_lock(&c->lock);
	rc = stage_close_locked(c);
	stage_reap_locked(c); /* what write_room without waiting goes by */
	pthread_mutex_unlock(&c->lock);
	cuda_leave(c, pushed);
	return rc;
}

/* Could a deferred write of @bytes staged bytes go now without waiting
 * for the GPU?  Prerequisite: c->lock held. */
static bool room_locked(struct cuda_ctx *c, size_t bytes, bool batch)
{
	bool sends = c->wb_n == WB_COPIES || c->wb_bytes + bytes > WB_BYTES ||
		     c->wb_nd == WB_DESCS || c->wb_nj == WB_COPIES;
	bool empty = !c->wb_n && !c->wb_nd && !c->wb_nj;
	unsigned int closed = c->rec_count;
	uint64_t pos = c->head, off = pos % STAGE_BYTES;

	if (closed && c->rec[(c->rec_first + closed - 1) % STAGE_RECORDS].open)
		closed--;
	/* A write that sends the batch it fills, or one that asks for a batch
	 * of its own (@batch: a burst of dropped frames' one header, which no
	 * ring of buffers bounds), adds a batch to those in flight: at most
	 * WB_INFLIGHT, so that a read or a free never waits behind more. */
	if (batch && closed >= WB_INFLIGHT)
		return false;
	if (sends && !empty && closed + 1 > WB_INFLIGHT)
		return false;
	if (c->rec_count + 2 >= STAGE_RECORDS)
		return false;
	if (!bytes || !c->rec_count)
		return true;
	if (off + bytes > STAGE_BYTES)
		pos += STAGE_BYTES - off;
	return pos + bytes - c->rec[c->rec_first].start <= STAGE_BYTES;
}

bool cuda_write_room(void *ctx, size_t bytes, bool batch, bool wait)
{
	struct cuda_ctx *c = ctx;
	bool pushed, ok;

	if (bytes > WB_BYTES)
		return true; /* goes as a plain queued write: may wait inside */
	if (!wait) {
		/* Asked under the card's model lock: no driver call (one can
		 * block for milliseconds while another thread allocates or
		 * frees), no waiting for our lock. */
		if (pthread_mutex_trylock(&c->lock))
			return false;
		ok = room_locked(c, bytes, batch);
		pthread_mutex_unlock(&c->lock);
		return ok;
	}
	if (cuda_enter(c, &pushed))
		return true; /* the write will report the failure */
	pthread_mutex_lock(&c->lock);
	stage_reap_locked(c);
	ok = room_locked(c, bytes, batch);
	while (!ok) {
		if (c->rec_count && !c->rec[c->rec_first].open) {
			/* Wait for the oldest batch without the lock, so that
			 * readers and writers on other threads go on. */
			struct stage_rec r = c->rec[c->rec_first];

			pthread_mutex_unlock(&c->lock);
			rec_landed(c, &r, true);
			pthread_mutex_lock(&c->lock);
			stage_reap_locked(c);
		} else if (c->rec_count || c->wb_n || c->wb_nd || c->wb_nj) {
			if (stage_close_locked(c))
				break;
		} else {
			break;
		}
		ok = room_locked(c, bytes, batch);
	}
	pthread_mutex_unlock(&c->lock);
	cuda_leave(c, pushed);
	return true;
}

int cuda_write_pattern(void *ctx, const struct ga_mem_block *blk, size_t off,
		       enum ga_pattern pattern, uint32_t seq, size_t len)
{
	struct cuda_ctx *c = ctx;
	struct timespec ts = {0, 0};
	bool pushed;
	int rc = cuda_check_range(blk, off, len);

	if (rc || len == 0)
		return rc;
	if ((pattern != GA_PATTERN_PRBS && pattern != GA_PATTERN_COUNTER &&
	     pattern != GA_PATTERN_TIMING) ||
	    len > UINT32_MAX)
		return 1;
	/* The timing record's stamp: when the card made the frame, as
	 * ga_pattern_fill takes it on the CPU. */
	if (pattern == GA_PATTERN_TIMING)
		clock_gettime(CLOCK_REALTIME, &ts);
	rc = cuda_enter(c, &pushed);
	if (rc)
		return rc;
	pthread_mutex_lock(&c->lock);
	if (!cuda_fill_ready_locked(c) || !c->fill_patterns) {
		rc = 1;
	} else {
		CUdeviceptr dst = (CUdeviceptr)(blk->dptr + off);

		if (batch_overlaps_locked(c, dst, len) || c->wb_nj == WB_COPIES)
			rc = batch_send_locked(c);
		if (!rc)
			c->wb_job[c->wb_nj++] = (struct fill_job){.dst = dst,
								  .src = (uint64_t)ts.tv_sec << 32 |
									 (uint64_t)ts.tv_nsec,
								  .len = (uint32_t)len,
								  .seq = seq,
								  .pattern = pattern};
	}
	pthread_mutex_unlock(&c->lock);
	cuda_leave(c, pushed);
	return rc;
}

/*
 * A copy between two blocks of this context, as a kernel job in the
 * deferred batch (the GPU copies at its memory's speed; nothing crosses
 * PCIe), or a device-to-device copy on the stream where there is no
 * kernel.  The source must not change while the copy may be queued.
 */
int cuda_write_from(void *ctx, const struct ga_mem_block *blk, size_t off,
		    const struct ga_mem_block *src, size_t src_off, size_t len)
{
	struct cuda_ctx *c = ctx;
	CUdeviceptr dst, from;
	bool pushed;
	int rc = cuda_check_range(src, src_off, len);

	if (!rc)
		rc = cuda_op_enter(c, blk, off, len, &pushed);
	if (rc)
		return rc < 0 ? rc : 0;
	dst = (CUdeviceptr)(blk->dptr + off);
	from = (CUdeviceptr)(src->dptr + src_off);
	pthread_mutex_lock(&c->lock);
	if (len <= UINT32_MAX && cuda_fill_ready_locked(c)) {
		if (batch_overlaps_locked(c, dst, len) || c->wb_nj == WB_COPIES)
			rc = batch_send_locked(c);
		if (!rc)
			c->wb_job[c->wb_nj++] = (struct fill_job){.dst = dst,
								  .src = from,
								  .len = (uint32_t)len,
								  .pattern = FILL_COPY};
	} else {
		CUresult res;

		rc = stage_close_locked(c);
		if (!rc && c->res_box) {
			rc = cuda_res_drain(c); /* as in queue_write_locked */
			c->res_dirty = true;
		}
		res = rc ? CUDA_SUCCESS : c->f.cuMemcpyDtoDAsync(dst, from, len, c->stream);
		if (res != CUDA_SUCCESS)
			rc = cuda_fail(c, res, "cuMemcpyDtoDAsync");
	}
	pthread_mutex_unlock(&c->lock);
	cuda_leave(c, pushed);
	return rc;
}

/* Send a deferred batch before anything that must see its writes (a read,
 * a wait for the stream, a free).  Prerequisite: context current. */
int cuda_batch_sync(struct cuda_ctx *c)
{
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (c->wb_n || c->wb_nd || c->wb_nj)
		rc = batch_send_locked(c);
	pthread_mutex_unlock(&c->lock);
	/* The resident kernel's batches land outside the stream. */
	if (!rc && c->res_box)
		rc = cuda_res_drain(c);
	return rc;
}

#endif /* GA_HAVE_CUDA_H */
