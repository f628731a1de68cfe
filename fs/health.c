/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * health/: verdicts a fleet alerts on that no single register gives.
 *
 *   $ cat /mnt/gpuasync/health/frames_flowing
 *   1
 *   $ cat /mnt/gpuasync/health/gpu
 *   none: buffers are in host memory
 *
 * frames_flowing  1 when the card's write engine finished a frame
 *                 (rx_frame_count moved) since the previous look or within
 *                 the last FLOW_WINDOW_S seconds, else 0.  A GPU DRP's
 *                 readers spin, so the GPU reads 100 % busy whether or not
 *                 frames come: this says whether they do.  0 while the link
 *                 is down (the counter cannot be read: no frame was seen).
 * gpu             the GPU the card's buffers live in: "present BDF" while
 *                 its PCI function is there with a link, "gone BDF" when the
 *                 function vanished or its link has no lanes (Xid 79: fallen
 *                 off the bus), "none: ..." when buffers are in host memory
 *                 or the GPU's PCI address is unknown.
 *
 * The same verdicts are gpuasync_frames_flowing and gpuasync_gpu_present
 * in metrics (fs_health_metrics), which examples/gpuasyncfs.rules.yml
 * alerts on (GpuAsyncFramesStopped, GpuAsyncGpuGone).  Write errors rising
 * and the card's link need nothing here: gpuasync_axi_write_error_count_total
 * and gpuasync_link_up already say it (GpuAsyncWriteErrors, GpuAsyncLinkDown).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <gpuasync/platform.h>

#include "fs.h"

/* A look within this long after the counter last moved still says flowing:
 * two looks in the same instant (the file and a scrape) agree. */
#define FLOW_WINDOW_S 2.0

/* The last rx_frame_count seen and when it last moved (one mount per
 * daemon: one of these).  flow_lock is a leaf lock. */
static pthread_mutex_t flow_lock = PTHREAD_MUTEX_INITIALIZER;
static bool flow_seen;
static uint64_t flow_count;
static double flow_changed = -1e9;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 1 while frames flow, 0 when they do not (or cannot be seen). */
static int frames_flowing(struct fs *fs)
{
	uint64_t v;
	double now = now_s();
	int flowing;

	if (ga_dev_link(fs->dev) <= 0 || ga_reg_read64(fs->dev, GA_REG_RX_FRAME_COUNT, 0, &v) < 0)
		return 0;
	pthread_mutex_lock(&flow_lock);
	if (flow_seen && v != flow_count)
		flow_changed = now;
	flow_seen = true;
	flow_count = v;
	flowing = now - flow_changed < FLOW_WINDOW_S;
	pthread_mutex_unlock(&flow_lock);
	return flowing;
}

/*
 * The links are cached: in a virtual machine each sysfs link file costs
 * 20-65 us (its config space reads trap to the hypervisor), and metrics
 * read eight of them at every render, three times its own cost on the GPU
 * machine.  A link or a GPU that changes is seen within FS_PCIE_TTL_MS.
 */
static pthread_mutex_t pcie_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fs_pcie pcie_last;
static double pcie_at = -1e9;

static void pcie_end(struct fs_pcie_end *e)
{
	char path[PATH_MAX];
	struct stat st;

	e->l = (struct ga_pci_link){.width = -1, .max_width = -1};
	e->listed = false;
	e->ok = false;
	if (!e->bdf[0])
		return;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", e->bdf);
	e->listed = stat(path, &st) == 0;
	e->ok = e->listed && ga_platform_link(NULL, e->bdf, &e->l) == 0;
}

