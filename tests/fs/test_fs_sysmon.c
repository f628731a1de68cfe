/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The card's telemetry on a real mount, with cat and echo: device/sysmon/
 * (one file per SysMon reading and limit of gpuasync/sysmon.def, degrees C
 * and volts), health/fpga_temperature and metrics following
 * sim/fpga_temperature, health/fpga_voltage and metrics following
 * sim/fpga_vccint and the other supplies, bad values refused whole, and the cards that
 * cannot answer: no SysMon (memory-map version 0: no files), a memory-map
 * version newer than known (EPFNOSUPPORT, explained in errors), a dead link
 * (ENOLINK, no samples).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* What ls device/sysmon must show: "source" and, per sensor of the table,
 * its name, _highest and _lowest, then its limits, sorted as ls sorts. */
static const char SYSMON_LS[] = "source\n"
				"temperature\n"
				"temperature_critical\n"
				"temperature_highest\n"
				"temperature_lowest\n"
				"temperature_max\n"
				"vccaux\n"
				"vccaux_highest\n"
				"vccaux_lowest\n"
				"vccaux_max\n"
				"vccaux_min\n"
				"vccbram\n"
				"vccbram_highest\n"
				"vccbram_lowest\n"
				"vccbram_max\n"
				"vccbram_min\n"
				"vccint\n"
				"vccint_highest\n"
				"vccint_lowest\n"
				"vccint_max\n"
				"vccint_min\n";

START_TEST(files)
{
	char *out;

	mnt_start("");
	out = sh_out("LC_ALL=C ls $M/device/sysmon");
	ck_assert_str_eq(out, SYSMON_LS);
	free(out);
	/* the emulated image at power-up (sysmon.def), as a user reads it */
	assert_file_eq("device/sysmon/temperature", "45.0\n");
	assert_file_eq("device/sysmon/temperature_highest", "45.0\n");
	assert_file_eq("device/sysmon/temperature_critical", "100.0\n");
	assert_file_eq("device/sysmon/temperature_max", "85.0\n");
	assert_file_eq("device/sysmon/vccint", "0.950\n");
	assert_file_eq("device/sysmon/vccaux_lowest", "1.800\n");
	assert_file_eq("device/sysmon/vccbram", "0.950\n");
	assert_file_eq("device/sysmon/vccint_max", "0.998\n");
	assert_file_eq("device/sysmon/vccint_min", "0.902\n");
	assert_file_eq("device/sysmon/vccaux_max", "1.890\n");
	assert_file_eq("device/sysmon/vccbram_min", "0.902\n");
	assert_file_eq("device/sysmon/source", "registers BAR0 0x24000 (UltraScale, SYSMONE1)\n");
	assert_file_eq("device/firmware/memory_map_version", "1\n");
	assert_file_eq("health/fpga_temperature", "ok 45.0 C (critical 100.0 C)\n");
	assert_file_eq("sim/fpga_temperature", "45.0\n");
	assert_file_eq("health/fpga_voltage",
		       "ok VccInt 0.950 V, VccAux 1.800 V, VccBRAM 0.950 V\n");
	assert_file_eq("sim/fpga_vccaux", "1.800\n");
	/* every one of them is in README, and read-only */
	ck_assert_int_eq(sh("cd $M/device/sysmon && for f in *; do grep -q \"^device/sysmon/$f \" "
			    "$M/README || exit 1; ! echo 1 2>/dev/null > $f || exit 1; done"),
			 0);
}
END_TEST

/* device/sysmon/temperature, _highest and _lowest read as given (degrees C). */
static void expect_temperatures(const char *now, const char *highest, const char *lowest)
{
	static const char *const file[] = {"device/sysmon/temperature",
					   "device/sysmon/temperature_highest",
					   "device/sysmon/temperature_lowest"};
	const char *want[] = {now, highest, lowest};
	char line[32];

	for (unsigned int i = 0; i < 3; i++) {
		snprintf(line, sizeof(line), "%s\n", want[i]);
		assert_file_eq(file[i], line);
	}
}

