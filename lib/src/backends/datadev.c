/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * datadev backend: a GpuAsyncCore card behind SLAC's upstream datadev
 * driver or our gpuasync.ko, spoken to only through the ABI in
 * gpuasync/abi.h, so the same code runs on both and needs no hardware
 * beyond the character device.
 *
 * At open we ask the driver what it has: the GpuAsync support flag,
 * firmware version and max buffers (ioctls), DmaDataBytes (register), the
 * DMA clock (AxiVersion userValues[4]).  Which driver it is comes from
 * sysfs and /proc, never from probing: upstream logs every code it does not
 * know, and an enable ioctl would touch the engine.  gpuasync.ko then tells
 * its extension bits (GA_Get_Abi_Version, GA_FEAT_DMABUF among them: a
 * buffer is then registered from a dma-buf fd, GA_Add_Dmabuf, when the pin
 * path is dmabuf).  Upstream's dma-buf commands of after 7.5.1 (0x800A-0x800E)
 * are asked about only where they cannot be unknown (dd_probe_gpu_apis): a
 * whole dma-buf then goes through GPU_DmaBuf_Add_Wr/Rd_Buffer and remove-all
 * through GPU_DmaBuf_Remove_Buffers.  Upstream 7.5 (an "Owning
 * Process" in /proc) has GPU_Enable_Tx/Rx and owns the GPU state per thread,
 * so its GPU-state ioctls go through one owner thread (datadev_owner.c).  Registers go through an
 * mmap of the core block when the driver allows it (one load/store per access, no syscall) and
 * through DMA_Read/Write_Register otherwise.
 *
 * The upstream driver reports many failures as a bare -1, which user space
 * sees as EPERM whatever went wrong, and "no GPU support" as the kernel's
 * private 524.  ga_datadev_error() is the one place that turns those into
 * an errno that means something plus an explanation, per command, from one
 * table (dd_errno_policy).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "datadev_owner.h"
#include "gpuasync/sysmon.h"
#include "internal.h"

/* Which driver is behind the node, found without sending it anything it
 * does not know (upstream logs unknown codes) and without changing state. */
enum dd_driver {
	DD_UPSTREAM,	   /* aes-stream-drivers without ownership (7.4) */
	DD_UPSTREAM_OWNED, /* pre-release/7.5: enable ioctls, one owner */
	DD_GPUASYNC,	   /* gpuasync.ko: extensions, owner by process */
};

struct dd_priv {
	int fd;
	char path[128];
	volatile uint32_t *regs; /* mapped core block; NULL: register ioctls */
	bool can_map;		 /* map_offset is known to reach the core block */
	uint64_t map_offset;	 /* file offset of the core block */
	uint32_t core;		 /* GpuAsyncCore's offset in BAR0 */
	uint32_t features;	 /* GA_FEAT_* from gpuasync.ko, 0 on upstream */
	bool whole_dmabuf;	 /* GPU_DmaBuf_Add_*: GPU_Is_Dma_Buf_Supp said 1 */
	bool gpudirect;		 /* GPU_Add_Nvidia_Memory pins (GPU_Is_GpuDirect_Supp) */
	bool enable_ioctl;	 /* GPU_Enable_Tx/Rx exist */
	int api_version;	 /* DMA_Get_Version, -1 unknown */
	enum dd_driver driver;
	char proc[80];		/* upstream's /proc/datadev_N, "" if none */
	struct dd_owner *owner; /* GPU-state ioctls go through it, or NULL */
	bool observe;		/* opened O_RDONLY, registers mapped PROT_READ */
};

static struct dd_priv *dd(struct ga_dev *dev)
{
	return dev->priv;
}

/* The ABI's one table (gpuasync/abi.h), for names and matching. */
static const struct ga_abi_row dd_abi[] = {
#define GA_DEF_IOCTL GA_ABI_ROW
#include <gpuasync/ioctls.def>
};

const char *ga_datadev_cmd_name(unsigned int cmd)
{
	for (size_t i = 0; i < sizeof(dd_abi) / sizeof(dd_abi[0]); i++)
		if (ga_abi_match(&dd_abi[i], cmd) && ga_abi_size_ok(&dd_abi[i], cmd))
			return dd_abi[i].name;
	return "unknown ioctl";
}

/*
 * The one errno policy, as data.  @err is the positive errno an ioctl left
 * behind; EPERM is the upstream driver's bare -1, so what it means depends
 * on the command.  The first row whose command (ANY_CMD: every command)
 * and errno match decides; rows for one command come before the ANY_CMD
 * catch-alls at the end.  Unmatched: the errno as it is, with strerror.
 */
#define ANY_CMD		0u
#define OWNED_ELSEWHERE "the GpuAsyncCore is owned by another process"
#define NOT_IMPLEMENTED "not implemented by this driver"
#define NO_GPU_STATE	"driver has no GPU state for this card"
#define DMABUF_ENOTSUPP                                                                            \
	"driver built without GPU support or card has GpuAsync disabled, or the dma-buf's "        \
	"exporter refused the card's device (NVIDIA's does when the PCIe topology gives no "       \
	"peer-to-peer path)"
#define DMABUF_FD_CLOSED "the buffer's dma-buf fd is not open"
#define DMABUF_EXPORTER_REFUSED                                                                    \
	"the dma-buf's exporter refused to attach the card's device (no peer-to-peer path "        \
	"between them?)"
#define DMABUF_WHOLE_REFUSED                                                                       \
	"driver rejected the dma-buf: not a dma-buf, size not a non-zero multiple of 64 KiB or "   \
	"above 4 GiB - 64 KiB, too many buffers, a write buffer of another size than the "         \
	"others (V4 and up), or memory not contiguous on the bus (the kernel log says which)"

static const struct dd_errno_row {
	unsigned int cmd;
	int err;
	int ret;	 /* negative errno the library reports */
	const char *why; /* the explanation, after "<command>: " */
} dd_errno_policy[] = {
	/* NVIDIA's dma-buf exporter refuses an attachment it cannot serve with
	 * the kernel's ENOTSUPP too (nv-dmabuf.c, PCIe topology check). */
	{GA_Add_Dmabuf, GA_KERNEL_ENOTSUPP, -ENOTSUP, DMABUF_ENOTSUPP},
	{GPU_DmaBuf_Add_Wr_Buffer, GA_KERNEL_ENOTSUPP, -ENOTSUP, DMABUF_ENOTSUPP},
	{GPU_DmaBuf_Add_Rd_Buffer, GA_KERNEL_ENOTSUPP, -ENOTSUP, DMABUF_ENOTSUPP},
	{ANY_CMD, GA_KERNEL_ENOTSUPP, -ENOTSUP,
	 "driver built without GPU support or card has GpuAsync disabled"},
	{ANY_CMD, ENOTTY, -ENOTTY,
	 "the device does not implement this ioctl (not a datadev device, or an older driver)"},

	{GPU_Add_Nvidia_Memory, EPERM, -EFAULT,
	 "driver refused the buffer (pinning failed or index limit): is it CUDA device memory, "
	 "and is GPUDirect RDMA (nvidia p2p) available?"},
	{GPU_Add_Nvidia_Memory, EINVAL, -EINVAL,
	 "driver rejected the buffer: size not a multiple of 64 KiB, too many buffers, or (V4) "
	 "a size different from the other write buffers"},
	{GPU_Add_Nvidia_Memory, EBUSY, -EBUSY, OWNED_ELSEWHERE},

	{GPU_Set_Write_Enable, ENXIO, -ENXIO,
	 "the buffer's GPU memory went away (invalidated): destroy it and create it again"},
	{GPU_Set_Write_Enable, EPERM, -ERANGE,
	 "buffer index out of range (not a registered write buffer)"},
	{GPU_Set_Write_Enable, EINVAL, -ERANGE,
	 "buffer index out of range (not a registered write buffer)"},
	{GPU_Set_Write_Enable, EBUSY, -EBUSY, OWNED_ELSEWHERE},
	{GA_Arm_Buffers, ENXIO, -ENXIO,
	 "the buffer's GPU memory went away (invalidated): destroy it and create it again"},
	{GA_Arm_Buffers, EPERM, -ERANGE,
	 "buffer index out of range (not a registered write buffer)"},
	{GA_Arm_Buffers, EINVAL, -ERANGE,
	 "buffer index out of range (not a registered write buffer)"},
	{GA_Arm_Buffers, EBUSY, -EBUSY, OWNED_ELSEWHERE},

	{GPU_Rem_Nvidia_Memory, EPERM, -ENODEV, NO_GPU_STATE},
	{GPU_Rem_Nvidia_Memory, EBUSY, -EBUSY,
	 OWNED_ELSEWHERE " (or no longer owned after an invalidation): only the owner can remove "
			 "buffers"},

	{GA_Add_Dmabuf, EBADF, -EBADF, DMABUF_FD_CLOSED},
	{GA_Add_Dmabuf, EINVAL, -EINVAL,
	 "driver rejected the dma-buf: not a dma-buf, offset not 64 KiB aligned, size not a "
	 "non-zero multiple of 64 KiB, range outside the dma-buf, too many buffers, or memory "
	 "not contiguous on the bus (the card takes one base address; the kernel log says "
	 "which)"},
	{GA_Add_Dmabuf, EBUSY, -EBUSY, OWNED_ELSEWHERE},
	{GA_Add_Dmabuf, EOPNOTSUPP, -EOPNOTSUPP, DMABUF_EXPORTER_REFUSED},
	{GA_Add_Dmabuf, EPERM, -ENOTTY, NOT_IMPLEMENTED},

	/* Upstream's by-value form (the whole dma-buf), as gpuasync.ko checks it. */
	{GPU_DmaBuf_Add_Wr_Buffer, EBADF, -EBADF, DMABUF_FD_CLOSED},
	{GPU_DmaBuf_Add_Rd_Buffer, EBADF, -EBADF, DMABUF_FD_CLOSED},
	{GPU_DmaBuf_Add_Wr_Buffer, EINVAL, -EINVAL, DMABUF_WHOLE_REFUSED},
	{GPU_DmaBuf_Add_Rd_Buffer, EINVAL, -EINVAL, DMABUF_WHOLE_REFUSED},
	{GPU_DmaBuf_Add_Wr_Buffer, EBUSY, -EBUSY, OWNED_ELSEWHERE},
	{GPU_DmaBuf_Add_Rd_Buffer, EBUSY, -EBUSY, OWNED_ELSEWHERE},
	{GPU_DmaBuf_Add_Wr_Buffer, EOPNOTSUPP, -EOPNOTSUPP, DMABUF_EXPORTER_REFUSED},
	{GPU_DmaBuf_Add_Rd_Buffer, EOPNOTSUPP, -EOPNOTSUPP, DMABUF_EXPORTER_REFUSED},
	{GPU_DmaBuf_Remove_Buffers, EBUSY, -EBUSY,
	 OWNED_ELSEWHERE ": only the owner can remove buffers"},
	/* Drivers before them: a bare -1 (upstream, with a kernel-log line). */
	{GPU_Is_Dma_Buf_Supp, EPERM, -ENOTTY, NOT_IMPLEMENTED},
	{GPU_Is_GpuDirect_Supp, EPERM, -ENOTTY, NOT_IMPLEMENTED},
	{GPU_DmaBuf_Add_Wr_Buffer, EPERM, -ENOTTY, NOT_IMPLEMENTED},
	{GPU_DmaBuf_Add_Rd_Buffer, EPERM, -ENOTTY, NOT_IMPLEMENTED},
	{GPU_DmaBuf_Remove_Buffers, EPERM, -ENOTTY, NOT_IMPLEMENTED},

	{GA_Rem_Buffer, EINVAL, -EINVAL, "only the last buffer of a direction can be removed"},
	{GA_Rem_Buffer, EBUSY, -EBUSY,
	 "the driver removes no buffer while that direction's engine runs (or another process "
	 "owns the core): set write_enable/read_enable to 0 first"},
	{GA_Rem_Buffer, EPERM, -ENOTTY, NOT_IMPLEMENTED},

	{DMA_Read_Register, EPERM, -ERANGE,
	 "offset outside the driver's register window (BAR0 0x10000..0xfffffc)"},
	{DMA_Write_Register, EPERM, -ERANGE,
	 "offset outside the driver's register window (BAR0 0x10000..0xfffffc)"},
	{GA_Write_Register_Masked, EINVAL, -ERANGE,
	 "offset outside the driver's register window (BAR0 0x10000..0xfffffc)"},

	{GPU_Is_Gpu_Async_Supp, EPERM, -ENODEV, NO_GPU_STATE},
	{GPU_Get_Gpu_Async_Ver, EPERM, -ENODEV, NO_GPU_STATE},
	{GPU_Get_Max_Buffers, EPERM, -ENODEV, NO_GPU_STATE},

	{GPU_Enable_Tx, EBUSY, -EBUSY, OWNED_ELSEWHERE},
	{GPU_Enable_Rx, EBUSY, -EBUSY, OWNED_ELSEWHERE},
	/* upstream main does not know these codes: bare -1 */
	{GPU_Enable_Tx, EPERM, -ENOTTY, NOT_IMPLEMENTED},
	{GPU_Enable_Rx, EPERM, -ENOTTY, NOT_IMPLEMENTED},
	{GA_Get_Abi_Version, EPERM, -ENOTTY, NOT_IMPLEMENTED},
	{GA_Get_Buffer_Table, EPERM, -ENOTTY, NOT_IMPLEMENTED},

	{ANY_CMD, EPERM, -EIO, "driver reported a failure (bare -1)"},
};

/* The window in the register rows' text is the ABI's. */
static_assert(DMA_REG_WINDOW_START == 0x10000u && DMA_REG_WINDOW_END - 4 == 0xfffffcu,
	      "update the register-window text in dd_errno_policy");

/* Returns a negative errno with ga_err() set, by dd_errno_policy. */
int ga_datadev_error(unsigned int cmd, int err)
{
	const char *name = ga_datadev_cmd_name(cmd);

	for (size_t i = 0; i < sizeof(dd_errno_policy) / sizeof(dd_errno_policy[0]); i++) {
		const struct dd_errno_row *r = &dd_errno_policy[i];

		if ((r->cmd == cmd || r->cmd == ANY_CMD) && r->err == err)
			return ga_err(r->ret, "%s: %s", name, r->why);
	}
	return ga_err(-err, "%s: %s", name, strerror(err));
}

static const char *dd_driver_name(const struct dd_priv *p)
{
	switch (p->driver) {
	case DD_GPUASYNC:
		return "gpuasync.ko";
	case DD_UPSTREAM_OWNED:
		return "datadev (upstream, one owner per card: GPU-state ioctls from one thread)";
	default:
		return "datadev (upstream)";
	}
}

/* Upstream 7.5's /proc/datadev_N names the owner of the GPU state (a
 * thread id on 7.5.0/7.5.1): say which process that is when the driver
 * answers EBUSY. */
static int dd_busy(struct dd_priv *p, int rc)
{
	char line[256], comm[64] = "", path[64], why[256];
	long tid = -1, pid = -1;
	FILE *f;

	if (!p->proc[0] || !(f = fopen(p->proc, "r")))
		return rc;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " Owning Process : %ld", &tid) == 1)
			break;
	fclose(f);
	if (tid <= 0)
		return rc;
	pid = tid;
	snprintf(path, sizeof(path), "/proc/%ld/status", tid);
	if ((f = fopen(path, "r"))) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Name: %63s", comm) == 1 ||
			    sscanf(line, "Tgid: %ld", &pid) == 1)
				continue;
		fclose(f);
	}
	snprintf(why, sizeof(why), "%s", ga_last_error()); /* ga_err writes over it */
	return ga_err(rc, "%s (owner: process %ld%s%s%s, %s)", why, pid, comm[0] ? " \"" : "", comm,
		      comm[0] ? "\"" : "", p->proc);
}

