// SPDX-License-Identifier: GPL-2.0
/*
 * Buffers registered from a dma-buf (GA_Add_Dmabuf): NVIDIA's successor to
 * nvidia_p2p for GPU memory (CUDA exports an allocation as a dma-buf fd),
 * and the way any other exporter's memory (udmabuf: host memory) reaches
 * the card.
 *
 * The card is a dynamic importer.  It maps the buffer once, under the
 * dma-buf's reservation lock, and keeps the mapping while the buffer is
 * registered.  An exporter that wants the memory back calls move_notify
 * with that lock held; the card then does what an nvidia_p2p free callback
 * does: stop the engine if it runs, zero the buffer's address, wait until
 * the card is idle, unmap, and mark the buffer invalidated (user space
 * registers it again).  Exporters that are not dynamic (NVIDIA's, udmabuf)
 * never move their memory: the mapping the dma-buf core made at attach time
 * lives until the buffer is removed, and our reference keeps the memory.
 *
 * Lock order: card->lock, the dma-buf's reservation lock, buf->lock,
 * reg_lock (then the emulated card's model lock, then card->win_lock).
 */
#include <linux/dma-buf.h>
#include <linux/dma-direct.h>
#include <linux/dma-resv.h>
#include <linux/highmem.h>
#include <linux/iommu.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "gpuasync/dma.h"

#include "ga_dmabuf.h"

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
MODULE_IMPORT_NS("DMA_BUF");
#else
MODULE_IMPORT_NS(DMA_BUF);
#endif

atomic_t ga_live_dmabufs = ATOMIC_INIT(0);

/* ---- the emulated card's view of system memory --------------------------- */

/*
 * An emulated card reaches a dma-buf's memory the way a real one does: by
 * bus address.  Without an IOMMU a bus address is a physical one, so the
 * card may touch RAM, but only inside the windows of its live buffers.
 */
static bool ga_win_usable(struct ga_card *card, struct ga_buf *buf)
{
	phys_addr_t first = dma_to_phys(card->dma_dev, buf->bus);
	phys_addr_t last = dma_to_phys(card->dma_dev, buf->bus + buf->size - 1);

	return card->emulated && !device_iommu_mapped(card->dma_dev) &&
	       pfn_valid(PHYS_PFN(first)) && pfn_valid(PHYS_PFN(last));
}

static int ga_phys_copy(struct ga_card *card, u64 bus, void *data, u32 len, bool to_bus)
{
	while (len) {
		phys_addr_t pa = dma_to_phys(card->dma_dev, bus);
		u32 off = offset_in_page(pa), chunk = min_t(u32, len, PAGE_SIZE - off);
		void *va;

		if (!pfn_valid(PHYS_PFN(pa)))
			return -EFAULT;
		va = kmap_local_page(pfn_to_page(PHYS_PFN(pa)));
		if (to_bus)
			ga_dma_put(va + off, data, chunk);
		else
			memcpy(data, va + off, chunk);
		kunmap_local(va);
		bus += chunk;
		data += chunk;
		len -= chunk;
	}
	return 0;
}

int ga_dmabuf_card_dma(struct ga_card *card, u64 bus, void *data, u32 len, bool to_bus)
{
	struct ga_buf *buf;
	int ret = -EFAULT;

	mutex_lock(&card->win_lock);
	list_for_each_entry(buf, &card->windows, win_node) {
		if (bus >= buf->bus && bus - buf->bus <= buf->size &&
		    len <= buf->size - (bus - buf->bus)) {
			ret = ga_phys_copy(card, bus, data, len, to_bus);
			break;
		}
	}
	mutex_unlock(&card->win_lock);
	/* A disabled core writes headers to address 0: not a fault. */
	if (ret && bus >= GA_GPU_PAGE_SIZE)
		atomic64_inc(&card->dma_faults);
	return ret;
}

/* ---- mapping --------------------------------------------------------------- */

/*
 * The bus address of dma-buf bytes [off, off + size), which must be one
 * contiguous run: the card takes one base address per buffer.
 */
