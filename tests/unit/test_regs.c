// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The register table: invariants as loops over every row and layout, and
 * the table against the firmware facts (docs/firmware.md).
 *
 * The facts part is deliberately independent of regs.h: the expected
 * locations below were typed from the firmware facts, docs/firmware.md §2.3
 * (V1) and §2.4 (V4), keyed by register name, so a wrong offset or bit in
 * the table (or a row missing from a layout, or one present that should
 * not be) fails here rather than on hardware.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuasync/abi.h"
#include "gpuasync/axiversion.h"
#include "gpuasync/regs.h"
#include "common/run_suite.h"

static const enum ga_layout layouts[] = {GA_LAYOUT_V1, GA_LAYOUT_V4, GA_LAYOUT_V4_LEGACY};
#define NLAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

/* The newest version that uses @l (from versions.def), so every row can be
 * present. */
static unsigned int newest_version(enum ga_layout l)
{
	unsigned int v = 0;

	for (unsigned int i = 0; i < GA_VERSION_MAX; i++)
		if (ga_versions[i].layout == l || ga_versions[i].layout_legacy == l)
			v = ga_versions[i].version;
	return v;
}

/* ---- table invariants ---------------------------------------------------- */

START_TEST(test_names)
{
	for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
		const struct ga_reg *r = &ga_regs[i];

		ck_assert_msg(r->name && r->name[0], "row %u has no name", i);
		ck_assert_msg(strspn(r->name, "abcdefghijklmnopqrstuvwxyz0123456789_") ==
				      strlen(r->name),
			      "%s: not a plain file name", r->name);
		ck_assert_msg(r->doc && r->doc[0], "%s: no doc line", r->name);
		ck_assert_msg(!strchr(r->doc, '\n') && !strchr(r->doc, '|'),
			      "%s: doc must be one line without '|'", r->name);
		ck_assert_msg(r->unit != NULL, "%s: unit NULL", r->name);
		for (unsigned int j = 0; j < i; j++)
			ck_assert_msg(strcmp(ga_regs[j].name, r->name) != 0, "%s: duplicate name",
				      r->name);
	}
}
END_TEST

START_TEST(test_enum_and_lookup)
{
	for (unsigned int i = 0; i < GA_REG_COUNT; i++)
		ck_assert_int_eq(ga_reg_find(ga_regs[i].name), (int)i);
	ck_assert_int_eq(ga_reg_find("no_such_register"), -ENOENT);
	ck_assert_int_eq(ga_reg_find(""), -ENOENT);
	ck_assert_int_eq(ga_reg_find(NULL), -ENOENT);
	ck_assert_int_eq(ga_reg_find("VERSION"), -ENOENT); /* names are exact */
	ck_assert_int_eq(ga_reg_find("version"), GA_REG_VERSION);
}
END_TEST

START_TEST(test_bits_and_offsets)
{
	for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
		const struct ga_reg *r = &ga_regs[i];

		for (unsigned int l = 0; l < NLAYOUTS; l++) {
			const struct ga_reg_loc *loc = &r->loc[layouts[l]];
			unsigned int n = ga_layout_max_buffers(layouts[l]);
			uint32_t last;

			if (!loc->present)
				continue;
			ck_assert_msg(loc->lsb <= loc->msb && loc->msb < 32, "%s/%s: bits %u..%u",
				      r->name, ga_layout_name(layouts[l]), loc->lsb, loc->msb);
			ck_assert_msg(loc->offset % 4 == 0, "%s: offset 0x%x not aligned", r->name,
				      loc->offset);
			ck_assert_msg(loc->offset < GA_CORE_SIZE, "%s: offset 0x%x", r->name,
				      loc->offset);
			ck_assert_msg(loc->stride % 4 == 0, "%s: stride %u", r->name, loc->stride);
			ck_assert_msg(r->array != GA_ARRAY_NONE || loc->stride == 0,
				      "%s: scalar with a stride", r->name);
			/* V1 cores decode only 12 address bits. */
			if (layouts[l] == GA_LAYOUT_V1)
				ck_assert_msg(loc->offset < 0x1000, "%s: 0x%x beyond V1's 4 KiB",
					      r->name, loc->offset);
			last = loc->offset + (n - 1) * loc->stride;
			ck_assert_msg(last < GA_CORE_SIZE, "%s/%s: buffer %u at 0x%x", r->name,
				      ga_layout_name(layouts[l]), n - 1, last);
		}
	}
}
END_TEST

START_TEST(test_every_row_somewhere)
{
	for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
		bool any = false;

		for (unsigned int l = 0; l < NLAYOUTS; l++)
			any |= ga_reg_present(i, layouts[l], newest_version(layouts[l]));
		ck_assert_msg(any, "%s is in no layout", ga_regs[i].name);
		ck_assert_msg(ga_regs[i].min_version >= 1 &&
				      ga_regs[i].min_version <= GA_VERSION_MAX,
			      "%s: min_version %u", ga_regs[i].name, ga_regs[i].min_version);
	}
}
END_TEST

/* Each present field of each instance owns its bits: nothing overlaps. */
START_TEST(test_no_overlap)
{
	for (unsigned int l = 0; l < NLAYOUTS; l++) {
		static uint32_t used[GA_CORE_SIZE / 4];
		static int owner[GA_CORE_SIZE / 4][32];
		enum ga_layout lay = layouts[l];

		memset(used, 0, sizeof(used));
		for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
			unsigned int n = ga_layout_max_buffers(lay);
			uint32_t mask = ga_reg_field_mask(i, lay);

			if (!ga_reg_present(i, lay, newest_version(lay)))
				continue;
			if (ga_regs[i].flags & GA_F_PLUS_ONE)
				continue; /* a view of another row's bits: test_views */
			for (unsigned int idx = 0; idx < n; idx++) {
				uint32_t off;

				if (ga_reg_offset(i, lay, newest_version(lay), idx, 0, &off) != 0)
					break;
				/* a 64-bit row owns its next word too */
				for (uint32_t w = off / 4;
				     w <= off / 4 + !!(ga_regs[i].flags & GA_F_U64); w++) {
					ck_assert_msg(w < GA_CORE_SIZE / 4, "%s: %s past the block",
						      ga_layout_name(lay), ga_regs[i].name);
					ck_assert_msg(
						!(used[w] & mask),
						"%s: %s buffer %u at 0x%x overlaps %s",
						ga_layout_name(lay), ga_regs[i].name, idx, w * 4,
						ga_regs[owner[w][__builtin_ctz(used[w] & mask)]]
							.name);
					used[w] |= mask;
					for (int b = 0; b < 32; b++)
						if (mask & (1u << b))
							owner[w][b] = (int)i;
				}
			}
		}
	}
}
END_TEST

/* A GA_F_PLUS_ONE row is a read-only view of exactly one raw row: the same
 * bits in every layout, the same versions, and a name that says "buffers"
 * where the raw one says "count". */
START_TEST(test_views)
{
	unsigned int views = 0;

	for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
		const struct ga_reg *v = &ga_regs[i];
		unsigned int shadows = 0;

		if (!(v->flags & GA_F_PLUS_ONE))
			continue;
		views++;
		ck_assert_msg(v->access == GA_RO, "%s: a view must be read-only", v->name);
		ck_assert_msg(v->array == GA_ARRAY_NONE && !(v->flags & GA_F_U64), "%s", v->name);
		for (unsigned int j = 0; j < GA_REG_COUNT; j++) {
			const struct ga_reg *r = &ga_regs[j];
			bool same = j != i && !(r->flags & GA_F_PLUS_ONE) &&
				    r->min_version == v->min_version;

			for (unsigned int l = 0; same && l < NLAYOUTS; l++)
				same = !memcmp(&r->loc[layouts[l]], &v->loc[layouts[l]],
					       sizeof(struct ga_reg_loc));
			if (same)
				shadows++;
		}
		ck_assert_msg(shadows == 1, "%s shadows %u raw rows", v->name, shadows);
	}
	ck_assert_uint_eq(views, 2);
	ck_assert_int_ge(ga_reg_find("write_buffers"), 0);
	ck_assert_int_ge(ga_reg_find("read_buffers"), 0);
	ck_assert(!memcmp(&ga_regs[ga_reg_find("write_buffers")].loc,
			  &ga_regs[GA_REG_WRITE_COUNT].loc, sizeof(ga_regs[0].loc)));
	ck_assert(!memcmp(&ga_regs[ga_reg_find("read_buffers")].loc,
			  &ga_regs[GA_REG_READ_COUNT].loc, sizeof(ga_regs[0].loc)));
}
END_TEST

