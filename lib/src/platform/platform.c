// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The platform doctor's table: one row per check (name, title, why it
 * matters, what the verdicts mean), run in order into one result each.
 * Later checks read what earlier ones found (struct pf): the card and GPU
 * rows come first.  docs/platform.md is written from these rows; adding a
 * check is adding a row and its function.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "pf.h"

struct pf_row {
	struct ga_check_info info;
	void (*run)(struct pf *pf, struct ga_check_result *r);
};

static const struct pf_row rows[GA_CHECK_COUNT] = {
	[GA_CHECK_CARD] = {{"card", "The card",
			    "everything else is judged for this PCI function: the card whose "
			    "firmware writes into GPU memory",
			    "FAIL when no card or no driver is found"},
			   pf_check_card},
	[GA_CHECK_GPU] = {{"gpu", "The GPUs",
			   "the card writes into a GPU's BAR1 window; without a GPU on the bus "
			   "there is nothing to write into",
			   "FAIL when no NVIDIA display/3D controller is on the bus"},
			  pf_check_gpu},
	[GA_CHECK_PCIE_PATH] = {{"pcie_path", "PCIe path between card and GPU",
				 "peer-to-peer writes travel from the card to the GPU through "
				 "the bridges both hang under; under one switch they stay there, "
				 "through the root complex they depend on the CPU forwarding them, "
				 "and between root complexes (sockets) most platforms drop or "
				 "crawl them",
				 "OK under a common switch or root port; WARN when they meet only "
				 "at the root complex; FAIL across root complexes"},
				pf_check_pcie_path},
	[GA_CHECK_ACS] = {{"acs", "ACS on the bridges of that path",
			   "Access Control Services P2P redirect makes a switch port send peer "
			   "requests up to the root complex instead of across, which slows them "
			   "or, with an IOMMU, gets them blocked",
			   "FAIL when a port below a common switch redirects; WARN when the path "
			   "already goes through the root complex, or the config space could not "
			   "be read (needs root)"},
			  pf_check_acs},
	[GA_CHECK_IOMMU] = {{"iommu", "IOMMU mode and the card's group",
			     "with the IOMMU translating (DMA mode) the addresses the driver "
			     "programs into the card are not the GPU's bus addresses, and peer "
			     "traffic is translated or refused; NVIDIA documents GPUDirect RDMA "
			     "with the IOMMU off or in passthrough",
			     "OK with no IOMMU or an identity (passthrough) group; FAIL for DMA, "
			     "DMA-FQ, blocked or unmanaged (vfio) groups; WARN (could not tell) "
			     "inside a virtual machine without a DMA group, where the host's IOMMU "
			     "translates unseen"},
			    pf_check_iommu},
	[GA_CHECK_LINK_CARD] =
		{{"link_card", "The card's PCIe link",
		  "a link trained below its maximum (Gen1 instead of Gen3, x1 "
		  "instead of x8) caps the frame rate the card can deliver",
		  "WARN when current speed or width is below the maximum (and "
		  "names the port when that is the limit); FAIL when the link is down"},
		 pf_check_link_card},
	[GA_CHECK_LINK_GPU] = {{"link_gpu", "The GPU's PCIe link",
				"the GPU's link carries the same bytes; an idle GPU lowers its "
				"speed on purpose, so read it under load",
				"as link_card"},
			       pf_check_link_gpu},
	[GA_CHECK_NUMA] = {{"numa", "NUMA nodes of card, GPU and daemon",
			    "the daemon polls the card's registers and completion words; from "
			    "another socket every access crosses the CPU interconnect, and card "
			    "and GPU on different sockets rarely do peer-to-peer at all",
			    "WARN when card and GPU differ, when the process may run off the "
			    "card's node, or when the firmware gave no node"},
			   pf_check_numa},
	[GA_CHECK_BAR1] = {{"bar1", "GPU BAR1 size",
			    "every buffer the card writes into is mapped through the GPU's BAR1 "
			    "window; a 256 MiB window (consumer cards without Resizable BAR) "
			    "holds few buffers, and CUDA uses part of it",
			    "FAIL when the buffers wanted exceed it (--buffers); WARN at 256 MiB "
			    "or less"},
			   pf_check_bar1},
	[GA_CHECK_NVIDIA] = {{"nvidia", "NVIDIA kernel module",
			      "the driver pins GPU memory through NVIDIA's module "
			      "(nvidia_p2p_get_pages), and only the Open Kernel Module exports "
			      "GPU memory as a dma-buf",
			      "FAIL when no NVIDIA driver is loaded; WARN for the proprietary "
			      "flavour (p2p only), or when CUDA says the GPU has no GPUDirect RDMA "
			      "(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED 0: dma-buf only)"},
			     pf_check_nvidia},
	[GA_CHECK_STREAM_MEMOPS] =
		{{"stream_memops", "NVreg_EnableStreamMemOPs and PeerMappingOverride",
		  "a GPU stream waits on the card's size doorbell with "
		  "cuStreamWaitValue32 (examples/cuda/consumer.c); drivers before "
		  "R515 refuse it unless EnableStreamMemOPs is 1, later ones need the "
		  "parameter only for CUDA's legacy stream memory API; for the GPU to "
		  "store to the card's registers (a peer mapping of its BAR) the driver "
		  "needs RegistryDwords PeerMappingOverride=1",
		  "WARN when EnableStreamMemOPs is 0 on a driver before R515, when "
		  "PeerMappingOverride is not 1, or unreadable: data still lands, but "
		  "the GPU cannot wait for it or ring the card without the CPU"},
		 pf_check_stream_memops},
	[GA_CHECK_DMABUF] = {{"dmabuf", "Kernel dma-buf support",
			      "the dmabuf pin path hands GPU memory to gpuasync.ko as a dma-buf "
			      "(CONFIG_DMA_SHARED_BUFFER); host memory buffers use /dev/udmabuf",
			      "OK when the kernel has dma-buf (its files, /proc/config.gz or "
			      "/boot/config-RELEASE) and CUDA, where it lists the GPU, says it "
			      "exports them (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED); WARN when "
			      "either says no, or nothing tells: the p2p path remains"},
			     pf_check_dmabuf},
	[GA_CHECK_PIN_PATH] = {{"pin_path", "Which pin path will be used",
				"dmabuf when gpuasync.ko fronts the card and the open NVIDIA "
				"module exports GPU memory; otherwise p2p, which needs a driver "
				"built against NVIDIA's nvidia_p2p interface",
				"FAIL when neither path can work (no driver, no NVIDIA driver, or "
				"p2p on a GPU CUDA says has no GPUDirect RDMA)"},
			       pf_check_pin_path},
	[GA_CHECK_CARD_DRIVER] = {{"card_driver", "Driver in front of the card and firmware",
				   "upstream's datadev pins GPU memory only when built with GPU "
				   "support; the firmware must have GPU async enabled and a "
				   "GpuAsyncCore version this library knows",
				   "FAIL without a driver, with GPU support compiled out, GPU "
				   "async off or an unknown core version"},
				  pf_check_card_driver},
	[GA_CHECK_STALE] = {{"stale", "Buffer address registers left behind",
			     "a process that died without removing its buffers leaves their "
			     "addresses in the card; an idle core may still write headers there, "
			     "into memory that now belongs to someone else",
			     "WARN for addresses no live process holds, or when the card could "
			     "not be opened"},
			    pf_check_stale},
	[GA_CHECK_PAIRING] = {{"pairing", "Card-GPU pairing",
			       "with several cards and GPUs each card should feed the GPU "
			       "nearest to it; the mount's gpu option picks it",
			       "OK when each card shares a switch or root port with its GPU; "
			       "WARN through a root complex; FAIL when a card has no GPU on its "
			       "root complex"},
			      pf_check_pairing},
};

