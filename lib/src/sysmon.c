/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Card telemetry (gpuasync/telemetry.h): the memory-map version and the
 * SysMon readings, from the driver's hwmon device where there is one, else
 * from the SysMon block's registers converted by the card's family.  Every
 * offset, hwmon file name and conversion comes from gpuasync/sysmon.def
 * (core/sysmon.c); this file only chooses the source and reads it.
 *
 * The source is found once, at the first ga_dev_sysmon, and kept in
 * dev->telemetry: the hwmon files stay open (a pread at offset 0 makes
 * sysfs render the attribute again), or the register path keeps the
 * family and the offsets of every word it reads.  A limit the hwmon
 * device has no file for (the supplies': no driver's hwmon has them) is
 * read from the registers beside the files, where the card has the block.  So each later call is
 * one pass: one pread per file, or one backend call for all the words.
 * A failure to find any source is not kept when it came from a dead link
 * (the card may come back), and is kept otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuasync/telemetry.h"
#include "internal.h"

/* Per sensor: value, highest, lowest; then the limits. */
#define SM_PER_SENSOR 3
#define SM_WORDS      (GA_SYSMON_SENSOR_COUNT * SM_PER_SENSOR + GA_SYSMON_LIMIT_COUNT)
static const char *const sm_suffix[SM_PER_SENSOR] = {"input", "highest", "lowest"};

struct ga_telemetry {
	pthread_mutex_t lock; /* guards the rest; taken before dev->lock */
	bool found;	      /* a source was chosen (or refused for good: rc) */
	int rc;		      /* 0, or why there is none (kept with why) */
	char why[256];
	enum ga_sysmon_source source;
	bool regs;		      /* the family is known: words can be read */
	enum ga_sysmon_family family; /* from the registers */
	int fd[SM_WORDS];	      /* hwmon: one open file per word, or -1 */
	char where[192];
};

/* The offset or hwmon file of word @w: sensors' value, highest, lowest,
 * then the limits, in table order. */
static uint32_t word_offset(unsigned int w)
{
	const struct ga_sysmon_sensor_row *r;

	if (w >= GA_SYSMON_SENSOR_COUNT * SM_PER_SENSOR)
		return ga_sysmon_limits[w - GA_SYSMON_SENSOR_COUNT * SM_PER_SENSOR].offset;
	r = &ga_sysmon_sensors[w / SM_PER_SENSOR];
	return w % SM_PER_SENSOR == 0 ? r->value : w % SM_PER_SENSOR == 1 ? r->highest : r->lowest;
}

static void word_file(unsigned int w, char *name, size_t len)
{
	if (w >= GA_SYSMON_SENSOR_COUNT * SM_PER_SENSOR)
		snprintf(name, len, "%s",
			 ga_sysmon_limits[w - GA_SYSMON_SENSOR_COUNT * SM_PER_SENSOR].hwmon);
	else
		snprintf(name, len, "%s_%s", ga_sysmon_sensors[w / SM_PER_SENSOR].hwmon,
			 sm_suffix[w % SM_PER_SENSOR]);
}