/* Consistency of the other columns with what they mean. */
START_TEST(test_columns)
{
	for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
		const struct ga_reg *r = &ga_regs[i];

		if (r->flags & GA_F_CYCLES)
			ck_assert_str_eq(r->unit, "cycles");
		if (r->flags & GA_F_COUNTER)
			ck_assert_msg(r->access == GA_RO, "%s: counters are read-only", r->name);
		for (unsigned int l = 0; l < NLAYOUTS; l++) {
			if (!r->loc[layouts[l]].present)
				continue;
			if (r->format == GA_FMT_BOOL)
				ck_assert_msg(ga_reg_field_max(i, layouts[l]) == 1,
					      "%s: bool wider than 1 bit", r->name);
		}
	}
}
END_TEST

/* ---- layouts and versions ------------------------------------------------ */

START_TEST(test_layout_for_version)
{
	for (unsigned int v = 1; v <= 3; v++) {
		ck_assert_int_eq(ga_layout_for_version(v, false), GA_LAYOUT_V1);
		ck_assert_int_eq(ga_layout_for_version(v, true), GA_LAYOUT_V1);
	}
	for (unsigned int v = 4; v <= 5; v++) {
		ck_assert_int_eq(ga_layout_for_version(v, false), GA_LAYOUT_V4);
		ck_assert_int_eq(ga_layout_for_version(v, true), GA_LAYOUT_V4_LEGACY);
	}
	/* Versions the table does not have get no layout at all. */
	ck_assert_int_eq(ga_layout_for_version(0, false), GA_LAYOUT_COUNT);
	ck_assert_int_eq(ga_layout_for_version(GA_VERSION_MAX + 1, false), GA_LAYOUT_COUNT);
	ck_assert_int_eq(ga_layout_for_version(255, true), GA_LAYOUT_COUNT);
	ck_assert_uint_eq(ga_layout_max_buffers(GA_LAYOUT_COUNT), 0);
	ck_assert_str_eq(ga_layout_name(GA_LAYOUT_COUNT), "unknown");
	ck_assert_str_ne(ga_layout_name(GA_LAYOUT_V4), ga_layout_name(GA_LAYOUT_V4_LEGACY));
	ck_assert_str_ne(ga_layout_name(GA_LAYOUT_V1), ga_layout_name(GA_LAYOUT_V4));
	/* docs/firmware.md §2.3, §2.4: at most 16 buffers on V1, 1024 on V4. */
	ck_assert_uint_eq(ga_layout_max_buffers(GA_LAYOUT_V1), 16);
	ck_assert_uint_eq(ga_layout_max_buffers(GA_LAYOUT_V4), 1024);
	ck_assert_uint_eq(ga_layout_max_buffers(GA_LAYOUT_V4_LEGACY), 1024);
}
END_TEST

/*
 * Every row of versions.def, whatever versions there are: what makes a new
 * version on an existing layout one row.  Nothing here names a version.
 */
START_TEST(test_version_rows)
{
	unsigned int largest = 0;

	for (unsigned int l = 0; l < NLAYOUTS; l++)
		if (ga_layout_max_buffers(layouts[l]) > largest)
			largest = ga_layout_max_buffers(layouts[l]);
	/* GA_MAX_BUFFERS sizes every buffer array: exactly the largest map. */
	ck_assert_uint_eq(GA_MAX_BUFFERS, largest);

	for (unsigned int i = 0; i < GA_VERSION_MAX; i++) {
		const struct ga_version *r = &ga_versions[i];
		unsigned int v = r->version;
		bool active = ga_reg_present(GA_REG_WRITE_ACTIVE, r->layout, v) &&
			      ga_reg_present(GA_REG_READ_ACTIVE, r->layout, v);
		uint32_t off, voff;

		/* Rows run 1, 2, 3, ... and are found by their version. */
		ck_assert_uint_eq(v, i + 1);
		ck_assert_ptr_eq(ga_version_find(v), r);
		ck_assert_msg(r->doc && r->doc[0], "v%u: no doc", v);
		/* The legacy choice is the row's own layout or V4's legacy sibling. */
		ck_assert_int_lt(r->layout, GA_LAYOUT_COUNT);
		ck_assert(r->layout_legacy == r->layout ||
			  (r->layout == GA_LAYOUT_V4 && r->layout_legacy == GA_LAYOUT_V4_LEGACY));
		ck_assert_int_eq(ga_layout_for_version(v, false), r->layout);
		ck_assert_int_eq(ga_layout_for_version(v, true), r->layout_legacy);
		/* Versions only add: nothing an older row has is gone. */
		if (i > 0 && ga_versions[i - 1].layout == r->layout)
			for (unsigned int id = 0; id < GA_REG_COUNT; id++)
				ck_assert(!ga_reg_present(id, r->layout, v - 1) ||
					  ga_reg_present(id, r->layout, v));
		/* The identity block: version, max_buffers and dma_data_bytes are
		 * there, and the version word sits where every other version has
		 * it (a probe reads it before it knows the layout). */
		for (unsigned int id = 0; id < GA_REG_COUNT; id++)
			if (ga_regs[id].flags & GA_F_WIDE_ID)
				ck_assert_msg(ga_reg_present(id, r->layout, v), "v%u lacks %s", v,
					      ga_regs[id].name);
		ck_assert_int_eq(ga_reg_offset(GA_REG_VERSION, r->layout, v, 0, 0, &off), 0);
		ck_assert_int_eq(
			ga_reg_offset(GA_REG_VERSION, ga_versions[0].layout, 1, 0, 0, &voff), 0);
		ck_assert_uint_eq(off, voff);
		ck_assert_uint_eq(ga_reg_field_mask(GA_REG_VERSION, r->layout),
				  ga_reg_field_mask(GA_REG_VERSION, ga_versions[0].layout));
		/* The reported max_buffers field can say every buffer the map holds. */
		ck_assert_uint_ge(ga_reg_field_max(GA_REG_MAX_BUFFERS, r->layout),
				  ga_layout_max_buffers(r->layout));
		/* One quiesce rule: poll where the active bits exist, else wait. */
		ck_assert_msg(active == (r->quiesce_poll_ms != 0), "v%u: active bits vs poll", v);
		ck_assert_msg((r->quiesce_poll_ms != 0) != (r->quiesce_wait_ms != 0),
			      "v%u: exactly one of wait and poll", v);
	}
	/* Above the last row nothing is known, so nothing is there. */
	ck_assert_ptr_null(ga_version_find(0));
	ck_assert_ptr_null(ga_version_find(GA_VERSION_MAX + 1));
	for (unsigned int id = 0; id < GA_REG_COUNT; id++)
		for (unsigned int l = 0; l < NLAYOUTS; l++)
			ck_assert(!ga_reg_present(id, layouts[l], GA_VERSION_MAX + 1));
}
END_TEST

/* A field write through a fake word: the calls it makes and what lands. */
struct fake_io {
	uint32_t word;
	unsigned int reads, writes;
};

static int fake_read(void *ctx, uint32_t off, uint32_t *word)
{
	struct fake_io *f = ctx;

	(void)off;
	f->reads++;
	*word = f->word;
	return 0;
}

static int fake_write(void *ctx, uint32_t off, uint32_t word)
{
	struct fake_io *f = ctx;

	(void)off;
	f->writes++;
	f->word = word;
	return 0;
}

START_TEST(test_field_write)
{
	struct fake_io f = {0xA5A5A5A5u, 0, 0};
	const struct ga_reg_io io = {&f, fake_read, fake_write};
	uint32_t v;

	/* aw_cache is bits 11:8 of 0x04 (docs/firmware.md §2.3): a 4-bit field. */
	ck_assert_int_eq(ga_field_write(&io, GA_REG_AW_CACHE, GA_LAYOUT_V4, 0x04, 0x3), 0);
	ck_assert_uint_eq(f.word, 0xA5A5A3A5u);
	ck_assert_uint_eq(f.reads, 1);
	ck_assert_uint_eq(f.writes, 1);
	ck_assert_int_eq(ga_field_read(&io, GA_REG_AW_CACHE, GA_LAYOUT_V4, 0x04, &v), 0);
	ck_assert_uint_eq(v, 0x3);
	/* Too wide: refused before anything is read or written. */
	f.reads = f.writes = 0;
	ck_assert_int_eq(ga_field_write(&io, GA_REG_AW_CACHE, GA_LAYOUT_V4, 0x04, 0x10), -ERANGE);
	ck_assert_uint_eq(f.word, 0xA5A5A3A5u);
	ck_assert_uint_eq(f.reads + f.writes, 0);
	ck_assert_int_eq(ga_field_write(&io, GA_REG_WRITE_ENABLE, GA_LAYOUT_V1, 0x08, 2), -ERANGE);
	ck_assert_uint_eq(f.reads + f.writes, 0);
	/* A strobe and a whole-word field are one store, no read. */
	ck_assert_int_eq(ga_field_write(&io, GA_REG_COUNT_RESET, GA_LAYOUT_V4, 0x20, 1), 0);
	ck_assert_int_eq(ga_field_write(&io, GA_REG_WRITE_ADDR_LO, GA_LAYOUT_V4, 0x4000, 7), 0);
	ck_assert_uint_eq(f.reads, 0);
	ck_assert_uint_eq(f.writes, 2);
	ck_assert_uint_eq(f.word, 7);
	/* A field the layout does not have. */
	ck_assert_int_eq(ga_field_write(&io, GA_REG_WRITE_SIZE, GA_LAYOUT_V4, 0x108, 1), -ENOENT);
	ck_assert_int_eq(ga_field_read(&io, GA_REG_WRITE_SIZE, GA_LAYOUT_V4, 0x108, &v), -ENOENT);
	ck_assert_uint_eq(f.writes, 2);
}
END_TEST

