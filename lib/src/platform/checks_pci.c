// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The checks the PCI bus answers: where the card and the GPUs are, the
 * path between them (sysfs device paths: pci<root complex>/<bridge>/...),
 * ACS on that path (config space), the IOMMU, link training, NUMA, BAR1,
 * and the card-GPU pairing.  The card and GPU checks run first and fill
 * struct pf for the rest.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuasync/abi.h"
#include "pf.h"

#define NVIDIA_VENDOR	0x10de
#define CHAIN_MAX	32
#define PCI_EXT_CAP_ACS 0x0d
#define ACS_CTRL_RR	0x04 /* P2P request redirect */
#define ACS_CTRL_CR	0x08 /* P2P completion redirect */

/* ---- finding the card ------------------------------------------------------ */

static void add_card(struct pf *pf, const char *bdf)
{
	for (unsigned int i = 0; i < pf->ncards; i++)
		if (!strcmp(pf->cards[i].bdf, bdf))
			return;
	if (pf->ncards < GA_PLATFORM_MAX_DEVS && !pf_dev_load(pf, bdf, &pf->cards[pf->ncards]))
		pf->ncards++;
}

/* The PCI address of class entry /sys/class/gpuasync/@name into @bdf:
 * false for an entry with no device link (an emulated card) or a link that
 * does not end in a BDF. */
static bool class_bdf(const struct pf *pf, const char *name, char *bdf, size_t len)
{
	return !pf_link_name(pf, bdf, len, "/sys/class/gpuasync/%s/device", name) && pf_is_bdf(bdf);
}

/* Every card the kernel shows: gpuasync.ko's class, datadev's PCI driver,
 * and any function with the card's PCI id (GA_PCI_VENDOR_SLAC:GA_PCI_DEVICE_CARD,
 * bound to nothing, or to something else). */
static void scan_cards(struct pf *pf)
{
	char p[PATH_MAX], bdf[64];
	struct dirent *e;
	DIR *d;

	pf_path(pf, p, "/sys/class/gpuasync");
	if ((d = opendir(p))) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' && class_bdf(pf, e->d_name, bdf, sizeof(bdf)))
				add_card(pf, bdf);
		closedir(d);
	}
	pf_path(pf, p, "/sys/bus/pci/drivers/datadev");
	if ((d = opendir(p))) {
		while ((e = readdir(d)))
			if (pf_is_bdf(e->d_name))
				add_card(pf, e->d_name);
		closedir(d);
	}
	pf_path(pf, p, "/sys/bus/pci/devices");
	if ((d = opendir(p))) {
		while ((e = readdir(d))) {
			unsigned long long v, dv;

			if (pf_is_bdf(e->d_name) &&
			    !pf_read_ull(pf, &v, "/sys/bus/pci/devices/%s/vendor", e->d_name) &&
			    !pf_read_ull(pf, &dv, "/sys/bus/pci/devices/%s/device", e->d_name) &&
			    v == GA_PCI_VENDOR_SLAC && dv == GA_PCI_DEVICE_CARD)
				add_card(pf, e->d_name);
		}
		closedir(d);
	}
}

/* The class entry (gpuasync_0) or proc file (datadev_0) of card @bdf. */
static void find_names(struct pf *pf)
{
	char p[PATH_MAX], bdf[64], line[160];
	struct dirent *e;
	DIR *d;

	pf_path(pf, p, "/sys/class/gpuasync");
	if ((d = opendir(p))) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.' && class_bdf(pf, e->d_name, bdf, sizeof(bdf)) &&
			    !strcmp(bdf, pf->card.bdf))
				snprintf(pf->cls, sizeof(pf->cls), "%.63s", e->d_name);
		closedir(d);
	}
	pf_path(pf, p, "/proc");
	if (!pf->cls[0] && (d = opendir(p))) {
		/* First line: "PCIe[BUS:NUM:SLOT.FUNC] : 0000:01:00.0". */
		while ((e = readdir(d)))
			if (!strncmp(e->d_name, "datadev_", 8) &&
			    !pf_read(pf, line, sizeof(line), "/proc/%s", e->d_name) &&
			    strstr(line, pf->card.bdf))
				snprintf(pf->cls, sizeof(pf->cls), "%.63s", e->d_name);
		closedir(d);
	}
	if (pf->cls[0] && !pf->node[0])
		pf_path(pf, pf->node, "/dev/%s", pf->cls);
}

/* DEVICE as given: a PCI address or a device node; its PCI address into @bdf. */
static int card_from_opt(struct pf *pf, const char *spec, char *bdf, size_t len,
			 struct ga_check_result *r)
{
	const char *base = strrchr(spec, '/');
	char line[160], *c;

	if (pf_is_bdf(spec)) {
		snprintf(bdf, len, "%.*s", (int)len - 1, spec); /* a BDF: short */
		return 0;
	}
	base = base ? base + 1 : spec;
	snprintf(pf->node, sizeof(pf->node), "%s", spec);
	if (class_bdf(pf, base, bdf, len)) {
		snprintf(pf->cls, sizeof(pf->cls), "%.*s", (int)sizeof(pf->cls) - 1, base);
		return 0;
	}
	if (pf_exists(pf, "/sys/class/gpuasync/%s", base)) {
		snprintf(pf->cls, sizeof(pf->cls), "%.*s", (int)sizeof(pf->cls) - 1, base);
		pf_found(r, "%s is gpuasync.ko's emulated card: no PCI device behind it", spec);
		return -ENODEV;
	}
	/* The proc file's first line: "PCIe[BUS:NUM:SLOT.FUNC] : 0000:01:00.0"
	 * (upstream's goes on for dozens of lines). */
	if (!pf_read(pf, line, sizeof(line), "/proc/%s", base) && (line[strcspn(line, "\n")] = 0,
								 c = strstr(line, " : ")) &&
	    pf_is_bdf(c + 3)) {
		snprintf(pf->cls, sizeof(pf->cls), "%.*s", (int)sizeof(pf->cls) - 1, base);
		snprintf(bdf, len, "%.*s", (int)len - 1, c + 3);
		return 0;
	}
	if (strchr(spec, '/') && !pf_exists(pf, "%s", spec)) {
		pf_found(r, "no card %s: no such file", spec);
		return -ENOENT;
	}
	pf_unknown(r, "which PCI device %s is (not in /sys/class/gpuasync, no /proc/%s)", spec,
		   base);
	return -ENOENT;
}

