/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * buffers/ (FPGA->GPU) and read_buffers/ (GPU->FPGA), configfs style:
 *
 *   $ echo 128K > /mnt/gpuasync/buffers/alloc_size  # size the next mkdir uses
 *   $ mkdir /mnt/gpuasync/buffers/0                 # allocate, pin, register
 *   $ echo 1 > /mnt/gpuasync/buffers/0/write_enable # arm (free list)
 *   $ cat /mnt/gpuasync/buffers/0/status            # FREE, then READY
 *   $ cat /mnt/gpuasync/buffers/0/header
 *   size=4096 result=0 overflow=0 cont=0 first_user=0x02 last_user=0x00
 *   $ rmdir /mnt/gpuasync/buffers/0                 # unregister, unpin, free
 *
 * mkdir/rmdir are make_group/drop_item.  What the upstream ABI cannot do
 * is refused by the library with an explanation (indices are assigned in
 * call order, so buffers/<i> must be the next index; only the last buffer
 * can go on its own; V4 write buffers share one size), and the daemon adds
 * its own refusal: the number of buffers is capped by the firmware and
 * [buffers] max.  Removal wins over open files, as in sysfs: a file still
 * open on a removed buffer fails with ENODEV from then on (its generation
 * is gone), and a buffer made again under the same name is a new one.
 *
 * Every handler here runs with fs->bufs_lock held for reading and c->buf
 * checked to be the buffer the file was opened on (tree.c); mkdir and
 * rmdir take the lock for writing.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs.h"

static const char *dir_name(enum ga_dir dir)
{
	return dir == GA_DIR_WRITE ? "buffers" : "read_buffers";
}

int fs_buffer_name(const char *name, unsigned int *idx)
{
	unsigned long v = 0;
	size_t len = strlen(name);

	/* Canonical decimal only: "07" or "+7" would alias "7". */
	if (!len || len > 5 || (len > 1 && name[0] == '0'))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)name[i]))
			return -EINVAL;
		v = v * 10 + (unsigned long)(name[i] - '0');
	}
	*idx = (unsigned int)v;
	return 0;
}

static unsigned int buffer_limit(struct fs *fs)
{
	unsigned int lim = fs->info.max_buffers;

	if (fs->cfg.buffer_max && fs->cfg.buffer_max < lim)
		lim = fs->cfg.buffer_max;
	return lim < GA_MAX_BUFFERS ? lim : GA_MAX_BUFFERS;
}

/* The driver's add stopped the write engine (or made the library clear the
 * payload limit) while frames came: say how many the card counted then,
 * as errors is where an operator looks for frames gone missing. */
static void note_add_stopped(struct fs *fs, enum ga_dir dir, unsigned int i, uint64_t n)
{
	char why[320], path[32];

	if (!n)
		return;
	snprintf(path, sizeof(path), "%s/%u", dir_name(dir), i);
	snprintf(why, sizeof(why),
		 "%llu frame%s arrived while the add had the write engine stopped or the "
		 "payload limit cleared (dropped or cut short): upstream's datadev adds no "
		 "buffer while frames flow (gpuasync_add_stopped_frames_total)",
		 (unsigned long long)n, n == 1 ? "" : "s");
	fs_error_add(fs, path, 0, why);
}

int fs_buffer_mkdir(struct fs *fs, enum ga_dir dir, const char *name, unsigned int *idx)
{
	unsigned int i, count, lim = buffer_limit(fs);
	struct ga_buf *buf;
	int ret;

	if (fs_buffer_name(name, &i) < 0)
		return fs_err(-EINVAL,
			      "'%s' is not a buffer index: name buffer directories 0, 1, 2, ...",
			      name);
	pthread_rwlock_wrlock(&fs->bufs_lock);
	if (dir == GA_DIR_WRITE)
		fs_frames_exclude(fs); /* the frame watcher reads write buffers */
	count = ga_buf_count(fs->dev, dir);
	if (i < GA_MAX_BUFFERS && ga_buf_get(fs->dev, dir, i)) {
		ret = fs_err(-EEXIST, "%s/%u exists", dir_name(dir), i);
	} else if (i >= fs->info.max_buffers || i >= GA_MAX_BUFFERS) {
		ret = fs_err(-ERANGE, "index %u: the firmware has %u buffers per direction (0..%u)",
			     i, fs->info.max_buffers, fs->info.max_buffers - 1);
	} else if (count >= lim) {
		ret = fs_err(-ENOSPC, "%u %s already, the limit ([buffers] max or firmware)", count,
			     dir_name(dir));
	} else {
		uint64_t stopped = ga_dev_add_stopped_frames(fs->dev);

		ret = ga_buf_create(fs->dev, dir, i, (size_t)atomic_load(&fs->alloc_size[dir]),
				    &buf);
		if (ret == 0) {
			fs->slots[dir][i].gen++;
			*idx = i;
		}
		note_add_stopped(fs, dir, i, ga_dev_add_stopped_frames(fs->dev) - stopped);
	}
	if (dir == GA_DIR_WRITE)
		fs_frames_unexclude(fs);
	pthread_rwlock_unlock(&fs->bufs_lock);
	return ret;
}