/* Is any field at word @off present for firmware @version? */
static bool word_present(unsigned int version, uint32_t off)
{
	enum ga_layout l = ga_layout_for_version(version, false);

	for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
		uint32_t o;

		if (ga_reg_offset(i, l, version, 0, 0, &o) == 0 && o == off)
			return true;
	}
	return false;
}

START_TEST(test_version_gating)
{
	/* docs/firmware.md §2.2-2.4; above the newest version nothing is there. */
	for (unsigned int v = 0; v <= GA_VERSION_MAX + 1; v++) {
		if (v > GA_VERSION_MAX) {
			for (uint32_t o = 0; o < GA_CORE_SIZE; o += 4)
				ck_assert_msg(!word_present(v, o), "0x%x in v%u", o, v);
			continue;
		}
		ck_assert_msg(word_present(v, 0x30) == (v >= 1), "0x30 version, v%u", v);
		ck_assert_msg(word_present(v, 0x34) == (v >= 2), "0x34 timeout count, v%u", v);
		ck_assert_msg(word_present(v, 0x38) == (v >= 2), "0x38 demux select, v%u", v);
		ck_assert_msg(word_present(v, 0x3C) == (v >= 3), "0x3C min write buffers, v%u", v);
		ck_assert_msg(word_present(v, 0x40) == (v >= 3), "0x40 read queue, v%u", v);
		ck_assert_msg(word_present(v, 0x44) == (v >= 5), "0x44 active bits, v%u", v);
		ck_assert_msg(word_present(v, 0x2C) == (v >= 1 && v <= 3), "0x2C routes, v%u", v);
		ck_assert_msg(word_present(v, 0x60) == (v >= 4), "0x60 write max size, v%u", v);
	}
	/* Version 0 (no version register): nothing is there to talk to. */
	for (unsigned int i = 0; i < GA_REG_COUNT; i++)
		for (unsigned int l = 0; l < NLAYOUTS; l++)
			ck_assert(!ga_reg_present(i, layouts[l], 0));
	/* The read-queue word changes meaning between V1 and V4. */
	ck_assert(ga_reg_present(GA_REG_MIN_READ_QUEUE, GA_LAYOUT_V1, 3));
	ck_assert(!ga_reg_present(GA_REG_MIN_READ_QUEUE, GA_LAYOUT_V4, 4));
	ck_assert(ga_reg_present(GA_REG_MAX_READ_QUEUE, GA_LAYOUT_V4, 4));
	ck_assert(!ga_reg_present(GA_REG_MAX_READ_QUEUE, GA_LAYOUT_V1, 3));
	/* Out-of-range ids and layouts are simply absent. */
	ck_assert(!ga_reg_present(GA_REG_COUNT, GA_LAYOUT_V4, 5));
	ck_assert(!ga_reg_present(GA_REG_VERSION, GA_LAYOUT_COUNT, 5));
}
END_TEST

START_TEST(test_absent_enoent)
{
	for (unsigned int v = 0; v <= 6; v++) {
		for (unsigned int l = 0; l < NLAYOUTS; l++) {
			for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
				uint32_t off = 0xdeadbeef;
				int rc = ga_reg_offset(i, layouts[l], v, 0, 0, &off);

				if (ga_reg_present(i, layouts[l], v)) {
					ck_assert_int_eq(rc, 0);
					ck_assert_uint_eq(off, ga_regs[i].loc[layouts[l]].offset);
				} else {
					ck_assert_msg(rc == -ENOENT, "%s v%u %s: rc %d",
						      ga_regs[i].name, v,
						      ga_layout_name(layouts[l]), rc);
					ck_assert_uint_eq(off, 0xdeadbeef);
				}
			}
		}
	}
	/* Absent fields have no bits, so nothing is read or written by mistake. */
	ck_assert_uint_eq(ga_reg_field_mask(GA_REG_WRITE_SIZE, GA_LAYOUT_V4), 0);
	ck_assert_uint_eq(ga_reg_field_set(GA_REG_WRITE_SIZE, GA_LAYOUT_V4, 0x1234, 7), 0x1234);
	ck_assert_uint_eq(ga_reg_field_get(GA_REG_WRITE_SIZE, GA_LAYOUT_V4, 0xffffffff), 0);
}
END_TEST

START_TEST(test_per_buffer_offsets)
{
	static const unsigned int idx[] = {0, 1, 2, 3, 7, 15, 16, 255, 1023};

	for (unsigned int l = 0; l < NLAYOUTS; l++) {
		enum ga_layout lay = layouts[l];
		unsigned int v = newest_version(lay), n = ga_layout_max_buffers(lay);

		for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
			const struct ga_reg_loc *loc = &ga_regs[i].loc[lay];
			uint32_t off;

			if (!ga_reg_present(i, lay, v))
				continue;
			if (ga_regs[i].array == GA_ARRAY_NONE || loc->stride == 0) {
				/* Scalars and buffer-0-only rows have one instance. */
				ck_assert_int_eq(ga_reg_offset(i, lay, v, 0, 8, &off), 0);
				ck_assert_uint_eq(off, loc->offset);
				ck_assert_int_eq(ga_reg_offset(i, lay, v, 1, 8, &off), -ERANGE);
				continue;
			}
			for (unsigned int k = 0; k < sizeof(idx) / sizeof(idx[0]); k++) {
				int rc = ga_reg_offset(i, lay, v, idx[k], 0, &off);

				if (idx[k] >= n) {
					ck_assert_int_eq(rc, -ERANGE);
					continue;
				}
				ck_assert_int_eq(rc, 0); /* where: per_buffer_facts below */
			}
			/* max_buffers bounds the instances; the layout bounds max_buffers. */
			ck_assert_int_eq(ga_reg_offset(i, lay, v, 3, 4, &off), 0);
			ck_assert_int_eq(ga_reg_offset(i, lay, v, 4, 4, &off), -ERANGE);
			ck_assert_int_eq(ga_reg_offset(i, lay, v, n, n + 100, &off), -ERANGE);
		}
	}
	/* Spot checks from the firmware facts (docs/firmware.md). */
	uint32_t off;
	ck_assert_int_eq(ga_reg_offset(GA_REG_WRITE_ADDR_LO, GA_LAYOUT_V4, 4, 5, 1024, &off), 0);
	ck_assert_uint_eq(off, 0x4000 + 8 * 5);
	ck_assert_int_eq(ga_reg_offset(GA_REG_WRITE_ADDR_HI, GA_LAYOUT_V1, 1, 3, 16, &off), 0);
	ck_assert_uint_eq(off, 0x104 + 16 * 3);
	ck_assert_int_eq(ga_reg_offset(GA_REG_FREE_LIST, GA_LAYOUT_V4, 5, 1023, 1024, &off), 0);
	ck_assert_uint_eq(off, 0x2000 + 4 * 1023);
	ck_assert_int_eq(ga_reg_offset(GA_REG_READ_SIZE, GA_LAYOUT_V1, 2, 15, 16, &off), 0);
	ck_assert_uint_eq(off, 0x400 + 4 * 15);
	ck_assert_int_eq(ga_reg_offset(GA_REG_TOTAL_LATENCY, GA_LAYOUT_V1, 3, 2, 4, &off), 0);
	ck_assert_uint_eq(off, 0x500 + 16 * 2);
	ck_assert_int_eq(ga_reg_offset(GA_REG_TOTAL_LATENCY, GA_LAYOUT_V4, 4, 1, 4, &off), -ERANGE);
	ck_assert_int_eq(ga_reg_offset(GA_REG_COUNT, GA_LAYOUT_V4, 4, 0, 4, &off), -EINVAL);
}
END_TEST

/* Per-buffer registers at (base + index * stride) from docs/firmware.md's
 * §2.3 (V1) and §2.4 (V4) tables, checked at several indices. */
