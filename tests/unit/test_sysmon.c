// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Card telemetry (core/sysmon.c): the table against the facts of
 * docs/firmware.md §2.6 (expected values from that page, not from the
 * table), the conversions at points worked out by hand, the presence gate
 * over AxiVersion words, the memory-map version check, and the SysMon model
 * both emulated cards run.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "gpuasync/axiversion.h"
#include "gpuasync/sysmon.h"
#include "common/run_suite.h"

START_TEST(test_table_facts)
{
	static const struct {
		enum ga_sysmon_sensor id;
		const char *label;
		unsigned int value, highest, lowest;
	} e[] = {
		{GA_SYSMON_TEMP, "Temperature", 0x400, 0x480, 0x490},
		{GA_SYSMON_VCCINT, "VccInt", 0x404, 0x484, 0x494},
		{GA_SYSMON_VCCAUX, "VccAux", 0x408, 0x488, 0x498},
		{GA_SYSMON_VCCBRAM, "VccBRAM", 0x418, 0x48c, 0x49c},
	};

	ck_assert_int_eq(GA_SYSMON_SENSOR_COUNT, 4);
	for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++) {
		const struct ga_sysmon_sensor_row *r = &ga_sysmon_sensors[e[k].id];

		ck_assert_str_eq(r->label, e[k].label);
		ck_assert_uint_eq(r->value, e[k].value);
		ck_assert_uint_eq(r->highest, e[k].highest);
		ck_assert_uint_eq(r->lowest, e[k].lowest);
		ck_assert_uint_lt(r->lowest, GA_SYSMON_WORDS * 4);
	}
	ck_assert_uint_eq(ga_sysmon_limits[GA_SYSMON_TEMP_MAX].offset, 0x55c);
	ck_assert_uint_eq(ga_sysmon_limits[GA_SYSMON_TEMP_CRIT].offset, 0x540);
	ck_assert_uint_eq(GA_SYSMON_BASE, 0x24000);
	ck_assert_uint_eq(GA_SYSMON_SIZE, 0x4000);
	ck_assert_int_eq(GA_MEMMAP_NEWEST, 1);
	/* the AxiVersion words: 0x400 + 4 * user value index */
	ck_assert_uint_eq(ga_fw_fields[GA_FW_MEMORY_MAP_VERSION].offset, 0x400 + 4 * 0x3f);
	ck_assert_uint_eq(ga_fw_fields[GA_FW_GEN_SYSMON].offset, 0x400 + 4 * 11);
	ck_assert_uint_eq(ga_fw_fields[GA_FW_XIL_DEVICE].offset, 0x40c);
	ck_assert_uint_eq(ga_fw_fields[GA_FW_HARDWARE_TYPE].offset, 0x400 + 4 * 9);
}
END_TEST

START_TEST(test_conversions)
{
	/* hand-worked: 40960 * 502910 / 65536 = 314318.75; 40960 * 507592 / 65536 = 317245 */
	ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_US, GA_SYSMON_MC, 0xa000), 40498);
	ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_USP, GA_SYSMON_MC, 0xa000), 37818);
	ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_US, GA_SYSMON_MC, 0), -273820);
	ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_USP, GA_SYSMON_MC, 0), -279427);
	ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_US, GA_SYSMON_MC, 0xffff), 229082);
	ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_USP, GA_SYSMON_MC, 0xffff), 228157);
	/* 16-bit codes: the word's upper half is not part of it */
	ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_US, GA_SYSMON_MC, 0x1a000), 40498);
	/* millivolts: 3 V full scale, the same in both families */
	ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_US, GA_SYSMON_MV, 0x4000), 750);
	ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_USP, GA_SYSMON_MV, 0x5555), 999);
	ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_US, GA_SYSMON_MV, 0xffff), 2999);
}
END_TEST

/* The inverse: the smallest code reaching the value, so a round trip reads
 * the value or at most one code step (< 8 mC, < 1 mV) above it. */
