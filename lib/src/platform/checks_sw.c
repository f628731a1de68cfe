// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The checks the drivers answer: NVIDIA's module (flavour, version,
 * stream memory operations), the kernel's dma-buf support, the pin path
 * the library will take, the driver in front of the card and its
 * firmware, and buffer address registers left behind (read through
 * libgpuasync, as a mount reads them).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuasync/device.h"
#include "pf.h"

/* ---- NVIDIA ------------------------------------------------------------------- */

struct nv {
	int present; /* 1 loaded, 0 absent, -1 could not tell */
	bool open;   /* the Open Kernel Module */
	char version[32];
	char why[160]; /* when present != 1 */
};

static void nv_probe(const struct pf *pf, struct nv *nv)
{
	char line[512], *p;
	int rc;

	memset(nv, 0, sizeof(*nv));
	rc = pf_read(pf, line, sizeof(line), "/proc/driver/nvidia/version");
	if (rc) {
		if (!pf_read(pf, nv->version, sizeof(nv->version), "/sys/module/nvidia/version")) {
			nv->present = 1;
			snprintf(nv->why, sizeof(nv->why), "/proc/driver/nvidia/version: %s",
				 strerror(-rc));
			return;
		}
		nv->present = rc == -ENOENT ? 0 : -1;
		snprintf(nv->why, sizeof(nv->why), "/proc/driver/nvidia/version: %s",
			 strerror(-rc));
		return;
	}
	nv->present = 1;
	if ((p = strchr(line, '\n')))
		*p = 0;
	/* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release ..."
	 * against "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ...". */
	nv->open = strstr(line, "Open Kernel Module") != NULL;
	for (p = line; *p; p++)
		if (isdigit((unsigned char)*p) && (p == line || p[-1] == ' ') && strchr(p, '.') &&
		    strspn(p, "0123456789.") > 3) {
			snprintf(nv->version, sizeof(nv->version), "%.*s",
				 (int)strspn(p, "0123456789."), p);
			break;
		}
	if (!nv->version[0])
		pf_read(pf, nv->version, sizeof(nv->version), "/sys/module/nvidia/version");
}

void pf_check_nvidia(struct pf *pf, struct ga_check_result *r)
{
	struct nv nv;

	nv_probe(pf, &nv);
	if (nv.present == 0) {
		r->verdict = GA_VERDICT_FAIL;
		pf_found(r,
			 "no NVIDIA driver loaded (no /proc/driver/nvidia, no /sys/module/nvidia)");
		if (pf_exists(pf, "/sys/module/nv_p2p_stub"))
			pf_found(r, "; nv_p2p_stub (the emulator's stand-in) is loaded");
		pf_todo(r, "install and load NVIDIA's driver, the open flavour (nvidia-open) for "
			   "the dma-buf pin path");
		return;
	}
	if (nv.present < 0) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "could not tell: %s", nv.why);
		return;
	}
	pf_found(r, "%s kernel module, version %s", nv.open ? "Open" : "proprietary",
		 nv.version[0] ? nv.version : "? (none given)");
	if (!nv.open) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, ": GPU memory cannot be exported as a dma-buf, the p2p path remains");
		pf_todo(r, "install the open flavour (nvidia-open, 515 or later) for the dma-buf "
			   "path; ");
	}
	pf_cuda(pf);
	if (pf->cu.found && pf->cu.rdma >= 0)
		pf_found(r, "; CUDA %d (%s): CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED %d",
			 pf->cu.ordinal, pf->gpu[pf->gi].bdf, pf->cu.rdma);
	if (pf->cu.found && pf->cu.rdma == 0) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, ": nvidia_p2p_get_pages refuses this GPU");
		pf_todo(r, "the dma-buf path only; for p2p, a GPU with GPUDirect RDMA");
	}
}

/* PeerMappingOverride in the params text: its own "PeerMappingOverride: N"
 * line, or inside RegistryDwords ("PeerMappingOverride=1;..."); -1 absent. */
static int peer_override(const char *text)
{
	const char *p = strstr(text, "PeerMappingOverride");

	if (!p)
		return -1;
	p += strlen("PeerMappingOverride");
	p += strspn(p, ":= \t\"");
	return (int)strtol(p, NULL, 0);
}

