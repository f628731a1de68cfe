// SPDX-License-Identifier: GPL-2.0
/*
 * gpuasync.ko: a driver for SLAC GpuAsyncCore cards (FPGA <-> NVIDIA GPU
 * RDMA) that speaks the upstream aes-stream-drivers "datadev" GPU ABI
 * unchanged, so upstream tools and libgpuasync's datadev backend work on
 * it, and adds what upstream lacks under new ioctl numbers: removal of one
 * buffer, arming many buffers in one call, and a table of pinned buffers
 * (gpuasync/abi.h).
 *
 * What it does differently from upstream is the pin lifecycle: each buffer
 * has its own lock and its own NVIDIA free callback, which tears down only
 * that buffer (stopping the engine it belongs to if it was running) and
 * uses the in-callback release calls; the normal path unmaps under the
 * buffer lock and calls nvidia_p2p_put_pages without it; buffers belong to
 * the file (and thread group) that registered them and go away when it is
 * closed, a killed process included; and an address register is zeroed
 * every time its buffer goes away, then the engine is waited on (V5 active
 * bits, or a bounded wait on older firmware) before memory is released.
 *
 * Cards: a card is whatever provides a struct ga_card_ops and registers
 * with ga_card_register(): real cards (PCI 1a4a:2030, below, bound only
 * with bind_pci=1 because the upstream driver normally owns them) and the
 * emulated ones (ga_emu.c, a client of this file that this file does not
 * know).  ga_main.c is the module: the parameters that pick the cards, and
 * init/exit.  The module builds against NVIDIA's sources (NVIDIA_SRC=) or
 * against nv_p2p_stub.ko for tests (see Makefile).
 *
 * Layers: this file on the two pin paths (ga_p2p.c, ga_dmabuf.c), both on
 * the buffer layer (ga_buf.c: register helpers, programming and stopping a
 * buffer, the card's buffer table).  Sections, in gdrdrv.c's order:
 * parameters, removing buffers, one function per ioctl, the dispatcher,
 * mmap, sysfs, file operations, card registration, PCI binding, the
 * driver's setup and teardown.
 */
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/hwmon.h>
#include <linux/idr.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h> /* writeq where the CPU has none */
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/proc_fs.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "ga_drv.h"
#include "ga_dmabuf.h"
#include "ga_p2p.h"
#include "gpuasync/axiversion.h"
#include "gpuasync/sysmon.h"

/* ---- compat --------------------------------------------------------------- */

/* vm_flags became read-only (vm_flags_clear) in 6.3. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
#define ga_vm_flags_clear(vma, f) vm_flags_clear(vma, f)
#else
#define ga_vm_flags_clear(vma, f) ((vma)->vm_flags &= ~(f))
#endif

/* class_create() lost its module argument in 6.4. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#define ga_class_create(name) class_create(name)
#else
#define ga_class_create(name) class_create(THIS_MODULE, name)
#endif

#define GA_MAX_CARDS 32
#define GA_DMA_BUFF_SIZE 0x20000 /* what DMA_Get_Buff_Size answers (upstream default) */

/* ---- module parameters --------------------------------------------------- */

/*
 * Who may do what (kmod/README.md "Permissions"): the node's mode and group
 * decide who may open a card; among those, only the owner of the card's GPU
 * state (the thread group holding its buffers), CAP_SYS_RAWIO or
 * CAP_SYS_ADMIN may write registers or map them writable, since those reach
 * the DMA address and enable registers.  Reads and read-only mappings are
 * for everyone who may open it.  Upstream's datadev makes its nodes 0666
 * and checks nothing.
 */
static unsigned int node_mode = 0660;
module_param(node_mode, uint, 0444);
MODULE_PARM_DESC(node_mode, "mode of the /dev nodes (default 0660; upstream datadev: 0666)");

static unsigned int node_gid;
module_param(node_gid, uint, 0444);
MODULE_PARM_DESC(node_gid, "group of the /dev nodes (default 0)");

/* SLAC's standard images put GpuAsyncCore at BAR0 + 0x28000 (docs/firmware.md
 * §2.1); an image that places it elsewhere sets this. */
unsigned int ga_core_offset = GA_CORE_OFFSET;
module_param_named(core_offset, ga_core_offset, uint, 0444);
MODULE_PARM_DESC(core_offset,
		 "GpuAsyncCore's offset in BAR0, every card (default 0x28000)");

/* ---- globals ------------------------------------------------------------- */

static struct class *ga_class;
static dev_t ga_devt;
/* Cards by minor, for open(); ga_cards_lock guards the table. */
static DEFINE_MUTEX(ga_cards_lock);
static struct ga_card *ga_cards[GA_MAX_CARDS];

static const struct file_operations ga_fops;

/* ---- buffers of a card, whichever path registered them ------------------- */

/*
 * Release @buf's memory, however it was registered; the caller frees @buf.
 * Prerequisite: DMA to the buffer stopped; card->lock held.
 */
static void ga_buf_release(struct ga_buf *buf)
{
	if (buf->dmabuf)
		ga_dmabuf_release(buf);
	else
		ga_p2p_release(buf);
}

static bool ga_pick_all(struct ga_buf *buf, const void *ctx)
{
	return true;
}

static bool ga_pick_file(struct ga_buf *buf, const void *ctx)
{
	return buf->owner == ctx;
}

static bool ga_pick_one(struct ga_buf *buf, const void *ctx)
{
	return buf == ctx;
}

/*
 * Remove every buffer @pick chooses: take it out of the table with DMA to
 * it stopped (ga_bufs_detach), then unpin or unmap and free.  Returns how
 * many.  Locking: card->lock held.
 */
static unsigned int ga_remove_bufs(struct ga_card *card, ga_pick_fn pick, const void *ctx)
{
	struct ga_buf *buf, *tmp;
	LIST_HEAD(gone);
	unsigned int n;

	lockdep_assert_held(&card->lock);
	n = ga_bufs_detach(card, pick, ctx, &gone);
	if (!n)
		return 0;
	list_for_each_entry_safe(buf, tmp, &gone, rm_node) {
		list_del(&buf->rm_node);
		ga_buf_release(buf);
		kfree(buf);
	}
	if (!card->count[0] && !card->count[1])
		card->owner_tgid = 0;
	return n;
}

/* ---- ioctls -------------------------------------------------------------- */

static int __ga_add(struct ga_file *gf, bool write, u64 address, u32 size)
{
	struct ga_card *card = gf->card;
	struct ga_buf *buf;
	int ret;

	if (!card->gpu_en)
		return -ENOTSUPP;
	if (!size || size % GA_GPU_PAGE_SIZE)
		return -EINVAL;
	if (address + size < address)
		return -EINVAL;

	buf = ga_buf_new(gf, write, address, size);
	if (!buf)
		return -ENOMEM;
	buf->pin_va = address & ~(u64)(GA_GPU_PAGE_SIZE - 1);
	buf->pin_len = ALIGN(address + size - buf->pin_va, (u64)GA_GPU_PAGE_SIZE);

	mutex_lock(&card->lock);
	ret = ga_add_slot(card, buf);
	if (!ret)
		ret = ga_p2p_pin(card, buf);
	if (!ret)
		ga_add_commit(card, buf);
	mutex_unlock(&card->lock);
	if (ret)
		kfree(buf);
	return ret;
}

static int ga_ioctl_add(struct ga_file *gf, void __user *argp)
{
	struct GpuNvidiaData d;

	if (copy_from_user(&d, argp, sizeof(d)))
		return -EFAULT;
	return __ga_add(gf, d.write != 0, d.address, d.size);
}

/* Upstream semantics: both engines off, every buffer of the card removed. */
static int ga_ioctl_rem_all(struct ga_file *gf)
{
	struct ga_card *card = gf->card;
	int ret;

	if (!card->gpu_en)
		return -ENOTSUPP;
	mutex_lock(&card->lock);
	ret = ga_check_owner(card);
	if (!ret) {
		mutex_lock(&card->reg_lock);
		ga_field_wr(card, GA_REG_WRITE_ENABLE, 0, 0);
		ga_field_wr(card, GA_REG_READ_ENABLE, 0, 0);
		mutex_unlock(&card->reg_lock);
		ga_remove_bufs(card, ga_pick_all, NULL);
	}
	mutex_unlock(&card->lock);
	return ret;
}

/* Locking: card->lock held. */
static int ga_check_armable(struct ga_card *card, u32 index)
{
	struct ga_buf *buf;

	lockdep_assert_held(&card->lock);
	if (index >= card->count[1] || !card->bufs[1][index])
		return -EINVAL;
	buf = card->bufs[1][index];
	if (READ_ONCE(buf->state) == GA_PIN_INVALIDATED)
		return -ENXIO;
	return 0;
}

