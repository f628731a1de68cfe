// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The datadev backend without a card: the errno mapping (the upstream
 * driver's bare -1 arrives as EPERM and must never reach a user as
 * "Operation not permitted"; its 524 must become ENOTSUP), opening things
 * that are not a datadev device, and the whole device API on a fake of the
 * upstream driver (see "upstream" below).  The backend against a real
 * driver is tested in QEMU with kmod/.
 */
#define _GNU_SOURCE /* memfd_create */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Every command, from the ABI's one table. */
static const struct ga_abi_row abi_rows[] = {
#define GA_DEF_IOCTL GA_ABI_ROW
#include <gpuasync/ioctls.def>
};
#define NCMDS (sizeof(abi_rows) / sizeof(abi_rows[0]))

/* The errno policy itself is data in datadev.c (dd_errno_policy); a copy
 * here would only restate it.  What is checked instead: properties every
 * row must have (below), and the errors the library reports when the fake
 * upstream driver really fails (test_upstream_failures and the others). */

/* Every command: 524 is ENOTSUP with the "no GPU support" text, and the
 * bare -1 never comes back as EPERM. */
START_TEST(test_mapping_every_command)
{
	for (unsigned int i = 0; i < NCMDS; i++) {
		const unsigned int cmd = abi_rows[i].code;
		const char *name = ga_datadev_cmd_name(cmd);
		int rc;

		ck_assert_str_eq(name, abi_rows[i].name);
		rc = ga_datadev_error(cmd, GA_KERNEL_ENOTSUPP);
		ck_assert_msg(rc == -ENOTSUP, "%s 524: got %d", name, rc);
		ck_assert_msg(strstr(ga_last_error(), "without GPU support") != NULL, "%s: \"%s\"",
			      name, ga_last_error());
		rc = ga_datadev_error(cmd, EPERM);
		ck_assert_msg(rc < 0 && rc != -EPERM, "%s bare -1 mapped to %d", name, rc);
		ck_assert_msg(ga_last_error()[0] != '\0', "%s: no explanation", name);
	}
}
END_TEST

/* GA_Add_Dmabuf's own errors: each says what the driver checks. */
START_TEST(test_mapping_dmabuf)
{
	ck_assert_int_eq(ga_datadev_error(GA_Add_Dmabuf, EBADF), -EBADF);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "GA_Add_Dmabuf: "));
	ck_assert_int_eq(ga_datadev_error(GA_Add_Dmabuf, EINVAL), -EINVAL);
	ck_assert_msg(strstr(ga_last_error(), "64 KiB") && strstr(ga_last_error(), "contiguous") &&
			      strstr(ga_last_error(), "not a dma-buf"),
		      "\"%s\"", ga_last_error());
	ck_assert_int_eq(ga_datadev_error(GA_Add_Dmabuf, EBUSY), -EBUSY);
	ck_assert_int_eq(ga_datadev_error(GA_Add_Dmabuf, EPERM), -ENOTTY);
	ck_assert_int_eq(ga_datadev_error(GA_Add_Dmabuf, EOPNOTSUPP), -EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "exporter refused"));
	/* NVIDIA's exporter refuses with the kernel's ENOTSUPP (524) */
	ck_assert_int_eq(ga_datadev_error(GA_Add_Dmabuf, GA_KERNEL_ENOTSUPP), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "exporter refused"));
	/* anything else is the exporter's, passed on as it is */
	ck_assert_int_eq(ga_datadev_error(GA_Add_Dmabuf, EPROTO), -EPROTO);
}
END_TEST

/* Open through the backend's own op (struct ga_dev is plain memory). */
static int dd_open(const char *path, char *why, size_t len)
{
	struct ga_dev *dev = calloc(1, sizeof(*dev));
	int rc;

	ck_assert_ptr_nonnull(dev);
	dev->info.layout = GA_LAYOUT_COUNT;
	rc = ga_backend_datadev.open(dev, path);
	snprintf(why, len, "%s", ga_last_error());
	if (rc == 0)
		ga_backend_datadev.close(dev);
	free(dev);
	return rc;
}

/* Opening @path is refused with -@err, the reason naming @what. */
static void open_refused(const char *path, int err, const char *what)
{
	char why[256];
	int rc = dd_open(path, why, sizeof(why));

	ck_assert_int_eq(rc, -err);
	ck_assert_msg(strstr(why, what), "\"%s\" does not name \"%s\"", why, what);
}

START_TEST(test_open_missing)
{
	open_refused("/dev/datadev_does_not_exist_42", ENOENT,
		     "/dev/datadev_does_not_exist_42: no such device");
}
END_TEST

START_TEST(test_open_regular_file)
{
	char path[] = "/tmp/ga-test-datadev-XXXXXX";
	char why[256];
	int fd = mkstemp(path);
	int rc;

	ck_assert_int_ge(fd, 0);
	close(fd);
	rc = dd_open(path, why, sizeof(why));
	unlink(path);
	ck_assert_int_eq(rc, -ENODEV);
	ck_assert_msg(strstr(why, "not a character device") != NULL, "\"%s\"", why);
}
END_TEST

/* A character device that is not a datadev answers the ioctls with ENOTTY. */
START_TEST(test_open_wrong_chardev)
{
	open_refused("/dev/null", ENODEV, "datadev ABI");
}
END_TEST

START_TEST(test_open_directory)
{
	char why[256];
	int rc = dd_open("/tmp", why, sizeof(why));

	ck_assert_msg(rc == -EISDIR || rc == -ENODEV, "got %d (%s)", rc, why);
	ck_assert_msg(why[0] != '\0', "no explanation");
}
END_TEST

/* ---- the library on the upstream driver (main), faked in-process ---------- */
/*
 * QEMU runs gpuasync.ko, which has the extensions; the upstream driver's
 * own behaviour (bare -1, add turning the engines on and insisting on
 * write_max_size, remove-all only, the read-slot quirk on remove) can only
 * be reproduced here.  This executable defines ioctl() and mmap(), which
 * the statically linked library then calls: on /dev/zero they act as an
 * upstream datadev with a V4 card, on anything else they pass through to
 * the kernel.
 */
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include "common/fd_count.h"
#include "common/run_suite.h"

#define FK_MAX	     8
#define FK_DMA_COUNT 4
#define FK_DMA_SIZE  0x1000
#define FK_MAP_OFF   ((uint64_t)FK_DMA_COUNT * FK_DMA_SIZE + GA_CORE_OFFSET)

static struct fake {
	int memfd;
	volatile uint32_t *regs; /* the core block, shared with what mmap returns */
	bool gpu_en, allow_mmap, fail_pin;
	uint32_t clock_hz;
	unsigned int count[2]; /* [1] write, [0] read, as the driver keeps them */
	unsigned int arms[FK_MAX];
	unsigned int rem_calls, adds;
	/* gpuasync.ko's table extension, off by default (upstream has none):
	 * what each buffer was registered with, whether its memory went away,
	 * and entries of another process listed after ours. */
	bool table;
	uint64_t addr[2][FK_MAX];
	uint32_t size[2][FK_MAX];
	bool inval[2][FK_MAX];
	unsigned int foreign, table_calls;
	/* codes upstream main does not know, and engine enable writes: the
	 * library must send neither just to find out what the driver is */
	unsigned int unknown, enables;
	/* GA_Add_Dmabuf (with table): registered from a dma-buf, the errno to
	 * fail the next adds with (0: none), how many came */
	bool dmabuf;
	bool from_dmabuf[2][FK_MAX];
	int dmabuf_err;
	unsigned int dmabuf_adds;
	/* upstream's dma-buf commands of after 7.5.1 (with table: gpuasync.ko
	 * of ABI 4; without, ABI 3), what GPU_Is_GpuDirect_Supp answers, and
	 * how many by-value adds (per direction) and removes came */
	bool whole, no_gpudirect;
	unsigned int whole_adds[2], whole_rems;
	/* frames the card counts during each add (rx_frame_count), and the
	 * write_max_size the last add found */
	unsigned int add_frames;
	uint32_t max_at_add;
} fk;