void pf_check_card(struct pf *pf, struct ga_check_result *r)
{
	char bdf[64] = "";
	int rc;

	scan_cards(pf);
	if (pf->o->card) {
		char spec[512], *rest;

		/* "CARD,BDF,...": the card, then others to pair. */
		snprintf(spec, sizeof(spec), "%s", pf->o->card);
		if ((rest = strchr(spec, ','))) {
			char *save = NULL, *tok;

			*rest++ = 0;
			for (tok = strtok_r(rest, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				if (pf_is_bdf(tok))
					add_card(pf, tok);
		}
		if (card_from_opt(pf, spec, bdf, sizeof(bdf), r)) {
			pf_at_least(r, r->verdict == GA_VERDICT_WARN ? GA_VERDICT_WARN
								      : GA_VERDICT_FAIL);
			pf_todo(r, "name the card by PCI address (lspci -d %04x:) or its /dev node",
				GA_PCI_VENDOR_SLAC);
			return;
		}
	} else if (pf->ncards) {
		snprintf(bdf, sizeof(bdf), "%s", pf->cards[0].bdf);
	} else {
		r->verdict = GA_VERDICT_FAIL;
		pf_found(r, "no card: nothing in /sys/class/gpuasync, no device bound to datadev, "
			    "no PCI function %04x:%04x", GA_PCI_VENDOR_SLAC, GA_PCI_DEVICE_CARD);
		pf_todo(r, "check the card is seated and powered (lspci -d %04x:), then load "
			   "gpuasync.ko or datadev.ko", GA_PCI_VENDOR_SLAC);
		return;
	}
	if ((rc = pf_dev_load(pf, bdf, &pf->card))) {
		if (rc == -ENOENT) {
			r->verdict = GA_VERDICT_FAIL;
			pf_found(r, "card %s: not on the PCI bus (no /sys/bus/pci/devices/%s)", bdf,
				 bdf);
		} else {
			pf_unknown(r, "card %s: /sys/bus/pci/devices/%s: %s", bdf, bdf,
				   strerror(-rc));
		}
		pf_todo(r, "rescan (echo 1 > /sys/bus/pci/rescan) or reboot; check lspci");
		return;
	}
	pf->have_card = true;
	add_card(pf, bdf);
	/* The card first in the pairing, the others in the order given. */
	for (unsigned int i = 1; i < pf->ncards; i++)
		if (!strcmp(pf->cards[i].bdf, bdf)) {
			struct pf_dev t = pf->cards[i];

			memmove(&pf->cards[1], &pf->cards[0], i * sizeof(t));
			pf->cards[0] = t;
		}
	if (pf_link_name(pf, pf->drv_name, sizeof(pf->drv_name), "/sys/bus/pci/devices/%s/driver",
			 bdf))
		pf->drv_name[0] = 0;
	pf->drv = !pf->drv_name[0]		      ? PF_DRV_NONE
		  : !strcmp(pf->drv_name, "gpuasync") ? PF_DRV_GPUASYNC
		  : !strcmp(pf->drv_name, "datadev")  ? PF_DRV_DATADEV
						      : PF_DRV_OTHER;
	find_names(pf);
	pf_found(r, "%s (%04x:%04x)", bdf, pf->card.vendor, pf->card.device);
	if (pf->ncards > 1)
		pf_found(r, ", one of %u cards (the others: see pairing)", pf->ncards);
	if (pf->drv == PF_DRV_NONE) {
		r->verdict = GA_VERDICT_FAIL;
		pf_found(r, ", no driver bound");
		pf_todo(r,
			"load gpuasync.ko (kmod/) or upstream's datadev.ko built with GPU support");
	} else {
		pf_found(r, ", driver %s", pf->drv_name);
		if (pf->cls[0])
			pf_found(r, " as %s", pf->cls);
	}
}

/* ---- the GPUs ------------------------------------------------------------- */

void pf_check_gpu(struct pf *pf, struct ga_check_result *r)
{
	char p[PATH_MAX], list[512], *save = NULL, *tok;
	struct dirent *e;
	DIR *d;

	pf->gi = -1;
	if (pf->o->gpus) {
		snprintf(list, sizeof(list), "%s", pf->o->gpus);
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			int rc = pf_is_bdf(tok) ? 0 : -EINVAL;

			if (!rc && pf->ngpu < GA_PLATFORM_MAX_DEVS)
				rc = pf_dev_load(pf, tok, &pf->gpu[pf->ngpu]);
			if (rc == -ENOENT) {
				r->verdict = GA_VERDICT_FAIL;
				pf_found(r, "GPU %s: not on the PCI bus; ", tok);
				continue;
			} else if (rc) {
				pf->gpus_unknown = true;
				pf_found(r, "GPU %s: ", tok);
				pf_unknown(r, "%s; ",
					   rc == -EINVAL ? "not a PCI address" : strerror(-rc));
				continue;
			}
			pf->ngpu++;
		}
	} else {
		pf_path(pf, p, "/sys/bus/pci/devices");
		if (!(d = opendir(p))) {
			pf->gpus_unknown = true;
			pf_unknown(r, "%s: %s", p, strerror(errno));
			return;
		}
		while ((e = readdir(d))) {
			struct pf_dev g;

			if (pf_is_bdf(e->d_name) && pf->ngpu < GA_PLATFORM_MAX_DEVS &&
			    !pf_dev_load(pf, e->d_name, &g) && g.vendor == NVIDIA_VENDOR &&
			    (g.class >> 16) == 0x03)
				pf->gpu[pf->ngpu++] = g;
		}
		closedir(d);
	}
	if (!pf->ngpu) {
		if (pf->gpus_unknown || pf->o->gpus)
			return; /* each named GPU already said what it is */
		r->verdict = GA_VERDICT_FAIL;
		pf_found(r, "no NVIDIA GPU on the PCI bus");
		pf_todo(r, "check lspci -d 10de:; name a GPU with --gpu BDF");
		return;
	}
	pf_found(r, "%u GPU%s:", pf->ngpu, pf->ngpu > 1 ? "s" : "");
	for (unsigned int i = 0; i < pf->ngpu; i++)
		pf_found(r, " %s (%04x:%04x)", pf->gpu[i].bdf, pf->gpu[i].vendor,
			 pf->gpu[i].device);
}

/* ---- the path between card and GPU --------------------------------------------- */

int pf_distance(const struct pf_dev *a, const struct pf_dev *b, char *via, size_t len, char *meet,
		size_t mlen)
{
	char ra[64], rb[64], ca[CHAIN_MAX][16], cb[CHAIN_MAX][16];
	int na = pf_chain(a, ra, sizeof(ra), ca, CHAIN_MAX);
	int nb = pf_chain(b, rb, sizeof(rb), cb, CHAIN_MAX);
	int k = 0;

	if (meet)
		meet[0] = 0;
	if (!ra[0] || !rb[0]) {
		snprintf(via, len, "could not tell where %s sits on the bus (sysfs path %s)",
			 ra[0] ? b->bdf : a->bdf, ra[0] ? b->path : a->path);
		return -2;
	}
	if (strcmp(ra, rb)) {
		snprintf(via, len, "different root complexes (%s, %s)", ra, rb);
		return -1;
	}
	while (k < na - 1 && k < nb - 1 && !strcmp(ca[k], cb[k]))
		k++;
	if (k == 0)
		snprintf(via, len, "root complex %s (different root ports)", ra);
	else
		snprintf(via, len, "%s %s", k == 1 ? "root port" : "switch port", ca[k - 1]);
	if (k && meet)
		snprintf(meet, mlen, "%s", ca[k - 1]);
	return (na - k) + (nb - k);
}

void pf_check_pcie_path(struct pf *pf, struct ga_check_result *r)
{
	struct ga_check_result each = {0}; /* one part per GPU, after the nearest */
	int best = -2;
	char via[PATH_MAX + 64];

	if (!pf->have_card || !pf->ngpu) {
		pf_unknown(r, "%s", !pf->have_card ? "no card" : "no GPU");
		/* Without a card the GPU's own checks (link, BAR1) still judge
		 * the first GPU. */
		if (pf->ngpu)
			pf->gi = 0;
		return;
	}
	r->verdict = GA_VERDICT_FAIL;
	for (unsigned int i = 0; i < pf->ngpu; i++) {
		int d = pf_distance(&pf->card, &pf->gpu[i], via, sizeof(via), NULL, 0);
		/* Where a device sits unknown: WARN, the path is not judged. */
		enum ga_verdict v = d == -2				 ? GA_VERDICT_WARN
				    : d < 0				 ? GA_VERDICT_FAIL
				    : strncmp(via, "root complex", 12) ? GA_VERDICT_OK
								       : GA_VERDICT_WARN;

		pf_found(&each, "%sGPU %s: ", i ? "; " : "", pf->gpu[i].bdf);
		if (d < 0)
			pf_found(&each, "%s", via);
		else
			pf_found(&each, "%d hops, via %s", d, via);
		/* The nearest GPU: the best verdict, then the fewest hops. */
		if (pf->gi < 0 || v < r->verdict ||
		    (v == r->verdict && d >= 0 && (best < 0 || d < best))) {
			pf->gi = (int)i;
			r->verdict = v;
			best = d;
		}
	}
	if (pf->ngpu > 1)
		pf_found(r, "nearest: %s; ", pf->gpu[pf->gi].bdf);
	pf_found(r, "%s", each.found);
	if (r->verdict == GA_VERDICT_FAIL)
		pf_todo(r, "move the card or the GPU so both hang off the same CPU socket's root "
			   "complex, best under one PCIe switch");
	else if (r->verdict == GA_VERDICT_WARN && best == -2)
		pf_todo(r, "see where card and GPU hang with lspci -tv");
	else if (r->verdict == GA_VERDICT_WARN)
		pf_todo(r, "works where the CPU's root complex forwards peer traffic (most recent "
			   "server CPUs); for full speed put card and GPU under one PCIe switch");
}

/* ---- ACS -------------------------------------------------------------------------- */

static void acs_side(struct pf *pf, const struct pf_dev *d, int k, struct ga_check_result *r,
		     int *bridges, int *redirect, int *unknown)
{
	char rc[64], c[CHAIN_MAX][16];
	int n = pf_chain(d, rc, sizeof(rc), c, CHAIN_MAX);
	static uint8_t cfg[4096];

	/* Bridges strictly below the meeting point, above the device. */
	for (int i = k; i < n - 1; i++) {
		int got = pf_config(pf, c[i], cfg, sizeof(cfg)), off;
		unsigned int ctrl;

		(*bridges)++;
		if (got < 0) {
			(*unknown)++;
			pf_found(r, " %s: could not tell (%s);", c[i], strerror(-got));
			continue;
		}
		off = pf_ext_cap(cfg, got, PCI_EXT_CAP_ACS);
		if (off < 0) {
			(*unknown)++;
			pf_found(r,
				 " %s: could not tell (extended config space unreadable: "
				 "needs root);",
				 c[i]);
			continue;
		}
		if (off == 0) {
			pf_found(r, " %s: no ACS;", c[i]);
			continue;
		}
		ctrl = cfg[off + 6] | (unsigned int)cfg[off + 7] << 8;
		if (ctrl & (ACS_CTRL_RR | ACS_CTRL_CR)) {
			(*redirect)++;
			pf_found(r, " %s: ACS ctrl 0x%04x, P2P redirect ON;", c[i], ctrl);
		} else {
			pf_found(r, " %s: ACS ctrl 0x%04x, no redirect;", c[i], ctrl);
		}
	}
}

void pf_check_acs(struct pf *pf, struct ga_check_result *r)
{
	char ra[64], rb[64], ca[CHAIN_MAX][16], cb[CHAIN_MAX][16], via[160];
	int bridges = 0, redirect = 0, unknown = 0, k = 0, na, nb, d;

	if (!pf->have_card || pf->gi < 0) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "could not tell: no card and GPU to look between");
		return;
	}
	d = pf_distance(&pf->card, &pf->gpu[pf->gi], via, sizeof(via), NULL, 0);
	na = pf_chain(&pf->card, ra, sizeof(ra), ca, CHAIN_MAX);
	nb = pf_chain(&pf->gpu[pf->gi], rb, sizeof(rb), cb, CHAIN_MAX);
	if (d >= 0)
		while (k < na - 1 && k < nb - 1 && !strcmp(ca[k], cb[k]))
			k++;
	pf_found(r, "bridges between %s and %s:", pf->card.bdf, pf->gpu[pf->gi].bdf);
	acs_side(pf, &pf->card, k, r, &bridges, &redirect, &unknown);
	acs_side(pf, &pf->gpu[pf->gi], k, r, &bridges, &redirect, &unknown);
	if (!bridges)
		pf_found(r, " none");
	if (redirect) {
		/* Below a common switch the redirect sends peer traffic up to the
		 * root complex; where they meet there anyway it costs less. */
		r->verdict = k > 0 && d >= 0 ? GA_VERDICT_FAIL : GA_VERDICT_WARN;
		pf_todo(r, "turn off ACS P2P redirect on those ports (BIOS: ACS off; or setpci "
			   "ECAP_ACS+6.w=0 per port, lost at reboot); with an IOMMU on, ACS keeps "
			   "devices in separate groups: decide both together");
	} else if (unknown) {
		r->verdict = GA_VERDICT_WARN;
		pf_todo(r, "run as root to read the bridges' extended config space");
	}
}