START_TEST(test_inverse)
{
	uint32_t raw = 0x1234;

	ck_assert_int_eq(ga_sysmon_from_milli(GA_SYSMON_US, GA_SYSMON_MC, 45000, &raw), 0);
	ck_assert_uint_eq(raw, 41547); /* ceil(318820 * 65536 / 502910) */
	for (int f = 0; f < GA_SYSMON_FAMILY_COUNT; f++)
		for (int32_t mc = -40000; mc <= 150000; mc += 997) {
			int32_t back;

			ck_assert_int_eq(ga_sysmon_from_milli(f, GA_SYSMON_MC, mc, &raw), 0);
			back = ga_sysmon_to_milli(f, GA_SYSMON_MC, raw);
			ck_assert_msg(back >= mc && back - mc < 8, "family %d: %d -> %#x -> %d", f,
				      mc, raw, back);
		}
	for (int32_t mv = 0; mv < 3000; mv += 7) {
		ck_assert_int_eq(ga_sysmon_from_milli(GA_SYSMON_US, GA_SYSMON_MV, mv, &raw), 0);
		ck_assert_int_eq(ga_sysmon_to_milli(GA_SYSMON_US, GA_SYSMON_MV, raw), mv);
	}
	raw = 0x1234;
	ck_assert_int_eq(ga_sysmon_from_milli(GA_SYSMON_US, GA_SYSMON_MC, -300000, &raw), -ERANGE);
	ck_assert_int_eq(ga_sysmon_from_milli(GA_SYSMON_US, GA_SYSMON_MC, 230000, &raw), -ERANGE);
	ck_assert_int_eq(ga_sysmon_from_milli(GA_SYSMON_US, GA_SYSMON_MV, 3000, &raw), -ERANGE);
	ck_assert_int_eq(ga_sysmon_from_milli(GA_SYSMON_US, GA_SYSMON_MV, -1, &raw), -ERANGE);
	ck_assert_uint_eq(raw, 0x1234); /* untouched when refused */
}
END_TEST

/* An AxiVersion block the gate reads: the modelled image's words. */
static uint32_t block[GA_FW_SIZE / 4];

static uint32_t read_block(void *ctx, uint32_t off)
{
	(void)ctx;
	return block[off / 4];
}

static void image(void)
{
	for (uint32_t off = 0; off < GA_FW_SIZE; off += 4)
		block[off / 4] = ga_fw_image_word(off);
}

START_TEST(test_gate)
{
	const char *why = "unset";

	/* the modelled KCU1500 image: map 1, GEN_SYSMON_G, UltraScale */
	image();
	ck_assert_uint_eq(block[0x4fc / 4], 1);
	ck_assert_uint_eq(block[0x42c / 4], 1);
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, &why), GA_SYSMON_US);
	ck_assert_ptr_null(why);
	/* US+ board, its extended-PCIe code too (bits 15:12 are not the type) */
	block[0x424 / 4] = 0x10;
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, &why), GA_SYSMON_USP);
	block[0x424 / 4] = 0x1010;
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, &why), GA_SYSMON_USP);
	block[0x424 / 4] = 0x100d;
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, &why), GA_SYSMON_US);
	/* unknown board, 7-series, other family */
	block[0x424 / 4] = 0x0a5;
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, &why), -EOPNOTSUPP);
	ck_assert_ptr_nonnull(why);
	image();
	block[0x40c / 4] = 1;
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, &why), -EOPNOTSUPP);
	ck_assert_ptr_nonnull(strstr(why, "7-series"));
	block[0x40c / 4] = 0xffffffff;
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, &why), -EOPNOTSUPP);
	/* built without SysMon */
	image();
	block[0x42c / 4] = 0;
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, &why), -ENODEV);
	ck_assert_ptr_nonnull(strstr(why, "GEN_SYSMON_G"));
	/* map version 0: no block, whatever else says */
	image();
	block[0x4fc / 4] = 0;
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, &why), -ENODEV);
	/* map version 2: refused; only bits 7:0 are the version */
	block[0x4fc / 4] = 2;
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, &why), -EPFNOSUPPORT);
	ck_assert_ptr_nonnull(strstr(why, "newer"));
	block[0x4fc / 4] = 0x101;
	ck_assert_int_eq(ga_sysmon_probe(read_block, NULL, NULL), GA_SYSMON_US);
}
END_TEST

START_TEST(test_memmap)
{
	ck_assert_ptr_null(ga_memmap_refused(0));
	ck_assert_ptr_null(ga_memmap_refused(1));
	ck_assert_ptr_nonnull(ga_memmap_refused(2));
	ck_assert_ptr_nonnull(ga_memmap_refused(255));
	ck_assert(!ga_memmap_has_sysmon(0));
	ck_assert(ga_memmap_has_sysmon(1));
	ck_assert(!ga_memmap_has_sysmon(2));
}
END_TEST

static uint32_t regs[GA_SYSMON_WORDS];

static int32_t milli(uint32_t off, enum ga_sysmon_kind k)
{
	return ga_sysmon_to_milli(GA_SYSMON_US, k, regs[off / 4]);
}

