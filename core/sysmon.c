// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Card telemetry (gpuasync/sysmon.h): the memory-map version check, the
 * SysMon presence gate, the code <-> milli-unit conversions and the SysMon
 * model both emulated cards run.  gpuasync/sysmon.def is expanded here into
 * the tables; nothing else here knows an offset or a constant.
 */
#include "ga_base.h"
#include "gpuasync/axiversion.h"
#include "gpuasync/sysmon.h"

const struct ga_sysmon_family_row ga_sysmon_families[GA_SYSMON_FAMILY_COUNT] = {
#define GA_SYSMON_FAMILY_ROW(id, name_, prim, num, off, full)                                      \
	[GA_SYSMON_##id] = {                                                                       \
		.name = name_, .primitive = prim, .t_num = num, .t_off = off, .v_full = full},
#define GA_DEF_SYSMON_FAMILY GA_SYSMON_FAMILY_ROW
#include <gpuasync/sysmon.def>
#undef GA_SYSMON_FAMILY_ROW
};

const struct ga_sysmon_sensor_row ga_sysmon_sensors[GA_SYSMON_SENSOR_COUNT] = {
#define GA_SYSMON_SENSOR_ROW(id, kind_, hwmon_, label_, value_, highest_, lowest_, init_)          \
	[GA_SYSMON_##id] = {.hwmon = hwmon_,                                                       \
			    .label = label_,                                                       \
			    .kind = kind_,                                                         \
			    .value = value_,                                                       \
			    .highest = highest_,                                                   \
			    .lowest = lowest_,                                                     \
			    .init = init_},
#define GA_DEF_SYSMON_SENSOR GA_SYSMON_SENSOR_ROW
#include <gpuasync/sysmon.def>
#undef GA_SYSMON_SENSOR_ROW
};

const struct ga_sysmon_limit_row ga_sysmon_limits[GA_SYSMON_LIMIT_COUNT] = {
#define GA_SYSMON_LIMIT_ROW(id, sensor_, side_, hwmon_, offset_, init_)                            \
	[GA_SYSMON_##id] = {.sensor = GA_SYSMON_##sensor_,                                         \
			    .side = GA_SYSMON_SIDE_##side_,                                        \
			    .hwmon = hwmon_,                                                       \
			    .offset = offset_,                                                     \
			    .init = init_},
#define GA_DEF_SYSMON_LIMIT GA_SYSMON_LIMIT_ROW
#include <gpuasync/sysmon.def>
#undef GA_SYSMON_LIMIT_ROW
};

static const struct {
	uint16_t code;
	uint8_t family;
} hw_types[] = {
#define GA_SYSMON_HWTYPE_ROW(code_, family_) {.code = code_, .family = GA_SYSMON_##family_},
#define GA_DEF_SYSMON_HWTYPE		     GA_SYSMON_HWTYPE_ROW
#include <gpuasync/sysmon.def>
#undef GA_SYSMON_HWTYPE_ROW
};

/* Rows in version order from 0 (the enum is made from the same rows). */
static const bool memmap_sysmon[GA_MEMMAP_COUNT] = {
#define GA_MEMMAP_ROW(v, sysmon, doc) (sysmon),
#define GA_DEF_MEMMAP		      GA_MEMMAP_ROW
#include <gpuasync/sysmon.def>
#undef GA_MEMMAP_ROW
};

static_assert(GA_SYSMON_SINCE_MAP <= GA_MEMMAP_NEWEST, "the block needs a known map version");
static_assert(GA_SYSMON_WORDS * 4 <= GA_SYSMON_SIZE, "the model's words lie in the block");
/* The refusal below names the newest version: keep it in step with sysmon.def. */
static_assert(GA_MEMMAP_NEWEST == 1, "update ga_memmap_refused's sentence");

const char *ga_sysmon_side_name(unsigned int l)
{
	static const char *const name[] = {
		[GA_SYSMON_SIDE_MAX] = "max",
		[GA_SYSMON_SIDE_CRIT] = "critical",
		[GA_SYSMON_SIDE_MIN] = "min",
	};

	return l < GA_SYSMON_LIMIT_COUNT ? name[ga_sysmon_limits[l].side] : "";
}