/* Commands the driver checks against the GPU state's owner. */
static bool dd_owned_cmd(unsigned int cmd)
{
	return cmd == GPU_Add_Nvidia_Memory || cmd == GPU_Rem_Nvidia_Memory ||
	       cmd == GPU_Set_Write_Enable || cmd == GPU_Enable_Tx || cmd == GPU_Enable_Rx ||
	       cmd == GPU_DmaBuf_Add_Wr_Buffer || cmd == GPU_DmaBuf_Add_Rd_Buffer ||
	       cmd == GPU_DmaBuf_Remove_Buffers;
}

/* ioctl returning the driver's non-negative result or a mapped error; the
 * GPU-state commands go through the owner thread where there is one. */
static int dd_ioctl(struct dd_priv *p, unsigned int cmd, unsigned long arg)
{
	int r, err = 0;

	if (p->owner && dd_owned_cmd(cmd)) {
		r = dd_owner_ioctl(p->owner, cmd, arg, &err);
	} else {
		r = ioctl(p->fd, cmd, arg);
		err = errno;
	}
	if (r >= 0)
		return r;
	/* gpuasync.ko's EPERM is a permission, not upstream's bare -1. */
	if (err == EPERM && p->driver == DD_GPUASYNC &&
	    (cmd == DMA_Write_Register || cmd == GA_Write_Register_Masked))
		return ga_err(-EPERM,
			      "%s: register writes are for the owner of the card's GPU state (the "
			      "process holding its buffers) or CAP_SYS_RAWIO (gpuasync.ko)",
			      p->path);
	r = ga_datadev_error(cmd, err);
	return err == EBUSY ? dd_busy(p, r) : r;
}

