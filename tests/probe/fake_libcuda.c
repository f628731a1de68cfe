// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A stand-in libcuda.so.1 for test_gpu_probe and test_check_cli: cuInit
 * answers what GA_FAKE_CUINIT says (default 999, CUDA_ERROR_UNKNOWN),
 * cuDeviceGetCount counts GA_FAKE_CUCOUNT devices (default 1), and
 * cuDeviceGetAttribute gives every device the PCI address GA_FAKE_PCI
 * ("0000:04:00", domain:bus:device) and GA_FAKE_DMABUF / GA_FAKE_RDMA
 * (default 1) for CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED and
 * _GPU_DIRECT_RDMA_SUPPORTED, as the platform doctor asks.  Nothing else
 * is there, so the library's own open of it fails (a driver that lacks
 * functions).  Loaded only through LD_LIBRARY_PATH by those tests.
 */
#include <stdio.h>
#include <stdlib.h>

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : dflt;
}

int cuInit(unsigned int flags)
{
	(void)flags;
	return env_int("GA_FAKE_CUINIT", 999);
}

int cuDeviceGetCount(int *count)
{
	*count = env_int("GA_FAKE_CUCOUNT", 1);
	return 0;
}

int cuGetErrorName(int error, const char **name)
{
	(void)error;
	*name = "CUDA_ERROR_FAKE";
	return 0;
}

int cuDeviceGet(int *dev, int ordinal)
{
	*dev = ordinal;
	return ordinal < env_int("GA_FAKE_CUCOUNT", 1) ? 0 : 101; /* CUDA_ERROR_INVALID_DEVICE */
}

/* The attributes by their cuda.h numbers. */
int cuDeviceGetAttribute(int *v, int attr, int dev)
{
	const char *pci = getenv("GA_FAKE_PCI");
	unsigned int dom = 0, bus = 4, slot = 0;

	(void)dev;
	if (pci)
		sscanf(pci, "%x:%x:%x", &dom, &bus, &slot);
	switch (attr) {
	case 33: /* PCI_BUS_ID */
		*v = (int)bus;
		return 0;
	case 34: /* PCI_DEVICE_ID */
		*v = (int)slot;
		return 0;
	case 50: /* PCI_DOMAIN_ID */
		*v = (int)dom;
		return 0;
	case 116: /* GPU_DIRECT_RDMA_SUPPORTED */
		*v = env_int("GA_FAKE_RDMA", 1);
		return 0;
	case 124: /* DMA_BUF_SUPPORTED */
		*v = env_int("GA_FAKE_DMABUF", 1);
		return 0;
	}
	return 1; /* CUDA_ERROR_INVALID_VALUE */
}
