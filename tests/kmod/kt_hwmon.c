// SPDX-License-Identifier: GPL-2.0
/*
 * kt case for the card's SysMon as hwmon (kmod/README.md "Telemetry"):
 * the device named "datadev" under the device the card is, its files
 * read-only with upstream's labels, and temp1_input following the
 * temperature set on the emulated card (its fpga_temperature attribute):
 * within one code step (< 8 mC) above it, highest and lowest following as
 * SysMon's do.  Expected values are docs/firmware.md §2.6's (the emulated
 * card's power-up supplies and limits), not taken from core/.  The cards
 * without one (map version 0, no GEN_SYSMON_G) and the refused map
 * version 2 are init.sh's, as they need the module loaded otherwise.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kt.h"

static char hw_dir[300];

/* The card's hwmon directory into hw_dir: the hwmon device whose parent
 * is the card's device (PCI function, or the emulated card's platform
 * device gpuasync_emu.N); 0, or -1 when there is none. */
static int find_hwmon(void)
{
	char want[PATH_MAX] = "", path[600], got[PATH_MAX], name[64];
	const char *card = strrchr(dev_path, '/') + 1;
	struct dirent *d;
	DIR *dir;
	int found = -1;

	snprintf(path, sizeof(path), "/sys/class/gpuasync/%s/device", card);
	if (!realpath(path, want)) {
		/* emulated: its platform device is gpuasync_emu.<index> */
		snprintf(path, sizeof(path), "/sys/bus/platform/devices/gpuasync_emu.%s",
			 card + strcspn(card, "0123456789"));
		if (!realpath(path, want))
			return -1;
	}
	dir = opendir("/sys/class/hwmon");
	if (!dir)
		return -1;
	while ((d = readdir(dir)) && found < 0) {
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/hwmon/%s/device", d->d_name);
		if (!realpath(path, got) || strcmp(got, want))
			continue;
		snprintf(path, sizeof(path), "/sys/class/hwmon/%s/name", d->d_name);
		f = fopen(path, "r");
		if (f && fgets(name, sizeof(name), f) && !strcmp(name, "datadev\n")) {
			snprintf(hw_dir, sizeof(hw_dir), "/sys/class/hwmon/%s", d->d_name);
			found = 0;
		}
		if (f)
			fclose(f);
	}
	closedir(dir);
	return found;
}