/* ---- IOMMU ------------------------------------------------------------------------ */

static int count_dir(const struct pf *pf, const char *rel)
{
	char p[PATH_MAX];
	struct dirent *e;
	int n = 0;
	DIR *d;

	pf_path(pf, p, "%s", rel);
	if (!(d = opendir(p)))
		return -errno;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Is this a virtual machine?  Xen's /sys/hypervisor/type, the CPU's
 * hypervisor flag (x86: CPUID leaf 1 ECX bit 31, set by every hypervisor),
 * or a virtual machine's DMI vendor or product.  @how says which. */
static bool hypervisor(const struct pf *pf, char *how, size_t len)
{
	static const char *const dmi[] = {"QEMU",      "KVM",	      "VMware",	   "VirtualBox",
					  "innotek",   "Xen",	      "Virtual Machine",
					  "Amazon EC2", "Google Compute Engine", "OpenStack",
					  "Bochs",     "Parallels",   "BHYVE"};
	static const char *const dmi_file[] = {"sys_vendor", "product_name"};
	char p[PATH_MAX], line[4096], v[128];
	FILE *f;

	if (!pf_read(pf, v, sizeof(v), "/sys/hypervisor/type") && v[0]) {
		snprintf(how, len, "/sys/hypervisor/type %s", v);
		return true;
	}
	for (unsigned int k = 0; k < 2; k++)
		if (!pf_read(pf, v, sizeof(v), "/sys/class/dmi/id/%s", dmi_file[k]))
			for (unsigned int i = 0; i < sizeof(dmi) / sizeof(dmi[0]); i++)
				if (strstr(v, dmi[i])) {
					snprintf(how, len, "DMI %s %s", dmi_file[k], v);
					return true;
				}
	pf_path(pf, p, "/proc/cpuinfo");
	if ((f = fopen(p, "re"))) {
		bool hv = false;

		/* The first CPU's flags line says it for all. */
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "flags", 5)) {
				hv = strstr(line, " hypervisor") != NULL;
				break;
			}
		fclose(f);
		if (hv) {
			snprintf(how, len, "cpuinfo hypervisor flag");
			return true;
		}
	}
	return false;
}