static int ga_ioctl_set_write_enable(struct ga_file *gf, void __user *argp)
{
	struct ga_card *card = gf->card;
	u32 index;
	int ret;

	if (!card->gpu_en)
		return -ENOTSUPP;
	if (copy_from_user(&index, argp, sizeof(index)))
		return -EFAULT;
	mutex_lock(&card->lock);
	ret = ga_check_owner(card);
	if (!ret)
		ret = ga_check_armable(card, index);
	if (!ret) {
		mutex_lock(&card->reg_lock);
		ga_field_wr(card, GA_REG_FREE_LIST, index, 1);
		mutex_unlock(&card->reg_lock);
	}
	mutex_unlock(&card->lock);
	return ret;
}

static int ga_ioctl_enable(struct ga_file *gf, bool write, unsigned long value)
{
	struct ga_card *card = gf->card;
	int ret;

	if (!card->gpu_en)
		return -ENOTSUPP;
	mutex_lock(&card->lock);
	ret = ga_check_owner(card);
	if (!ret) {
		mutex_lock(&card->reg_lock);
		ga_field_wr(card, ga_enable_id(write), 0, value ? 1 : 0);
		mutex_unlock(&card->reg_lock);
	}
	mutex_unlock(&card->lock);
	return ret;
}

static int ga_reg_window_ok(struct ga_card *card, u64 address)
{
	if (address < DMA_REG_WINDOW_START || address > DMA_REG_WINDOW_END - 4 ||
	    address + 4 > card->bar_len || address % 4)
		return -EINVAL;
	return 0;
}

/*
 * May the caller change registers (write them, map them writable)?  The
 * owner of the GPU state, or CAP_SYS_RAWIO, or CAP_SYS_ADMIN; nobody else,
 * not even while the card is unowned: a write to an address register aims
 * the card's DMA.  CAP_SYS_ADMIN because a GPU consumer needs it anyway to
 * register this very mapping with CUDA (cuMemHostRegister of I/O memory),
 * and LCLS-II's DRP runs with it alone (ambient, through setpriv), mapping
 * the registers before it owns the card.
 */
static int ga_may_write_regs(struct ga_card *card)
{
	pid_t owner = READ_ONCE(card->owner_tgid);

	if (owner && owner == task_tgid_nr(current))
		return 0;
	return capable(CAP_SYS_RAWIO) || capable(CAP_SYS_ADMIN) ? 0 : -EPERM;
}

/*
 * The kernel-log line for a refused register write or writable mapping:
 * EPERM alone reaches a rogue user as "Memory transaction failed with
 * error code -1", so the log says who was refused, what, and why.
 */
static void ga_log_write_refused(struct ga_card *card, const char *what, u64 address)
{
	pid_t owner = READ_ONCE(card->owner_tgid);

	if (owner)
		dev_notice_ratelimited(card->dev,
				       "%s at 0x%llx by pid %d (%s) refused (EPERM): registers are "
				       "written by the owner of the card's GPU state (tgid %d) or "
				       "with CAP_SYS_RAWIO or CAP_SYS_ADMIN\n",
				       what, address, task_tgid_nr(current), current->comm, owner);
	else
		dev_notice_ratelimited(card->dev,
				       "%s at 0x%llx by pid %d (%s) refused (EPERM): registers are "
				       "written by the owner of the card's GPU state (none now: the "
				       "process that registers buffers becomes it) or with "
				       "CAP_SYS_RAWIO or CAP_SYS_ADMIN\n",
				       what, address, task_tgid_nr(current), current->comm);
}

static int ga_ioctl_reg(struct ga_file *gf, void __user *argp, bool write)
{
	struct ga_card *card = gf->card;
	struct DmaRegisterData r;
	int ret;

	if (copy_from_user(&r, argp, sizeof(r)))
		return -EFAULT;
	ret = ga_reg_window_ok(card, r.address);
	if (ret)
		return ret;
	if (write) {
		ret = ga_may_write_regs(card);
		if (ret) {
			ga_log_write_refused(card, "register write", r.address);
			return ret;
		}
	}
	/* Shared words are read-modify-written by the driver under reg_lock;
	 * a user's access takes the same lock, which also orders it against
	 * the card going away (dead is set under it).
	 */
	mutex_lock(&card->reg_lock);
	if (card->dead) {
		ret = -ENODEV;
	} else if (write) {
		card->ops->write32(card, r.address, r.data);
		atomic64_inc(&card->user_reg_writes);
	} else {
		r.data = card->ops->read32(card, r.address);
	}
	mutex_unlock(&card->reg_lock);
	if (ret || write)
		return ret;
	if (copy_to_user(argp, &r, sizeof(r)))
		return -EFAULT;
	return 0;
}

static long ga_ioctl_GA_Rem_Buffer(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	struct ga_card *card = gf->card;
	struct ga_buffer_ref ref;
	struct ga_buf *buf;
	int d, ret;

	if (!card->gpu_en)
		return -ENOTSUPP;
	ret = ga_arg_in(&ref, sizeof(ref), arg, cmd);
	if (ret)
		return ret;
	d = ga_dir(ref.write != 0);
	mutex_lock(&card->lock);
	ret = ga_check_owner(card);
	if (ret)
		goto out_unlock;
	/* Only the last: the ring is 0..count-1 and cannot have holes. */
	if (!card->count[d] || ref.index != card->count[d] - 1) {
		ret = -EINVAL;
		goto out_unlock;
	}
	/* The engine might be writing into it: the caller stops it first. */
	if (ga_engine_on(card, ref.write != 0)) {
		ret = -EBUSY;
		goto out_unlock;
	}
	buf = card->bufs[d][ref.index];
	ga_remove_bufs(card, ga_pick_one, buf);
out_unlock:
	mutex_unlock(&card->lock);
	return ret;
}

static long ga_ioctl_GA_Arm_Buffers(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	struct ga_card *card = gf->card;
	struct ga_arm_many a;
	u32 *idx, i;
	int ret;

	if (!card->gpu_en)
		return -ENOTSUPP;
	ret = ga_arg_in(&a, sizeof(a), arg, cmd);
	if (!ret)
		ret = ga_arg_zero(card, "GA_Arm_Buffers", "pad", a.pad);
	if (ret)
		return ret;
	if (a.count > GA_MAX_BUFFERS)
		return -EINVAL;
	if (!a.count)
		return 0;
	idx = kvmalloc_array(a.count, sizeof(*idx), GFP_KERNEL);
	if (!idx)
		return -ENOMEM;
	if (copy_from_user(idx, u64_to_user_ptr(a.indices), a.count * sizeof(*idx))) {
		ret = -EFAULT;
		goto out_free;
	}
	mutex_lock(&card->lock);
	ret = ga_check_owner(card);
	/* All or nothing: validate every index before arming any. */
	for (i = 0; !ret && i < a.count; i++)
		ret = ga_check_armable(card, idx[i]);
	if (!ret) {
		mutex_lock(&card->reg_lock);
		for (i = 0; i < a.count; i++)
			ga_field_wr(card, GA_REG_FREE_LIST, idx[i], 1);
		mutex_unlock(&card->reg_lock);
	}
	mutex_unlock(&card->lock);
out_free:
	kvfree(idx);
	return ret;
}

static long ga_ioctl_GA_Get_Buffer_Table(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	struct ga_card *card = gf->card;
	struct ga_buffer_entry *e = NULL;
	struct ga_buffer_table t;
	u32 n = 0, cap;
	int d, i, ret = 0;

	ret = ga_arg_in(&t, sizeof(t), arg, cmd);
	if (ret)
		return ret;
	cap = min_t(u32, t.capacity, 2 * GA_MAX_BUFFERS);
	if (cap) {
		e = kvcalloc(cap, sizeof(*e), GFP_KERNEL);
		if (!e)
			return -ENOMEM;
	}
	mutex_lock(&card->lock);
	for (d = 1; d >= 0; d--) {
		for (i = 0; i < card->count[d]; i++) {
			struct ga_buf *buf = card->bufs[d][i];

			if (!buf)
				continue;
			if (n < cap) {
				e[n].index = buf->index;
				e[n].write = buf->write;
				e[n].gpu_address = buf->gpu_address;
				e[n].bus_address = buf->bus;
				e[n].size = buf->size;
				e[n].pages = buf->pages;
				e[n].owner_tgid = buf->tgid;
				e[n].flags = (READ_ONCE(buf->state) == GA_PIN_INVALIDATED ?
						      GA_BUF_INVALIDATED : 0) |
					     (buf->dmabuf ? GA_BUF_DMABUF : 0);
			}
			n++;
		}
	}
	mutex_unlock(&card->lock);
	if (cap && copy_to_user(u64_to_user_ptr(t.entries), e, min(n, cap) * sizeof(*e)))
		ret = -EFAULT;
	t.count = n;
	if (!ret)
		ret = ga_arg_out(arg, &t, sizeof(t), cmd);
	kvfree(e);
	return ret;
}