/* The bus address the fake's table reports (not what the registers hold,
 * so a test sees which one the library used). */
static uint64_t fk_table_bus(unsigned int l, unsigned int i)
{
	return 0xC0DE000000000000ull | (uint64_t)l << 32 | (uint64_t)i << 16;
}

static int fk_table(struct ga_buffer_table *t)
{
	struct ga_buffer_entry *e = (void *)(uintptr_t)t->entries;
	unsigned int n = 0, l, i;

	fk.table_calls++;
	for (l = 2; l-- > 0;) {
		for (i = 0; i < fk.count[l]; i++, n++) {
			if (n >= t->capacity)
				continue;
			e[n] = (struct ga_buffer_entry){
				.index = i,
				.write = l,
				.gpu_address = fk.addr[l][i],
				.bus_address = fk_table_bus(l, i),
				.size = fk.size[l][i],
				.pages = fk.size[l][i] / GA_GPU_PAGE_SIZE,
				.owner_tgid = (uint32_t)getpid(),
				.flags = (fk.inval[l][i] ? GA_BUF_INVALIDATED : 0) |
					 (fk.from_dmabuf[l][i] ? GA_BUF_DMABUF : 0),
			};
		}
	}
	for (i = 0; i < fk.foreign; i++, n++) {
		if (n < t->capacity)
			e[n] = (struct ga_buffer_entry){.index = 100 + i,
							.gpu_address = 0x1000000u * (i + 1),
							.bus_address = 0x2000000u * (i + 1),
							.size = GA_GPU_PAGE_SIZE,
							.pages = 1,
							.owner_tgid = 1,
							.flags = GA_BUF_INVALIDATED};
	}
	t->count = n;
	return 0;
}

static bool fk_fd(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 5);
}

static uint32_t *fk_reg(uint32_t off)
{
	return (uint32_t *)&fk.regs[off / 4];
}

/* The fake's registers where the register table puts them: its firmware
 * is version 4 (any slot the layout has: upstream clears one past the
 * last). */
static uint32_t fk_off(enum ga_reg_id id, unsigned int i)
{
	uint32_t off = 0;

	ck_assert_int_eq(ga_reg_offset(id, GA_LAYOUT_V4, 4, i, 0, &off), 0);
	return off;
}

static uint32_t fk_get(enum ga_reg_id id, unsigned int i)
{
	return ga_reg_field_get(id, GA_LAYOUT_V4, *fk_reg(fk_off(id, i)));
}

static void fk_set(enum ga_reg_id id, unsigned int i, uint32_t v)
{
	uint32_t *w = fk_reg(fk_off(id, i));

	*w = ga_reg_field_set(id, GA_LAYOUT_V4, *w, v);
}

static void fk_counts(void)
{
	unsigned int w = fk.count[1], r = fk.count[0];

	/* gpuasync.ko (table mode) writes the counts only */
	if (fk.table) {
		fk_set(GA_REG_WRITE_COUNT, 0, w ? w - 1 : 0);
		fk_set(GA_REG_READ_COUNT, 0, r ? r - 1 : 0);
		return;
	}
	/* main rewrites the whole word with both enables on */
	*fk_reg(fk_off(GA_REG_WRITE_COUNT, 0)) = 0;
	if (w) {
		fk_set(GA_REG_WRITE_COUNT, 0, w - 1);
		fk_set(GA_REG_WRITE_ENABLE, 0, 1);
	}
	if (r) {
		fk_set(GA_REG_READ_COUNT, 0, r - 1);
		fk_set(GA_REG_READ_ENABLE, 0, 1);
	}
}

/* What the driver keeps in write_max_size for a write buffer of @size:
 * main the size, gpuasync.ko (table mode) the payload room. */
static uint32_t fk_max_for(uint32_t size)
{
	return fk.table ? size - 32 : size;
}

/* The driver's add: buffer @i of the direction at address word @lo (what
 * the card is given), the write size register set as the driver sets it;
 * frames the card counts meanwhile (add_frames). */
static void fk_add_slot(bool write, unsigned int i, uint32_t lo, uint32_t size)
{
	fk_set(write ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO, i, lo);
	fk_set(write ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI, i, 0xB0000000u);
	if (write)
		fk_set(GA_REG_WRITE_MAX_SIZE, 0, fk_max_for(size));
	fk_set(GA_REG_RX_FRAME_COUNT, 0, fk_get(GA_REG_RX_FRAME_COUNT, 0) + fk.add_frames);
}

/* Buffer @i of direction @l added at address @addr (a dma-buf's offset
 * when @from_dmabuf), its address registers reading @lo: the driver's
 * bookkeeping and the counts it writes. */
static void fk_add_buffer(unsigned int l, unsigned int i, uint32_t lo, uint64_t addr, uint32_t size,
			  bool from_dmabuf)
{
	fk_add_slot(l == 1, i, lo, size);
	fk.addr[l][i] = addr;
	fk.size[l][i] = size;
	fk.inval[l][i] = false;
	fk.from_dmabuf[l][i] = from_dmabuf;
	fk.count[l]++;
	fk_counts();
}

static void fk_init(void)
{
	memset(&fk, 0, sizeof(fk));
	fk.memfd = memfd_create("fake-core", 0);
	ck_assert_int_ge(fk.memfd, 0);
	ck_assert_int_eq(ftruncate(fk.memfd, GA_CORE_SIZE), 0);
	fk.regs = (volatile uint32_t *)syscall(SYS_mmap, NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE,
					       MAP_SHARED, fk.memfd, 0);
	ck_assert(fk.regs != MAP_FAILED);
	fk.gpu_en = true;
	fk.allow_mmap = true;
	fk_set(GA_REG_MAX_BUFFERS, 0, FK_MAX);
	fk_set(GA_REG_DMA_DATA_BYTES, 0, 32);
	fk_set(GA_REG_VERSION, 0, 4);
	fk_set(GA_REG_WRITE_MAX_SIZE, 0, 1);
}

static int fk_fail(int e)
{
	errno = e;
	return -1;
}

/* Upstream's remove-all (gpuasync.ko's, but for the read-slot quirk). */
static void fk_rem_all(void)
{
	unsigned int i;

	*fk_reg(fk_off(GA_REG_WRITE_COUNT, 0)) = 0;
	for (i = 0; i < fk.count[1]; i++) {
		fk_set(GA_REG_WRITE_ADDR_LO, i, 0);
		fk_set(GA_REG_WRITE_ADDR_HI, i, 0);
	}
	for (i = 0; i < fk.count[0]; i++) { /* upstream clears the wrong slot */
		fk_set(GA_REG_READ_ADDR_LO, fk.count[0], 0);
		fk_set(GA_REG_READ_ADDR_HI, fk.count[0], 0);
	}
	fk_set(GA_REG_WRITE_MAX_SIZE, 0, 1);
	fk.count[0] = fk.count[1] = 0;
}