static int ga_dmabuf_bus(struct ga_card *card, struct sg_table *sgt, u64 off, u32 size, u64 *bus)
{
	u64 pos = 0, want = 0, end = off + size;
	struct scatterlist *sg;
	bool found = false;
	unsigned int i;

	for_each_sgtable_dma_sg(sgt, sg, i) {
		u64 a = sg_dma_address(sg), l = sg_dma_len(sg);

		if (pos + l > off && pos < end) {
			if (!found) {
				*bus = a + (off - pos);
				found = true;
			} else if (a != want) {
				dev_warn(card->dev,
					 "dma-buf bytes %#llx-%#llx are not contiguous on the bus (byte %#llx "
					 "is at %#llx, not %#llx): the card takes one address per buffer\n",
					 off, end - 1, pos, a, want);
				return -EINVAL;
			}
			want = a + l;
		}
		pos += l;
	}
	if (!found || pos < end) {
		dev_warn(card->dev, "dma-buf mapping covers %#llx bytes, not bytes %#llx-%#llx\n", pos,
			 off, end - 1);
		return -EINVAL;
	}
	return 0;
}

/* Forget the mapping: window first (no DMA through it), then unmap.
 * Reservation lock and buf->lock held; DMA to the buffer stopped.
 */
static void ga_dmabuf_unmap(struct ga_buf *buf)
{
	struct ga_card *card = buf->card;

	mutex_lock(&card->win_lock);
	list_del_init(&buf->win_node);
	mutex_unlock(&card->win_lock);
	if (buf->sgt)
		dma_buf_unmap_attachment(buf->attach, buf->sgt, DMA_BIDIRECTIONAL);
	buf->sgt = NULL;
}

/*
 * The exporter moves or revokes the memory (reservation lock held): what
 * an nvidia_p2p free callback does, for this buffer only.
 */
static void ga_dmabuf_move_notify(struct dma_buf_attachment *attach)
{
	struct ga_buf *buf = attach->importer_priv;

	dma_resv_assert_held(attach->dmabuf->resv);
	mutex_lock(&buf->lock);
	if (buf->state == GA_PIN_LIVE) {
		ga_buf_stop_dma(buf);
		ga_dmabuf_unmap(buf);
		buf->state = GA_PIN_INVALIDATED;
		dev_info(buf->card->dev, "%s buffer %u: dma-buf memory moved by its exporter\n",
			 buf->write ? "write" : "read", buf->index);
	}
	mutex_unlock(&buf->lock);
}

static const struct dma_buf_attach_ops ga_dmabuf_attach_ops = {
	.allow_peer2peer = true, /* GPU memory is a peer's BAR, with no struct pages */
	.move_notify = ga_dmabuf_move_notify,
};

/* Map @buf and program the card.  card->lock held, buf->attach set. */
static int ga_dmabuf_map(struct ga_card *card, struct ga_buf *buf)
{
	struct dma_resv *resv = buf->dmabuf->resv;
	struct sg_table *sgt;
	u64 bus;
	int ret;

	dma_resv_lock(resv, NULL);
	sgt = dma_buf_map_attachment(buf->attach, DMA_BIDIRECTIONAL);
	if (IS_ERR(sgt)) {
		ret = PTR_ERR(sgt);
		dev_warn(card->dev, "dma-buf: the exporter did not map it for the card: %d\n", ret);
		goto out_unlock;
	}
	ret = ga_dmabuf_bus(card, sgt, buf->gpu_address, buf->size, &bus);
	if (ret) {
		dma_buf_unmap_attachment(buf->attach, sgt, DMA_BIDIRECTIONAL);
		goto out_unlock;
	}
	mutex_lock(&buf->lock);
	buf->sgt = sgt;
	buf->bus = bus;
	ga_buf_program(card, buf);
	if (ga_win_usable(card, buf)) {
		mutex_lock(&card->win_lock);
		list_add_tail(&buf->win_node, &card->windows);
		mutex_unlock(&card->win_lock);
	}
	buf->state = GA_PIN_LIVE;
	mutex_unlock(&buf->lock);
out_unlock:
	dma_resv_unlock(resv);
	return ret;
}

/*
 * Register bytes [a->offset, a->offset + a->size) of dma-buf a->fd (size 0:
 * the whole dma-buf) as the next buffer of its list.  With @arg, a
 * GA_Add_Dmabuf argument, the index is copied out before anything is
 * programmed (nothing to undo if that fails).
 */
