/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * ctlstore: what the simulated card's store trap costs (issue 25 item 4,
 * docs/sim.md "Stores through the mapping").
 *
 *   ctlstore [STORES]      (default 20000)
 *
 * Stores through ga_dev_map_regs's mapping to the control word (the value
 * it holds, so nothing changes), with trap=yes (each store faults, is
 * single-stepped and logged) and trap=no (a plain store into shared
 * memory), in one run; then the same to a free-list word, which is on
 * the control page on V1 (every re-arm through the mapping is trapped)
 * and on a page of its own on V4 and V5 (never trapped).  Wall-clock
 * microseconds per store and the ratio.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpuasync/device.h"
#include "gpuasync/sim.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Microseconds per store of @id's word through the mapping of a sim @spec. */
static double per_store(const char *spec, enum ga_reg_id id, unsigned int n)
{
	struct ga_dev_info info;
	volatile uint32_t *regs;
	struct ga_dev *dev;
	uint32_t off;
	double t0;

	if (ga_dev_open(spec, &dev) || ga_dev_map_regs(dev, &regs)) {
		fprintf(stderr, "ctlstore: %s: %s\n", spec, ga_last_error());
		exit(1);
	}
	ga_dev_info(dev, &info);
	if (ga_reg_offset(id, info.layout, info.version, 0, info.max_buffers, &off))
		exit(1);
	t0 = now_s();
	for (unsigned int i = 0; i < n; i++)
		regs[off / 4] = id == GA_REG_FREE_LIST ? 0 : regs[off / 4];
	t0 = now_s() - t0;
	ga_dev_unmap_regs(dev, regs);
	ga_dev_close(dev);
	return t0 * 1e6 / n;
}

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 0) : 20000;
	static const struct {
		unsigned int version;
		enum ga_reg_id id;
		const char *what;
	} rows[] = {
		{4, GA_REG_WRITE_ENABLE, "control word (V4)"},
		{1, GA_REG_WRITE_ENABLE, "control word (V1)"},
		{4, GA_REG_FREE_LIST, "free list (V4: own page)"},
		{1, GA_REG_FREE_LIST, "free list (V1: control page)"},
	};

	printf("# ctlstore: %u stores each, us per store\n", n);
	printf("%-30s %10s %10s %8s\n", "store to", "trap=yes", "trap=no", "ratio");
	for (unsigned int i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char yes[64], no[64];
		double y, o;

		snprintf(yes, sizeof(yes), "sim:version=%u,trap=yes", rows[i].version);
		snprintf(no, sizeof(no), "sim:version=%u,trap=no", rows[i].version);
		y = per_store(yes, rows[i].id, n);
		o = per_store(no, rows[i].id, n);
		printf("%-30s %10.3f %10.3f %8.0f\n", rows[i].what, y, o, y / o);
	}
	return 0;
}
