/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The GpuAsyncCore register map: one table, every field once.
 *
 * gpuasync/registers.def is the only place that knows an offset.  It expands
 * into the enum of register ids, the table of struct ga_reg rows (lib and
 * kmod), the files under registers/ and buffers/<i>/, the metrics names,
 * the generated README and the table tests.  Adding a register is adding
 * one row.
 *
 * Layouts (which versions use which: versions.def; their names and
 * the buffers each holds: ga_layout_name, ga_layout_max_buffers):
 *   GA_LAYOUT_V1         the first map, one 4 KiB block
 *   GA_LAYOUT_V4         the V4 map, firmware since 2026-03-20: latency
 *                        block at 0xC0..0xF8 with max/min and read DMA
 *   GA_LAYOUT_V4_LEGACY  the V4 map as the upstream driver headers still
 *                        describe it: latencies at 0x48/0x50/0x58 only
 * Both V4 layouts report the same version, so the choice between them is a
 * setting (config "latency_block", sim option "latency=legacy"), never a
 * guess.
 *
 * Row columns:
 *   id, "name", access, format, flags, array,
 *   loc(V1), loc(V4), loc(V4_LEGACY), min_version, "unit", "one-line doc",
 *   "pyrogue variable" (docs/registers.md lists what pyrogue has that we lack),
 *   how pyrogue displays it (enum ga_py_disp; GA_PY_ENUM rows then name
 *   the values 0 and 1)
 * loc is GA_LOC(offset, lsb, msb, stride) or GA_NA.  For per-buffer rows (array !=
 * GA_ARRAY_NONE) the instance i lives at offset + i * stride; stride 0 means
 * only buffer 0 is measured in that layout (V4 latencies).
 *
 * Offsets are relative to the GpuAsyncCore block (BAR0 + GA_CORE_OFFSET).
 * This header is plain C usable from the kernel (kmod/) too.
 */
#ifndef GPUASYNC_REGS_H
#define GPUASYNC_REGS_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#endif

enum ga_layout {
	GA_LAYOUT_V1,
	GA_LAYOUT_V4,
	GA_LAYOUT_V4_LEGACY,
	GA_LAYOUT_COUNT
};

/*
 * What each firmware version has (docs/firmware.md §2.2-2.4, §4): the one
 * place that knows which versions exist.  Columns:
 *   version, layout, legacy (the layout config "latency_block=legacy"
 *   picks; the same layout where there is no choice), quiesce_wait_ms,
 *   quiesce_poll_ms, "what it added"
 * Quiesce rule, before memory the card may still write into is freed:
 * a version that reports engine activity (write/read_active) is polled
 * until both bits clear, for at most quiesce_poll_ms; one that cannot say
 * gets a fixed wait of quiesce_wait_ms, as the reference driver does.
 * Rows run 1, 2, 3, ... without gaps; the last is the newest version we
 * know, and anything above it is refused everywhere.  A new version on an
 * existing layout is one row here (plus min_version on the registers it
 * adds).  Buffer limits and the identity fields (version, max_buffers,
 * dma_data_bytes: GA_F_WIDE_ID rows) follow from the layout.
 */
/* The rows: gpuasync/versions.def (GA_DEF_VERSION(...) each). */

struct ga_version {
	uint8_t version;
	enum ga_layout layout;
	enum ga_layout layout_legacy;
	uint16_t quiesce_wait_ms; /* cannot report activity: fixed wait */
	uint16_t quiesce_poll_ms; /* reports activity: poll at most this long */
	const char *doc;
};

/* Counts the rows: GA_VERSION_ROWS is how many there are. */
enum ga_version_rows {
#define GA_VERSION_ENUM(v, ...) GA_VERSION_ROW_##v,
#define GA_DEF_VERSION GA_VERSION_ENUM
#include <gpuasync/versions.def>
#undef GA_VERSION_ENUM
	GA_VERSION_ROWS
};
/* The newest firmware version known (rows are 1..GA_VERSION_MAX). */
#define GA_VERSION_MAX GA_VERSION_ROWS
/* The firmware version the emulated cards run unless told otherwise (the
 * sim's version=, gpuasyncfs's sim_version, gpuasync.ko's emulate_version):
 * a plain number, so the module's parameter text can name it. */
#define GA_VERSION_EMULATED 4

/* Indexed by version - 1 (defined in core/regs.c). */
extern const struct ga_version ga_versions[GA_VERSION_MAX];

/* The row of firmware @version, or NULL when it is not one we know. */
const struct ga_version *ga_version_find(unsigned int version);


enum ga_access {
	GA_RO, /* read-only: registers/<name> is 0444 */
	GA_RW, /* read-write: 0644, read-modify-write of the field */
	GA_WO, /* write-only strobe: 0200, any write triggers */
};

