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
 *   $ cat /mnt/gpuasync/health/fpga_voltage
 *   ok VccInt 0.950 V, VccAux 1.800 V, VccBRAM 0.950 V
 *   $ echo 105 > /mnt/gpuasync/sim/fpga_temperature
 *   $ echo 1.05 > /mnt/gpuasync/sim/fpga_vccint
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
static char sim_doc[GA_SYSMON_SENSOR_COUNT][112];
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
			 ga_sysmon_side_name(w - GA_SYSMON_SENSOR_COUNT * PER_SENSOR));
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
	if (w >= GA_SYSMON_SENSOR_COUNT * PER_SENSOR &&
	    !r.limit_known[w - GA_SYSMON_SENSOR_COUNT * PER_SENSOR])
		return fs_err(-ENODATA,
			      "%s: not known: the driver's hwmon has no %s and BAR0's SysMon "
			      "block cannot be read",
			      c->node->name,
			      ga_sysmon_limits[w - GA_SYSMON_SENSOR_COUNT * PER_SENSOR].hwmon);
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

	return ga_sysmon_beyond(GA_SYSMON_TEMP_CRIT, r->value[l->sensor],
				r->limit[GA_SYSMON_TEMP_CRIT]);
}

/* 1 while supply @s is outside a limit known for it, else 0. */
static int out_of_range(const struct ga_sysmon_reading *r, unsigned int s)
{
	for (unsigned int l = 0; l < GA_SYSMON_LIMIT_COUNT; l++)
		if (ga_sysmon_limits[l].sensor == s && r->limit_known[l] &&
		    ga_sysmon_beyond(l, r->value[s], r->limit[l]))
			return 1;
	return 0;
}

/* "ok" and every supply, or "out of range" and the supplies outside their
 * limits, each with the limits it has. */
static int show_voltage(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_sysmon_reading r;
	int ret = ga_dev_sysmon(c->fs->dev, &r), bad = 0;
	const char *sep = "";

	if (ret == -ENOLINK)
		return ret;
	if (ret < 0)
		return sb_printf(sb, "none: %s\n", fs_last_error()) ? -ENOMEM : 0;
	for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++)
		if (ga_sysmon_sensors[s].kind == GA_SYSMON_MV)
			bad += out_of_range(&r, s);
	sb_printf(sb, "%s", bad ? "out of range" : "ok");
	for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++) {
		if (ga_sysmon_sensors[s].kind != GA_SYSMON_MV || (bad && !out_of_range(&r, s)))
			continue;
		sb_printf(sb, "%s %s ", sep, ga_sysmon_sensors[s].label);
		put_milli(sb, GA_SYSMON_MV, r.value[s], " V");
		sep = ",";
		if (!bad)
			continue;
		for (unsigned int l = 0, nl = 0; l < GA_SYSMON_LIMIT_COUNT; l++)
			if (ga_sysmon_limits[l].sensor == s && r.limit_known[l]) {
				sb_printf(sb, "%s%s ", nl++ ? ", " : " (", ga_sysmon_side_name(l));
				put_milli(sb, GA_SYSMON_MV, r.limit[l], " V");
			}
		sb_printf(sb, ")");
	}
	sb_printf(sb, "\n");
	return sb->oom ? -ENOMEM : 0;
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

/* The sensor sim/fpga_NAME is about. */
static int sim_sensor(const struct fs_node *n)
{
	for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++)
		if (strncmp(n->name, "fpga_", 5) == 0 && strcmp(n->name + 5, sensor_name[s]) == 0)
			return (int)s;
	return fs_err(-ENOENT, "%s: not a SysMon sensor", n->name);
}

static int show_sim_sensor(struct fs_ctx *c, struct strbuf *sb)
{
	int32_t v;
	int s = sim_sensor(c->node);
	int ret = s < 0 ? s : ga_sim_sysmon(c->fs->dev, (enum ga_sysmon_sensor)s, &v);

	if (ret < 0)
		return ret;
	return put_milli(sb, ga_sysmon_sensors[s].kind, v, "\n") ? -ENOMEM : 0;
}

/* Degrees C or volts as written: an optional sign, digits, up to three
 * decimals, into milli-units. */
static int parse_milli(const char *name, enum ga_sysmon_kind kind, const char *buf, size_t len,
		       int32_t *milli)
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
		return fs_err(-EINVAL, "%s: '%.*s' is not a %s (at most three decimals)", name,
			      (int)(end < 32 ? end : 32), buf,
			      kind == GA_SYSMON_MC ? "temperature: degrees C, e.g. 45, -10 or 97.5"
						   : "voltage: volts, e.g. 0.95 or 1.8");
	for (; decimals < 3; decimals = decimals < 0 ? 1 : decimals + 1)
		v *= 10;
	if (v > INT32_MAX)
		return fs_err(-ERANGE, "%s: '%.*s' is out of range", name,
			      (int)(end < 32 ? end : 32), buf);
	*milli = (int32_t)(sign * v);
	return 0;
}

/* The simulated card's SysMon readings: its model, so every reader
 * (files, metrics, alert rules) sees what a hot card or a sagging supply
 * shows. */