START_TEST(test_per_buffer_facts)
{
	static const struct {
		const char *name;
		enum ga_layout layout;
		uint32_t base, stride;
	} f[] = {
		{"write_address_low", GA_LAYOUT_V1, 0x100, 16},
		{"write_address_high", GA_LAYOUT_V1, 0x104, 16},
		{"write_size", GA_LAYOUT_V1, 0x108, 16},
		{"read_address_low", GA_LAYOUT_V1, 0x200, 16},
		{"read_address_high", GA_LAYOUT_V1, 0x204, 16},
		{"free_list", GA_LAYOUT_V1, 0x300, 4},
		{"read_size", GA_LAYOUT_V1, 0x400, 4},
		{"total_latency", GA_LAYOUT_V1, 0x500, 16},
		{"gpu_latency", GA_LAYOUT_V1, 0x504, 16},
		{"write_latency", GA_LAYOUT_V1, 0x508, 16},
		{"free_list", GA_LAYOUT_V4, 0x2000, 4},
		{"read_size", GA_LAYOUT_V4, 0x3000, 4},
		{"write_address_low", GA_LAYOUT_V4, 0x4000, 8},
		{"write_address_high", GA_LAYOUT_V4, 0x4004, 8},
		{"read_address_low", GA_LAYOUT_V4, 0x6000, 8},
		{"read_address_high", GA_LAYOUT_V4, 0x6004, 8},
	};
	static const unsigned int idx[] = {0, 1, 2, 7, 15, 255, 1023};

	for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++) {
		int id = ga_reg_find(f[k].name);
		unsigned int v = f[k].layout == GA_LAYOUT_V1 ? 3 : 4;
		unsigned int n = ga_layout_max_buffers(f[k].layout);

		ck_assert_msg(id >= 0, "%s missing", f[k].name);
		for (size_t j = 0; j < sizeof(idx) / sizeof(idx[0]); j++) {
			uint32_t off = 0;

			if (idx[j] >= n)
				continue;
			ck_assert_int_eq(ga_reg_offset(id, f[k].layout, v, idx[j], n, &off), 0);
			ck_assert_msg(off == f[k].base + idx[j] * f[k].stride,
				      "%s %u: 0x%x, facts 0x%x", f[k].name, idx[j], off,
				      f[k].base + idx[j] * f[k].stride);
		}
	}
}
END_TEST

/* ---- field helpers ------------------------------------------------------- */

START_TEST(test_fields)
{
	for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
		for (unsigned int l = 0; l < NLAYOUTS; l++) {
			const struct ga_reg_loc *loc = &ga_regs[i].loc[layouts[l]];
			uint32_t mask = ga_reg_field_mask(i, layouts[l]);
			uint32_t max = ga_reg_field_max(i, layouts[l]);
			unsigned int w = loc->msb - loc->lsb + 1;
			uint32_t word;

			if (!loc->present)
				continue;
			ck_assert_uint_eq(max, w == 32 ? 0xffffffffu : (1u << w) - 1);
			ck_assert_uint_eq(mask, max << loc->lsb);
			/* set/get round trip, neighbours untouched in both directions */
			word = ga_reg_field_set(i, layouts[l], 0xA5A5A5A5u, max);
			ck_assert_uint_eq(ga_reg_field_get(i, layouts[l], word), max);
			ck_assert_uint_eq(word & ~mask, 0xA5A5A5A5u & ~mask);
			word = ga_reg_field_set(i, layouts[l], 0xffffffffu, 0);
			ck_assert_uint_eq(word, ~mask);
			/* too-wide values are cut to the field, never spill over */
			word = ga_reg_field_set(i, layouts[l], 0, 0xffffffffu);
			ck_assert_uint_eq(word, mask);
		}
	}
	ck_assert_uint_eq(ga_reg_field_set(GA_REG_WRITE_ENABLE, GA_LAYOUT_V4, 0, 1), 0x8000);
	ck_assert_uint_eq(ga_reg_field_set(GA_REG_WRITE_ENABLE, GA_LAYOUT_V1, 0, 1), 0x100);
	ck_assert_uint_eq(ga_reg_field_set(GA_REG_READ_ENABLE, GA_LAYOUT_V4, 0, 1), 0x80000000u);
	ck_assert_uint_eq(ga_reg_field_max(GA_REG_READ_COUNT, GA_LAYOUT_V4), 0x7fff);
	ck_assert_uint_eq(ga_reg_field_get(GA_REG_WRITE_COUNT, GA_LAYOUT_V1, 0x01ff0234), 0x34);
	ck_assert_uint_eq(ga_reg_field_get(GA_REG_MAX_BUFFERS, GA_LAYOUT_V1, 0x10200000), 16);
	ck_assert_uint_eq(ga_reg_field_get(GA_REG_DMA_DATA_BYTES, GA_LAYOUT_V4, 0x00200000), 32);
}
END_TEST

/* ---- the table against the firmware facts (docs/firmware.md) ------------- */

struct expect {
	const char *name;
	uint32_t offset;
	unsigned int lsb, msb;
	unsigned int stride; /* per-buffer stride; 0 for scalars / buffer 0 only */
	bool wide;	     /* 64 bits: this word and the next */
};

#define W(n, o)                                                                                    \
	{                                                                                          \
		n, o, 0, 31, 0, false                                                              \
	} /* a whole word */
#define F(n, o, l, m)                                                                              \
	{                                                                                          \
		n, o, l, m, 0, false                                                               \
	} /* a field */
#define A(n, o, s)                                                                                 \
	{                                                                                          \
		n, o, 0, 31, s, false                                                              \
	} /* a per-buffer word */

#define W64(n, o)                                                                                  \
	{                                                                                          \
		n, o, 0, 31, 0, true                                                               \
	} /* a 64-bit value, low word first */

/*
 * SURF AxiStreamMonAxiL (python/surf/axi/_AxiStreamMonAxiL.py), one lane at
 * block offset @b (GpuAsyncCore: inbound 0x100, outbound 0x200): config
 * 0x00 with CntRst in bit 0, FrameCnt 0x04 (64 bits), FrameRate/Max/Min
 * 0x0C/0x10/0x14, Bandwidth/Max/Min 0x18/0x20/0x28 (64 bits each),
 * FrameSize/Max/Min 0x30/0x34/0x38.
 */
#define FACTS_MONITOR(p, b)                                                                        \
	F(p "_monitor_reset", (b) + 0x00, 0, 0), W64(p "_frames", (b) + 0x04),                     \
		W(p "_frame_rate", (b) + 0x0C), W(p "_frame_rate_max", (b) + 0x10),                \
		W(p "_frame_rate_min", (b) + 0x14), W64(p "_bandwidth", (b) + 0x18),               \
		W64(p "_bandwidth_max", (b) + 0x20), W64(p "_bandwidth_min", (b) + 0x28),          \
		W(p "_frame_size", (b) + 0x30), W(p "_frame_size_max", (b) + 0x34),                \
		W(p "_frame_size_min", (b) + 0x38)

/* §2.3: versions 1-3.  Where driver and FW widths differ, FW wins. */
static const struct expect facts_v1[] = {
	F("ar_cache", 0x04, 0, 3),
	F("aw_cache", 0x04, 8, 11),
	F("dma_data_bytes", 0x04, 16, 23),
	F("max_buffers", 0x04, 24, 28),
	F("write_count", 0x08, 0, 7),
	F("write_buffers", 0x08, 0, 7),
	F("write_enable", 0x08, 8, 8),
	F("read_count", 0x08, 16, 23),
	F("read_buffers", 0x08, 16, 23),
	F("read_enable", 0x08, 24, 24),
	W("rx_frame_count", 0x10),
	W("tx_frame_count", 0x14),
	W("axi_write_error_count", 0x18),
	W("axi_read_error_count", 0x1C),
	W("count_reset", 0x20),
	F("axi_write_error_value", 0x24, 0, 3),
	F("axi_read_error_value", 0x28, 0, 2),
	F("route_mask0", 0x2C, 0, 7),
	F("route_dest0", 0x2C, 8, 15),
	F("route_mask1", 0x2C, 16, 23),
	F("route_dest1", 0x2C, 24, 31),
	F("version", 0x30, 0, 7),
	W("axi_write_timeout_count", 0x34),
	F("demux_select", 0x38, 0, 0),
	W("min_write_buffers", 0x3C),
	W("min_read_queue", 0x40),
	A("write_address_low", 0x100, 16),
	A("write_address_high", 0x104, 16),
	A("write_size", 0x108, 16),
	A("read_address_low", 0x200, 16),
	A("read_address_high", 0x204, 16),
	A("free_list", 0x300, 4),
	A("read_size", 0x400, 4),
	A("total_latency", 0x500, 16),
	A("gpu_latency", 0x504, 16),
	A("write_latency", 0x508, 16),
};