START_TEST(test_model)
{
	struct ga_sysmon s;
	const unsigned int alarm = GA_SYSMON_ALARM_OFFSET / 4;

	memset(regs, 0xa5, sizeof(regs));
	ga_sysmon_init(&s, regs, GA_SYSMON_US);
	/* power-up: 45 C, 950/1800/950 mV, highest = lowest = value, limits 85 / 100 C */
	ck_assert_int_eq(ga_sysmon_get_milli(&s, GA_SYSMON_TEMP), 45003);
	ck_assert_int_eq(milli(0x480, GA_SYSMON_MC), 45003);
	ck_assert_int_eq(milli(0x490, GA_SYSMON_MC), 45003);
	ck_assert_int_eq(milli(0x404, GA_SYSMON_MV), 950);
	ck_assert_int_eq(milli(0x408, GA_SYSMON_MV), 1800);
	ck_assert_int_eq(milli(0x418, GA_SYSMON_MV), 950);
	ck_assert_int_eq(milli(0x55c, GA_SYSMON_MC), 85006);
	ck_assert_int_eq(milli(0x540, GA_SYSMON_MC), 100001);
	ck_assert_uint_eq(regs[alarm], 0);
	ck_assert_uint_eq(regs[0x100 / 4], 0); /* no row: cleared */
	/* overheat: value and highest move, lowest stays, the alarm sets */
	ck_assert_int_eq(ga_sysmon_set_temperature_mC(&s, 101000), 0);
	ck_assert_int_eq(milli(0x400, GA_SYSMON_MC), 101006);
	ck_assert_int_eq(milli(0x480, GA_SYSMON_MC), 101006);
	ck_assert_int_eq(milli(0x490, GA_SYSMON_MC), 45003);
	ck_assert_uint_eq(regs[alarm], 1u << GA_SYSMON_ALARM_BIT);
	/* cool down: lowest moves, highest stays, the alarm clears */
	ck_assert_int_eq(ga_sysmon_set_temperature_mC(&s, 30000), 0);
	ck_assert_int_eq(milli(0x480, GA_SYSMON_MC), 101006);
	ck_assert_int_lt(milli(0x490, GA_SYSMON_MC), 30008);
	ck_assert_uint_eq(regs[alarm], 0);
	/* refused input changes nothing */
	ck_assert_int_eq(ga_sysmon_set_temperature_mC(&s, 300000), -ERANGE);
	ck_assert_int_eq(ga_sysmon_set_milli(&s, GA_SYSMON_VCCINT, 5000), -ERANGE);
	ck_assert_int_eq(ga_sysmon_set_milli(&s, GA_SYSMON_SENSOR_COUNT, 5), -EINVAL);
	ck_assert_int_eq(milli(0x480, GA_SYSMON_MC), 101006);
	ck_assert_int_lt(ga_sysmon_get_milli(&s, GA_SYSMON_TEMP), 30008);
	ck_assert_int_eq(milli(0x404, GA_SYSMON_MV), 950);
	/* a voltage */
	ck_assert_int_eq(ga_sysmon_set_milli(&s, GA_SYSMON_VCCINT, 900), 0);
	ck_assert_int_eq(milli(0x404, GA_SYSMON_MV), 900);
	ck_assert_int_eq(milli(0x494, GA_SYSMON_MV), 900);
	ck_assert_int_eq(milli(0x484, GA_SYSMON_MV), 950);
	/* a lowered critical limit raises the alarm; values are read-only */
	ga_sysmon_write(&s, 0x540, 0x10000 | 0xa000); /* 16 bits kept: 40.5 C */
	ck_assert_uint_eq(regs[0x540 / 4], 0xa000);
	ck_assert_uint_eq(regs[alarm], 0);
	ck_assert_int_eq(ga_sysmon_set_temperature_mC(&s, 41000), 0);
	ck_assert_uint_eq(regs[alarm], 1u << GA_SYSMON_ALARM_BIT);
	ga_sysmon_write(&s, 0x400, 0);
	ga_sysmon_write(&s, 0x480, 0);
	ck_assert_int_ge(milli(0x400, GA_SYSMON_MC), 41000);
	ck_assert_int_eq(milli(0x480, GA_SYSMON_MC), 101006);
	/* extremes restart from the present values */
	ga_sysmon_reset_extremes(&s);
	ck_assert_uint_eq(regs[0x480 / 4], regs[0x400 / 4]);
	ck_assert_uint_eq(regs[0x490 / 4], regs[0x400 / 4]);
	ck_assert_uint_eq(regs[0x484 / 4], regs[0x404 / 4]);
}
END_TEST

SUITE_MAIN("sysmon", "core", 0, {test_table_facts}, {test_conversions}, {test_inverse}, {test_gate},
	   {test_memmap}, {test_model})