static int fk_ioctl(unsigned long cmd, unsigned long arg)
{
	struct GpuNvidiaData *d = (void *)arg;
	struct DmaRegisterData *r = (void *)arg;
	unsigned int i, l;

	switch (cmd) {
	case DMA_Get_Buff_Count:
		return FK_DMA_COUNT;
	case DMA_Get_Buff_Size:
		return FK_DMA_SIZE;
	case DMA_Get_Version:
		return DMA_VERSION;
	case DMA_Read_Register:
	case DMA_Write_Register:
		if (r->address < DMA_REG_WINDOW_START || r->address + 4 > DMA_REG_WINDOW_END)
			return fk_fail(EPERM);
		if (r->address >= GA_CORE_OFFSET && r->address < GA_CORE_OFFSET + GA_CORE_SIZE) {
			uint32_t off = (uint32_t)(r->address - GA_CORE_OFFSET);

			if (cmd == DMA_Read_Register)
				r->data = *fk_reg(off);
			else /* the firmware stores write_max_size 0 as 1 */
				*fk_reg(off) =
					(off == fk_off(GA_REG_WRITE_MAX_SIZE, 0) && r->data == 0)
						? 1
						: r->data;
		} else if (cmd == DMA_Read_Register) {
			r->data = r->address == GA_AXIVERSION_CLOCK_HZ ? fk.clock_hz : 0;
		}
		return 0;
	case GPU_Is_Gpu_Async_Supp:
		return fk.gpu_en ? 1 : 0;
	case GPU_Get_Gpu_Async_Ver:
		return fk.gpu_en ? 4 : fk_fail(GA_KERNEL_ENOTSUPP);
	case GPU_Get_Max_Buffers:
		return fk.gpu_en ? FK_MAX : fk_fail(GA_KERNEL_ENOTSUPP);
	case GPU_Add_Nvidia_Memory:
		if (!fk.gpu_en)
			return fk_fail(GA_KERNEL_ENOTSUPP);
		if (d->size == 0 || d->size % GA_GPU_PAGE_SIZE)
			return fk_fail(EINVAL);
		l = d->write ? 1 : 0;
		i = fk.count[l];
		if (i >= FK_MAX)
			return fk_fail(EINVAL);
		if (fk.fail_pin)
			return fk_fail(EPERM);
		if (d->write) {
			fk.max_at_add = fk_get(GA_REG_WRITE_MAX_SIZE, 0);
			if (fk.max_at_add > 1 && fk.max_at_add != fk_max_for(d->size))
				return fk_fail(EINVAL);
		}
		fk_add_buffer(l, i, (uint32_t)(d->address | 1), d->address, d->size, false);
		fk.adds++;
		return 0;
	case GPU_Is_Dma_Buf_Supp:
	case GPU_Is_GpuDirect_Supp:
		if (!fk.table) { /* upstream 7.4/7.5 log it: the library must not ask */
			fk.unknown++;
			return fk_fail(EPERM);
		}
		if (!fk.whole)
			return fk_fail(ENOTTY);
		return cmd == GPU_Is_Dma_Buf_Supp ? 1 : !fk.no_gpudirect;
	case GPU_DmaBuf_Add_Wr_Buffer:
	case GPU_DmaBuf_Add_Rd_Buffer: {
		off_t len = lseek((int)arg, 0, SEEK_END);

		if (!fk.table || !fk.whole) {
			fk.unknown++;
			return fk_fail(fk.table ? ENOTTY : EPERM);
		}
		if (len < 0)
			return fk_fail(EBADF);
		l = cmd == GPU_DmaBuf_Add_Wr_Buffer ? 1 : 0;
		i = fk.count[l];
		if (i >= FK_MAX || len == 0 || len % GA_GPU_PAGE_SIZE)
			return fk_fail(EINVAL);
		fk_add_buffer(l, i, 0xE0000000u | i << 16, 0, (uint32_t)len, true);
		fk.whole_adds[l]++;
		return 0;
	}
	case GPU_DmaBuf_Remove_Buffers:
		if (!fk.table || !fk.whole) {
			fk.unknown++;
			return fk_fail(fk.table ? ENOTTY : EPERM);
		}
		fk_rem_all(); /* gpuasync.ko: every buffer, whichever way it came */
		fk.whole_rems++;
		return 0;
	case GPU_Rem_Nvidia_Memory:
		if (!fk.gpu_en)
			return fk_fail(GA_KERNEL_ENOTSUPP);
		fk_rem_all();
		fk.rem_calls++;
		return 0;
	case GPU_Set_Write_Enable:
		if (!fk.gpu_en)
			return fk_fail(GA_KERNEL_ENOTSUPP);
		i = *(uint32_t *)arg;
		if (i >= fk.count[1])
			return fk_fail(EPERM);
		fk_set(GA_REG_FREE_LIST, i, 1);
		fk.arms[i]++;
		return 0;
	case GA_Get_Abi_Version:
		if (fk.table) /* version 4 has upstream's dma-buf commands */
			return ((fk.whole ? 4 : 3) << 16) | GA_FEAT_BUFFER_TABLE |
			       (fk.dmabuf ? GA_FEAT_DMABUF : 0);
		fk.unknown++;
		return fk_fail(EPERM);
	case GA_Add_Dmabuf: {
		struct ga_dmabuf_add *a = (void *)arg;

		if (!fk.table || !fk.dmabuf) {
			fk.unknown++;
			return fk_fail(EPERM);
		}
		if (fcntl((int)a->fd, F_GETFD) < 0)
			return fk_fail(EBADF);
		if (a->offset % GA_GPU_PAGE_SIZE || a->size == 0 || a->size % GA_GPU_PAGE_SIZE)
			return fk_fail(EINVAL);
		if (fk.dmabuf_err)
			return fk_fail(fk.dmabuf_err);
		l = a->write ? 1 : 0;
		i = fk.count[l];
		if (i >= FK_MAX)
			return fk_fail(EINVAL);
		fk_add_buffer(l, i, 0xD0000000u | i << 16, a->offset, a->size, true);
		fk.dmabuf_adds++;
		a->index = i;
		return 0;
	}
	case GA_Get_Buffer_Table:
		if (fk.table)
			return fk_table((struct ga_buffer_table *)arg);
		fk.unknown++;
		return fk_fail(EPERM);
	case GPU_Enable_Tx:
	case GPU_Enable_Rx:
		fk.enables++;
		if (fk.table) { /* gpuasync.ko: the bit, by value */
			fk_set(cmd == GPU_Enable_Tx ? GA_REG_WRITE_ENABLE : GA_REG_READ_ENABLE, 0,
			       arg ? 1 : 0);
			return 0;
		}
		fk.unknown++;
		return fk_fail(EPERM);
	default: /* GA_* and the rest: unknown to main */
		fk.unknown++;
		return fk_fail(EPERM);
	}
}

/* In table mode the fake is gpuasync.ko, which the library recognises by
 * the sysfs class of the device node (/dev/zero's is "mem"). */
ssize_t readlink(const char *path, char *buf, size_t len)
{
	static const char cls[] = "../../class/gpuasync";
	char want[64];

	snprintf(want, sizeof(want), "/sys/dev/char/%u:%u/subsystem", 1u, 5u);
	if (fk.regs && fk.table && strcmp(path, want) == 0) {
		size_t n = len < sizeof(cls) - 1 ? len : sizeof(cls) - 1;

		memcpy(buf, cls, n);
		return (ssize_t)n;
	}
	return syscall(SYS_readlink, path, buf, len);
}

int ioctl(int fd, unsigned long cmd, ...)
{
	va_list ap;
	unsigned long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, unsigned long);
	va_end(ap);
	if (fk.regs && fk_fd(fd))
		return fk_ioctl(cmd, arg);
	return (int)syscall(SYS_ioctl, fd, cmd, arg);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fd >= 0 && fk.regs && fk_fd(fd)) {
		if (!fk.allow_mmap || (uint64_t)off != FK_MAP_OFF || len > GA_CORE_SIZE) {
			errno = ENODEV;
			return MAP_FAILED;
		}
		fd = fk.memfd;
		off = 0;
	}
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static struct ga_dev *fk_open(void)
{
	struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;
	struct ga_dev *dev = NULL;
	int rc;

	o.use_gpu = false;
	rc = ga_dev_open_opts("/dev/zero", &o, &dev);
	ck_assert_msg(rc == 0, "open: %d (%s)", rc, ga_last_error());
	return dev;
}

static uint32_t fk_field(struct ga_dev *dev, enum ga_reg_id id, unsigned int index)
{
	uint32_t v = 0;

	ck_assert_int_eq(ga_reg_read(dev, id, index, &v), 0);
	return v;
}