/* §2.4 rows common to both V4 variants. */
#define FACTS_V4_COMMON                                                                            \
	F("max_buffers", 0x00, 0, 15), F("ar_cache", 0x04, 0, 3), F("aw_cache", 0x04, 8, 11),      \
		F("dma_data_bytes", 0x04, 16, 23), F("write_count", 0x08, 0, 14),                  \
		F("write_enable", 0x08, 15, 15), F("read_count", 0x08, 16, 30),                    \
		F("read_enable", 0x08, 31, 31), W("rx_frame_count", 0x10),                         \
		W("tx_frame_count", 0x14), W("axi_write_error_count", 0x18),                       \
		W("axi_read_error_count", 0x1C), W("count_reset", 0x20),                           \
		F("axi_write_error_value", 0x24, 0, 3), F("axi_read_error_value", 0x28, 0, 2),     \
		F("version", 0x30, 0, 7), W("axi_write_timeout_count", 0x34),                      \
		F("demux_select", 0x38, 0, 0), F("min_write_buffers", 0x3C, 0, 10),                \
		F("max_read_queue", 0x40, 0, 10), F("write_active", 0x44, 0, 0),                   \
		F("read_active", 0x44, 1, 1), W("write_max_size", 0x60),                           \
		FACTS_MONITOR("inbound", 0x100), FACTS_MONITOR("outbound", 0x200),                 \
		F("write_buffers", 0x08, 0, 14), F("read_buffers", 0x08, 16, 30),                  \
		A("free_list", 0x2000, 4), A("read_size", 0x3000, 4),                              \
		A("write_address_low", 0x4000, 8), A("write_address_high", 0x4004, 8),             \
		A("read_address_low", 0x6000, 8), A("read_address_high", 0x6004, 8)

/* FW since 2026-03-20: latency block 0xC0..0xF8, buffer 0 only. */
static const struct expect facts_v4[] = {
	FACTS_V4_COMMON,
	W("total_latency", 0xC0),
	W("total_latency_max", 0xC4),
	W("total_latency_min", 0xC8),
	W("gpu_latency", 0xD0),
	W("gpu_latency_max", 0xD4),
	W("gpu_latency_min", 0xD8),
	W("write_latency", 0xE0),
	W("write_latency_max", 0xE4),
	W("write_latency_min", 0xE8),
	W("read_latency", 0xF0),
	W("read_latency_max", 0xF4),
	W("read_latency_min", 0xF8),
};

/* The driver headers' V4: 0x48/0x50/0x58, no max/min, no read latency. */
static const struct expect facts_v4_legacy[] = {
	FACTS_V4_COMMON,
	W("total_latency", 0x48),
	W("gpu_latency", 0x50),
	W("write_latency", 0x58),
};

static void check_facts(enum ga_layout lay, const struct expect *e, size_t n)
{
	unsigned int v = newest_version(lay);

	/* Every fact is in the table, exactly. */
	for (size_t k = 0; k < n; k++) {
		int id = ga_reg_find(e[k].name);
		const struct ga_reg_loc *loc;

		ck_assert_msg(id >= 0, "%s: not in the table", e[k].name);
		loc = &ga_regs[id].loc[lay];
		ck_assert_msg(ga_reg_present(id, lay, v), "%s: absent from %s", e[k].name,
			      ga_layout_name(lay));
		ck_assert_msg(loc->offset == e[k].offset, "%s/%s: offset 0x%x, facts 0x%x",
			      e[k].name, ga_layout_name(lay), loc->offset, e[k].offset);
		ck_assert_msg(loc->lsb == e[k].lsb && loc->msb == e[k].msb,
			      "%s/%s: bits %u..%u, facts %u..%u", e[k].name, ga_layout_name(lay),
			      loc->lsb, loc->msb, e[k].lsb, e[k].msb);
		ck_assert_msg(loc->stride == e[k].stride, "%s/%s: stride %u, facts %u", e[k].name,
			      ga_layout_name(lay), loc->stride, e[k].stride);
		ck_assert_msg(!!(ga_regs[id].flags & GA_F_U64) == e[k].wide,
			      "%s: %s bits, facts %s", e[k].name,
			      (ga_regs[id].flags & GA_F_U64) ? "64" : "32",
			      e[k].wide ? "64" : "32");
	}
	/* And nothing else is present in that layout. */
	for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
		bool listed = false;

		for (size_t k = 0; k < n; k++)
			listed |= strcmp(e[k].name, ga_regs[i].name) == 0;
		ck_assert_msg(listed == ga_reg_present(i, lay, v), "%s: %s in %s, facts say %s",
			      ga_regs[i].name, listed ? "absent" : "present", ga_layout_name(lay),
			      listed ? "present" : "absent");
	}
}

START_TEST(test_facts_v1)
{
	check_facts(GA_LAYOUT_V1, facts_v1, sizeof(facts_v1) / sizeof(facts_v1[0]));
}
END_TEST

START_TEST(test_facts_v4)
{
	check_facts(GA_LAYOUT_V4, facts_v4, sizeof(facts_v4) / sizeof(facts_v4[0]));
}
END_TEST

START_TEST(test_facts_v4_legacy)
{
	check_facts(GA_LAYOUT_V4_LEGACY, facts_v4_legacy,
		    sizeof(facts_v4_legacy) / sizeof(facts_v4_legacy[0]));
}
END_TEST

/* §2.3/§2.4 access modes and version of appearance. */
START_TEST(test_facts_access)
{
	static const struct {
		const char *name;
		enum ga_access access;
		unsigned int since;
	} facts[] = {
		{"version", GA_RO, 1},	      {"count_reset", GA_WO, 1},
		{"free_list", GA_WO, 1},      {"write_enable", GA_RW, 1},
		{"read_enable", GA_RW, 1},    {"write_count", GA_RW, 1},
		{"read_size", GA_RW, 1},      {"write_address_low", GA_RW, 1},
		{"rx_frame_count", GA_RO, 1}, {"dma_data_bytes", GA_RO, 1},
		{"max_buffers", GA_RO, 1},    {"axi_write_timeout_count", GA_RO, 2},
		{"demux_select", GA_RW, 2},   {"min_write_buffers", GA_RO, 3},
		{"min_read_queue", GA_RO, 3}, {"max_read_queue", GA_RO, 4},
		{"write_max_size", GA_RW, 4}, {"write_active", GA_RO, 5},
		{"read_active", GA_RO, 5},
	};

	for (size_t k = 0; k < sizeof(facts) / sizeof(facts[0]); k++) {
		int id = ga_reg_find(facts[k].name);

		ck_assert_msg(id >= 0, "%s missing", facts[k].name);
		ck_assert_msg(ga_regs[id].access == facts[k].access, "%s: access", facts[k].name);
		ck_assert_msg(ga_regs[id].min_version == facts[k].since, "%s: since v%u, facts v%u",
			      facts[k].name, ga_regs[id].min_version, facts[k].since);
	}
}
END_TEST

/* §1.2/§2.3: the engines are the 0x08 enable bits, the ones upstream's
 * pre-release switches with GPU_Enable_Tx (write) and GPU_Enable_Rx (read);
 * exactly those rows carry the engine property, one per direction. */
START_TEST(test_facts_engines)
{
	int w = ga_reg_find("write_enable"), r = ga_reg_find("read_enable");
	unsigned int nw = 0, nr = 0;

	ck_assert(w >= 0 && r >= 0);
	ck_assert(ga_regs[w].flags & GA_F_ENGINE_WRITE);
	ck_assert(ga_regs[r].flags & GA_F_ENGINE_READ);
	ck_assert_uint_eq(ga_regs[w].loc[GA_LAYOUT_V4].offset, 0x08);
	ck_assert_uint_eq(ga_regs[w].loc[GA_LAYOUT_V4].lsb, 15);
	ck_assert_uint_eq(ga_regs[r].loc[GA_LAYOUT_V4].lsb, 31);
	ck_assert_uint_eq(ga_regs[w].loc[GA_LAYOUT_V1].lsb, 8);
	ck_assert_uint_eq(ga_regs[r].loc[GA_LAYOUT_V1].lsb, 24);
	for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
		nw += !!(ga_regs[i].flags & GA_F_ENGINE_WRITE);
		nr += !!(ga_regs[i].flags & GA_F_ENGINE_READ);
	}
	ck_assert_uint_eq(nw, 1);
	ck_assert_uint_eq(nr, 1);
}
END_TEST

/* The settings are exactly the single read-write fields that are neither
 * the driver's plumbing, a strobe nor an engine switch (settings,
 * settings.yaml and rogue's YAML all ask ga_reg_is_setting). */
START_TEST(test_facts_settings)
{
	static const struct {
		const char *name;
		bool setting;
	} want[] = {
		{"ar_cache", true},	  {"aw_cache", true},	    {"write_enable", false},
		{"read_enable", false},	  {"write_count", false},   {"count_reset", false},
		{"rx_frame_count", false}, {"dma_data_bytes", false},
	};
	unsigned int n = 0;

	for (unsigned int i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int id = ga_reg_find(want[i].name);

		ck_assert_msg(id >= 0, "%s", want[i].name);
		ck_assert_msg(ga_reg_is_setting((enum ga_reg_id)id) == want[i].setting, "%s",
			      want[i].name);
	}
	for (unsigned int i = 0; i < GA_REG_COUNT; i++) {
		if (!ga_reg_is_setting((enum ga_reg_id)i))
			continue;
		n++;
		ck_assert(ga_regs[i].access == GA_RW && ga_regs[i].array == GA_ARRAY_NONE);
	}
	ck_assert_uint_gt(n, 2);
}
END_TEST

