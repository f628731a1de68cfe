/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libgpuasync device API: one interface over every backend.
 *
 *   struct ga_dev *dev;
 *   int rc = ga_dev_open("sim:version=4,max_buffers=8", &dev);
 *   ga_dev_enable(dev, GA_DIR_WRITE, true);
 *   ga_dev_close(dev);
 *
 * Device strings:
 *   /dev/datadev_N            the upstream datadev driver or gpuasync.ko
 *   sim[:key=value,...]       the simulated card (see gpuasync/sim.h)
 *
 * Conventions (whole library): every call returns 0 (or a count) on
 * success and a negative errno on failure; handles come back through
 * out-parameters.  After a failure ga_last_error() returns an explanation
 * for the calling thread.  Nothing is printed unless GPUASYNC_LOG is set.
 *
 * Errno choices, the same in every call:
 *   -EINVAL  malformed request: NULL, misaligned raw offset, wrong
 *            direction, a buffer index that is not the next one, bad size
 *   -EOVERFLOW a 64-bit register read through the 32-bit ga_reg_read
 *            once its value needs more than 32 bits
 *   -ERANGE  position or value outside what exists: register instance,
 *            raw offset, buffer bytes, a value wider than its field
 *   -ENOENT  register absent from the running firmware, unknown name,
 *            no such device path
 *   -EACCES  writing a read-only field, reading a write-only strobe
 *   -EBUSY   buffer not the last one, armed/queued while its engine runs,
 *            engines on during an emulated removal, core owned elsewhere
 *   -ENOSPC  every buffer the firmware supports is in use
 *   -ENOTSUP not possible here: IPC on host memory, driver without GPU
 *            support (upstream's 524), no register mapping
 *   -ENODEV  not a datadev device, or GpuAsync disabled on the card
 *   -EFAULT  the driver could not pin the memory (upstream's bare -1)
 *   -EEXIST  the driver holds buffers registered by someone else
 *   -ENOLINK the card's link is down (every register reads 0xffffffff):
 *            register writes, enables, buffer creation, arming and sends
 *            are refused before anything is written; a register read that
 *            finds all ones while the link is down fails the same way
 *            (no value), and buffers are not taken for lost
 * The upstream driver's bare -1 (errno EPERM) never reaches the caller as
 * EPERM: it is translated per ioctl, with the explanation in ga_last_error.
 *
 * Thread safety: a struct ga_dev may be used from many threads at once.
 * All ga_dev_*, ga_reg_*, ga_buf_* calls take the device lock where they
 * touch shared state; register read-modify-write is atomic with respect to
 * other calls on the same device.  ga_dev_close() must not race with other
 * calls on the same device (the caller stops its threads first).
 *
 * Order: ga_dev_open -> ga_buf_create ... ga_buf_destroy -> ga_dev_close.
 * ga_dev_close destroys buffers still alive (GPU memory freed, pins
 * released, address registers zeroed).
 */
#ifndef GPUASYNC_DEVICE_H
#define GPUASYNC_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuasync/axiversion.h"
#include "gpuasync/frame.h"
#include "gpuasync/regs.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ga_dev;
struct ga_buf;

/* Text explaining the last failed call in this thread ("" if none). */
const char *ga_last_error(void);

/* ---- open / close -------------------------------------------------------- */

struct ga_open_opts {
	/* Force GA_LAYOUT_V4_LEGACY latency offsets on version 4/5. */
	bool latency_legacy;
	/* CUDA device ordinal for GPU memory; -1 = host memory only. */
	int gpu_index;
	/* Allow GPU memory (falls back to host memory when none present). */
	bool use_gpu;
	/* Where GpuAsyncCore sits in the card's BAR0, for an image that does
	 * not put it at 0x28000; 0: where the driver has it (gpuasync.ko's core_offset,
	 * 0x28000 on upstream's datadev).  The simulated card takes it from
	 * its spec (core_offset=). */
	uint32_t core_offset;
	/* How buffers reach the driver (enum ga_pin below); GA_PIN_AUTO
	 * (0) when left out. */
	int pin;
	/* Observe only: the device is opened read-only, its registers mapped
	 * PROT_READ, and every call that would add, arm or remove a buffer,
	 * switch an engine or write a register fails with EROFS, so another
	 * process's set-up is never changed.  No memory layer is opened. */
	bool observe;
};
#define GA_OPEN_OPTS_DEFAULT                                                                       \
	{ .latency_legacy = false, .gpu_index = 0, .use_gpu = true, .pin = GA_PIN_AUTO }

/*
 * The pin path: how a buffer's memory is handed to the driver.
 *   p2p     GPU_Add_Nvidia_Memory with the buffer's address: the driver pins
 *           it (nvidia_p2p on a real GPU, a stub in the emulators).
 *   dmabuf  the memory layer exports the buffer as a dma-buf (CUDA:
 *           cuMemGetHandleForAddressRange; host memory: /dev/udmabuf over a
 *           hugetlb memfd) and GA_Add_Dmabuf hands the fd to gpuasync.ko,
 *           which keeps its own reference; the library closes its fd.
 *   auto    dmabuf when the memory can be exported and the driver has
 *           GA_Add_Dmabuf (the simulated card: when the memory exports),
 *           p2p otherwise; decided once at open, then per buffer: a buffer
 *           that cannot be exported (host memory larger than a huge page)
 *           goes p2p.
 * With GA_PIN_DMABUF, ga_dev_open_opts fails with -ENOTSUP, explained,
 * when the memory or the driver lacks what it needs, and ga_buf_create
 * fails (-EINVAL, -ENOMEM, explained) for a buffer that cannot be exported.
 * ga_dev_info.pin says which path was chosen, pin_note why.
 */
enum ga_pin {
	GA_PIN_AUTO,
	GA_PIN_P2P,
	GA_PIN_DMABUF,
	GA_PIN_COUNT
};
/* "auto", "p2p", "dmabuf"; NULL for anything else. */
const char *ga_pin_name(enum ga_pin pin);
/* The name as ga_pin_name spells it (blanks around and one trailing newline
 * allowed); -EINVAL with an explanation (ga_last_error) otherwise. */
int ga_pin_parse(const char *s, enum ga_pin *out);

int ga_dev_open(const char *spec, struct ga_dev **out);
int ga_dev_open_opts(const char *spec, const struct ga_open_opts *opts,
		     struct ga_dev **out);
void ga_dev_close(struct ga_dev *dev);

/* ---- identity and capabilities ------------------------------------------ */

enum ga_cap {
	GA_CAP_SUPPORTED,      /* GpuAsync present and enabled on this card */
	GA_CAP_REG_MMAP,       /* register block can be mapped */
	GA_CAP_REMOVE_ONE,     /* a single (last) buffer can be removed */
	GA_CAP_ARM_MANY,       /* many buffers armed in one call */
	GA_CAP_BUFFER_TABLE,   /* driver reports pinned buffers */
	GA_CAP_ENABLE_IOCTL,   /* GPU_Enable_Tx/Rx exist (pre-release ABI) */
	GA_CAP_GPU_MEMORY,     /* buffers are real CUDA device memory */
	GA_CAP_SIM,            /* simulated card: gpuasync/sim.h applies */
	GA_CAP_FIRMWARE_ID,    /* AxiVersion identity readable (ga_fw_read) */
	GA_CAP_DMABUF,         /* the driver registers dma-bufs (GA_Add_Dmabuf, or
				* GPU_DmaBuf_Add_Wr/Rd_Buffer: GA_CAP_DMABUF_WHOLE) */
	GA_CAP_PINNED_LIST,    /* ga_dev_pinned works: the driver's table, or what
				* upstream's datadev publishes in /proc/datadev_N */
	GA_CAP_ADD_LIVE,       /* a buffer is added while frames flow: the add
				* programs the new slot before the count that lets
				* the engine use it and stops nothing (the simulated
				* card, gpuasync.ko; not upstream's datadev) */
	GA_CAP_DMABUF_WHOLE,   /* the driver takes a whole dma-buf by its fd
				* (upstream's GPU_DmaBuf_Add_Wr/Rd_Buffer, after
				* 7.5.1: it answers GPU_Is_Dma_Buf_Supp with 1) */
	GA_CAP_GPUDIRECT,      /* the driver pins GPU memory by address
				* (nvidia_p2p, GPU_Add_Nvidia_Memory): it answers
				* GPU_Is_GpuDirect_Supp with 1, or predates it */
	GA_CAP_COUNT
};

struct ga_dev_info {
	char backend[16];        /* "sim" or "datadev" */
	char path[128];          /* device path or sim spec */
	unsigned int version;    /* firmware version (0 = none) */
	enum ga_layout layout;
	unsigned int max_buffers;
	unsigned int dma_data_bytes;
	uint64_t clock_hz;       /* latency counter clock */
	char gpu[128];           /* GPU name, or "none (host memory)" */
	char memory[16];         /* buffers in: "gpu" (CUDA), "stub" (upstream's
				  * nvidia_p2p_stub, emulator only) or "host" */
	char memory_note[192];   /* why GPU memory is not used, if it is not */
	char clock_note[96];     /* why clock_hz is an assumed default, if it is */
	char pin[8];             /* the pin path chosen at open: "dmabuf" or "p2p" */
	char pin_note[256];      /* why that path (what the other one lacks) */
	char gpu_pci[16];        /* the GPU's PCI address (0000:1b:00.0) where the memory
				  * provider knows it (CUDA), else "" */
};

int ga_dev_info(struct ga_dev *dev, struct ga_dev_info *info);
bool ga_dev_has(struct ga_dev *dev, enum ga_cap cap);
enum ga_layout ga_dev_layout(struct ga_dev *dev);

/* ---- link and firmware identity ----------------------------------------- */

/* 1 while the card answers, 0 when its link is down (every register reads
 * 0xffffffff: PCIe link lost, card off or reloading), or a negative errno.
 * ga_dev_open fails with -ENOLINK on a card whose link is down. */
int ga_dev_link(struct ga_dev *dev);
/* AxiVersion field @id (gpuasync/axiversion.h) as text, no newline, into
 * @buf (GA_FW_TEXT_MAX bytes hold any field).  -ENOTSUP without
 * GA_CAP_FIRMWARE_ID, -ENOLINK when the link is down. */
int ga_fw_read(struct ga_dev *dev, enum ga_fw_id id, char *buf, size_t len);
/* Write @value into read-write AxiVersion field @id (GA_FWA_RW rows:
 * scratch_pad), read-modify-write of its word under the device lock.
 * -EACCES for an identity (read-only) row, -ERANGE for a value wider than
 * the field, -ENOTSUP where the backend cannot write the block, -ENOLINK
 * when the link is down; nothing is written then. */
int ga_fw_write(struct ga_dev *dev, enum ga_fw_id id, uint32_t value);

/* ---- registers ----------------------------------------------------------- */

/* Read/write a field by id; @index selects the buffer for per-buffer rows.
 * Writes validate the value against the field width (-ERANGE), the access
 * mode (-EACCES for RO) and do read-modify-write under the device lock, or,
 * where gpuasync.ko has it, one masked write under the driver's lock (so a
 * count the driver keeps in the same word is never lost).  An engine
 * enable (write_enable, read_enable) is switched as ga_dev_enable does. */
int ga_reg_read(struct ga_dev *dev, enum ga_reg_id id, unsigned int index,
		uint32_t *val);
int ga_reg_write(struct ga_dev *dev, enum ga_reg_id id, unsigned int index,
		 uint32_t val);
/* The value a row stands for, whole: both words of a 64-bit row
 * (GA_F_U64: stream monitor frame counts and bandwidths), field + 1 for a
 * count kept as a last index (GA_F_PLUS_ONE: write_buffers).  ga_reg_read
 * gives the same value, or -EOVERFLOW once it needs more than 32 bits. */
int ga_reg_read64(struct ga_dev *dev, enum ga_reg_id id, unsigned int index,
		  uint64_t *val);
/* Same, by name ("rx_frame_count"). */
int ga_reg_read_name(struct ga_dev *dev, const char *name, unsigned int index,
		     uint32_t *val);
int ga_reg_write_name(struct ga_dev *dev, const char *name, unsigned int index,
		      uint32_t val);
/* Raw 32-bit word at a byte offset inside the core block (4-byte aligned,
 * < GA_CORE_SIZE): -EINVAL when misaligned, -ERANGE when outside. */
int ga_reg_read_raw(struct ga_dev *dev, uint32_t offset, uint32_t *val);
int ga_reg_write_raw(struct ga_dev *dev, uint32_t offset, uint32_t val);

/* Map the register block (GA_CORE_SIZE bytes) into this process.  For the
 * simulated card this is its shared-memory file; another process can map
 * it too through ga_dev_reg_path().  ga_dev_unmap_regs before close (each
 * map needs its unmap).  A simulated card opened with trap=yes installs
 * SIGSEGV and SIGTRAP handlers from the first map to the last unmap, and
 * refuses (-EBUSY) where the program has a handler of its own (sim.h). */
int ga_dev_map_regs(struct ga_dev *dev, volatile uint32_t **regs);
void ga_dev_unmap_regs(struct ga_dev *dev, volatile uint32_t *regs);
/* A path another process can open and mmap (size GA_CORE_SIZE, offset
 * @offset) to reach the same registers: "/dev/shm/..." or "/dev/datadev_0". */
int ga_dev_reg_path(struct ga_dev *dev, char *path, size_t len, uint64_t *offset);

/* ---- buffers ------------------------------------------------------------- */

enum ga_dir {
	GA_DIR_WRITE, /* FPGA->GPU: the firmware writes into it */
	GA_DIR_READ,  /* GPU->FPGA: the firmware reads from it */
};

enum ga_buf_state {
	GA_BUF_IDLE,  /* registered, not armed, nothing landed */
	GA_BUF_FREE,  /* armed: on the free list, waiting for a frame */
	GA_BUF_READY, /* a frame landed (write) / read completed (read) */
	GA_BUF_BUSY,  /* read queued, not yet completed */
	GA_BUF_ERROR, /* last frame had a non-zero result, or memory went away */
};
const char *ga_buf_state_name(enum ga_buf_state s);

/* The decoded 8-byte descriptor the firmware writes at buffer offset 0,
 * struct ga_header, and its codec ga_header_encode/decode: gpuasync/frame.h. */

/*
 * Create buffer @index in direction @dir of @size bytes in all (a multiple
 * of 64 KiB, as the RDMA pinning requires).  The header sits at +0 and the
 * payload at +dma_data_bytes, so a frame carries at most
 * size - dma_data_bytes bytes (write_max_size is set to that; upstream's add
 * ioctl would set it to size and let the card write past the end).
 * Upstream assigns indices in call order, so @index
 * must equal the number of buffers already in that direction: -EINVAL
 * otherwise, with an explanation.  V4 write buffers share one size:
 * -EINVAL when @size differs from the existing ones.  -ENOSPC when
 * max_buffers are in use.  The engine enable bits are left as they were
 * (upstream main's add ioctl sets them; they are put back).
 */
int ga_buf_create(struct ga_dev *dev, enum ga_dir dir, unsigned int index,
		  size_t size, struct ga_buf **out);
/* Release a buffer.  Only the last index can go on its own (-EBUSY for
 * others, explained); the engine must not have it armed (-EBUSY).  On a
 * driver without per-buffer removal (upstream) this removes all buffers and
 * registers the others again with the same memory, re-arming those that
 * were armed; that needs both engines off (-EBUSY otherwise).  A handle is
 * invalid once destroyed. */
int ga_buf_destroy(struct ga_buf *buf);
/* Remove every buffer of the device (the upstream all-at-once path).  The
 * driver is asked even when this handle has none, which clears buffers an
 * earlier process left registered (ga_buf_create then fails with -EEXIST on
 * datadev).  Engines are turned off first. */
int ga_buf_destroy_all(struct ga_dev *dev);

struct ga_buf *ga_buf_get(struct ga_dev *dev, enum ga_dir dir, unsigned int index);
unsigned int ga_buf_count(struct ga_dev *dev, enum ga_dir dir);

struct ga_buf_info {
	enum ga_dir dir;
	unsigned int index;
	size_t size;           /* bytes registered (header area included) */
	size_t payload_max;    /* size - dma_data_bytes */
	uint64_t gpu_address;  /* device pointer (or host address) */
	uint64_t bus_address;  /* address programmed into the card */
	bool gpu_memory;       /* CUDA device memory vs host memory */
	enum ga_buf_state state;
	bool dmabuf;           /* registered as a dma-buf (else p2p) */
};
int ga_buf_info(struct ga_buf *buf, struct ga_buf_info *info);
/* ga_buf_info of every buffer of @dir, by index, with one batched read of
 * their headers (one wait for GPU memory instead of one per buffer): the
 * first min(@cap, total) go to @out, and *@count is the total (so cap 0
 * with @out NULL counts).  0 or a negative errno; thread-safe. */
int ga_buf_info_all(struct ga_dev *dev, enum ga_dir dir, struct ga_buf_info *out, unsigned int cap,
		    unsigned int *count);

/* How many times the card was found no longer holding our buffers: another
 * program removed them all (upstream 7.4 has no owner), or the driver tore
 * every buffer down when one buffer's memory went away (upstream 7.5).
 * Checked on every state read, arm and send (the counts in 0x08 and write
 * buffer 0's address); the buffers are then ERROR for good: destroy them
 * (that works) before creating new ones. */
unsigned int ga_dev_registrations_lost(struct ga_dev *dev);

/* Frames the card counted (rx_frame_count) while a buffer add had the write
 * engine stopped or its payload limit cleared, summed over every add: on
 * a device without GA_CAP_ADD_LIVE (upstream's datadev: 7.5 turns both
 * engines off for the add, 7.4 needs the limit cleared, so frames are
 * dropped or cut to 1 byte).  An upper bound: a frame that landed just
 * before the driver stopped the engine is counted too.  Always 0 where
 * adds run live.  Thread-safe. */
uint64_t ga_dev_add_stopped_frames(struct ga_dev *dev);

/* Wait until every write the card has queued into buffer memory so far has
 * landed (GPU memory: the CUDA layer's copy stream drained; at once on host
 * memory).  Needs no buffer: a reader of buffers can wait here before it
 * takes its own locks, so that its reads then find little to wait for.
 * 0, or a negative errno.  Thread-safe. */
int ga_dev_sync(struct ga_dev *dev);

/* Buffers the card holds that this device did not register, per direction
 * (@count[GA_DIR_WRITE], @count[GA_DIR_READ]): another program's, or left
 * by one that exited without removing them (upstream's datadev keeps them
 * after close).  Read from the ring sizes in 0x08 and slot 0's address, so
 * it is a lower bound while ours and others' mix.  ga_buf_create refuses
 * (-EBUSY, changing nothing) while the count of its direction is not 0;
 * ga_buf_destroy_all takes them back where the driver lets any process
 * remove everything (upstream 7.4).  0 or a negative errno. */
int ga_dev_foreign_buffers(struct ga_dev *dev, unsigned int count[2]);

/* Arm a write buffer (free list).  The 8-byte header (doorbell at +4
 * included) is cleared first, so a doorbell seen later is a new frame.
 * -EINVAL for a read buffer. */
int ga_buf_arm(struct ga_buf *buf);
/* Arm many write buffers at once (one ioctl on gpuasync.ko); -ERANGE when
 * an index is not a created write buffer (then nothing is armed). */
int ga_buf_arm_many(struct ga_dev *dev, const unsigned int *indices, unsigned int n);
/* Queue a GPU->FPGA read of @bytes from read buffer @buf (clears its
 * completion word, then writes the read-size register).  @bytes must be
 * 1..payload_max (-EINVAL for 0, -ERANGE above).  On V1 firmware the
 * payload starts at +0 and there is no completion word, so the state stays
 * IDLE. */
int ga_buf_send(struct ga_buf *buf, uint32_t bytes);

/* Read/write buffer memory (header area included: offset 0 = header).
 * Errno convention for positions: a range outside the object is -ERANGE
 * (buffer bytes, register index, raw offset, values too wide), a malformed
 * request is -EINVAL (NULL, misaligned, wrong direction, wrong index
 * order).  These two calls take no lock; do not destroy the buffer while
 * they run. */
int ga_buf_read(struct ga_buf *buf, size_t offset, void *dst, size_t len);
int ga_buf_write(struct ga_buf *buf, size_t offset, const void *src, size_t len);
int ga_buf_header(struct ga_buf *buf, struct ga_header *h);

/* CUDA IPC handle (64 bytes) as 128 hex chars + NUL; -ENOTSUP on host memory. */
int ga_buf_ipc_handle(struct ga_buf *buf, char *hex, size_t len);

/* Engines (write = FPGA->GPU, read = GPU->FPGA). */
int ga_dev_enable(struct ga_dev *dev, enum ga_dir dir, bool on);

/* ---- pinned buffers (the driver's table) --------------------------------- */

/* One buffer as the driver holds it pinned and programmed into the card. */
struct ga_pinned {
	enum ga_dir dir;
	unsigned int index;
	uint64_t gpu_address; /* the address the buffer was registered with */
	uint64_t bus_address; /* address programmed into the card */
	size_t size;          /* bytes registered */
	unsigned int pages;   /* 64 KiB GPU pages pinned */
	int owner;            /* thread group (process id) that registered it */
	bool invalidated;     /* the GPU memory went away under the pin */
	bool dmabuf;          /* registered as a dma-buf: gpu_address is then the
			       * offset into the dma-buf (GA_BUF_DMABUF) */
	/* From upstream's /proc/datadev_N: gpu_address and pages are unknown
	 * (0); owner is 7.5's "Owning Process" (0 on 7.4, which has none). */
	bool from_proc;
};

/*
 * Read back the driver's table of pinned buffers: write buffers first, then
 * read buffers, each by index.  Up to @cap entries are copied to @out (NULL
 * is allowed when @cap is 0) and *@count is set to how many exist, which
 * may exceed @cap: call again with a bigger array to see them all.  The
 * table is the driver's, so it also lists buffers other processes
 * registered (see owner).  A buffer of this handle that an entry reports
 * invalidated is marked: its state becomes GA_BUF_ERROR.  -ENOTSUP, with
 * an explanation, when the driver keeps no such table (upstream datadev:
 * see GA_CAP_BUFFER_TABLE); -EINVAL when @count is NULL or @out is NULL
 * with @cap > 0.  Thread-safe (takes the device lock).
 */
int ga_dev_pinned(struct ga_dev *dev, struct ga_pinned *out, unsigned int cap,
		  unsigned int *count);

#ifdef __cplusplus
}
#endif
#endif /* GPUASYNC_DEVICE_H */
