/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The directories of the tree and the files at its top: README, errors,
 * metrics (and prometheus/gpuasync.prom, the same for node_exporter's
 * textfile collector), config and device/.  Register, buffer and sim files live in
 * their own modules; this file only lists them as rows.
 *
 *   $ cat /mnt/gpuasync/device/version
 *   4
 *   $ cat /mnt/gpuasync/config
 *   [device]
 *   path = sim
 *   ...
 *
 * device/ shows the identity read once when the device was opened (like
 * sysfs identity attributes); it does not change while mounted.
 * device/registers_path says where another process maps the register block
 * (a CUDA consumer re-arming buffers from the GPU):
 *
 *   $ cat /mnt/gpuasync/device/registers_path
 *   /dev/shm/gpuasync-sim-4242-0 0x0
 *
 * one line, the file to open and the byte offset to mmap GA_CORE_SIZE bytes
 * at, separated by the last space (hex, so a BAR offset reads as one).  It is
 * absent when the driver does not let the block be mapped.
 *
 * device/pinned is the exception that changes: the driver's table of pinned
 * buffers (gpuasync.ko, the simulated card; absent on upstream datadev),
 * read at every open, a header line and one line per buffer:
 *
 *   $ cat /mnt/gpuasync/device/pinned
 *   dir index gpu_address bus_address size pages owner state path
 *   write 0 0x7f3a40000000 0xdead000000000000 131072 2 4242 pinned p2p
 *   write 1 0x0 0xdead000100000000 131072 2 4242 pinned dmabuf
 *
 * state is "invalidated" once the GPU memory went away under the pin; that
 * buffer's status then reads ERROR.  path is how the buffer reached the
 * driver: p2p (by address) or dmabuf (from a dma-buf fd; gpu_address is
 * then the offset into the dma-buf, as the driver keeps it).
 *
 * device/pin is the pin path chosen at mount (-o pin=, [device] pin): "p2p"
 * or "dmabuf"; device/memory_note says why, on its second line.
 *
 * device/link is live too: "up", or "down" when every register reads
 * 0xffffffff (a card that fell off the bus); errors says when it changes
 * and every write is then refused with ENOLINK.  device/firmware/ is the
 * AxiVersion identity, one file per row of gpuasync/axiversion.h, read
 * afresh each time (uptime moves); absent where the backend cannot reach
 * AxiVersion.  Identity is read-only; scratch_pad (pyrogue's ScratchPad)
 * is the block's read-write test word, as on the card:
 *
 *   $ cat /mnt/gpuasync/device/firmware/git_hash
 *   5eed5eedcafef00ddeadbeef0123456789abcdef
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

static bool only_sim(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	(void)n;
	(void)idx;
	return fs->sim;
}

static int show_readme(struct fs_ctx *c, struct strbuf *sb)
{
	return fs_render_readme(c->fs, sb);
}

static int show_config(struct fs_ctx *c, struct strbuf *sb)
{
	char buf[8192];
	int n = ga_config_format(&c->fs->cfg, buf, sizeof(buf));

	if (n < 0)
		return n;
	return sb_put(sb, buf, strnlen(buf, sizeof(buf))) ? -ENOMEM : 0;
}

/* One show function per device/ file, stamped out like DEVICE_ATTR_RO. */
#define DEVICE_SHOW(field, fmt, expr)                                                              \
	static int show_dev_##field(struct fs_ctx *c, struct strbuf *sb)                           \
	{                                                                                          \
		const struct ga_dev_info *i = &c->fs->info;                                        \
		(void)i;                                                                           \
		return sb_printf(sb, fmt "\n", expr) ? -ENOMEM : 0;                                \
	}
DEVICE_SHOW(backend, "%s", i->backend)
DEVICE_SHOW(path, "%s", i->path)
DEVICE_SHOW(supported, "%d", ga_dev_has(c->fs->dev, GA_CAP_SUPPORTED) ? 1 : 0)
DEVICE_SHOW(version, "%u", i->version)
DEVICE_SHOW(layout, "%s", ga_layout_name(i->layout))
DEVICE_SHOW(max_buffers, "%u", i->max_buffers)
DEVICE_SHOW(dma_data_bytes, "%u", i->dma_data_bytes)
DEVICE_SHOW(clock_hz, "%llu", (unsigned long long)i->clock_hz)
DEVICE_SHOW(gpu, "%s", i->gpu)
DEVICE_SHOW(memory, "%s", c->fs->info.memory)
DEVICE_SHOW(pin, "%s", c->fs->info.pin)
DEVICE_SHOW(dma_buf, "%s", ga_dev_has(c->fs->dev, GA_CAP_DMABUF) ? "yes" : "no")
DEVICE_SHOW(gpudirect, "%s", ga_dev_has(c->fs->dev, GA_CAP_GPUDIRECT) ? "yes" : "no")
#undef DEVICE_SHOW

/* Two lines: the memory in use (or why not GPU memory), then the pin path
 * and why. */
static int show_memory_note(struct fs_ctx *c, struct strbuf *sb)
{
	const char *note = c->fs->info.memory_note;

	return sb_printf(sb, "%s\n%s\n", *note ? note : "GPU memory in use", c->fs->info.pin_note)
		       ? -ENOMEM
		       : 0;
}

static int show_registers_path(struct fs_ctx *c, struct strbuf *sb)
{
	char path[512];
	uint64_t off = 0;
	int ret = ga_dev_reg_path(c->fs->dev, path, sizeof(path), &off);

	if (ret < 0)
		return ret;
	return sb_printf(sb, "%s 0x%llx\n", path, (unsigned long long)off) ? -ENOMEM : 0;
}

/* Mount-time check: a datadev driver that cannot map the block has no
 * path to give (absent, not failing). */
static bool has_registers_path(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	char path[512];
	uint64_t off;

	(void)n;
	(void)idx;
	return ga_dev_reg_path(fs->dev, path, sizeof(path), &off) == 0;
}

static int show_link(struct fs_ctx *c, struct strbuf *sb)
{
	int up = ga_dev_link(c->fs->dev);

	if (up < 0)
		return up;
	return sb_printf(sb, "%s\n", up ? "up" : "down") ? -ENOMEM : 0;
}

/* device/firmware/<name>: the row is found by the file's name. */
static int show_firmware(struct fs_ctx *c, struct strbuf *sb)
{
	char buf[GA_FW_TEXT_MAX];
	int id = ga_fw_find(c->node->name);
	int ret;

	if (id < 0)
		return fs_err(-ENOENT, "%s: not an AxiVersion field", c->node->name);
	ret = ga_fw_read(c->fs->dev, (enum ga_fw_id)id, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	return sb_printf(sb, "%s\n", buf) ? -ENOMEM : 0;
}

/* device/firmware/<name> of a read-write row (scratch_pad): a number
 * ("0x" for hex) that fits the field; the library keeps the word's other
 * bits. */
static int store_firmware(struct fs_ctx *c, const char *buf, size_t len)
{
	int id = ga_fw_find(c->node->name);
	const struct ga_fw_field *f;
	uint64_t v, max;
	int ret;

	if (id < 0)
		return fs_err(-ENOENT, "%s: not an AxiVersion field", c->node->name);
	f = &ga_fw_fields[id];
	max = f->msb - f->lsb == 31 ? UINT32_MAX : (1u << (f->msb - f->lsb + 1)) - 1;
	ret = fs_parse_u64(buf, len, max, false, &v);
	if (ret < 0 || c->check_only)
		return ret < 0 ? ret : fs_write_link_check(c->fs);
	return ga_fw_write(c->fs->dev, (enum ga_fw_id)id, (uint32_t)v);
}

static bool has_firmware(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	(void)n;
	(void)idx;
	return ga_dev_has(fs->dev, GA_CAP_FIRMWARE_ID);
}

/* The driver's table of pinned buffers, one line each under a header. */
static int show_pinned(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_pinned *p = NULL;
	unsigned int n = 0, cap = 0;
	int ret;

	/* The table may grow between asking its size and reading it. */
	for (;;) {
		ret = ga_dev_pinned(c->fs->dev, p, cap, &n);
		if (ret < 0 || n <= cap)
			break;
		free(p);
		cap = n + 4;
		p = calloc(cap, sizeof(*p));
		if (!p)
			return -ENOMEM;
	}
	if (ret < 0) {
		free(p);
		return ret;
	}
	sb_printf(sb, "dir index gpu_address bus_address size pages owner state path\n");
	for (unsigned int i = 0; i < n; i++)
		sb_printf(sb, "%s %u 0x%llx 0x%llx %zu %u %d %s %s\n",
			  p[i].dir == GA_DIR_WRITE ? "write" : "read", p[i].index,
			  (unsigned long long)p[i].gpu_address,
			  (unsigned long long)p[i].bus_address, p[i].size, p[i].pages, p[i].owner,
			  p[i].invalidated ? "invalidated" : "pinned",
			  p[i].dmabuf ? "dmabuf" : "p2p");
	free(p);
	return sb->oom ? -ENOMEM : 0;
}

static bool has_pinned(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	(void)n;
	(void)idx;
	return ga_dev_has(fs->dev, GA_CAP_PINNED_LIST);
}

/* clang-format off */
#define DIR_ROW(nm, par, d, ...) { .name = nm, .parent = par, .dir = d, .mode = 0555, .reg = -1, __VA_ARGS__ }
#define DEV_ROW(nm, docstr) \
	{ .name = #nm, .parent = FS_D_DEVICE, .dir = FS_D_NONE, .mode = 0444, .show = show_dev_##nm, .reg = -1, .doc = docstr }

const struct fs_node fs_core_rows[] = {
	/* Row 0 is the root: inode 1 == FUSE_ROOT_ID. */
	DIR_ROW("", FS_D_NONE, FS_D_ROOT, .doc = "the card"),
	{ .name = "README", .parent = FS_D_ROOT, .dir = FS_D_NONE, .mode = 0444, .flags = FS_SIZED, .show = show_readme,
	  .reg = -1, .doc = "this list: every file with one line of meaning" },
	{ .name = "errors", .parent = FS_D_ROOT, .dir = FS_D_NONE, .mode = 0444, .flags = FS_LIVE | FS_SIZED | FS_APPEND,
	  .show = fs_show_errors, .reg = -1,
	  .doc = "why recent requests were refused, newest last (an errno alone cannot say)" },
	{ .name = "metrics", .parent = FS_D_ROOT, .dir = FS_D_NONE, .mode = 0444, .flags = FS_SIZED,
	  .show = fs_show_metrics, .reg = -1,
	  .doc = "Prometheus text exposition: counters, latencies (seconds), buffer states" },
	{ .name = "config", .parent = FS_D_ROOT, .dir = FS_D_NONE, .mode = 0444, .flags = FS_SIZED, .show = show_config,
	  .reg = -1, .doc = "the effective configuration (ini)" },
	{ .name = "pyrogue", .parent = FS_D_ROOT, .dir = FS_D_NONE, .mode = 0444,
	  .show = fs_show_pyrogue, .reg = -1,
	  .doc = "pyrogue's name for each file: 'AxiGpuAsyncCore.RxFrameCnt registers/rx_frame_count'" },
	/* node_exporter's textfile collector reads *.prom files of a directory:
	 * --collector.textfile.directory=MOUNTPOINT/prometheus */
	DIR_ROW("prometheus", FS_D_ROOT, FS_D_PROMETHEUS,
		.doc = "point node_exporter's textfile collector here"),
	{ .name = "gpuasync.prom", .parent = FS_D_PROMETHEUS, .dir = FS_D_NONE, .mode = 0444, .flags = FS_SIZED,
	  .show = fs_show_metrics, .reg = -1, .doc = "the metrics file again, under a name node_exporter reads" },
	DIR_ROW("device", FS_D_ROOT, FS_D_DEVICE,
		.doc = "identity of the card, read at mount, and its pinned buffers"),
	DEV_ROW(backend, "driver in use: sim or datadev"),
	DEV_ROW(path, "device path or simulated-card spec"),
	DEV_ROW(supported, "1 when the card has GpuAsync firmware enabled"),
	DEV_ROW(version, "GpuAsyncCore firmware version"),
	DEV_ROW(layout, "register layout in use: v1, v4 or v4-legacy"),
	DEV_ROW(max_buffers, "buffers per direction the firmware supports"),
	DEV_ROW(dma_data_bytes, "payload offset inside each buffer (bytes)"),
	DEV_ROW(clock_hz, "clock of the latency counters (Hz)"),
	DEV_ROW(gpu, "GPU holding the buffers"),
	DEV_ROW(memory, "gpu (CUDA), stub (upstream p2p stub, emulator only) or host"),
	{ .name = "memory_note", .parent = FS_D_DEVICE, .dir = FS_D_NONE, .mode = 0444,
	  .show = show_memory_note, .reg = -1,
	  .doc = "why GPU memory is not used, and what is instead; then the pin path and why" },
	DEV_ROW(pin, "how buffers reach the driver: dmabuf (GA_Add_Dmabuf) or p2p (by address)"),
	DEV_ROW(dma_buf, "yes when the driver takes buffers as dma-bufs (GA_Add_Dmabuf, GPU_DmaBuf_Add_*)"),
	DEV_ROW(gpudirect, "yes when the driver pins GPU memory by address (nvidia-p2p)"),
	{ .name = "registers_path", .parent = FS_D_DEVICE, .dir = FS_D_NONE, .mode = 0444,
	  .show = show_registers_path, .visible = has_registers_path, .reg = -1,
	  .doc = "'FILE 0xOFFSET': mmap 0x8000 bytes of FILE at OFFSET to reach the registers" },
	{ .name = "pinned", .parent = FS_D_DEVICE, .dir = FS_D_NONE, .mode = 0444, .flags = FS_LIVE,
	  .show = show_pinned, .visible = has_pinned, .reg = -1,
	  .doc = "the driver's pinned buffers: dir index gpu_address bus_address size pages owner state path" },
	{ .name = "link", .parent = FS_D_DEVICE, .dir = FS_D_NONE, .mode = 0444, .flags = FS_LIVE,
	  .show = show_link, .reg = -1,
	  .doc = "up, or down when every register reads 0xffffffff (writes then fail: ENOLINK)" },
	DIR_ROW("firmware", FS_D_DEVICE, FS_D_FIRMWARE, .visible = has_firmware,
		.doc = "the card's firmware identity (AxiVersion), read live"),
#define FW_ROW(id_, name_, off_, words_, kind_, lsb_, msb_, access_, value_, doc_, ...) \
	{ .name = name_, .parent = FS_D_FIRMWARE, .dir = FS_D_NONE, \
	  .mode = (access_) == GA_FWA_RW ? 0644 : 0444, .flags = FS_LIVE, .show = show_firmware, \
	  .store = (access_) == GA_FWA_RW ? store_firmware : NULL, .visible = has_firmware, \
	  .reg = -1, .doc = doc_ },
#define GA_DEF_FIRMWARE FW_ROW
#include <gpuasync/firmware.def>
#undef FW_ROW
	DIR_ROW("registers", FS_D_ROOT, FS_D_REGISTERS,
		.doc = "one file per register field of the running firmware"),
	DIR_ROW("buffers", FS_D_ROOT, FS_D_BUFFERS,
		.doc = "FPGA->GPU buffers: mkdir buffers/<i> allocates, rmdir releases"),
	DIR_ROW(NULL, FS_D_BUFFERS, FS_D_WBUF, .flags = FS_DYNNAME,
		.doc = "write buffer i (i = number of buffers before it)"),
	DIR_ROW("latency", FS_D_WBUF, FS_D_WLAT, .doc = "latencies measured on this buffer (cycles)"),
	DIR_ROW("read_buffers", FS_D_ROOT, FS_D_READ_BUFFERS,
		.doc = "GPU->FPGA buffers: mkdir read_buffers/<i> allocates, rmdir releases"),
	DIR_ROW(NULL, FS_D_READ_BUFFERS, FS_D_RBUF, .flags = FS_DYNNAME, .doc = "read buffer i"),
	DIR_ROW("latency", FS_D_RBUF, FS_D_RLAT, .doc = "latencies measured on this buffer (cycles)"),
	DIR_ROW("sim", FS_D_ROOT, FS_D_SIM, .visible = only_sim,
		.doc = "simulated card only: frame generator and fault injection"),
	DIR_ROW("stats", FS_D_SIM, FS_D_SIM_STATS, .visible = only_sim,
		.doc = "what the simulated card did"),
};
const unsigned int fs_core_nrows = sizeof(fs_core_rows) / sizeof(fs_core_rows[0]);
/* clang-format on */
