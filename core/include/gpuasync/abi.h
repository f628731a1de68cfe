/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The datadev ioctl ABI for GpuAsyncCore cards.
 *
 * The first part is the contract of SLAC's upstream aes-stream-drivers
 * "datadev" driver, reproduced from its documented behaviour: bare 16-bit
 * command numbers (no _IOC encoding), a 24-byte struct to add GPU memory,
 * a 16-byte struct for register access, and the register block reachable
 * through mmap.  The second part is gpuasync.ko's extensions, _IOC-encoded
 * (type GA_IOC_TYPE, size and direction in the number) so that a library
 * probing for them gets a plain error from upstream and falls back.
 *
 * gpuasync/ioctls.def is the one list of commands: the driver's
 * dispatcher, the library's names, the tests and docs/abi.md derive from
 * it.  This header is shared by libgpuasync (user space) and kmod/ (kernel).
 */
#ifndef GPUASYNC_ABI_H
#define GPUASYNC_ABI_H

#ifdef __KERNEL__
#include <linux/ioctl.h>
#include <linux/types.h>
#include <linux/build_bug.h>
#include <linux/stddef.h>
#define GA_ABI_ASSERT(c, m) static_assert(c, m)
typedef __u32 ga_u32;
typedef __u64 ga_u64;
#else
#include <linux/ioctl.h>
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

#define DMA_Set_MaskBytes 0x1008  /* arg: ga_u8[DMA_MASK_SIZE] *, destinations */
/* Receive (FPGA->CPU) DMA buffers by where they are: held by user space,
 * in the hardware's free list, queued for it, queued for user space. */
#define DMA_Get_RxBuffinUser_Count 0x1014
#define DMA_Get_RxBuffinHW_Count 0x1015
#define DMA_Get_RxBuffinPreHWQ_Count 0x1016
#define DMA_Get_RxBuffinSWQ_Count 0x1017

#define DMA_VERSION 0x06

/* DMA_Set_MaskBytes: destination d is bit (d % 8) of byte d / 8. */
#define DMA_MASK_SIZE 512
#define DMA_MAX_DEST (8 * DMA_MASK_SIZE)

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
/* After 7.5.1 (upstream main, 2026): dma-buf buffers by fd, and what the
 * driver was built with. */
#define GPU_Is_Dma_Buf_Supp 0x800A       /* ret: 1 dma-buf import available */
#define GPU_Is_GpuDirect_Supp 0x800B     /* ret: 1 nvidia_p2p available */
#define GPU_DmaBuf_Add_Wr_Buffer 0x800C  /* arg: dma-buf fd (the value) */
#define GPU_DmaBuf_Add_Rd_Buffer 0x800D  /* arg: dma-buf fd (the value) */
#define GPU_DmaBuf_Remove_Buffers 0x800E /* arg: 0; removes ALL buffers */

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

/* The card's PCI identity: SLAC's vendor id and the GpuAsyncCore card's
 * device id (1a4a:2030), which gpuasync.ko binds and the doctor looks for. */
#define GA_PCI_VENDOR_SLAC 0x1a4a
#define GA_PCI_DEVICE_CARD 0x2030

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
 * extensions".  Version 2 moved the extensions from bare 0x8100-0x8104 to
 * _IOC-encoded numbers (same low 16 bits); a version-1 driver answers the
 * new numbers with ENOTTY, which reads the same.  Version 3 answers
 * upstream's DMA_Set_MaskBytes and DMA_Get_RxBuffin*_Count (the DRP calls
 * them); an older gpuasync.ko answers them with ENOTTY.  Version 4 answers
 * upstream's dma-buf commands of after 7.5.1 (0x800A-0x800E).  Version 5
 * answers GA_Write_Register_Masked.
 */