static int store_sim_sensor(struct fs_ctx *c, const char *buf, size_t len)
{
	int32_t v = 0, lo, hi;
	int s = sim_sensor(c->node);
	enum ga_sysmon_kind k;
	const char *unit;
	int ret;

	if (s < 0)
		return s;
	k = ga_sysmon_sensors[s].kind;
	unit = k == GA_SYSMON_MC ? "C" : "V";
	ret = parse_milli(c->node->name, k, buf, len, &v);
	if (ret < 0)
		return ret;
	ret = ga_sim_sysmon_range(c->fs->dev, (enum ga_sysmon_sensor)s, &lo, &hi);
	if (ret < 0)
		return ret;
	if (v < lo || v > hi)
		return fs_err(-ERANGE,
			      "%s: %.3f %s is outside what the card's SysMon code holds "
			      "(%.3f to %.3f %s)",
			      c->node->name, v / 1000.0, unit, lo / 1000.0, hi / 1000.0, unit);
	if (c->check_only)
		return 0;
	return ga_sim_sysmon_set(c->fs->dev, (enum ga_sysmon_sensor)s, v);
}

/* @v milli-units as "%.3f" of v / 1000.0 prints it (exact for whole
 * milli-units), without printf: metrics prints a few dozen a render. */
static void put_milli3(struct strbuf *sb, int32_t v)
{
	int64_t a = v;
	char frac[4];

	if (a < 0) {
		sb_puts(sb, "-");
		a = -a;
	}
	sb_put_uint(sb, (uint64_t)a / 1000);
	frac[0] = '.';
	frac[1] = (char)('0' + a / 100 % 10);
	frac[2] = (char)('0' + a / 10 % 10);
	frac[3] = (char)('0' + a % 10);
	sb_put(sb, frac, sizeof(frac));
}

/* "NAME{ID" and @more (a label or "") then "} ": a sample up to its value. */
static void sample(struct strbuf *sb, const char *name, const char *id, const char *more)
{
	sb_puts(sb, name);
	sb_puts(sb, "{");
	sb_puts(sb, id);
	sb_puts(sb, more);
	sb_puts(sb, "} ");
}

/* The same with a rail label. */
static void rail_sample(struct strbuf *sb, const char *name, const char *id, unsigned int s)
{
	sb_puts(sb, name);
	sb_puts(sb, "{");
	sb_puts(sb, id);
	sb_puts(sb, ",rail=\"");
	sb_puts(sb, sensor_name[s]);
	sb_puts(sb, "\"} ");
}

/* The metrics of one reading (fs_show_metrics, link up): one
 * ga_dev_sysmon pass for every sample.  Written piece by piece rather
 * than with sb_printf, which cost more than the rest of this together. */