/*
 * DMA_Set_MaskBytes, with upstream's rules: a file reserves destinations
 * once (while it holds any, EPERM), all or none (one another file holds:
 * EPERM, upstream's bare -1), and its close releases them.  An empty mask
 * reserves nothing and leaves the file free to ask again, as upstream.
 * gpuasync.ko moves no frames to the CPU, so a destination routes nothing
 * here; the reservation is kept because clients coordinate through it
 * (LCLS-II's DRP aborts when it is refused).  Anyone who may open the
 * node may reserve, as upstream.
 */
static long ga_ioctl_DMA_Set_MaskBytes(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	struct ga_card *card = gf->card;
	unsigned int i, held = DMA_MAX_DEST;
	long ret = 0;
	u8 *want;

	want = memdup_user((void __user *)arg, DMA_MASK_SIZE);
	if (IS_ERR(want))
		return PTR_ERR(want);
	mutex_lock(&card->lock);
	if (memchr_inv(gf->dests, 0, DMA_MASK_SIZE)) {
		dev_info_ratelimited(card->dev,
				     "DMA_Set_MaskBytes: this file holds destinations already (once per open file)\n");
		ret = -EPERM;
		goto out;
	}
	for (i = 0; i < DMA_MASK_SIZE && held == DMA_MAX_DEST; i++)
		if (want[i] & card->dests[i])
			held = i * 8 + __ffs(want[i] & card->dests[i]);
	if (held < DMA_MAX_DEST) {
		dev_info_ratelimited(card->dev,
				     "DMA_Set_MaskBytes: destination %u is held by another open file\n",
				     held);
		ret = -EPERM;
		goto out;
	}
	for (i = 0; i < DMA_MASK_SIZE; i++)
		card->dests[i] |= want[i];
	memcpy(gf->dests, want, DMA_MASK_SIZE);
out:
	mutex_unlock(&card->lock);
	kfree(want);
	return ret;
}

/* Close: the file's destinations are free again.  card->lock held. */
static void ga_release_dests(struct ga_file *gf)
{
	unsigned int i;

	lockdep_assert_held(&gf->card->lock);
	for (i = 0; i < DMA_MASK_SIZE; i++)
		gf->card->dests[i] &= ~gf->dests[i];
}

/* ---- dispatcher ---------------------------------------------------------- */

/* Handlers of the rows with no argument or a plain value. */
static long ga_ioctl_DMA_Get_Buff_Count(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return 0; /* no CPU DMA buffers: the registers start at offset 0 */
}

static long ga_ioctl_DMA_Get_Buff_Size(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return GA_DMA_BUFF_SIZE;
}

static long ga_ioctl_DMA_Get_Version(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return DMA_VERSION;
}

/*
 * Upstream counts its CPU receive buffers by state (GPU buffers are not
 * among them); gpuasync.ko has none (DMA_Get_Buff_Count is 0), so every
 * state holds 0 of them.
 */
static long ga_ioctl_DMA_Get_RxBuffinUser_Count(struct ga_file *gf, unsigned int cmd,
						unsigned long arg)
{
	return 0;
}

static long ga_ioctl_DMA_Get_RxBuffinHW_Count(struct ga_file *gf, unsigned int cmd,
					      unsigned long arg)
{
	return 0;
}

static long ga_ioctl_DMA_Get_RxBuffinPreHWQ_Count(struct ga_file *gf, unsigned int cmd,
						  unsigned long arg)
{
	return 0;
}

static long ga_ioctl_DMA_Get_RxBuffinSWQ_Count(struct ga_file *gf, unsigned int cmd,
					       unsigned long arg)
{
	return 0;
}

static long ga_ioctl_DMA_Write_Register(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return ga_ioctl_reg(gf, (void __user *)arg, true);
}

static long ga_ioctl_DMA_Read_Register(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return ga_ioctl_reg(gf, (void __user *)arg, false);
}

static long ga_ioctl_GPU_Add_Nvidia_Memory(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return ga_ioctl_add(gf, (void __user *)arg);
}

static long ga_ioctl_GPU_Rem_Nvidia_Memory(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return ga_ioctl_rem_all(gf);
}

static long ga_ioctl_GPU_Set_Write_Enable(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return ga_ioctl_set_write_enable(gf, (void __user *)arg);
}

static long ga_ioctl_GPU_Is_Gpu_Async_Supp(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return gf->card->gpu_en ? 1 : 0;
}

static long ga_ioctl_GPU_Get_Gpu_Async_Ver(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return gf->card->version; /* even when unsupported, so it can be reported */
}

static long ga_ioctl_GPU_Get_Max_Buffers(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return gf->card->gpu_en ? gf->card->max_buffers : -ENOTSUPP;
}

static long ga_ioctl_GPU_Enable_Tx(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return ga_ioctl_enable(gf, true, arg);
}

static long ga_ioctl_GPU_Enable_Rx(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return ga_ioctl_enable(gf, false, arg);
}

/*
 * Upstream's commands of after 7.5.1.  Both kinds of buffer can always be
 * added here (the module links nvidia_p2p, NVIDIA's or the stub's, and
 * imports dma-bufs); a card without GPU async answers -ENOTSUPP, as upstream.
 */
static long ga_ioctl_GPU_Is_Dma_Buf_Supp(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return gf->card->gpu_en ? 1 : -ENOTSUPP;
}

static long ga_ioctl_GPU_Is_GpuDirect_Supp(struct ga_file *gf, unsigned int cmd,
					   unsigned long arg)
{
	return gf->card->gpu_en ? 1 : -ENOTSUPP;
}

static long ga_ioctl_GPU_DmaBuf_Add_Wr_Buffer(struct ga_file *gf, unsigned int cmd,
					      unsigned long arg)
{
	return ga_dmabuf_add_whole(gf, arg, true);
}

static long ga_ioctl_GPU_DmaBuf_Add_Rd_Buffer(struct ga_file *gf, unsigned int cmd,
					      unsigned long arg)
{
	return ga_dmabuf_add_whole(gf, arg, false);
}

/* Every buffer, whichever way it was added, as GPU_Rem_Nvidia_Memory. */
static long ga_ioctl_GPU_DmaBuf_Remove_Buffers(struct ga_file *gf, unsigned int cmd,
					       unsigned long arg)
{
	return ga_ioctl_rem_all(gf);
}

/* One step under reg_lock: the driver's own updates of the word stay. */
static long ga_ioctl_GA_Write_Register_Masked(struct ga_file *gf, unsigned int cmd,
					      unsigned long arg)
{
	struct ga_card *card = gf->card;
	struct ga_reg_masked r;
	u32 v;
	int ret;

	ret = ga_arg_in(&r, sizeof(r), arg, cmd);
	if (ret)
		return ret;
	ret = ga_reg_window_ok(card, r.address);
	if (ret)
		return ret;
	ret = ga_may_write_regs(card);
	if (ret) {
		ga_log_write_refused(card, "masked register write", r.address);
		return ret;
	}
	mutex_lock(&card->reg_lock);
	if (card->dead) {
		ret = -ENODEV;
	} else {
		v = card->ops->read32(card, r.address);
		card->ops->write32(card, r.address, (v & ~r.mask) | (r.data & r.mask));
		atomic64_inc(&card->user_reg_writes);
	}
	mutex_unlock(&card->reg_lock);
	return ret;
}

static long ga_ioctl_GA_Get_Abi_Version(struct ga_file *gf, unsigned int cmd, unsigned long arg)
{
	return (GA_ABI_VERSION << 16) | GA_FEAT_ALL;
}

/*
 * The table's rows with their handlers: a row without a handler named
 * ga_ioctl_<row> does not build.  Positive results (version, counts,
 * flags) are the ioctl's return value.
 */
typedef long (*ga_ioctl_fn)(struct ga_file *gf, unsigned int cmd, unsigned long arg);

