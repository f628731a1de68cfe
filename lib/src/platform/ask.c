// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the platform doctor asks beyond sysfs: the kernel's build
 * configuration (/proc/config.gz, else /boot/config-RELEASE) and CUDA's
 * device attributes.  Both libraries are loaded at run time, as the CUDA
 * memory layer loads libcuda.so.1 (lib/src/memory/mem_cuda.c): libz.so.1
 * for the gzip, libcuda.so.1 for the driver.  Neither is needed to build
 * or to run; without one the answer is "could not tell", and why.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pf.h"

/* ---- the kernel's configuration ------------------------------------------------ */

/* zlib's gz* calls, by the names zlib.h gives them. */
struct gz_fns {
	void *(*gzopen)(const char *path, const char *mode);
	char *(*gzgets)(void *file, char *buf, int len);
	int (*gzclose)(void *file);
};

/* @line of a config file: "CONFIG_X=y|m|..." or "# CONFIG_X is not set". */
static int config_line(const char *line, const char *opt, char *val, size_t len)
{
	size_t n = strlen(opt);

	if (!strncmp(line, opt, n) && line[n] == '=') {
		snprintf(val, len, "%.*s", (int)strcspn(line + n + 1, "\n"), line + n + 1);
		return 1;
	}
	if (!strncmp(line, "# ", 2) && !strncmp(line + 2, opt, n) &&
	    !strncmp(line + 2 + n, " is not set", 11)) {
		snprintf(val, len, "n");
		return 1;
	}
	return 0;
}

int pf_kconfig(const struct pf *pf, const char *opt, char *val, size_t len, char *src,
	       size_t slen)
{
	char p[PATH_MAX], rel[128], line[512];
	int found = 0;
	FILE *f;

	val[0] = 0;
	pf_path(pf, p, "/proc/config.gz");
	if (pf_exists(pf, "/proc/config.gz")) {
		struct gz_fns z;
		void *lib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL), *gz;

		snprintf(src, slen, "/proc/config.gz");
		if (!lib)
			return -ENOSYS; /* no libz.so.1 to read it with */
		*(void **)&z.gzopen = dlsym(lib, "gzopen");
		*(void **)&z.gzgets = dlsym(lib, "gzgets");
		*(void **)&z.gzclose = dlsym(lib, "gzclose");
		if (!z.gzopen || !z.gzgets || !z.gzclose || !(gz = z.gzopen(p, "rb"))) {
			dlclose(lib);
			return -EIO;
		}
		while (!found && z.gzgets(gz, line, sizeof(line)))
			found = config_line(line, opt, val, len);
		z.gzclose(gz);
		dlclose(lib);
		return found ? 0 : -ENODATA;
	}
	if (pf_read(pf, rel, sizeof(rel), "/proc/sys/kernel/osrelease")) {
		snprintf(src, slen, "/proc/config.gz or /proc/sys/kernel/osrelease");
		return -ENOENT;
	}
	snprintf(src, slen, "/boot/config-%s", rel);
	pf_path(pf, p, "/boot/config-%s", rel);
	if (!(f = fopen(p, "re")))
		return -errno;
	while (!found && fgets(line, sizeof(line), f))
		found = config_line(line, opt, val, len);
	fclose(f);
	return found ? 0 : -ENODATA;
}

/* ---- CUDA's device attributes ------------------------------------------------------ */

/* CUdevice_attribute values (cuda.h, CUDA 11.7 on; stable numbers). */
enum {
	CU_ATTR_PCI_BUS_ID = 33,
	CU_ATTR_PCI_DEVICE_ID = 34,
	CU_ATTR_PCI_DOMAIN_ID = 50,
	CU_ATTR_GPU_DIRECT_RDMA_SUPPORTED = 116,
	CU_ATTR_DMA_BUF_SUPPORTED = 124,
};

