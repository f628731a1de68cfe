/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The buffer layer of gpuasync.ko: what a card, an open file and a
 * registered buffer are, and what every way of registering a buffer sits on
 * (ga_buf.c): register helpers, the card's buffer table (a slot, the
 * commit, taking buffers out), programming a buffer and stopping DMA to it,
 * and the copy of an ioctl argument.  The two pin paths (ga_p2p.c,
 * ga_dmabuf.c) and the driver above them (ga_drv.c) include this; nothing
 * here calls up into them.  A card is a register window ("BAR0") reached
 * through struct ga_card_ops: ioremapped memory for a real PCI card, kernel
 * memory run by the firmware model for an emulated one.  Everything above
 * the ops (ioctls, pinning, buffers, ownership) is the same for both.
 */
#ifndef GA_BUF_H
#define GA_BUF_H

#include <linux/cdev.h>
#include <linux/completion.h>
#include <linux/device.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/sysfs.h>
#include <linux/types.h>
#include <linux/uaccess.h>

#include "gpuasync/abi.h"
#include "gpuasync/regs.h"

struct ga_card;

/* A number for each command gpuasync/ioctls.def lists, in its order: the
 * index of its counter in ga_card.cmds. */
enum ga_cmd {
#define GA_DEF_IOCTL(name, ...) GA_CMD_##name,
#include <gpuasync/ioctls.def>
	GA_NR_CMDS
};
struct vm_area_struct;
struct dma_buf;
struct dma_buf_attachment;
struct proc_dir_entry;
struct sg_table;

struct ga_card_ops {
	/* 32-bit access at byte offset @off of BAR0 (already range-checked). */
	u32 (*read32)(struct ga_card *card, u32 off);
	void (*write32)(struct ga_card *card, u32 off, u32 val);
	/*
	 * Optional: the two words at @off (low) and @off + 4 (high) as one
	 * update, so the card never sees half an address (a disabled core
	 * writes a header to write address 0 for every incoming frame).
	 */
	void (*write64)(struct ga_card *card, u32 off, u64 val);
	/* Map BAR0 bytes [bar_off, bar_off + vma size) into @vma. */
	int (*mmap)(struct ga_card *card, struct vm_area_struct *vma, u64 bar_off);
	/*
	 * Optional: return once no DMA started before the call can still be
	 * in flight (the emulated card's DMA is synchronous).  Without it,
	 * versions without active bits get a fixed wait (versions.def, or the
	 * module parameter quiesce_ms).
	 */
	void (*dma_barrier)(struct ga_card *card);
	/* Stop background work (emulated card thread); buffers are gone. */
	void (*stop)(struct ga_card *card);
	/* Free what priv holds, with the last reference to the card. */
	void (*destroy)(struct ga_card *card);
	/* Optional: sysfs attributes this kind of card adds to its directory. */
	const struct attribute_group *group;
};

enum ga_pin_state {
	GA_PIN_SETUP,       /* being pinned by the add ioctl */
	GA_PIN_LIVE,        /* pinned and mapped: the normal path owns it */
	GA_PIN_RELEASING,   /* normal path unmapped it and will put_pages */
	GA_PIN_INVALIDATED, /* the free callback tore it down */
};

/* One registered GPU buffer. */
struct ga_buf {
	struct ga_card *card;
	struct ga_file *owner; /* file that registered it */
	pid_t tgid;            /* thread group that registered it */
	bool write;            /* FPGA->GPU (write) list */
	u32 index;
	u64 gpu_address;       /* as passed by user space (dma-buf: the offset) */
	u32 size;
	u64 pin_va, pin_len;   /* the 64 KiB aligned range pinned */
	u64 bus;               /* programmed into the card */
	u32 pages;

	/*
	 * lock guards state, pt and map.  It is the only lock the free
	 * callback takes (plus the leaf card->reg_lock), because NVIDIA calls
	 * it with its own locks held: the normal path therefore calls
	 * nvidia_p2p_get_pages and put_pages without it, and dma_map_pages
	 * and dma_unmap_pages under it with nv_caller set, so a callback they
	 * make on this thread does not wait for itself; ga_p2p_pin() says
	 * what mapping under it relies on.
	 */
	struct mutex lock;
	enum ga_pin_state state;
	struct nvidia_p2p_page_table *pt;
	struct nvidia_p2p_dma_mapping *map;
	/*
	 * Registered from a dma-buf (GA_Add_Dmabuf) instead of nvidia_p2p:
	 * our reference, our dynamic attachment, and its mapping while LIVE.
	 * The dma-buf's reservation lock guards sgt and orders above
	 * buf->lock (the exporter calls move_notify holding it).
	 */
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	struct list_head win_node; /* card->windows while the card may DMA */
	/* Re-entry guard: task inside an nvidia_p2p_* call holding lock. */
	struct task_struct *nv_caller;
	/* Completed by the callback after its last access to this struct. */
	struct completion cb_done;
	struct list_head rm_node; /* on a removal list (card->lock) */
};

/* Per open file. */
struct ga_file {
	struct ga_card *card;
	/* Destinations this file reserved (DMA_Set_MaskBytes, upstream's
	 * byte layout); card->lock. */
	u8 dests[DMA_MASK_SIZE];
};