static int dd_reg_read(struct ga_dev *dev, uint32_t off, uint32_t *val)
{
	struct dd_priv *p = dd(dev);
	struct DmaRegisterData r = {.address = p->core + off};
	int rc;

	if (p->regs) {
		*val = p->regs[off / 4];
		return 0;
	}
	rc = dd_ioctl(p, DMA_Read_Register, (unsigned long)&r);
	if (rc < 0)
		return rc;
	*val = r.data;
	return 0;
}

/* The card decides which bits keep a write (ScratchPad does). */
static int dd_fw_write(struct ga_dev *dev, uint32_t off, uint32_t val)
{
	struct DmaRegisterData r = {.address = GA_FW_BASE + off, .data = val};
	int rc = dd_ioctl(dd(dev), DMA_Write_Register, (unsigned long)&r);

	return rc < 0 ? rc : 0;
}

/* AxiVersion through the register ioctl (BAR0 0x20000 is inside the
 * window it allows, 0x10000 and up); the mapping covers the core only. */
static int dd_fw_read(struct ga_dev *dev, uint32_t off, uint32_t *val)
{
	struct DmaRegisterData r = {.address = GA_FW_BASE + off};
	int rc = dd_ioctl(dd(dev), DMA_Read_Register, (unsigned long)&r);

	if (rc < 0)
		return rc;
	*val = r.data;
	return 0;
}

static int dd_reg_write(struct ga_dev *dev, uint32_t off, uint32_t val)
{
	struct dd_priv *p = dd(dev);
	struct DmaRegisterData r = {.address = p->core + off, .data = val};
	int rc;

	if (p->regs) {
		p->regs[off / 4] = val;
		return 0;
	}
	rc = dd_ioctl(p, DMA_Write_Register, (unsigned long)&r);
	return rc < 0 ? rc : 0;
}

/* gpuasync.ko from ABI 5: the field changes under the driver's register
 * lock, so the counts it keeps in the same word are never lost. */
static int dd_reg_write_masked(struct ga_dev *dev, uint32_t off, uint32_t mask, uint32_t val)
{
	struct dd_priv *p = dd(dev);
	struct ga_reg_masked r = {.address = p->core + off, .mask = mask, .data = val};
	int rc;

	if (!(p->features & GA_FEAT_MASKED_WRITE))
		return -EOPNOTSUPP;
	rc = dd_ioctl(p, GA_Write_Register_Masked, (unsigned long)&r);
	return rc < 0 ? rc : 0;
}

/* Field of a register by id, through the table (used at open, before
 * dev.c has set the layout). */
static int dd_field(struct ga_dev *dev, enum ga_layout layout, enum ga_reg_id id,
		    unsigned int index, uint32_t *val)
{
	uint32_t off, word;
	int rc;

	rc = ga_reg_offset(id, layout, dev->info.version, index, dev->info.max_buffers, &off);
	if (rc)
		return ga_err(rc, "register %s not in this layout", ga_regs[id].name);
	rc = dd_reg_read(dev, off, &word);
	if (rc)
		return rc;
	*val = ga_reg_field_get(id, layout, word);
	return 0;
}