static const struct ga_ioctl_desc {
	struct ga_abi_row row;
	ga_ioctl_fn fn;
	const char *label; /* the token: row.name is its expanded number */
} ga_ioctls[] = {
#define GA_IOCTL_DESC(name, ...) \
	{ .row = GA_ABI_ROW(name, __VA_ARGS__) .fn = ga_ioctl_##name, .label = #name },
#define GA_DEF_IOCTL GA_IOCTL_DESC
#include <gpuasync/ioctls.def>
#undef GA_IOCTL_DESC
};

/*
 * Upstream's numbers are matched as upstream does (generic DMA codes on
 * the low 16 bits, GPU codes exactly), ours on type, number and direction
 * with the size checked against the row: a size the driver does not know
 * is another command, so -ENOTTY like any unknown number (gpuasync/abi.h,
 * GA_IOC_TYPE, says why).  ioctls.def's compile-time checks keep the two
 * kinds of match from taking each other's numbers.
 */
static long ga_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct ga_file *gf = file->private_data;
	const struct ga_ioctl_desc *d;
	size_t i;

	if (READ_ONCE(gf->card->dead))
		return -ENODEV;
	for (i = 0; i < ARRAY_SIZE(ga_ioctls); i++) {
		d = &ga_ioctls[i];
		if (!ga_abi_match(&d->row, cmd))
			continue;
		if (!ga_abi_size_ok(&d->row, cmd)) {
			dev_dbg(gf->card->dev, "%s: argument of %u bytes, this driver takes %u..%u\n",
				d->row.name, _IOC_SIZE(cmd), d->row.min_size, d->row.size);
			return -ENOTTY;
		}
		atomic64_inc(&gf->card->cmds[i]);
		return d->fn(gf, cmd, arg);
	}
	return -ENOTTY;
}

/*
 * debugfs gpuasync/<card>/commands: each command of the table and how often
 * this card answered it ("GPU_DmaBuf_Add_Wr_Buffer 3").  A call its handler
 * refuses counts; an argument size the driver does not take is another
 * command and counts nowhere.  Counted at the dispatch rather than probed:
 * tests read it with no kernel text patched.
 */
static struct dentry *ga_debugfs;

static int ga_commands_show(struct seq_file *s, void *v)
{
	struct ga_card *card = s->private;
	size_t i;

	BUILD_BUG_ON(ARRAY_SIZE(ga_ioctls) != GA_NR_CMDS);
	for (i = 0; i < GA_NR_CMDS; i++)
		seq_printf(s, "%s %lld\n", ga_ioctls[i].label,
			   (long long)atomic64_read(&card->cmds[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ga_commands);

/* ---- mmap ---------------------------------------------------------------- */

/*
 * Upstream: file offsets below count * size are DMA buffers, the rest is
 * BAR0 from offset count * size.  We have no DMA buffers (count 0), so the
 * file offset is the BAR0 offset; as upstream, the window starts at 0x10000.
 */
static int ga_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct ga_file *gf = file->private_data;
	struct ga_card *card = gf->card;
	u64 base = 0 * (u64)GA_DMA_BUFF_SIZE; /* DMA_Get_Buff_Count * DMA_Get_Buff_Size */
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 len = vma->vm_end - vma->vm_start;

	if (READ_ONCE(card->dead))
		return -ENODEV;
	if (off < base + DMA_REG_WINDOW_START || off - base + len > card->bar_len)
		return -EINVAL;
	if (vma->vm_flags & VM_WRITE) {
		int ret = ga_may_write_regs(card);

		if (ret) {
			ga_log_write_refused(card, "writable register mapping", off - base);
			return ret;
		}
	} else if (ga_may_write_regs(card)) {
		/* read-only, and it stays so (no mprotect to writable) */
		ga_vm_flags_clear(vma, VM_MAYWRITE);
	}
	return card->ops->mmap(card, vma, off - base);
}

/* ---- sysfs ---------------------------------------------------------------- */

static ssize_t version_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_card *card = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", card->version);
}
static DEVICE_ATTR_RO(version);

static ssize_t max_buffers_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_card *card = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", card->max_buffers);
}
static DEVICE_ATTR_RO(max_buffers);

static ssize_t gpu_enabled_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_card *card = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", card->gpu_en);
}
static DEVICE_ATTR_RO(gpu_enabled);

static ssize_t owner_tgid_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_card *card = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", READ_ONCE(card->owner_tgid));
}
static DEVICE_ATTR_RO(owner_tgid);

static ssize_t buffers_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_card *card = dev_get_drvdata(dev);
	unsigned int w, r;

	mutex_lock(&card->lock);
	w = card->count[1];
	r = card->count[0];
	mutex_unlock(&card->lock);
	return sysfs_emit(buf, "%u %u\n", w, r);
}
static DEVICE_ATTR_RO(buffers);

static ssize_t quiesce_timeouts_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_card *card = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", atomic_read(&card->quiesce_timeouts));
}
static DEVICE_ATTR_RO(quiesce_timeouts);

static ssize_t live_pins_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&ga_live_pins));
}
static DEVICE_ATTR_RO(live_pins);

static ssize_t live_dmabufs_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&ga_live_dmabufs));
}
static DEVICE_ATTR_RO(live_dmabufs);

static ssize_t dma_faults_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_card *card = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%lld\n", atomic64_read(&card->dma_faults));
}
static DEVICE_ATTR_RO(dma_faults);

static ssize_t user_reg_writes_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_card *card = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%lld\n", atomic64_read(&card->user_reg_writes));
}
static DEVICE_ATTR_RO(user_reg_writes);

static ssize_t callback_quiesce_us_show(struct device *dev, struct device_attribute *attr,
					char *buf)
{
	struct ga_card *card = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%lld\n", atomic64_read(&card->cb_quiesce_max_us));
}
static DEVICE_ATTR_RO(callback_quiesce_us);

static ssize_t core_offset_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_card *card = dev_get_drvdata(dev);

	return sysfs_emit(buf, "0x%x\n", card->core_offset);
}
static DEVICE_ATTR_RO(core_offset);

static struct attribute *ga_card_attrs[] = {
	&dev_attr_version.attr,
	&dev_attr_max_buffers.attr,
	&dev_attr_gpu_enabled.attr,
	&dev_attr_owner_tgid.attr,
	&dev_attr_buffers.attr,
	&dev_attr_quiesce_timeouts.attr,
	&dev_attr_live_pins.attr,
	&dev_attr_live_dmabufs.attr,
	&dev_attr_dma_faults.attr,
	&dev_attr_user_reg_writes.attr,
	&dev_attr_core_offset.attr,
	&dev_attr_callback_quiesce_us.attr,
	NULL,
};

static const struct attribute_group ga_card_group = {
	.attrs = ga_card_attrs,
};


/* ---- procfs: /proc/<card>, upstream's text ------------------------------- */

/*
 * /proc/<card name> prints what upstream datadev prints in /proc/datadev_N,
 * key for key and in its order, for every line this driver can know; node
 * tooling parses it (LCLS-II's Slurm pairing reads "PCIe[BUS:NUM:SLOT.FUNC]",
 * "Build String", "GPU Async En" and "GPUAsync Support").  Left out: the
 * lines about upstream's AXI stream DMA engine and its CPU buffers' modes
 * (IRQ, Int Req Count, Continue Count, Address Count, Hw Write/Read Buff
 * Count, Cache Config, Desc 128 En, Enable Ver, Driver Load Count, IRQ Hold,
 * BG Enable, DMA Timeout, Buffer Mode), which this driver does not drive;
 * kmod/README.md "/proc" lists the lines that differ and why.
 */

/* AxiVersion's hardware type names (axi-pcie-core's numbering), by code. */
static const char *const ga_hw_type_names[] = {
	"Undefined", "AlphaDataKu3", "BittWareXupVv8Vu13p", "SlacPgpCardG3",
	"SlacPgpCardG4", "XilinxAc701", "XilinxAlveoU50", "XilinxAlveoU200",
	"XilinxAlveoU250", "XilinxAlveoU280", "XilinxKc705", "XilinxKcu105",
	"XilinxKcu116", "XilinxKcu1500", "XilinxVcu128", "XilinxAlveoU55C",
	"XilinxVariumC1100", "AbacoPc821Ku085", "AbacoPc821Ku115", "BittWareXupVv8Vu9p",
};

