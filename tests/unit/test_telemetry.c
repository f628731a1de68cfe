// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Card telemetry through the public API (gpuasync/telemetry.h): the
 * memory-map version and the SysMon readings of the simulated card, read
 * from its SysMon block and converted by the card's family; the refusals
 * (no SysMon, a map version newer than known, a dead link); and the hwmon
 * path, over a directory laid out as the driver's hwmon device (name
 * "datadev", temp1_* and in0..2_*) handed to the library in place of
 * sysfs, so the files it opens and reads are real files.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/put_file.h"
#include "common/run_suite.h"
#include "gpuasync/device.h"
#include "gpuasync/sim.h"
#include "gpuasync/telemetry.h"
#include "internal.h"

/* The conversion rounds up to a code, then truncates back: a set value
 * reads back at most this many milli-units above. */
#define QUANTUM 8

static struct ga_dev *open_sim(const char *spec)
{
	struct ga_dev *d = NULL;

	ck_assert_msg(ga_dev_open(spec, &d) == 0, "%s: %s", spec, ga_last_error());
	return d;
}

static void near(int32_t got, int32_t want, const char *what)
{
	ck_assert_msg(got >= want && got < want + QUANTUM, "%s: %d, want %d", what, got, want);
}

START_TEST(sim_reads_registers)
{
	struct ga_dev *d = open_sim("sim");
	struct ga_sysmon_reading r;
	unsigned int mm = 99;

	ck_assert_int_eq(ga_dev_memory_map_version(d, &mm), 0);
	ck_assert_uint_eq(mm, 1);
	ck_assert_msg(ga_dev_sysmon(d, &r) == 0, "%s", ga_last_error());
	ck_assert_int_eq(r.source, GA_SYSMON_FROM_REGISTERS);
	ck_assert_msg(strstr(r.where, "0x24000") && strstr(r.where, "SYSMONE1"), "%s", r.where);
	/* the emulated image's power-up values (gpuasync/sysmon.def) */
	for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++) {
		near(r.value[s], ga_sysmon_sensors[s].init, ga_sysmon_sensors[s].label);
		ck_assert_int_eq(r.highest[s], r.value[s]);
		ck_assert_int_eq(r.lowest[s], r.value[s]);
	}
	for (unsigned int l = 0; l < GA_SYSMON_LIMIT_COUNT; l++)
		near(r.limit[l], ga_sysmon_limits[l].init, ga_sysmon_limits[l].hwmon);
	ga_dev_close(d);
}
END_TEST

START_TEST(sim_temperature_follows)
{
	struct ga_dev *d = open_sim("sim");
	struct ga_sysmon_reading r;
	int32_t t;

	ck_assert_int_eq(ga_sim_temperature_set(d, 130000), 0);
	ck_assert_int_eq(ga_sim_temperature(d, &t), 0);
	near(t, 130000, "model");
	ck_assert_int_eq(ga_sim_temperature_set(d, 30000), 0);
	ck_assert_int_eq(ga_dev_sysmon(d, &r), 0);
	near(r.value[GA_SYSMON_TEMP], 30000, "temperature");
	near(r.highest[GA_SYSMON_TEMP], 130000, "highest");
	near(r.lowest[GA_SYSMON_TEMP], 30000, "lowest");
	/* outside the 16-bit code: refused, explained, nothing changed */
	ck_assert_int_eq(ga_sim_temperature_set(d, 400000), -ERANGE);
	ck_assert_msg(strstr(ga_last_error(), "outside"), "%s", ga_last_error());
	ck_assert_int_eq(ga_sim_temperature_set(d, -300000), -ERANGE);
	ck_assert_int_eq(ga_dev_sysmon(d, &r), 0);
	near(r.value[GA_SYSMON_TEMP], 30000, "temperature after refusals");
	near(r.highest[GA_SYSMON_TEMP], 130000, "highest after refusals");
	/* what the code holds: both ends set, one past either refused */
	{
		int32_t lo, hi;

		ck_assert_int_eq(ga_sim_temperature_range(d, &lo, &hi), 0);
		ck_assert_int_lt(lo, -273000);
		ck_assert_int_gt(hi, 200000);
		ck_assert_int_eq(ga_sim_temperature_set(d, hi), 0);
		ck_assert_int_eq(ga_sim_temperature_set(d, hi + 1), -ERANGE);
		ck_assert_int_eq(ga_sim_temperature_set(d, lo), 0);
		ck_assert_int_eq(ga_sim_temperature_set(d, lo - 1), -ERANGE);
	}
	ga_dev_close(d);
}
END_TEST