START_TEST(test_upstream_open)
{
	struct ga_dev_info info;
	struct ga_dev *dev;

	fk_init();
	dev = fk_open();
	ck_assert_int_eq(ga_dev_info(dev, &info), 0);
	ck_assert_str_eq(info.backend, "datadev");
	ck_assert_str_eq(info.path, "/dev/zero");
	ck_assert_uint_eq(info.version, 4);
	ck_assert_uint_eq(info.max_buffers, FK_MAX);
	ck_assert_uint_eq(info.dma_data_bytes, 32);
	ck_assert_uint_eq(info.clock_hz, 250000000u);
	ck_assert_msg(info.clock_note[0] != '\0', "default clock without a note");
	ck_assert(ga_dev_has(dev, GA_CAP_SUPPORTED));
	ck_assert(ga_dev_has(dev, GA_CAP_REG_MMAP));
	ck_assert(!ga_dev_has(dev, GA_CAP_REMOVE_ONE));
	ck_assert(!ga_dev_has(dev, GA_CAP_ARM_MANY));
	ck_assert(!ga_dev_has(dev, GA_CAP_BUFFER_TABLE));
	ck_assert(!ga_dev_has(dev, GA_CAP_ENABLE_IOCTL));
	ck_assert(!ga_dev_has(dev, GA_CAP_SIM));
	ga_dev_close(dev);

	fk.clock_hz = 156250000;
	dev = fk_open();
	ck_assert_int_eq(ga_dev_info(dev, &info), 0);
	ck_assert_uint_eq(info.clock_hz, 156250000u);
	ck_assert_str_eq(info.clock_note, "");
	ga_dev_close(dev);

	fk.gpu_en = false;
	dev = (struct ga_dev *)1;
	ck_assert_int_eq(ga_dev_open("/dev/zero", &dev), -ENODEV);
	ck_assert_msg(strstr(ga_last_error(), "not supported/enabled"), "\"%s\"", ga_last_error());
	ck_assert_ptr_null(dev);
}
END_TEST

/* Registers through the mapping (_i == 0) and through the ioctls (1). */
START_TEST(test_upstream_registers)
{
	struct ga_dev *dev;
	volatile uint32_t *map = NULL;
	uint32_t v = 0;

	fk_init();
	fk.allow_mmap = _i == 0;
	dev = fk_open();
	ck_assert_int_eq(ga_dev_has(dev, GA_CAP_REG_MMAP), _i == 0);
	ck_assert_int_eq(ga_reg_write(dev, GA_REG_AR_CACHE, 0, 5), 0);
	ck_assert_int_eq(ga_reg_write(dev, GA_REG_AW_CACHE, 0, 0xa), 0);
	ck_assert_uint_eq(fk_get(GA_REG_AR_CACHE, 0), 5);
	ck_assert_uint_eq(fk_get(GA_REG_AW_CACHE, 0), 0xa);
	ck_assert_uint_eq(fk_get(GA_REG_DMA_DATA_BYTES, 0), 32); /* its neighbour kept */
	ck_assert_int_eq(ga_reg_read_raw(dev, fk_off(GA_REG_VERSION, 0), &v), 0);
	ck_assert_uint_eq(v, 4);
	ck_assert_int_eq(ga_reg_write(dev, GA_REG_WRITE_MAX_SIZE, 0, 0), 0);
	ck_assert_int_eq(ga_reg_write(dev, GA_REG_DEMUX_SELECT, 0, 1), 0);
	ck_assert_uint_eq(fk_get(GA_REG_DEMUX_SELECT, 0), 1);
	if (_i == 0) {
		ck_assert_int_eq(ga_dev_map_regs(dev, &map), 0);
		ck_assert_uint_eq(map[0x30 / 4], 4);
		ga_dev_unmap_regs(dev, map);
	} else {
		ck_assert_int_eq(ga_dev_map_regs(dev, &map), -ENOTSUP);
	}
	ga_dev_close(dev);
}
END_TEST

static struct ga_buf *fk_mk(struct ga_dev *dev, enum ga_dir dir, unsigned int i)
{
	struct ga_buf *b = NULL;
	int rc = ga_buf_create(dev, dir, i, GA_GPU_PAGE_SIZE, &b);

	ck_assert_msg(rc == 0, "create %u: %d (%s)", i, rc, ga_last_error());
	return b;
}

static uint64_t reg_bus(struct ga_dev *dev, enum ga_dir dir, unsigned int i)
{
	bool w = dir == GA_DIR_WRITE;

	return (uint64_t)fk_field(dev, w ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI, i) << 32 |
	       fk_field(dev, w ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO, i);
}

START_TEST(test_upstream_buffers)
{
	struct ga_dev *dev;
	struct ga_buf *w[3], *r[2];
	struct ga_buf_info bi;

	fk_init();
	fk.allow_mmap = _i == 0;
	dev = fk_open();
	/* main insists on write_max_size == size when it is > 1; we keep it
	 * at size - 32, so every add must still work */
	for (unsigned int i = 0; i < 3; i++)
		w[i] = fk_mk(dev, GA_DIR_WRITE, i);
	ck_assert_uint_eq(fk.count[1], 3);
	ck_assert_uint_eq(fk_field(dev, GA_REG_WRITE_MAX_SIZE, 0), GA_GPU_PAGE_SIZE - 32);
	/* main's add turned the engines on; create puts them back */
	ck_assert_uint_eq(fk_field(dev, GA_REG_WRITE_ENABLE, 0), 0);
	ck_assert_uint_eq(fk_field(dev, GA_REG_READ_ENABLE, 0), 0);
	ck_assert_uint_eq(fk_field(dev, GA_REG_WRITE_COUNT, 0), 2);
	r[0] = fk_mk(dev, GA_DIR_READ, 0);
	r[1] = fk_mk(dev, GA_DIR_READ, 1);
	ck_assert_int_eq(ga_buf_arm(w[0]), 0);
	ck_assert_int_eq(ga_buf_arm(w[1]), 0);
	ck_assert_uint_eq(fk.arms[0], 1);
	ck_assert_uint_eq(fk.arms[1], 1);

	ck_assert_int_eq(ga_buf_destroy(w[1]), -EBUSY); /* not the last */
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	ck_assert_int_eq(ga_buf_destroy(w[2]), -EBUSY); /* engines on */
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, false), 0);

	/* remove the last write buffer: remove all, re-add four, re-arm two */
	ck_assert_int_eq(ga_buf_destroy(w[2]), 0);
	ck_assert_uint_eq(fk.rem_calls, 1);
	ck_assert_uint_eq(fk.count[1], 2);
	ck_assert_uint_eq(fk.count[0], 2);
	ck_assert_uint_eq(fk.arms[0], 2);
	ck_assert_uint_eq(fk.arms[1], 2);
	ck_assert_uint_eq(fk_field(dev, GA_REG_WRITE_MAX_SIZE, 0), GA_GPU_PAGE_SIZE - 32);
	ck_assert_uint_eq(fk_field(dev, GA_REG_WRITE_ENABLE, 0), 0);
	ck_assert_uint_eq(reg_bus(dev, GA_DIR_WRITE, 2), 0);
	for (unsigned int i = 0; i < 2; i++) {
		ck_assert_int_eq(ga_buf_info(w[i], &bi), 0);
		ck_assert_int_eq(bi.state, GA_BUF_FREE);
		ck_assert_uint_eq(bi.bus_address, reg_bus(dev, GA_DIR_WRITE, i));
		ck_assert_int_eq(ga_buf_info(r[i], &bi), 0);
		ck_assert_uint_eq(bi.bus_address, reg_bus(dev, GA_DIR_READ, i));
	}

	/* the read side, where upstream's remove clears the wrong slot */
	ck_assert_int_eq(ga_buf_destroy(r[1]), 0);
	ck_assert_uint_eq(fk.count[0], 1);
	ck_assert_uint_eq(reg_bus(dev, GA_DIR_READ, 1), 0);
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_READ), 1);

	ck_assert_int_eq(ga_buf_destroy_all(dev), 0);
	ck_assert_uint_eq(fk.count[0] + fk.count[1], 0);
	ck_assert_uint_eq(reg_bus(dev, GA_DIR_WRITE, 0), 0);
	ck_assert_uint_eq(reg_bus(dev, GA_DIR_READ, 0), 0);

	/* close removes what is left */
	w[0] = fk_mk(dev, GA_DIR_WRITE, 0);
	fk.rem_calls = 0;
	ga_dev_close(dev);
	ck_assert_uint_eq(fk.rem_calls, 1);
	ck_assert_uint_eq(fk.count[1], 0);
}
END_TEST