/* Map the core block at @off and check that it really is the core: the
 * version word must match what the driver reported. */
static void dd_try_map(struct dd_priv *p, unsigned int version)
{
	long page = sysconf(_SC_PAGESIZE);
	int count = ioctl(p->fd, DMA_Get_Buff_Count, 0);
	int bsize = ioctl(p->fd, DMA_Get_Buff_Size, 0);
	/* The version field is at the same place in every layout. */
	enum ga_layout layout = ga_layout_for_version(version, false);
	const volatile uint32_t *words;
	uint32_t voff;
	uint64_t off;
	void *m;

	if (count < 0 || bsize < 0) {
		ga_log("datadev %s: no DMA buffer geometry, registers via ioctl", p->path);
		return;
	}
	off = (uint64_t)count * (uint64_t)bsize + p->core;
	if (page <= 0 || off % (uint64_t)page != 0) {
		ga_log("datadev %s: register block offset 0x%llx not page aligned", p->path,
		       (unsigned long long)off);
		return;
	}
	/* An observer maps read-only: no store can reach the card, and
	 * gpuasync.ko lets anyone who may open the node do that. */
	m = mmap(NULL, GA_CORE_SIZE, p->observe ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED,
		 p->fd, (off_t)off);
	if (m == MAP_FAILED) {
		ga_log("datadev %s: mmap of registers failed (%s), using ioctls", p->path,
		       strerror(errno));
		return;
	}
	words = m;
	if (ga_reg_offset(GA_REG_VERSION, layout, version, 0, 1, &voff) ||
	    ga_reg_field_get(GA_REG_VERSION, layout, words[voff / 4]) != version) {
		ga_log("datadev %s: mapped block does not look like the GpuAsyncCore", p->path);
		munmap(m, GA_CORE_SIZE);
		return;
	}
	p->regs = m;
	p->can_map = true;
	p->map_offset = off;
}

static void dd_free(struct dd_priv *p)
{
	dd_owner_stop(p->owner);
	if (p->regs)
		munmap((void *)p->regs, GA_CORE_SIZE);
	if (p->fd >= 0)
		close(p->fd);
	free(p);
}

/*
 * Which driver is this?  gpuasync.ko's nodes belong to its "gpuasync" class
 * (sysfs); upstream's /proc/datadev_N exists under the node's name and, from
 * 7.5 on, has an "Owning Process" line: those releases have GPU_Enable_Tx/Rx
 * and one owner per card.  Nothing is sent to the device.
 */
static void dd_identify(struct dd_priv *p, const struct stat *st)
{
	char path[PATH_MAX], link[PATH_MAX], line[256];
	const char *name;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/subsystem", major(st->st_rdev),
		 minor(st->st_rdev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = '\0';
		name = strrchr(link, '/');
		if (strcmp(name ? name + 1 : link, "gpuasync") == 0) {
			p->driver = DD_GPUASYNC;
			return;
		}
	}
	p->driver = DD_UPSTREAM;
	if (!realpath(p->path, path))
		return;
	name = strrchr(path, '/');
	name = name ? name + 1 : path;
	if (strlen(name) + sizeof("/proc/") > sizeof(p->proc))
		return;
	snprintf(p->proc, sizeof(p->proc), "/proc/%.*s", (int)(sizeof(p->proc) - 7), name);
	f = fopen(p->proc, "r");
	if (!f) {
		p->proc[0] = '\0';
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "Owning Process"))
			p->driver = DD_UPSTREAM_OWNED;
	fclose(f);
}

/*
 * Where GpuAsyncCore is in BAR0.  gpuasync.ko says where its cards have it
 * (sysfs core_offset, its module parameter); upstream's datadev has it at
 * 0x28000, fixed: its GPU ioctls program buffer addresses there, so a core
 * elsewhere cannot work with it.  @want (the configuration; 0: the
 * driver's) must agree.
 */
static int dd_core_offset(struct dd_priv *p, uint32_t want)
{
	char path[PATH_MAX], buf[32] = "";
	struct stat st;
	FILE *f;
	uint32_t have = GA_CORE_OFFSET;

	if (p->driver == DD_GPUASYNC && fstat(p->fd, &st) == 0) {
		snprintf(path, sizeof(path), "/sys/dev/char/%u:%u/core_offset", major(st.st_rdev),
			 minor(st.st_rdev));
		f = fopen(path, "r");
		if (f) {
			if (fgets(buf, sizeof(buf), f))
				have = (uint32_t)strtoul(buf, NULL, 0);
			fclose(f);
		}
	}
	if (want && want != have) {
		if (p->driver == DD_GPUASYNC)
			return ga_err(
				-EINVAL,
				"%s: gpuasync.ko has this card's GpuAsyncCore at 0x%x (module "
				"parameter core_offset), the configuration says 0x%x",
				p->path, have, want);
		return ga_err(
			-EINVAL,
			"%s: upstream's datadev programs GpuAsyncCore at 0x%x (its GPU ioctls "
			"write buffer addresses there), so a core at 0x%x cannot work with "
			"it: load gpuasync.ko with core_offset=0x%x instead",
			p->path, have, want, want);
	}
	p->core = have;
	return 0;
}

/*
 * Does upstream's "Git Version" (its /proc line, `git describe` of the
 * build: "v7.5.1", "v7.6.0-3-gabc1234") name a release after 7.5.1, the
 * last one without the dma-buf commands?  Anything else (a hash, a local
 * name) is not known to have them.
 */
bool ga_datadev_gitv_has_dmabuf(const char *gitv)
{
	unsigned int v[3];
	char end;

	if (*gitv == 'v')
		gitv++;
	if (sscanf(gitv, "%u.%u.%u%c", &v[0], &v[1], &v[2], &end) < 3)
		return false;
	if (v[0] != 7)
		return v[0] > 7;
	if (v[1] != 5)
		return v[1] > 5;
	return v[2] > 1;
}

/* Upstream's build from its /proc file: "DMA Driver's Git Version : ...". */
static bool dd_upstream_has_dmabuf(const struct dd_priv *p)
{
	char line[256], gitv[64];
	bool has = false;
	FILE *f;

	if (!p->proc[0] || !(f = fopen(p->proc, "r")))
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " DMA Driver's Git Version : %63s", gitv) == 1)
			has = ga_datadev_gitv_has_dmabuf(gitv);
	fclose(f);
	return has;
}

/*
 * Upstream's commands of after 7.5.1: can the driver take a whole dma-buf
 * by its fd (GPU_Is_Dma_Buf_Supp), and pin GPU memory by address
 * (GPU_Is_GpuDirect_Supp; nvidia-p2p became optional then)?  Asked only
 * where the answer cannot be "unknown command": 7.4 and 7.5 log every code
 * they do not know ("Invalid command") and return a bare -1, so they are
 * never asked.  gpuasync.ko answers them from ABI version 4 on, upstream
 * from a release after 7.5.1 (its /proc Git Version).  Any refusal (ENOTTY
 * or EINVAL from an older driver, the bare -1, 524 with GpuAsync off)
 * reads as "not there", and nothing is reported.
 */
