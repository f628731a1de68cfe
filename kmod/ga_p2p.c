// SPDX-License-Identifier: GPL-2.0
/*
 * Buffers registered by GPU address (GPU_Add_Nvidia_Memory): pinned with
 * nvidia_p2p_get_pages, mapped for the card with nvidia_p2p_dma_map_pages,
 * torn down by NVIDIA's free callback when the memory goes away (cudaFree,
 * process exit) or by the normal path when the buffer is removed.  The
 * dma-buf path (GA_Add_Dmabuf) is ga_dmabuf.c; what both share (slots,
 * programming, stopping DMA) is the buffer layer's, ga_buf.c, below both.
 *
 * States (buf->lock): SETUP -> LIVE -> RELEASING, and INVALIDATED from any
 * of them when NVIDIA calls ga_free_callback().  Who releases what:
 *  - the callback: in-callback calls (free_dma_mapping, free_page_table);
 *    NVIDIA frees the rest after it returns;
 *  - the pin path: get_pages without buf->lock (it may take mmap_lock,
 *    which the kernel orders before the dma-buf reservation lock that a
 *    dma-buf add holds around buf->lock), then dma_map_pages under
 *    buf->lock, so a callback from another thread waits until the pin is
 *    LIVE (or given up) instead of freeing the page table under the map;
 *    one that came between the two has already freed it and left the
 *    buffer INVALIDATED, which the pin path checks under the lock;
 *  - the normal path: dma_unmap_pages under buf->lock (so the callback
 *    cannot free the mapping under it), then put_pages WITHOUT buf->lock:
 *    put_pages waits for a callback in flight, which wants buf->lock.
 * A callback NVIDIA runs synchronously inside one of those calls, on the
 * thread that holds buf->lock, is recognised by buf->nv_caller.
 * ga_live_pins counts pins between a successful get_pages and their end.
 */
#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/sched.h>

#include "nv-p2p.h"

#include "ga_p2p.h"

/* Pins taken and not yet released, all cards: must be 0 at exit. */
atomic_t ga_live_pins = ATOMIC_INIT(0);

/*
 * NVIDIA's free callback: the GPU memory behind @data is going away.
 * Tears down this buffer only.  Takes only buf->lock (and the leaf
 * reg_lock): NVIDIA holds its own locks here.  Re-entry guard: if the task
 * that holds buf->lock is inside an nvidia_p2p_* call that calls back
 * synchronously, the lock is already ours.
 */
static void ga_free_callback(void *data)
{
	struct ga_buf *buf = data;
	bool reentered = READ_ONCE(buf->nv_caller) == current;
	enum ga_pin_state prev;

	if (!reentered)
		mutex_lock(&buf->lock);
	prev = buf->state;
	switch (prev) {
	case GA_PIN_INVALIDATED:
		/* Called twice: nothing left to do. */
		break;
	case GA_PIN_LIVE:
		ga_buf_stop_dma(buf);
		nvidia_p2p_free_dma_mapping(buf->map);
		nvidia_p2p_free_page_table(buf->pt);
		atomic_dec(&ga_live_pins);
		break;
	case GA_PIN_SETUP:
		/*
		 * Re-entered from inside get_pages or dma_map_pages, or after the
		 * pin path gave up: nothing programmed; a mapping being made is
		 * NVIDIA's to free, and the pin path sees INVALIDATED.
		 */
		nvidia_p2p_free_page_table(buf->pt);
		atomic_dec(&ga_live_pins);
		break;
	case GA_PIN_RELEASING:
		/* DMA stopped and unmapped by the normal path, whose put_pages
		 * waits for us and then drops the pin count.
		 */
		nvidia_p2p_free_page_table(buf->pt);
		break;
	}
	if (prev != GA_PIN_INVALIDATED) {
		buf->state = GA_PIN_INVALIDATED;
		buf->map = NULL;
		buf->pt = NULL;
		dev_info(buf->card->dev, "%s buffer %u: GPU memory invalidated\n",
			 buf->write ? "write" : "read", buf->index);
	}
	if (!reentered)
		mutex_unlock(&buf->lock);
	/* Last access to *buf: the normal path may free it after this. */
	complete_all(&buf->cb_done);
}

/*
 * Normal-path release of a LIVE (or SETUP) pin; the caller frees @buf.
 * Prerequisite: DMA to the buffer stopped (address zeroed, engine idle);
 * card->lock held (no new buffer can take the index meanwhile).
 */
