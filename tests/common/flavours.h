/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The firmware flavours a test runs through: every row of versions.def,
 * and again with the legacy latency block where the version has one.
 * Taken from the table, so a new version is tested without a test edit.
 */
#ifndef GA_TEST_FLAVOURS_H
#define GA_TEST_FLAVOURS_H

#include <stdbool.h>

#include "gpuasync/regs.h"

struct flavour {
	unsigned int version;
	bool legacy; /* the version's legacy layout (latency_block=legacy) */
};

static struct flavour FLAVOURS[2 * GA_VERSION_MAX];

/* Fill FLAVOURS; returns how many there are (call before building suites). */
static inline int flavours_init(void)
{
	int n = 0;

	for (unsigned int i = 0; i < GA_VERSION_MAX; i++) {
		FLAVOURS[n++] = (struct flavour){ga_versions[i].version, false};
		if (ga_versions[i].layout_legacy != ga_versions[i].layout)
			FLAVOURS[n++] = (struct flavour){ga_versions[i].version, true};
	}
	return n;
}

#endif