const struct ga_check_info *ga_check_info(enum ga_check_id id)
{
	return (unsigned int)id < GA_CHECK_COUNT ? &rows[id].info : NULL;
}

/* Options a caller got wrong are refused before anything runs: a check
 * must not turn a typo into a verdict. */
static int check_opts(const struct ga_platform_opts *o, const char *root)
{
	char list[512], *save = NULL, *tok;
	struct stat st;

	if (root[0] && stat(root, &st))
		return ga_err(-errno, "root %s: %s", root, strerror(errno));
	if (root[0] && !S_ISDIR(st.st_mode))
		return ga_err(-ENOTDIR, "root %s: not a directory", root);
	if (o->gpus) {
		snprintf(list, sizeof(list), "%s", o->gpus);
		if (!strtok_r(list, ",", &save))
			return ga_err(-EINVAL, "GPU list '%s': empty", o->gpus);
		snprintf(list, sizeof(list), "%s", o->gpus);
		save = NULL;
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (!pf_is_bdf(tok))
				return ga_err(-EINVAL,
					      "GPU '%s': not a PCI address (like 0000:04:00.0)",
					      tok);
	}
	if (o->cpus)
		return pf_cpus_valid(root, o->cpus);
	return 0;
}

static struct pf pf; /* large (paths); one run at a time per process, under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A fresh pf for @opts; with the lock held. */
static int pf_begin(const struct ga_platform_opts *opts, struct ga_check_result *out)
{
	size_t n;

	memset(&pf, 0, sizeof(pf));
	pf.o = opts;
	pf.gi = -1;
	pf.res = out;
	snprintf(pf.root, sizeof(pf.root), "%s", opts->root ? opts->root : "");
	n = strlen(pf.root);
	while (n && pf.root[n - 1] == '/')
		pf.root[--n] = 0;
	return check_opts(opts, opts->root && opts->root[0] ? opts->root : "");
}

