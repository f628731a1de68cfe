/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What nv_p2p_stub.ko offers gpuasync.ko beyond the NVIDIA interface: the
 * emulated card's DMA engine reaches "GPU memory" through the bus addresses
 * the stub handed out, as a real card reaches BAR1 through the PCIe fabric.
 * An address that is not mapped (zeroed register, stale mapping) fails,
 * and a stale one is counted, so tests can see a driver that forgot to
 * clear an address register.
 */
#ifndef NV_P2P_STUB_H
#define NV_P2P_STUB_H

#include <linux/types.h>

/* Copy @len bytes between @buf and bus address @bus.  @to_bus: device
 * writes memory.  Returns 0, or -EFAULT when the range is not mapped.
 * Context: process context; may sleep.
 */
int nv_p2p_stub_dma(u64 bus, void *buf, u32 len, bool to_bus);

#endif /* NV_P2P_STUB_H */