static void dd_probe_gpu_apis(struct dd_priv *p, int abi)
{
	bool ask =
		p->driver == DD_GPUASYNC ? abi > 0 && (abi >> 16) >= 4 : dd_upstream_has_dmabuf(p);
	int r;

	p->whole_dmabuf = false;
	p->gpudirect = true; /* every driver before these commands pins by address */
	if (!ask)
		return;
	p->whole_dmabuf = ioctl(p->fd, GPU_Is_Dma_Buf_Supp, 0) == 1;
	r = ioctl(p->fd, GPU_Is_GpuDirect_Supp, 0);
	if (r >= 0)
		p->gpudirect = r == 1;
}

static int dd_open(struct ga_dev *dev, const char *spec)
{
	struct dd_priv *p;
	struct stat st;
	struct DmaRegisterData clk = {.address = GA_AXIVERSION_CLOCK_HZ};
	int supp, ver, max, rc, abi = -1;
	enum ga_layout layout;
	uint32_t ddb;

	p = calloc(1, sizeof(*p));
	if (!p)
		return ga_err(-ENOMEM, "out of memory");
	p->fd = -1;
	p->api_version = -1;
	snprintf(p->path, sizeof(p->path), "%s", spec);

	p->observe = dev->opts.observe;
	p->fd = open(spec, (p->observe ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (p->fd < 0) {
		int e = errno;

		if (e == ENOENT)
			rc = ga_err(-ENOENT,
				    "%s: no such device (is the datadev driver or "
				    "gpuasync.ko loaded? \"sim\" opens the simulated card)",
				    spec);
		else if (e == EACCES || e == EPERM)
			rc = ga_err(-EACCES, "%s: permission denied (%s access needed)", spec,
				    p->observe ? "read" : "read-write");
		else
			rc = ga_err(-e, "%s: cannot open: %s", spec, strerror(e));
		goto out_free;
	}
	if (fstat(p->fd, &st) < 0 || !S_ISCHR(st.st_mode)) {
		rc = ga_err(-ENODEV, "%s: not a character device (expected /dev/datadev_N)", spec);
		goto out_free;
	}

	dd_identify(p, &st);
	rc = dd_core_offset(p, dev->opts.core_offset);
	if (rc)
		goto out_free;

	p->api_version = ioctl(p->fd, DMA_Get_Version, 0);
	if (p->api_version >= 0 && p->api_version != DMA_VERSION)
		ga_log("datadev %s: driver API version 0x%x (expected 0x%x)", spec, p->api_version,
		       DMA_VERSION);

	/* Ask for the version first: pre-release drivers report it even when
	 * GpuAsync is off, which makes the "not supported" message useful. */
	ver = ioctl(p->fd, GPU_Get_Gpu_Async_Ver, 0);
	supp = ioctl(p->fd, GPU_Is_Gpu_Async_Supp, 0);
	if (supp < 0) {
		if (errno == ENOTTY || errno == EINVAL)
			rc = ga_err(-ENODEV, "%s: does not speak the datadev ABI (%s)", spec,
				    strerror(errno));
		else
			rc = ga_datadev_error(GPU_Is_Gpu_Async_Supp, errno);
		goto out_free;
	}
	if (supp == 0) {
		if (ver > 0)
			rc = ga_err(-ENODEV,
				    "%s: GpuAsync not supported/enabled on this card "
				    "(firmware GpuAsyncCore version %d; the driver may "
				    "not support it)",
				    spec, ver);
		else
			rc = ga_err(-ENODEV, "%s: GpuAsync not supported/enabled on this card",
				    spec);
		goto out_free;
	}
	if (ver < 0) {
		rc = ga_datadev_error(GPU_Get_Gpu_Async_Ver, errno);
		goto out_free;
	}
	layout = ga_layout_for_version((unsigned int)ver, false);
	if (layout == GA_LAYOUT_COUNT) {
		rc = ga_err(-ENOTSUP,
			    "%s: GpuAsyncCore version %d is not one this library knows "
			    "(1-%u)",
			    spec, ver, GA_VERSION_MAX);
		goto out_free;
	}
	max = ioctl(p->fd, GPU_Get_Max_Buffers, 0);
	if (max < 0) {
		rc = ga_datadev_error(GPU_Get_Max_Buffers, errno);
		goto out_free;
	}
	if (max < 1 || (unsigned int)max > ga_layout_max_buffers(layout)) {
		rc = ga_err(-EPROTO, "%s: driver reports %d buffers, outside 1..%u for version %d",
			    spec, max, ga_layout_max_buffers(layout), ver);
		goto out_free;
	}
	dev->priv = p;
	dev->info.version = (unsigned int)ver;
	dev->info.max_buffers = (unsigned int)max;

	dd_try_map(p, (unsigned int)ver);

	rc = dd_field(dev, layout, GA_REG_DMA_DATA_BYTES, 0, &ddb);
	if (rc)
		goto out_priv;
	if (ddb == 0) {
		rc = ga_err(-EPROTO,
			    "%s: card reports DmaDataBytes 0 (the payload would overwrite "
			    "the header)",
			    spec);
		goto out_priv;
	}
	dev->info.dma_data_bytes = ddb;

	if (ioctl(p->fd, DMA_Read_Register, (unsigned long)&clk) == 0 && clk.data != 0) {
		dev->info.clock_hz = clk.data;
	} else {
		dev->info.clock_hz = GA_DMA_CLOCK_HZ_DEFAULT;
		snprintf(dev->info.clock_note, sizeof(dev->info.clock_note),
			 "AxiVersion reports no DMA clock: assuming %u MHz",
			 GA_DMA_CLOCK_HZ_DEFAULT / 1000000u);
	}

	if (p->driver == DD_GPUASYNC) {
		/* Version 1 answered GA_Get_Abi_Version (the same number) but took
		 * its other commands unencoded: its features are of no use. */
		abi = ioctl(p->fd, GA_Get_Abi_Version, 0);
		if (abi > 0 && (abi >> 16) >= 2)
			p->features = (uint32_t)abi & 0xffffu;
	}
	dd_probe_gpu_apis(p, abi);
	p->enable_ioctl = p->driver != DD_UPSTREAM;
	if (p->driver == DD_UPSTREAM_OWNED && !p->observe) {
		rc = dd_owner_start(p->fd, &p->owner);
		if (rc)
			goto out_priv;
	}
	ga_err_clear();
	ga_log("datadev %s: %s, version %d, %d buffers, DmaDataBytes %u, %s registers, features "
	       "0x%x, enable ioctls %s, whole dma-bufs %s, gpudirect %s",
	       spec, dd_driver_name(p), ver, max, ddb, p->regs ? "mapped" : "ioctl", p->features,
	       p->enable_ioctl ? "yes" : "no", p->whole_dmabuf ? "yes" : "no",
	       p->gpudirect ? "yes" : "no");
	return 0;

out_priv:
	dev->priv = NULL;
out_free:
	dd_free(p);
	return rc;
}

static void dd_close(struct ga_dev *dev)
{
	if (dev->priv)
		dd_free(dev->priv);
	dev->priv = NULL;
}

static int dd_map_regs(struct ga_dev *dev, volatile uint32_t **regs)
{
	struct dd_priv *p = dd(dev);
	void *m;

	if (!p->can_map)
		return ga_err(-ENOTSUP, "%s: the driver does not let the register block be mapped",
			      p->path);
	m = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd,
		 (off_t)p->map_offset);
	if (m == MAP_FAILED)
		return ga_err(-errno, "%s: mmap of the register block: %s", p->path,
			      strerror(errno));
	*regs = m;
	return 0;
}

static void dd_unmap_regs(struct ga_dev *dev, volatile uint32_t *regs)
{
	(void)dev;
	if (regs)
		munmap((void *)regs, GA_CORE_SIZE);
}

static int dd_reg_path(struct ga_dev *dev, char *path, size_t len, uint64_t *off)
{
	struct dd_priv *p = dd(dev);

	if (!p->can_map)
		return ga_err(-ENOTSUP, "%s: the driver does not let the register block be mapped",
			      p->path);
	if ((size_t)snprintf(path, len, "%s", p->path) >= len)
		return ga_err(-ENAMETOOLONG, "path buffer too small");
	*off = p->map_offset;
	return 0;
}

/*
 * What upstream's datadev publishes of the card's buffers in
 * /proc/datadev_N ("DataGPU State"): per buffer a "-- Write Buffer i --"
 * (or Read) heading, then "Write Address : 0x..." (the bus address it
 * programmed) and "Write Size : 0x..."; 7.5 adds "Owning Process : pid"
 * for the whole card (0: none).  Nothing else is known: gpu_address and
 * pages stay 0.
 */
static int dd_pinned_proc(struct dd_priv *p, struct ga_pinned **list, unsigned int *n)
{
	struct ga_pinned *out = NULL, *grown, *cur = NULL;
	unsigned int count = 0, idx;
	unsigned long long v;
	char line[256], kind[8];
	int owner = 0;
	FILE *f = fopen(p->proc, "r");

	if (!f)
		return ga_err(-errno, "%s: %s", p->proc, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " Owning Process : %llu", &v) == 1) {
			owner = (int)v;
		} else if (sscanf(line, " -------- %7s Buffer %u", kind, &idx) == 2) {
			grown = realloc(out, (count + 1) * sizeof(*out));
			if (!grown) {
				fclose(f);
				free(out);
				return ga_err(-ENOMEM, "out of memory");
			}
			out = grown;
			cur = &out[count++];
			*cur = (struct ga_pinned){
				.dir = strcmp(kind, "Write") == 0 ? GA_DIR_WRITE : GA_DIR_READ,
				.index = idx,
				.from_proc = true,
			};
		} else if (cur && (sscanf(line, " Write Address : %llx", &v) == 1 ||
				   sscanf(line, " Read Address : %llx", &v) == 1)) {
			cur->bus_address = v;
		} else if (cur && (sscanf(line, " Write Size : %llx", &v) == 1 ||
				   sscanf(line, " Read Size : %llx", &v) == 1)) {
			cur->size = (size_t)v;
		}
	}
	fclose(f);
	for (unsigned int i = 0; i < count; i++)
		out[i].owner = owner;
	*list = out;
	*n = count;
	return 0;
}