enum ga_format {
	GA_FMT_DEC,
	GA_FMT_HEX,
	GA_FMT_BOOL,
};

/* Row flags: how monitoring and the filesystem should treat the value. */
#define GA_F_COUNTER 0x01  /* monotonic event counter: metrics "_total" */
#define GA_F_CYCLES 0x02   /* clock cycles: metrics in seconds via clock_hz */
#define GA_F_DRIVER 0x04   /* programmed by the driver when buffers change */
#define GA_F_BYTES 0x08    /* a size in bytes */
#define GA_F_TRIGGER 0x10  /* RW, but every write also triggers an action */
#define GA_F_WIDE_ID 0x20  /* identity/config, not live state */
/* An engine enable: switched through ga_dev_enable(), which uses the
 * driver's enable ioctl where it has one, not a raw field write;
 * ga_reg_write() of such a row does the same. */
#define GA_F_ENGINE_WRITE 0x40 /* FPGA->GPU (firmware write engine) */
#define GA_F_ENGINE_READ 0x80  /* GPU->FPGA (firmware read engine) */
/* A 64-bit value: the row's word holds the low half, the next word (offset
 * + 4) the high half; loc is the low word (lsb 0, msb 31).  Read it whole
 * with ga_reg_read64; ga_reg_read gives it only while it fits 32 bits. */
#define GA_F_U64 0x100
/* A count shown as field + 1: the firmware keeps the index of a ring's last
 * entry (count - 1).  Such a row is a read-only second view of the same
 * bits as the raw row (write_count -> write_buffers), never a field of its
 * own; the table tests check that it shadows exactly one raw row. */
#define GA_F_PLUS_ONE 0x200
/* A stream monitor's counter reset (AxiStreamMonAxiL config bit 0): the
 * library strobes every such row whenever count_reset is written, as
 * pyrogue's countReset resets every device below the root. */
#define GA_F_WITH_COUNT_RESET 0x400
/* A running minimum that count_reset sets to all ones (V4 latency mins,
 * facts sheet 3.4): all ones means no sample since, not a value. */
#define GA_F_RUNNING_MIN 0x800
/* Reset values and what count_reset does (docs/firmware.md §2.3, §2.4,
 * §3.4); every other field powers on as 0 and count_reset leaves it. */
#define GA_F_RESET_ONE 0x1000     /* powers on as 1, not 0 */
#define GA_F_COUNT_CLEARED 0x2000 /* count_reset sets it to 0 */
/* A watermark: count_reset restarts it from the present state. */
#define GA_F_WATERMARK 0x4000

enum ga_array {
	GA_ARRAY_NONE,  /* a scalar: registers/<name> */
	GA_ARRAY_WRITE, /* one per FPGA->GPU (write) buffer: buffers/<i>/ */
	GA_ARRAY_READ,  /* one per GPU->FPGA (read) buffer: read_buffers/<i>/ */
};

struct ga_reg_loc {
	uint16_t offset;
	uint8_t lsb, msb;
	uint16_t stride;
	uint8_t present;
};

#define GA_LOC(off, lsb, msb, stride) { (off), (lsb), (msb), (stride), 1 }
#define GA_NA { 0, 0, 0, 0, 0 }

/* The rows: gpuasync/registers.def (GA_DEF_REGISTER(...) each). */

enum ga_reg_id {
#define GA_REG_ENUM(id, ...) GA_REG_##id,
#define GA_DEF_REGISTER GA_REG_ENUM
#include <gpuasync/registers.def>
#undef GA_REG_ENUM
	GA_REG_COUNT
};

/* How pyrogue shows a variable (rogue's YAML and state.yaml say it the same
 * way): axi-pcie-core's _AxiGpuAsyncCore.py gives disp '{}' (decimal), no
 * disp on a UInt (hex) or enum names; surf's AxiStreamMonAxiL a UInt
 * FrameCnt and, beside each RawBandwidth*, a Bandwidth* in Mbps. */
enum ga_py_disp {
	GA_PY_FORMAT, /* as the row's format: hex, True/False, decimal */
	GA_PY_DEC,
	GA_PY_HEX,
	GA_PY_ENUM, /* py_names[0] for 0, py_names[1] for 1 */
	GA_PY_MBPS, /* hex, then the LinkVariable: the name less "Raw", in Mbps */
};

struct ga_reg {
	const char *name;
	enum ga_access access;
	enum ga_format format;
	unsigned int flags;
	enum ga_array array;
	struct ga_reg_loc loc[GA_LAYOUT_COUNT];
	uint8_t min_version;
	const char *unit;
	const char *doc;
	/* The variable rogue's pyrogue tree (axi-pcie-core's AxiPcieCore)
	 * names this field, relative to AxiPcieCore ("AxiGpuAsyncCore.
	 * RxFrameCnt"; "[i]" for per-buffer rows); "" when pyrogue has none. */
	const char *pyrogue;
	enum ga_py_disp py_disp;
	const char *py_names[2];
};

