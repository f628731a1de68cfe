/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * /dev/nv_p2p_stub: the user-space face of the NVIDIA stand-in, for tests.
 *
 * It plays the part of cudaMalloc/cudaFree: NVSTUB_ALLOC reserves "GPU
 * memory" (system pages) and returns its fake GPU virtual address, which a
 * test registers with GPU_Add_Nvidia_Memory, and an mmap offset through
 * which the test reads what the card wrote (as cudaMemcpy would).
 * NVSTUB_FREE is cudaFree: every pin on the region gets its invalidation
 * callback.  NVSTUB_INVALIDATE fires the callbacks of the pins overlapping
 * a range (stub regions or pinned host memory) without freeing anything.
 * Closing the file frees its regions, like a CUDA process exiting.
 *
 * NVSTUB_EXPORT_DMABUF is cuMemGetHandleForAddressRange(..DMA_BUF_FD..):
 * a range of a region becomes a dma-buf whose importers get the same kind
 * of fake bus addresses as nvidia_p2p_dma_map_pages hands out (so the
 * emulated card reaches the memory).  By default the dma-buf is static, as
 * NVIDIA's: it keeps the memory alive until its last reference, whatever
 * NVSTUB_FREE does.  With the module parameter dmabuf_dynamic=1 it is a
 * dynamic exporter: NVSTUB_FREE revokes it (move_notify, then no new
 * mappings) and NVSTUB_INVALIDATE moves it (move_notify, new mappings get
 * new addresses); DMA to an address it took back counts as stale_dma.
 */
#ifndef NV_P2P_STUB_UAPI_H
#define NV_P2P_STUB_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

struct nvstub_alloc {
	__u64 size;        /* in: bytes (rounded up to 64 KiB) */
	__u64 gpu_va;      /* out: fake GPU virtual address, 64 KiB aligned */
	__u64 mmap_offset; /* out: mmap() offset of the region on this fd */
};

struct nvstub_range {
	__u64 va;  /* in: an address inside the range */
	__u64 len; /* in: bytes; 0 = the whole region containing va */
};

struct nvstub_stats {
	__u64 pins;          /* page tables handed out and not yet released */
	__u64 mappings;      /* DMA mappings alive */
	__u64 regions;       /* regions alive (freed ones pinned by a driver count) */
	__u64 callbacks;     /* invalidation callbacks run */
	__u64 get_pages;     /* successful nvidia_p2p_get_pages */
	__u64 put_pages;     /* successful nvidia_p2p_put_pages */
	__u64 stale_dma;     /* device DMA to a bus address once mapped, now gone */
	__u64 misuse;        /* API rule broken by the caller (also a WARN) */
	__u64 leaked;        /* legacy_free: objects a callback left unfreed */
	__u64 dmabufs;       /* exported dma-bufs alive */
	__u64 moves;         /* move_notify calls made on dynamic dma-bufs */
};

struct nvstub_export {
	__u64 va;    /* in: first byte, 64 KiB aligned, in a region of this file */
	__u64 len;   /* in: bytes, a multiple of 64 KiB; 0 = to the region's end */
	__s32 fd;    /* out: the dma-buf (O_RDWR, close-on-exec) */
	__u32 flags; /* in: 0 */
};

#define NVSTUB_ALLOC _IOWR('S', 0x40, struct nvstub_alloc)
#define NVSTUB_FREE _IOW('S', 0x41, struct nvstub_range)
/* Returns the number of callbacks fired. */
#define NVSTUB_INVALIDATE _IOW('S', 0x42, struct nvstub_range)
#define NVSTUB_STATS _IOR('S', 0x43, struct nvstub_stats)
#define NVSTUB_EXPORT_DMABUF _IOWR('S', 0x44, struct nvstub_export)

/*
 * /dev/nvidia_p2p_stub_mem: the interface of upstream's stub node
 * (aes-stream-drivers emulator/gpu_stub), which its GPU tools use
 * unmodified.  STUB_RESERVE_BUF sets @size bytes aside (rounded up to
 * 64 KiB) and returns @buf_id; mmap() at offset buf_id * page size maps
 * them; closing the file releases every reservation it made.
 */
struct stub_reserve_req {
	__u32 size;   /* in: bytes */
	__u32 buf_id; /* out */
};

#define STUB_RESERVE_BUF _IOWR('S', 1, struct stub_reserve_req)

#endif /* NV_P2P_STUB_UAPI_H */