/* ---- the AxiVersion identity table ---------------------------------------- */

/*
 * Against SURF's python/surf/axi/_AxiVersion.py (FpgaVersion 0x000,
 * UpTimeCnt 0x008, UserConstants from 0x400, DeviceId 0x500, GitHash 0x600
 * of 160 bits, DeviceDna 0x700 of 128 bits, BuildStamp 0x800 of 256 bytes),
 * axi-pcie-core's PcieAxiVersion (userValues[0-10] at 0x400 + 4i, the
 * fields of [6] and [7]) and the firmware facts (docs/firmware.md §2.1:
 * userValues[4] DMA clock, [10] bit 0 GPU enable, [9] bits 11:0 hardware
 * type).
 */
START_TEST(test_fw_facts)
{
	static const struct {
		const char *name;
		unsigned int offset, words, lsb, msb;
	} e[] = {
		{"fpga_version", 0x000, 1, 0, 31},
		{"scratch_pad", 0x004, 1, 0, 31},
		{"uptime", 0x008, 1, 0, 31},
		{"dma_lanes", 0x400, 1, 0, 31},
		{"reserved", 0x404, 1, 0, 31},
		{"driver_type_id", 0x408, 1, 0, 31},
		{"xil_device", 0x40c, 1, 0, 31},
		{"dma_clock_hz", 0x410, 1, 0, 31},
		{"boot_prom", 0x414, 1, 0, 31},
		{"dma_axis_tdata_bytes", 0x418, 1, 24, 31},
		{"dma_axis_tdest_bits", 0x418, 1, 20, 23},
		{"dma_axis_tuser_bits", 0x418, 1, 16, 19},
		{"dma_axis_tid_bits", 0x418, 1, 12, 15},
		{"dma_axis_tkeep_mode", 0x418, 1, 8, 11},
		{"dma_axis_tuser_mode", 0x418, 1, 4, 7},
		{"dma_axis_tstrb", 0x418, 1, 1, 1},
		{"app_reset", 0x418, 1, 0, 0},
		{"pcie_axi_addr_width", 0x41c, 1, 24, 31},
		{"pcie_axi_data_bytes", 0x41c, 1, 16, 23},
		{"pcie_axi_id_bits", 0x41c, 1, 8, 15},
		{"pcie_axi_len_bits", 0x41c, 1, 0, 7},
		{"app_clock_hz", 0x420, 1, 0, 31},
		{"hardware_type", 0x424, 1, 0, 11},
		{"gpu_enable", 0x428, 1, 0, 0},
		{"gen_sysmon", 0x42c, 1, 0, 0},
		{"memory_map_version", 0x4fc, 1, 0, 7},
		{"device_id", 0x500, 1, 0, 31},
		{"git_hash", 0x600, 5, 0, 31},
		{"dna", 0x700, 4, 0, 31},
		{"build_stamp", 0x800, 64, 0, 31},
	};

	ck_assert_uint_eq(sizeof(e) / sizeof(e[0]), GA_FW_COUNT);
	ck_assert_uint_eq(GA_FW_BASE, 0x20000);
	for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++) {
		int id = ga_fw_find(e[k].name);
		const struct ga_fw_field *f;

		ck_assert_msg(id >= 0, "%s missing", e[k].name);
		f = &ga_fw_fields[id];
		ck_assert_uint_eq(f->offset, e[k].offset);
		ck_assert_uint_eq(f->words, e[k].words);
		ck_assert_uint_eq(f->lsb, e[k].lsb);
		ck_assert_uint_eq(f->msb, e[k].msb);
		ck_assert_uint_le(f->offset + 4u * f->words, GA_FW_SIZE);
		ck_assert_ptr_nonnull(f->doc);
	}
	/* the two words the drivers already read agree with the table */
	ck_assert_uint_eq(GA_FW_BASE + ga_fw_fields[GA_FW_GPU_ENABLE].offset, GA_AXIVERSION_GPU_EN);
	ck_assert_uint_eq(GA_FW_BASE + ga_fw_fields[GA_FW_DMA_CLOCK_HZ].offset,
			  GA_AXIVERSION_CLOCK_HZ);
	ck_assert_int_eq(ga_fw_find("nope"), -ENOENT);
	/* read-write: ScratchPad only (surf's AxiVersion; the reload and reset
	 * controls are deliberately no rows), and the write mask follows it */
	for (unsigned int i = 0; i < GA_FW_COUNT; i++)
		ck_assert_uint_eq(ga_fw_fields[i].access,
				  i == GA_FW_SCRATCH_PAD ? GA_FWA_RW : GA_FWA_RO);
	ck_assert_uint_eq(ga_fw_write_mask(0x004), 0xffffffffu);
	ck_assert_uint_eq(ga_fw_write_mask(0x000), 0);
	ck_assert_uint_eq(ga_fw_write_mask(0x008), 0);
	ck_assert_uint_eq(ga_fw_write_mask(0x100), 0);
	ck_assert_uint_eq(ga_fw_write_mask(0x600), 0);
	for (uint32_t off = 0x400; off <= 0x428; off += 4)
		ck_assert_uint_eq(ga_fw_write_mask(off), 0);
	/* no two rows share a bit; a value fits its field; a row the cards
	 * fill themselves (several words) carries GA_FW_CARD */
	for (unsigned int i = 0; i < GA_FW_COUNT; i++) {
		const struct ga_fw_field *f = &ga_fw_fields[i];
		unsigned int width = f->msb - f->lsb + 1;

		if (f->words > 1) {
			ck_assert_uint_eq(f->value, GA_FW_CARD);
			continue;
		}
		ck_assert_msg(width == 32 || f->value >> width == 0, "%s: value %#x wider than %u",
			      f->name, f->value, width);
		for (unsigned int j = i + 1; j < GA_FW_COUNT; j++) {
			const struct ga_fw_field *g = &ga_fw_fields[j];

			ck_assert_msg(g->offset != f->offset || g->words > 1 || g->lsb > f->msb ||
					      g->msb < f->lsb,
				      "%s and %s overlap", f->name, g->name);
		}
	}
}
END_TEST

/*
 * The image both emulated cards model (docs/firmware.md §2.5): what each
 * userValues word of a KCU1500 build of the GPU core holds, word by word,
 * from the facts on that page rather than from the table, and the table's
 * power-up words (ga_fw_image_word) equal to them.
 */
START_TEST(test_fw_image)
{
	static const struct {
		unsigned int offset;
		uint32_t word;
	} e[] = {
		{0x400, 8},	     /* DMA_SIZE_G: InterCardTest's DMA_LANES_C */
		{0x404, 1},	     /* reserved, 1 in AxiPcieReg */
		{0x408, 0},	     /* DRIVER_TYPE_ID_G: XilinxKcu1500Core's default */
		{0x40c, 0},	     /* XIL_DEVICE_G "ULTRASCALE" */
		{0x410, 250000000},  /* DMA_CLK_FREQ_C */
		{0x414, 1},	     /* BOOT_PROM_G "SPIx8" */
		{0x418, 0x10820110}, /* ssiAxiStreamConfig(16, COMP, FIRST_LAST, 8, 2) */
		{0x41c, 0x40200408}, /* AXI_PCIE_CONFIG_C 64, 32, 4, 8 */
		{0x420, 156250000},  /* appClk: the 156.25 MHz AXI-Lite clock */
		{0x424, 0x0000000d}, /* HW_TYPE_XILINX_KCU1500_C */
		{0x428, 1},	     /* DATAGPU_EN_G */
		{0x42c, 1},	     /* GEN_SYSMON_G (axi-pcie-core v6.9.0 on) */
		{0x430, 0},	     /* userValues[12..62] are 0 */
		{0x4f8, 0},	     {0x4fc, 1}, /* memory-map version 1: SysMon at 0x24000 */
		{0x500, 0},			 /* DeviceId is DRIVER_TYPE_ID_G */
	};
	char text[GA_FW_TEXT_MAX];
	uint32_t w;

	for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++)
		ck_assert_msg(ga_fw_image_word(e[k].offset) == e[k].word, "+%#x: %#x, want %#x",
			      e[k].offset, ga_fw_image_word(e[k].offset), e[k].word);
	/* how pyrogue's board check reads it: XilinxKcu1500 is 0x00D */
	w = ga_fw_image_word(0x424);
	ck_assert_int_ge(ga_fw_format(GA_FW_HARDWARE_TYPE, &w, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "0x00d");
	/* a field put into a word leaves its neighbours alone */
	w = ga_fw_put(GA_FW_PCIE_AXI_DATA_BYTES, 0x40200408, 64);
	ck_assert_uint_eq(w, 0x40400408);
	ck_assert_uint_eq(ga_fw_put(GA_FW_PCIE_AXI_DATA_BYTES, 0, 0x1ff), 0x00ff0000);
	ck_assert_uint_eq(ga_fw_put(GA_FW_GIT_HASH, 0x1234, 5), 0x1234); /* several words */
}
END_TEST