int ga_platform_run(const struct ga_platform_opts *opts, struct ga_check_result *out)
{
	int worst = GA_VERDICT_OK, rc;
	size_t n;

	if (!opts || !out)
		return ga_err(-EINVAL, "no options or no results");
	pthread_mutex_lock(&lock);
	if ((rc = pf_begin(opts, out))) {
		pthread_mutex_unlock(&lock);
		return rc;
	}
	for (int i = 0; i < GA_CHECK_COUNT; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].id = (enum ga_check_id)i;
		rows[i].run(&pf, &out[i]);
		/* Checks append "...; " per device: no separator at the end. */
		n = strlen(out[i].found);
		while (n && (out[i].found[n - 1] == ' ' || out[i].found[n - 1] == ';'))
			out[i].found[--n] = 0;
		n = strlen(out[i].todo);
		while (n && (out[i].todo[n - 1] == ' ' || out[i].todo[n - 1] == ';'))
			out[i].todo[--n] = 0;
		if ((int)out[i].verdict > worst)
			worst = (int)out[i].verdict;
	}
	pthread_mutex_unlock(&lock);
	return worst;
}

int ga_platform_topology(const struct ga_platform_opts *opts, struct ga_topology *t)
{
	static struct ga_check_result res[GA_CHECK_COUNT]; /* under lock */
	int rc;

	if (!opts || !t)
		return ga_err(-EINVAL, "no options or no result");
	if (t->paired && t->paired[0] && !pf_is_bdf(t->paired))
		return ga_err(-EINVAL, "paired GPU '%s': not a PCI address (like 0000:04:00.0)",
			      t->paired);
	pthread_mutex_lock(&lock);
	if (!(rc = pf_begin(opts, res))) {
		/* Only what finds the devices: the pairing needs no other check. */
		for (int i = GA_CHECK_CARD; i <= GA_CHECK_GPU; i++) {
			memset(&res[i], 0, sizeof(res[i]));
			res[i].id = (enum ga_check_id)i;
			rows[i].run(&pf, &res[i]);
		}
		pf_topology(&pf, t);
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

int ga_check_format(const struct ga_check_result *r, char *buf, size_t len)
{
	const struct ga_check_info *i = ga_check_info(r->id);

	if (!i)
		return snprintf(buf, len, "FAIL ?: unknown check %d\n", (int)r->id);
	return snprintf(buf, len, "%-4s %s: %s\n     why: %s\n%s%s%s", ga_verdict_name(r->verdict),
			i->name, r->found, i->why, r->todo[0] ? "     do:  " : "", r->todo,
			r->todo[0] ? "\n" : "");
}

int ga_check_format_short(const struct ga_check_result *r, char *buf, size_t len)
{
	static const char more[] = " ... (--explain)";
	const struct ga_check_info *i = ga_check_info(r->id);
	char head[48];
	size_t room, n, cut = 0;

	if (!i)
		return snprintf(buf, len, "FAIL ?: unknown check %d\n", (int)r->id);
	snprintf(head, sizeof(head), "%-4s %s: ", ga_verdict_name(r->verdict), i->name);
	n = strlen(r->found);
	room = GA_CHECK_SHORT_WIDTH - strlen(head);
	if (n <= room)
		return snprintf(buf, len, "%s%s\n", head, r->found);
	/* Cut where a part ends: after a "; " (one device), else a ", ",
	 * else a blank, so what is shown reads whole. */
	room -= sizeof(more) - 1;
	for (const char *sep = "; \0, \0 \0"; *sep && !cut; sep += strlen(sep) + 1)
		for (size_t k = room; k > room / 3 && !cut; k--)
			if (!strncmp(r->found + k, sep, strlen(sep)))
				cut = k;
	if (!cut)
		cut = room;
	return snprintf(buf, len, "%s%.*s%s\n", head, (int)cut, r->found, more);
}