static int ga_dmabuf_add(struct ga_file *gf, struct ga_dmabuf_add *a, unsigned long arg,
			 unsigned int cmd)
{
	struct ga_card *card = gf->card;
	struct dma_buf_attachment *attach;
	struct dma_buf *dmabuf;
	struct ga_buf *buf;
	int ret;

	dmabuf = dma_buf_get((int)a->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	if (!a->size) {
		/* The card's size words are 32 bits: a larger dma-buf has no size. */
		if (dmabuf->size > U32_MAX - (GA_GPU_PAGE_SIZE - 1)) {
			dev_warn(card->dev, "dma-buf of %zu bytes: a buffer is at most 4 GiB - 64 KiB\n",
				 dmabuf->size);
			ret = -EINVAL;
			goto out_put;
		}
		a->size = dmabuf->size;
	}
	if (!a->size || a->size % GA_GPU_PAGE_SIZE || a->offset % GA_GPU_PAGE_SIZE) {
		dev_dbg(card->dev, "dma-buf: offset %#llx and size %#x must be multiples of 64 KiB\n",
			a->offset, a->size);
		ret = -EINVAL;
		goto out_put;
	}
	if (a->offset >= dmabuf->size || a->size > dmabuf->size - a->offset) {
		dev_warn(card->dev, "dma-buf of %zu bytes has no bytes %#llx-%#llx\n", dmabuf->size,
			 a->offset, a->offset + a->size - 1);
		ret = -EINVAL;
		goto out_put;
	}
	buf = ga_buf_new(gf, a->write != 0, a->offset, a->size);
	if (!buf) {
		ret = -ENOMEM;
		goto out_put;
	}
	buf->dmabuf = dmabuf;
	buf->pages = a->size / GA_GPU_PAGE_SIZE;

	mutex_lock(&card->lock);
	ret = ga_add_slot(card, buf);
	if (ret)
		goto out_unlock;
	if (arg) {
		a->index = buf->index;
		ret = ga_arg_out(arg, a, sizeof(*a), cmd);
		if (ret)
			goto out_unlock;
	}
	attach = dma_buf_dynamic_attach(dmabuf, card->dma_dev, &ga_dmabuf_attach_ops, buf);
	if (IS_ERR(attach)) {
		ret = PTR_ERR(attach);
		dev_warn(card->dev, "dma-buf: the exporter refused the card: %d\n", ret);
		goto out_unlock;
	}
	buf->attach = attach;
	atomic_inc(&ga_live_dmabufs);
	ret = ga_dmabuf_map(card, buf);
	if (ret) {
		dma_buf_detach(dmabuf, attach);
		atomic_dec(&ga_live_dmabufs);
		goto out_unlock;
	}
	ga_add_commit(card, buf);
	mutex_unlock(&card->lock);
	return 0;

out_unlock:
	mutex_unlock(&card->lock);
	kfree(buf);
out_put:
	dma_buf_put(dmabuf);
	return ret;
}

long ga_ioctl_GA_Add_Dmabuf(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	struct ga_dmabuf_add a;
	int ret;

	if (!gf->card->gpu_en)
		return -ENOTSUPP;
	ret = ga_arg_in(&a, sizeof(a), arg, cmd);
	if (ret)
		return ret;
	/* Size 0 is refused here; only upstream's commands mean "all of it". */
	if (!a.size || a.size % GA_GPU_PAGE_SIZE || a.offset % GA_GPU_PAGE_SIZE) {
		dev_dbg(gf->card->dev,
			"dma-buf: offset %#llx and size %#x must be multiples of 64 KiB\n", a.offset,
			a.size);
		return -EINVAL;
	}
	return ga_dmabuf_add(gf, &a, arg, cmd);
}

/*
 * Upstream's by-value form: the fd is the argument, the buffer the whole
 * dma-buf.  What upstream does differently on purpose (kmod/README.md):
 * the owner rule applies, the engine is not switched on, and the payload
 * limit is the buffer size minus DmaDataBytes.
 */
long ga_dmabuf_add_whole(struct ga_file *gf, unsigned long arg, bool write)
{
	struct ga_dmabuf_add a = { .write = write };

	if (!gf->card->gpu_en)
		return -ENOTSUPP;
	if (arg > INT_MAX)
		return -EBADF;
	a.fd = (u32)arg;
	return ga_dmabuf_add(gf, &a, 0, 0);
}

void ga_dmabuf_release(struct ga_buf *buf)
{
	struct dma_buf *dmabuf = buf->dmabuf;

	lockdep_assert_held(&buf->card->lock);
	dma_resv_lock(dmabuf->resv, NULL);
	mutex_lock(&buf->lock);
	ga_dmabuf_unmap(buf);
	buf->state = GA_PIN_RELEASING;
	mutex_unlock(&buf->lock);
	dma_resv_unlock(dmabuf->resv);
	/* Without the reservation lock: detach takes it for a cached mapping. */
	dma_buf_detach(dmabuf, buf->attach);
	buf->attach = NULL;
	atomic_dec(&ga_live_dmabufs);
	dma_buf_put(dmabuf);
}
