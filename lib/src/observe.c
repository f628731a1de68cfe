// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Observe-only devices (ga_open_opts.observe): another process owns the
 * card (LCLS-II's DRP, rdmaTest) and we only look.  The backend's ops are
 * copied and every op that changes the card is replaced by a refusal, so
 * no path through the library (files, settings, the sampler, a future
 * caller) can write a register, add, arm or remove a buffer, or switch an
 * engine.  The backend itself opens the node read-only and maps the
 * registers PROT_READ (datadev.c), which the driver enforces as well.
 */
#include <errno.h>

#include "internal.h"

#define WHY "observer: the card is another process's (opened with observe)"

static int ro_reg_write(struct ga_dev *dev, uint32_t off, uint32_t val)
{
	(void)dev;
	return ga_err(-EROFS, WHY ": register 0x%x not written (0x%x)", off, val);
}

static int ro_map_regs(struct ga_dev *dev, volatile uint32_t **regs)
{
	(void)dev;
	(void)regs;
	return ga_err(-EROFS, WHY ": no writable register mapping");
}

static int ro_add(struct ga_dev *dev, enum ga_dir dir, const struct ga_mem_block *blk,
		  uint32_t size, const struct ga_dmabuf_ref *db, uint64_t *bus_address)
{
	(void)dev, (void)dir, (void)blk, (void)size, (void)db, (void)bus_address;
	return ga_err(-EROFS, WHY ": adds no buffers");
}

static int ro_remove_all(struct ga_dev *dev)
{
	(void)dev;
	return ga_err(-EROFS, WHY ": removes no buffers");
}

static int ro_remove_last(struct ga_dev *dev, enum ga_dir dir)
{
	(void)dev, (void)dir;
	return ga_err(-EROFS, WHY ": removes no buffers");
}

static int ro_arm(struct ga_dev *dev, const uint32_t *indices, unsigned int n)
{
	(void)dev, (void)indices, (void)n;
	return ga_err(-EROFS, WHY ": arms no buffers");
}

static int ro_enable(struct ga_dev *dev, enum ga_dir dir, bool on)
{
	(void)dev, (void)dir, (void)on;
	return ga_err(-EROFS, WHY ": engines are not switched");
}

void ga_observe_wrap(struct ga_dev *dev)
{
	dev->be_ro = *dev->be;
	dev->be_ro.reg_write = ro_reg_write;
	dev->be_ro.map_regs = ro_map_regs;
	dev->be_ro.add_buffer = ro_add;
	dev->be_ro.remove_all = ro_remove_all;
	dev->be_ro.remove_last = ro_remove_last;
	dev->be_ro.arm = ro_arm;
	dev->be_ro.enable = ro_enable;
	dev->be = &dev->be_ro;
}