bool ga_sysmon_beyond(unsigned int l, int32_t value, int32_t limit)
{
	if (l >= GA_SYSMON_LIMIT_COUNT)
		return false;
	return ga_sysmon_limits[l].side == GA_SYSMON_SIDE_MIN ? value < limit : value > limit;
}

const char *ga_memmap_refused(uint32_t version)
{
	if (version <= GA_MEMMAP_NEWEST)
		return NULL;
	return "the card's BAR0 memory-map version is newer than the newest this software knows "
	       "(1): its blocks may have moved, so the card is not used; use a newer driver";
}

bool ga_memmap_has_sysmon(uint32_t version)
{
	return version <= GA_MEMMAP_NEWEST && memmap_sysmon[version];
}

int ga_sysmon_family_of(uint32_t hw_type)
{
	const struct ga_fw_field *f = &ga_fw_fields[GA_FW_HARDWARE_TYPE];
	uint32_t code = (hw_type >> f->lsb) & ((1u << (f->msb - f->lsb + 1)) - 1);
	unsigned int i;

	for (i = 0; i < sizeof(hw_types) / sizeof(hw_types[0]); i++)
		if (hw_types[i].code == code)
			return hw_types[i].family;
	return -EOPNOTSUPP;
}

/* Row @id's field from its word, as read through @read. */
static uint32_t fw_field(ga_sysmon_read_fn read, void *ctx, enum ga_fw_id id)
{
	const struct ga_fw_field *f = &ga_fw_fields[id];
	uint32_t v = read(ctx, f->offset) >> f->lsb;

	return f->msb - f->lsb == 31 ? v : v & ((1u << (f->msb - f->lsb + 1)) - 1);
}

int ga_sysmon_probe(ga_sysmon_read_fn read, void *ctx, const char **why)
{
	uint32_t map = fw_field(read, ctx, GA_FW_MEMORY_MAP_VERSION);
	const char *dummy;
	int family;

	if (!why)
		why = &dummy;
	*why = ga_memmap_refused(map);
	if (*why)
		return -EPFNOSUPPORT;
	if (!ga_memmap_has_sysmon(map)) {
		*why = "memory-map version 0: no SysMon block";
		return -ENODEV;
	}
	if (!fw_field(read, ctx, GA_FW_GEN_SYSMON)) {
		*why = "the image was built without SysMon (GEN_SYSMON_G clear)";
		return -ENODEV;
	}
	switch (fw_field(read, ctx, GA_FW_XIL_DEVICE)) {
	case 0: /* UltraScale or UltraScale+: the board type tells which */
		break;
	case 1:
		*why = "a 7-series FPGA: its XADC is not supported";
		return -EOPNOTSUPP;
	default:
		*why = "an FPGA family without a known SysMon";
		return -EOPNOTSUPP;
	}
	family = ga_sysmon_family_of(fw_field(read, ctx, GA_FW_HARDWARE_TYPE));
	*why = family < 0 ? "a board type without a known SysMon family" : NULL;
	return family;
}

int32_t ga_sysmon_to_milli(enum ga_sysmon_family f, enum ga_sysmon_kind k, uint32_t raw)
{
	const struct ga_sysmon_family_row *r = &ga_sysmon_families[f];

	raw &= 0xffff;
	if (k == GA_SYSMON_MV)
		return (int32_t)(((uint64_t)raw * r->v_full) >> 16);
	return (int32_t)(((uint64_t)raw * r->t_num) >> 16) - (int32_t)r->t_off;
}

int ga_sysmon_from_milli(enum ga_sysmon_family f, enum ga_sysmon_kind k, int32_t milli,
			 uint32_t *raw)
{
	const struct ga_sysmon_family_row *r = &ga_sysmon_families[f];
	uint32_t num = k == GA_SYSMON_MV ? r->v_full : r->t_num;
	int64_t scaled = (int64_t)milli + (k == GA_SYSMON_MV ? 0 : r->t_off);
	uint64_t code;

	if ((unsigned int)f >= GA_SYSMON_FAMILY_COUNT || scaled < 0)
		return -ERANGE;
	/* the smallest code whose (truncating) conversion reaches @milli */
	code = ((uint64_t)scaled * 65536 + num - 1) / num;
	if (code > 0xffff)
		return -ERANGE;
	*raw = (uint32_t)code;
	return 0;
}

/* ---- the model -------------------------------------------------------------------------- */