/* A sysfs attribute's one line, newline dropped: 0 or a negative errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* @parent/hwmonN whose name reads "datadev", into @dir. */
static int hwmon_in(const char *parent, char *dir, size_t len)
{
	char path[PATH_MAX + 300], name[64];
	struct dirent *e;
	DIR *d = opendir(parent);
	int rc = -ENOENT;

	if (!d)
		return -ENOENT;
	while (rc && (e = readdir(d))) {
		if (strncmp(e->d_name, "hwmon", 5) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/name", parent, e->d_name);
		if (read_line(path, name, sizeof(name)) == 0 && strcmp(name, "datadev") == 0 &&
		    (size_t)snprintf(dir, len, "%s/%s", parent, e->d_name) < len)
			rc = 0;
	}
	closedir(d);
	return rc;
}

int ga_hwmon_find(const char *devdir, char *dir, size_t len)
{
	char parent[PATH_MAX];

	/* upstream registers it on the PCI device (the node's "device"); a
	 * driver may register it on the node's own device instead */
	snprintf(parent, sizeof(parent), "%s/device/hwmon", devdir);
	if (hwmon_in(parent, dir, len) == 0)
		return 0;
	snprintf(parent, sizeof(parent), "%s/hwmon", devdir);
	return hwmon_in(parent, dir, len);
}

static void close_fds(struct ga_telemetry *t)
{
	for (unsigned int w = 0; w < SM_WORDS; w++) {
		if (t->fd[w] >= 0)
			close(t->fd[w]);
		t->fd[w] = -1;
	}
}

/* Open every file of the table in @dir; a channel whose label is not the
 * table's is someone else's layout: not ours to read. */
static int hwmon_open(struct ga_telemetry *t, const char *dir)
{
	char path[PATH_MAX + 80], name[64], label[64];

	if (strlen(dir) >= sizeof(t->where))
		return ga_err(-ENAMETOOLONG, "%s: a hwmon path too long to keep", dir);

	for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++) {
		snprintf(path, sizeof(path), "%s/%s_label", dir, ga_sysmon_sensors[s].hwmon);
		if (read_line(path, label, sizeof(label)) == 0 &&
		    strcmp(label, ga_sysmon_sensors[s].label) != 0)
			return ga_err(-EPROTO, "%s: %s is labelled '%s', expected '%s'", dir,
				      ga_sysmon_sensors[s].hwmon, label,
				      ga_sysmon_sensors[s].label);
	}
	for (unsigned int w = 0; w < SM_WORDS; w++) {
		word_file(w, name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		t->fd[w] = open(path, O_RDONLY | O_CLOEXEC);
		/* a limit without a file comes from the registers, if any */
		if (t->fd[w] < 0 && errno == ENOENT && w >= GA_SYSMON_SENSOR_COUNT * SM_PER_SENSOR)
			continue;
		if (t->fd[w] < 0) {
			int e = errno;

			close_fds(t);
			return ga_err(-e, "%s: cannot open %s: %s", dir, name, strerror(e));
		}
	}
	memcpy(t->where, dir, strlen(dir) + 1);
	return 0;
}

static int hwmon_read(struct ga_telemetry *t, int32_t *v)
{
	char buf[32], *end;

	for (unsigned int w = 0; w < SM_WORDS; w++) {
		ssize_t n;
		long x;

		if (t->fd[w] < 0)
			continue;
		n = pread(t->fd[w], buf, sizeof(buf) - 1, 0);
		if (n < 0) {
			char name[64];
			int e = errno;

			word_file(w, name, sizeof(name));
			return ga_err(-e, "%s/%s: %s", t->where, name, strerror(e));
		}
		buf[n] = '\0';
		x = strtol(buf, &end, 10);
		if (end == buf || x < INT32_MIN || x > INT32_MAX)
			return ga_err(-EPROTO, "%s: a hwmon value that is not a number: '%.*s'",
				      t->where, (int)strcspn(buf, "\n"), buf);
		v[w] = (int32_t)x;
	}
	return 0;
}

/* ga_sysmon_probe's reader: AxiVersion words through the backend (dev->lock
 * held); all ones when a read fails, as a dead link would read. */
static uint32_t fw_word(void *ctx, uint32_t off)
{
	struct ga_dev *dev = ctx;
	uint32_t v;

	return dev->be->fw_read(dev, off, &v) == 0 ? v : 0xffffffffu;
}

/* The register path: the AxiVersion gate, then the card's family into
 * t->family.  Prerequisite: t->lock held. */
static int regs_probe(struct ga_dev *dev, struct ga_telemetry *t)
{
	const char *why = NULL;
	int rc, family;

	if (!dev->be->fw_read || !dev->be->sysmon_read)
		return ga_err(-ENOTSUP,
			      "%s backend: no SysMon on this card (no hwmon device, and "
			      "BAR0's SysMon block cannot be read)",
			      dev->be->name);
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	family = rc ? rc : ga_sysmon_probe(fw_word, dev, &why);
	pthread_mutex_unlock(&dev->lock);
	if (rc)
		return rc;
	if (family == -EPFNOSUPPORT)
		return ga_err(family, "SysMon not read: %s", why);
	if (family < 0)
		return ga_err(family, "no SysMon on this card: %s", why);
	t->family = (enum ga_sysmon_family)family;
	t->regs = true;
	return 0;
}

/* Choose the source: hwmon, else the registers where the card has them.
 * Prerequisite: t->lock held. */
static int find_source(struct ga_dev *dev, struct ga_telemetry *t)
{
	char dir[PATH_MAX];
	size_t len;
	int rc;

	if (dev->be->hwmon_dir && dev->be->hwmon_dir(dev, dir, sizeof(dir)) == 0) {
		rc = hwmon_open(t, dir);
		if (rc)
			return rc;
		t->source = GA_SYSMON_FROM_HWMON;
		for (unsigned int w = 0; w < SM_WORDS; w++)
			if (t->fd[w] < 0) {
				/* without the block those limits stay unknown */
				if (regs_probe(dev, t) == 0) {
					len = strlen(t->where);
					snprintf(t->where + len, sizeof(t->where) - len,
						 " and BAR0 0x%x", GA_SYSMON_BASE);
				}
				ga_err_clear();
				break;
			}
		return 0;
	}
	rc = regs_probe(dev, t);
	if (rc)
		return rc;
	snprintf(t->where, sizeof(t->where), "BAR0 0x%x (%s, %s)", GA_SYSMON_BASE,
		 ga_sysmon_families[t->family].name, ga_sysmon_families[t->family].primitive);
	t->source = GA_SYSMON_FROM_REGISTERS;
	return 0;
}

/* The words without a hwmon file from the registers, converted; a word
 * neither holds is left unknown. */
static int regs_read(struct ga_dev *dev, struct ga_telemetry *t, int32_t *v, bool *known)
{
	uint32_t off[SM_WORDS], raw[SM_WORDS];
	unsigned int idx[SM_WORDS], n = 0;
	int rc;

	for (unsigned int w = 0; w < SM_WORDS; w++) {
		known[w] = t->fd[w] >= 0;
		if (!known[w] && t->regs) {
			idx[n] = w;
			off[n++] = word_offset(w);
		}
	}
	if (n == 0)
		return 0;
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	if (rc == 0)
		rc = dev->be->sysmon_read(dev, off, raw, n);
	pthread_mutex_unlock(&dev->lock);
	if (rc)
		return rc;
	for (unsigned int i = 0; i < n; i++) {
		unsigned int w = idx[i];
		unsigned int s =
			w < GA_SYSMON_SENSOR_COUNT * SM_PER_SENSOR
				? w / SM_PER_SENSOR
				: ga_sysmon_limits[w - GA_SYSMON_SENSOR_COUNT * SM_PER_SENSOR]
					  .sensor;

		/* SysMon's ADC codes are 16 bits: all ones above them is a
		 * read that went nowhere */
		if (raw[i] == 0xffffffffu)
			return ga_err(-ENOLINK, "SysMon at BAR0 0x%x reads all ones: link down",
				      GA_SYSMON_BASE);
		v[w] = ga_sysmon_to_milli(t->family, ga_sysmon_sensors[s].kind, raw[i]);
		known[w] = true;
	}
	return 0;
}

static struct ga_telemetry *telemetry(struct ga_dev *dev)
{
	struct ga_telemetry *t;

	pthread_mutex_lock(&dev->lock);
	t = dev->telemetry;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (t) {
			pthread_mutex_init(&t->lock, NULL);
			for (unsigned int w = 0; w < SM_WORDS; w++)
				t->fd[w] = -1;
			dev->telemetry = t;
		}
	}
	pthread_mutex_unlock(&dev->lock);
	return t;
}