START_TEST(test_upstream_failures)
{
	struct ga_dev *dev;
	struct ga_buf *b = NULL;

	fk_init();
	dev = fk_open();
	fk_mk(dev, GA_DIR_WRITE, 0);

	/* pinning fails: a clear errno, nothing left behind */
	fk.fail_pin = true;
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 1, GA_GPU_PAGE_SIZE, &b), -EFAULT);
	ck_assert_msg(strstr(ga_last_error(), "refused the buffer"), "\"%s\"", ga_last_error());
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 1);
	ck_assert_uint_eq(fk_field(dev, GA_REG_WRITE_MAX_SIZE, 0), GA_GPU_PAGE_SIZE - 32);
	fk.fail_pin = false;

	/* buffers another process left registered */
	ck_assert_int_eq(ga_buf_destroy_all(dev), 0);
	fk.count[1] = 2;
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 0, GA_GPU_PAGE_SIZE, &b), -EEXIST);
	ck_assert_msg(strstr(ga_last_error(), "registered earlier"), "\"%s\"", ga_last_error());
	ck_assert_int_eq(ga_buf_destroy_all(dev), 0); /* asks the driver even with none */
	fk_mk(dev, GA_DIR_WRITE, 0);

	/* the driver loses GPU support underneath: 524 */
	fk.gpu_en = false;
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 1, GA_GPU_PAGE_SIZE, &b), -ENOTSUP);
	ck_assert_msg(strstr(ga_last_error(), "without GPU support"), "\"%s\"", ga_last_error());
	fk.gpu_en = true;
	ga_dev_close(dev);
}
END_TEST

/* Upstream keeps no table: the library says so. */
/* Finding out what the driver is sends upstream nothing it does not know
 * (it logs "Invalid command" for each) and touches no engine; the enables
 * then go through the register (main has no enable ioctls). */
START_TEST(test_upstream_quiet_probe)
{
	struct ga_dev *dev;
	uint32_t v = 0;

	fk_init();
	dev = fk_open();
	ck_assert_uint_eq(fk.unknown, 0);
	ck_assert_uint_eq(fk.enables, 0);
	ck_assert(!ga_dev_has(dev, GA_CAP_ENABLE_IOCTL));
	ck_assert(!ga_dev_has(dev, GA_CAP_BUFFER_TABLE));
	fk_mk(dev, GA_DIR_WRITE, 0);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	ck_assert_int_eq(ga_reg_read(dev, GA_REG_WRITE_ENABLE, 0, &v), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_uint_eq(fk.unknown, 0);
	ck_assert_uint_eq(fk.enables, 0);
	ga_dev_close(dev);

	/* gpuasync.ko (known by its sysfs class): extensions and enables */
	fk_init();
	fk.table = true;
	dev = fk_open();
	ck_assert(ga_dev_has(dev, GA_CAP_ENABLE_IOCTL));
	ck_assert(ga_dev_has(dev, GA_CAP_BUFFER_TABLE));
	ck_assert_uint_eq(fk.enables, 0); /* none at open */
	/* its add leaves the engines alone (no enable call); switching one
	 * goes through the driver, not a write of the shared word */
	fk_mk(dev, GA_DIR_WRITE, 0);
	ck_assert_uint_eq(fk.enables, 0);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	ck_assert_uint_eq(fk.enables, 1);
	ck_assert_uint_eq(fk_get(GA_REG_WRITE_ENABLE, 0), 1);
	ga_dev_close(dev);
}
END_TEST

/* Another program removes every buffer (upstream 7.4 lets it: no owner):
 * ours turn ERROR and say why, the loss is counted once, arming is refused
 * with an explanation, removing them still works and so does starting
 * again.  With one write buffer the address register tells, with two the
 * counts too. */
START_TEST(test_upstream_wiped)
{
	for (unsigned int nw = 1; nw <= 2; nw++) {
		struct ga_buf *w[2], *r0, *again;
		struct ga_buf_info bi;
		struct ga_dev *dev;

		fk_init();
		dev = fk_open();
		for (unsigned int i = 0; i < nw; i++)
			w[i] = fk_mk(dev, GA_DIR_WRITE, i);
		r0 = fk_mk(dev, GA_DIR_READ, 0);
		ck_assert_int_eq(ga_buf_info(w[0], &bi), 0);
		ck_assert_int_ne(bi.state, GA_BUF_ERROR);
		ck_assert_uint_eq(ga_dev_registrations_lost(dev), 0);

		fk_ioctl(GPU_Rem_Nvidia_Memory, 0); /* the other program */
		ck_assert_int_eq(ga_buf_info(r0, &bi), 0);
		ck_assert_int_eq(bi.state, GA_BUF_ERROR);
		ck_assert_int_eq(ga_buf_info(w[nw - 1], &bi), 0);
		ck_assert_int_eq(bi.state, GA_BUF_ERROR);
		ck_assert_uint_eq(ga_dev_registrations_lost(dev), 1);
		ck_assert_int_eq(ga_buf_arm(w[0]), -EIO);
		ck_assert_msg(strstr(ga_last_error(), "no longer registered"), "%s",
			      ga_last_error());
		ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, nw, GA_GPU_PAGE_SIZE, &again),
				 -EIO);
		ck_assert_uint_eq(ga_dev_registrations_lost(dev), 1);

		ck_assert_int_eq(ga_buf_destroy(r0), 0);
		for (unsigned int i = nw; i-- > 0;)
			ck_assert_int_eq(ga_buf_destroy(w[i]), 0);
		again = fk_mk(dev, GA_DIR_WRITE, 0);
		ck_assert_int_eq(ga_buf_info(again, &bi), 0);
		ck_assert_int_ne(bi.state, GA_BUF_ERROR);
		ck_assert_uint_eq(ga_dev_registrations_lost(dev), 1);
		ga_dev_close(dev);
	}
}
END_TEST

/* A buffer left registered by an earlier process makes the driver place
 * ours at the wrong index: the create fails with EEXIST, and since the
 * driver keeps the registration, the card's address for that slot is
 * cleared and the memory is not freed until a remove-all (the "card" below
 * writes into it after the failure: under ASan a free would show). */
START_TEST(test_upstream_add_undo)
{
	struct ga_buf *b = NULL;
	struct ga_dev *dev;
	uint8_t *mem;

	fk_init();
	dev = fk_open();
	fk.count[1] = 1; /* a stale write buffer at index 0 */
	fk.addr[1][0] = 0x1000;
	fk_counts();
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 0, GA_GPU_PAGE_SIZE, &b), -EEXIST);
	ck_assert_ptr_null(b);
	ck_assert_msg(strstr(ga_last_error(), "index 1, not 0"), "%s", ga_last_error());
	ck_assert_uint_eq(fk.count[1], 2);		       /* the driver still holds it */
	ck_assert_uint_eq(fk_get(GA_REG_WRITE_ADDR_LO, 1), 0); /* the card cannot reach it */
	ck_assert_uint_eq(fk_get(GA_REG_WRITE_ADDR_HI, 1), 0);
	mem = (uint8_t *)(uintptr_t)fk.addr[1][1];
	memset(mem, 0xAB, GA_GPU_PAGE_SIZE); /* still ours: not freed */
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 0);
	/* a remove-all lets go of it (and of the stale one) */
	ck_assert_int_eq(ga_buf_destroy_all(dev), 0);
	ck_assert_uint_eq(fk.count[1], 0);
	b = fk_mk(dev, GA_DIR_WRITE, 0);
	ga_dev_close(dev);
}
END_TEST

