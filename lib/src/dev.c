/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The public device API (gpuasync/device.h) on an open device: identity
 * and capabilities, register access, engine enables and the driver's table
 * of pinned buffers.  Opening and closing are in open.c, buffers in
 * buffers/; both use the register access here.  Everything goes through
 * the backend's ops table, never through per-backend branches.
 *
 * Register access is table driven: offsets only ever come from
 * ga_reg_offset() and bits from ga_reg_field_*(), so a register added to
 * regs.h is reachable here with no code change.  Fields sharing a word
 * (0x04, 0x08) are updated by read-modify-write under dev->lock, which is
 * what makes concurrent writers of different fields safe.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* ---- identity ------------------------------------------------------------ */

int ga_dev_info(struct ga_dev *dev, struct ga_dev_info *info)
{
	if (!dev || !info)
		return ga_err(-EINVAL, "ga_dev_info: NULL argument");
	pthread_mutex_lock(&dev->lock);
	*info = dev->info;
	pthread_mutex_unlock(&dev->lock);
	return 0;
}

bool ga_dev_has(struct ga_dev *dev, enum ga_cap cap)
{
	if (!dev || (unsigned int)cap >= GA_CAP_COUNT)
		return false;
	switch (cap) {
	case GA_CAP_SIM:
		return dev->kind->flags & GA_BE_SIM;
	case GA_CAP_GPU_MEMORY:
		return ga_mem_is_gpu(dev);
	case GA_CAP_FIRMWARE_ID:
		return dev->be->fw_read != NULL;
	default:
		if (dev->be->has)
			return dev->be->has(dev, cap);
		return cap == GA_CAP_SUPPORTED;
	}
}

enum ga_layout ga_dev_layout(struct ga_dev *dev)
{
	return dev ? dev->info.layout : GA_LAYOUT_COUNT;
}

/* ---- link and firmware identity ------------------------------------------- */

int ga_link_check_locked(struct ga_dev *dev)
{
	uint32_t off, word;
	int rc;

	if (ga_reg_offset(GA_REG_VERSION, dev->info.layout, dev->info.version, 0,
			  dev->info.max_buffers, &off))
		return 0;
	rc = dev->be->reg_read(dev, off, &word);
	if (rc)
		return rc;
	if (word != 0xffffffffu)
		return 0;
	return ga_err(-ENOLINK, "link down: the card answers 0xffffffff everywhere (PCIe link "
				"lost, card powered off or reloading its firmware): refused, "
				"nothing was sent to the card");
}

int ga_dev_link(struct ga_dev *dev)
{
	int rc;

	if (!dev)
		return ga_err(-EINVAL, "ga_dev_link: NULL device");
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	pthread_mutex_unlock(&dev->lock);
	if (rc == -ENOLINK)
		return 0;
	return rc < 0 ? rc : 1;
}

int ga_fw_read(struct ga_dev *dev, enum ga_fw_id id, char *buf, size_t len)
{
	uint32_t words[64];
	const struct ga_fw_field *f;
	int rc = 0;

	if (!dev || !buf || !len)
		return ga_err(-EINVAL, "ga_fw_read: NULL argument");
	if ((unsigned int)id >= GA_FW_COUNT)
		return ga_err(-ENOENT, "no firmware identity field with id %d", (int)id);
	f = &ga_fw_fields[id];
	if (!dev->be->fw_read)
		return ga_err(-ENOTSUP, "%s backend: the AxiVersion block cannot be read",
			      dev->be->name);
	if (f->words > sizeof(words) / sizeof(words[0]) || f->offset + 4u * f->words > GA_FW_SIZE)
		return ga_err(-ERANGE, "firmware field %s lies outside the AxiVersion block",
			      f->name);
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	for (unsigned int w = 0; rc == 0 && w < f->words; w++)
		rc = dev->be->fw_read(dev, f->offset + 4u * w, &words[w]);
	pthread_mutex_unlock(&dev->lock);
	if (rc)
		return rc;
	rc = ga_fw_format(id, words, buf, len);
	if (rc < 0)
		return ga_err(rc, "firmware field %s does not fit %zu bytes", f->name, len);
	return 0;
}