/*
 * gpuasync.ko's table of pinned buffers, whole, as struct ga_pinned
 * (malloc'd into *@list).  The driver reports how many exist even when
 * they do not fit, so ask again with a bigger array until they do (the
 * table may grow between two calls).
 */
static int dd_pinned(struct ga_dev *dev, struct ga_pinned **list, unsigned int *n)
{
	struct dd_priv *p = dd(dev);
	unsigned int cap = dev->nbufs[0] + dev->nbufs[1] + 1, i;
	struct ga_buffer_entry *e = NULL;
	struct ga_buffer_table t;
	struct ga_pinned *out;
	int rc;

	*list = NULL;
	*n = 0;
	if (!(p->features & GA_FEAT_BUFFER_TABLE) && p->proc[0])
		return dd_pinned_proc(p, list, n);
	if (!(p->features & GA_FEAT_BUFFER_TABLE))
		return ga_err(-ENOTSUP,
			      "%s: the driver keeps no table of pinned buffers (upstream "
			      "datadev; gpuasync.ko has GA_Get_Buffer_Table)",
			      p->path);
	for (;;) {
		struct ga_buffer_entry *ne = realloc(e, (size_t)cap * sizeof(*e));

		if (!ne) {
			free(e);
			return ga_err(-ENOMEM, "out of memory");
		}
		e = ne;
		memset(e, 0, (size_t)cap * sizeof(*e));
		t = (struct ga_buffer_table){.entries = (uint64_t)(uintptr_t)e, .capacity = cap};
		rc = dd_ioctl(p, GA_Get_Buffer_Table, (unsigned long)&t);
		if (rc < 0) {
			free(e);
			return rc;
		}
		if (t.count <= cap)
			break;
		cap = t.count + 1;
	}
	out = t.count ? calloc(t.count, sizeof(*out)) : NULL;
	if (t.count && !out) {
		free(e);
		return ga_err(-ENOMEM, "out of memory");
	}
	for (i = 0; i < t.count; i++) {
		out[i] = (struct ga_pinned){
			.dir = e[i].write ? GA_DIR_WRITE : GA_DIR_READ,
			.index = e[i].index,
			.gpu_address = e[i].gpu_address,
			.bus_address = e[i].bus_address,
			.size = e[i].size,
			.pages = e[i].pages,
			.owner = (int)e[i].owner_tgid,
			.invalidated = e[i].flags & GA_BUF_INVALIDATED,
			.dmabuf = e[i].flags & GA_BUF_DMABUF,
		};
	}
	free(e);
	*list = out;
	*n = t.count;
	return 0;
}

/* Bus address of buffer @index: from gpuasync.ko's table when there is one,
 * else from the address registers the driver just programmed. */
static int dd_bus_address(struct ga_dev *dev, enum ga_dir dir, unsigned int index, uint64_t *bus)
{
	struct dd_priv *p = dd(dev);
	enum ga_reg_id lo_id = dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO;
	enum ga_reg_id hi_id = dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI;
	struct ga_pinned *list;
	unsigned int i, n;
	uint32_t lo, hi;
	int rc;

	if ((p->features & GA_FEAT_BUFFER_TABLE) && dd_pinned(dev, &list, &n) == 0) {
		for (i = 0; i < n; i++) {
			if (list[i].dir == dir && list[i].index == index) {
				*bus = list[i].bus_address;
				free(list);
				return 0;
			}
		}
		free(list);
		/* fall back to the registers */
	}
	rc = dd_field(dev, dev->info.layout, lo_id, index, &lo);
	if (rc)
		return rc;
	rc = dd_field(dev, dev->info.layout, hi_id, index, &hi);
	if (rc)
		return rc;
	*bus = (uint64_t)hi << 32 | lo;
	return 0;
}