struct ga_card {
	struct kref ref; /* the registration and every open file */
	const struct ga_card_ops *ops;
	void *priv;
	struct pci_dev *pdev;  /* NULL for an emulated card */
	bool emulated;
	bool dead;             /* unregistered: files get -ENODEV */
	u32 bar_len;
	u32 core_offset;       /* GpuAsyncCore inside BAR0 (core_offset parameter) */
	int minor;
	char name[32];
	/* Allocated on its own (cdev_alloc): an open file's inode may hold it
	 * past the card's last reference (fput drops it after ->release).
	 */
	struct cdev *cdev;
	struct device *dev;
	struct proc_dir_entry *proc; /* /proc/<name>: upstream's status text */
	const struct attribute_group *groups[3]; /* the driver's, ops->group, NULL */
	/* The device the card DMAs as (dma-buf attachments): the PCI
	 * function, or the emulated card's platform device. */
	struct device *dma_dev;

	/* Identity, read once at creation. */
	bool gpu_en;           /* GpuAsyncCore present and version supported */
	const char *gpu_off_why; /* when !gpu_en: why (for the log) */
	unsigned int version;
	enum ga_layout layout;
	unsigned int max_buffers;
	unsigned int dma_data_bytes;
	/* Telemetry (docs/firmware.md §2.6): the BAR0 memory-map version,
	 * and the SysMon's hwmon device and family; hwmon NULL: none. */
	unsigned int map_version;
	struct device *hwmon;
	int sysmon_family;

	/*
	 * lock guards the buffer arrays, the counts, the owner and the held
	 * destinations.  Order:
	 * card->lock, then buf->lock, then reg_lock (then the emulated card's
	 * model lock, then the NVIDIA stub's lock).
	 */
	struct mutex lock;
	struct ga_buf **bufs[2]; /* [0] read list, [1] write list; max_buffers slots */
	u32 count[2];            /* highest live index + 1 */
	pid_t owner_tgid;        /* 0: unowned */
	u8 dests[DMA_MASK_SIZE]; /* destinations some open file holds */
	/* reg_lock: read-modify-write of shared register words (leaf). */
	struct mutex reg_lock;
	atomic_t quiesce_timeouts;
	/*
	 * The bus ranges of dma-buf buffers the card may reach: what an
	 * IOMMU would allow.  The emulated card's DMA goes through them
	 * (ga_dmabuf_card_dma); win_lock is a leaf below the model lock.
	 */
	struct mutex win_lock;
	struct list_head windows;
	atomic64_t dma_faults; /* emulated DMA to no window and no stub mapping */
	/*
	 * DMA_Write_Register calls that reached the card (sysfs
	 * user_reg_writes): shows a monitoring process wrote nothing.
	 */
	atomic64_t user_reg_writes;
	/* Longest wait for the card to go idle inside a free callback (us);
	 * racy max: callbacks of one card rarely overlap, and it is a gauge. */
	atomic64_t cb_quiesce_max_us;
	/* Commands this card answered, by row (debugfs gpuasync/<name>/commands):
	 * which of upstream's paths a program took, told by the driver. */
	atomic64_t cmds[GA_NR_CMDS];
	struct dentry *debugfs;
};

/*
 * The argument of one of our commands (GA_ABI_OURS), whose size is in @cmd:
 * the caller's bytes, the rest of @k zeroed (an older, smaller struct);
 * out, as many bytes as the caller has room for (gpuasync/abi.h).
 */
static inline int ga_arg_in(void *k, size_t ksize, unsigned long arg, unsigned int cmd)
{
	return copy_struct_from_user(k, ksize, (void __user *)arg, _IOC_SIZE(cmd));
}

static inline int ga_arg_out(unsigned long arg, const void *k, size_t ksize, unsigned int cmd)
{
	if (copy_to_user((void __user *)arg, k, min_t(size_t, ksize, _IOC_SIZE(cmd))))
		return -EFAULT;
	return 0;
}

/* A reserved field of ours that is not zero: -EINVAL, and the log says which. */
static inline int ga_arg_zero(struct ga_card *card, const char *cmd, const char *field, u64 v)
{
	if (!v)
		return 0;
	dev_warn_ratelimited(card->dev, "%s: %s is %#llx, must be 0 (reserved)\n", cmd, field, v);
	return -EINVAL;
}

/* Index of a direction in card->bufs / card->count. */
static inline int ga_dir(bool write)
{
	return write ? 1 : 0;
}

/* ga_buf.c: registers of a card's core (field accessors: gpuasync/regs.h) */
u32 ga_core_rd(struct ga_card *card, u32 off);
int ga_field_rd(struct ga_card *card, enum ga_reg_id id, u32 index, u32 *val);
/* card->reg_lock held (it is the only writer of shared words). */
int ga_field_wr(struct ga_card *card, enum ga_reg_id id, u32 index, u32 val);
enum ga_reg_id ga_enable_id(bool write);
bool ga_engine_on(struct ga_card *card, bool write);
/* Zero buffer @index's address (and size) registers.  card->reg_lock held. */
void ga_zero_addr(struct ga_card *card, bool write, u32 index);

/* ga_buf.c: one buffer, whichever way it is registered */
struct ga_buf *ga_buf_new(struct ga_file *gf, bool write, u64 address, u32 size);
void ga_buf_program(struct ga_card *card, struct ga_buf *buf);
void ga_buf_stop_dma(struct ga_buf *buf);

/* ga_buf.c: the card's buffer table (card->lock held) */
int ga_check_owner(struct ga_card *card);
int ga_add_slot(struct ga_card *card, struct ga_buf *buf);
void ga_add_commit(struct ga_card *card, struct ga_buf *buf);
typedef bool (*ga_pick_fn)(struct ga_buf *buf, const void *ctx);
unsigned int ga_bufs_detach(struct ga_card *card, ga_pick_fn pick, const void *ctx,
			    struct list_head *gone);

#endif /* GA_BUF_H */
