/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The datadev ioctl ABI for GpuAsyncCore cards.
 *
 * The first part is the contract of SLAC's upstream aes-stream-drivers
 * "datadev" driver, reproduced from its documented behaviour: bare 16-bit
 * command numbers (no _IOC encoding), a 24-byte struct to add GPU memory,
 * a 16-byte struct for register access, and the register block reachable
 * through mmap.  The second part is gpuasync.ko's extensions, under new
 * numbers that upstream does not use, so that a library probing for them
 * gets a plain error from upstream and falls back.
 *
 * This header is shared by libgpuasync (user space) and kmod/ (kernel).
 * Existing structs never change; new behaviour gets new numbers.
 */
#ifndef GPUASYNC_ABI_H
#define GPUASYNC_ABI_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/stddef.h>
#define GA_ABI_ASSERT(c, m) static_assert(c, m)
typedef __u32 ga_u32;
typedef __u64 ga_u64;
#else
#include <stddef.h>
#include <stdint.h>
#include <assert.h>
#define GA_ABI_ASSERT(c, m) static_assert(c, m)
typedef uint32_t ga_u32;
typedef uint64_t ga_u64;
#endif

/* ---- upstream datadev: generic DMA codes used here ---------------------- */
#define DMA_Get_Buff_Count 0x1001 /* ret: number of DMA buffers (rx + tx) */
#define DMA_Get_Buff_Size 0x1002  /* ret: size of one DMA buffer in bytes */
#define DMA_Get_Version 0x1009    /* ret: driver API version (0x06) */
#define DMA_Write_Register 0x100A /* arg: struct DmaRegisterData * */
#define DMA_Read_Register 0x100B  /* arg: struct DmaRegisterData *, fills data */

#define DMA_VERSION 0x06

/* Register ioctls accept only this window of BAR0 (upstream check). */
#define DMA_REG_WINDOW_START 0x10000u
#define DMA_REG_WINDOW_END 0x1000000u /* exclusive: offset + 4 <= this */

struct DmaRegisterData {
	ga_u64 address; /* in: byte offset from BAR0 */
	ga_u32 data;    /* in (write) / out (read) */
	ga_u32 pad;     /* implicit in upstream; made explicit */
};
GA_ABI_ASSERT(sizeof(struct DmaRegisterData) == 16, "DmaRegisterData size");
GA_ABI_ASSERT(offsetof(struct DmaRegisterData, data) == 8, "DmaRegisterData.data");

/* ---- upstream datadev: GPU async codes ---------------------------------- */
#define GPU_Add_Nvidia_Memory 0x8002 /* arg: struct GpuNvidiaData * */
#define GPU_Rem_Nvidia_Memory 0x8003 /* arg: 0; removes ALL buffers */
#define GPU_Set_Write_Enable 0x8004  /* arg: ga_u32 * index; arms one buffer */
#define GPU_Is_Gpu_Async_Supp 0x8005 /* ret: 1 supported, 0 not */
#define GPU_Get_Gpu_Async_Ver 0x8006 /* ret: firmware version byte */
#define GPU_Get_Max_Buffers 0x8007   /* ret: firmware max buffers */
#define GPU_Enable_Tx 0x8008 /* arg: value, FPGA->GPU engine (pre-release) */
#define GPU_Enable_Rx 0x8009 /* arg: value, GPU->FPGA engine (pre-release) */

/* Upstream returns the kernel-internal ENOTSUPP for "no GPU support". */
#define GA_KERNEL_ENOTSUPP 524

struct GpuNvidiaData {
	ga_u32 write;   /* in: non-zero = FPGA writes into it (FPGA->GPU) */
	ga_u32 pad;     /* implicit in upstream; made explicit */
	ga_u64 address; /* in: CUDA device virtual address */
	ga_u32 size;    /* in: bytes, multiple of GA_GPU_PAGE_SIZE */
	ga_u32 pad2;
};
GA_ABI_ASSERT(sizeof(struct GpuNvidiaData) == 24, "GpuNvidiaData size");
GA_ABI_ASSERT(offsetof(struct GpuNvidiaData, address) == 8, "address");
GA_ABI_ASSERT(offsetof(struct GpuNvidiaData, size) == 16, "size");

/* GPU pages pinned for RDMA are 64 KiB; sizes must be a multiple. */
#define GA_GPU_PAGE_SHIFT 16
#define GA_GPU_PAGE_SIZE (1u << GA_GPU_PAGE_SHIFT)

/* BAR0 placement of the GpuAsyncCore block and its neighbours. */
#define GA_CORE_OFFSET 0x28000u
#define GA_CORE_SIZE 0x8000u
/* An image may place the core elsewhere (core_offset): page aligned,
 * inside the 16 MiB BAR the register window reaches. */
#define GA_CORE_ALIGN 0x1000u
#define GA_CORE_OFFSET_MAX (DMA_REG_WINDOW_END - GA_CORE_SIZE)
#define GA_AXIVERSION_OFFSET 0x20000u
#define GA_AXIVERSION_GPU_EN 0x20428u   /* userValues[10], bit 0 */
#define GA_AXIVERSION_CLOCK_HZ 0x20410u /* userValues[4], DMA clock in Hz */

/*
 * The 8-byte descriptor the card writes at offset 0 of a write buffer after
 * the payload (which starts at +dma_data_bytes).  Word 0 holds the flags,
 * word 1 the frame size: the doorbell software waits on and clears.  A read
 * buffer's completion block (V4+) is 16 bytes at +0, first word 1.
 */
