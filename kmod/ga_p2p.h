/* SPDX-License-Identifier: GPL-2.0 */
/* Buffers registered by GPU address (nvidia_p2p): ga_p2p.c, for ga_drv.c. */
#ifndef GA_P2P_H
#define GA_P2P_H

#include <linux/atomic.h>

#include "ga_buf.h"

/* Pins taken and not yet released, all cards: must be 0 at exit. */
extern atomic_t ga_live_pins;
/* Pin, map, check and program @buf.  card->lock held. */
int ga_p2p_pin(struct ga_card *card, struct ga_buf *buf);
/* Unmap and unpin; DMA to @buf stopped.  card->lock held. */
void ga_p2p_release(struct ga_buf *buf);

#endif /* GA_P2P_H */
