/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Buffers registered from a dma-buf: ga_dmabuf.c, for ga_drv.c (the ioctls,
 * the release) and the emulated card (its DMA through the windows).
 */
#ifndef GA_DMABUF_H
#define GA_DMABUF_H

#include <linux/atomic.h>

#include "ga_buf.h"

/* dma-buf attachments not yet released, all cards: must be 0 at exit. */
extern atomic_t ga_live_dmabufs;
long ga_ioctl_GA_Add_Dmabuf(struct ga_file *gf, unsigned int cmd, unsigned long arg);
/* Upstream's GPU_DmaBuf_Add_{Wr,Rd}_Buffer: the whole dma-buf of fd @arg. */
long ga_dmabuf_add_whole(struct ga_file *gf, unsigned long arg, bool write);
/* Unmap, detach and put; DMA to @buf stopped.  card->lock held. */
void ga_dmabuf_release(struct ga_buf *buf);
/* Emulated card DMA to a dma-buf window of @card (0, or -EFAULT). */
int ga_dmabuf_card_dma(struct ga_card *card, u64 bus, void *data, u32 len, bool to_bus);

#endif /* GA_DMABUF_H */