/* A simulated card of memory-map version @mm: it says so, and its SysMon
 * is refused with @err, the reason naming @why. */
static struct ga_dev *open_sysmon_refused(unsigned int mm, int err, const char *why)
{
	struct ga_sysmon_reading r;
	unsigned int got = 99;
	struct ga_dev *d;
	char spec[32];

	snprintf(spec, sizeof(spec), "sim:memory_map=%u", mm);
	d = open_sim(spec);
	ck_assert_int_eq(ga_dev_memory_map_version(d, &got), 0);
	ck_assert_uint_eq(got, mm);
	ck_assert_int_eq(ga_dev_sysmon(d, &r), err);
	ck_assert_msg(strstr(ga_last_error(), why), "%s", ga_last_error());
	return d;
}

START_TEST(no_sysmon)
{
	struct ga_dev *d = open_sysmon_refused(0, -ENODEV, "no SysMon on this card");
	struct ga_sysmon_reading r;
	int32_t t;

	/* kept: asked again, the same answer */
	ck_assert_int_eq(ga_dev_sysmon(d, &r), -ENODEV);
	ck_assert_msg(strstr(ga_last_error(), "memory-map version 0"), "%s", ga_last_error());
	ck_assert_int_eq(ga_sim_temperature(d, &t), -ENODEV);
	ck_assert_int_eq(ga_sim_temperature_set(d, 50000), -ENODEV);
	ga_dev_close(d);
}
END_TEST

START_TEST(newer_map_refused)
{
	struct ga_dev *d = open_sysmon_refused(2, -EPFNOSUPPORT, "newer than the newest");

	ck_assert_ptr_nonnull(ga_memmap_refused(2));
	ga_dev_close(d);
	ck_assert_int_eq(ga_dev_open("sim:memory_map=256", &d), -ERANGE);
}
END_TEST

START_TEST(link_down_then_back)
{
	struct ga_dev *d = open_sim("sim");
	struct ga_sysmon_reading r;
	unsigned int mm;

	/* down before the first look: nothing is kept from it */
	ck_assert_int_eq(ga_sim_link_set(d, false), 0);
	ck_assert_int_eq(ga_dev_memory_map_version(d, &mm), -ENOLINK);
	ck_assert_int_eq(ga_dev_sysmon(d, &r), -ENOLINK);
	ck_assert_int_eq(ga_sim_link_set(d, true), 0);
	ck_assert_msg(ga_dev_sysmon(d, &r) == 0, "%s", ga_last_error());
	ck_assert_int_eq(ga_sim_link_set(d, false), 0);
	ck_assert_int_eq(ga_dev_sysmon(d, &r), -ENOLINK);
	ga_dev_close(d);
}
END_TEST

/* ---- the hwmon path ------------------------------------------------------------------ */

static char top[] = "/tmp/ga-hwmon-XXXXXX";
static char hwdir[256];

/* TOP/device/hwmon/hwmon7 named "datadev", beside hwmon6 of another
 * driver, with every file of the table: temperature 51.234 C, each
 * supply 1000 + 100 * its index mV. */
static void make_hwmon(const char *temp_label)
{
	char d[256], v[32], f[64];

	ck_assert_ptr_nonnull(mkdtemp(top));
	snprintf(d, sizeof(d), "%s/device", top);
	ck_assert_int_eq(mkdir(d, 0755), 0);
	snprintf(d, sizeof(d), "%s/device/hwmon", top);
	ck_assert_int_eq(mkdir(d, 0755), 0);
	snprintf(d, sizeof(d), "%s/device/hwmon/hwmon6", top);
	ck_assert_int_eq(mkdir(d, 0755), 0);
	put_file_in(d, "name", "coretemp\n");
	snprintf(hwdir, sizeof(hwdir), "%s/device/hwmon/hwmon7", top);
	ck_assert_int_eq(mkdir(hwdir, 0755), 0);
	put_file_in(hwdir, "name", "datadev\n");
	for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++) {
		const struct ga_sysmon_sensor_row *r = &ga_sysmon_sensors[s];
		int base = r->kind == GA_SYSMON_MC ? 51234 : 1000 + 100 * (int)s;

		snprintf(f, sizeof(f), "%s_label", r->hwmon);
		put_file_in(hwdir, f, s == GA_SYSMON_TEMP && temp_label ? temp_label : r->label);
		snprintf(f, sizeof(f), "%s_input", r->hwmon);
		snprintf(v, sizeof(v), "%d\n", base);
		put_file_in(hwdir, f, v);
		snprintf(f, sizeof(f), "%s_highest", r->hwmon);
		snprintf(v, sizeof(v), "%d\n", base + 10);
		put_file_in(hwdir, f, v);
		snprintf(f, sizeof(f), "%s_lowest", r->hwmon);
		snprintf(v, sizeof(v), "%d\n", base - 10);
		put_file_in(hwdir, f, v);
	}
	for (unsigned int l = 0; l < GA_SYSMON_LIMIT_COUNT; l++) {
		snprintf(v, sizeof(v), "%d\n", 90000 + 1000 * (int)l);
		put_file_in(hwdir, ga_sysmon_limits[l].hwmon, v);
	}
}