void pf_check_stream_memops(struct pf *pf, struct ga_check_result *r)
{
	static char params[16384];
	char dw[1024] = "";
	unsigned long long v;
	int rc, peer = -1;
	bool from_params;

	rc = pf_read(pf, params, sizeof(params), "/proc/driver/nvidia/params");
	from_params = !rc && strstr(params, "EnableStreamMemOPs:");
	if (from_params) {
		v = strtoull(strstr(params, "EnableStreamMemOPs:") + strlen("EnableStreamMemOPs:"),
			     NULL, 0);
		pf_found(r, "EnableStreamMemOPs: %llu", v);
		peer = peer_override(params);
	} else if (!pf_read_ull(pf, &v, "/sys/module/nvidia/parameters/NVreg_EnableStreamMemOPs")) {
		pf_found(r, "NVreg_EnableStreamMemOPs=%llu", v);
		if (!pf_read(pf, dw, sizeof(dw), "/sys/module/nvidia/parameters/NVreg_RegistryDwords"))
			peer = peer_override(dw);
	} else {
		pf_unknown(r, "%s", rc ? "no /proc/driver/nvidia/params (NVIDIA driver not loaded?)"
				       : "EnableStreamMemOPs not in /proc/driver/nvidia/params");
		return;
	}
	/* Not in the registry keys: the driver's default, off. */
	pf_found(r, ", PeerMappingOverride %d%s (%s)", peer > 0 ? peer : 0, peer < 0 ? " (unset)" : "",
		 from_params ? "/proc/driver/nvidia/params" : "/sys/module/nvidia/parameters");
	if (v != 1) {
		struct nv nv;

		/* The parameter gates only CUDA's first stream memory API; the
		 * second (CUDA 11.7, driver R515 on), which cuStreamWaitValue32
		 * is in CUDA 12 on, is on by default (docs/platform.md). */
		nv_probe(pf, &nv);
		if (nv.present > 0 && atoi(nv.version) >= 515) {
			pf_found(r,
				 ": only CUDA's legacy stream memory API needs EnableStreamMemOPs; "
				 "driver %s has the current one on by default",
				 nv.version);
		} else {
			r->verdict = GA_VERDICT_WARN;
			pf_found(r, ": a GPU stream cannot wait on the card's doorbells");
			pf_todo(r, "options nvidia NVreg_EnableStreamMemOPs=1 in /etc/modprobe.d/, "
				   "then reload the nvidia modules (or reboot); ");
		}
	}
	if (peer != 1) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "; the GPU cannot map the card's registers to store to them");
		pf_todo(r, "options nvidia NVreg_RegistryDwords=\"PeerMappingOverride=1;\" in "
			   "/etc/modprobe.d/, then reload the nvidia modules (or reboot)");
	}
}

/* ---- dma-buf -------------------------------------------------------------------- */

