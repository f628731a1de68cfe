/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The platform doctor: will GPUDirect from the card into the GPU work on
 * this machine, and if not, why.  One table of checks (ga_platform_checks),
 * each reading what the kernel already says (sysfs, procfs, PCI config
 * space, the NVIDIA driver's files) under a root directory, so the same
 * code runs on /, on a fixture tree and in a QEMU guest.  Each check gives
 * one verdict: OK, WARN (works, but slower or fragile, or could not tell),
 * FAIL (the data path is not expected to work).  A check that cannot read
 * what it needs says "could not tell" and why, with WARN: never OK, and
 * never FAIL on a guess.
 *
 *     struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;
 *     struct ga_check_result r[GA_CHECK_COUNT];
 *     int worst = ga_platform_run(&o, r);   // GA_VERDICT_FAIL: do not expect it to work
 *
 * docs/platform.md explains each check; it is built from the same table.
 */
#ifndef GPUASYNC_PLATFORM_H
#define GPUASYNC_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ga_verdict { GA_VERDICT_OK, GA_VERDICT_WARN, GA_VERDICT_FAIL };
/* "OK", "WARN", "FAIL". */
const char *ga_verdict_name(enum ga_verdict v);

/* The checks, in the order they run and print. */
enum ga_check_id {
	GA_CHECK_CARD,		/* the card: found, bound to a driver */
	GA_CHECK_GPU,		/* the GPUs: found */
	GA_CHECK_PCIE_PATH,	/* card <-> each GPU: common switch / root port / root complex */
	GA_CHECK_ACS,		/* ACS peer redirect on the bridges of that path */
	GA_CHECK_IOMMU,		/* IOMMU present, the card's group and its type */
	GA_CHECK_LINK_CARD,	/* the card's link: current vs maximum speed and width */
	GA_CHECK_LINK_GPU,	/* the GPUs' links */
	GA_CHECK_NUMA,		/* NUMA nodes of card, GPU and the allowed CPUs */
	GA_CHECK_BAR1,		/* GPU BAR1 size against the buffers wanted */
	GA_CHECK_NVIDIA,	/* NVIDIA kernel module: open or proprietary, version */
	GA_CHECK_STREAM_MEMOPS, /* NVreg_EnableStreamMemOPs */
	GA_CHECK_DMABUF,	/* kernel dma-buf support */
	GA_CHECK_PIN_PATH,	/* which pin path the library will take */
	GA_CHECK_CARD_DRIVER,	/* datadev or gpuasync.ko, firmware version, GPU async on */
	GA_CHECK_STALE,		/* buffer address registers left by a process gone */
	GA_CHECK_PAIRING,	/* several cards/GPUs: each card with its nearest GPU */
	GA_CHECK_COUNT
};

#define GA_PLATFORM_MAX_DEVS 16 /* cards or GPUs looked at */

struct ga_platform_opts {
	/* Prefix of every path read (/sys, /proc, /dev, /boot): "" or NULL
	 * for the running system, a directory laid out like / for tests. */
	const char *root;
	/* The card: a device node (/dev/datadev_0, /dev/gpuasync_0), a PCI
	 * address (0000:01:00.0), or NULL to look for one (gpuasync.ko's
	 * class, datadev's driver, PCI id 1a4a:2030).  PCI addresses after a
	 * comma are further cards, for the pairing. */
	const char *card;
	/* GPUs by PCI address, comma separated; NULL: every NVIDIA display
	 * or 3D controller (vendor 10de, class 03xx).  Naming another device
	 * lets a stand-in play the GPU (its largest BAR plays BAR1). */
	const char *gpus;
	/* Bytes of GPU memory the buffers will pin (BAR1 must map them);
	 * 0: judge BAR1 against GA_PLATFORM_BAR1_SMALL only. */
	uint64_t buffer_bytes;
	/* CPUs the daemon may run on, as a list ("0-3,8"); NULL: this
	 * process's affinity (sched_getaffinity). */
	const char *cpus;
	/* Open the card through libgpuasync to read its address registers
	 * (the stale check); false: that check says it was not asked. */
	int open_device;
	/* Ask CUDA (libcuda.so.1, when it loads) about the GPUs whose PCI
	 * address it reports: dma-buf export and GPUDirect RDMA support.
	 * A GPU CUDA does not list is not asked about, so a --root tree
	 * never borrows this machine's answers. */
	int cuda;
};
#define GA_PLATFORM_OPTS_DEFAULT                                                                   \
	{                                                                                          \
		.root = NULL, .open_device = 1, .cuda = 1                                          \
	}

/* BAR1 at or below this is a consumer card's small window. */
#define GA_PLATFORM_BAR1_SMALL (256ull << 20)

struct ga_check_result {
	enum ga_check_id id;
	enum ga_verdict verdict;
	char found[768]; /* what was found ("could not tell: ..." when unsure) */
	char todo[384];	 /* what to do; "" when nothing */
};

/* One row of the table: what docs/platform.md and --check print. */
struct ga_check_info {
	const char *name; /* short name: "pcie_path" (the file under device/platform/) */
	const char *title;
	const char *why;   /* why it matters for the FPGA->GPU data path */
	const char *fixes; /* what OK/WARN/FAIL mean and what to do, for the docs */
};
const struct ga_check_info *ga_check_info(enum ga_check_id id);

/*
 * Run every check into @out (GA_CHECK_COUNT entries, in enum order).
 * Returns the worst verdict (GA_VERDICT_FAIL: GPUDirect is not expected to
 * work), or a negative errno for bad options, with the reason in
 * ga_last_error() and nothing run: -EINVAL when @opts or @out is NULL, a
 * GPU is not a PCI address, or the CPU list is not one ("0-3,8") or names
 * a CPU the machine does not have online (the root's
 * /sys/devices/system/cpu/online; only the form is checked without it);
 * -ENOENT or -ENOTDIR when the root is not a directory.
 * Prints nothing; reads only; takes no lock a running mount holds.
 */
int ga_platform_run(const struct ga_platform_opts *opts, struct ga_check_result *out);

/* The short line, at most GA_CHECK_SHORT_WIDTH characters before its
 * newline: "FAIL iommu: <found>", the found text cut at a "; " or ", "
 * with " ... (--explain)" when it does not fit.  Returns the length. */
#define GA_CHECK_SHORT_WIDTH 100
int ga_check_format_short(const struct ga_check_result *r, char *buf, size_t len);

/* The whole verdict: "FAIL acs: <found>" (in full), then "     why: <why>"
 * and, when there is advice, "     do:  <todo>", each line ending in a
 * newline; returns the length as snprintf does. */
int ga_check_format(const struct ga_check_result *r, char *buf, size_t len);

/*
 * What can change while a card runs: a PCIe link retrains (a marginal
 * slot drops to Gen1, a GPU idles down).  Read from sysfs at each call
 * (four small files), for the mount's metrics.
 */
struct ga_pci_link {
	char bdf[16];	  /* the PCI function read: "0000:07:00.0" */
	double speed;	  /* GT/s now (current_link_speed); 0: could not tell */
	double max_speed; /* GT/s it can do (max_link_speed); 0: could not tell */
	int width;	  /* lanes now (current_link_width; 0: link down); -1: could not tell */
	int max_width;	  /* lanes it can do (max_link_width); -1: could not tell */
};

/*
 * The PCI function behind card @card (a device node or a PCI address, as
 * ga_platform_opts.card) under @root ("" or NULL: /), into @bdf: 0;
 * -ENODEV when the card has none (gpuasync.ko's emulated card), -ENOENT
 * when it cannot be told (no such node, no class or proc entry).
 */
int ga_platform_card_pci(const char *root, const char *card, char *bdf, size_t len);

/*
 * PCI function @bdf's link now, from current_link_speed, max_link_speed,
 * current_link_width and max_link_width: 0 when all four were read, else
 * the first error (-ENOENT: not a PCIe function, or gone), the fields not
 * read left at "could not tell".  Never a guess: a speed the kernel gives
 * as "Unknown" (link down) stays 0.
 */
int ga_platform_link(const char *root, const char *bdf, struct ga_pci_link *l);

/*
 * Which GPU the card pairs with, and why (device/topology of a mount,
 * gpuasyncfs --topology): the rule LCLS-II's Slurm gres generator
 * (gen_gres_conf.py) applies, computed from sysfs so it works under any
 * driver: each card, in the order of its /proc/datadev_N name, takes the
 * GPU with which it shares the deepest PCIe ancestry; cards that share a
 * bridge below the root complex with a free GPU choose first.  Also the
 * PCIe ancestry, NUMA nodes and local CPUs of card and GPU, the cores
 * Slurm is given, and where the doctor's pairing check (and @paired)
 * differ from the rule or name a GPU gone from the bus.
 * docs/platform.md "The pairing, per card" says it line by line.
 */
struct ga_topology {
	const char *paired;	 /* in: the GPU the card is known to feed (a PCI address), or
				  * NULL: checked to be on the bus and compared with the rule */
	const char *paired_from; /* in: where @paired comes from ("the mount's buffers") */
	enum ga_verdict verdict; /* out: OK, WARN (crosses the root complex, a choice differs),
				  * FAIL (no GPU for the card, @paired gone) */
	char gpu[16];		 /* out: the GPU the rule pairs the card with, "" for none */
	char text[4096];	 /* out: "key  value" lines, the verdict first */
};

/*
 * Fill @t for the card of @opts (opts->card: the card, then further cards
 * after commas; opts->gpus; opts->root; open_device and cuda are not used).
 * 0, or a negative errno for options ga_platform_run would refuse (the
 * reason in ga_last_error()).  A card that cannot be found is a FAIL in
 * @t, not an error.
 */
int ga_platform_topology(const struct ga_platform_opts *opts, struct ga_topology *t);

#ifdef __cplusplus
}
#endif
#endif /* GPUASYNC_PLATFORM_H */