/* The AxiVersion row @id as the firmware table renders it. */
static void ga_proc_fw(struct seq_file *s, struct ga_card *card, enum ga_fw_id id)
{
	const struct ga_fw_field *f = &ga_fw_fields[id];
	u32 words[64];
	char text[GA_FW_TEXT_MAX];
	unsigned int i;

	for (i = 0; i < f->words && i < ARRAY_SIZE(words); i++)
		words[i] = card->ops->read32(card, GA_FW_BASE + f->offset + 4 * i);
	if (ga_fw_format(id, words, text, sizeof(text)) < 0)
		text[0] = '\0';
	seq_puts(s, text);
}

static void ga_proc_axiversion(struct seq_file *s, struct ga_card *card)
{
	u32 hw = card->ops->read32(card, GA_FW_BASE + ga_fw_fields[GA_FW_HARDWARE_TYPE].offset);
	u32 type = hw & 0xfff;
	u32 words[5];
	unsigned int i;

	seq_puts(s, "---------- Firmware Axi Version -----------\n");
	seq_printf(s, "     Firmware Version : 0x%x\n",
		   card->ops->read32(card, GA_FW_BASE + ga_fw_fields[GA_FW_FPGA_VERSION].offset));
	seq_printf(s, "           ScratchPad : 0x%x\n",
		   card->ops->read32(card, GA_FW_BASE + ga_fw_fields[GA_FW_SCRATCH_PAD].offset));
	seq_printf(s, "        Up Time Count : %u\n",
		   card->ops->read32(card, GA_FW_BASE + ga_fw_fields[GA_FW_UPTIME].offset));
	/* Upstream's wording for a hash of zeros (the table says "dirty"). */
	for (i = 0; i < ARRAY_SIZE(words); i++)
		words[i] = card->ops->read32(card, GA_FW_BASE +
					     ga_fw_fields[GA_FW_GIT_HASH].offset + 4 * i);
	seq_puts(s, "             Git Hash : ");
	if (memchr_inv(words, 0, sizeof(words)))
		ga_proc_fw(s, card, GA_FW_GIT_HASH);
	else
		seq_puts(s, "dirty (uncommitted code)");
	seq_puts(s, "\n            DNA Value : ");
	ga_proc_fw(s, card, GA_FW_DNA);
	seq_puts(s, "\n         Build String : ");
	ga_proc_fw(s, card, GA_FW_BUILD_STAMP);
	seq_printf(s, "\n        Hardware Type : %s (0x%03X)\n",
		   ga_hw_type_names[type < ARRAY_SIZE(ga_hw_type_names) ? type : 0], type);
	seq_printf(s, "    Bifurcation Index : %u\n", (hw >> 12) & 0xf);
}

/* A field of the card's layout, or 0 where the layout has none. */
static u32 ga_proc_field(struct ga_card *card, enum ga_reg_id id, u32 index)
{
	u32 v = 0;

	ga_field_rd(card, id, index, &v);
	return v;
}

/* "@label : value" with the whole word that holds register @id, as
 * upstream prints it; -ENOENT (nothing printed) where this firmware lacks it. */
static int ga_proc_word(struct seq_file *s, struct ga_card *card, const char *label,
			enum ga_reg_id id)
{
	u32 off;
	int ret = ga_reg_offset(id, card->layout, card->version, 0, card->max_buffers, &off);

	if (ret == 0)
		seq_printf(s, "%s : %u\n", label, ga_core_rd(card, off));
	return ret;
}

/* Upstream's "DataGPU State" block: the card's GPU async registers. */
static void ga_proc_gpu(struct seq_file *s, struct ga_card *card)
{
	u32 wcount = ga_proc_field(card, GA_REG_WRITE_COUNT, 0) + 1;
	u32 rcount = ga_proc_field(card, GA_REG_READ_COUNT, 0) + 1;
	u32 wen = ga_proc_field(card, GA_REG_WRITE_ENABLE, 0);
	u32 ren = ga_proc_field(card, GA_REG_READ_ENABLE, 0);
	bool v1 = card->layout == GA_LAYOUT_V1;
	u32 i;

	seq_puts(s, "\n---------------- DataGPU State ----------------\n");
	seq_printf(s, "    GpuAsyncCore Offset : 0x%X\n", card->core_offset);
	seq_printf(s, "   GpuAsyncCore Version : %u\n", card->version);
	seq_printf(s, "            Max Buffers : %u\n", card->max_buffers);
	seq_printf(s, "     Write Buffer Count : %u\n", wcount);
	seq_printf(s, "           Write Enable : %u\n", wen);
	seq_printf(s, "      Read Buffer Count : %u\n", rcount);
	seq_printf(s, "            Read Enable : %u\n", ren);
	seq_printf(s, "         RX Frame Count : %u\n",
		   ga_proc_field(card, GA_REG_RX_FRAME_COUNT, 0));
	seq_printf(s, "         TX Frame Count : %u\n",
		   ga_proc_field(card, GA_REG_TX_FRAME_COUNT, 0));
	seq_printf(s, "  AXI Write Error Count : %u\n",
		   ga_proc_field(card, GA_REG_AXI_WRITE_ERROR_COUNT, 0));
	/* Whole words, as upstream reads them (on V4 the read-queue word is its
	 * high-water mark: upstream's label, kept); each line only where the
	 * register table has the register. */
	ga_proc_word(s, card, "AXI Write Timeout Count", GA_REG_AXI_WRITE_TIMEOUT_COUNT);
	ga_proc_word(s, card, "      Min Write Buffers", GA_REG_MIN_WRITE_BUFFERS);
	if (ga_proc_word(s, card, "       Min Read Buffers", GA_REG_MIN_READ_QUEUE) < 0)
		ga_proc_word(s, card, "       Min Read Buffers", GA_REG_MAX_READ_QUEUE);
	seq_printf(s, "   AXI Read Error Count : %u\n",
		   ga_proc_field(card, GA_REG_AXI_READ_ERROR_COUNT, 0));
	seq_printf(s, "         Owning Process : %d\n", READ_ONCE(card->owner_tgid));
	for (i = 0; wen && i < wcount && i < card->max_buffers; i++) {
		u64 a = ((u64)ga_proc_field(card, GA_REG_WRITE_ADDR_HI, i) << 32) |
			ga_proc_field(card, GA_REG_WRITE_ADDR_LO, i);

		seq_printf(s, "\n-------- Write Buffer %u --------\n", i);
		seq_printf(s, "  Write Address : 0x%llX\n", a);
		seq_printf(s, "     Write Size : 0x%X\n",
			   v1 ? ga_proc_field(card, GA_REG_WRITE_SIZE, i)
			      : ga_proc_field(card, GA_REG_WRITE_MAX_SIZE, 0));
	}
	for (i = 0; ren && i < rcount && i < card->max_buffers; i++) {
		u64 a = ((u64)ga_proc_field(card, GA_REG_READ_ADDR_HI, i) << 32) |
			ga_proc_field(card, GA_REG_READ_ADDR_LO, i);

		seq_printf(s, "\n-------- Read Buffer %u --------\n", i);
		seq_printf(s, "  Read Address : 0x%llX\n", a);
		seq_printf(s, "     Read Size : 0x%X\n", ga_proc_field(card, GA_REG_READ_SIZE, i));
	}
}

/* Upstream's CPU buffer sections: this driver has none (DMA_Get_Buff_Count). */
static void ga_proc_cpu_buffers(struct seq_file *s, const char *title, const char *queue)
{
	seq_printf(s, "\n%s\n", title);
	seq_puts(s, "         Buffer Count : 0\n");
	seq_printf(s, "          Buffer Size : %u\n", GA_DMA_BUFF_SIZE);
	seq_puts(s, "      Buffers In User : 0\n");
	seq_puts(s, "        Buffers In Hw : 0\n");
	seq_puts(s, "  Buffers In Pre-Hw Q : 0\n");
	seq_printf(s, "  %s : 0\n", queue);
	seq_puts(s, "       Tot Buffer Use : 0\n");
}

static int ga_proc_show(struct seq_file *s, void *v)
{
	struct ga_card *card = s->private;
	struct pci_dev *pdev = card->pdev;

	if (pdev)
		seq_printf(s, "PCIe[BUS:NUM:SLOT.FUNC] : %04x:%02x:%02x.%x\n",
			   pci_domain_nr(pdev->bus), pdev->bus->number, PCI_SLOT(pdev->devfn),
			   PCI_FUNC(pdev->devfn));
	ga_proc_axiversion(s, card);
	seq_puts(s, "\n---------- DMA Firmware General ----------\n");
	if (!card->gpu_en && card->version && !ga_version_find(card->version))
		seq_printf(s, "           GPU Async En : 0 (Unsupported GpuAsyncCore Version: %u)\n",
			   card->version);
	else
		seq_printf(s, "           GPU Async En : %d\n", card->gpu_en);
	if (card->gpu_en)
		ga_proc_gpu(s, card);
	seq_puts(s, "\n-------- DMA Kernel Driver General --------\n");
	seq_puts(s, " DMA Driver's Git Version : gpuasync " GA_DRV_VERSION "\n");
	seq_printf(s, " DMA Driver's API Version : 0x%x\n", DMA_VERSION);
	seq_puts(s, "         GPUAsync Support : Enabled\n");
	ga_proc_cpu_buffers(s, "---- Read Buffers (Firmware->Software) ----", "Buffers In Rx Queue");
	ga_proc_cpu_buffers(s, "---- Write Buffers (Software->Firmware) ---", "Buffers In Sw Queue");
	seq_puts(s, "\n");
	return 0;
}