void pf_check_iommu(struct pf *pf, struct ga_check_result *r)
{
	int units = count_dir(pf, "/sys/class/iommu"),
	    groups = count_dir(pf, "/sys/kernel/iommu_groups");
	char grp[32], type[32], rel[96], hv[192];
	bool vm = hypervisor(pf, hv, sizeof(hv));
	int members;

	if (groups <= 0 && units <= 0 && vm) {
		/* Devices passed into a VM are translated by the host's IOMMU
		 * (VFIO needs it), which the guest cannot see. */
		pf_unknown(r, "the host's IOMMU, from a VM (%s); none in the VM", hv);
		pf_todo(r, "on the host: iommu=pt (or the IOMMU off) and card and GPU passed "
			   "through to this VM together; or run on the host");
		return;
	}
	pf_found(r, "%d IOMMU unit%s, %d group%s", units > 0 ? units : 0, units == 1 ? "" : "s",
		 groups > 0 ? groups : 0, groups == 1 ? "" : "s");
	if (groups <= 0 && units <= 0 && !pf_exists(pf, "/sys/kernel")) {
		pf_found(r, "; ");
		pf_unknown(r, "no /sys/kernel (no sysfs?)");
		return;
	}
	if (groups <= 0 && units <= 0) {
		pf_found(r, ": no IOMMU in use (bus addresses are physical)");
		return;
	}
	if (!pf->have_card) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "; could not tell the card's group: no card");
		return;
	}
	if (pf_link_name(pf, grp, sizeof(grp), "/sys/bus/pci/devices/%s/iommu_group",
			 pf->card.bdf)) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "; could not tell: card %s has no iommu_group", pf->card.bdf);
		return;
	}
	snprintf(rel, sizeof(rel), "/sys/kernel/iommu_groups/%s/devices", grp);
	members = count_dir(pf, rel);
	pf_found(r, "; card %s in group %s (%d device%s)", pf->card.bdf, grp, members,
		 members == 1 ? "" : "s");
	if (pf_read(pf, type, sizeof(type), "/sys/kernel/iommu_groups/%s/type", grp)) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, ", type could not tell (no %s/type: kernel before 5.11?)", rel);
		pf_todo(r, "boot with iommu=pt, or the IOMMU off, as NVIDIA documents for "
			   "GPUDirect RDMA");
		return;
	}
	pf_found(r, ", type %s", type);
	if (!strcmp(type, "identity") && vm) {
		pf_found(r, "; ");
		pf_unknown(r, "the host's IOMMU, from a VM (%s)", hv);
		pf_todo(r, "on the host: iommu=pt (or the IOMMU off) for the card and GPU passed "
			   "through; or run on the host");
		return;
	}
	if (!strcmp(type, "identity"))
		return;
	r->verdict = GA_VERDICT_FAIL;
	if (!strncmp(type, "DMA", 3)) {
		pf_found(r, ": the card's DMA addresses are translated%s", vm ? " (in this VM)" : "");
		pf_todo(r,
			"boot with iommu=pt (on Intel: intel_iommu=on iommu=pt) or the "
			"IOMMU off, or with the card unbound: echo identity > "
			"/sys/kernel/iommu_groups/%s/type",
			grp);
	} else {
		pf_found(r, ": the card belongs to a user-space driver or is blocked");
		pf_todo(r, "unbind the card from vfio and bind gpuasync.ko or datadev");
	}
}