static void rm_hwmon(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	ck_assert_int_eq(system(cmd), 0);
	strcpy(top, "/tmp/ga-hwmon-XXXXXX");
}

/* A backend that has this hwmon directory: the simulated card's ops with
 * hwmon_dir pointing at the tree (what datadev finds under /sys/dev/char). */
static struct ga_backend_ops with_hwmon;

static int fake_hwmon_dir(struct ga_dev *dev, char *dir, size_t len)
{
	(void)dev;
	return ga_hwmon_find(top, dir, len);
}

static struct ga_dev *open_with_hwmon(void)
{
	struct ga_dev *d = open_sim("sim");

	with_hwmon = *d->be;
	with_hwmon.hwmon_dir = fake_hwmon_dir;
	d->be = &with_hwmon;
	return d;
}

START_TEST(hwmon_find)
{
	char dir[512];

	make_hwmon(NULL);
	ck_assert_int_eq(ga_hwmon_find(top, dir, sizeof(dir)), 0);
	ck_assert_str_eq(dir, hwdir);
	put_file_in(hwdir, "name", "other\n");
	ck_assert_int_eq(ga_hwmon_find(top, dir, sizeof(dir)), -ENOENT);
	rm_hwmon();
	ck_assert_int_eq(ga_hwmon_find("/nonexistent", dir, sizeof(dir)), -ENOENT);
}
END_TEST

START_TEST(hwmon_preferred)
{
	struct ga_sysmon_reading r;
	struct ga_dev *d;

	make_hwmon(NULL);
	d = open_with_hwmon();
	ck_assert_msg(ga_dev_sysmon(d, &r) == 0, "%s", ga_last_error());
	ck_assert_int_eq(r.source, GA_SYSMON_FROM_HWMON);
	ck_assert_str_eq(r.where, hwdir);
	ck_assert_int_eq(r.value[GA_SYSMON_TEMP], 51234);
	ck_assert_int_eq(r.highest[GA_SYSMON_TEMP], 51244);
	ck_assert_int_eq(r.lowest[GA_SYSMON_TEMP], 51224);
	for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++)
		if (s != GA_SYSMON_TEMP)
			ck_assert_int_eq(r.value[s], 1000 + 100 * (int)s);
	for (unsigned int l = 0; l < GA_SYSMON_LIMIT_COUNT; l++)
		ck_assert_int_eq(r.limit[l], 90000 + 1000 * (int)l);
	/* the files stay open and are read again: a new value shows */
	put_file_in(hwdir, "temp1_input", "77000\n");
	ck_assert_int_eq(ga_dev_sysmon(d, &r), 0);
	ck_assert_int_eq(r.value[GA_SYSMON_TEMP], 77000);
	/* the driver reads the card: a dead link is no reading */
	ck_assert_int_eq(ga_sim_link_set(d, false), 0);
	ck_assert_int_eq(ga_dev_sysmon(d, &r), -ENOLINK);
	ga_dev_close(d);
	rm_hwmon();
}
END_TEST

START_TEST(hwmon_other_layout)
{
	struct ga_sysmon_reading r;
	struct ga_dev *d;

	make_hwmon("Board");
	d = open_with_hwmon();
	ck_assert_int_eq(ga_dev_sysmon(d, &r), -EPROTO);
	ck_assert_msg(strstr(ga_last_error(), "labelled 'Board'"), "%s", ga_last_error());
	ga_dev_close(d);
	rm_hwmon();
}
END_TEST

/* The hwmon of upstream and gpuasync.ko: no file for the supplies' limits.
 * Those come from the registers beside it (the simulated card's power-up
 * limits), the rest from hwmon; without the block they are unknown. */
static void unlink_supply_limits(void)
{
	char f[512];

	for (unsigned int l = 0; l < GA_SYSMON_LIMIT_COUNT; l++)
		if (ga_sysmon_sensors[ga_sysmon_limits[l].sensor].kind == GA_SYSMON_MV) {
			snprintf(f, sizeof(f), "%s/%s", hwdir, ga_sysmon_limits[l].hwmon);
			ck_assert_int_eq(unlink(f), 0);
		}
}

