/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The card's telemetry: device/sysmon/ (the FPGA's SysMon readings),
 * health/fpga_temperature, the simulated card's sim/fpga_temperature, and
 * their metrics (with gpuasync_memory_map_version: the memory-map version
 * itself is device/firmware/memory_map_version, an AxiVersion row).  One row per sensor reading and
 * limit, generated from gpuasync/sysmon.def (the file name is the sensor's
 * label in lower case, then _highest, _lowest, or the limit's kind):
 *
 *   $ cat /mnt/gpuasync/device/sysmon/temperature
 *   45.0
 *   $ cat /mnt/gpuasync/device/sysmon/vccint
 *   0.950
 *   $ cat /mnt/gpuasync/device/sysmon/source
 *   registers BAR0 0x24000 (UltraScale, SYSMONE1)
 *   $ cat /mnt/gpuasync/health/fpga_temperature
 *   ok 45.0 C (critical 100.0 C)
 *   $ echo 105 > /mnt/gpuasync/sim/fpga_temperature
 *
 * Degrees C with one decimal, volts with three (the readings are kept in
 * milli-units; metrics gives them whole).  device/sysmon/ is there when
 * the card has SysMon (libgpuasync's gate, gpuasync/telemetry.h) and when
 * its memory-map version is newer than known (its files then fail with
 * EPFNOSUPPORT and say why in errors); a card without SysMon has none, and
 * health/fpga_temperature says "none: " and why.
 *
 * metrics reads the SysMon once per render (fs_sysmon_metrics): one pass
 * over the hwmon files or the registers, whatever the number of samples.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

/* Words of a reading: value, highest, lowest per sensor, then the limits
 * (the order of the rows, and of word_milli). */
#define PER_SENSOR 3
#define NWORDS	   (GA_SYSMON_SENSOR_COUNT * PER_SENSOR + GA_SYSMON_LIMIT_COUNT)
static const char *const per_suffix[PER_SENSOR] = {"", "_highest", "_lowest"};

/* One mount per daemon: the names and docs made at mount for the rows. */
static char sensor_name[GA_SYSMON_SENSOR_COUNT][24];
static char word_doc[NWORDS][112];

/* "temperature", "vccint": the sensor's label in lower case. */
static void make_sensor_names(void)
{
	for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++) {
		const char *l = ga_sysmon_sensors[s].label;
		size_t i;

		for (i = 0; l[i] && i + 1 < sizeof(sensor_name[s]); i++)
			sensor_name[s][i] = (char)(l[i] >= 'A' && l[i] <= 'Z' ? l[i] + 32 : l[i]);
		sensor_name[s][i] = '\0';
	}
}

/* "max", "critical": what a limit is, from its hwmon file (temp1_crit). */
static const char *limit_kind(unsigned int l)
{
	const char *k = strrchr(ga_sysmon_limits[l].hwmon, '_');

	k = k ? k + 1 : ga_sysmon_limits[l].hwmon;
	return strcmp(k, "crit") == 0 ? "critical" : k;
}

static unsigned int word_sensor(unsigned int w)
{
	return w < GA_SYSMON_SENSOR_COUNT * PER_SENSOR
		       ? w / PER_SENSOR
		       : ga_sysmon_limits[w - GA_SYSMON_SENSOR_COUNT * PER_SENSOR].sensor;
}

static void word_name(unsigned int w, char *out, size_t len)
{
	if (w < GA_SYSMON_SENSOR_COUNT * PER_SENSOR)
		snprintf(out, len, "%s%s", sensor_name[w / PER_SENSOR], per_suffix[w % PER_SENSOR]);
	else
		snprintf(out, len, "%s_%s", sensor_name[word_sensor(w)],
			 limit_kind(w - GA_SYSMON_SENSOR_COUNT * PER_SENSOR));
}

static int32_t word_milli(const struct ga_sysmon_reading *r, unsigned int w)
{
	if (w >= GA_SYSMON_SENSOR_COUNT * PER_SENSOR)
		return r->limit[w - GA_SYSMON_SENSOR_COUNT * PER_SENSOR];
	return w % PER_SENSOR == 0   ? r->value[w / PER_SENSOR]
	       : w % PER_SENSOR == 1 ? r->highest[w / PER_SENSOR]
				     : r->lowest[w / PER_SENSOR];
}

/* 45.0 (degrees C) or 0.950 (volts), from milli-units. */
static int put_milli(struct strbuf *sb, enum ga_sysmon_kind k, int32_t v, const char *after)
{
	return sb_printf(sb, k == GA_SYSMON_MC ? "%.1f%s" : "%.3f%s", v / 1000.0, after);
}

static int word_of(const struct fs_node *n)
{
	char name[48];

	for (unsigned int w = 0; w < NWORDS; w++) {
		word_name(w, name, sizeof(name));
		if (strcmp(name, n->name) == 0)
			return (int)w;
	}
	return fs_err(-ENOENT, "%s: not a SysMon reading", n->name);
}

static int show_reading(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_sysmon_reading r;
	int w = word_of(c->node);
	int ret;

	if (w < 0)
		return w;
	ret = ga_dev_sysmon(c->fs->dev, &r);
	if (ret < 0)
		return ret;
	return put_milli(sb, ga_sysmon_sensors[word_sensor((unsigned int)w)].kind,
			 word_milli(&r, (unsigned int)w), "\n")
		       ? -ENOMEM
		       : 0;
}

static int show_source(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_sysmon_reading r;
	int ret = ga_dev_sysmon(c->fs->dev, &r);

	if (ret < 0)
		return ret;
	return sb_printf(sb, "%s %s\n", r.source == GA_SYSMON_FROM_HWMON ? "hwmon" : "registers",
			 r.where)
		       ? -ENOMEM
		       : 0;
}

/* 1 while the temperature is above the critical limit, else 0. */
static int overheated(const struct ga_sysmon_reading *r)
{
	const struct ga_sysmon_limit_row *l = &ga_sysmon_limits[GA_SYSMON_TEMP_CRIT];

	return r->value[l->sensor] > r->limit[GA_SYSMON_TEMP_CRIT];
}

static int show_health(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_sysmon_reading r;
	int ret = ga_dev_sysmon(c->fs->dev, &r);

	if (ret == -ENOLINK)
		return ret;
	if (ret < 0)
		return sb_printf(sb, "none: %s\n", fs_last_error()) ? -ENOMEM : 0;
	sb_printf(sb, "%s ", overheated(&r) ? "over critical" : "ok");
	put_milli(sb, GA_SYSMON_MC, r.value[GA_SYSMON_TEMP], " C (critical ");
	put_milli(sb, GA_SYSMON_MC, r.limit[GA_SYSMON_TEMP_CRIT], " C)\n");
	return sb->oom ? -ENOMEM : 0;
}

static int show_sim_temperature(struct fs_ctx *c, struct strbuf *sb)
{
	int32_t mC;
	int ret = ga_sim_temperature(c->fs->dev, &mC);

	if (ret < 0)
		return ret;
	return put_milli(sb, GA_SYSMON_MC, mC, "\n") ? -ENOMEM : 0;
}

/* Degrees C as written: an optional sign, digits, up to three decimals. */
static int parse_celsius(const char *buf, size_t len, int32_t *mC)
{
	size_t i = 0, end = len;
	int64_t v = 0;
	int sign = 1, decimals = -1;

	while (end && (buf[end - 1] == '\n' || buf[end - 1] == ' '))
		end--;
	if (end && (buf[0] == '-' || buf[0] == '+'))
		sign = buf[i++] == '-' ? -1 : 1;
	for (; i < end; i++) {
		if (buf[i] == '.' && decimals < 0) {
			decimals = 0;
			continue;
		}
		if (buf[i] < '0' || buf[i] > '9' || decimals == 3 || v > 1000000000)
			break;
		v = v * 10 + (buf[i] - '0');
		if (decimals >= 0)
			decimals++;
	}
	if (i != end || end == 0 || (end == 1 && sign == -1) || decimals == 0)
		return fs_err(-EINVAL,
			      "fpga_temperature: '%.*s' is not a temperature: degrees C, e.g. 45, "
			      "-10 or 97.5 (at most three decimals)",
			      (int)(end < 32 ? end : 32), buf);
	for (; decimals < 3; decimals = decimals < 0 ? 1 : decimals + 1)
		v *= 10;
	if (v > INT32_MAX)
		return fs_err(-ERANGE, "fpga_temperature: '%.*s' degrees is out of range",
			      (int)(end < 32 ? end : 32), buf);
	*mC = (int32_t)(sign * v);
	return 0;
}

/* The simulated card's die temperature: its SysMon model, so every reader
 * (files, metrics, alert rules) sees what a hot card shows. */
static int store_sim_temperature(struct fs_ctx *c, const char *buf, size_t len)
{
	int32_t mC = 0, lo, hi;
	int ret = parse_celsius(buf, len, &mC);

	if (ret < 0)
		return ret;
	ret = ga_sim_temperature_range(c->fs->dev, &lo, &hi);
	if (ret < 0)
		return ret;
	if (mC < lo || mC > hi)
		return fs_err(
			-ERANGE,
			"fpga_temperature: %.3f C is outside what the card's SysMon code holds "
			"(%.3f to %.3f C)",
			mC / 1000.0, lo / 1000.0, hi / 1000.0);
	if (c->check_only)
		return 0;
	return ga_sim_temperature_set(c->fs->dev, mC);
}

/* The metrics of one reading (fs_show_metrics, link up): one
 * ga_dev_sysmon pass for every sample. */
void fs_sysmon_metrics(struct fs *fs, struct strbuf *sb, const char *id)
{
	struct ga_sysmon_reading r;
	unsigned int mm;

	if (ga_dev_memory_map_version(fs->dev, &mm) == 0)
		sb_printf(sb,
			  "# HELP gpuasync_memory_map_version the card's BAR0 memory-map "
			  "version (device/firmware/memory_map_version)\n"
			  "# TYPE gpuasync_memory_map_version gauge\n"
			  "gpuasync_memory_map_version{%s} %u\n",
			  id, mm);
	if (ga_dev_sysmon(fs->dev, &r) < 0)
		return; /* no SysMon (or refused): no samples, never made-up ones */
	/* temperatures: a family per reading and limit */
	for (unsigned int w = 0; w < NWORDS; w++) {
		char name[64];

		if (ga_sysmon_sensors[word_sensor(w)].kind != GA_SYSMON_MC)
			continue;
		word_name(w, name, sizeof(name));
		sb_printf(sb,
			  "# HELP gpuasync_fpga_%s_celsius %s\n"
			  "# TYPE gpuasync_fpga_%s_celsius gauge\n"
			  "gpuasync_fpga_%s_celsius{%s} %.3f\n",
			  name, word_doc[w], name, name, id, word_milli(&r, w) / 1000.0);
	}
	/* supplies: a family per kind of reading, the rail a label (the table
	 * holds no supply limits) */
	for (unsigned int k = 0; k < PER_SENSOR; k++) {
		static const char *const what[PER_SENSOR] = {"now", "highest since power-up",
							     "lowest since power-up"};

		sb_printf(sb,
			  "# HELP gpuasync_fpga_voltage%s_volts the FPGA's supply voltage %s, "
			  "by rail (device/sysmon/RAIL%s)\n"
			  "# TYPE gpuasync_fpga_voltage%s_volts gauge\n",
			  per_suffix[k], what[k], per_suffix[k], per_suffix[k]);
		for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++)
			if (ga_sysmon_sensors[s].kind == GA_SYSMON_MV)
				sb_printf(sb,
					  "gpuasync_fpga_voltage%s_volts{%s,rail=\"%s\"} %.3f\n",
					  per_suffix[k], id, sensor_name[s],
					  word_milli(&r, s * PER_SENSOR + k) / 1000.0);
	}
	sb_printf(sb,
		  "# HELP gpuasync_fpga_overheated 1 while the FPGA is above its critical "
		  "temperature (health/fpga_temperature)\n"
		  "# TYPE gpuasync_fpga_overheated gauge\n"
		  "gpuasync_fpga_overheated{%s} %d\n",
		  id, overheated(&r));
}