void fs_sysmon_metrics(struct fs *fs, struct strbuf *sb, const char *id)
{
	struct ga_sysmon_reading r;
	unsigned int mm;
	char name[96], help[160];

	if (ga_dev_memory_map_version(fs->dev, &mm) == 0) {
		fs_metrics_family(sb, "gpuasync_memory_map_version", "gauge",
				  "the card's BAR0 memory-map version "
				  "(device/firmware/memory_map_version)",
				  NULL);
		sample(sb, "gpuasync_memory_map_version", id, "");
		sb_put_uint(sb, mm);
		sb_puts(sb, "\n");
	}
	if (ga_dev_sysmon(fs->dev, &r) < 0)
		return; /* no SysMon (or refused): no samples, never made-up ones */
	/* temperatures: a family per reading and limit */
	for (unsigned int w = 0; w < NWORDS; w++) {
		char word[64];

		if (ga_sysmon_sensors[word_sensor(w)].kind != GA_SYSMON_MC)
			continue;
		word_name(w, word, sizeof(word));
		snprintf(name, sizeof(name), "gpuasync_fpga_%s_celsius", word);
		fs_metrics_family(sb, name, "gauge", word_doc[w], NULL);
		sample(sb, name, id, "");
		put_milli3(sb, word_milli(&r, w));
		sb_puts(sb, "\n");
	}
	/* supplies: a family per kind of reading and of limit, the rail a label */
	for (unsigned int k = 0; k < PER_SENSOR; k++) {
		static const char *const what[PER_SENSOR] = {"now", "highest since power-up",
							     "lowest since power-up"};

		snprintf(name, sizeof(name), "gpuasync_fpga_voltage%s_volts", per_suffix[k]);
		snprintf(help, sizeof(help),
			 "the FPGA's supply voltage %s, by rail (device/sysmon/RAIL%s)", what[k],
			 per_suffix[k]);
		fs_metrics_family(sb, name, "gauge", help, NULL);
		for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++)
			if (ga_sysmon_sensors[s].kind == GA_SYSMON_MV) {
				rail_sample(sb, name, id, s);
				put_milli3(sb, word_milli(&r, s * PER_SENSOR + k));
				sb_puts(sb, "\n");
			}
	}
	for (unsigned int l = 0; l < GA_SYSMON_LIMIT_COUNT; l++) {
		unsigned int s = ga_sysmon_limits[l].sensor, first = l;
		const char *k = ga_sysmon_side_name(l);

		if (ga_sysmon_sensors[s].kind != GA_SYSMON_MV)
			continue;
		snprintf(name, sizeof(name), "gpuasync_fpga_voltage_%s_volts", k);
		/* the family's header at its first row */
		for (unsigned int e = 0; e < l; e++)
			if (ga_sysmon_sensors[ga_sysmon_limits[e].sensor].kind == GA_SYSMON_MV &&
			    ga_sysmon_limits[e].side == ga_sysmon_limits[l].side && first == l)
				first = e;
		if (first == l) {
			snprintf(help, sizeof(help),
				 "the %s limit the card's SysMon holds for each supply, by rail "
				 "(device/sysmon/RAIL_%s)",
				 k, k);
			fs_metrics_family(sb, name, "gauge", help, NULL);
		}
		if (r.limit_known[l]) {
			rail_sample(sb, name, id, s);
			put_milli3(sb, r.limit[l]);
			sb_puts(sb, "\n");
		}
	}
	fs_metrics_family(sb, "gpuasync_fpga_voltage_out_of_range", "gauge",
			  "1 while the supply is outside its limits, by rail (health/fpga_voltage)",
			  NULL);
	for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++)
		if (ga_sysmon_sensors[s].kind == GA_SYSMON_MV) {
			rail_sample(sb, "gpuasync_fpga_voltage_out_of_range", id, s);
			sb_puts(sb, out_of_range(&r, s) ? "1\n" : "0\n");
		}
	fs_metrics_family(sb, "gpuasync_fpga_overheated", "gauge",
			  "1 while the FPGA is above its critical temperature "
			  "(health/fpga_temperature)",
			  NULL);
	sample(sb, "gpuasync_fpga_overheated", id, "");
	sb_puts(sb, overheated(&r) ? "1\n" : "0\n");
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
	for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++)
		snprintf(sim_doc[s], sizeof(sim_doc[s]),
			 "the SysMon's %s reading (%s; write to change what the card measures)",
			 ga_sysmon_sensors[s].label,
			 ga_sysmon_sensors[s].kind == GA_SYSMON_MC ? "degrees C" : "volts");
	for (unsigned int w = 0; w < NWORDS; w++) {
		unsigned int s = word_sensor(w);
		const char *unit = ga_sysmon_sensors[s].kind == GA_SYSMON_MC ? "degrees C" : "V";

		if (word_meaning(w))
			snprintf(word_doc[w], sizeof(word_doc[w]), "the FPGA's %s %s (%s, SysMon)",
				 ga_sysmon_sensors[s].label, word_meaning(w), unit);
		else
			snprintf(word_doc[w], sizeof(word_doc[w]),
				 "the %s limit the card's SysMon holds for its %s (%s)",
				 ga_sysmon_side_name(w - GA_SYSMON_SENSOR_COUNT * PER_SENSOR),
				 ga_sysmon_sensors[s].label, unit);
	}
}

int fs_sysmon_rows(struct fs *fs, struct fs_node *rows, unsigned int max)
{
	static const struct {
		const char *name, *doc;
		int (*show)(struct fs_ctx *c, struct strbuf *sb);
	} health[2] = {
		{"fpga_temperature",
		 "ok or over critical, the FPGA's temperature and its critical limit; none: no "
		 "SysMon",
		 show_health},
		{"fpga_voltage",
		 "ok or out of range, the FPGA's supplies and the limits of those outside them; "
		 "none: no SysMon",
		 show_voltage},
	};
	struct ga_sysmon_reading r;
	unsigned int n = 0, mm;
	int probe = ga_dev_sysmon(fs->dev, &r);
	bool present = probe == 0 || probe == -EPFNOSUPPORT;
	bool axiversion = ga_dev_memory_map_version(fs->dev, &mm) == 0;

	fs_err_clear();
	make_sensor_names();
	make_docs();
	if (max < NWORDS + GA_SYSMON_SENSOR_COUNT + 6)
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
	for (unsigned int h = 0; (axiversion || fs->sim) && h < 2; h++)
		rows[n++] = (struct fs_node){.name = health[h].name,
					     .parent = FS_D_HEALTH,
					     .dir = FS_D_NONE,
					     .mode = 0444,
					     .flags = FS_LIVE,
					     .show = health[h].show,
					     .reg = -1,
					     .doc = health[h].doc};
	for (unsigned int sn = 0; probe == 0 && sn < GA_SYSMON_SENSOR_COUNT; sn++) {
		struct fs_node *nd = &rows[n++];

		*nd = (struct fs_node){.parent = FS_D_SIM,
				       .dir = FS_D_NONE,
				       .mode = 0644,
				       .flags = FS_LIVE,
				       .show = show_sim_sensor,
				       .store = store_sim_sensor,
				       .visible = is_sim,
				       .reg = -1,
				       .doc = sim_doc[sn]};
		snprintf(nd->name_store, sizeof(nd->name_store), "fpga_%.24s", sensor_name[sn]);
		nd->name = nd->name_store;
	}
	return (int)n;
}