START_TEST(heat_and_cool)
{
	char *m;

	mnt_start("");
	ck_assert_int_eq(sh("echo 105 > $M/sim/fpga_temperature"), 0);
	assert_file_eq("sim/fpga_temperature", "105.0\n");
	expect_temperatures("105.0", "105.0", "45.0");
	assert_file_eq("health/fpga_temperature", "over critical 105.0 C (critical 100.0 C)\n");
	m = readf("metrics");
	ck_assert_ptr_nonnull(m);
	ck_assert_msg(strstr(m, "\ngpuasync_fpga_overheated{") &&
			      strstr(strstr(m, "\ngpuasync_fpga_overheated{"), "} 1\n"),
		      "%s", m);
	ck_assert_msg(strstr(m, "\ngpuasync_fpga_temperature_celsius{"), "%s", m);
	ck_assert_msg(strstr(m, ",rail=\"vccint\"} 0.950\n"), "%s", m);
	free(m);
	/* cooler than power-up: highest keeps 105, lowest follows */
	ck_assert_int_eq(sh("echo 30.5 > $M/sim/fpga_temperature"), 0);
	expect_temperatures("30.5", "105.0", "30.5");
	assert_file_eq("health/fpga_temperature", "ok 30.5 C (critical 100.0 C)\n");
	m = readf("metrics");
	ck_assert_msg(strstr(strstr(m, "\ngpuasync_fpga_overheated{"), "} 0\n"), "%s", m);
	free(m);
	ck_assert_int_eq(sh("echo -10 > $M/sim/fpga_temperature"), 0);
	assert_file_eq("device/sysmon/temperature", "-10.0\n");
}
END_TEST

/* A supply sags below its lower limit, another surges above its upper:
 * health names each with its limits, metrics has the rails, and all is ok
 * again once they are back (lowest and highest keep what they saw). */
START_TEST(sag_and_surge)
{
	char *m;

	mnt_start("");
	ck_assert_int_eq(sh("echo 0.85 > $M/sim/fpga_vccint"), 0);
	assert_file_eq("sim/fpga_vccint", "0.850\n");
	assert_file_eq("device/sysmon/vccint", "0.850\n");
	assert_file_eq("health/fpga_voltage",
		       "out of range VccInt 0.850 V (max 0.998 V, min 0.902 V)\n");
	ck_assert_int_eq(sh("echo 1.9 > $M/sim/fpga_vccaux"), 0);
	assert_file_eq("health/fpga_voltage",
		       "out of range VccInt 0.850 V (max 0.998 V, min 0.902 V), VccAux 1.900 V "
		       "(max 1.890 V, min 1.710 V)\n");
	m = readf("metrics");
	ck_assert_ptr_nonnull(m);
	ck_assert_msg(strstr(m, "\ngpuasync_fpga_voltage_out_of_range{") &&
			      strstr(m, ",rail=\"vccint\"} 1\n") &&
			      strstr(m, ",rail=\"vccaux\"} 1\n") &&
			      strstr(m, ",rail=\"vccbram\"} 0\n"),
		      "%s", m);
	ck_assert_msg(strstr(m, "\ngpuasync_fpga_voltage_min_volts{") &&
			      strstr(m, ",rail=\"vccint\"} 0.902\n") &&
			      strstr(m, ",rail=\"vccaux\"} 1.890\n"),
		      "%s", m);
	free(m);
	ck_assert_int_eq(sh("echo 0.95 > $M/sim/fpga_vccint && echo 1.8 > $M/sim/fpga_vccaux"), 0);
	assert_file_eq("health/fpga_voltage",
		       "ok VccInt 0.950 V, VccAux 1.800 V, VccBRAM 0.950 V\n");
	assert_file_eq("device/sysmon/vccint_lowest", "0.850\n");
	assert_file_eq("device/sysmon/vccaux_highest", "1.900\n");
	m = sh_out("grep -c '^gpuasync_fpga_voltage_out_of_range{.*} 0$' $M/metrics");
	ck_assert_str_eq(m, "3\n");
	free(m);
}
END_TEST