START_TEST(hwmon_supply_limits_from_registers)
{
	struct ga_sysmon_reading r;
	struct ga_dev *d;

	make_hwmon(NULL);
	unlink_supply_limits();
	d = open_with_hwmon();
	ck_assert_msg(ga_dev_sysmon(d, &r) == 0, "%s", ga_last_error());
	ck_assert_int_eq(r.source, GA_SYSMON_FROM_HWMON);
	ck_assert_msg(!strncmp(r.where, hwdir, strlen(hwdir)) && strstr(r.where, " and BAR0 0x"),
		      "%s", r.where);
	for (unsigned int l = 0; l < GA_SYSMON_LIMIT_COUNT; l++) {
		ck_assert(r.limit_known[l]);
		if (ga_sysmon_sensors[ga_sysmon_limits[l].sensor].kind == GA_SYSMON_MV)
			near(r.limit[l], ga_sysmon_limits[l].init, ga_sysmon_limits[l].hwmon);
		else
			ck_assert_int_eq(r.limit[l], 90000 + 1000 * (int)l);
	}
	/* the readings themselves stay hwmon's */
	ck_assert_int_eq(r.value[GA_SYSMON_VCCINT], 1000 + 100 * GA_SYSMON_VCCINT);
	ga_dev_close(d);

	/* a backend that cannot read the block: those limits are not known */
	d = open_with_hwmon();
	with_hwmon.sysmon_read = NULL;
	ck_assert_msg(ga_dev_sysmon(d, &r) == 0, "%s", ga_last_error());
	ck_assert_str_eq(r.where, hwdir);
	for (unsigned int l = 0; l < GA_SYSMON_LIMIT_COUNT; l++)
		ck_assert_int_eq(r.limit_known[l],
				 ga_sysmon_sensors[ga_sysmon_limits[l].sensor].kind !=
					 GA_SYSMON_MV);
	ck_assert_int_eq(r.value[GA_SYSMON_TEMP], 51234);
	ga_dev_close(d);
	rm_hwmon();
}
END_TEST

/* Each limit row's side agrees with the file a driver names it by, and
 * decides which readings are out: above MAX and CRIT, below MIN, never at. */
START_TEST(limit_sides)
{
	static const struct {
		enum ga_sysmon_side side;
		const char *suffix, *name;
	} want[] = {
		{GA_SYSMON_SIDE_MAX, "_max", "max"},
		{GA_SYSMON_SIDE_CRIT, "_crit", "critical"},
		{GA_SYSMON_SIDE_MIN, "_min", "min"},
	};
	unsigned int seen[3] = {0};

	for (unsigned int l = 0; l < GA_SYSMON_LIMIT_COUNT; l++) {
		const struct ga_sysmon_limit_row *row = &ga_sysmon_limits[l];
		const char *sfx = strrchr(row->hwmon, '_');
		bool below = row->side == GA_SYSMON_SIDE_MIN;

		ck_assert_uint_lt(row->side, 3);
		ck_assert_str_eq(sfx ? sfx : "", want[row->side].suffix);
		ck_assert_str_eq(ga_sysmon_side_name(l), want[row->side].name);
		ck_assert(ga_sysmon_beyond(l, row->init + (below ? -1 : 1), row->init));
		ck_assert(!ga_sysmon_beyond(l, row->init, row->init));
		ck_assert(!ga_sysmon_beyond(l, row->init + (below ? 1 : -1), row->init));
		seen[row->side]++;
	}
	for (unsigned int k = 0; k < 3; k++)
		ck_assert_uint_gt(seen[k], 0);
	ck_assert(!ga_sysmon_beyond(GA_SYSMON_LIMIT_COUNT, 1, 0));
	ck_assert_str_eq(ga_sysmon_side_name(GA_SYSMON_LIMIT_COUNT), "");
}
END_TEST

static Suite *telemetry_suite(void)
{
	Suite *s = suite_create("telemetry");
	TCase *tc = tcase_create("sim");

	tcase_add_test(tc, sim_reads_registers);
	tcase_add_test(tc, sim_temperature_follows);
	tcase_add_test(tc, no_sysmon);
	tcase_add_test(tc, newer_map_refused);
	tcase_add_test(tc, link_down_then_back);
	tcase_add_test(tc, limit_sides);
	suite_add_tcase(s, tc);
	tc = tcase_create("hwmon");
	tcase_add_test(tc, hwmon_find);
	tcase_add_test(tc, hwmon_preferred);
	tcase_add_test(tc, hwmon_other_layout);
	tcase_add_test(tc, hwmon_supply_limits_from_registers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(telemetry_suite());
}