/* ---- link training ----------------------------------------------------------------- */

static double gts(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	return end == s ? 0 : v;
}

static int gen_of(double g)
{
	static const double t[] = {2.5, 5, 8, 16, 32, 64};

	for (int i = 0; i < 6; i++)
		if (g > t[i] - 0.1 && g < t[i] + 0.1)
			return i + 1;
	return 0;
}

/* One device's link; the parent port's maximum when it is lower. */
static enum ga_verdict link_one(struct pf *pf, const struct pf_dev *d, const char *what,
				struct ga_check_result *r)
{
	char cs[48], ms[48], cw[16], mw[16], rc[64], c[CHAIN_MAX][16], ps[48], pw[16];
	int n, e;
	double cur, max;
	long wc, wm;
	enum ga_verdict v = GA_VERDICT_OK;

	if ((e = pf_read(pf, cs, sizeof(cs), "/sys/bus/pci/devices/%s/current_link_speed",
			 d->bdf)) ||
	    (e = pf_read(pf, ms, sizeof(ms), "/sys/bus/pci/devices/%s/max_link_speed", d->bdf)) ||
	    (e = pf_read(pf, cw, sizeof(cw), "/sys/bus/pci/devices/%s/current_link_width",
			 d->bdf)) ||
	    (e = pf_read(pf, mw, sizeof(mw), "/sys/bus/pci/devices/%s/max_link_width", d->bdf))) {
		pf_found(r, "%s %s: could not tell (%s); ", what, d->bdf, strerror(-e));
		return GA_VERDICT_WARN;
	}
	cur = gts(cs);
	max = gts(ms);
	wc = strtol(cw, NULL, 10);
	wm = strtol(mw, NULL, 10);
	pf_found(r, "%s %s: Gen%d x%ld (%s), can do Gen%d x%ld", what, d->bdf, gen_of(cur), wc, cs,
		 gen_of(max), wm);
	if (!cur || !max || !wm) {
		pf_found(r, " (could not tell: speed or width unknown)");
		v = GA_VERDICT_WARN;
	} else if (wc == 0) {
		pf_found(r, ": link down");
		v = GA_VERDICT_FAIL;
	} else if (cur < max - 0.1 || wc < wm) {
		v = GA_VERDICT_WARN;
		pf_found(r, ": trained below its maximum");
	}
	/* Which end holds it back: the port above may be narrower or slower. */
	n = pf_chain(d, rc, sizeof(rc), c, CHAIN_MAX);
	if (n >= 2 &&
	    !pf_read(pf, ps, sizeof(ps), "/sys/bus/pci/devices/%s/max_link_speed", c[n - 2]) &&
	    !pf_read(pf, pw, sizeof(pw), "/sys/bus/pci/devices/%s/max_link_width", c[n - 2]) &&
	    gts(ps) > 0 && strtol(pw, NULL, 10) > 0 &&
	    (gts(ps) < max - 0.1 || strtol(pw, NULL, 10) < wm))
		pf_found(r, " (its port %s can do only Gen%d x%ld)", c[n - 2], gen_of(gts(ps)),
			 strtol(pw, NULL, 10));
	pf_found(r, "; ");
	return v;
}