static uint32_t word(const struct ga_sysmon *s, uint32_t off)
{
	return off / 4 < GA_SYSMON_WORDS ? s->regs[off / 4] : 0;
}

/* The alarm word: its bit is 1 while the sensor's code is above the limit's. */
static void update_alarm(struct ga_sysmon *s)
{
	const struct ga_sysmon_limit_row *l = &ga_sysmon_limits[GA_SYSMON_ALARM_LIMIT];
	uint32_t v = s->regs[ga_sysmon_sensors[l->sensor].value / 4];
	uint32_t a = s->regs[GA_SYSMON_ALARM_OFFSET / 4] & ~(1u << GA_SYSMON_ALARM_BIT);

	if (v > s->regs[l->offset / 4])
		a |= 1u << GA_SYSMON_ALARM_BIT;
	s->regs[GA_SYSMON_ALARM_OFFSET / 4] = a;
}

/* A new code for @sensor: value, then highest and lowest, as a conversion. */
static void put_code(struct ga_sysmon *s, enum ga_sysmon_sensor sensor, uint32_t code)
{
	const struct ga_sysmon_sensor_row *r = &ga_sysmon_sensors[sensor];

	s->regs[r->value / 4] = code;
	if (code > s->regs[r->highest / 4])
		s->regs[r->highest / 4] = code;
	if (code < s->regs[r->lowest / 4])
		s->regs[r->lowest / 4] = code;
	update_alarm(s);
}

void ga_sysmon_reset_extremes(struct ga_sysmon *s)
{
	unsigned int i;

	for (i = 0; i < GA_SYSMON_SENSOR_COUNT; i++) {
		const struct ga_sysmon_sensor_row *r = &ga_sysmon_sensors[i];

		s->regs[r->highest / 4] = s->regs[r->value / 4];
		s->regs[r->lowest / 4] = s->regs[r->value / 4];
	}
}

void ga_sysmon_init(struct ga_sysmon *s, volatile uint32_t *regs, enum ga_sysmon_family family)
{
	unsigned int i;
	uint32_t code;

	s->regs = regs;
	s->family = family;
	for (i = 0; i < GA_SYSMON_WORDS; i++)
		regs[i] = 0;
	for (i = 0; i < GA_SYSMON_LIMIT_COUNT; i++) {
		const struct ga_sysmon_limit_row *l = &ga_sysmon_limits[i];

		if (!ga_sysmon_from_milli(family, ga_sysmon_sensors[l->sensor].kind, l->init,
					  &code))
			regs[l->offset / 4] = code;
	}
	for (i = 0; i < GA_SYSMON_SENSOR_COUNT; i++) {
		const struct ga_sysmon_sensor_row *r = &ga_sysmon_sensors[i];

		if (!ga_sysmon_from_milli(family, r->kind, r->init, &code))
			regs[r->value / 4] = code;
	}
	ga_sysmon_reset_extremes(s);
	update_alarm(s);
}

int ga_sysmon_set_milli(struct ga_sysmon *s, enum ga_sysmon_sensor sensor, int32_t milli)
{
	uint32_t code;
	int ret;

	if ((unsigned int)sensor >= GA_SYSMON_SENSOR_COUNT)
		return -EINVAL;
	ret = ga_sysmon_from_milli(s->family, ga_sysmon_sensors[sensor].kind, milli, &code);
	if (ret)
		return ret;
	put_code(s, sensor, code);
	return 0;
}

int ga_sysmon_set_temperature_mC(struct ga_sysmon *s, int32_t mC)
{
	return ga_sysmon_set_milli(s, GA_SYSMON_TEMP, mC);
}

int32_t ga_sysmon_get_milli(const struct ga_sysmon *s, enum ga_sysmon_sensor sensor)
{
	const struct ga_sysmon_sensor_row *r = &ga_sysmon_sensors[sensor];

	return ga_sysmon_to_milli(s->family, r->kind, word(s, r->value));
}

void ga_sysmon_write(struct ga_sysmon *s, uint32_t off, uint32_t val)
{
	unsigned int i;

	for (i = 0; i < GA_SYSMON_LIMIT_COUNT; i++)
		if (ga_sysmon_limits[i].offset == off) {
			s->regs[off / 4] = val & 0xffff;
			update_alarm(s);
		}
}