/* After a successful add ioctl: is the buffer where we expect it, with an
 * address the card can use? */
static int dd_added_check(struct ga_dev *dev, enum ga_dir dir, uint64_t *bus_address)
{
	struct dd_priv *p = dd(dev);
	uint32_t count;
	int rc;

	/* The driver numbers buffers by its own count, which includes any an
	 * earlier process left registered (closing the file does not remove
	 * them).  The count field (count - 1) tells us where ours went. */
	rc = dd_field(dev, dev->info.layout,
		      dir == GA_DIR_WRITE ? GA_REG_WRITE_COUNT : GA_REG_READ_COUNT, 0, &count);
	if (rc)
		return rc;
	if (count != dev->nbufs[dir])
		return ga_err(-EEXIST,
			      "%s: the driver placed the buffer at index %u, not %u: "
			      "buffers registered earlier (another process, or one that "
			      "exited without removing them) are still there; remove "
			      "them all (ga_buf_destroy_all / rmdir every buffer) first",
			      p->path, count, dev->nbufs[dir]);
	rc = dd_bus_address(dev, dir, dev->nbufs[dir], bus_address);
	if (rc)
		return rc;
	/* Upstream returns 0 without programming the card when the DMA
	 * mapping fails (pages stay pinned until the next remove-all). */
	if (*bus_address == 0)
		return ga_err(-EIO,
			      "%s: the driver accepted the buffer but did not program its "
			      "address (DMA mapping failed; see the kernel log)",
			      p->path);
	return 0;
}

/*
 * The add went through but the buffer cannot be used: take it back before
 * its memory goes.  gpuasync.ko removes that one buffer; upstream can only
 * remove all, so the slot's address is cleared (the card must not write
 * there) and the memory is kept until the next remove-all (add_kept).
 */
static int dd_undo_add(struct ga_dev *dev, enum ga_dir dir, int rc)
{
	struct dd_priv *p = dd(dev);
	enum ga_reg_id cnt = dir == GA_DIR_WRITE ? GA_REG_WRITE_COUNT : GA_REG_READ_COUNT;
	enum ga_reg_id lo = dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO;
	enum ga_reg_id hi = dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI;
	struct ga_buffer_ref ref = {.write = dir == GA_DIR_WRITE ? 1 : 0};
	uint32_t last = 0, off;
	char why[256];

	snprintf(why, sizeof(why), "%s", ga_last_error());
	if (dd_field(dev, dev->info.layout, cnt, 0, &last) == 0) {
		ref.index = last;
		if ((p->features & GA_FEAT_REM_BUFFER) &&
		    ioctl(p->fd, GA_Rem_Buffer, (unsigned long)&ref) == 0)
			goto out;
		if (ga_reg_offset(lo, dev->info.layout, dev->info.version, last,
				  dev->info.max_buffers, &off) == 0)
			dd_reg_write(dev, off, 0);
		if (ga_reg_offset(hi, dev->info.layout, dev->info.version, last,
				  dev->info.max_buffers, &off) == 0)
			dd_reg_write(dev, off, 0);
	}
	dev->add_kept = true;
out:
	return ga_err(rc, "%s", why); /* the reason, not the undo's */
}

/*
 * A buffer from a dma-buf.  A whole dma-buf (offset 0, its size, which
 * lseek tells) goes through upstream's by-value command where the driver
 * has it; a part of one needs GA_Add_Dmabuf.  Errors the policy table does
 * not know come from the exporter (it refused to attach the card's
 * device), which is worth saying.
 */
static int dd_add_dmabuf(struct dd_priv *p, enum ga_dir dir, const struct ga_dmabuf_ref *db,
			 uint32_t size)
{
	struct ga_dmabuf_add a = {
		.fd = (uint32_t)db->fd,
		.write = dir == GA_DIR_WRITE ? 1 : 0,
		.offset = db->offset,
		.size = size,
	};
	unsigned int cmd = GA_Add_Dmabuf;
	off_t len = -1;
	char why[256];
	int rc;

	if (p->whole_dmabuf)
		len = lseek(db->fd, 0, SEEK_END);
	if (db->offset == 0 && len == (off_t)size) {
		cmd = dir == GA_DIR_WRITE ? GPU_DmaBuf_Add_Wr_Buffer : GPU_DmaBuf_Add_Rd_Buffer;
		rc = dd_ioctl(p, cmd, (unsigned long)db->fd);
	} else if (p->features & GA_FEAT_DMABUF) {
		rc = dd_ioctl(p, GA_Add_Dmabuf, (unsigned long)&a);
	} else if (p->whole_dmabuf) {
		return ga_err(
			-ENOTSUP,
			"%s: the driver takes only whole dma-bufs (GPU_DmaBuf_Add_Wr/Rd_Buffer), "
			"and this %u-byte buffer is bytes from %llu of a dma-buf of %lld bytes "
			"(pin=p2p registers it by address)",
			p->path, size, (unsigned long long)db->offset, (long long)len);
	} else {
		return ga_err(
			-ENOTSUP,
			"%s: the driver takes no dma-bufs: it has neither upstream's "
			"GPU_DmaBuf_Add_Wr/Rd_Buffer (releases after 7.5.1) nor gpuasync.ko's "
			"GA_Add_Dmabuf (pin=p2p registers buffers by address)",
			p->path);
	}
	ga_log("datadev %s: %s buffer from dma-buf fd %d through %s: %d", p->path,
	       dir == GA_DIR_WRITE ? "write" : "read", db->fd, ga_datadev_cmd_name(cmd), rc);
	if (rc >= 0 || rc == -EINVAL || rc == -EBADF || rc == -EBUSY || rc == -EOPNOTSUPP ||
	    rc == -ENOTTY)
		return rc < 0 ? rc : 0;
	snprintf(why, sizeof(why), "%s", ga_last_error());
	return ga_err(rc, "%s (the dma-buf's exporter refused the card's device?)", why);
}