void pf_check_link_card(struct pf *pf, struct ga_check_result *r)
{
	if (!pf->have_card) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "could not tell: no card");
		return;
	}
	r->verdict = link_one(pf, &pf->card, "card", r);
	if (r->verdict != GA_VERDICT_OK)
		pf_todo(r, "reseat the card in a slot wired for its full width, check the "
			   "slot's BIOS setting (Gen/bifurcation) and the firmware's PCIe core");
}

void pf_check_link_gpu(struct pf *pf, struct ga_check_result *r)
{
	if (pf->gi < 0) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "could not tell: no GPU");
		return;
	}
	r->verdict = link_one(pf, &pf->gpu[pf->gi], "GPU", r);
	if (r->verdict == GA_VERDICT_WARN && pf->gpu[pf->gi].vendor == NVIDIA_VENDOR)
		pf_found(r, "an idle GPU lowers its link speed: read it again under load; ");
	if (r->verdict != GA_VERDICT_OK)
		pf_todo(r, "compare with nvidia-smi -q (GPU Link Info) under load; if still low, "
			   "reseat the GPU or move it to a full-width slot");
}

/* ---- the link now, for metrics (gpuasync/platform.h) ------------------------------ */

/* A run-less pf: only its root is used by the readers (heap: it is large). */
static struct pf *pf_at(const char *root)
{
	struct pf *pf = calloc(1, sizeof(*pf));
	size_t n;

	if (!pf)
		return NULL;
	snprintf(pf->root, sizeof(pf->root), "%s", root ? root : "");
	n = strlen(pf->root);
	while (n && pf->root[n - 1] == '/')
		pf->root[--n] = 0;
	return pf;
}

int ga_platform_card_pci(const char *root, const char *card, char *bdf, size_t len)
{
	struct ga_check_result scratch;
	struct pf *pf;
	int rc;

	if (!card || !bdf || !len)
		return -EINVAL;
	if (!(pf = pf_at(root)))
		return -ENOMEM;
	rc = card_from_opt(pf, card, bdf, len, &scratch);
	free(pf);
	return rc;
}

int ga_platform_link(const char *root, const char *bdf, struct ga_pci_link *l)
{
	static const char *const file[4] = {"current_link_speed", "max_link_speed",
					    "current_link_width", "max_link_width"};
	struct pf *pf;
	char v[48], *end;
	int rc = 0;

	if (!bdf || !l || !pf_is_bdf(bdf))
		return -EINVAL;
	*l = (struct ga_pci_link){.width = -1, .max_width = -1};
	snprintf(l->bdf, sizeof(l->bdf), "%s", bdf);
	if (!(pf = pf_at(root)))
		return -ENOMEM;
	for (int i = 0; i < 4; i++) {
		int e = pf_read(pf, v, sizeof(v), "/sys/bus/pci/devices/%s/%s", bdf, file[i]);
		long w;

		if (!e && i < 2) {
			/* "2.5 GT/s PCIe"; "Unknown" while the link is down */
			if (gts(v) > 0)
				*(i ? &l->max_speed : &l->speed) = gts(v);
			else
				e = -ENODATA;
		} else if (!e) {
			w = strtol(v, &end, 10);
			if (end != v && w >= 0 && w <= 64)
				*(i == 2 ? &l->width : &l->max_width) = (int)w;
			else
				e = -ENODATA;
		}
		if (e && !rc)
			rc = e;
	}
	free(pf);
	return rc;
}

/* ---- NUMA ---------------------------------------------------------------------- */

#define CPU_BITS 4096

static int node_of_cpus(const struct pf *pf, const uint64_t *cpus, char *nodes, size_t len,
			int *only)
{
	uint64_t nb[CPU_BITS / 64];
	char p[PATH_MAX], list[4096];
	struct dirent *e;
	int count = 0;
	DIR *d;

	*only = -2;
	nodes[0] = 0;
	pf_path(pf, p, "/sys/devices/system/node");
	if (!(d = opendir(p)))
		return -errno;
	while ((e = readdir(d))) {
		int id;
		bool any = false;

		if (sscanf(e->d_name, "node%d", &id) != 1)
			continue;
		count++;
		if (pf_read(pf, list, sizeof(list), "/sys/devices/system/node/%s/cpulist",
			    e->d_name) ||
		    pf_parse_list(list, nb, CPU_BITS))
			continue;
		for (int i = 0; i < CPU_BITS / 64; i++)
			any |= (nb[i] & cpus[i]) != 0;
		if (any) {
			size_t n = strlen(nodes);

			snprintf(nodes + n, len - n, "%s%d", n ? "," : "", id);
			*only = *only == -2 ? id : -1;
		}
	}
	closedir(d);
	return count;
}