int fs_buffer_rmdir(struct fs *fs, enum ga_dir dir, const char *name)
{
	unsigned int i;
	struct ga_buf *buf;
	int ret;

	if (fs_buffer_name(name, &i) < 0 || i >= GA_MAX_BUFFERS)
		return fs_err(-ENOENT, "no buffer directory '%s'", name);
	pthread_rwlock_wrlock(&fs->bufs_lock);
	if (dir == GA_DIR_WRITE)
		fs_frames_exclude(fs);
	buf = ga_buf_get(fs->dev, dir, i);
	if (!buf) {
		ret = fs_err(-ENOENT, "%s/%u does not exist", dir_name(dir), i);
	} else {
		ret = ga_buf_destroy(buf);
		if (ret == 0)
			fs->slots[dir][i].gen++; /* files still open on it are now stale */
	}
	if (dir == GA_DIR_WRITE)
		fs_frames_unexclude(fs);
	pthread_rwlock_unlock(&fs->bufs_lock);
	return ret;
}

/* ---- alloc_size ------------------------------------------------------------ */

static enum ga_dir node_dir(const struct fs_node *n)
{
	return (n->parent == FS_D_READ_BUFFERS || n->parent == FS_D_RBUF) ? GA_DIR_READ
									  : GA_DIR_WRITE;
}

static int show_alloc_size(struct fs_ctx *c, struct strbuf *sb)
{
	uint64_t v = atomic_load(&c->fs->alloc_size[node_dir(c->node)]);

	return sb_printf(sb, "%llu\n", (unsigned long long)v) ? -ENOMEM : 0;
}

static int store_alloc_size(struct fs_ctx *c, const char *buf, size_t len)
{
	enum ga_dir dir = node_dir(c->node);
	struct fs *fs = c->fs;
	uint64_t v;
	int ret = fs_parse_u64(buf, len, UINT32_MAX & ~(uint64_t)(GA_GPU_PAGE_SIZE - 1), true, &v);

	if (ret < 0)
		return ret;
	if (!v || v % GA_GPU_PAGE_SIZE)
		return fs_err(-EINVAL, "%llu: buffers are whole 64 KiB GPU pages (64K, 128K, ...)",
			      (unsigned long long)v);
	if (dir == GA_DIR_WRITE && fs->info.layout != GA_LAYOUT_V1) {
		struct ga_buf *b0;
		struct ga_buf_info bi;

		pthread_rwlock_rdlock(&fs->bufs_lock);
		b0 = ga_buf_get(fs->dev, GA_DIR_WRITE, 0);
		ret = b0 ? ga_buf_info(b0, &bi) : -ENOENT;
		pthread_rwlock_unlock(&fs->bufs_lock);
		if (ret == 0 && bi.size != v)
			return fs_err(-EINVAL,
				      "V4 write buffers share one size (write_max_size): %zu while "
				      "buffers exist; rmdir them first",
				      bi.size);
	}
	if (c->check_only)
		return 0;
	atomic_store(&fs->alloc_size[dir], v);
	return 0;
}

/* ---- per-buffer files -------------------------------------------------------- */

static int buf_info(struct fs_ctx *c, struct ga_buf_info *bi)
{
	return ga_buf_info(c->buf, bi);
}

/* The state, which only a card that answers can give: while its link is
 * down a buffer is neither lost nor FREE but unknown, and kept as it is
 * (it works again when the link returns). */
static int buf_state(struct fs_ctx *c, struct ga_buf_info *bi)
{
	int ret = ga_dev_link(c->fs->dev);

	if (ret == 0)
		return fs_err(-ENOLINK,
			      "link down: the card cannot say what this buffer is doing; the "
			      "buffer is kept and answers again when the link is back");
	return ret < 0 ? ret : buf_info(c, bi);
}

