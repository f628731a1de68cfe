/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the platform doctor: the state one run shares between its checks
 * (the card and GPUs found, results so far) and the small readers of
 * sysfs/procfs files under the run's root.  sysfs.c has the readers,
 * result.c what fills in a check's result, checks_pci.c the topology
 * checks, checks_sw.c the driver ones, topology.c device/topology, and
 * platform.c the table and the run.
 */
#ifndef GA_PLATFORM_PF_H
#define GA_PLATFORM_PF_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpuasync/platform.h"

struct pf_dev {
	char bdf[16];	     /* 0000:01:00.0 */
	char path[PATH_MAX]; /* real path of its sysfs directory */
	unsigned int vendor, device, class;
};

/* How the card is driven. */
enum pf_drv { PF_DRV_NONE, PF_DRV_GPUASYNC, PF_DRV_DATADEV, PF_DRV_OTHER };

struct pf {
	const struct ga_platform_opts *o;
	char root[PATH_MAX]; /* "" for the running system; no trailing '/' */
	struct ga_check_result *res;

	bool have_card;
	struct pf_dev card;
	enum pf_drv drv;
	char drv_name[64];   /* the PCI driver bound, "" when none */
	char node[PATH_MAX]; /* device node of the card (for the stale check), "" */
	char cls[64];	     /* gpuasync_0 (class name) or datadev_0 (proc name), "" */

	unsigned int ngpu;
	bool gpus_unknown; /* some GPU could not be looked at (not: absent) */
	struct pf_dev gpu[GA_PLATFORM_MAX_DEVS];
	int gi;			   /* the GPU nearest the card (index into gpu[]), -1 none */
	struct {		   /* what CUDA says of gpu[gi] (ask.c), asked once */
		bool asked, found; /* found: CUDA lists a device at its address */
		int ordinal;	   /* CUDA's number for it */
		int dmabuf, rdma;  /* the attributes: 1, 0, -1 not read */
		char why[96];	   /* when not found */
	} cu;
	unsigned int ncards; /* every card seen, for pairing */
	struct pf_dev cards[GA_PLATFORM_MAX_DEVS];
};

/* ---- readers (sysfs.c): 0 or a negative errno ---------------------------- */

/* root + the formatted path into @buf (PATH_MAX). */
void pf_path(const struct pf *pf, char *buf, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A text file's first @len - 1 bytes, trailing newline removed. */
int pf_read(const struct pf *pf, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A number file (0x... or decimal). */
int pf_read_ull(const struct pf *pf, unsigned long long *v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The last component of a symlink's target ("gpuasync" for .../driver). */
int pf_link_name(const struct pf *pf, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
bool pf_exists(const struct pf *pf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "0000:01:00.0"-shaped? */
bool pf_is_bdf(const char *s);
/* Fill @d for PCI device @bdf from /sys/bus/pci/devices/@bdf. */
int pf_dev_load(const struct pf *pf, const char *bdf, struct pf_dev *d);
/* The chain from the root complex down to @d: rc gets "pci0000:00", bdfs
 * the PCI devices from the top bridge to @d itself.  Returns how many. */
int pf_chain(const struct pf_dev *d, char *rc, size_t rclen, char (*bdfs)[16], int cap);
/* Config space of @bdf: up to @len bytes, returns how many were read
 * (only 64 without CAP_SYS_ADMIN) or a negative errno. */
int pf_config(const struct pf *pf, const char *bdf, uint8_t *buf, size_t len);
/* Offset of PCIe extended capability @id in @cfg of @n bytes; 0 when
 * absent, -ENODATA when the extended space was not readable. */
int pf_ext_cap(const uint8_t *cfg, int n, unsigned int id);
/* Parse a CPU/node list "0-3,8" into a bitmap of @nbits. */
int pf_parse_list(const char *s, uint64_t *bits, unsigned int nbits);
/* --cpus @list under @root: a list, not empty, of CPUs the machine has
 * online (when its cpu/online file says): 0, or -EINVAL with ga_err(). */
int pf_cpus_valid(const char *root, const char *list);

/* ---- a check's result (result.c) ----------------------------------------- */

/* Set @r to WARN (unless already FAIL on a fact) and say "could not tell: ...". */
void pf_unknown(struct ga_check_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* printf into a result's found / todo (appends). */
void pf_found(struct ga_check_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void pf_todo(struct ga_check_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Raise @r's verdict to at least @v. */
void pf_at_least(struct ga_check_result *r, enum ga_verdict v);

/* ---- beyond sysfs (ask.c) ------------------------------------------------ */

/* Kernel option @opt ("CONFIG_DMA_SHARED_BUFFER") from /proc/config.gz,
 * else /boot/config-RELEASE: its value into @val ("y", "m", "n" when "is
 * not set"), where from into @src.  0, -ENODATA when the file does not
 * name it, -ENOENT/-ENOSYS (no libz.so.1)/-EIO when it cannot be read. */
int pf_kconfig(const struct pf *pf, const char *opt, char *val, size_t len, char *src, size_t slen);
/* Fill pf->cu for the GPU judged (gpu[gi]), when opts.cuda asks. */
void pf_cuda(struct pf *pf);

/* ---- the checks ----------------------------------------------------------- */

void pf_check_card(struct pf *pf, struct ga_check_result *r);
void pf_check_gpu(struct pf *pf, struct ga_check_result *r);
void pf_check_pcie_path(struct pf *pf, struct ga_check_result *r);
void pf_check_acs(struct pf *pf, struct ga_check_result *r);
void pf_check_iommu(struct pf *pf, struct ga_check_result *r);
void pf_check_link_card(struct pf *pf, struct ga_check_result *r);
void pf_check_link_gpu(struct pf *pf, struct ga_check_result *r);
void pf_check_numa(struct pf *pf, struct ga_check_result *r);
void pf_check_bar1(struct pf *pf, struct ga_check_result *r);
void pf_check_nvidia(struct pf *pf, struct ga_check_result *r);
void pf_check_stream_memops(struct pf *pf, struct ga_check_result *r);
void pf_check_dmabuf(struct pf *pf, struct ga_check_result *r);
void pf_check_pin_path(struct pf *pf, struct ga_check_result *r);
void pf_check_card_driver(struct pf *pf, struct ga_check_result *r);
void pf_check_stale(struct pf *pf, struct ga_check_result *r);
void pf_check_pairing(struct pf *pf, struct ga_check_result *r);

/* Hops between two devices and where their paths meet (checks_pci.c):
 * returns the distance, -1 for different root complexes, -2 when a
 * device's place on the bus could not be told; @via gets
 * the meeting point ("switch 0000:02:00.0", "root port ...", "root complex pci0000:00"). */
int pf_distance(const struct pf_dev *a, const struct pf_dev *b, char *via, size_t len,
		char *meet_bdf, size_t mlen);
/* The pairing check's choice: @pick[c] the GPU (index into gpu[]) for
 * cards[c], -1 none; @dist the hops of every (card, GPU) as pf_distance. */
void pf_pair(const struct pf *pf, int (*dist)[GA_PLATFORM_MAX_DEVS], int *pick);

/* device/topology (topology.c): after the card and GPU checks ran. */
void pf_topology(struct pf *pf, struct ga_topology *t);

#endif