/* Physical packages among the CPUs: 0 when not readable. */
static int count_sockets(const struct pf *pf)
{
	uint64_t seen[CPU_BITS / 64] = {0};
	char p[PATH_MAX];
	struct dirent *e;
	int n = 0;
	DIR *d;

	pf_path(pf, p, "/sys/devices/system/cpu");
	if (!(d = opendir(p)))
		return 0;
	while ((e = readdir(d))) {
		unsigned long long id;
		int cpu;

		if (sscanf(e->d_name, "cpu%d", &cpu) != 1 ||
		    pf_read_ull(pf, &id, "/sys/devices/system/cpu/%s/topology/physical_package_id",
				e->d_name) ||
		    id >= CPU_BITS)
			continue;
		if (!(seen[id / 64] >> (id % 64) & 1))
			n++;
		seen[id / 64] |= 1ull << (id % 64);
	}
	closedir(d);
	return n;
}

void pf_check_numa(struct pf *pf, struct ga_check_result *r)
{
	uint64_t cpus[CPU_BITS / 64] = {0};
	long long cn = -1, gn = -1;
	unsigned long long v;
	char nodes[256];
	int nnodes, only;

	if (pf->o->cpus) {
		if (pf_parse_list(pf->o->cpus, cpus, CPU_BITS)) { /* refused before the run */
			pf_unknown(r, "CPU list '%s' is not like 0-3,8", pf->o->cpus);
			return;
		}
	} else {
		cpu_set_t set;

		CPU_ZERO(&set);
		if (sched_getaffinity(0, sizeof(set), &set)) {
			pf_unknown(r, "sched_getaffinity: %s", strerror(errno));
			return;
		}
		for (int i = 0; i < CPU_SETSIZE && i < CPU_BITS; i++)
			if (CPU_ISSET(i, &set))
				cpus[i / 64] |= 1ull << (i % 64);
	}
	nnodes = node_of_cpus(pf, cpus, nodes, sizeof(nodes), &only);
	if (nnodes < 0 && !pf_exists(pf, "/sys/devices/system/cpu")) {
		pf_unknown(r, "no /sys/devices/system (no sysfs?)");
		return;
	}
	if (nnodes < 0) {
		pf_found(r, "no /sys/devices/system/node: a kernel without NUMA, one memory node");
		return;
	}
	if (!pf->have_card || pf->gi < 0) {
		pf_found(r, "%d node%s; ", nnodes, nnodes == 1 ? "" : "s");
		pf_unknown(r, "no %s to place", !pf->have_card ? "card" : "GPU");
		return;
	}
	if (pf_read_ull(pf, &v, "/sys/bus/pci/devices/%s/numa_node", pf->card.bdf) ||
	    (cn = (long long)(int)v, pf_read_ull(pf, &v, "/sys/bus/pci/devices/%s/numa_node",
						 pf->gpu[pf->gi].bdf))) {
		pf_unknown(r, "numa_node of card %s or GPU %s unreadable", pf->card.bdf,
			   pf->gpu[pf->gi].bdf);
		return;
	}
	gn = (long long)(int)v;
	/* What could not be told comes first, so that the short line keeps it. */
	if (cn < 0 || gn < 0) {
		int sockets = nnodes <= 1 ? count_sockets(pf) : 0;

		if (nnodes > 1) {
			pf_unknown(r, "the firmware gave no node (-1); ");
			pf_todo(r, "check the BIOS's NUMA/SRAT settings; lstopo shows where the "
				   "slots hang");
		} else if (sockets > 1) {
			/* One node on several sockets: node interleaving hides them. */
			pf_unknown(r, "%d sockets seen as one node: which one the card is on; ",
				   sockets);
			pf_todo(r, "turn off node interleaving in the BIOS to see the sockets as "
				   "nodes");
		} else if (sockets < 1) {
			pf_unknown(r, "node -1 on one node, and the sockets are not readable; ");
		}
	}
	pf_found(
		r,
		"%d node%s; card on node %lld, GPU on node %lld, this process may run on node%s %s",
		nnodes, nnodes == 1 ? "" : "s", cn, gn, only == -1 ? "s" : "",
		nodes[0] ? nodes : "(none found)");
	if (r->verdict != GA_VERDICT_OK)
		return;
	if (nnodes <= 1) {
		if (cn < 0 || gn < 0)
			pf_found(r, " (-1 on one socket, one node: nothing to choose)");
		return;
	}
	if (gn >= 0 && cn != gn) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, ": card and GPU on different nodes");
		pf_todo(r, "put card and GPU on one socket; ");
	}
	if (only != (int)cn) {
		r->verdict = GA_VERDICT_WARN;
		pf_todo(r,
			"run gpuasyncfs on the card's node: numactl --cpunodebind=%lld "
			"--membind=%lld gpuasyncfs ...",
			cn, cn);
	}
}

/* ---- BAR1 ---------------------------------------------------------------------- */

static void human(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ull << 30) && !(b % (1ull << 30)))
		snprintf(buf, len, "%llu GiB", (unsigned long long)(b >> 30));
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
}