/* The table, indexed by enum ga_reg_id (defined in core/regs.c). */
extern const struct ga_reg ga_regs[GA_REG_COUNT];

/* Firmware version -> layout (latency_legacy picks the row's legacy
 * layout); GA_LAYOUT_COUNT for a version not in versions.def, which every
 * function below then refuses. */
enum ga_layout ga_layout_for_version(unsigned int version, bool latency_legacy);
const char *ga_layout_name(enum ga_layout layout);
/* Buffers per direction the layout's address map can hold (0 for
 * GA_LAYOUT_COUNT); ga_reg_offset never goes past it, whatever
 * max_buffers says. */
unsigned int ga_layout_max_buffers(enum ga_layout layout);

/* Is register @id part of firmware @version in @layout?  Never for a
 * version above GA_VERSION_MAX. */
bool ga_reg_present(enum ga_reg_id id, enum ga_layout layout,
		    unsigned int version);

/*
 * Is register @id a setting: a single read-write field that configures the
 * card (what settings, settings.yaml and rogue's YAML save and restore),
 * not the driver's plumbing, a strobe or an engine switch?  On any firmware
 * that has it (ga_reg_present says which).
 */
bool ga_reg_is_setting(enum ga_reg_id id);

/*
 * Byte offset of instance @index of @id.  Returns 0, or -ENOENT when the
 * register is absent from the layout/version, -ERANGE when @index is not an
 * instance that exists (index >= max_buffers, or != 0 for stride-0 rows).
 */
int ga_reg_offset(enum ga_reg_id id, enum ga_layout layout, unsigned int version,
		  unsigned int index, unsigned int max_buffers, uint32_t *offset);

/*
 * The field accessor (regmap's reg_field in spirit): the one way lib, kmod
 * and the model write a field.  The value is checked before anything is
 * touched: one that does not fit the field is -ERANGE (a number outside
 * the field's range, as the library has always answered and as a file
 * under registers/ reports it; -EINVAL stays for input that is not a
 * number at all), and nothing is written.  Then the field goes into its
 * word: a strobe (GA_WO) or a whole-word field is one store, anything else
 * a read-modify-write.  Callers serialise writers of a shared word.  Where
 * the word has a writer the caller cannot serialise with (the driver, which
 * updates the control word's counts), @write_masked, when set, changes only
 * the field's bits in one step; -EOPNOTSUPP from it means "not here", and
 * the read-modify-write follows.
 */
struct ga_reg_io {
	void *ctx;
	int (*read)(void *ctx, uint32_t offset, uint32_t *word);
	int (*write)(void *ctx, uint32_t offset, uint32_t word);
	int (*write_masked)(void *ctx, uint32_t offset, uint32_t mask, uint32_t word);
};

/* @value into the bits @mask (lowest at @lsb) of *@word: 0, or -ERANGE
 * with *@word unchanged.  The step ga_field_write and the model share. */
static inline int ga_field_insert(uint32_t *word, uint32_t mask, unsigned int lsb, uint32_t value)
{
	if (value > (mask >> lsb))
		return -ERANGE;
	*word = (*word & ~mask) | (value << lsb);
	return 0;
}

/* Write @value into field @id of the word at @offset (from ga_reg_offset):
 * 0, -ERANGE (does not fit, nothing written), -ENOENT (no field in this
 * layout), or the io's error. */
int ga_field_write(const struct ga_reg_io *io, enum ga_reg_id id, enum ga_layout layout,
		   uint32_t offset, uint32_t value);
/* Read field @id of the word at @offset. */
int ga_field_read(const struct ga_reg_io *io, enum ga_reg_id id, enum ga_layout layout,
		  uint32_t offset, uint32_t *value);

/* Field helpers: extract/insert the field bits of a 32-bit word.
 * ga_reg_field_set composes a word for a value known to fit (tests, raw
 * word tools): it drops bits beyond the field; writes go through
 * ga_field_write, which refuses them. */
uint32_t ga_reg_field_mask(enum ga_reg_id id, enum ga_layout layout);
uint32_t ga_reg_field_get(enum ga_reg_id id, enum ga_layout layout, uint32_t word);
uint32_t ga_reg_field_set(enum ga_reg_id id, enum ga_layout layout, uint32_t word,
			  uint32_t value);
/* Largest value the field can hold. */
uint32_t ga_reg_field_max(enum ga_reg_id id, enum ga_layout layout);

/* Lookup by name (file name under registers/): id, or -ENOENT. */
int ga_reg_find(const char *name);

#endif /* GPUASYNC_REGS_H */