void fs_pcie_read(struct fs *fs, struct fs_pcie *out)
{
	double now = now_s();

	pthread_mutex_lock(&pcie_lock);
	if (now - pcie_at >= FS_PCIE_TTL_MS / 1e3) {
		struct fs_pcie p = {.e = {{.end = "card"}, {.end = "gpu"}}, .n = 1};

		/* The simulated card has no bus; a device node is mapped to its
		 * PCI function at each read (the driver may have been rebound). */
		if (fs->sim ||
		    ga_platform_card_pci(NULL, fs->device_spec, p.e[0].bdf, sizeof(p.e[0].bdf)) < 0)
			p.e[0].bdf[0] = '\0';
		if (fs->info.gpu_pci[0])
			snprintf(p.e[p.n++].bdf, sizeof(p.e[1].bdf), "%s", fs->info.gpu_pci);
		for (unsigned int i = 0; i < p.n; i++)
			pcie_end(&p.e[i]);
		pcie_last = p;
		pcie_at = now;
	}
	*out = pcie_last;
	pthread_mutex_unlock(&pcie_lock);
}

/* 1 present, 0 gone, -1 no GPU to tell about. */
static int gpu_present(struct fs *fs)
{
	struct fs_pcie p;

	if (!fs->info.gpu_pci[0])
		return -1;
	fs_pcie_read(fs, &p);
	if (p.n < 2 || !p.e[1].listed)
		return 0;
	/* A function still listed but without a trained link is off the bus
	 * too; where the link files cannot be read, its presence is all we know. */
	if (p.e[1].ok && p.e[1].l.width == 0)
		return 0;
	return 1;
}

static int show_frames_flowing(struct fs_ctx *c, struct strbuf *sb)
{
	return sb_printf(sb, "%d\n", frames_flowing(c->fs)) < 0 ? -ENOMEM : 0;
}

static int show_gpu(struct fs_ctx *c, struct strbuf *sb)
{
	struct fs *fs = c->fs;

	switch (gpu_present(fs)) {
	case 1:
		sb_printf(sb, "present %s\n", fs->info.gpu_pci);
		break;
	case 0:
		sb_printf(sb, "gone %s\n", fs->info.gpu_pci);
		break;
	default:
		sb_printf(sb, "none: %s\n",
			  strcmp(fs->info.memory, "host") == 0
				  ? "buffers are in host memory"
				  : "the GPU's PCI address is not known");
		break;
	}
	return sb->oom ? -ENOMEM : 0;
}

void fs_health_metrics(struct fs *fs, struct strbuf *sb, const char *id)
{
	int gpu = gpu_present(fs);

	fs_metrics_family(sb, "gpuasync_frames_flowing", "gauge",
			  "1 when the write engine finished a frame since the previous look or in "
			  "the last 2 s (health/frames_flowing)",
			  NULL);
	sb_printf(sb, "gpuasync_frames_flowing{%s} %d\n", id, frames_flowing(fs));
	if (gpu < 0)
		return; /* no GPU: no sample, never a made-up one */
	fs_metrics_family(sb, "gpuasync_gpu_present", "gauge",
			  "1 while the GPU holding the buffers is on the bus with a link, 0 "
			  "when it fell off (health/gpu)",
			  NULL);
	sb_printf(sb, "gpuasync_gpu_present{%s,pci=\"%s\"} %d\n", id, fs->info.gpu_pci, gpu);
}

/* clang-format off */
const struct fs_node fs_health_rows[] = {
	{ .name = "health", .parent = FS_D_ROOT, .dir = FS_D_HEALTH, .mode = 0555, .reg = -1,
	  .doc = "verdicts a fleet alerts on (also in metrics)" },
	{ .name = "frames_flowing", .parent = FS_D_HEALTH, .dir = FS_D_NONE, .mode = 0444,
	  .flags = FS_LIVE, .show = show_frames_flowing, .reg = -1,
	  .doc = "1: the write engine finished a frame since the last look or in the last 2 s; 0: none" },
	{ .name = "gpu", .parent = FS_D_HEALTH, .dir = FS_D_NONE, .mode = 0444, .flags = FS_LIVE,
	  .show = show_gpu, .reg = -1,
	  .doc = "the buffers' GPU: present BDF, gone BDF (off the bus), or none (host memory)" },
};
const unsigned int fs_health_nrows = sizeof(fs_health_rows) / sizeof(fs_health_rows[0]);
/* clang-format on */