#ifdef GA_HAVE_CUDA_H
#include <cuda.h>
_Static_assert((int)CU_ATTR_PCI_BUS_ID == (int) CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, "cuda.h");
_Static_assert((int)CU_ATTR_PCI_DEVICE_ID == (int) CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, "cuda.h");
_Static_assert((int)CU_ATTR_PCI_DOMAIN_ID == (int) CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, "cuda.h");
_Static_assert((int)CU_ATTR_GPU_DIRECT_RDMA_SUPPORTED == (int)
		       CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED,
	       "cuda.h");
_Static_assert((int)CU_ATTR_DMA_BUF_SUPPORTED == (int) CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, "cuda.h");
#endif

struct cu_fns {
	int (*cuInit)(unsigned int flags);
	int (*cuDeviceGetCount)(int *count);
	int (*cuDeviceGet)(int *dev, int ordinal);
	int (*cuDeviceGetAttribute)(int *v, int attr, int dev);
};

void pf_cuda(struct pf *pf)
{
	struct cu_fns f;
	void *lib;
	int n = 0, rc;

	if (pf->cu.asked)
		return;
	pf->cu.asked = true;
	pf->cu.dmabuf = pf->cu.rdma = -1;
	if (!pf->o->cuda || pf->gi < 0) {
		snprintf(pf->cu.why, sizeof(pf->cu.why), "%s",
			 pf->gi < 0 ? "no GPU to ask about" : "not asked");
		return;
	}
	if (!(lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
		snprintf(pf->cu.why, sizeof(pf->cu.why), "no libcuda.so.1");
		return;
	}
	*(void **)&f.cuInit = dlsym(lib, "cuInit");
	*(void **)&f.cuDeviceGetCount = dlsym(lib, "cuDeviceGetCount");
	*(void **)&f.cuDeviceGet = dlsym(lib, "cuDeviceGet");
	*(void **)&f.cuDeviceGetAttribute = dlsym(lib, "cuDeviceGetAttribute");
	if (!f.cuInit || !f.cuDeviceGetCount || !f.cuDeviceGet || !f.cuDeviceGetAttribute) {
		snprintf(pf->cu.why, sizeof(pf->cu.why), "libcuda.so.1 lacks cuDeviceGetAttribute");
		goto out_close;
	}
	if ((rc = f.cuInit(0)) || (rc = f.cuDeviceGetCount(&n))) {
		snprintf(pf->cu.why, sizeof(pf->cu.why), "CUDA error %d", rc);
		goto out_close;
	}
	/* The device CUDA places at the GPU's address (function 0: CUDA gives
	 * domain, bus and device). */
	for (int i = 0; i < n; i++) {
		int dev, dom, bus, slot;
		char bdf[16];

		if (f.cuDeviceGet(&dev, i) ||
		    f.cuDeviceGetAttribute(&dom, CU_ATTR_PCI_DOMAIN_ID, dev) ||
		    f.cuDeviceGetAttribute(&bus, CU_ATTR_PCI_BUS_ID, dev) ||
		    f.cuDeviceGetAttribute(&slot, CU_ATTR_PCI_DEVICE_ID, dev))
			continue;
		snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.0", dom & 0xffff, bus & 0xff,
			 slot & 0x1f);
		if (strcmp(bdf, pf->gpu[pf->gi].bdf))
			continue;
		pf->cu.ordinal = i;
		if (f.cuDeviceGetAttribute(&pf->cu.dmabuf, CU_ATTR_DMA_BUF_SUPPORTED, dev))
			pf->cu.dmabuf = -1;
		if (f.cuDeviceGetAttribute(&pf->cu.rdma, CU_ATTR_GPU_DIRECT_RDMA_SUPPORTED, dev))
			pf->cu.rdma = -1;
		pf->cu.found = true;
		goto out_close;
	}
	snprintf(pf->cu.why, sizeof(pf->cu.why), "none of CUDA's %d device%s is at %s", n,
		 n == 1 ? "" : "s", pf->gpu[pf->gi].bdf);
out_close:
	/* libcuda is not unloaded: its threads outlive cuInit. */
	(void)lib;
}