/*
 * The block each emulated card starts from (ga_fw_emulated): one image, so
 * the same version, git hash and image words on both cards; its own DNA
 * per chip; a build stamp in SURF's format naming the card.
 */
START_TEST(test_fw_emulated)
{
	static uint32_t a[GA_FW_SIZE / 4], b[GA_FW_SIZE / 4];
	char ta[GA_FW_TEXT_MAX], tb[GA_FW_TEXT_MAX];
	const struct ga_fw_field *f = ga_fw_fields;

	memset(a, 0xa5, sizeof(a));
	ga_fw_emulated(a, "gpuasync.ko", 0x4741000000000003ull);
	ga_fw_emulated(b, "libgpuasync sim", 0x53494d0000000001ull);
	ck_assert_uint_eq(a[0], 0x02080200); /* FpgaVersion */
	ck_assert_uint_eq(a[0x424 / 4], 0x0000000d);
	ck_assert_uint_eq(a[0x7fc / 4], 0); /* no row: 0, as the firmware reads */
	for (unsigned int i = 0; i < GA_FW_SIZE / 4; i++) {
		unsigned int off = i * 4;
		bool own = (off >= f[GA_FW_DNA].offset && off < f[GA_FW_DNA].offset + 16u) ||
			   (off >= f[GA_FW_BUILD_STAMP].offset &&
			    off < f[GA_FW_BUILD_STAMP].offset + 256u);

		if (!own)
			ck_assert_msg(a[i] == b[i], "+%#x differs between the cards", off);
	}
	ck_assert_int_ge(ga_fw_format(GA_FW_GIT_HASH, &a[0x600 / 4], ta, sizeof(ta)), 0);
	ck_assert_str_eq(ta, "5eed5eedcafef00ddeadbeef0123456789abcdef");
	ck_assert_int_ge(ga_fw_format(GA_FW_DNA, &a[0x700 / 4], ta, sizeof(ta)), 0);
	ck_assert_str_eq(ta, "0x00000000000000404741000000000003");
	ck_assert_int_ge(ga_fw_format(GA_FW_DNA, &b[0x700 / 4], tb, sizeof(tb)), 0);
	ck_assert_str_ne(ta, tb);
	ck_assert_int_ge(ga_fw_format(GA_FW_BUILD_STAMP, &a[0x800 / 4], ta, sizeof(ta)), 0);
	ck_assert_str_eq(ta, "GpuAsyncKcu1500: gpuasync emulated card, gpuasync.ko, Built Thu Jan  "
			     "1 00:00:00 UTC 2026 by gpuasync");
	ck_assert_int_ge(ga_fw_format(GA_FW_BUILD_STAMP, &b[0x800 / 4], tb, sizeof(tb)), 0);
	ck_assert_ptr_nonnull(strstr(tb, ", libgpuasync sim, Built "));
}
END_TEST

/*
 * pyrogue's names, checked against where pyrogue itself places each
 * variable (facts from axi-pcie-core's python/axipcie/_AxiGpuAsyncCore.py
 * at a3e3fde, surf's AxiStreamMonAxiL (channel 0 at +0x00 of the monitor,
 * CntRst bit 0 at +0x00) and AxiVersion, and axi-pcie-core's
 * PcieAxiVersion for the userValues names; docs/registers.md): offset from
 * the core (or AxiVersion) base and the field's first bit.  A name on the
 * wrong row fails here; so does a pyrogue variable no row carries.
 */
START_TEST(test_pyrogue_names)
{
	static const struct {
		const char *py;
		unsigned int offset, lsb;
	} e[] = {
		{"AxiGpuAsyncCore.MaxBuffers", 0x00, 0},
		{"AxiGpuAsyncCore.AxiReadCache", 0x04, 0},
		{"AxiGpuAsyncCore.AxiWriteCache", 0x04, 8},
		{"AxiGpuAsyncCore.AxiBusWidth", 0x04, 16},
		{"AxiGpuAsyncCore.WriteCount", 0x08, 0},
		{"AxiGpuAsyncCore.WriteEnable", 0x08, 15},
		{"AxiGpuAsyncCore.ReadCount", 0x08, 16},
		{"AxiGpuAsyncCore.ReadEnable", 0x08, 31},
		{"AxiGpuAsyncCore.RxFrameCnt", 0x10, 0},
		{"AxiGpuAsyncCore.TxFrameCnt", 0x14, 0},
		{"AxiGpuAsyncCore.WriteAxiErrorCnt", 0x18, 0},
		{"AxiGpuAsyncCore.ReadAxiErrorCnt", 0x1C, 0},
		{"AxiGpuAsyncCore.CountReset", 0x20, 0},
		{"AxiGpuAsyncCore.WriteAxiErrorVal", 0x24, 0},
		{"AxiGpuAsyncCore.ReadAxiErrorVal", 0x28, 0},
		{"AxiGpuAsyncCore.VersionNumber", 0x30, 0},
		{"AxiGpuAsyncCore.AxiWriteTimeoutErrorCnt", 0x34, 0},
		{"AxiGpuAsyncCore.AxisDeMuxSelect", 0x38, 0},
		{"AxiGpuAsyncCore.MinWriteFreeList", 0x3C, 0},
		{"AxiGpuAsyncCore.MaxReadQueueList", 0x40, 0},
		{"AxiGpuAsyncCore.RemoteWriteMaxSize", 0x60, 0},
		{"AxiGpuAsyncCore.TotLatency", 0xC0, 0},
		{"AxiGpuAsyncCore.TotLatencyMax", 0xC4, 0},
		{"AxiGpuAsyncCore.TotLatencyMin", 0xC8, 0},
		{"AxiGpuAsyncCore.GpuLatency", 0xD0, 0},
		{"AxiGpuAsyncCore.GpuLatencyMax", 0xD4, 0},
		{"AxiGpuAsyncCore.GpuLatencyMin", 0xD8, 0},
		{"AxiGpuAsyncCore.WrDmaLatency", 0xE0, 0},
		{"AxiGpuAsyncCore.WrDmaLatencyMax", 0xE4, 0},
		{"AxiGpuAsyncCore.WrDmaLatencyMin", 0xE8, 0},
		{"AxiGpuAsyncCore.RdDmaLatency", 0xF0, 0},
		{"AxiGpuAsyncCore.RdDmaLatencyMax", 0xF4, 0},
		{"AxiGpuAsyncCore.RdDmaLatencyMin", 0xF8, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.CntRst", 0x100, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameCnt", 0x104, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameRate", 0x10C, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameRateMax", 0x110, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameRateMin", 0x114, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].RawBandwidth", 0x118, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].RawBandwidthMax", 0x120, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].RawBandwidthMin", 0x128, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameSize", 0x130, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameSizeMax", 0x134, 0},
		{"AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameSizeMin", 0x138, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.CntRst", 0x200, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameCnt", 0x204, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameRate", 0x20C, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameRateMax", 0x210, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameRateMin", 0x214, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.Ch[0].RawBandwidth", 0x218, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.Ch[0].RawBandwidthMax", 0x220, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.Ch[0].RawBandwidthMin", 0x228, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameSize", 0x230, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameSizeMax", 0x234, 0},
		{"AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameSizeMin", 0x238, 0},
		/* per buffer i: RemoteReadSize 0x3000+4i, the addresses 0x4000+8i
		 * and 0x6000+8i (64 bits: both of our word rows) */
		{"AxiGpuAsyncCore.Buffer[i].RemoteReadSize", 0x3000, 0},
		{"AxiGpuAsyncCore.Buffer[i].RemoteWriteAddress", 0x4000, 0},
		{"AxiGpuAsyncCore.Buffer[i].RemoteReadAddress", 0x6000, 0},
	};
	static const struct {
		const char *py;
		unsigned int offset, lsb;
	} fw[] = {
		{"AxiVersion.FpgaVersion", 0x000, 0},
		{"AxiVersion.ScratchPad", 0x004, 0},
		{"AxiVersion.UpTimeCnt", 0x008, 0},
		{"AxiVersion.DMA_SIZE_G", 0x400, 0},
		{"AxiVersion.Reserved", 0x404, 0},
		{"AxiVersion.DRIVER_TYPE_ID_G", 0x408, 0},
		{"AxiVersion.XIL_DEVICE_G", 0x40C, 0},
		{"AxiVersion.DMA_CLK_FREQ_C", 0x410, 0},
		{"AxiVersion.BOOT_PROM_G", 0x414, 0},
		{"AxiVersion.DMA_AXIS_CONFIG_G_TDATA_BYTES_C", 0x418, 24},
		{"AxiVersion.DMA_AXIS_CONFIG_G_TDEST_BITS_C", 0x418, 20},
		{"AxiVersion.DMA_AXIS_CONFIG_G_TUSER_BITS_C", 0x418, 16},
		{"AxiVersion.DMA_AXIS_CONFIG_G_TID_BITS_C", 0x418, 12},
		{"AxiVersion.DMA_AXIS_CONFIG_G_TKEEP_MODE_C", 0x418, 8},
		{"AxiVersion.DMA_AXIS_CONFIG_G_TUSER_MODE_C", 0x418, 4},
		{"AxiVersion.DMA_AXIS_CONFIG_G_TSTRB_EN_C", 0x418, 1},
		{"AxiVersion.AppReset", 0x418, 0},
		{"AxiVersion.AXI_PCIE_CONFIG_C_ADDR_WIDTH_C", 0x41C, 24},
		{"AxiVersion.AXI_PCIE_CONFIG_C_DATA_BYTES_C", 0x41C, 16},
		{"AxiVersion.AXI_PCIE_CONFIG_C_ID_BITS_C", 0x41C, 8},
		{"AxiVersion.AXI_PCIE_CONFIG_C_LEN_BITS_C", 0x41C, 0},
		{"AxiVersion.AppClkFreq", 0x420, 0},
		{"AxiVersion.PCIE_HW_TYPE_G", 0x424, 0},
		{"AxiVersion.DataGpuEn", 0x428, 0},
		{"AxiVersion.DeviceId", 0x500, 0},
		{"AxiVersion.GitHash", 0x600, 0},
		{"AxiVersion.DeviceDna", 0x700, 0},
		{"AxiVersion.BuildStamp", 0x800, 0},
	};
	unsigned int named = 0;

	for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++) {
		unsigned int hits = 0;

		for (unsigned int id = 0; id < GA_REG_COUNT; id++) {
			const struct ga_reg_loc *l = &ga_regs[id].loc[GA_LAYOUT_V4];

			if (strcmp(ga_regs[id].pyrogue, e[k].py))
				continue;
			hits++;
			ck_assert_msg(l->present, "%s: %s absent in V4", e[k].py, ga_regs[id].name);
			/* the address rows: low word at the fact's offset, high at +4 */
			ck_assert_msg(l->offset == e[k].offset || l->offset == e[k].offset + 4,
				      "%s is %s at %#x, pyrogue has %#x", e[k].py, ga_regs[id].name,
				      l->offset, e[k].offset);
			ck_assert_msg(l->lsb == e[k].lsb, "%s: bit %u, pyrogue %u", e[k].py, l->lsb,
				      e[k].lsb);
		}
		ck_assert_msg(hits >= 1, "no row carries pyrogue's %s", e[k].py);
	}
	/* every name a row carries is one of the facts above (none made up) */
	for (unsigned int id = 0; id < GA_REG_COUNT; id++) {
		bool known = !ga_regs[id].pyrogue[0];

		for (size_t k = 0; !known && k < sizeof(e) / sizeof(e[0]); k++)
			known = !strcmp(ga_regs[id].pyrogue, e[k].py);
		ck_assert_msg(known, "%s: pyrogue name %s is not in the facts", ga_regs[id].name,
			      ga_regs[id].pyrogue);
		named += ga_regs[id].pyrogue[0] != 0;
	}
	/* the address rows are two words each: two rows for each of the two */
	ck_assert_uint_eq(named, sizeof(e) / sizeof(e[0]) + 2);
	for (size_t k = 0; k < sizeof(fw) / sizeof(fw[0]); k++) {
		unsigned int id;

		for (id = 0; id < GA_FW_COUNT; id++)
			if (ga_fw_fields[id].pyrogue && !strcmp(ga_fw_fields[id].pyrogue, fw[k].py))
				break;
		ck_assert_msg(id < GA_FW_COUNT, "no firmware row carries %s", fw[k].py);
		ck_assert_uint_eq(ga_fw_fields[id].offset, fw[k].offset);
		ck_assert_uint_eq(ga_fw_fields[id].lsb, fw[k].lsb);
	}
	/* and every firmware row that names one is one of them: pyrogue reads
	 * each such file; the two words pyrogue has no variable for are the
	 * SysMon flag and the memory-map version (userValues[11], [63]) */
	unsigned int unnamed = 0;

	for (unsigned int id = 0; id < GA_FW_COUNT; id++)
		unnamed += !ga_fw_fields[id].pyrogue;
	ck_assert_uint_eq(unnamed, 2);
	ck_assert_ptr_null(ga_fw_fields[GA_FW_GEN_SYSMON].pyrogue);
	ck_assert_ptr_null(ga_fw_fields[GA_FW_MEMORY_MAP_VERSION].pyrogue);
	ck_assert_uint_eq(sizeof(fw) / sizeof(fw[0]), GA_FW_COUNT - unnamed);
}
END_TEST