/* hwmon file @name as a number; LONG_MIN when unreadable. */
static long hw_read(const char *name)
{
	char path[400], buf[64];
	FILE *f;
	long v = LONG_MIN;

	snprintf(path, sizeof(path), "%s/%s", hw_dir, name);
	f = fopen(path, "r");
	if (f && fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static void hw_text(const char *name, char *buf, int len)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", hw_dir, name);
	buf[0] = 0;
	f = fopen(path, "r");
	if (f && !fgets(buf, len, f))
		buf[0] = 0;
	if (f)
		fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

/* @v is @want or less than one code step (7.7 mC) above it. */
#define NEAR(v, want) ((v) >= (want) && (v) - (want) < 8)

static void t_hwmon(void)
{
	static const char *const files[] = {
		"temp1_input",	  "temp1_max",	  "temp1_crit",	  "temp1_highest", "temp1_lowest",
		"temp1_label",	  "in0_input",	  "in0_highest",  "in0_lowest",	   "in0_label",
		"in1_input",	  "in1_highest",  "in1_lowest",	  "in1_label",	   "in2_input",
		"in2_highest",	  "in2_lowest",	  "in2_label",
	};
	static const struct {
		const char *file, *label;
		long mv;
	} supplies[] = {
		{ "in0", "VccInt", 950 },
		{ "in1", "VccAux", 1800 },
		{ "in2", "VccBRAM", 950 },
	};
	char path[400], text[64];
	struct stat st;
	long low, v;
	unsigned int k;

	if (sys_read_param("emulate_sysmon") == 0 || sys_read_param("emulate_map_version") == 0) {
		case_skipped = "the card was loaded without SysMon";
		return;
	}
	if (find_hwmon()) {
		fail(__func__, __LINE__, "no hwmon device named datadev under %s's device",
		     dev_path);
		return;
	}
	for (k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		snprintf(path, sizeof(path), "%s/%s", hw_dir, files[k]);
		CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0444, "%s: mode 0%o",
		      files[k], st.st_mode & 0777);
	}
	hw_text("temp1_label", text, sizeof(text));
	CHECK(!strcmp(text, "Temperature"), "temp1_label '%s'", text);
	for (k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "%s_label", supplies[k].file);
		hw_text(path, text, sizeof(text));
		CHECK(!strcmp(text, supplies[k].label), "%s '%s'", path, text);
		snprintf(path, sizeof(path), "%s_input", supplies[k].file);
		CHECK(hw_read(path) == supplies[k].mv, "%s %ld, want %ld", path, hw_read(path),
		      supplies[k].mv);
	}
	/* limits: 85 C and 100 C, in the card's codes */
	CHECK(NEAR(hw_read("temp1_max"), 85000), "temp1_max %ld", hw_read("temp1_max"));
	CHECK(NEAR(hw_read("temp1_crit"), 100000), "temp1_crit %ld", hw_read("temp1_crit"));
	/* a temperature set on the card is what hwmon reads */
	CHECK(sys_write("fpga_temperature", "45000") == 0, "set 45000");
	v = hw_read("temp1_input");
	CHECK(NEAR(v, 45000), "temp1_input %ld after 45000", v);
	CHECK(sys_read("fpga_temperature") == v, "fpga_temperature %ld, hwmon %ld",
	      sys_read("fpga_temperature"), v);
	low = hw_read("temp1_lowest");
	CHECK(low <= v, "lowest %ld above the input %ld", low, v);
	/* overheat: input and highest move above critical, lowest stays */
	CHECK(sys_write("fpga_temperature", "101000") == 0, "set 101000");
	v = hw_read("temp1_input");
	CHECK(NEAR(v, 101000), "temp1_input %ld after 101000", v);
	CHECK(NEAR(hw_read("temp1_highest"), 101000), "temp1_highest %ld",
	      hw_read("temp1_highest"));
	CHECK(hw_read("temp1_lowest") == low, "temp1_lowest %ld, was %ld", hw_read("temp1_lowest"),
	      low);
	CHECK(v > hw_read("temp1_crit"), "%ld not above crit %ld", v, hw_read("temp1_crit"));
	/* cool again: the highest remembers */
	CHECK(sys_write("fpga_temperature", "45000") == 0, "set 45000 again");
	CHECK(NEAR(hw_read("temp1_input"), 45000), "temp1_input %ld", hw_read("temp1_input"));
	CHECK(NEAR(hw_read("temp1_highest"), 101000), "highest %ld after cooling",
	      hw_read("temp1_highest"));
	/* refused input changes nothing */
	snprintf(path, sizeof(path), "/sys/class/gpuasync/%s/fpga_temperature",
		 strrchr(dev_path, '/') + 1);
	errno = 0;
	CHECK(write_file(path, "300000") != 0 && errno == ERANGE, "300000: errno %d", errno);
	errno = 0;
	CHECK(write_file(path, "warm") != 0 && errno == EINVAL, "'warm': errno %d", errno);
	CHECK(NEAR(hw_read("temp1_input"), 45000), "temp1_input %ld after refusals",
	      hw_read("temp1_input"));
	/* hwmon files are read-only, even for root */
	snprintf(path, sizeof(path), "%s/temp1_input", hw_dir);
	CHECK(write_file(path, "1000") != 0, "temp1_input took a write");
}

const struct kcase hwmon_cases[] = {
	{ "hwmon", t_hwmon },
};
const unsigned int n_hwmon_cases = sizeof(hwmon_cases) / sizeof(hwmon_cases[0]);
