/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Card telemetry: the BAR0 memory-map version and the AxiSysMon block
 * (docs/firmware.md §2.6), from the one table gpuasync/sysmon.def.  Plain
 * C usable from the kernel (kmod/) too; no libc.
 *
 * API (all offsets from the SysMon block, GA_SYSMON_BASE):
 *
 *   Memory-map version (AxiVersion userValues[63], firmware.def's
 *   memory_map_version row):
 *     ga_memmap_refused(version)    NULL when known, else why it is refused
 *                                   (newer than GA_MEMMAP_NEWEST): print it
 *                                   and fail with -EPFNOSUPPORT
 *     ga_memmap_has_sysmon(version) the map places the block at 0x24000
 *
 *   Presence: ga_sysmon_probe(read, ctx, &why) reads the AxiVersion words
 *   it needs through read(ctx, offset from GA_FW_BASE) and returns the
 *   family (GA_SYSMON_US or GA_SYSMON_USP) or a negative errno with a
 *   sentence in *why: -EPFNOSUPPORT map version too new, -ENODEV no SysMon
 *   (map version 0, GEN_SYSMON_G clear), -EOPNOTSUPP 7-series or unknown
 *   board type.
 *
 *   Conversions: ga_sysmon_to_milli(family, kind, raw) gives millidegrees C
 *   (GA_SYSMON_MC) or millivolts (GA_SYSMON_MV) from a register;
 *   ga_sysmon_from_milli() is its inverse (the smallest code that converts
 *   to at least the value; -ERANGE outside the 16-bit code's range).
 *
 *   The model both emulated cards run (host holds its own lock around
 *   every call; @regs is the host's GA_SYSMON_WORDS words of the block):
 *     ga_sysmon_init(s, regs, family)         power-up: the table's init
 *                                             values, highest = lowest = them
 *     ga_sysmon_set_temperature_mC(s, mC)     0 or -ERANGE (nothing changed)
 *     ga_sysmon_set_milli(s, sensor, value)   any sensor, mC or mV; same
 *     ga_sysmon_get_milli(s, sensor)          the value its register holds
 *     ga_sysmon_write(s, off, val)            a write the host saw: limits
 *                                             are kept (16 bits), the rest
 *                                             is read-only and ignored
 *     ga_sysmon_reset_extremes(s)             highest/lowest restart from now
 *   Highest and lowest follow every set, as SysMon's min/max registers
 *   follow every conversion; the alarm bit (GA_SYSMON_ALARM_*) is 1 while
 *   the temperature is above the critical limit.
 */
#ifndef GPUASYNC_SYSMON_H
#define GPUASYNC_SYSMON_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#endif

enum ga_sysmon_kind {
	GA_SYSMON_MC, /* millidegrees Celsius */
	GA_SYSMON_MV, /* millivolts */
};

/* What a limit row bounds (its side column). */
enum ga_sysmon_side {
	GA_SYSMON_SIDE_MAX,  /* a reading above it is out */
	GA_SYSMON_SIDE_CRIT, /* likewise, and worse than MAX */
	GA_SYSMON_SIDE_MIN,  /* a reading below it is out */
};

/* Memory-map versions: GA_MEMMAP_V0, ...; GA_MEMMAP_NEWEST the last row. */
enum ga_memmap {
#define GA_MEMMAP_ENUM(v, sysmon, doc) GA_MEMMAP_V##v,
#define GA_DEF_MEMMAP		       GA_MEMMAP_ENUM
#include <gpuasync/sysmon.def>
#undef GA_MEMMAP_ENUM
	GA_MEMMAP_COUNT
};
#define GA_MEMMAP_NEWEST (GA_MEMMAP_COUNT - 1)

/* The block (sysmon.def's block row): its BAR0 offset, bytes, and the
 * first memory-map version that has it.  One row, one column each. */
enum {
	GA_SYSMON_BASE =
#define GA_DEF_SYSMON_BLOCK(base, size, since) (base)
#include <gpuasync/sysmon.def>
};
enum {
	GA_SYSMON_SIZE =
#define GA_DEF_SYSMON_BLOCK(base, size, since) (size)
#include <gpuasync/sysmon.def>
};
enum {
	GA_SYSMON_SINCE_MAP =
#define GA_DEF_SYSMON_BLOCK(base, size, since) (since)
#include <gpuasync/sysmon.def>
};

/* The words the model keeps: every row's offset is below this. */
#define GA_SYSMON_WORDS (0x600u / 4)

enum ga_sysmon_family {
#define GA_SYSMON_FAMILY_ENUM(id, ...) GA_SYSMON_##id,
#define GA_DEF_SYSMON_FAMILY	       GA_SYSMON_FAMILY_ENUM
#include <gpuasync/sysmon.def>
#undef GA_SYSMON_FAMILY_ENUM
	GA_SYSMON_FAMILY_COUNT
};

enum ga_sysmon_sensor {
#define GA_SYSMON_SENSOR_ENUM(id, ...) GA_SYSMON_##id,
#define GA_DEF_SYSMON_SENSOR	       GA_SYSMON_SENSOR_ENUM
#include <gpuasync/sysmon.def>
#undef GA_SYSMON_SENSOR_ENUM
	GA_SYSMON_SENSOR_COUNT
};

enum ga_sysmon_limit {
#define GA_SYSMON_LIMIT_ENUM(id, ...) GA_SYSMON_##id,
#define GA_DEF_SYSMON_LIMIT	      GA_SYSMON_LIMIT_ENUM
#include <gpuasync/sysmon.def>
#undef GA_SYSMON_LIMIT_ENUM
	GA_SYSMON_LIMIT_COUNT
};

/* The alarm row: the word (from the block), its bit, the limit it watches. */
enum {
	GA_SYSMON_ALARM_OFFSET =
#define GA_DEF_SYSMON_ALARM(off, bit, limit) (off)
#include <gpuasync/sysmon.def>
};
enum {
	GA_SYSMON_ALARM_BIT =
#define GA_DEF_SYSMON_ALARM(off, bit, limit) (bit)
#include <gpuasync/sysmon.def>
};
enum {
	GA_SYSMON_ALARM_LIMIT =
#define GA_DEF_SYSMON_ALARM(off, bit, limit) (GA_SYSMON_##limit)
#include <gpuasync/sysmon.def>
};

struct ga_sysmon_family_row {
	const char *name;      /* "UltraScale" */
	const char *primitive; /* "SYSMONE1" */
	uint32_t t_num;	       /* mC = raw * t_num / 65536 - t_off */
	uint32_t t_off;
	uint32_t v_full; /* mV = raw * v_full / 65536 */
};

struct ga_sysmon_sensor_row {
	const char *hwmon; /* "temp1", "in0": the hwmon channel */
	const char *label; /* "Temperature" */
	uint8_t kind;	   /* enum ga_sysmon_kind */
	uint16_t value, highest, lowest;
	int32_t init; /* the emulated cards' power-up value, mC or mV */
};

struct ga_sysmon_limit_row {
	uint8_t sensor;	   /* enum ga_sysmon_sensor */
	uint8_t side;	   /* enum ga_sysmon_side */
	const char *hwmon; /* "temp1_crit" */
	uint16_t offset;
	int32_t init; /* the emulated cards' value */
};

extern const struct ga_sysmon_family_row ga_sysmon_families[GA_SYSMON_FAMILY_COUNT];
extern const struct ga_sysmon_sensor_row ga_sysmon_sensors[GA_SYSMON_SENSOR_COUNT];
extern const struct ga_sysmon_limit_row ga_sysmon_limits[GA_SYSMON_LIMIT_COUNT];

/* "max", "critical", "min": what limit row @l is, in words. */
const char *ga_sysmon_side_name(unsigned int l);
/* Whether @value is outside limit row @l at @limit. */
bool ga_sysmon_beyond(unsigned int l, int32_t value, int32_t limit);

/* NULL for a version this software knows, else the reason it refuses it. */
const char *ga_memmap_refused(uint32_t version);
bool ga_memmap_has_sysmon(uint32_t version);

/* The family of board type @hw_type (userValues[9]; bits 11:0 are used),
 * or -EOPNOTSUPP for a board without a supported SysMon. */
int ga_sysmon_family_of(uint32_t hw_type);

/* Reads the AxiVersion word at @off (from GA_FW_BASE). */
typedef uint32_t (*ga_sysmon_read_fn)(void *ctx, uint32_t off);
int ga_sysmon_probe(ga_sysmon_read_fn read, void *ctx, const char **why);

int32_t ga_sysmon_to_milli(enum ga_sysmon_family f, enum ga_sysmon_kind k, uint32_t raw);
int ga_sysmon_from_milli(enum ga_sysmon_family f, enum ga_sysmon_kind k, int32_t milli,
			 uint32_t *raw);

struct ga_sysmon {
	volatile uint32_t *regs; /* GA_SYSMON_WORDS words, host-owned */
	enum ga_sysmon_family family;
};

void ga_sysmon_init(struct ga_sysmon *s, volatile uint32_t *regs, enum ga_sysmon_family family);
int ga_sysmon_set_milli(struct ga_sysmon *s, enum ga_sysmon_sensor sensor, int32_t milli);
int ga_sysmon_set_temperature_mC(struct ga_sysmon *s, int32_t mC);
int32_t ga_sysmon_get_milli(const struct ga_sysmon *s, enum ga_sysmon_sensor sensor);
void ga_sysmon_write(struct ga_sysmon *s, uint32_t off, uint32_t val);
void ga_sysmon_reset_extremes(struct ga_sysmon *s);

#endif /* GPUASYNC_SYSMON_H */
