/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * iomem-privilege: which privilege CUDA wants to register a card's
 * register block for the GPU (the DRP's cuMemHostRegister(IOMEMORY |
 * DEVICEMAP) on its mmap of the registers), found by trying it.
 *
 *   iomem-privilege RESOURCE_FILE MODE
 *
 * Opens and maps RESOURCE_FILE (a PCI BAR under /sys/bus/pci/devices/,
 * which needs root; "-": shared anonymous memory, which is not I/O memory,
 * to see which refusal comes first where no BAR can be mapped), then drops privilege as MODE says, keeping the
 * mapping, as a process that got its mapping from a driver would have it:
 *   root         keep everything
 *   no-admin     drop CAP_SYS_ADMIN from every set
 *   no-rawio     drop CAP_SYS_RAWIO from every set
 *   no-caps      drop every capability, stay uid 0
 *   user         become uid/gid 65534 with no capabilities
 * and registers the mapping (IOMEMORY | DEVICEMAP), then, as a control, 64
 * KiB of ordinary host memory (DEVICEMAP).  The mapping is never read or
 * written, by the CPU or the GPU.  Prints one line per registration:
 *   MODE iomem|host CUDA_RESULT_NAME
 * Exit 0 when both registrations were tried, 2 on a set-up failure.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <err.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <grp.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAP_BYTES 65536u

/* Drop the capabilities in @drop (a bit mask over the first 64) from the
 * bounding, effective, permitted and inheritable sets. */
static void drop_caps(unsigned long long drop)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	for (int c = 0; c < 64; c++)
		if (drop >> c & 1)
			prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	if (syscall(SYS_capget, &h, d))
		err(2, "capget");
	for (int i = 0; i < 2; i++) {
		unsigned int keep = (unsigned int)~(drop >> (32 * i));

		d[i].effective &= keep;
		d[i].permitted &= keep;
		d[i].inheritable &= keep;
	}
	if (syscall(SYS_capset, &h, d))
		err(2, "capset");
}

static const char *result(CUresult r)
{
	const char *s = NULL;

	cuGetErrorName(r, &s);
	return s ? s : "?";
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUresult r;
	void *bar, *host;
	int fd;

	if (argc != 3)
		errx(2, "usage: iomem-privilege RESOURCE_FILE root|no-admin|no-rawio|no-caps|user");
	if (!strcmp(argv[1], "-")) {
		bar = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (bar == MAP_FAILED)
			err(2, "mmap anonymous");
	} else {
		fd = open(argv[1], O_RDWR | O_SYNC);
		if (fd < 0)
			err(2, "%s", argv[1]);
		bar = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (bar == MAP_FAILED)
			err(2, "mmap %s", argv[1]);
		close(fd);
	}

	if (!strcmp(argv[2], "no-admin")) {
		drop_caps(1ull << CAP_SYS_ADMIN);
	} else if (!strcmp(argv[2], "no-rawio")) {
		drop_caps(1ull << CAP_SYS_RAWIO);
	} else if (!strcmp(argv[2], "no-caps")) {
		prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
		drop_caps(~0ull);
	} else if (!strcmp(argv[2], "user")) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			err(2, "become 65534");
	} else if (strcmp(argv[2], "root")) {
		errx(2, "unknown mode %s", argv[2]);
	}

	if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) || (r = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
	    (r = cuCtxSetCurrent(ctx)))
		errx(2, "%s: CUDA set-up: %s", argv[2], result(r));
	r = cuMemHostRegister(bar, MAP_BYTES,
			      CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_DEVICEMAP);
	printf("%s iomem %s\n", argv[2], result(r));
	if (r == CUDA_SUCCESS)
		cuMemHostUnregister(bar);

	host = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (host == MAP_FAILED)
		err(2, "mmap host");
	r = cuMemHostRegister(host, MAP_BYTES, CU_MEMHOSTREGISTER_DEVICEMAP);
	printf("%s host %s\n", argv[2], result(r));
	if (r == CUDA_SUCCESS)
		cuMemHostUnregister(host);
	cuDevicePrimaryCtxRelease(dev);
	munmap(host, MAP_BYTES);
	munmap(bar, MAP_BYTES);
	return 0;
}