int ga_fw_write(struct ga_dev *dev, enum ga_fw_id id, uint32_t value)
{
	const struct ga_fw_field *f;
	uint32_t word = 0, mask;
	int rc;

	if (!dev)
		return ga_err(-EINVAL, "ga_fw_write: NULL device");
	if ((unsigned int)id >= GA_FW_COUNT)
		return ga_err(-ENOENT, "no firmware identity field with id %d", (int)id);
	f = &ga_fw_fields[id];
	if (f->access != GA_FWA_RW || f->words != 1)
		return ga_err(-EACCES, "AxiVersion %s (%s) is read-only identity", f->name,
			      f->pyrogue);
	if (!dev->be->fw_write)
		return ga_err(-ENOTSUP, "%s backend: the AxiVersion block cannot be written",
			      dev->be->name);
	mask = ga_fw_write_mask(f->offset);
	if (f->msb - f->lsb < 31 && value > (mask >> f->lsb))
		return ga_err(-ERANGE, "AxiVersion %s: 0x%x does not fit bits %u-%u", f->name,
			      value, f->lsb, f->msb);
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	if (!rc && mask != ~0u)
		rc = dev->be->fw_read(dev, f->offset, &word);
	if (!rc)
		rc = dev->be->fw_write(dev, f->offset, (word & ~mask) | ((value << f->lsb) & mask));
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

/* ---- registers ----------------------------------------------------------- */

static int reg_locate(struct ga_dev *dev, enum ga_reg_id id, unsigned int index, uint32_t *off)
{
	const struct ga_reg *r;
	int rc;

	if ((unsigned int)id >= GA_REG_COUNT)
		return ga_err(-ENOENT, "no register with id %d", (int)id);
	r = &ga_regs[id];
	rc = ga_reg_offset(id, dev->info.layout, dev->info.version, index, dev->info.max_buffers,
			   off);
	if (rc == 0)
		return 0;
	if (rc == -ENOENT)
		return ga_err(-ENOENT, "register %s is not part of firmware version %u (%s layout)",
			      r->name, dev->info.version, ga_layout_name(dev->info.layout));
	if (rc == -ERANGE) {
		if (r->array == GA_ARRAY_NONE)
			return ga_err(-ERANGE,
				      "register %s is not per buffer: index %u given, "
				      "only 0 exists",
				      r->name, index);
		if (r->loc[dev->info.layout].stride == 0)
			return ga_err(-ERANGE,
				      "register %s is measured for buffer 0 only in the %s "
				      "layout (index %u given)",
				      r->name, ga_layout_name(dev->info.layout), index);
		return ga_err(-ERANGE, "register %s: buffer index %u out of range (0..%u)", r->name,
			      index, dev->info.max_buffers - 1);
	}
	return ga_err(rc, "register %s: no offset (%s)", r->name, strerror(-rc));
}

/*
 * One word of the block.  A dead link answers all ones to every read, so a
 * word of all ones is checked against the version register: -ENOLINK
 * rather than 4294967295 passed off as a value.  Only that one value costs
 * the second read.
 */
static int word_read_locked(struct ga_dev *dev, uint32_t off, uint32_t *val)
{
	int rc = dev->be->reg_read(dev, off, val);

	if (rc == 0 && *val == 0xffffffffu && ga_link_check_locked(dev) == -ENOLINK)
		return ga_err(-ENOLINK, "link down: the card answers 0xffffffff everywhere (PCIe "
					"link lost, card powered off or reloading its firmware): "
					"no value to read until it is back");
	return rc;
}

/*
 * The value a row stands for: the field, field + 1 for GA_F_PLUS_ONE rows,
 * both words of a GA_F_U64 row.  A 64-bit counter may carry between the
 * two reads: high, low, high again, and the low word once more when the
 * high one moved.
 */
static int field_read64_locked(struct ga_dev *dev, enum ga_reg_id id, unsigned int index,
			       uint64_t *val)
{
	uint32_t off, word, hi, hi2;
	int rc;

	rc = reg_locate(dev, id, index, &off);
	if (rc)
		return rc;
	if (!(ga_regs[id].flags & GA_F_U64)) {
		rc = word_read_locked(dev, off, &word);
		if (rc)
			return rc;
		*val = ga_reg_field_get(id, dev->info.layout, word);
		if (ga_regs[id].flags & GA_F_PLUS_ONE)
			*val += 1;
		return 0;
	}
	if (off + 8 > GA_CORE_SIZE)
		return ga_err(-ERANGE, "%s: 64-bit register at 0x%x passes the block end",
			      ga_regs[id].name, off);
	rc = word_read_locked(dev, off + 4, &hi);
	if (rc == 0)
		rc = word_read_locked(dev, off, &word);
	if (rc == 0)
		rc = word_read_locked(dev, off + 4, &hi2);
	if (rc == 0 && hi2 != hi) {
		hi = hi2;
		rc = word_read_locked(dev, off, &word);
	}
	if (rc)
		return rc;
	*val = ((uint64_t)hi << 32) | word;
	return 0;
}

/* Row @id's value @v as 32 bits, or -EOVERFLOW saying how to read it. */
static int value32(enum ga_reg_id id, uint64_t v, uint32_t *val)
{
	if (v > 0xffffffffu)
		return ga_err(-EOVERFLOW,
			      "%s is %llu, more than 32 bits: read it with ga_reg_read64",
			      ga_regs[id].name, (unsigned long long)v);
	*val = (uint32_t)v;
	return 0;
}

int ga_field_read_locked(struct ga_dev *dev, enum ga_reg_id id, unsigned int index, uint32_t *val)
{
	uint64_t v;
	int rc = field_read64_locked(dev, id, index, &v);

	return rc ? rc : value32(id, v, val);
}

static int be_word_read(void *ctx, uint32_t off, uint32_t *word)
{
	struct ga_dev *dev = ctx;

	return dev->be->reg_read(dev, off, word);
}

static int be_word_write(void *ctx, uint32_t off, uint32_t word)
{
	struct ga_dev *dev = ctx;

	return dev->be->reg_write(dev, off, word);
}

static int be_word_write_masked(void *ctx, uint32_t off, uint32_t mask, uint32_t word)
{
	struct ga_dev *dev = ctx;

	return dev->be->reg_write_masked(dev, off, mask, word);
}

/* core's field accessor (ga_field_write) on the backend; dev->lock makes
 * its read-modify-write safe against this process's other writers, the
 * backend's masked write (where the driver has one) against the driver's. */
int ga_field_write_locked(struct ga_dev *dev, enum ga_reg_id id, unsigned int index, uint32_t val)
{
	const struct ga_reg_io io = {dev, be_word_read, be_word_write,
				     dev->be->reg_write_masked ? be_word_write_masked : NULL};
	enum ga_layout l = dev->info.layout;
	uint32_t off;
	int rc;

	rc = reg_locate(dev, id, index, &off);
	if (rc)
		return rc;
	rc = ga_field_write(&io, id, l, off, val);
	if (rc == -ERANGE)
		return ga_err(-ERANGE, "%s: value %u does not fit (max %u)", ga_regs[id].name, val,
			      ga_reg_field_max(id, l));
	return rc;
}

int ga_reg_read64(struct ga_dev *dev, enum ga_reg_id id, unsigned int index, uint64_t *val)
{
	uint32_t off;
	int rc;

	if (!dev || !val)
		return ga_err(-EINVAL, "ga_reg_read: NULL argument");
	pthread_mutex_lock(&dev->lock);
	rc = reg_locate(dev, id, index, &off);
	if (rc == 0 && ga_regs[id].access == GA_WO)
		rc = ga_err(-EACCES, "register %s is write-only (a strobe): it cannot be read",
			    ga_regs[id].name);
	if (rc == 0)
		rc = field_read64_locked(dev, id, index, val);
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

int ga_reg_read(struct ga_dev *dev, enum ga_reg_id id, unsigned int index, uint32_t *val)
{
	uint64_t v;
	int rc = val ? ga_reg_read64(dev, id, index, &v)
		     : ga_err(-EINVAL, "ga_reg_read: NULL argument");

	return rc ? rc : value32(id, v, val);
}

/* count_reset also clears the stream monitors (GA_F_WITH_COUNT_RESET rows
 * present on this firmware), as pyrogue's countReset reaches every device. */
static int count_reset_extra_locked(struct ga_dev *dev)
{
	for (int id = 0; id < GA_REG_COUNT; id++) {
		int rc;

		if (!(ga_regs[id].flags & GA_F_WITH_COUNT_RESET) ||
		    !ga_reg_present((enum ga_reg_id)id, dev->info.layout, dev->info.version))
			continue;
		rc = ga_field_write_locked(dev, (enum ga_reg_id)id, 0, 1);
		if (rc)
			return rc;
	}
	return 0;
}

int ga_reg_write(struct ga_dev *dev, enum ga_reg_id id, unsigned int index, uint32_t val)
{
	uint32_t off;
	int rc;

	if (!dev)
		return ga_err(-EINVAL, "ga_reg_write: NULL device");
	pthread_mutex_lock(&dev->lock);
	rc = reg_locate(dev, id, index, &off);
	if (rc == 0 && ga_regs[id].access == GA_RO)
		rc = ga_err(-EACCES, "register %s is read-only", ga_regs[id].name);
	if (rc == 0)
		rc = ga_link_check_locked(dev);
	/* regs.h: an engine enable is switched as ga_dev_enable switches it
	 * (the driver's enable call where it has one), never as a field. */
	if (rc == 0 && (ga_regs[id].flags & (GA_F_ENGINE_WRITE | GA_F_ENGINE_READ)) && val > 1)
		rc = ga_err(-ERANGE, "%s: value %u does not fit (max 1)", ga_regs[id].name, val);
	else if (rc == 0 && (ga_regs[id].flags & (GA_F_ENGINE_WRITE | GA_F_ENGINE_READ)))
		rc = ga_enable_locked(dev,
				      (ga_regs[id].flags & GA_F_ENGINE_WRITE) ? GA_DIR_WRITE : GA_DIR_READ,
				      val != 0);
	else if (rc == 0)
		rc = ga_field_write_locked(dev, id, index, val);
	if (rc == 0 && id == GA_REG_COUNT_RESET)
		rc = count_reset_extra_locked(dev);
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

static int reg_by_name(const char *name, enum ga_reg_id *id)
{
	int r;

	if (!name)
		return ga_err(-EINVAL, "register name is NULL");
	r = ga_reg_find(name);
	if (r < 0)
		return ga_err(-ENOENT, "no register named \"%s\"", name);
	*id = (enum ga_reg_id)r;
	return 0;
}

int ga_reg_read_name(struct ga_dev *dev, const char *name, unsigned int index, uint32_t *val)
{
	enum ga_reg_id id = GA_REG_COUNT;
	int rc = reg_by_name(name, &id);

	return rc ? rc : ga_reg_read(dev, id, index, val);
}

int ga_reg_write_name(struct ga_dev *dev, const char *name, unsigned int index, uint32_t val)
{
	enum ga_reg_id id = GA_REG_COUNT;
	int rc = reg_by_name(name, &id);

	return rc ? rc : ga_reg_write(dev, id, index, val);
}

static int raw_check(uint32_t offset)
{
	if (offset & 3)
		return ga_err(-EINVAL, "raw register offset 0x%x is not 4-byte aligned", offset);
	if (offset >= GA_CORE_SIZE)
		return ga_err(-ERANGE,
			      "raw register offset 0x%x is outside the core block "
			      "(0..0x%x)",
			      offset, GA_CORE_SIZE - 4);
	return 0;
}

int ga_reg_read_raw(struct ga_dev *dev, uint32_t offset, uint32_t *val)
{
	int rc;

	if (!dev || !val)
		return ga_err(-EINVAL, "ga_reg_read_raw: NULL argument");
	rc = raw_check(offset);
	if (rc)
		return rc;
	pthread_mutex_lock(&dev->lock);
	rc = word_read_locked(dev, offset, val);
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

int ga_reg_write_raw(struct ga_dev *dev, uint32_t offset, uint32_t val)
{
	int rc;

	if (!dev)
		return ga_err(-EINVAL, "ga_reg_write_raw: NULL device");
	rc = raw_check(offset);
	if (rc)
		return rc;
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	if (rc == 0)
		rc = dev->be->reg_write(dev, offset, val);
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

/* ---- mapping ------------------------------------------------------------- */

int ga_dev_map_regs(struct ga_dev *dev, volatile uint32_t **regs)
{
	if (!dev || !regs)
		return ga_err(-EINVAL, "ga_dev_map_regs: NULL argument");
	if (!dev->be->map_regs)
		return ga_err(-ENOTSUP, "%s: the register block cannot be mapped", dev->info.path);
	return dev->be->map_regs(dev, regs);
}

void ga_dev_unmap_regs(struct ga_dev *dev, volatile uint32_t *regs)
{
	if (dev && regs && dev->be->unmap_regs)
		dev->be->unmap_regs(dev, regs);
}

int ga_dev_reg_path(struct ga_dev *dev, char *path, size_t len, uint64_t *offset)
{
	if (!dev || !path || !len || !offset)
		return ga_err(-EINVAL, "ga_dev_reg_path: NULL argument");
	if (!dev->be->reg_path)
		return ga_err(-ENOTSUP, "%s: the register block cannot be mapped", dev->info.path);
	*offset = 0; /* a shared-memory file maps from 0; backends may say otherwise */
	return dev->be->reg_path(dev, path, len, offset);
}

/* ---- engines ------------------------------------------------------------- */

int ga_enable_locked(struct ga_dev *dev, enum ga_dir dir, bool on)
{
	int rc = -ENOSYS;

	if (dev->be->enable)
		rc = dev->be->enable(dev, dir, on);
	if (rc == -ENOSYS)
		rc = ga_field_write_locked(
			dev, dir == GA_DIR_WRITE ? GA_REG_WRITE_ENABLE : GA_REG_READ_ENABLE, 0,
			on ? 1 : 0);
	return rc;
}

int ga_dev_enable(struct ga_dev *dev, enum ga_dir dir, bool on)
{
	int rc;

	if (!dev)
		return ga_err(-EINVAL, "ga_dev_enable: NULL device");
	if (dir != GA_DIR_WRITE && dir != GA_DIR_READ)
		return ga_err(-EINVAL, "ga_dev_enable: direction %d is neither write nor read",
			      (int)dir);
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	if (rc == 0)
		rc = ga_enable_locked(dev, dir, on);
	pthread_mutex_unlock(&dev->lock);
	return rc;
}

/* ---- pinned buffers ------------------------------------------------------ */

int ga_dev_pinned(struct ga_dev *dev, struct ga_pinned *out, unsigned int cap, unsigned int *count)
{
	struct ga_pinned *list = NULL;
	unsigned int i, n = 0;
	int pid = (int)getpid();
	int rc;

	if (!dev || !count)
		return ga_err(-EINVAL, "ga_dev_pinned: NULL argument");
	if (!out && cap)
		return ga_err(-EINVAL, "ga_dev_pinned: no array for %u entries", cap);
	*count = 0;
	if (!dev->be->pinned)
		return ga_err(-ENOTSUP, "%s backend: the driver keeps no table of pinned buffers",
			      dev->be->name);
	pthread_mutex_lock(&dev->lock);
	rc = dev->be->pinned(dev, &list, &n);
	if (rc == 0) {
		/* The driver saw the memory go away: this handle's buffer is
		 * unusable until destroyed and created again. */
		for (i = 0; i < n; i++) {
			const struct ga_pinned *p = &list[i];

			if (p->invalidated && p->owner == pid && p->dir <= GA_DIR_READ &&
			    p->index < dev->nbufs[p->dir] && dev->bufs[p->dir][p->index])
				dev->bufs[p->dir][p->index]->error = true;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	if (rc)
		return rc;
	if (n && cap)
		memcpy(out, list, (size_t)(n < cap ? n : cap) * sizeof(*out));
	*count = n;
	free(list);
	return 0;
}
