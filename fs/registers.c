/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * registers/ and the latency/ directories, generated from ga_regs[].
 *
 *   $ cat /mnt/gpuasync/registers/rx_frame_count
 *   1042
 *   $ echo 1 > /mnt/gpuasync/registers/count_reset
 *   $ cat /mnt/gpuasync/buffers/0/latency/total_max
 *   812
 *   $ dd if=/mnt/gpuasync/registers/raw bs=4 count=1 skip=12 | xxd   # version word
 *
 * Each scalar register field of the running firmware version/layout is
 * one file: 0444 read-only, 0644 read-write, 0200 write-only strobe (as
 * sysfs __ATTR_RO/RW/WO).  Fields the driver programs when buffers change
 * (GA_F_DRIVER: counts, addresses, shared max size) are shown read-only:
 * writing them behind the library's back would desynchronise its
 * bookkeeping; registers/raw remains for experts.  Per-buffer latency
 * counters become buffers/<i>/latency/<kind>[_max|_min] ("total_latency_max"
 * -> "total_max"), present only for buffers the layout measures (every
 * buffer on V1-3, buffer 0 on V4+).  Other per-buffer fields (addresses,
 * free list, read size) are driven through the buffer files instead.
 *
 * A running minimum before its first sample (all ones since count_reset)
 * reads "no sample", not 4294967295 cycles.
 *
 * 64-bit rows (stream monitor counts, bandwidths) print whole; counts the
 * firmware keeps as a last index print as counts (write_buffers =
 * write_count + 1, beside the raw write_count).
 *
 * Read-modify-write of shared words happens in the library, under the
 * device lock (ga_reg_write).  Stores hold fs->reg_store_lock, which a
 * settings write holds throughout (settings.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fs.h"

static int show_reg(struct fs_ctx *c, struct strbuf *sb)
{
	enum ga_reg_id id = (enum ga_reg_id)c->node->reg;
	uint64_t v;
	int ret = ga_reg_read64(c->fs->dev, id, c->idx, &v);

	if (ret < 0)
		return ret;
	if ((ga_regs[id].flags & GA_F_RUNNING_MIN) && v == ga_reg_field_max(id, c->fs->info.layout))
		return sb_puts(sb, "no sample\n") ? -ENOMEM : 0;
	if (ga_regs[id].format == GA_FMT_HEX)
		ret = sb_printf(sb, "0x%llx\n", (unsigned long long)v);
	else
		ret = sb_printf(sb, "%llu\n", (unsigned long long)v);
	return ret ? -ENOMEM : 0;
}

static int store_reg(struct fs_ctx *c, const char *buf, size_t len)
{
	enum ga_reg_id id = (enum ga_reg_id)c->node->reg;
	const struct ga_reg *r = &ga_regs[id];
	uint64_t v;
	int ret;

	ret = fs_parse_u64(buf, len, ga_reg_field_max(id, c->fs->info.layout),
			   r->flags & GA_F_BYTES, &v);
	if (ret < 0 || c->check_only)
		return ret < 0 ? ret : fs_write_link_check(c->fs);
	/* The write engine switched on starts a new run (frames/). */
	if ((r->flags & GA_F_ENGINE_WRITE) && v) {
		uint32_t was = 1;

		if (ga_reg_read(c->fs->dev, id, 0, &was) == 0 && !was)
			fs_frames_new_run(c->fs, true);
	}
	pthread_mutex_lock(&c->fs->reg_store_lock); /* not inside a settings write */
	/* Engine enables may be ioctls (pre-release drivers): the library
	 * picks the mechanism. */
	if (r->flags & GA_F_ENGINE_WRITE)
		ret = ga_dev_enable(c->fs->dev, GA_DIR_WRITE, v != 0);
	else if (r->flags & GA_F_ENGINE_READ)
		ret = ga_dev_enable(c->fs->dev, GA_DIR_READ, v != 0);
	else
		ret = ga_reg_write(c->fs->dev, id, c->idx, (uint32_t)v);
	pthread_mutex_unlock(&c->fs->reg_store_lock);
	return ret;
}

/* registers/raw: pread/pwrite of 32-bit words at 4-byte aligned offsets.
 * A read gets the whole words it asks for, up to the end of the block:
 * what there is (Python's read() asks for one byte more than st_size, cat
 * for 128 KiB), and end of file from the end on. */
static ssize_t raw_read(struct fs_ctx *c, char *dst, size_t len, off_t off)
{
	size_t done = 0;

	if (off >= 0 && (uint64_t)off >= GA_CORE_SIZE)
		return 0;
	if (len > GA_CORE_SIZE - (uint64_t)off)
		len = GA_CORE_SIZE - (size_t)off;
	if (off < 0 || (off & 3) || len < 4)
		return fs_err(-EINVAL,
			      "raw: offset %lld and length %zu: a read starts at a multiple of 4 "
			      "and takes whole 4-byte words",
			      (long long)off, len);
	len &= ~(size_t)3;
	for (; done < len; done += 4) {
		uint32_t v;
		int ret = ga_reg_read_raw(c->fs->dev, (uint32_t)(off + done), &v);

		if (ret < 0)
			return done ? (ssize_t)done : ret;
		memcpy(dst + done, &v, 4);
	}
	return (ssize_t)done;
}

static ssize_t raw_write(struct fs_ctx *c, const char *src, size_t len, off_t off)
{
	if (off < 0 || (off & 3) || (len & 3) || !len)
		return fs_err(-EINVAL,
			      "raw: offset %lld and length %zu must be non-zero multiples of 4",
			      (long long)off, len);
	if ((uint64_t)off + len > GA_CORE_SIZE)
		return fs_err(-ERANGE,
			      "raw: %zu bytes at 0x%llx pass the end of the 0x%x-byte block", len,
			      (unsigned long long)off, GA_CORE_SIZE);
	pthread_mutex_lock(&c->fs->reg_store_lock); /* not inside a settings write */
	for (size_t done = 0; done < len; done += 4) {
		uint32_t v;
		int ret;

		memcpy(&v, src + done, 4);
		ret = ga_reg_write_raw(c->fs->dev, (uint32_t)(off + done), v);
		if (ret < 0) {
			pthread_mutex_unlock(&c->fs->reg_store_lock);
			return done ? (ssize_t)done : ret;
		}
	}
	pthread_mutex_unlock(&c->fs->reg_store_lock);
	return (ssize_t)len;
}

static uint64_t raw_size(struct fs_ctx *c)
{
	(void)c;
	return GA_CORE_SIZE;
}

/* Per-buffer latency rows: present for the buffers the layout measures. */
static bool latency_visible(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	uint32_t off;

	return ga_reg_offset((enum ga_reg_id)n->reg, fs->info.layout, fs->info.version, idx,
			     fs->info.max_buffers, &off) == 0;
}

/* "total_latency_max" -> "total_max": the directory already says latency. */
static void latency_name(const char *reg, char *out, size_t len)
{
	const char *p = strstr(reg, "_latency");

	if (!p) {
		snprintf(out, len, "%s", reg);
		return;
	}
	snprintf(out, len, "%.*s%s", (int)(p - reg), reg, p + strlen("_latency"));
}

int fs_register_rows(struct fs *fs, struct fs_node *rows, unsigned int max)
{
	enum ga_layout layout = fs->info.layout;
	unsigned int n = 0;

	for (int id = 0; id < GA_REG_COUNT; id++) {
		const struct ga_reg *r = &ga_regs[id];
		struct fs_node *row;

		if (!ga_reg_present((enum ga_reg_id)id, layout, fs->info.version))
			continue;
		if (r->array != GA_ARRAY_NONE && !(r->flags & GA_F_CYCLES))
			continue; /* driven through buffers/<i>/ files */
		if (n == max)
			return -ENOSPC;
		row = &rows[n++];
		memset(row, 0, sizeof(*row));
		row->dir = FS_D_NONE;
		row->reg = id;
		row->doc = r->doc;
		if (r->array == GA_ARRAY_NONE) {
			row->parent = FS_D_REGISTERS;
			snprintf(row->name_store, sizeof(row->name_store), "%s", r->name);
		} else {
			row->parent = r->array == GA_ARRAY_WRITE ? FS_D_WLAT : FS_D_RLAT;
			latency_name(r->name, row->name_store, sizeof(row->name_store));
			row->visible = latency_visible;
		}
		switch (r->access) {
		case GA_RO:
			row->mode = 0444;
			break;
		case GA_RW:
			row->mode = (r->flags & GA_F_DRIVER) ? 0444 : 0644;
			break;
		case GA_WO:
			row->mode = 0200;
			break;
		}
		if (row->mode & 0444) {
			row->show = show_reg;
			row->flags |= FS_LIVE;
		}
		if (row->mode & 0222)
			row->store = store_reg;
	}
	if (n == max)
		return -ENOSPC;
	rows[n++] = (struct fs_node){
		.name = "raw",
		.parent = FS_D_REGISTERS,
		.dir = FS_D_NONE,
		.mode = 0600,
		.flags = FS_BINARY,
		.read_bin = raw_read,
		.write_bin = raw_write,
		.size = raw_size,
		.reg = -1,
		.doc = "binary window on the core's register block: pread/pwrite of 4-byte words",
	};
	return (int)n;
}
