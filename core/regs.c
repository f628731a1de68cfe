// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The register table and the few functions that read it.
 *
 * gpuasync/registers.def is expanded here, once, into ga_regs[]
 * with designated initializers, so a row lands at its enum index whatever
 * the order, and a duplicated id trips -Werror=override-init.  Everything
 * else (the layout for a version, presence, per-buffer offsets, field
 * masks) is computed from the rows: no offset or bit position is written
 * anywhere in this file.
 *
 * Part of core/: built into libgpuasync and, as a Kbuild object, into
 * gpuasync.ko, so it uses nothing beyond ga_base.h: no allocation, no
 * errno text and no logging.
 */
#include "ga_base.h"
#include "gpuasync/regs.h"

/*
 * Parameter names differ from the struct members on purpose: a macro
 * parameter called "name" would also replace ".name".
 */
#define GA_REG_ROW(id_, name_, access_, format_, flags_, array_, v1_, v4_, v4l_, minv_, unit_,     \
		   doc_, pyrogue_, py_disp_, ...)                                                  \
	[GA_REG_##id_] = {                                                                         \
		.name = name_,                                                                     \
		.access = access_,                                                                 \
		.format = format_,                                                                 \
		.flags = flags_,                                                                   \
		.array = array_,                                                                   \
		.loc = {[GA_LAYOUT_V1] = v1_, [GA_LAYOUT_V4] = v4_, [GA_LAYOUT_V4_LEGACY] = v4l_}, \
		.min_version = minv_,                                                              \
		.unit = unit_,                                                                     \
		.doc = doc_,                                                                       \
		.pyrogue = pyrogue_,                                                               \
		.py_disp = py_disp_,                                                               \
		.py_names = {__VA_ARGS__},                                                         \
	},

const struct ga_reg ga_regs[GA_REG_COUNT] = {
#define GA_DEF_REGISTER GA_REG_ROW
#include <gpuasync/registers.def>
};

#undef GA_REG_ROW

/*
 * The array is sized by the enum, so a row missing from the table would
 * leave a zeroed entry (name NULL) rather than fail here: test_regs checks
 * every entry has a name.  This assert guards against someone changing the
 * declaration to an unsized array fed by a different list.
 */
static_assert(sizeof(ga_regs) / sizeof(ga_regs[0]) == GA_REG_COUNT,
	      "ga_regs[] and enum ga_reg_id disagree");

/* Every layout slot of every row is a struct ga_reg_loc initializer. */
static_assert(GA_LAYOUT_COUNT == 3, "GA_REG_ROW fills exactly three layouts");

/* Row v at index v - 1: a gap or a repeat in versions.def does not build. */
#define GA_VERSION_ROW(v_, layout_, legacy_, wait_, poll_, doc_)                                   \
	[(v_)-1] = {v_, layout_, legacy_, wait_, poll_, doc_},

const struct ga_version ga_versions[GA_VERSION_MAX] = {
#define GA_DEF_VERSION GA_VERSION_ROW
#include <gpuasync/versions.def>
};

#undef GA_VERSION_ROW

/*
 * Each layout's name and how many buffers per direction its address map
 * holds: V1 has 16-byte strides in 0x100-byte windows (the 5-bit MaxBuffers
 * field could say more, but the addresses would run into the next window);
 * V4 indices are 10 bits wide (docs/firmware.md §2.3, §2.4).  GA_MAX_BUFFERS
 * (gpuasync/abi.h), which sizes every array of buffers, is the largest
 * (test_regs checks it).
 */
static const struct {
	const char *name;
	unsigned int max_buffers;
} ga_layouts[GA_LAYOUT_COUNT] = {
	[GA_LAYOUT_V1] = {"v1", 16},
	[GA_LAYOUT_V4] = {"v4", 1024},
	[GA_LAYOUT_V4_LEGACY] = {"v4-legacy", 1024},
};

unsigned int ga_layout_max_buffers(enum ga_layout layout)
{
	return (unsigned int)layout < GA_LAYOUT_COUNT ? ga_layouts[layout].max_buffers : 0;
}

const struct ga_version *ga_version_find(unsigned int version)
{
	if (version < 1 || version > GA_VERSION_MAX)
		return NULL;
	return &ga_versions[version - 1];
}

/*
 * Version 0 is what a core without a version register would read as, and
 * a version above the last row is newer than anything we know: neither has
 * a layout, so nothing is located or written on such a card.
 */
enum ga_layout ga_layout_for_version(unsigned int version, bool latency_legacy)
{
	const struct ga_version *v = ga_version_find(version);

	if (!v)
		return GA_LAYOUT_COUNT;
	return latency_legacy ? v->layout_legacy : v->layout;
}

const char *ga_layout_name(enum ga_layout layout)
{
	return (unsigned int)layout < GA_LAYOUT_COUNT ? ga_layouts[layout].name : "unknown";
}

static const struct ga_reg_loc *ga_loc(enum ga_reg_id id, enum ga_layout layout)
{
	if ((unsigned int)id >= GA_REG_COUNT || (unsigned int)layout >= GA_LAYOUT_COUNT)
		return NULL;
	return &ga_regs[id].loc[layout];
}