static const char *fw_text(enum ga_fw_id id, const uint32_t *w)
{
	static char buf[GA_FW_TEXT_MAX];

	ck_assert_int_ge(ga_fw_format(id, w, buf, sizeof(buf)), 0);
	return buf;
}

/* How each kind reads, as pyrogue and /proc/datadev_N show them. */
START_TEST(test_fw_format)
{
	/* GitHash: a 160-bit number, word 0 least significant; pyrogue's
	 * GitHashShort is its top 7 hex digits (>> 132); 0 means dirty. */
	static const uint32_t git[5] = {0x55667788, 0x11223344, 0xccddeeff, 0x8899aabb, 0xa1b2c3d4};
	static const uint32_t zero[64];
	static const uint32_t dna[4] = {0x89abcdef, 0x01234567, 0x00000001, 0x00000000};
	uint32_t stamp[64];
	uint32_t w[1];
	char small[8];
	const char *s;

	s = fw_text(GA_FW_GIT_HASH, git);
	ck_assert_str_eq(s, "a1b2c3d48899aabbccddeeff1122334455667788");
	ck_assert(!strncmp(s, "a1b2c3d", 7));
	ck_assert_str_eq(fw_text(GA_FW_GIT_HASH, zero), "dirty");
	/* DeviceDna: 128 bits, "0x" and 32 hex digits (/proc/datadev_N) */
	ck_assert_str_eq(fw_text(GA_FW_DNA, dna), "0x00000000000000010123456789abcdef");
	/* BuildStamp: bytes in address order, NUL-terminated, padding dropped */
	memset(stamp, 0, sizeof(stamp));
	memcpy(stamp, "Img: env, srv, Built today by me    ", 36);
	ck_assert_str_eq(fw_text(GA_FW_BUILD_STAMP, stamp), "Img: env, srv, Built today by me");
	memset(stamp, 'x', sizeof(stamp)); /* all 256 bytes used: no NUL */
	ck_assert_uint_eq(strlen(fw_text(GA_FW_BUILD_STAMP, stamp)), 256);
	/* hardware type: userValues[9] bits 11:0 only (15:12 are the
	 * bifurcation index), three hex digits */
	w[0] = 0x0000f0a5;
	ck_assert_str_eq(fw_text(GA_FW_HARDWARE_TYPE, w), "0x0a5");
	w[0] = 0xfffffffe;
	ck_assert_str_eq(fw_text(GA_FW_GPU_ENABLE, w), "0");
	w[0] = 250000000;
	ck_assert_str_eq(fw_text(GA_FW_DMA_CLOCK_HZ, w), "250000000");
	w[0] = 0x02080100;
	ck_assert_str_eq(fw_text(GA_FW_FPGA_VERSION, w), "0x02080100");
	w[0] = 0xffffffff;
	ck_assert_str_eq(fw_text(GA_FW_UPTIME, w), "4294967295");
	/* too small a buffer: -ENOSPC, still terminated */
	ck_assert_int_eq(ga_fw_format(GA_FW_GIT_HASH, git, small, sizeof(small)), -ENOSPC);
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
}
END_TEST

static Suite *regs_suite(void)
{
	Suite *s = suite_create("regs");

	suite_add_tests(s, "table", 0,
			SUITE_TESTS({test_names}, {test_enum_and_lookup}, {test_bits_and_offsets},
				    {test_every_row_somewhere}, {test_no_overlap}, {test_views},
				    {test_columns}, {test_layout_for_version}, {test_version_rows},
				    {test_field_write}, {test_version_gating}, {test_absent_enoent},
				    {test_per_buffer_offsets}, {test_per_buffer_facts},
				    {test_fields}));
	suite_add_tests(s, "facts", 0,
			SUITE_TESTS({test_fw_facts}, {test_fw_image}, {test_fw_emulated},
				    {test_pyrogue_names}, {test_fw_format}, {test_facts_v1},
				    {test_facts_v4}, {test_facts_v4_legacy}, {test_facts_access},
				    {test_facts_engines}, {test_facts_settings}));
	return s;
}

int main(void)
{
	return run_suite(regs_suite());
}