/* ---- rows ------------------------------------------------------------------------------------ */

static bool is_sim(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	(void)n;
	(void)idx;
	return fs->sim;
}

static const char *word_meaning(unsigned int w)
{
	static const char *const per[PER_SENSOR] = {"now", "highest since power-up",
						    "lowest since power-up"};

	return w < GA_SYSMON_SENSOR_COUNT * PER_SENSOR ? per[w % PER_SENSOR] : NULL;
}

static void make_docs(void)
{
	for (unsigned int w = 0; w < NWORDS; w++) {
		unsigned int s = word_sensor(w);
		const char *unit = ga_sysmon_sensors[s].kind == GA_SYSMON_MC ? "degrees C" : "V";

		if (word_meaning(w))
			snprintf(word_doc[w], sizeof(word_doc[w]), "the FPGA's %s %s (%s, SysMon)",
				 ga_sysmon_sensors[s].label, word_meaning(w), unit);
		else
			snprintf(word_doc[w], sizeof(word_doc[w]),
				 "the %s limit the card's SysMon holds for its %s (%s)",
				 limit_kind(w - GA_SYSMON_SENSOR_COUNT * PER_SENSOR),
				 ga_sysmon_sensors[s].label, unit);
	}
}

int fs_sysmon_rows(struct fs *fs, struct fs_node *rows, unsigned int max)
{
	struct ga_sysmon_reading r;
	unsigned int n = 0, mm;
	int probe = ga_dev_sysmon(fs->dev, &r);
	bool present = probe == 0 || probe == -EPFNOSUPPORT;
	bool axiversion = ga_dev_memory_map_version(fs->dev, &mm) == 0;

	fs_err_clear();
	make_sensor_names();
	make_docs();
	if (max < NWORDS + 6)
		return -E2BIG;
	if (present) {
		rows[n++] = (struct fs_node){
			.name = "sysmon",
			.parent = FS_D_DEVICE,
			.dir = FS_D_SYSMON,
			.mode = 0555,
			.reg = -1,
			.doc = "the FPGA's temperature and supply voltages (SysMon), live"};
		rows[n++] = (struct fs_node){.name = "source",
					     .parent = FS_D_SYSMON,
					     .dir = FS_D_NONE,
					     .mode = 0444,
					     .show = show_source,
					     .reg = -1,
					     .doc = "where the readings come from: hwmon DIR (the "
						    "driver's) or registers"};
		for (unsigned int w = 0; w < NWORDS; w++) {
			struct fs_node *nd = &rows[n++];

			*nd = (struct fs_node){.parent = FS_D_SYSMON,
					       .dir = FS_D_NONE,
					       .mode = 0444,
					       .flags = FS_LIVE,
					       .show = show_reading,
					       .reg = -1,
					       .doc = word_doc[w]};
			word_name(w, nd->name_store, sizeof(nd->name_store));
			nd->name = nd->name_store;
		}
	}
	if (axiversion || fs->sim)
		rows[n++] = (struct fs_node){.name = "fpga_temperature",
					     .parent = FS_D_HEALTH,
					     .dir = FS_D_NONE,
					     .mode = 0444,
					     .flags = FS_LIVE,
					     .show = show_health,
					     .reg = -1,
					     .doc = "ok or over critical, the FPGA's temperature "
						    "and its critical limit; "
						    "none: no SysMon"};
	if (probe == 0)
		rows[n++] = (struct fs_node){
			.name = "fpga_temperature",
			.parent = FS_D_SIM,
			.dir = FS_D_NONE,
			.mode = 0644,
			.flags = FS_LIVE,
			.show = show_sim_temperature,
			.store = store_sim_temperature,
			.visible = is_sim,
			.reg = -1,
			.doc = "the FPGA's temperature its SysMon measures (degrees C; write to "
			       "heat or cool the card)"};
	return (int)n;
}