bool ga_reg_present(enum ga_reg_id id, enum ga_layout layout, unsigned int version)
{
	const struct ga_reg_loc *loc = ga_loc(id, layout);

	return loc && loc->present && version >= ga_regs[id].min_version &&
	       version <= GA_VERSION_MAX;
}

bool ga_reg_is_setting(enum ga_reg_id id)
{
	const struct ga_reg *r = &ga_regs[id];

	return r->array == GA_ARRAY_NONE && r->access == GA_RW &&
	       !(r->flags & (GA_F_DRIVER | GA_F_TRIGGER | GA_F_ENGINE_WRITE | GA_F_ENGINE_READ));
}

int ga_reg_offset(enum ga_reg_id id, enum ga_layout layout, unsigned int version,
		  unsigned int index, unsigned int max_buffers, uint32_t *offset)
{
	const struct ga_reg_loc *loc = ga_loc(id, layout);
	unsigned int limit;

	if (!loc)
		return -EINVAL;
	if (!ga_reg_present(id, layout, version))
		return -ENOENT;

	/* Scalars, and per-buffer rows the layout measures for buffer 0 only. */
	if (ga_regs[id].array == GA_ARRAY_NONE || loc->stride == 0) {
		if (index != 0)
			return -ERANGE;
		*offset = loc->offset;
		return 0;
	}

	/* max_buffers 0 means "not known yet": the layout's own bound applies. */
	limit = ga_layout_max_buffers(layout);
	if (max_buffers != 0 && max_buffers < limit)
		limit = max_buffers;
	if (index >= limit)
		return -ERANGE;
	*offset = (uint32_t)loc->offset + (uint32_t)index * loc->stride;
	return 0;
}

uint32_t ga_reg_field_mask(enum ga_reg_id id, enum ga_layout layout)
{
	const struct ga_reg_loc *loc = ga_loc(id, layout);
	unsigned int width;

	if (!loc || !loc->present || loc->lsb > loc->msb || loc->msb > 31)
		return 0;
	width = loc->msb - loc->lsb + 1u;
	/* A shift by 32 is undefined: the full word is its own case. */
	if (width == 32)
		return 0xFFFFFFFFu;
	return ((1u << width) - 1u) << loc->lsb;
}

uint32_t ga_reg_field_get(enum ga_reg_id id, enum ga_layout layout, uint32_t word)
{
	uint32_t mask = ga_reg_field_mask(id, layout);

	if (!mask)
		return 0;
	return (word & mask) >> ga_regs[id].loc[layout].lsb;
}

uint32_t ga_reg_field_set(enum ga_reg_id id, enum ga_layout layout, uint32_t word, uint32_t value)
{
	uint32_t mask = ga_reg_field_mask(id, layout);

	if (!mask)
		return word;
	/* Bits of @value beyond the field are dropped, never spilled over. */
	return (word & ~mask) | ((value << ga_regs[id].loc[layout].lsb) & mask);
}

uint32_t ga_reg_field_max(enum ga_reg_id id, enum ga_layout layout)
{
	uint32_t mask = ga_reg_field_mask(id, layout);

	if (!mask)
		return 0;
	return mask >> ga_regs[id].loc[layout].lsb;
}

int ga_reg_find(const char *name)
{
	unsigned int i;

	if (!name)
		return -ENOENT;
	for (i = 0; i < GA_REG_COUNT; i++)
		if (ga_regs[i].name && strcmp(ga_regs[i].name, name) == 0)
			return (int)i;
	return -ENOENT;
}

int ga_field_write(const struct ga_reg_io *io, enum ga_reg_id id, enum ga_layout layout,
		   uint32_t offset, uint32_t value)
{
	uint32_t mask = ga_reg_field_mask(id, layout), word = 0;
	int rc;

	if (!mask)
		return -ENOENT;
	/* Checked before the read: a refused value touches nothing. */
	rc = ga_field_insert(&word, mask, ga_regs[id].loc[layout].lsb, value);
	if (rc)
		return rc;
	/* A strobe or a whole-word field is one store: reading first would be
	 * pointless, and for a strobe the read has no meaning. */
	if (ga_regs[id].access == GA_WO || mask == 0xFFFFFFFFu)
		return io->write(io->ctx, offset, word);
	if (io->write_masked) {
		rc = io->write_masked(io->ctx, offset, mask, word);
		if (rc != -EOPNOTSUPP)
			return rc;
	}
	rc = io->read(io->ctx, offset, &word);
	if (rc)
		return rc;
	ga_field_insert(&word, mask, ga_regs[id].loc[layout].lsb, value);
	return io->write(io->ctx, offset, word);
}

int ga_field_read(const struct ga_reg_io *io, enum ga_reg_id id, enum ga_layout layout,
		  uint32_t offset, uint32_t *value)
{
	uint32_t word;
	int rc;

	if (!ga_reg_field_mask(id, layout))
		return -ENOENT;
	rc = io->read(io->ctx, offset, &word);
	if (rc)
		return rc;
	*value = ga_reg_field_get(id, layout, word);
	return 0;
}