/* The kernel's dma-buf: 1 yes, 0 no, -1 could not tell; @how says from where. */
static int dmabuf_kernel(const struct pf *pf, char *how, size_t len)
{
	static const char *const seen[] = {"/sys/kernel/dmabuf", "/sys/kernel/debug/dma_buf",
					   "/dev/udmabuf", "/dev/dma_heap"};
	char val[32], src[160];
	int rc;

	for (unsigned int i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
		if (pf_exists(pf, "%s", seen[i])) {
			snprintf(how, len, "%s exists", seen[i]);
			return 1;
		}
	rc = pf_kconfig(pf, "CONFIG_DMA_SHARED_BUFFER", val, sizeof(val), src, sizeof(src));
	if (rc == -ENODATA) {
		/* A symbol nothing selected is not in the file at all. */
		snprintf(how, len, "%s: no CONFIG_DMA_SHARED_BUFFER", src);
		return 0;
	}
	if (rc) {
		snprintf(how, len, "no dma-buf files; %s: %s", src,
			 rc == -ENOSYS ? "no libz.so.1 to read it" : strerror(-rc));
		return -1;
	}
	snprintf(how, len, "%s: CONFIG_DMA_SHARED_BUFFER=%s", src, val);
	return val[0] == 'y' || val[0] == 'm';
}

/* dma-buf for the GPU judged: the kernel's, and CUDA's export where CUDA
 * lists that GPU (1 there means the kernel has it too). */
static int dmabuf_support(struct pf *pf, char *how, size_t len)
{
	char kernel[512];
	int k = dmabuf_kernel(pf, kernel, sizeof(kernel));

	pf_cuda(pf);
	if (!pf->cu.found || pf->cu.dmabuf < 0) {
		snprintf(how, len, "%s", kernel);
		return k;
	}
	/* CUDA's answer first: it is about this GPU, and said for sure. */
	snprintf(how, len, "CUDA %d: CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED %d; %s", pf->cu.ordinal,
		 pf->cu.dmabuf, kernel);
	return k == 0 ? 0 : pf->cu.dmabuf;
}

void pf_check_dmabuf(struct pf *pf, struct ga_check_result *r)
{
	char how[PATH_MAX + 64];
	int s = dmabuf_support(pf, how, sizeof(how));

	if (s < 0)
		pf_unknown(r, "%s", how);
	else
		pf_found(r, "%s (%s)", s ? "dma-buf supported" : "no dma-buf", how);
	pf_found(r, "; /dev/udmabuf %s", pf_exists(pf, "/dev/udmabuf") ? "present" : "absent");
	if (s == 0 && pf->cu.found && pf->cu.dmabuf == 0) {
		pf_at_least(r, GA_VERDICT_WARN);
		pf_todo(r, "the p2p path works without it; CUDA exports dma-bufs from the open "
			   "NVIDIA module (515 on) on a kernel with CONFIG_DMA_SHARED_BUFFER");
	} else if (s <= 0) {
		pf_at_least(r, GA_VERDICT_WARN);
		pf_todo(r, "the p2p path works without it; for dma-buf, a kernel with "
			   "CONFIG_DMA_SHARED_BUFFER (every distribution kernel has it)");
	}
}

/* ---- the driver in front of the card ------------------------------------------------ */

/* "Label : value" from /proc/datadev_N; "" when absent. */
static void proc_field(const char *text, const char *label, char *out, size_t len)
{
	const char *p = strstr(text, label), *c;

	out[0] = 0;
	if (!p || !(c = strstr(p, " : ")))
		return;
	c += 3;
	snprintf(out, len, "%.*s", (int)strcspn(c, "\n"), c);
}

static bool datadev_gpu_built(const struct pf *pf)
{
	static char text[16384];
	char v[64];

	if (!pf->cls[0] || pf_read(pf, text, sizeof(text), "/proc/%s", pf->cls))
		return false;
	proc_field(text, "GPUAsync Support", v, sizeof(v));
	return !strcmp(v, "Enabled");
}

void pf_check_card_driver(struct pf *pf, struct ga_check_result *r)
{
	static char text[16384];
	char mv[64] = "", fw[64] = "", en[64] = "", sup[64] = "", cv[64] = "";
	unsigned long long ver = 0, gpu_en = 0;
	int rc;

	if (pf->drv == PF_DRV_GPUASYNC ||
	    (!pf->have_card && pf->cls[0] && pf_exists(pf, "/sys/class/gpuasync/%s", pf->cls))) {
		pf_read(pf, mv, sizeof(mv), "/sys/module/gpuasync/version");
		pf_found(r, "gpuasync.ko %s", mv[0] ? mv : "(no /sys/module/gpuasync/version)");
		if (!pf->cls[0]) {
			r->verdict = GA_VERDICT_WARN;
			pf_found(r, "; could not tell: the card has no /sys/class/gpuasync entry");
			return;
		}
		if ((rc = pf_read_ull(pf, &ver, "/sys/class/gpuasync/%s/version", pf->cls)) ||
		    (rc = pf_read_ull(pf, &gpu_en, "/sys/class/gpuasync/%s/gpu_enabled",
				      pf->cls))) {
			r->verdict = GA_VERDICT_WARN;
			pf_found(r, "; %s: could not tell (%s)", pf->cls, strerror(-rc));
			return;
		}
		pf_found(r, "; %s: GpuAsyncCore version %llu, GPU async %s", pf->cls, ver,
			 gpu_en ? "on" : "off");
	} else if (pf->drv == PF_DRV_DATADEV) {
		if (!pf->cls[0] || (rc = pf_read(pf, text, sizeof(text), "/proc/%s", pf->cls))) {
			r->verdict = GA_VERDICT_WARN;
			pf_found(r, "datadev; could not tell its state: no /proc/datadev_N for %s",
				 pf->card.bdf);
			return;
		}
		proc_field(text, "Firmware Version", fw, sizeof(fw));
		proc_field(text, "GPU Async En", en, sizeof(en));
		proc_field(text, "GpuAsyncCore Version", cv, sizeof(cv));
		proc_field(text, "GPUAsync Support", sup, sizeof(sup));
		ver = strtoull(cv, NULL, 0);
		gpu_en = en[0] == '1';
		pf_found(r,
			 "datadev (aes-stream-drivers) as %s: firmware %s, GPU Async En %s, "
			 "GpuAsyncCore version %s, driver GPUAsync Support %s",
			 pf->cls, fw[0] ? fw : "?", en[0] ? en : "?", cv[0] ? cv : "?",
			 sup[0] ? sup : "?");
		if (strcmp(sup, "Enabled")) {
			r->verdict = GA_VERDICT_FAIL;
			pf_todo(r, "rebuild datadev with NVIDIA_DRIVERS set (GPU support), or use "
				   "gpuasync.ko; ");
		}
	} else if (!pf->have_card) {
		pf_unknown(r, "no card");
		return;
	} else {
		r->verdict = GA_VERDICT_FAIL;
		pf_found(r, "%s",
			 pf->drv_name[0] ? "the card is bound to another driver"
					 : "no driver bound to the card");
		if (pf->drv_name[0])
			pf_found(r, " (%s)", pf->drv_name);
		pf_todo(r, "load gpuasync.ko or datadev.ko built with GPU support");
		return;
	}
	if (!gpu_en) {
		r->verdict = GA_VERDICT_FAIL;
		pf_todo(r, "load a firmware image built with GPU async (DATAGPU_EN_G)");
	} else if (ver < 1 || ver > GA_VERSION_MAX) {
		r->verdict = GA_VERDICT_FAIL;
		pf_todo(r, "GpuAsyncCore version %llu is not one this library knows (1-%u)", ver,
			(unsigned int)GA_VERSION_MAX);
	}
}

/* ---- the pin path ------------------------------------------------------------------ */

void pf_check_pin_path(struct pf *pf, struct ga_check_result *r)
{
	char how[PATH_MAX + 64];
	struct nv nv;
	int dmabuf = dmabuf_support(pf, how, sizeof(how));

	nv_probe(pf, &nv);
	if (pf->drv == PF_DRV_GPUASYNC && nv.present == 1 && nv.open && dmabuf > 0) {
		pf_found(r, "dmabuf: gpuasync.ko takes dma-bufs (GA_Add_Dmabuf), the open NVIDIA "
			    "module exports GPU memory as one");
		return;
	}
	if ((pf->drv == PF_DRV_GPUASYNC || pf->drv == PF_DRV_DATADEV) && pf->cu.found &&
	    pf->cu.rdma == 0) {
		r->verdict = GA_VERDICT_FAIL;
		pf_found(r, "p2p, and CUDA says GPU %s has no GPUDirect RDMA "
			    "(CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED 0)",
			 pf->gpu[pf->gi].bdf);
		pf_todo(r, "gpuasync.ko with the open NVIDIA module for the dma-buf path, or a GPU "
			   "with GPUDirect RDMA");
		return;
	}
	if (pf->drv == PF_DRV_GPUASYNC || pf->drv == PF_DRV_DATADEV) {
		pf_found(r, "p2p (the driver pins GPU memory with nvidia_p2p_get_pages)");
		if (pf->drv == PF_DRV_DATADEV)
			pf_found(r, ": datadev has no dma-buf registration");
		else
			pf_found(r, ": dma-buf needs %s",
				 nv.present != 1 ? "the NVIDIA driver"
				 : !nv.open	 ? "the open NVIDIA module"
						 : "kernel dma-buf support");
		if (pf->drv == PF_DRV_DATADEV && !datadev_gpu_built(pf)) {
			r->verdict = GA_VERDICT_FAIL;
			pf_found(r, "; but this datadev was built without GPU support");
			pf_todo(r, "rebuild datadev with NVIDIA_DRIVERS set, or use gpuasync.ko");
		} else if (nv.present == 0) {
			r->verdict = GA_VERDICT_FAIL;
			pf_found(r, "; no NVIDIA driver to pin with");
			pf_todo(r, "load NVIDIA's driver");
		} else if (nv.present < 0) {
			pf_found(r, "; ");
			pf_unknown(r, "whether the NVIDIA driver is there to pin with (%s)", nv.why);
		}
		return;
	}
	if (!pf->have_card) {
		pf_unknown(r, "no card");
		return;
	}
	r->verdict = GA_VERDICT_FAIL;
	pf_found(r, "none: no driver in front of the card");
	pf_todo(r, "load gpuasync.ko or datadev.ko");
}

/* ---- stale buffer addresses -------------------------------------------------------- */

static bool pinned_live(const struct pf *pf, const struct ga_pinned *pins, unsigned int n,
			enum ga_dir dir, unsigned int i)
{
	for (unsigned int k = 0; k < n; k++)
		if (pins[k].dir == dir && pins[k].index == i &&
		    (pins[k].owner <= 0 || pf_exists(pf, "/proc/%d", pins[k].owner)))
			return true;
	return false;
}

void pf_check_stale(struct pf *pf, struct ga_check_result *r)
{
	struct ga_open_opts oo = GA_OPEN_OPTS_DEFAULT;
	static struct ga_pinned pins[2 * GA_MAX_BUFFERS]; /* both directions */
	unsigned int npins = 0, stale = 0, held = 0;
	struct ga_dev_info info;
	struct ga_dev *dev;
	bool table;
	int rc;

	if (!pf->o->open_device) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "not checked (the card was not to be opened)");
		return;
	}
	if (!pf->node[0]) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "could not tell: no device node for the card");
		return;
	}
	oo.use_gpu = false;
	oo.gpu_index = -1;
	rc = ga_dev_open_opts(pf->node, &oo, &dev);
	if (rc) {
		r->verdict = GA_VERDICT_WARN;
		pf_found(r, "could not tell: opening %s: %s", pf->node, ga_last_error());
		pf_todo(r, "run with permission to open %s", pf->node);
		return;
	}
	ga_dev_info(dev, &info);
	table = ga_dev_has(dev, GA_CAP_BUFFER_TABLE) &&
		!ga_dev_pinned(dev, pins, sizeof(pins) / sizeof(pins[0]), &npins);
	for (int dir = GA_DIR_WRITE; dir <= GA_DIR_READ; dir++) {
		enum ga_reg_id lo =
			dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO;
		enum ga_reg_id hi =
			dir == GA_DIR_WRITE ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI;

		for (unsigned int i = 0; i < info.max_buffers; i++) {
			uint32_t l = 0, h = 0;

			if (ga_reg_read(dev, lo, i, &l) || ga_reg_read(dev, hi, i, &h))
				break;
			if (!l && !h)
				continue;
			if (table && pinned_live(pf, pins, npins, (enum ga_dir)dir, i)) {
				held++;
				continue;
			}
			if (stale < 4)
				pf_found(r, "%s%s %u: 0x%08x%08x", stale ? ", " : "",
					 dir == GA_DIR_WRITE ? "write" : "read", i, h, l);
			stale++;
		}
	}
	ga_dev_close(dev);
	if (!stale) {
		pf_found(r, "%s: no address left behind (%u held by live processes)", pf->node,
			 held);
		return;
	}
	r->verdict = GA_VERDICT_WARN;
	pf_found(r, "%s, %u address register%s set %s", stale > 4 ? ", ..." : "", stale,
		 stale == 1 ? "" : "s",
		 table ? "with no live process holding that buffer"
		       : "(datadev keeps no buffer table: stale unless a process is using the "
			 "card)");
	pf_todo(r, "an idle core can write headers to those addresses: stop the process "
		   "using the card, then reload the driver, or mount and remove the buffers");
}