void ga_p2p_release(struct ga_buf *buf)
{
	struct nvidia_p2p_page_table *pt = NULL;
	int ret;

	lockdep_assert_held(&buf->card->lock);
	mutex_lock(&buf->lock);
	if (buf->state == GA_PIN_LIVE || buf->state == GA_PIN_SETUP) {
		if (buf->map) {
			WRITE_ONCE(buf->nv_caller, current);
			ret = nvidia_p2p_dma_unmap_pages(buf->card->pdev, buf->pt, buf->map);
			WRITE_ONCE(buf->nv_caller, NULL);
			if (ret)
				dev_warn(buf->card->dev, "dma_unmap_pages: %d\n", ret);
		}
		if (buf->state != GA_PIN_INVALIDATED) { /* unless it re-entered */
			buf->map = NULL;
			buf->state = GA_PIN_RELEASING;
			pt = buf->pt;
		}
	}
	mutex_unlock(&buf->lock);

	if (pt) {
		ret = nvidia_p2p_put_pages(0, 0, buf->pin_va, pt);
		if (ret)
			dev_warn(buf->card->dev, "put_pages: %d (callback may have run)\n", ret);
		atomic_dec(&ga_live_pins);
	} else {
		wait_for_completion(&buf->cb_done);
	}
}

/*
 * Is what NVIDIA handed back usable by the card?  Version, 64 KiB pages,
 * one bus address per page, and contiguous on the bus over the buffer
 * (the card takes one base address).  Sets buf->bus and buf->pages.
 * Locking: buf->lock held.
 */
static int ga_p2p_check(struct ga_card *card, struct ga_buf *buf,
			struct nvidia_p2p_page_table *pt, struct nvidia_p2p_dma_mapping *map)
{
	u64 off = buf->gpu_address - buf->pin_va;
	u32 i, used;

	lockdep_assert_held(&buf->lock);
	if (!NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE(pt) ||
	    !NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE(map)) {
		dev_warn(card->dev, "incompatible NVIDIA page table or mapping version\n");
		return -EINVAL;
	}
	if (pt->page_size != NVIDIA_P2P_PAGE_SIZE_64KB || map->entries != pt->entries ||
	    (u64)pt->entries * GA_GPU_PAGE_SIZE < buf->pin_len) {
		dev_warn(card->dev, "unexpected page table: page size %u, %u entries\n",
			 pt->page_size, pt->entries);
		return -EINVAL;
	}
	used = DIV_ROUND_UP(off + buf->size, GA_GPU_PAGE_SIZE);
	for (i = 1; i < used; i++) {
		if (map->dma_addresses[i] != map->dma_addresses[0] + (u64)i * GA_GPU_PAGE_SIZE) {
			dev_warn(card->dev, "buffer is not contiguous on the bus (page %u)\n", i);
			return -EINVAL;
		}
	}
	buf->bus = map->dma_addresses[0] + off;
	buf->pages = pt->entries;
	return 0;
}

/*
 * Pin, map and check @buf's GPU memory, then program its registers.
 * Prerequisite: card->lock held.  get_pages runs without buf->lock (see
 * below); buf->lock is held across dma_map_pages and what follows: a free
 * callback from another thread waits for it, so NVIDIA cannot free the
 * page table while dma_map_pages still uses it (the callback then finds
 * LIVE and tears the buffer down).  This relies on NVIDIA not holding,
 * while it runs a callback, a lock dma_map_pages takes.
 */
int ga_p2p_pin(struct ga_card *card, struct ga_buf *buf)
{
	struct nvidia_p2p_dma_mapping *map = NULL;
	int ret;

	lockdep_assert_held(&card->lock);
	/*
	 * get_pages may take mmap_lock (the stub pins host memory with it),
	 * so it runs without buf->lock: a dma-buf add takes buf->lock under
	 * the reservation lock, which the kernel orders after mmap_lock.  A
	 * callback before we take buf->lock finds the buffer still in setup
	 * and frees the page table itself; we then see INVALIDATED below.
	 * From here on buf->lock keeps the callback from freeing the table
	 * while dma_map_pages uses it.
	 */
	ret = nvidia_p2p_get_pages(0, 0, buf->pin_va, buf->pin_len, &buf->pt, ga_free_callback,
				   buf);
	if (ret) {
		dev_dbg(card->dev, "get_pages(%#llx, %#llx): %d\n", buf->pin_va, buf->pin_len, ret);
		return ret;
	}
	atomic_inc(&ga_live_pins);
	mutex_lock(&buf->lock);
	WRITE_ONCE(buf->nv_caller, current);
	if (buf->state != GA_PIN_INVALIDATED)
		ret = nvidia_p2p_dma_map_pages(card->pdev, buf->pt, &map);
	WRITE_ONCE(buf->nv_caller, NULL);

	if (buf->state == GA_PIN_INVALIDATED) {
		/* A callback re-entered one of the calls: it freed what was ours. */
		mutex_unlock(&buf->lock);
		wait_for_completion(&buf->cb_done);
		return -ENXIO;
	}
	if (ret) {
		dev_dbg(card->dev, "dma_map_pages: %d\n", ret);
		goto out_release;
	}
	buf->map = map;
	ret = ga_p2p_check(card, buf, buf->pt, map);
	if (ret)
		goto out_release;
	ga_buf_program(card, buf);
	buf->state = GA_PIN_LIVE;
	mutex_unlock(&buf->lock);
	return 0;

out_release:
	mutex_unlock(&buf->lock);
	ga_p2p_release(buf);
	return ret;
}