/* Another program's buffers on a card without an owner (upstream 7.4; issue
 * 24 item 11a): the create is refused before anything reaches the card, and
 * a remove-all takes them back. */
static void fk_foreign_add(bool write, unsigned int n)
{
	unsigned int l = write ? 1 : 0;

	for (unsigned int k = 0; k < n; k++) {
		fk_add_slot(write, fk.count[l], 0x5000u + k, GA_GPU_PAGE_SIZE);
		fk.count[l]++;
	}
	fk_counts();
}

START_TEST(test_upstream_foreign)
{
	unsigned int fc[2] = {9, 9}, adds, nw = _i == 0 ? 1 : 2;
	struct ga_buf *b = NULL;
	struct ga_dev *dev;
	uint32_t max;

	fk_init();
	dev = fk_open();
	ck_assert_int_eq(ga_dev_foreign_buffers(dev, fc), 0);
	ck_assert_uint_eq(fc[GA_DIR_WRITE] + fc[GA_DIR_READ], 0);
	if (_i == 2) { /* ours first, theirs after */
		fk_mk(dev, GA_DIR_WRITE, 0);
		nw = 1;
	}
	fk_foreign_add(true, nw);
	fk_foreign_add(false, 2); /* a lone one would go unseen: read slot 0 proves nothing */
	ck_assert_int_eq(ga_dev_foreign_buffers(dev, fc), 0);
	ck_assert_uint_eq(fc[GA_DIR_WRITE], nw);
	ck_assert_uint_eq(fc[GA_DIR_READ], 2);
	adds = fk.adds;
	max = fk_get(GA_REG_WRITE_MAX_SIZE, 0);
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, ga_buf_count(dev, GA_DIR_WRITE),
				       GA_GPU_PAGE_SIZE, &b),
			 -EBUSY);
	ck_assert_ptr_null(b);
	ck_assert_msg(strstr(ga_last_error(), "not registered here") &&
			      strstr(ga_last_error(), "nothing was changed") &&
			      strstr(ga_last_error(), "-o reclaim"),
		      "%s", ga_last_error());
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_READ, 0, GA_GPU_PAGE_SIZE, &b), -EBUSY);
	/* nothing reached the card: no add, no removal, the limit as it was */
	ck_assert_uint_eq(fk.adds, adds);
	ck_assert_uint_eq(fk.rem_calls, 0);
	ck_assert_uint_eq(fk_get(GA_REG_WRITE_MAX_SIZE, 0), max);
	ck_assert_uint_eq(fk.count[1], nw + (_i == 2));
	/* a remove-all takes them back (7.4 lets any process) */
	ck_assert_int_eq(ga_buf_destroy_all(dev), 0);
	ck_assert_int_eq(ga_dev_foreign_buffers(dev, fc), 0);
	ck_assert_uint_eq(fc[GA_DIR_WRITE] + fc[GA_DIR_READ], 0);
	fk_mk(dev, GA_DIR_WRITE, 0);
	ga_dev_close(dev);
}
END_TEST

START_TEST(test_upstream_no_table)
{
	struct ga_dev *dev;
	struct ga_pinned p[2];
	unsigned int n = 7;

	fk_init();
	dev = fk_open();
	fk_mk(dev, GA_DIR_WRITE, 0);
	ck_assert_int_eq(ga_dev_pinned(dev, p, 2, &n), -ENOTSUP);
	ck_assert_msg(strstr(ga_last_error(), "no table"), "\"%s\"", ga_last_error());
	ck_assert_uint_eq(n, 0);
	ga_dev_close(dev);
}
END_TEST

/* gpuasync.ko's table through the datadev backend: the fields as the
 * driver reports them, a second ioctl when more entries exist than the
 * library guessed (another process's), bus addresses taken from the table
 * at create, and an invalidated entry turning our buffer's status ERROR. */
START_TEST(test_table)
{
	struct ga_pinned p[16];
	struct ga_buf *w0, *w1, *r0;
	struct ga_buf_info bi;
	struct ga_dev *dev;
	unsigned int n = 0, calls;

	fk_init();
	fk.table = true;
	dev = fk_open();
	ck_assert(ga_dev_has(dev, GA_CAP_BUFFER_TABLE));
	w0 = fk_mk(dev, GA_DIR_WRITE, 0);
	w1 = fk_mk(dev, GA_DIR_WRITE, 1);
	r0 = fk_mk(dev, GA_DIR_READ, 0);
	ck_assert_int_eq(ga_buf_info(w1, &bi), 0);
	ck_assert_uint_eq(bi.bus_address, fk_table_bus(1, 1));

	ck_assert_int_eq(ga_dev_pinned(dev, p, 16, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(p[0].dir, GA_DIR_WRITE);
	ck_assert_uint_eq(p[1].index, 1);
	ck_assert_uint_eq(p[1].gpu_address, bi.gpu_address);
	ck_assert_uint_eq(p[1].bus_address, fk_table_bus(1, 1));
	ck_assert_uint_eq(p[1].size, GA_GPU_PAGE_SIZE);
	ck_assert_uint_eq(p[1].pages, 1);
	ck_assert_int_eq(p[1].owner, (int)getpid());
	ck_assert_int_eq(p[2].dir, GA_DIR_READ);
	ck_assert(!p[0].invalidated && !p[1].invalidated && !p[2].invalidated);

	/* more than the first guess: asked again with room for all */
	fk.foreign = 6;
	calls = fk.table_calls;
	ck_assert_int_eq(ga_dev_pinned(dev, p, 16, &n), 0);
	ck_assert_uint_eq(n, 9);
	ck_assert_uint_eq(fk.table_calls - calls, 2);
	ck_assert_uint_eq(p[8].index, 105);
	ck_assert_int_eq(p[8].owner, 1);
	ck_assert(p[8].invalidated);
	ck_assert_int_eq(ga_buf_info(r0, &bi), 0);
	ck_assert_int_ne(bi.state, GA_BUF_ERROR); /* read 100+ of pid 1 is not ours */

	/* our write buffer 0's memory goes away */
	fk.inval[1][0] = true;
	ck_assert_int_eq(ga_dev_pinned(dev, p, 2, &n), 0);
	ck_assert_uint_eq(n, 9);
	ck_assert(p[0].invalidated && !p[1].invalidated);
	ck_assert_int_eq(ga_buf_info(w0, &bi), 0);
	ck_assert_int_eq(bi.state, GA_BUF_ERROR);
	ck_assert_int_eq(ga_buf_info(w1, &bi), 0);
	ck_assert_int_ne(bi.state, GA_BUF_ERROR);
	ga_dev_close(dev);
}
END_TEST

/* Adding a write buffer while frames flow (issue 24 item 10): on gpuasync.ko
 * (table mode) the add runs live, the library leaves the payload limit and
 * the enables alone and counts nothing; on upstream main it clears the limit
 * for the add and counts the frames the card saw meanwhile. */
START_TEST(test_add_live)
{
	struct ga_dev *dev;

	fk_init();
	fk.table = _i == 1;
	dev = fk_open();
	ck_assert(ga_dev_has(dev, GA_CAP_ADD_LIVE) == fk.table);
	fk_mk(dev, GA_DIR_WRITE, 0);
	ck_assert_int_eq(ga_buf_arm(ga_buf_get(dev, GA_DIR_WRITE, 0)), 0);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	fk.add_frames = 5;
	fk_mk(dev, GA_DIR_WRITE, 1);
	fk_mk(dev, GA_DIR_READ, 0);
	ck_assert_uint_eq(fk_field(dev, GA_REG_WRITE_ENABLE, 0), 1);
	ck_assert_uint_eq(fk_field(dev, GA_REG_WRITE_MAX_SIZE, 0), GA_GPU_PAGE_SIZE - 32);
	if (fk.table) {
		ck_assert_uint_eq(fk.max_at_add, GA_GPU_PAGE_SIZE - 32);
		ck_assert_uint_eq(ga_dev_add_stopped_frames(dev), 0);
	} else {
		ck_assert_uint_le(fk.max_at_add, 1); /* cleared for the add */
		/* main turns the engines on: a read add loses nothing */
		ck_assert_uint_eq(ga_dev_add_stopped_frames(dev), 5);
	}
	/* an add with the write engine off loses nothing */
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, false), 0);
	fk_mk(dev, GA_DIR_WRITE, 2);
	ck_assert_uint_eq(ga_dev_add_stopped_frames(dev), fk.table ? 0 : 5);
	ga_dev_close(dev);
}
END_TEST