START_TEST(bad_voltage)
{
	static const char *const bad[] = {"abc", "0.9501", "1.", "1e0", "-", "0.9 V"};

	mnt_start("");
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused("sim/fpga_vccbram", bad[i], EINVAL);
	ck_assert_msg(strstr(err_last(), "volts"), "%s", err_last());
	expect_refused("sim/fpga_vccbram", "3.5", ERANGE);
	ck_assert_msg(strstr(err_last(), "outside") && strstr(err_last(), " V)"), "%s", err_last());
	expect_refused("sim/fpga_vccbram", "-0.1", ERANGE);
	assert_file_eq("device/sysmon/vccbram", "0.950\n");
	assert_file_eq("device/sysmon/vccbram_highest", "0.950\n");
}
END_TEST

START_TEST(bad_temperature)
{
	static const char *const bad[] = {"abc", "12.3456", "5.", "1e3", "-", "40 C", "7\n8\n"};

	mnt_start("");
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_refused("sim/fpga_temperature", bad[i], EINVAL);
	expect_refused("sim/fpga_temperature", "900", ERANGE);
	ck_assert_msg(strstr(err_last(), "outside"), "%s", err_last());
	expect_refused("sim/fpga_temperature", "-300", ERANGE);
	assert_file_eq("device/sysmon/temperature", "45.0\n");
	assert_file_eq("device/sysmon/temperature_highest", "45.0\n");
}
END_TEST

START_TEST(no_sysmon)
{
	char *m;

	mnt_start("-o memory_map=0");
	/* no reading, no sim/ control: none of them exists */
	ck_assert_int_eq(sh("! test -e $M/device/sysmon && ! test -e $M/sim/fpga_temperature && "
			    "! test -e $M/sim/fpga_vccint"),
			 0);
	assert_file_eq("device/firmware/memory_map_version", "0\n");
	for (unsigned int i = 0; i < 2; i++)
		assert_file_eq(i ? "health/fpga_voltage" : "health/fpga_temperature",
			       "none: no SysMon on this card: memory-map version 0: no SysMon "
			       "block\n");
	m = readf("metrics");
	ck_assert_msg(!strstr(m, "gpuasync_fpga_"), "%s", m);
	ck_assert_msg(strstr(m, "\ngpuasync_memory_map_version{") &&
			      strstr(strstr(m, "\ngpuasync_memory_map_version{"), "} 0\n"),
		      "%s", m);
	free(m);
}
END_TEST

START_TEST(newer_map)
{
	unsigned int lines;
	char *m;

	mnt_start("-o memory_map=2");
	assert_file_eq("device/firmware/memory_map_version", "2\n");
	lines = err_lines();
	ck_assert_ptr_null(readf("device/sysmon/temperature"));
	ck_assert_int_eq(errno, EPFNOSUPPORT);
	ck_assert_uint_eq(err_lines(), lines + 1);
	ck_assert_msg(strstr(err_last(), "device/sysmon/temperature: EPFNOSUPPORT") &&
			      strstr(err_last(), "newer than the newest"),
		      "%s", err_last());
	m = readf("health/fpga_temperature");
	ck_assert_msg(!strncmp(m, "none: SysMon not read: ", 23), "%s", m);
	free(m);
	m = readf("metrics");
	ck_assert_msg(!strstr(m, "gpuasync_fpga_"), "%s", m);
	free(m);
}
END_TEST

START_TEST(link_down)
{
	char *m;

	mnt_start("");
	ck_assert_int_eq(sh("echo 101 > $M/sim/fpga_temperature && echo down > $M/sim/link"), 0);
	ck_assert_ptr_null(readf("device/sysmon/temperature"));
	ck_assert_int_eq(errno, ENOLINK);
	ck_assert_ptr_null(readf("health/fpga_temperature"));
	ck_assert_int_eq(errno, ENOLINK);
	m = readf("metrics");
	ck_assert_msg(!strstr(m, "gpuasync_fpga_"), "%s", m);
	free(m);
	ck_assert_int_eq(sh("echo up > $M/sim/link"), 0);
	assert_file_eq("device/sysmon/temperature", "101.0\n");
}
END_TEST

SUITE_MAIN("sysmon", "sysmon", TEST_TIMEOUT, {files}, {heat_and_cool}, {sag_and_surge},
	   {bad_voltage}, {bad_temperature}, {no_sysmon}, {newer_map}, {link_down})
