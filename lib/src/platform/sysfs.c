// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Readers for the platform doctor: every path is the run's root plus the
 * path the kernel uses, so a fixture tree or a guest's /sys answers the
 * same calls.  Each returns 0 or a negative errno and never exits.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "pf.h"

static void vpath(const struct pf *pf, char *buf, const char *fmt, va_list ap)
{
	size_t n = (size_t)snprintf(buf, PATH_MAX, "%s", pf->root);

	if (n < PATH_MAX)
		vsnprintf(buf + n, PATH_MAX - n, fmt, ap);
}

void pf_path(const struct pf *pf, char *buf, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vpath(pf, buf, fmt, ap);
	va_end(ap);
}

static int read_path(const char *p, char *buf, size_t len)
{
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = -errno;

		close(fd);
		return e;
	}
	close(fd);
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

int pf_read(const struct pf *pf, char *buf, size_t len, const char *fmt, ...)
{
	char p[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vpath(pf, p, fmt, ap);
	va_end(ap);
	buf[0] = 0;
	return read_path(p, buf, len);
}

int pf_read_ull(const struct pf *pf, unsigned long long *v, const char *fmt, ...)
{
	char p[PATH_MAX], buf[64], *end;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vpath(pf, p, fmt, ap);
	va_end(ap);
	rc = read_path(p, buf, sizeof(buf));
	if (rc)
		return rc;
	errno = 0;
	*v = strtoull(buf, &end, 0);
	if (errno || end == buf || (*end && !isspace((unsigned char)*end)))
		return -EINVAL;
	return 0;
}

int pf_link_name(const struct pf *pf, char *buf, size_t len, const char *fmt, ...)
{
	char p[PATH_MAX], t[PATH_MAX];
	const char *base;
	va_list ap;
	ssize_t n;

	va_start(ap, fmt);
	vpath(pf, p, fmt, ap);
	va_end(ap);
	n = readlink(p, t, sizeof(t) - 1);
	if (n < 0)
		return -errno;
	t[n] = 0;
	base = strrchr(t, '/');
	snprintf(buf, len, "%s", base ? base + 1 : t);
	return 0;
}

bool pf_exists(const struct pf *pf, const char *fmt, ...)
{
	char p[PATH_MAX];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vpath(pf, p, fmt, ap);
	va_end(ap);
	return stat(p, &st) == 0;
}

bool pf_is_bdf(const char *s)
{
	unsigned int dom, bus, dev, fn;
	int n = 0;

	return strlen(s) == 12 && sscanf(s, "%4x:%2x:%2x.%1x%n", &dom, &bus, &dev, &fn, &n) == 4 &&
	       n == 12;
}

int pf_dev_load(const struct pf *pf, const char *bdf, struct pf_dev *d)
{
	unsigned long long v;
	char p[PATH_MAX];
	int rc;

	memset(d, 0, sizeof(*d));
	snprintf(d->bdf, sizeof(d->bdf), "%s", bdf);
	pf_path(pf, p, "/sys/bus/pci/devices/%s", bdf);
	if (!realpath(p, d->path))
		return -errno;
	if ((rc = pf_read_ull(pf, &v, "/sys/bus/pci/devices/%s/vendor", bdf)))
		return rc;
	d->vendor = (unsigned int)v;
	if (!pf_read_ull(pf, &v, "/sys/bus/pci/devices/%s/device", bdf))
		d->device = (unsigned int)v;
	if (!pf_read_ull(pf, &v, "/sys/bus/pci/devices/%s/class", bdf))
		d->class = (unsigned int)v;
	return 0;
}

int pf_chain(const struct pf_dev *d, char *rc, size_t rclen, char (*bdfs)[16], int cap)
{
	const char *s = strstr(d->path, "/devices/");
	char tmp[PATH_MAX], *save = NULL, *c;
	int n = 0;

	rc[0] = 0;
	if (!s)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s", s + strlen("/devices/"));
	for (c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!rc[0]) {
			snprintf(rc, rclen, "%s", c);
			continue;
		}
		if (pf_is_bdf(c) && n < cap)
			snprintf(bdfs[n++], 16, "%s", c);
	}
	return n;
}

int pf_config(const struct pf *pf, const char *bdf, uint8_t *buf, size_t len)
{
	char p[PATH_MAX];
	size_t got = 0;
	int fd;

	pf_path(pf, p, "/sys/bus/pci/devices/%s/config", bdf);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)got);

		if (n < 0) {
			int e = -errno;

			close(fd);
			return e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	return (int)got;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int pf_ext_cap(const uint8_t *cfg, int n, unsigned int id)
{
	unsigned int off = 0x100;

	if (n < 0x104)
		return -ENODATA;
	/* At most (4096 - 256) / 4 capabilities: a looping list ends too. */
	for (int i = 0; i < 960 && off >= 0x100 && off + 4 <= (unsigned int)n; i++) {
		uint32_t h = le32(cfg + off);

		if (h == 0 || h == 0xffffffff)
			return 0;
		if ((h & 0xffff) == id)
			return (int)off;
		off = (h >> 20) & 0xffc;
	}
	return 0;
}

int pf_parse_list(const char *s, uint64_t *bits, unsigned int nbits)
{
	const char *p = s;

	memset(bits, 0, (nbits + 63) / 64 * 8);
	while (*p && *p != '\n') {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;

		if (end == p)
			return -EINVAL;
		p = end;
		if (*p == '-') {
			b = strtoul(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				return -EINVAL;
			p = end;
		}
		for (unsigned long i = a; i <= b && i < nbits; i++)
			bits[i / 64] |= 1ull << (i % 64);
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
	}
	return 0;
}

#define CPU_LIST_BITS 4096

int pf_cpus_valid(const char *root, const char *list)
{
	static uint64_t want[CPU_LIST_BITS / 64], have[CPU_LIST_BITS / 64];
	char p[PATH_MAX], online[4096];
	bool any = false;

	if (pf_parse_list(list, want, CPU_LIST_BITS))
		return ga_err(-EINVAL, "CPU list '%s': not a list like 0-3,8", list);
	for (int i = 0; i < CPU_LIST_BITS / 64; i++)
		any |= want[i] != 0;
	if (!any)
		return ga_err(-EINVAL, "CPU list '%s': no CPU in it", list);
	snprintf(p, sizeof(p), "%s/sys/devices/system/cpu/online", root);
	if (read_path(p, online, sizeof(online)) || pf_parse_list(online, have, CPU_LIST_BITS))
		return 0; /* the machine's CPUs unknown: the form was right */
	for (unsigned int c = 0; c < CPU_LIST_BITS; c++)
		if ((want[c / 64] >> (c % 64) & 1) && !(have[c / 64] >> (c % 64) & 1))
			return ga_err(
				-EINVAL,
				"CPU list '%s': CPU %u is not one of this machine's (online: %s)",
				list, c, online);
	return 0;
}