/* ---- the dmabuf pin path on gpuasync.ko (faked) ---------------------------- */

/* Memory whose blocks "export" as a memfd of their size: enough for the
 * fake driver, which checks only that the fd is open; the library's part
 * (export, GA_Add_Dmabuf, closing the fd on every path) is what runs. */
static int fx_exports, fx_fail;

static int fx_export(void *ctx, const struct ga_mem_block *blk, int *fd, uint64_t *offset)
{
	(void)ctx;
	if (fx_fail)
		return ga_err(-fx_fail, "fake exporter: refusing");
	*fd = memfd_create("fake-dmabuf", MFD_CLOEXEC);
	ck_assert_int_ge(*fd, 0);
	ck_assert_int_eq(ftruncate(*fd, (off_t)blk->size), 0);
	*offset = 0;
	fx_exports++;
	return 0;
}

static int fx_probe(void *ctx, char *why, size_t len)
{
	(void)ctx;
	snprintf(why, len, "fake exporter");
	return 0;
}

static struct ga_mem_ops fx_ops;

static struct ga_dev *fk_open_pin(enum ga_pin pin, int *rc)
{
	struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;
	struct ga_dev *dev = NULL;

	o.use_gpu = false;
	o.pin = pin;
	*rc = ga_dev_open_opts("/dev/zero", &o, &dev);
	return dev;
}

/* A card of the fake's table mode with GA_Add_Dmabuf (and, @whole, the
 * by-value dma-buf commands), opened pin=p2p, whose host memory exports
 * through fx_export; pin=dmabuf from here on. */
static struct ga_dev *fx_open_exporting(bool whole)
{
	struct ga_dev *dev;
	int rc;

	fk_init();
	fk.table = fk.dmabuf = true;
	fk.whole = whole;
	dev = fk_open_pin(GA_PIN_P2P, &rc);
	ck_assert_int_eq(rc, 0);
	fx_ops = *dev->mem;
	fx_ops.dmabuf_probe = fx_probe;
	fx_ops.dmabuf_export = fx_export;
	dev->mem = &fx_ops;
	dev->dmabuf = true;
	dev->opts.pin = GA_PIN_DMABUF;
	fx_exports = fx_fail = 0;
	return dev;
}

/* What pin= does with a driver that lacks GA_Add_Dmabuf: p2p (auto, p2p),
 * or a refused open naming it (dmabuf); with it and host memory, the
 * memory's reason (no udmabuf here) or dmabuf where udmabuf works. */
START_TEST(test_pin_open)
{
	struct ga_dev_info info;
	struct ga_dev *dev;
	unsigned int fds;
	int rc;

	fk_init();
	for (int table = 0; table < 2; table++) {
		fk.table = table;
		fds = fd_count();
		dev = fk_open_pin(GA_PIN_DMABUF, &rc);
		ck_assert_msg(rc == -ENOTSUP, "table %d: %d (%s)", table, rc, ga_last_error());
		ck_assert_ptr_null(dev);
		ck_assert_msg(strstr(ga_last_error(), "pin=dmabuf") &&
				      strstr(ga_last_error(), "GA_Add_Dmabuf"),
			      "\"%s\"", ga_last_error());
		ck_assert_uint_eq(fd_count(), fds);
		dev = fk_open_pin(GA_PIN_AUTO, &rc);
		ck_assert_int_eq(rc, 0);
		ck_assert_int_eq(ga_dev_info(dev, &info), 0);
		ck_assert_str_eq(info.pin, "p2p");
		ck_assert_msg(strstr(info.pin_note, "pin=auto") &&
				      strstr(info.pin_note, "GA_Add_Dmabuf"),
			      "\"%s\"", info.pin_note);
		ck_assert(!ga_dev_has(dev, GA_CAP_DMABUF));
		ga_dev_close(dev);
	}
	ck_assert_uint_eq(fk.unknown, 0); /* GA_Add_Dmabuf is never tried */
	fk.dmabuf = true;
	dev = fk_open_pin(GA_PIN_P2P, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert(ga_dev_has(dev, GA_CAP_DMABUF));
	ck_assert_int_eq(ga_dev_info(dev, &info), 0);
	ck_assert_str_eq(info.pin, "p2p");
	ck_assert_ptr_nonnull(strstr(info.pin_note, "pin=p2p"));
	ga_dev_close(dev);
	dev = fk_open_pin(GA_PIN_DMABUF, &rc);
	if (access("/dev/udmabuf", F_OK) != 0) {
		ck_assert_int_eq(rc, -ENOTSUP);
		ck_assert_msg(strstr(ga_last_error(), "pin=dmabuf: /dev/udmabuf does not exist"),
			      "\"%s\"", ga_last_error());
	} else if (rc == 0) {
		ck_assert_int_eq(ga_dev_info(dev, &info), 0);
		ck_assert_str_eq(info.pin, "dmabuf");
		ga_dev_close(dev);
	}
	dev = fk_open_pin((enum ga_pin)7, &rc);
	ck_assert_int_eq(rc, -EINVAL);
}
END_TEST

START_TEST(test_pin_dmabuf_add)
{
	struct ga_buf *w0, *b = NULL;
	struct ga_buf_info bi;
	struct ga_pinned p[4];
	struct ga_dev *dev;
	unsigned int n = 0, fds;
	int rc;

	/* host memory that exports: the library's side of the path */
	dev = fx_open_exporting(false);
	fds = fd_count();

	w0 = fk_mk(dev, GA_DIR_WRITE, 0);
	ck_assert_int_eq(fx_exports, 1);
	ck_assert_uint_eq(fk.dmabuf_adds, 1);
	ck_assert_uint_eq(fk.adds, 0);
	ck_assert_uint_eq(fd_count(), fds); /* the library closed its fd */
	ck_assert_int_eq(ga_buf_info(w0, &bi), 0);
	ck_assert(bi.dmabuf);
	ck_assert_uint_eq(bi.bus_address, fk_table_bus(1, 0));
	ck_assert_int_eq(ga_dev_pinned(dev, p, 4, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert(p[0].dmabuf);
	ck_assert_uint_eq(p[0].gpu_address, 0); /* the offset into the dma-buf */

	/* the driver refuses: its reason, nothing registered, fd closed */
	fk.dmabuf_err = EINVAL;
	rc = ga_buf_create(dev, GA_DIR_WRITE, 1, GA_GPU_PAGE_SIZE, &b);
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_msg(strstr(ga_last_error(), "GA_Add_Dmabuf") &&
			      strstr(ga_last_error(), "contiguous"),
		      "\"%s\"", ga_last_error());
	fk.dmabuf_err = EOPNOTSUPP; /* the exporter will not attach the card */
	rc = ga_buf_create(dev, GA_DIR_WRITE, 1, GA_GPU_PAGE_SIZE, &b);
	ck_assert_int_eq(rc, -EOPNOTSUPP);
	ck_assert_msg(strstr(ga_last_error(), "exporter refused"), "\"%s\"", ga_last_error());
	fk.dmabuf_err = EPROTO; /* any other errno of the exporter's */
	rc = ga_buf_create(dev, GA_DIR_WRITE, 1, GA_GPU_PAGE_SIZE, &b);
	ck_assert_int_eq(rc, -EPROTO);
	ck_assert_msg(strstr(ga_last_error(), "exporter refused"), "\"%s\"", ga_last_error());
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 1);
	ck_assert_uint_eq(fd_count(), fds);
	fk.dmabuf_err = 0;

	/* the memory cannot export this buffer: pin=dmabuf fails with its
	 * reason, pin=auto registers it by address */
	fx_fail = ENOMEM;
	rc = ga_buf_create(dev, GA_DIR_WRITE, 1, GA_GPU_PAGE_SIZE, &b);
	ck_assert_int_eq(rc, -ENOMEM);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "fake exporter"));
	dev->opts.pin = GA_PIN_AUTO;
	b = fk_mk(dev, GA_DIR_WRITE, 1);
	ck_assert_uint_eq(fk.adds, 1);
	ck_assert_int_eq(ga_buf_info(b, &bi), 0);
	ck_assert(!bi.dmabuf);
	ck_assert_int_eq(ga_dev_pinned(dev, p, 4, &n), 0);
	ck_assert(p[0].dmabuf && !p[1].dmabuf);
	fx_fail = 0;
	ck_assert_uint_eq(fd_count(), fds);

	/* removal works the same for both kinds */
	ck_assert_int_eq(ga_buf_destroy(b), 0);
	ck_assert_int_eq(ga_buf_destroy(w0), 0);
	ck_assert_uint_eq(fk.count[1], 0);
	ga_dev_close(dev);
}
END_TEST