static int show_status(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_buf_info bi;
	char name[16];
	int ret = buf_state(c, &bi);

	if (ret < 0)
		return ret;
	snprintf(name, sizeof(name), "%s", ga_buf_state_name(bi.state));
	for (char *p = name; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	return sb_printf(sb, "%s\n", name) ? -ENOMEM : 0;
}

static int show_write_enable(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_buf_info bi;
	int ret = buf_state(c, &bi);

	if (ret < 0)
		return ret;
	return sb_printf(sb, "%d\n", bi.state == GA_BUF_FREE) ? -ENOMEM : 0;
}

static int store_write_enable(struct fs_ctx *c, const char *buf, size_t len)
{
	struct ga_buf_info bi;
	bool on;
	int ret = fs_parse_bool(buf, len, &on);

	if (ret < 0)
		return ret;
	if (on && c->check_only)
		return buf_state(c, &bi); /* ENOLINK while the link is down */
	if (on) /* the frame handed back read first (frames.c) */
		return fs_frames_arm(c->fs, c->idx, c->buf);
	ret = buf_info(c, &bi);
	if (ret < 0)
		return ret;
	if (bi.state == GA_BUF_FREE)
		return fs_err(-EINVAL,
			      "an armed buffer cannot be taken off the free list (the firmware has "
			      "no such operation); stop the engine with registers/write_enable");
	return 0; /* already not armed */
}

static int show_header(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_header h;
	int ret = ga_buf_header(c->buf, &h);

	if (ret < 0)
		return ret;
	return sb_printf(
		       sb,
		       "size=%u result=%u overflow=%d cont=%d first_user=0x%02x last_user=0x%02x\n",
		       h.size, h.result, h.overflow, h.cont, h.first_user, h.last_user)
		       ? -ENOMEM
		       : 0;
}

static int show_size(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_buf_info bi;
	int ret = buf_info(c, &bi);

	if (ret < 0)
		return ret;
	return sb_printf(sb, "%zu\n", bi.size) ? -ENOMEM : 0;
}

static int show_gpu_address(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_buf_info bi;
	int ret = buf_info(c, &bi);

	if (ret < 0)
		return ret;
	return sb_printf(sb, "0x%llx\n", (unsigned long long)bi.gpu_address) ? -ENOMEM : 0;
}

static int show_ipc_handle(struct fs_ctx *c, struct strbuf *sb)
{
	char hex[160];
	int ret = ga_buf_ipc_handle(c->buf, hex, sizeof(hex));

	if (ret < 0)
		return ret;
	return sb_printf(sb, "%s\n", hex) ? -ENOMEM : 0;
}

static bool has_ipc(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	(void)n;
	(void)idx;
	return ga_dev_has(fs->dev, GA_CAP_GPU_MEMORY);
}

/* The payload area: where it starts in the buffer (after the header
 * area, except where the firmware reads V1 read buffers from offset 0:
 * the library knows) and how long it is. */
static int payload_area(struct fs_ctx *c, size_t *start, uint64_t *len)
{
	struct ga_buf_info bi;
	int ret = c->buf ? ga_buf_info(c->buf, &bi) : -ENODEV;

	if (ret < 0)
		return ret;
	*start = bi.size - bi.payload_max;
	*len = bi.payload_max;
	return 0;
}

/* Bytes a read of data returns: the payload area of a read buffer; the
 * last frame of a write buffer, header.size bytes (0 before the first
 * frame or once a consumer cleared the doorbell).  stat reports the same
 * (an 8-byte header read), so cp and cmp -s agree with cat. */
static int data_len(struct fs_ctx *c, size_t *start, uint64_t *end)
{
	int ret = payload_area(c, start, end);

	if (ret < 0)
		return ret;
	if (node_dir(c->node) == GA_DIR_WRITE) {
		struct ga_header h;

		ret = ga_buf_header(c->buf, &h);
		if (ret < 0)
			return ret;
		if (h.size < *end)
			*end = h.size;
	}
	return 0;
}

static uint64_t data_size(struct fs_ctx *c)
{
	size_t start;
	uint64_t len;

	return data_len(c, &start, &len) < 0 ? 0 : len;
}

static uint64_t area_size(struct fs_ctx *c)
{
	size_t start;
	uint64_t len;

	return payload_area(c, &start, &len) < 0 ? 0 : len;
}

static ssize_t data_read(struct fs_ctx *c, char *dst, size_t len, off_t off)
{
	size_t start;
	uint64_t end;
	int ret = data_len(c, &start, &end);

	if (ret < 0)
		return ret;
	if (off < 0 || (uint64_t)off >= end)
		return 0;
	if (len > end - (uint64_t)off)
		len = (size_t)(end - (uint64_t)off);
	ret = ga_buf_read(c->buf, start + (size_t)off, dst, len);
	return ret < 0 ? ret : (ssize_t)len;
}

static ssize_t data_write(struct fs_ctx *c, const char *src, size_t len, off_t off)
{
	size_t start;
	uint64_t end;
	int ret = payload_area(c, &start, &end);

	if (ret < 0)
		return ret;
	if (off < 0 || (uint64_t)off + len > end)
		return fs_err(-EFBIG,
			      "%zu bytes at %lld pass the end of the %llu-byte payload area", len,
			      (long long)off, (unsigned long long)end);
	ret = ga_buf_write(c->buf, start + (size_t)off, src, len);
	return ret < 0 ? ret : (ssize_t)len;
}

static int store_send(struct fs_ctx *c, const char *buf, size_t len)
{
	uint64_t v, max = area_size(c);
	int ret = fs_parse_u64(buf, len, max, true, &v);

	if (ret < 0)
		return ret;
	if (!v)
		return fs_err(-EINVAL, "send: a frame has at least 1 byte");
	if (c->check_only)
		return fs_write_link_check(c->fs);
	return ga_buf_send(c->buf, (uint32_t)v);
}

/* clang-format off */
#define BUF_ROW(par, nm, md, fl, ...) \
	{ .name = nm, .parent = par, .dir = FS_D_NONE, .mode = md, .flags = fl, .reg = -1, __VA_ARGS__ }

/* What every buffer directory, write or read, says about its memory. */
#define BUF_MEMORY_ROWS(par) \
	BUF_ROW(par, "size", 0444, 0, .show = show_size, \
		.doc = "bytes allocated (header area included)"), \
	BUF_ROW(par, "gpu_address", 0444, 0, .show = show_gpu_address, \
		.doc = "device pointer of the buffer (host address without a GPU)"), \
	BUF_ROW(par, "ipc_handle", 0444, 0, .show = show_ipc_handle, .visible = has_ipc, \
		.doc = "CUDA IPC memory handle (hex) for cuIpcOpenMemHandle")

const struct fs_node fs_buffer_rows[] = {
	BUF_ROW(FS_D_BUFFERS, "alloc_size", 0644, 0, .show = show_alloc_size,
		.store = store_alloc_size,
		.doc = "bytes the next mkdir allocates (64K multiples; V4 write buffers all equal)"),
	BUF_ROW(FS_D_WBUF, "write_enable", 0644, FS_LIVE, .show = show_write_enable,
		.store = store_write_enable,
		.doc = "write 1: arm (put on the free list); reads 1 while armed and not yet filled"),
	BUF_ROW(FS_D_WBUF, "status", 0444, FS_LIVE, .show = show_status,
		.doc = "FREE (armed) | READY (frame landed) | IDLE | ERROR"),
	BUF_ROW(FS_D_WBUF, "header", 0444, FS_LIVE, .show = show_header,
		.doc = "decoded 8-byte descriptor of the last frame"),
	BUF_ROW(FS_D_WBUF, "data", 0444, FS_BINARY | FS_VARSIZE, .read_bin = data_read,
		.size = data_size, .doc = "payload of the last frame (binary, header.size bytes)"),
	BUF_MEMORY_ROWS(FS_D_WBUF),
	BUF_ROW(FS_D_READ_BUFFERS, "alloc_size", 0644, 0, .show = show_alloc_size,
		.store = store_alloc_size, .doc = "bytes the next mkdir allocates (64K multiples)"),
	BUF_ROW(FS_D_RBUF, "status", 0444, FS_LIVE, .show = show_status,
		.doc = "BUSY (read queued) | READY (sent) | IDLE | ERROR"),
	BUF_ROW(FS_D_RBUF, "data", 0644, FS_BINARY, .read_bin = data_read, .write_bin = data_write,
		.size = data_size, .doc = "payload area the card reads from (binary, at any offset)"),
	BUF_ROW(FS_D_RBUF, "send", 0200, 0, .store = store_send,
		.doc = "write a byte count: queue a GPU->FPGA read of that many payload bytes"),
	BUF_MEMORY_ROWS(FS_D_RBUF),
};
const unsigned int fs_buffer_nrows = sizeof(fs_buffer_rows) / sizeof(fs_buffer_rows[0]);
/* clang-format on */