#define GA_ABI_VERSION 5
#define GA_FEAT_REM_BUFFER (1u << 0)
#define GA_FEAT_ARM_MANY (1u << 1)
#define GA_FEAT_BUFFER_TABLE (1u << 2)
#define GA_FEAT_DMABUF (1u << 3)
#define GA_FEAT_MASKED_WRITE (1u << 4)
#define GA_FEAT_ALL                                                                                \
	(GA_FEAT_REM_BUFFER | GA_FEAT_ARM_MANY | GA_FEAT_BUFFER_TABLE | GA_FEAT_DMABUF |           \
	 GA_FEAT_MASKED_WRITE)

/*
 * Our _IOC type.  Its numbers' low 16 bits are 0x81nn: never one of the
 * generic DMA codes (0x10nn), which the driver matches on the low 16 bits
 * whatever the upper bits hold (upstream's Dma_Ioctl does, and its
 * DMA_Ret_Index carries a count up there), and never an upstream GPU code
 * (0x80nn, matched exactly).  ioctls.def asserts it row by row.
 *
 * Growing a struct of ours: new fields only at the end, and zero must mean
 * "as before"; the row's size becomes the new size and its min_size stays
 * the first size.  The size travels in the number, and the driver accepts
 * every size from min_size to size: it copies what the caller sent and
 * zero-fills the rest (copy_struct_from_user), and copies back only what
 * the caller has room for.  Any other size is another command: ENOTTY, as
 * for any number the driver does not know, so a new library on an old
 * driver sees "not implemented" and falls back.  Reserved and pad fields
 * must be zero (EINVAL otherwise, the kernel log names the field), so
 * they can be given a meaning later.
 */
#define GA_IOC_TYPE 0x81

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

/*
 * GA_Write_Register_Masked: the bits of @mask in the register word at
 * @address take those of @data, the others stay, in one step under the
 * driver's register lock, so a field written beside the driver's own
 * updates of the same word (the control word's counts) loses neither.
 * Address and permission rules are DMA_Write_Register's.
 */
struct ga_reg_masked {
	ga_u64 address; /* in: BAR offset, as DMA_Write_Register's */
	ga_u32 mask;    /* in: the bits to change */
	ga_u32 data;    /* in: their new values (bits outside @mask ignored) */
};
GA_ABI_ASSERT(sizeof(struct ga_reg_masked) == 16, "ga_reg_masked size");

/* ---- the table ------------------------------------------------------------ */

/* Our commands: the number carries direction and argument size. */
#define GA_Get_Abi_Version _IO(GA_IOC_TYPE, 0x00)
#define GA_Rem_Buffer _IOW(GA_IOC_TYPE, 0x01, struct ga_buffer_ref)
#define GA_Arm_Buffers _IOW(GA_IOC_TYPE, 0x02, struct ga_arm_many)
#define GA_Get_Buffer_Table _IOWR(GA_IOC_TYPE, 0x03, struct ga_buffer_table)
#define GA_Add_Dmabuf _IOWR(GA_IOC_TYPE, 0x04, struct ga_dmabuf_add)
#define GA_Write_Register_Masked _IOW(GA_IOC_TYPE, 0x05, struct ga_reg_masked)

/* How a row's number is matched (see GA_IOC_TYPE for why). */
enum ga_abi_kind {
	GA_ABI_GENERIC, /* upstream generic DMA code: the low 16 bits */
	GA_ABI_GPU,     /* upstream GPU code: the whole number */
	GA_ABI_OURS,    /* _IOC-encoded: type, nr and direction; size checked */
};

/* The argument's direction, from the caller's side ("in": the driver reads). */
enum ga_abi_dir {
	GA_DIR_NONE,  /* no argument, or a plain value in the argument */
	GA_DIR_IN,    /* pointer to a struct the driver reads */
	GA_DIR_OUT,   /* pointer to a struct the driver fills */
	GA_DIR_INOUT, /* both */
};