/* ---- file operations ------------------------------------------------------ */

static void ga_card_release(struct kref *ref)
{
	struct ga_card *card = container_of(ref, struct ga_card, ref);

	if (card->ops->destroy)
		card->ops->destroy(card);
	kvfree(card->bufs[0]);
	kvfree(card->bufs[1]);
	kfree(card);
}

static void ga_card_put(struct ga_card *card)
{
	kref_put(&card->ref, ga_card_release);
}

static int ga_open(struct inode *inode, struct file *file)
{
	struct ga_card *card;
	struct ga_file *gf;

	gf = kzalloc(sizeof(*gf), GFP_KERNEL);
	if (!gf)
		return -ENOMEM;
	mutex_lock(&ga_cards_lock);
	card = ga_cards[iminor(inode) % GA_MAX_CARDS];
	if (card)
		kref_get(&card->ref);
	mutex_unlock(&ga_cards_lock);
	if (!card) {
		kfree(gf);
		return -ENODEV;
	}
	gf->card = card;
	file->private_data = gf;
	return 0;
}

/* Last close, whatever the cause (exit, kill -9): the file's buffers go. */
static int ga_release(struct inode *inode, struct file *file)
{
	struct ga_file *gf = file->private_data;
	struct ga_card *card = gf->card;

	mutex_lock(&card->lock);
	ga_remove_bufs(card, ga_pick_file, gf);
	ga_release_dests(gf);
	mutex_unlock(&card->lock);
	kfree(gf);
	ga_card_put(card);
	return 0;
}

static const struct file_operations ga_fops = {
	.owner = THIS_MODULE,
	.open = ga_open,
	.release = ga_release,
	.unlocked_ioctl = ga_ioctl,
	.compat_ioctl = compat_ptr_ioctl, /* the structs have one layout on both */
	.mmap = ga_mmap,
	.llseek = noop_llseek,
};

/* ---- card registration ---------------------------------------------------- */

struct ga_card *ga_card_alloc(const char *name, const struct ga_card_ops *ops, void *priv)
{
	struct ga_card *card = kzalloc(sizeof(*card), GFP_KERNEL);

	if (!card)
		return NULL;
	card->bufs[0] = kvcalloc(GA_MAX_BUFFERS, sizeof(struct ga_buf *), GFP_KERNEL);
	card->bufs[1] = kvcalloc(GA_MAX_BUFFERS, sizeof(struct ga_buf *), GFP_KERNEL);
	if (!card->bufs[0] || !card->bufs[1]) {
		kvfree(card->bufs[0]);
		kvfree(card->bufs[1]);
		kfree(card);
		return NULL;
	}
	kref_init(&card->ref);
	strscpy(card->name, name, sizeof(card->name));
	card->ops = ops;
	card->priv = priv;
	card->bar_len = GA_BAR_SIZE;
	card->core_offset = ga_core_offset;
	card->minor = -1;
	mutex_init(&card->lock);
	mutex_init(&card->reg_lock);
	mutex_init(&card->win_lock);
	INIT_LIST_HEAD(&card->windows);
	return card;
}

/* Read what the card is; clear what a previous driver may have left. */
static void ga_card_identify(struct ga_card *card)
{
	u32 off = 0, word, en, i;
	unsigned int layout_max;

	en = card->ops->read32(card, GA_AXIVERSION_GPU_EN) & 1;
	/* The version word sits at the same offset in every layout. */
	ga_reg_offset(GA_REG_VERSION, GA_LAYOUT_V1, 1, 0, 0, &off);
	word = ga_core_rd(card, off);
	card->version = ga_reg_field_get(GA_REG_VERSION, GA_LAYOUT_V1, word);
	card->layout = ga_layout_for_version(card->version, false);
	ga_field_rd(card, GA_REG_MAX_BUFFERS, 0, &card->max_buffers);
	ga_field_rd(card, GA_REG_DMA_DATA_BYTES, 0, &card->dma_data_bytes);
	/* An unknown version has no layout (GA_LAYOUT_COUNT, limit 0). */
	layout_max = ga_layout_max_buffers(card->layout);
	card->gpu_en = en && card->max_buffers >= 1 && card->max_buffers <= layout_max;
	/* Why not, for the log: the first thing a user will ask. */
	card->gpu_off_why = !en ? "the firmware's AxiVersion GPU enable bit is clear (built "
				  "without GPU async)"
			    : !ga_version_find(card->version)
				? "unknown GpuAsyncCore version (not a GpuAsyncCore at "
				  "core_offset, or firmware newer than this driver)"
				: "MaxBuffers out of range for its version";
	if (!card->gpu_en)
		return;
	/* Engines off, no stale addresses (a disabled core still writes). */
	mutex_lock(&card->reg_lock);
	ga_field_wr(card, GA_REG_WRITE_ENABLE, 0, 0);
	ga_field_wr(card, GA_REG_READ_ENABLE, 0, 0);
	for (i = 0; i < card->max_buffers; i++) {
		ga_zero_addr(card, true, i);
		ga_zero_addr(card, false, i);
	}
	mutex_unlock(&card->reg_lock);
}

/* ---- hwmon: the card's SysMon ----------------------------------------------------------- */

/*
 * The SysMon as a hwmon device named "datadev", as upstream's: temp1 and
 * in0-in2 (sysmon.def's sensors, in order), each read from the block at
 * the offset its row gives and converted by the family's formula.  Only
 * registered where ga_sysmon_probe() finds the block (map version >= 1,
 * GEN_SYSMON_G, an UltraScale family), so the reads need no checks.
 */
static u32 ga_hwmon_offset(enum hwmon_sensor_types type, u32 attr,
			   const struct ga_sysmon_sensor_row *r)
{
	if (type == hwmon_temp) {
		switch (attr) {
		case hwmon_temp_input:
			return r->value;
		case hwmon_temp_highest:
			return r->highest;
		case hwmon_temp_lowest:
			return r->lowest;
		case hwmon_temp_max:
			return ga_sysmon_limits[GA_SYSMON_TEMP_MAX].offset;
		case hwmon_temp_crit:
			return ga_sysmon_limits[GA_SYSMON_TEMP_CRIT].offset;
		}
		return 0;
	}
	switch (attr) {
	case hwmon_in_input:
		return r->value;
	case hwmon_in_highest:
		return r->highest;
	case hwmon_in_lowest:
		return r->lowest;
	}
	return 0;
}

/* hwmon channel @ch of @type: its sysmon.def row, or NULL. */
static const struct ga_sysmon_sensor_row *ga_hwmon_row(enum hwmon_sensor_types type, int ch)
{
	int s = type == hwmon_temp ? GA_SYSMON_TEMP + ch : GA_SYSMON_VCCINT + ch;

	if (ch < 0 || s >= GA_SYSMON_SENSOR_COUNT ||
	    ga_sysmon_sensors[s].kind != (type == hwmon_temp ? GA_SYSMON_MC : GA_SYSMON_MV))
		return NULL;
	return &ga_sysmon_sensors[s];
}

static int ga_hwmon_read(struct device *dev, enum hwmon_sensor_types type, u32 attr, int ch,
			 long *val)
{
	struct ga_card *card = dev_get_drvdata(dev);
	const struct ga_sysmon_sensor_row *r = ga_hwmon_row(type, ch);
	u32 off = r ? ga_hwmon_offset(type, attr, r) : 0;

	if (!off)
		return -EOPNOTSUPP;
	*val = ga_sysmon_to_milli(card->sysmon_family, r->kind,
				  card->ops->read32(card, GA_SYSMON_BASE + off));
	return 0;
}

static int ga_hwmon_read_string(struct device *dev, enum hwmon_sensor_types type, u32 attr,
				int ch, const char **str)
{
	const struct ga_sysmon_sensor_row *r = ga_hwmon_row(type, ch);

	if (!r)
		return -EOPNOTSUPP;
	*str = r->label;
	return 0;
}