void pf_check_bar1(struct pf *pf, struct ga_check_result *r)
{
	char p[PATH_MAX], line[160], hs[32], hw[32];
	const struct pf_dev *g;
	uint64_t size = 0;
	int bar = -1, i = 0;
	FILE *f;

	if (pf->gi < 0) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "could not tell: no GPU");
		return;
	}
	g = &pf->gpu[pf->gi];
	pf_path(pf, p, "/sys/bus/pci/devices/%s/resource", g->bdf);
	if (!(f = fopen(p, "re"))) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "GPU %s: could not tell: %s: %s", g->bdf, p, strerror(errno));
		return;
	}
	/* NVIDIA's aperture, "BAR1", is its second memory region: resource
	 * line 1 behind a 32-bit BAR0, line 2 behind a 64-bit one (an H200
	 * here: 16 MiB, 256 GiB, 32 MiB at lines 0, 2, 4).  A stand-in's
	 * largest BAR plays it. */
	int mem = 0;

	while (i < 6 && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, fl;

		if (sscanf(line, "%llx %llx %llx", &s, &e, &fl) == 3 && e > s && (fl & 0x200)) {
			mem++;
			if ((g->vendor == NVIDIA_VENDOR && mem == 2 && bar < 0) ||
			    (g->vendor != NVIDIA_VENDOR && e - s + 1 > size)) {
				size = e - s + 1;
				bar = i;
			}
		}
		i++;
	}
	fclose(f);
	if (bar < 0) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "GPU %s: could not tell: no memory BAR%s in %s", g->bdf,
			 g->vendor == NVIDIA_VENDOR ? "1" : "", p);
		return;
	}
	human(size, hs, sizeof(hs));
	if (g->vendor == NVIDIA_VENDOR)
		pf_found(r, "GPU %s BAR1: %s", g->bdf, hs);
	else
		pf_found(r, "GPU %s BAR%d: %s (not NVIDIA: its largest BAR)", g->bdf, bar, hs);
	if (pf->o->buffer_bytes) {
		human(pf->o->buffer_bytes, hw, sizeof(hw));
		pf_found(r, ", buffers want %s", hw);
	}
	if (pf->o->buffer_bytes && pf->o->buffer_bytes > size) {
		r->verdict = GA_VERDICT_FAIL;
		pf_todo(r, "fewer or smaller buffers, or enable Resizable BAR / large BAR1 "
			   "(BIOS: Above 4G decoding + Re-Size BAR)");
	} else if (size <= GA_PLATFORM_BAR1_SMALL) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, ": a small window, shared with the CUDA driver's own mappings");
		pf_todo(r, "enable Above 4G decoding and Resizable BAR in the BIOS");
	}
}

/* ---- pairing --------------------------------------------------------------------- */

void pf_pair(const struct pf *pf, int (*dist)[GA_PLATFORM_MAX_DEVS], int *pick)
{
	unsigned int taken[GA_PLATFORM_MAX_DEVS] = {0};
	char via[160];

	for (unsigned int c = 0; c < pf->ncards; c++) {
		pick[c] = -1;
		for (unsigned int g = 0; g < pf->ngpu; g++)
			dist[c][g] =
				pf_distance(&pf->cards[c], &pf->gpu[g], via, sizeof(via), NULL, 0);
	}
	/* The closest (card, GPU) pair first, over the GPUs least used so far:
	 * each GPU serves one card until every GPU serves one. */
	for (unsigned int round = 0; round < pf->ncards; round++) {
		int bc = -1, bg = -1;

		for (unsigned int c = 0; c < pf->ncards; c++)
			for (unsigned int g = 0; g < pf->ngpu && pick[c] < 0; g++)
				if (dist[c][g] >= 0 &&
				    (bc < 0 || taken[g] < taken[bg] ||
				     (taken[g] == taken[bg] && dist[c][g] < dist[bc][bg]))) {
					bc = (int)c;
					bg = (int)g;
				}
		if (bc < 0)
			break;
		pick[bc] = bg;
		taken[bg]++;
	}
}

void pf_check_pairing(struct pf *pf, struct ga_check_result *r)
{
	int pick[GA_PLATFORM_MAX_DEVS], dist[GA_PLATFORM_MAX_DEVS][GA_PLATFORM_MAX_DEVS];
	char via[160];

	if (!pf->ncards || (!pf->ngpu && pf->gpus_unknown)) {
		/* The card and gpu checks say what is missing. */
		pf_unknown(r, "%s", !pf->ncards ? "no card" : "the GPUs could not be looked at");
		return;
	}
	if (pf->ncards <= 1 && pf->ngpu <= 1) {
		pf_found(r, "%u card, %u GPU: nothing to pair", pf->ncards, pf->ngpu);
		if (!pf->ngpu)
			r->verdict = GA_VERDICT_FAIL;
		return;
	}
	if (!pf->ngpu) {
		r->verdict = GA_VERDICT_FAIL;
		pf_found(r, "%u cards, no GPU", pf->ncards);
		return;
	}
	pf_pair(pf, dist, pick);
	for (unsigned int c = 0; c < pf->ncards; c++) {
		bool unknown = false;

		pf_found(r, "%scard %s -> ", c ? "; " : "", pf->cards[c].bdf);
		for (unsigned int g = 0; g < pf->ngpu; g++)
			unknown |= dist[c][g] == -2;
		if (pick[c] < 0 && unknown) {
			pf_unknown(r, "where card or GPU sits on the bus");
			continue;
		}
		if (pick[c] < 0) {
			r->verdict = GA_VERDICT_FAIL;
			pf_found(r, "no GPU on its root complex");
			continue;
		}
		pf_distance(&pf->cards[c], &pf->gpu[pick[c]], via, sizeof(via), NULL, 0);
		pf_found(r, "GPU %s (%d hops, via %s)", pf->gpu[pick[c]].bdf, dist[c][pick[c]],
			 via);
		if (!strncmp(via, "root complex", 12))
			pf_at_least(r, GA_VERDICT_WARN);
	}
	if (r->verdict != GA_VERDICT_OK)
		pf_todo(r, "move cards or GPUs so each card shares a switch or root port with one "
			   "GPU; ");
	pf_todo(r, "mount each card with the GPU given here (-o gpu=N, N as CUDA numbers it: "
		   "nvidia-smi --query-gpu=index,pci.bus_id --format=csv)");
}
