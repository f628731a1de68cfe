// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * device/platform/: the platform doctor (gpuasync/platform.h) under the
 * mount, one file per check holding its verdict line, exactly what
 * `gpuasyncfs --check --explain DEVICE --no-open` prints for it (the line,
 * why, what to do).  Rows are generated
 * from the library's table, so a new check is a new file here too.  Read
 * at open (each read from offset 0 runs the checks again: links retrain,
 * drivers reload).  The card is not opened a second time (the mount has
 * it), so the stale check says so.  Absent on the simulated card, which
 * has no bus to look at.
 *
 * device/topology beside it: which GPU the card pairs with and why
 * (ga_platform_topology), the same text as `gpuasyncfs --topology DEVICE`
 * plus a "paired" line: the GPU the buffers live in where CUDA says, else
 * the GPU the rule gave the card when it was mounted, so a GPU that has
 * fallen off the bus since shows as GONE.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gpuasync/platform.h>

#include "fs.h"

static int show_platform(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;
	static struct ga_check_result res[GA_CHECK_COUNT]; /* under the library's run lock */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	char line[2048];
	int rc = -ENOENT;

	o.card = c->fs->device_spec;
	o.open_device = 0;
	pthread_mutex_lock(&lock);
	if (ga_platform_run(&o, res) >= 0)
		for (int i = 0; i < GA_CHECK_COUNT; i++)
			if (!strcmp(ga_check_info(i)->name, c->node->name)) {
				ga_check_format(&res[i], line, sizeof(line));
				rc = sb_puts(sb, line);
			}
	pthread_mutex_unlock(&lock);
	return rc;
}

/* The rule's GPU for the card when it was mounted ("" none); written
 * once before the session starts, read after. */
static char paired_at_mount[16];

static int show_topology(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;
	static struct ga_topology t; /* under lock */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int rc;

	o.card = c->fs->device_spec;
	o.open_device = 0;
	o.cuda = 0;
	pthread_mutex_lock(&lock);
	memset(&t, 0, sizeof(t));
	if (c->fs->info.gpu_pci[0]) {
		t.paired = c->fs->info.gpu_pci;
		t.paired_from = "the mount's buffers, as CUDA places them";
	} else if (paired_at_mount[0]) {
		t.paired = paired_at_mount;
		t.paired_from = "the rule's choice when mounted";
	}
	rc = ga_platform_topology(&o, &t);
	if (!rc)
		rc = sb_puts(sb, t.text);
	pthread_mutex_unlock(&lock);
	return rc;
}

int fs_platform_rows(struct fs *fs, struct fs_node *rows, unsigned int max)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;
	static struct ga_topology t;
	unsigned int n = 0;

	if (fs->sim)
		return 0;
	if (max < GA_CHECK_COUNT + 2)
		return -ENOSPC;
	o.card = fs->device_spec;
	o.open_device = 0;
	o.cuda = 0;
	if (!ga_platform_topology(&o, &t))
		snprintf(paired_at_mount, sizeof(paired_at_mount), "%s", t.gpu);
	rows[n++] = (struct fs_node){.name = "platform",
				     .parent = FS_D_DEVICE,
				     .dir = FS_D_PLATFORM,
				     .mode = 0555,
				     .reg = -1,
				     .doc = "will GPUDirect work here: one verdict line per check "
					    "(gpuasyncfs --check; docs/platform.md)"};
	for (int i = 0; i < GA_CHECK_COUNT; i++) {
		struct fs_node *r = &rows[n++];

		*r = (struct fs_node){.parent = FS_D_PLATFORM,
				      .dir = FS_D_NONE,
				      .mode = 0444,
				      .show = show_platform,
				      .reg = -1,
				      .doc = ga_check_info(i)->title};
		snprintf(r->name_store, sizeof(r->name_store), "%s", ga_check_info(i)->name);
	}
	rows[n++] = (struct fs_node){.name = "topology",
				     .parent = FS_D_DEVICE,
				     .dir = FS_D_NONE,
				     .mode = 0444,
				     .show = show_topology,
				     .reg = -1,
				     .doc = "which GPU the card pairs with and why: PCIe ancestry, "
					    "NUMA, cores, Slurm's rule (docs/platform.md)"};
	return (int)n;
}