/* Read-only, every file: the limits are the firmware's to set. */
static umode_t ga_hwmon_is_visible(const void *data, enum hwmon_sensor_types type, u32 attr,
				   int ch)
{
	return 0444;
}

#define GA_HWMON_IN (HWMON_I_INPUT | HWMON_I_LABEL | HWMON_I_HIGHEST | HWMON_I_LOWEST)
static const struct hwmon_channel_info *ga_hwmon_info[] = {
	HWMON_CHANNEL_INFO(temp, HWMON_T_INPUT | HWMON_T_LABEL | HWMON_T_MAX | HWMON_T_CRIT |
					 HWMON_T_HIGHEST | HWMON_T_LOWEST),
	HWMON_CHANNEL_INFO(in, GA_HWMON_IN, GA_HWMON_IN, GA_HWMON_IN),
	NULL
};
static_assert(GA_SYSMON_SENSOR_COUNT == 4, "ga_hwmon_info: one temp, three in channels");

static const struct hwmon_ops ga_hwmon_ops = {
	.is_visible = ga_hwmon_is_visible,
	.read = ga_hwmon_read,
	.read_string = ga_hwmon_read_string,
};

static const struct hwmon_chip_info ga_hwmon_chip = {
	.ops = &ga_hwmon_ops,
	.info = ga_hwmon_info,
};

static u32 ga_hwmon_fw_read(void *ctx, u32 off)
{
	struct ga_card *card = ctx;

	return card->ops->read32(card, GA_FW_BASE + off);
}

/*
 * The card's hwmon device, under the device the card is (the PCI function,
 * or the emulated card's platform device), where the card has a SysMon.
 * Not devm: the card may go (unregister) before its parent's driver
 * unbinds, and the files read the card.  Not fatal: the card works
 * without it.
 */
static void ga_hwmon_register(struct ga_card *card)
{
	struct device *parent = card->pdev ? &card->pdev->dev : card->dma_dev;
	const char *why;
	struct device *hw;

	card->sysmon_family = ga_sysmon_probe(ga_hwmon_fw_read, card, &why);
	if (card->sysmon_family < 0) {
		dev_info(card->dev, "no hwmon: %s\n", why);
		return;
	}
	hw = hwmon_device_register_with_info(parent ? parent : card->dev, "datadev", card,
					     &ga_hwmon_chip, NULL);
	if (IS_ERR(hw)) {
		dev_warn(card->dev, "no hwmon: registering it failed (%ld)\n", PTR_ERR(hw));
		return;
	}
	card->hwmon = hw;
	dev_info(card->dev, "hwmon %s: %s SysMon\n", dev_name(hw),
		 ga_sysmon_families[card->sysmon_family].name);
}

/* The node's mode and group, from node_mode and node_gid. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
static char *ga_devnode(const struct device *dev, umode_t *mode, kuid_t *uid, kgid_t *gid)
#else
static char *ga_devnode(struct device *dev, umode_t *mode, kuid_t *uid, kgid_t *gid)
#endif
{
	if (mode)
		*mode = node_mode;
	if (gid)
		*gid = make_kgid(&init_user_ns, node_gid);
	return NULL;
}

static const struct device_type ga_card_type = {
	.name = "gpuasync_card",
	.devnode = ga_devnode,
};

static void ga_dev_release(struct device *dev)
{
	kfree(dev);
}

int ga_card_register(struct ga_card *card, struct device *parent)
{
	const struct ga_fw_field *map = &ga_fw_fields[GA_FW_MEMORY_MAP_VERSION];
	const char *refused;
	int minor, ret = -ENOSPC;

	/* Before anything touches the card: on a newer map the blocks may
	 * have moved (upstream refuses the same way). */
	card->map_version = ga_fw_put(GA_FW_MEMORY_MAP_VERSION, 0, ~0u) &
			    card->ops->read32(card, GA_FW_BASE + map->offset);
	card->map_version >>= map->lsb;
	refused = ga_memmap_refused(card->map_version);
	if (refused) {
		pr_err("gpuasync: %s: memory-map version %u refused: %s\n", card->name,
		       card->map_version, refused);
		return -EPFNOSUPPORT;
	}
	ga_card_identify(card);
	mutex_lock(&ga_cards_lock);
	for (minor = 0; minor < GA_MAX_CARDS; minor++) {
		if (!ga_cards[minor]) {
			ga_cards[minor] = card;
			card->minor = minor;
			ret = 0;
			break;
		}
	}
	mutex_unlock(&ga_cards_lock);
	if (ret)
		return ret;
	card->cdev = cdev_alloc();
	if (!card->cdev) {
		ret = -ENOMEM;
		goto out_free_minor;
	}
	card->cdev->ops = &ga_fops;
	card->cdev->owner = THIS_MODULE;
	ret = cdev_add(card->cdev, MKDEV(MAJOR(ga_devt), card->minor), 1);
	if (ret)
		goto out_put_cdev;
	/* By hand rather than device_create(): the type carries the node's
	 * mode and group, and must be set before the node is made. */
	card->dev = kzalloc(sizeof(*card->dev), GFP_KERNEL);
	if (!card->dev) {
		ret = -ENOMEM;
		goto out_del_cdev;
	}
	device_initialize(card->dev);
	card->dev->class = ga_class;
	card->dev->parent = parent;
	card->dev->devt = MKDEV(MAJOR(ga_devt), card->minor);
	card->dev->type = &ga_card_type;
	/* Ours, then what this kind of card adds (the emulator's). */
	card->groups[0] = &ga_card_group;
	card->groups[1] = card->ops->group;
	card->dev->groups = card->groups;
	card->dev->release = ga_dev_release;
	dev_set_drvdata(card->dev, card);
	ret = dev_set_name(card->dev, "%s", card->name);
	if (!ret)
		ret = device_add(card->dev);
	if (ret) {
		put_device(card->dev);
		card->dev = NULL;
		goto out_del_cdev;
	}
	dev_info(card->dev, "GpuAsyncCore version %u, %u buffers, DmaDataBytes %u%s%s\n",
		 card->version, card->max_buffers, card->dma_data_bytes,
		 card->emulated ? ", emulated" : "", card->gpu_en ? "" : " (GPU async disabled)");
	if (!card->gpu_en)
		dev_warn(card->dev,
			 "GPU async disabled: %s; registers stay readable, buffers are refused\n",
			 card->gpu_off_why);
	ga_hwmon_register(card);
	/* Not fatal: the card works without its status page. */
	card->proc = proc_create_single_data(card->name, 0444, NULL, ga_proc_show, card);
	if (!card->proc)
		dev_warn(card->dev, "no /proc/%s (is another driver's entry of that name there?)\n",
			 card->name);
	/* debugfs takes error pointers and reports its own failures. */
	card->debugfs = debugfs_create_dir(card->name, ga_debugfs);
	debugfs_create_file("commands", 0444, card->debugfs, card, &ga_commands_fops);
	return 0;

out_del_cdev:
	cdev_del(card->cdev); /* drops the cdev's reference too */
	card->cdev = NULL;
	goto out_free_minor;
out_put_cdev:
	kobject_put(&card->cdev->kobj);
	card->cdev = NULL;
out_free_minor:
	mutex_lock(&ga_cards_lock);
	ga_cards[card->minor] = NULL;
	mutex_unlock(&ga_cards_lock);
	card->minor = -1;
	return ret;
}

/*
 * Take the card away: no new opens, buffers released now (the hardware may
 * go), open files see -ENODEV; the memory goes with the last reference.
 */
void ga_card_unregister(struct ga_card *card)
{
	/* Waits for readers of the hwmon files to finish. */
	if (card->hwmon)
		hwmon_device_unregister(card->hwmon);
	card->hwmon = NULL;
	/* Waits for readers of the status page to finish. */
	proc_remove(card->proc);
	card->proc = NULL;
	debugfs_remove_recursive(card->debugfs);
	card->debugfs = NULL;
	mutex_lock(&card->lock);
	mutex_lock(&card->reg_lock);
	WRITE_ONCE(card->dead, true);
	mutex_unlock(&card->reg_lock);
	ga_remove_bufs(card, ga_pick_all, NULL);
	mutex_unlock(&card->lock);
	if (card->minor >= 0) {
		mutex_lock(&ga_cards_lock);
		ga_cards[card->minor] = NULL;
		mutex_unlock(&ga_cards_lock);
		device_destroy(ga_class, MKDEV(MAJOR(ga_devt), card->minor));
		card->dev = NULL;
		cdev_del(card->cdev);
		card->cdev = NULL;
		card->minor = -1;
	}
	if (card->ops->stop)
		card->ops->stop(card);
	ga_card_put(card);
}