#define GA_HDR_BYTES 8
#define GA_HDR_FLAGS_OFFSET 0
#define GA_HDR_SIZE_OFFSET 4 /* the doorbell */
#define GA_HDR_RESULT_MASK 0x3u /* AXI write response */
#define GA_HDR_OVERFLOW (1u << 2)
#define GA_HDR_CONT (1u << 3)
#define GA_HDR_LAST_USER_SHIFT 16 /* 8 bits: TUSER of the last beat */
#define GA_HDR_FIRST_USER_SHIFT 24 /* 8 bits: TUSER of the first beat */
#define GA_READ_DONE_BYTES 16

/* Maximum buffers per direction the driver accepts (firmware V4: 1024). */
#define GA_MAX_BUFFERS 1024

/* ---- gpuasync.ko extensions (not in upstream) --------------------------- */
/*
 * GA_Get_Abi_Version: ret = (GA_ABI_VERSION << 16) | feature bits.  Upstream
 * answers an unknown code with -1 (EPERM), which the library reads as "no
 * extensions".
 */
#define GA_Get_Abi_Version 0x8100
#define GA_Rem_Buffer 0x8101       /* arg: struct ga_buffer_ref * */
#define GA_Arm_Buffers 0x8102      /* arg: struct ga_arm_many * */
#define GA_Get_Buffer_Table 0x8103 /* arg: struct ga_buffer_table * */
#define GA_Add_Dmabuf 0x8104       /* arg: struct ga_dmabuf_add * */

#define GA_ABI_VERSION 1
#define GA_FEAT_REM_BUFFER (1u << 0)
#define GA_FEAT_ARM_MANY (1u << 1)
#define GA_FEAT_BUFFER_TABLE (1u << 2)
#define GA_FEAT_DMABUF (1u << 3)

struct ga_buffer_ref {
	ga_u32 write; /* in: 1 write (FPGA->GPU) list, 0 read list */
	ga_u32 index; /* in: buffer index; only the last one may be removed */
};
GA_ABI_ASSERT(sizeof(struct ga_buffer_ref) == 8, "ga_buffer_ref size");

struct ga_arm_many {
	ga_u64 indices; /* in: user pointer to ga_u32[count] */
	ga_u32 count;   /* in: number of indices, <= GA_MAX_BUFFERS */
	ga_u32 pad;
};
GA_ABI_ASSERT(sizeof(struct ga_arm_many) == 16, "ga_arm_many size");

struct ga_buffer_entry {
	ga_u32 index;      /* out */
	ga_u32 write;      /* out: 1 write list, 0 read list */
	ga_u64 gpu_address;/* out: address passed to GPU_Add_Nvidia_Memory */
	ga_u64 bus_address;/* out: address programmed into the card */
	ga_u32 size;       /* out: bytes registered */
	ga_u32 pages;      /* out: 64 KiB pages pinned */
	ga_u32 owner_tgid; /* out: thread group that registered it */
	ga_u32 flags;      /* out: GA_BUF_* */
};
GA_ABI_ASSERT(sizeof(struct ga_buffer_entry) == 40, "ga_buffer_entry size");

#define GA_BUF_INVALIDATED (1u << 0) /* the GPU memory went away */
/* Registered with GA_Add_Dmabuf; gpu_address is then the offset into the
 * dma-buf, pages the 64 KiB pages the buffer spans. */
#define GA_BUF_DMABUF (1u << 1)

struct ga_buffer_table {
	ga_u64 entries; /* in: user pointer to struct ga_buffer_entry[capacity] */
	ga_u32 capacity;/* in: entries available */
	ga_u32 count;   /* out: entries that exist (may exceed capacity) */
};
GA_ABI_ASSERT(sizeof(struct ga_buffer_table) == 16, "ga_buffer_table size");

/*
 * GA_Add_Dmabuf: register a buffer from a dma-buf (CUDA's
 * cuMemGetHandleForAddressRange(..DMA_BUF_FD..), udmabuf, any exporter)
 * instead of nvidia_p2p.  The driver takes its own reference: the caller may
 * close fd afterwards.  The buffer goes to the end of its list like
 * GPU_Add_Nvidia_Memory's and is removed the same ways.  If the exporter
 * revokes the memory (move_notify), the buffer is invalidated exactly as by
 * an nvidia_p2p free callback.  Errors: EBADF/EINVAL fd is not a dma-buf;
 * EINVAL offset not 64 KiB aligned, size not a non-zero multiple of 64 KiB,
 * range outside the dma-buf, or memory not contiguous on the bus (the card
 * takes one base address; the kernel log says which); the exporter's error
 * when it refuses the card's device.
 */
struct ga_dmabuf_add {
	ga_u32 fd;     /* in: dma-buf file descriptor */
	ga_u32 write;  /* in: 1 write (FPGA->GPU) list, 0 read list */
	ga_u64 offset; /* in: first byte of the buffer in the dma-buf */
	ga_u32 size;   /* in: bytes */
	ga_u32 index;  /* out: the buffer's index in its list */
};
GA_ABI_ASSERT(sizeof(struct ga_dmabuf_add) == 24, "ga_dmabuf_add size");
GA_ABI_ASSERT(offsetof(struct ga_dmabuf_add, offset) == 8, "ga_dmabuf_add.offset");

#endif /* GPUASYNC_ABI_H */