static int dd_add_buffer(struct ga_dev *dev, enum ga_dir dir, const struct ga_mem_block *blk,
			 uint32_t size, const struct ga_dmabuf_ref *db, uint64_t *bus_address)
{
	struct dd_priv *p = dd(dev);
	struct GpuNvidiaData d = {
		.write = dir == GA_DIR_WRITE ? 1 : 0,
		.address = blk->dptr,
		.size = size,
	};
	int rc;

	if (db)
		rc = dd_add_dmabuf(p, dir, db, size);
	else if (!p->gpudirect)
		return ga_err(-ENOTSUP,
			      "%s: the driver was built without nvidia-p2p (it answers "
			      "GPU_Is_GpuDirect_Supp with 0): buffers can only be dma-bufs "
			      "(pin=dmabuf)",
			      p->path);
	else
		rc = dd_ioctl(p, GPU_Add_Nvidia_Memory, (unsigned long)&d);
	if (rc < 0)
		return rc;
	rc = dd_added_check(dev, dir, bus_address);
	return rc ? dd_undo_add(dev, dir, rc) : 0;
}

/*
 * Every buffer of the card.  gpuasync.ko's GPU_DmaBuf_Remove_Buffers
 * removes them whichever way they were added; upstream's after 7.5.1
 * removes only its dma-buf list with it, so buffers pinned by address are
 * removed with GPU_Rem_Nvidia_Memory after it.
 */
static int dd_remove_all(struct ga_dev *dev)
{
	struct dd_priv *p = dd(dev);
	int rc;

	if (p->whole_dmabuf) {
		rc = dd_ioctl(p, GPU_DmaBuf_Remove_Buffers, 0);
		if (rc < 0 || p->driver == DD_GPUASYNC || !p->gpudirect)
			return rc < 0 ? rc : 0;
	}
	rc = dd_ioctl(p, GPU_Rem_Nvidia_Memory, 0);
	return rc < 0 ? rc : 0;
}

static int dd_remove_last(struct ga_dev *dev, enum ga_dir dir)
{
	struct dd_priv *p = dd(dev);
	struct ga_buffer_ref ref = {.write = dir == GA_DIR_WRITE ? 1 : 0};
	int rc;

	if (!(p->features & GA_FEAT_REM_BUFFER))
		return -ENOSYS; /* buffers/buf_remove_one.c emulates it */
	if (dev->nbufs[dir] == 0)
		return ga_err(-ENOENT, "no buffer to remove");
	ref.index = dev->nbufs[dir] - 1;
	rc = dd_ioctl(p, GA_Rem_Buffer, (unsigned long)&ref);
	return rc < 0 ? rc : 0;
}

static int dd_arm(struct ga_dev *dev, const uint32_t *indices, unsigned int n)
{
	struct dd_priv *p = dd(dev);
	unsigned int i;
	int rc;

	if ((p->features & GA_FEAT_ARM_MANY) && n > 1) {
		struct ga_arm_many a = {.indices = (uint64_t)(uintptr_t)indices, .count = n};

		rc = dd_ioctl(p, GA_Arm_Buffers, (unsigned long)&a);
		return rc < 0 ? rc : 0;
	}
	for (i = 0; i < n; i++) {
		uint32_t idx = indices[i];

		rc = dd_ioctl(p, GPU_Set_Write_Enable, (unsigned long)&idx);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int dd_enable(struct ga_dev *dev, enum ga_dir dir, bool on)
{
	struct dd_priv *p = dd(dev);
	int rc;

	if (!p->enable_ioctl)
		return -ENOSYS; /* dev.c does a read-modify-write of the bit */
	rc = dd_ioctl(p, dir == GA_DIR_WRITE ? GPU_Enable_Tx : GPU_Enable_Rx,
		      (unsigned long)(on ? 1 : 0));
	return rc < 0 ? rc : 0;
}

static int dd_busy_dev(struct ga_dev *dev, int rc)
{
	return dd_busy(dd(dev), rc);
}

/* SysMon words through the register-read ioctl (BAR0 0x24000 lies inside
 * the window it allows); the mapping covers the core block only. */
static int dd_sysmon_read(struct ga_dev *dev, const uint32_t *off, uint32_t *val, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		struct DmaRegisterData r = {.address = GA_SYSMON_BASE + off[i]};
		int rc = dd_ioctl(dd(dev), DMA_Read_Register, (unsigned long)&r);

		if (rc < 0)
			return rc;
		val[i] = r.data;
	}
	return 0;
}

/* The hwmon device the driver registered for this node's card, if any. */
static int dd_hwmon_dir(struct ga_dev *dev, char *dir, size_t len)
{
	char devdir[64];
	struct stat st;

	if (fstat(dd(dev)->fd, &st) < 0)
		return -ENOENT;
	snprintf(devdir, sizeof(devdir), "/sys/dev/char/%u:%u", major(st.st_rdev),
		 minor(st.st_rdev));
	return ga_hwmon_find(devdir, dir, len);
}

static bool dd_has(struct ga_dev *dev, enum ga_cap cap)
{
	struct dd_priv *p = dd(dev);

	switch (cap) {
	case GA_CAP_SUPPORTED:
		return true; /* open fails otherwise */
	case GA_CAP_REG_MMAP:
		return p->can_map;
	case GA_CAP_REMOVE_ONE:
		return p->features & GA_FEAT_REM_BUFFER;
	case GA_CAP_ARM_MANY:
		return p->features & GA_FEAT_ARM_MANY;
	case GA_CAP_BUFFER_TABLE:
		return p->features & GA_FEAT_BUFFER_TABLE;
	case GA_CAP_PINNED_LIST:
		return (p->features & GA_FEAT_BUFFER_TABLE) || p->proc[0];
	case GA_CAP_DMABUF:
		return (p->features & GA_FEAT_DMABUF) || p->whole_dmabuf;
	case GA_CAP_DMABUF_WHOLE:
		return p->whole_dmabuf;
	case GA_CAP_GPUDIRECT:
		return p->gpudirect;
	case GA_CAP_ENABLE_IOCTL:
		return p->enable_ioctl;
	case GA_CAP_ADD_LIVE:
		/* gpuasync.ko programs the slot, then the counts, and leaves
		 * the enables alone (kmod/ga_drv.c ga_add_commit); upstream's
		 * adds turn the engines on (7.4) or off (7.5). */
		return p->driver == DD_GPUASYNC;
	default:
		return false;
	}
}

/* Claims every spec (claims NULL): the last of ga_backends. */
const struct ga_backend_ops ga_backend_datadev = {
	.name = "datadev",
	.flags = GA_BE_DRIVER,
	.open = dd_open,
	.close = dd_close,
	.reg_read = dd_reg_read,
	.reg_write = dd_reg_write,
	.reg_write_masked = dd_reg_write_masked,
	.fw_read = dd_fw_read,
	.fw_write = dd_fw_write,
	.sysmon_read = dd_sysmon_read,
	.hwmon_dir = dd_hwmon_dir,
	.map_regs = dd_map_regs,
	.unmap_regs = dd_unmap_regs,
	.reg_path = dd_reg_path,
	.add_buffer = dd_add_buffer,
	.remove_all = dd_remove_all,
	.remove_last = dd_remove_last,
	.arm = dd_arm,
	.enable = dd_enable,
	.busy = dd_busy_dev,
	.has = dd_has,
	.pinned = dd_pinned,
};