/* A fake dma-buf one page larger than the buffer: only a part of it is ours. */
static int fx_export_part(void *ctx, const struct ga_mem_block *blk, int *fd, uint64_t *offset)
{
	int rc = fx_export(ctx, blk, fd, offset);

	if (rc == 0)
		ck_assert_int_eq(ftruncate(*fd, (off_t)blk->size + GA_GPU_PAGE_SIZE), 0);
	return rc;
}

/*
 * Upstream's dma-buf commands of after 7.5.1, on a gpuasync.ko of ABI 4
 * (the fake's table mode): a whole dma-buf goes by value
 * (GPU_DmaBuf_Add_Wr/Rd_Buffer), a part of one through GA_Add_Dmabuf, and
 * without GA_Add_Dmabuf a part is refused saying why; remove-all is
 * GPU_DmaBuf_Remove_Buffers; a driver without nvidia-p2p refuses buffers by
 * address, saying to use dma-bufs.
 */
START_TEST(test_pin_dmabuf_whole)
{
	struct ga_buf *w0, *r0, *w1, *b = NULL;
	struct ga_buf_info bi;
	struct ga_dev *dev;
	int rc;

	dev = fx_open_exporting(true);
	ck_assert(ga_dev_has(dev, GA_CAP_DMABUF) && ga_dev_has(dev, GA_CAP_DMABUF_WHOLE));
	ck_assert(ga_dev_has(dev, GA_CAP_GPUDIRECT));

	w0 = fk_mk(dev, GA_DIR_WRITE, 0);
	r0 = fk_mk(dev, GA_DIR_READ, 0);
	ck_assert_uint_eq(fk.whole_adds[1], 1);
	ck_assert_uint_eq(fk.whole_adds[0], 1);
	ck_assert_uint_eq(fk.dmabuf_adds + fk.adds, 0);
	ck_assert_int_eq(ga_buf_info(w0, &bi), 0);
	ck_assert(bi.dmabuf);
	ck_assert_int_eq(ga_buf_info(r0, &bi), 0);
	ck_assert(bi.dmabuf);

	fx_ops.dmabuf_export = fx_export_part;
	w1 = fk_mk(dev, GA_DIR_WRITE, 1);
	ck_assert_uint_eq(fk.dmabuf_adds, 1);
	ck_assert_uint_eq(fk.whole_adds[1], 1);
	ck_assert_int_eq(ga_buf_info(w1, &bi), 0);
	ck_assert(bi.dmabuf);

	ck_assert_int_eq(ga_buf_destroy_all(dev), 0);
	ck_assert_uint_eq(fk.whole_rems, 1);
	ck_assert_uint_eq(fk.rem_calls, 0);
	ck_assert_uint_eq(fk.count[0] + fk.count[1], 0);
	ga_dev_close(dev);

	/* by value only: a part of a dma-buf is refused, saying why */
	fk.dmabuf = false;
	dev = fk_open_pin(GA_PIN_P2P, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert(ga_dev_has(dev, GA_CAP_DMABUF) && ga_dev_has(dev, GA_CAP_DMABUF_WHOLE));
	dev->mem = &fx_ops;
	dev->dmabuf = true;
	dev->opts.pin = GA_PIN_DMABUF;
	rc = ga_buf_create(dev, GA_DIR_WRITE, 0, GA_GPU_PAGE_SIZE, &b);
	ck_assert_int_eq(rc, -ENOTSUP);
	ck_assert_msg(strstr(ga_last_error(), "only whole dma-bufs") &&
			      strstr(ga_last_error(), "pin=p2p"),
		      "\"%s\"", ga_last_error());
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 0);
	ck_assert_uint_eq(fk.count[1], 0);
	ga_dev_close(dev);
	ck_assert_uint_eq(fk.unknown, 0);

	/* no nvidia-p2p: buffers by address are refused before the driver */
	fk.no_gpudirect = true;
	dev = fk_open_pin(GA_PIN_P2P, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert(!ga_dev_has(dev, GA_CAP_GPUDIRECT));
	rc = ga_buf_create(dev, GA_DIR_WRITE, 0, GA_GPU_PAGE_SIZE, &b);
	ck_assert_int_eq(rc, -ENOTSUP);
	ck_assert_msg(strstr(ga_last_error(), "without nvidia-p2p") &&
			      strstr(ga_last_error(), "pin=dmabuf"),
		      "\"%s\"", ga_last_error());
	ck_assert_uint_eq(fk.adds, 0);
	ga_dev_close(dev);
}
END_TEST

/* Which upstream builds are asked about the dma-buf commands: releases
 * after 7.5.1 only (7.4 and 7.5 log every code they do not know). */
START_TEST(test_gitv)
{
	static const struct {
		const char *gitv;
		bool has;
	} cases[] = {
		{"v7.5.1", false},
		{"v7.5.0", false},
		{"v7.4.3-12-gabc1234", false},
		{"v7.5.1-7-g1234abc", false},
		{"v7.5.2", true},
		{"v7.6.0-3-gabcdef0", true},
		{"7.10.0", true},
		{"v8.0.0", true},
		{"v6.9.9", false},
		{"gpuasync-conformance", false},
		{"a824d75", false},
		{"", false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(ga_datadev_gitv_has_dmabuf(cases[i].gitv) == cases[i].has, "%s",
			      cases[i].gitv);
}
END_TEST

static Suite *datadev_suite(void)
{
	Suite *s = suite_create("datadev");

	suite_add_tests(s, "errno", 0,
			SUITE_TESTS({test_mapping_every_command}, {test_mapping_dmabuf}));
	suite_add_tests(s, "open", 0,
			SUITE_TESTS({test_open_missing}, {test_open_regular_file},
				    {test_open_wrong_chardev}, {test_open_directory}));
	suite_add_tests(s, "upstream", 0,
			SUITE_TESTS({test_upstream_open}, {test_upstream_registers, 2},
				    {test_upstream_buffers, 2}, {test_upstream_failures},
				    {test_upstream_quiet_probe}, {test_upstream_wiped},
				    {test_upstream_add_undo}, {test_upstream_foreign, 3},
				    {test_upstream_no_table}, {test_table}, {test_add_live, 2}));
	suite_add_tests(s, "dmabuf", 0,
			SUITE_TESTS({test_pin_open}, {test_pin_dmabuf_add}, {test_pin_dmabuf_whole},
				    {test_gitv}));
	return s;
}

int main(void)
{
	return run_suite(datadev_suite());
}