/* ---- PCI binding (only with bind_pci=1: ga_main.c) ----------------------------------- */

/*
 * Real cards keep their registers in BAR0.  The platform suite binds a
 * QEMU device whose RAM BAR holds a register image (tests/platform/run.sh),
 * so it names that BAR here; nothing else should.
 */
static unsigned int reg_bar;
module_param(reg_bar, uint, 0444);
MODULE_PARM_DESC(reg_bar, "BAR holding the registers (default 0; tests: a stand-in's RAM BAR)");

/*
 * Node names, as upstream datadev's cfgDevName: 0 numbers the cards
 * datadev_0, datadev_1, ... in the order they are bound (the lowest number
 * free); 1 names each after its PCI bus number in hex (datadev_84), which
 * stays the same across reloads and is what LCLS-II's Slurm pairing
 * (gres type dd84) expects.  The same name is the card's /proc entry.
 */
static int cfg_dev_name;
module_param_named(cfgDevName, cfg_dev_name, int, 0444);
MODULE_PARM_DESC(cfgDevName,
		 "PCI cards: 0 names nodes datadev_<index> (default), 1 datadev_<PCI bus number in hex>, as upstream datadev");

static DEFINE_IDA(ga_pci_ida);

struct ga_pci {
	void __iomem *bar;
	resource_size_t start, len;
	int index; /* datadev_<index> (cfgDevName=0), or -1 */
};

static u32 ga_pci_read32(struct ga_card *card, u32 off)
{
	struct ga_pci *p = card->priv;

	return readl(p->bar + off);
}

static void ga_pci_write32(struct ga_card *card, u32 off, u32 val)
{
	struct ga_pci *p = card->priv;

	writel(val, p->bar + off);
}

/* One 64-bit store: a single PCIe write, not two. */
static void ga_pci_write64(struct ga_card *card, u32 off, u64 val)
{
	struct ga_pci *p = card->priv;

	writeq(val, p->bar + off);
}

static int ga_pci_mmap(struct ga_card *card, struct vm_area_struct *vma, u64 bar_off)
{
	struct ga_pci *p = card->priv;

	vma->vm_page_prot = pgprot_noncached(vma->vm_page_prot);
	return vm_iomap_memory(vma, p->start + bar_off, vma->vm_end - vma->vm_start);
}

static void ga_pci_destroy_priv(struct ga_pci *p)
{
	if (p->index >= 0)
		ida_free(&ga_pci_ida, p->index);
	kfree(p);
}

static void ga_pci_destroy(struct ga_card *card)
{
	ga_pci_destroy_priv(card->priv);
}

static const struct ga_card_ops ga_pci_ops = {
	.read32 = ga_pci_read32,
	.write32 = ga_pci_write32,
	.write64 = ga_pci_write64,
	.mmap = ga_pci_mmap,
	.destroy = ga_pci_destroy,
};

static int ga_pci_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct ga_card *card;
	struct ga_pci *p;
	char name[32];
	int ret;

	if (reg_bar > PCI_STD_RESOURCE_END ||
	    !(pci_resource_flags(pdev, reg_bar) & IORESOURCE_MEM)) {
		dev_err(&pdev->dev, "reg_bar=%u: not a memory BAR of this device; not bound\n",
			reg_bar);
		return -ENODEV;
	}
	/* A device that is no datadev card (bound by hand through
	 * driver_override or new_id) is refused here, before any access. */
	if (pci_resource_len(pdev, reg_bar) < ga_core_offset + GA_CORE_SIZE ||
	    pci_resource_len(pdev, reg_bar) > GA_BAR_SIZE) {
		dev_err(&pdev->dev,
			"BAR%u of %llu bytes cannot hold GpuAsyncCore at 0x%x (a datadev card's "
			"BAR is 0x%x..16 MiB): not a GpuAsyncCore card; not bound\n",
			reg_bar, (unsigned long long)pci_resource_len(pdev, reg_bar),
			ga_core_offset, ga_core_offset + GA_CORE_SIZE);
		return -ENODEV;
	}
	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	ret = pcim_iomap_regions(pdev, BIT(reg_bar), "gpuasync");
	if (ret)
		return ret;
	pci_set_master(pdev);
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (ret)
		return ret;
	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	p->bar = pcim_iomap_table(pdev)[reg_bar];
	p->start = pci_resource_start(pdev, reg_bar);
	p->len = pci_resource_len(pdev, reg_bar);
	p->index = -1;
	if (cfg_dev_name) {
		snprintf(name, sizeof(name), "datadev_%02x", pdev->bus->number);
	} else {
		p->index = ida_alloc_max(&ga_pci_ida, GA_MAX_CARDS - 1, GFP_KERNEL);
		if (p->index < 0) {
			ret = p->index;
			kfree(p);
			return ret;
		}
		snprintf(name, sizeof(name), "datadev_%d", p->index);
	}
	card = ga_card_alloc(name, &ga_pci_ops, p);
	if (!card) {
		ga_pci_destroy_priv(p);
		return -ENOMEM;
	}
	card->pdev = pdev;
	card->dma_dev = &pdev->dev;
	card->bar_len = p->len;
	ret = ga_card_register(card, &pdev->dev);
	if (ret) {
		ga_card_unregister(card);
		return ret;
	}
	pci_set_drvdata(pdev, card);
	return 0;
}

static void ga_pci_remove(struct pci_dev *pdev)
{
	ga_card_unregister(pci_get_drvdata(pdev));
}

/* No MODULE_DEVICE_TABLE on purpose: udev must not load us for these cards. */
static const struct pci_device_id ga_pci_ids[] = {
	{ PCI_DEVICE(GA_PCI_VENDOR_SLAC, GA_PCI_DEVICE_CARD) },
	{},
};

static struct pci_driver ga_pci_driver = {
	.name = "gpuasync",
	.id_table = ga_pci_ids,
	.probe = ga_pci_probe,
	.remove = ga_pci_remove,
};

/* Real cards come and go through the PCI core once this is registered. */
int ga_pci_register(void)
{
	return pci_register_driver(&ga_pci_driver);
}

void ga_pci_unregister(void)
{
	pci_unregister_driver(&ga_pci_driver);
}

/* ---- driver setup (module init is ga_main.c) ------------------------------ */

int ga_drv_init(void)
{
	int ret;

	if (node_mode & ~0777u) {
		pr_err("gpuasync: node_mode=0%o: permission bits only (0..0777)\n", node_mode);
		return -EINVAL;
	}
	if (node_mode & 0002)
		pr_warn("gpuasync: node_mode=0%o: every local user may open the cards\n", node_mode);
	/* Page aligned (it is mapped), clear of AxiVersion's page, in the BAR. */
	if ((ga_core_offset & (PAGE_SIZE - 1)) || ga_core_offset > GA_BAR_SIZE - GA_CORE_SIZE ||
	    (ga_core_offset < GA_AXIVERSION_OFFSET + PAGE_SIZE &&
	     ga_core_offset + GA_CORE_SIZE > GA_AXIVERSION_OFFSET)) {
		pr_err("gpuasync: core_offset=0x%x: must be page aligned, inside the 16 MiB BAR and "
		       "clear of AxiVersion at 0x%x\n",
		       ga_core_offset, GA_AXIVERSION_OFFSET);
		return -EINVAL;
	}
	ret = alloc_chrdev_region(&ga_devt, 0, GA_MAX_CARDS, "gpuasync");
	if (ret)
		return ret;
	ga_class = ga_class_create("gpuasync");
	if (IS_ERR(ga_class)) {
		ret = PTR_ERR(ga_class);
		unregister_chrdev_region(ga_devt, GA_MAX_CARDS);
		return ret;
	}
	ga_debugfs = debugfs_create_dir("gpuasync", NULL);
	return 0;
}

/* Every card is unregistered by now. */
void ga_drv_exit(void)
{
	debugfs_remove_recursive(ga_debugfs);
	class_destroy(ga_class);
	unregister_chrdev_region(ga_devt, GA_MAX_CARDS);
	WARN(atomic_read(&ga_live_pins), "gpuasync: %d GPU pins leaked\n",
	     atomic_read(&ga_live_pins));
	WARN(atomic_read(&ga_live_dmabufs), "gpuasync: %d dma-buf attachments leaked\n",
	     atomic_read(&ga_live_dmabufs));
}
