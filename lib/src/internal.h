/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libgpuasync internals: error reporting, logging, the backend and memory
 * ops tables, and struct ga_dev / struct ga_buf.  Not installed.
 *
 * Locking: dev->lock (a mutex) guards the register read-modify-write, the
 * buffer arrays and counts.  Backends are called with dev->lock held unless
 * an op says otherwise.  Lock order: dev->lock, then any backend-internal
 * lock (the sim's model lock).  The memory layer takes no library lock.
 */
#ifndef GA_INTERNAL_H
#define GA_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "gpuasync/abi.h"
#include "gpuasync/device.h"
#include "gpuasync/sim.h"

/* ---- errors and logging (log.c) ----------------------------------------- */

/* Record an explanation for ga_last_error() in this thread and return @err
 * (a negative errno), so callers write: return ga_err(-EINVAL, "...", ...). */
int ga_err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ga_err_clear(void);
/* stderr logging, only when GPUASYNC_LOG is set in the environment. */
void ga_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Is GPUASYNC_LOG set (for timings worth taking only when logged)? */
bool ga_log_enabled(void);

/* The monotonic clock in nanoseconds and in microseconds (log timings). */
static inline uint64_t ga_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double ga_mono_us(void)
{
	return (double)ga_mono_ns() / 1e3;
}

/* ---- memory layer (mem_host.c, mem_cuda.c) ------------------------------ */

struct ga_mem_block {
	uint64_t dptr; /* device pointer (CUDA) or host address */
	void *host;    /* host-accessible pointer, NULL for device memory */
	size_t size;
	void *priv; /* layer-private */
};

struct ga_mem_ops {
	const char *name; /* "cuda", "host", "stub", "udmabuf" */
	/* 0, or negative errno with ga_err() set.  Memory is zeroed. */
	int (*alloc)(void *ctx, size_t size, struct ga_mem_block *blk);
	void (*free)(void *ctx, struct ga_mem_block *blk);
	int (*read)(void *ctx, const struct ga_mem_block *blk, size_t off, void *dst, size_t len);
	int (*write)(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
		     size_t len);
	/* 128 hex chars + NUL; -ENOTSUP where there is no IPC. */
	int (*ipc_handle)(void *ctx, const struct ga_mem_block *blk, char *hex, size_t len);
	void (*close)(void *ctx);
	/* Optional fast path for the simulated card (NULL in layers without
	 * one).  write_async queues the copy and returns: bytes land in the
	 * order they were queued (payload before header) and every later
	 * read/write/free on this context sees them; sync waits until all
	 * queued writes have landed.  host_alloc gives pinned host memory
	 * that write/write_async copy from without staging; the caller must
	 * not change such memory while a write from it may be queued (call
	 * sync first). */
	int (*write_async)(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
			   size_t len);
	int (*sync)(void *ctx);
	/*
	 * Optional batching for the simulated card's generator (all three or
	 * none).  write_defer is write_async, except that the copy may wait in
	 * a batch until write_flush (or any other call on the context) sends
	 * it: in a batch, every write that is not an 8-byte descriptor lands
	 * before every 8-byte aligned 8-byte write (a descriptor), and each
	 * after all that was queued before the batch; writes within one
	 * class land in any order, so a write overlapping one already in the
	 * batch sends the batch first.  The source is copied before the call
	 * returns (or is pinned host_alloc memory, left unchanged until sync).
	 * write_room says whether a write of @bytes (0 for a pinned source)
	 * can be deferred now without waiting for the GPU (with @batch: and
	 * sent as a batch of its own); with @wait it waits until it can (call
	 * it holding no library lock).  Without
	 * @wait it answers from what write_flush last learned, with no driver
	 * call and no wait for another thread (false when it cannot tell), so
	 * the simulated card may ask holding its model lock.
	 */
	int (*write_defer)(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
			   size_t len);
	int (*write_flush)(void *ctx);
	bool (*write_room)(void *ctx, size_t bytes, bool batch, bool wait);
	/* Optional, with write_defer: defer a write of frame @seq of
	 * @pattern (gpuasync/sim.h, exactly as ga_pattern_fill makes it),
	 * generated where the memory is (a copy in write_defer's terms).
	 * Returns 1 when this layer cannot make that pattern (the caller
	 * fills on the CPU), 0 or a negative errno otherwise. */
	int (*write_pattern)(void *ctx, const struct ga_mem_block *blk, size_t off,
			     enum ga_pattern pattern, uint32_t seq, size_t len);
	/* Optional: @len bytes at @src_off of @src, a block of this context,
	 * to @off of @blk, copied where the memory is (no host copy; with
	 * write_defer: deferred as a copy in its terms).  A replay plays
	 * from a copy of its file held this way (sim_replay.c). */
	int (*write_from)(void *ctx, const struct ga_mem_block *blk, size_t off,
			  const struct ga_mem_block *src, size_t src_off, size_t len);
	int (*host_alloc)(void *ctx, size_t size, void **p);
	void (*host_free)(void *ctx, void *p);
	/* Optional: read the same @len bytes at @off of each of @n blocks into
	 * @dst (n * len bytes, block i at dst + i * len), seeing every write
	 * queued before, as n calls of read would, but waiting once (the
	 * library's batched header reads).  NULL: the caller loops read.
	 * On failure nothing in @dst is to be trusted. */
	int (*read_many)(void *ctx, const struct ga_mem_block *const *blks, unsigned int n,
			 size_t off, void *dst, size_t len);
	/* Optional: make the memory's owner release every pin a driver holds
	 * on @blk (its free callbacks fire), keeping address and contents.
	 * Upstream 7.5's remove-all leaves page tables to those callbacks, so
	 * a buffer registered again after one would otherwise keep the old
	 * pin forever.  NULL where nothing can be done (CUDA: pins go with
	 * cuMemFree, and each registration has its own callback). */
	int (*drop_pins)(void *ctx, struct ga_mem_block *blk);
	/* Optional, for the dmabuf pin path (NULL: this memory has no dma-buf
	 * exporter).  dmabuf_probe: 0 when blocks of this context can be
	 * exported, else a negative errno and what is missing in @why (no
	 * ga_err: the caller decides whether that is an error).
	 * dmabuf_export: a new dma-buf fd (close-on-exec, the caller owns and
	 * closes it) holding @blk, and where the block starts in it; -ENOTSUP
	 * with ga_err() set when this block cannot be exported. */
	int (*dmabuf_probe)(void *ctx, char *why, size_t why_len);
	int (*dmabuf_export)(void *ctx, const struct ga_mem_block *blk, int *fd, uint64_t *offset);
	/* Optional: the GPU's PCI address ("0000:1b:00.0", lower case, as
	 * sysfs names it) into @bdf, 0; for the link metrics. */
	int (*pci_address)(void *ctx, char *bdf, size_t len);
};

/*
 * A memory provider: where buffers come from, chosen once at open.  Each
 * is defined in its own file (memory/) and listed once, in order of
 * preference, in ga_mem_providers (open.c): the first whose conditions
 * hold and whose open succeeds serves the device.
 */
#define GA_MEMP_GPU	0x1 /* GPU memory: only when asked for (use_gpu) */
#define GA_MEMP_DRIVER	0x2 /* only in front of a kernel driver (GA_BE_DRIVER) */
#define GA_MEMP_UDMABUF 0x4 /* no exporter of its own: the dmabuf pin path swaps in udmabuf */
struct ga_mem_provider {
	const char *memory; /* ga_dev_info.memory when chosen: "gpu", "stub", "host" */
	unsigned int flags;
	/* 0 with the ops and context (and, for GPU memory, the GPU's name in
	 * @gpu); else a negative errno and why in @why. */
	int (*open)(const struct ga_dev *dev, const struct ga_mem_ops **ops, void **ctx, char *gpu,
		    size_t gpu_len, char *why, size_t why_len);
	const char *gpu; /* ga_dev_info.gpu when chosen; NULL: open's @gpu */
	/* ga_dev_info.memory_note when chosen after earlier providers said
	 * why not (the %s); note_driver instead in front of a driver. */
	const char *note, *note_driver;
};
extern const struct ga_mem_provider ga_mem_cuda, ga_mem_stub, ga_mem_host;
extern const struct ga_mem_provider *const ga_mem_providers[];

extern const struct ga_mem_ops ga_mem_host_ops;
/* Copies in and out of any block with a host mapping (blk->host), range
 * checked (mem_host.c; the stub layer uses them too). */
int ga_mem_host_check(const struct ga_mem_block *blk, size_t off, size_t len);
int ga_mem_host_read(void *ctx, const struct ga_mem_block *blk, size_t off, void *dst, size_t len);
int ga_mem_host_write(void *ctx, const struct ga_mem_block *blk, size_t off, const void *src,
		      size_t len);
/* The ipc_handle of memory that has none: -ENOTSUP saying what @what is. */
int ga_mem_no_ipc(char *hex, size_t len, const char *what);
/* Upstream's nvidia_p2p_stub memory (mem_stub.c): 0 and the ops when
 * GA_STUB_MEM_PATH can be opened, else a negative errno and why in @why. */
#define GA_STUB_MEM_PATH "/dev/nvidia_p2p_stub_mem"
int ga_mem_stub_open(const struct ga_mem_ops **ops, void **ctx, char *why, size_t why_len);
extern const struct ga_mem_ops ga_mem_stub_ops;
/* Host memory that exports dma-bufs through /dev/udmabuf (mem_udmabuf.c):
 * each block lies in one hugetlb page, so it is contiguous on the bus.
 * 0 and the ops when /dev/udmabuf and a free huge page are there (a test
 * export proves it), else a negative errno and what is missing in @why.
 * @strict (pin=dmabuf): a block that cannot be exported fails to allocate;
 * otherwise it is plain host memory that dmabuf_export refuses. */
#define GA_UDMABUF_PATH "/dev/udmabuf"
int ga_mem_udmabuf_open(bool strict, const struct ga_mem_ops **ops, void **ctx, char *why,
			size_t why_len);
/* Try CUDA (libcuda.so.1 via dlopen, GPU @gpu_index).  On failure returns a
 * negative errno and writes why into @why (the caller falls back to host
 * memory and reports it in ga_dev_info.memory_note). */
int ga_mem_cuda_open(int gpu_index, const struct ga_mem_ops **ops, void **ctx, char *gpu_name,
		     size_t name_len, char *why, size_t why_len);
/* Copies the CUDA context @ctx has made with its kernel (small deferred
 * writes, gathered reads) so far, or -1 when its kernel is not loaded:
 * for tests, which must know which path they exercised. */
long long ga_mem_cuda_kernel_copies(void *ctx);
/* Batches the resident delivery kernel (GPUASYNC_CUDA_RESIDENT) of @ctx
 * has done so far, or -1 when it has none: likewise for tests. */
long long ga_mem_cuda_resident_batches(void *ctx);
/* The resident kernel's work so far: from seeing each batch to its
 * descriptors' stores, summed (GPU clock), and the batches; it stops the
 * kernel for a moment to have it report.  For gpuasync-resident-rt. */
int ga_mem_cuda_resident_work(void *ctx, uint64_t *ns, uint64_t *batches);

/* ---- patterns (pattern.c) ---------------------------------------------- */

/* CRC-32 (IEEE, as zlib's crc32): start with crc 0, feed chunks in order. */
uint32_t ga_crc32(uint32_t crc, const void *buf, size_t len);

/* ---- backends (datadev.c, sim.c) ---------------------------------------- */

/* A block exported as a dma-buf: the fd and where the block starts in it. */
struct ga_dmabuf_ref {
	int fd;
	uint64_t offset;
};

/* What a backend is (struct ga_backend_ops.flags). */
#define GA_BE_DRIVER 0x1 /* a kernel driver pins the memory (memory providers' GA_MEMP_DRIVER) */
#define GA_BE_SIM    0x2 /* the simulated card (GA_CAP_SIM) */

/* A backend: its descriptor and ops in one, defined in its own file and
 * listed once in ga_backends (open.c), which is all that adding one takes. */
struct ga_backend_ops {
	const char *name; /* "datadev", "sim" */
	unsigned int flags;
	/* Is @spec one of ours?  NULL: every spec (the list's last entry). */
	bool (*claims)(const char *spec);
	/* Fill dev->info identity fields (version, max_buffers,
	 * dma_data_bytes, clock_hz) and dev->priv; @spec is the full string.
	 * dev->opts is set before.  open may set dev->info.layout (the sim's
	 * "latency=legacy"); left at GA_LAYOUT_COUNT, open.c derives it from
	 * the version and opts.latency_legacy. */
	int (*open)(struct ga_dev *dev, const char *spec);
	void (*close)(struct ga_dev *dev);
	/* 32-bit word at @off inside the core block (already range-checked). */
	int (*reg_read)(struct ga_dev *dev, uint32_t off, uint32_t *val);
	int (*reg_write)(struct ga_dev *dev, uint32_t off, uint32_t val);
	/* The bits @mask of that word take those of @val, in one step beside
	 * the driver's own updates (gpuasync.ko's GA_Write_Register_Masked);
	 * -EOPNOTSUPP where the driver has no such call; NULL: never. */
	int (*reg_write_masked)(struct ga_dev *dev, uint32_t off, uint32_t mask, uint32_t val);
	/* 32-bit word at @off inside the AxiVersion block (BAR0 + GA_FW_BASE,
	 * @off < GA_FW_SIZE, aligned); NULL where it cannot be reached. */
	int (*fw_read)(struct ga_dev *dev, uint32_t off, uint32_t *val);
	/* Store @val at @off there (a card keeps only the bits of RW rows:
	 * ga_fw_write_mask); NULL where the block cannot be written. */
	int (*fw_write)(struct ga_dev *dev, uint32_t off, uint32_t val);
	int (*map_regs)(struct ga_dev *dev, volatile uint32_t **regs);
	void (*unmap_regs)(struct ga_dev *dev, volatile uint32_t *regs);
	int (*reg_path)(struct ga_dev *dev, char *path, size_t len, uint64_t *off);
	/* GPU_Add_Nvidia_Memory semantics: index = current count of @dir;
	 * programs address (and size) registers and the counts in 0x08.
	 * @blk is the memory being registered (blk->dptr is the address).
	 * @db non-NULL: register it from that dma-buf instead (GA_Add_Dmabuf;
	 * only when has(GA_CAP_DMABUF)); the fd stays the caller's, who
	 * closes it after the call, the driver keeping its own reference. */
	int (*add_buffer)(struct ga_dev *dev, enum ga_dir dir, const struct ga_mem_block *blk,
			  uint32_t size, const struct ga_dmabuf_ref *db, uint64_t *bus_address);
	/* GPU_Rem_Nvidia_Memory: every buffer of both directions. */
	int (*remove_all)(struct ga_dev *dev);
	/* Remove the last buffer of @dir only; NULL when not available, or
	 * -ENOSYS at run time when this device lacks it (buffers/buf_remove_one.c
	 * then emulates it with remove_all and re-adding the others). */
	int (*remove_last)(struct ga_dev *dev, enum ga_dir dir);
	/* Arm write buffers (free list); n may be 1. */
	int (*arm)(struct ga_dev *dev, const uint32_t *indices, unsigned int n);
	/* Engine enable; NULL (or -ENOSYS at run time) = generic
	 * read-modify-write of the enable bit. */
	int (*enable)(struct ga_dev *dev, enum ga_dir dir, bool on);
	/* Add who holds the card to ga_last_error() for an EBUSY @rc (the
	 * driver's owner, where it names one); returns @rc.  NULL: nothing
	 * to add. */
	int (*busy)(struct ga_dev *dev, int rc);
	/* Backend-specific capabilities (GA_CAP_REMOVE_ONE, ...). */
	bool (*has)(struct ga_dev *dev, enum ga_cap cap);
	/* The driver's table of pinned buffers, whole: *@list is malloc'd
	 * (the caller frees it; NULL when *@n is 0), write buffers first,
	 * each direction by index.  NULL, or -ENOTSUP at run time, when the
	 * driver keeps no table (with ga_err() set). */
	int (*pinned)(struct ga_dev *dev, struct ga_pinned **list, unsigned int *n);
	/* The words of the SysMon block at @off[0..n) (bytes from
	 * GA_SYSMON_BASE, aligned, < GA_SYSMON_SIZE) into @val, in one pass;
	 * NULL where the backend cannot reach that part of BAR0. */
	int (*sysmon_read)(struct ga_dev *dev, const uint32_t *off, uint32_t *val, unsigned int n);
	/* The card's hwmon directory named "datadev" (ga_hwmon_find) into
	 * @dir: 0, or -ENOENT when the driver registered none; NULL: never. */
	int (*hwmon_dir)(struct ga_dev *dev, char *dir, size_t len);
};

extern const struct ga_backend_ops ga_backend_datadev;
/* Every backend, the catch-all last (open.c). */
extern const struct ga_backend_ops *const ga_backends[];
/* datadev.c: the one mapping of an ioctl's errno (@err > 0) to a negative
 * errno with an explanation, per command; exposed for unit tests. */
int ga_datadev_error(unsigned int cmd, int err);
const char *ga_datadev_cmd_name(unsigned int cmd);
/* Does upstream's Git Version ("v7.6.0", "v7.5.2-4-gabc") name a release
 * after 7.5.1, so that it answers the dma-buf commands 0x800A-0x800E? */
bool ga_datadev_gitv_has_dmabuf(const char *gitv);
extern const struct ga_backend_ops ga_backend_sim;
/* sysmon.c: the hwmon directory named "datadev" among @devdir/device/hwmon/
 * and @devdir/hwmon/ (@devdir: a device's sysfs directory) into @dir: 0,
 * or -ENOENT.  Freeing what ga_dev_sysmon kept (ga_dev_close). */
int ga_hwmon_find(const char *devdir, char *dir, size_t len);
void ga_telemetry_free(struct ga_dev *dev);
/* observe.c: make dev->be a copy of itself whose every changing op fails
 * with EROFS (opts.observe). */
void ga_observe_wrap(struct ga_dev *dev);

/* ---- between dev.c, open.c and buffers/ (dev->lock held) -------------- */

/* Field @id (instance @index) through the table; errors explained. */
int ga_field_read_locked(struct ga_dev *dev, enum ga_reg_id id, unsigned int index, uint32_t *val);
/* 0 while the card answers; -ENOLINK, explained, when its link is down:
 * every register then reads 0xffffffff, which the version word (bits
 * 31:8 always 0) never does on a live card.  Public calls that write to the
 * card check it first, so nothing is written into a dead link. */
int ga_link_check_locked(struct ga_dev *dev);
/* Read-modify-write of the field (a plain store for full-word fields and
 * WO strobes); -ERANGE when @val does not fit.  No access-mode check. */
int ga_field_write_locked(struct ga_dev *dev, enum ga_reg_id id, unsigned int index, uint32_t val);
int ga_enable_locked(struct ga_dev *dev, enum ga_dir dir, bool on);
/* buffers/buf_register.c: remove every buffer (engines off first), free memory. */
int ga_buf_destroy_all_locked(struct ga_dev *dev);

struct ga_buf {
	struct ga_dev *dev;
	enum ga_dir dir;
	unsigned int index;
	struct ga_mem_block mem;
	uint64_t bus_address;
	uint32_t card_address_lo; /* the card's address register after the add */
	bool armed;		  /* we armed it and have not seen it fill */
	bool send_busy;		  /* read queued, completion not seen */
	bool error;		  /* memory invalidated or last frame errored */
	bool gone;		  /* no longer registered with the driver (failed re-add) */
	bool dmabuf;		  /* registered from a dma-buf (else by address, p2p) */
};

struct ga_dev {
	pthread_mutex_t lock; /* see the top of this file */
	const struct ga_backend_ops *be;
	/* Which backend this is (be may point at be_ro, its observe-only
	 * copy: observe.c). */
	const struct ga_backend_ops *kind;
	struct ga_backend_ops be_ro;
	void *priv; /* backend state */
	const struct ga_mem_ops *mem;
	void *mem_ctx;
	const struct ga_mem_provider *memp; /* which provider mem came from; NULL: none */
	struct ga_dev_info info;
	struct ga_open_opts opts;
	/* Buffers go to the driver as dma-bufs (info.pin "dmabuf"), set once
	 * at open (open.c); with opts.pin auto a buffer that cannot be
	 * exported still goes p2p. */
	bool dmabuf;
	struct ga_buf *bufs[2][GA_MAX_BUFFERS]; /* [dir][index] */
	unsigned int nbufs[2];
	/* Times the card was found without our registration (buf_state.c);
	 * written under lock, read without (a statistic). */
	unsigned int lost;
	/* Frames the card counted while an add of ours had the write engine
	 * stopped or the payload limit cleared (buffers/buf_card.c); written
	 * under lock, read without. */
	uint64_t add_stopped_frames;
	/* Memory the driver still holds although our add failed after its
	 * ioctl succeeded (upstream cannot remove one buffer): freed only
	 * after the next remove-all (buf_register.c).  add_kept is how a
	 * backend's add_buffer says so. */
	struct ga_mem_block *parked;
	unsigned int nparked;
	bool add_kept;
	/* Where the SysMon readings come from, found at the first
	 * ga_dev_sysmon (sysmon.c, its own lock); NULL before. */
	struct ga_telemetry *telemetry;
};

/* Is the device's memory GPU memory?  (Inline: the buffer, device and
 * backend files ask, and none of them should need open.c for it.) */
static inline bool ga_mem_is_gpu(const struct ga_dev *dev)
{
	return dev->memp && (dev->memp->flags & GA_MEMP_GPU);
}

#endif /* GA_INTERNAL_H */