/*
 * Every command gpuasync.ko answers, in number order within each kind, is a
 * row of gpuasync/ioctls.def:
 * GA_DEF_IOCTL(name, argument (text), size, min_size, dir, kind, since,
 * upstream), where
 * name is the macro holding the number, size the argument's bytes (0: none
 * or a value), min_size the first size (see GA_IOC_TYPE), since the
 * GA_ABI_VERSION whose driver first answered this number, and upstream the
 * aes-stream-drivers release that has it ("" for ours).
 */
/* One row as data; each user builds its array with GA_ABI_ROW. */
struct ga_abi_row {
	unsigned int code;
	const char *name;
	const char *arg;
	ga_u32 size, min_size;
	enum ga_abi_dir dir;
	enum ga_abi_kind kind;
	unsigned int since;
	const char *upstream;
};

#define GA_ABI_ROW(name_, arg_, size_, min_, dir_, kind_, since_, up_)                                 \
	{ .code = name_, .name = #name_, .arg = arg_, .size = size_, .min_size = min_,                   \
	  .dir = dir_, .kind = kind_, .since = since_, .upstream = up_ },

/* The _IOC direction bits of a GA_DIR_* (the kernel's "write" is the caller's). */
#define GA_ABI_IOC_DIR(dir)                                                                           \
	((dir) == GA_DIR_NONE ? _IOC_NONE :                                                          \
	 (dir) == GA_DIR_IN  ? _IOC_WRITE :                                                          \
	 (dir) == GA_DIR_OUT ? _IOC_READ : (_IOC_READ | _IOC_WRITE))

/*
 * The rules, per row, at compile time: upstream numbers are bare 16 bits,
 * generic ones 0x10nn, GPU ones 0x80nn; ours carry GA_IOC_TYPE, the row's
 * direction and size, min_size <= size, and low 16 bits outside both
 * upstream ranges (so the generic match can never take them).
 */
#define GA_ABI_CHECK(name_, arg_, size_, min_, dir_, kind_, since_, up_)                               \
	GA_ABI_ASSERT((kind_) == GA_ABI_OURS ?                                                        \
			      _IOC_TYPE(name_) == GA_IOC_TYPE &&                                      \
				      _IOC_DIR(name_) == GA_ABI_IOC_DIR(dir_) &&                      \
				      _IOC_SIZE(name_) == (size_) && (min_) <= (size_) &&             \
				      ((name_) & 0xff00u) != 0x1000u &&                               \
				      ((name_) & 0xff00u) != 0x8000u && sizeof(up_) == 1 \
			      : (name_) <= 0xffffu && (size_) == (min_) &&                            \
				      ((name_) & 0xff00u) ==                                          \
					      ((kind_) == GA_ABI_GENERIC ? 0x1000u : 0x8000u),        \
		      #name_ " breaks the ABI rules (abi.h, GA_IOC_TYPE)");
#define GA_DEF_IOCTL GA_ABI_CHECK
#include <gpuasync/ioctls.def>

/*
 * Does @cmd select @row?  Generic codes on the low 16 bits, GPU codes
 * exactly, ours on everything but the size (the caller checks the size
 * against [min_size, size]: see GA_IOC_TYPE).
 */
static inline int ga_abi_match(const struct ga_abi_row *row, unsigned int cmd)
{
	const unsigned int size_bits = (unsigned int)_IOC_SIZEMASK << _IOC_SIZESHIFT;

	switch (row->kind) {
	case GA_ABI_GENERIC:
		return (cmd & 0xffffu) == row->code;
	case GA_ABI_GPU:
		return cmd == row->code;
	case GA_ABI_OURS:
		return (cmd & ~size_bits) == (row->code & ~size_bits);
	}
	return 0;
}

/* Is @cmd's size one the row accepts?  Always for upstream's rows. */
static inline int ga_abi_size_ok(const struct ga_abi_row *row, unsigned int cmd)
{
	return row->kind != GA_ABI_OURS ||
	       (_IOC_SIZE(cmd) >= row->min_size && _IOC_SIZE(cmd) <= row->size);
}

#endif /* GPUASYNC_ABI_H */