int ga_dev_sysmon(struct ga_dev *dev, struct ga_sysmon_reading *r)
{
	struct ga_telemetry *t;
	int32_t v[SM_WORDS];
	bool known[SM_WORDS];
	int rc;

	if (!dev || !r)
		return ga_err(-EINVAL, "ga_dev_sysmon: NULL argument");
	t = telemetry(dev);
	if (!t)
		return ga_err(-ENOMEM, "out of memory");
	pthread_mutex_lock(&t->lock);
	if (!t->found) {
		rc = find_source(dev, t);
		/* a dead link may come back: look again next time */
		if (rc != -ENOLINK) {
			t->found = true;
			t->rc = rc;
			snprintf(t->why, sizeof(t->why), "%s", rc ? ga_last_error() : "");
		}
	} else if (t->rc) {
		rc = ga_err(t->rc, "%s", t->why);
	} else {
		rc = 0;
	}
	if (rc == 0 && t->source == GA_SYSMON_FROM_HWMON) {
		/* the driver reads the card: all ones there convert to garbage */
		rc = ga_dev_link(dev) == 0 ? ga_err(-ENOLINK, "link down: SysMon cannot be read")
					   : hwmon_read(t, v);
	}
	if (rc == 0)
		rc = regs_read(dev, t, v, known);
	if (rc == 0) {
		for (unsigned int s = 0; s < GA_SYSMON_SENSOR_COUNT; s++) {
			r->value[s] = v[s * SM_PER_SENSOR];
			r->highest[s] = v[s * SM_PER_SENSOR + 1];
			r->lowest[s] = v[s * SM_PER_SENSOR + 2];
		}
		for (unsigned int l = 0; l < GA_SYSMON_LIMIT_COUNT; l++) {
			unsigned int w = GA_SYSMON_SENSOR_COUNT * SM_PER_SENSOR + l;

			r->limit_known[l] = known[w];
			r->limit[l] = known[w] ? v[w] : 0;
		}
		r->source = t->source;
		snprintf(r->where, sizeof(r->where), "%s", t->where);
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int ga_dev_memory_map_version(struct ga_dev *dev, unsigned int *version)
{
	const struct ga_fw_field *f = &ga_fw_fields[GA_FW_MEMORY_MAP_VERSION];
	uint32_t w = 0;
	int rc;

	if (!dev || !version)
		return ga_err(-EINVAL, "ga_dev_memory_map_version: NULL argument");
	if (!dev->be->fw_read)
		return ga_err(-ENOTSUP,
			      "%s backend: AxiVersion (the memory-map version) cannot "
			      "be read",
			      dev->be->name);
	pthread_mutex_lock(&dev->lock);
	rc = ga_link_check_locked(dev);
	if (rc == 0)
		rc = dev->be->fw_read(dev, f->offset, &w);
	pthread_mutex_unlock(&dev->lock);
	if (rc)
		return rc;
	*version = (w >> f->lsb) & ((1u << (f->msb - f->lsb + 1)) - 1);
	return 0;
}

void ga_telemetry_free(struct ga_dev *dev)
{
	struct ga_telemetry *t = dev->telemetry;

	if (!t)
		return;
	close_fds(t);
	pthread_mutex_destroy(&t->lock);
	free(t);
	dev->telemetry = NULL;
}
