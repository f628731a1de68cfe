/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gpuasync.ko's driver (ga_drv.c), for the module (ga_main.c) and card
 * providers (the PCI binding, the emulated card in ga_emu.c).  The driver
 * never calls a provider except through the provider's struct ga_card_ops
 * (ga_buf.h, with the card and its buffers).
 */
#ifndef GA_DRV_H
#define GA_DRV_H

#include "ga_buf.h"

#define GA_DRV_VERSION "0.1.0"
#define GA_BAR_SIZE 0x1000000u /* upstream accepts BAR0 up to 16 MiB */

/* Where GpuAsyncCore sits in BAR0 (module parameter core_offset, checked
 * at load: page aligned, clear of AxiVersion, inside the BAR). */
extern unsigned int ga_core_offset;

/* ga_drv.c: the driver's setup, for ga_main.c */
int ga_drv_init(void);
void ga_drv_exit(void);
int ga_pci_register(void);
void ga_pci_unregister(void);

/* ga_drv.c: what a card provider (PCI binding, ga_emu.c) calls */
struct ga_card *ga_card_alloc(const char *name, const struct ga_card_ops *ops, void *priv);
/* Identify the card, create /dev/<name>.  On failure the caller drops
 * the allocation reference with ga_card_unregister().
 */
int ga_card_register(struct ga_card *card, struct device *parent);
/* Remove the device node and all buffers, stop, drop the reference. */
void ga_card_unregister(struct ga_card *card);

#endif /* GA_DRV_H */
