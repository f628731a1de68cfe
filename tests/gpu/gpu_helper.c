/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gpu-helper: what the GPU shell tests need that a shell cannot do.
 *
 *   gpu-helper name                 GPU 0's name (as device/gpu should say)
 *   gpu-helper meminfo              free bytes on GPU 0 (cuMemGetInfo)
 *   gpu-helper ipc HEX              open an IPC handle in this process: prints
 *                                   "type=device size=N" of the mapping
 *   gpu-helper read HEX OFF LEN     LEN bytes at OFF of the mapping, to stdout
 *   gpu-helper write HEX OFF < IN   stdin's bytes into the mapping at OFF
 *   gpu-helper dmabuf SIZE...       GPU 0's CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED,
 *                                   then per SIZE: cuMemAlloc, export the whole
 *                                   allocation as a dma-buf fd, and print what
 *                                   the fd says (lseek size, exporter, fstat),
 *                                   close it, cuMemFree; exit 3 when the
 *                                   device does not export, 1 on any mismatch
 *
 * Exit 0 on success, 1 with a message on failure; 77 when there is no GPU,
 * so a caller can skip.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda.h>
#include "common/fd_count.h"

static void fail(const char *what, CUresult r)
{
	const char *n = NULL;

	cuGetErrorName(r, &n);
	fprintf(stderr, "gpu-helper: %s: %s\n", what, n ? n : "?");
	exit(1);
}

#define CK(call)                                                                                   \
	do {                                                                                       \
		CUresult r_ = (call);                                                              \
		if (r_ != CUDA_SUCCESS)                                                            \
			fail(#call, r_);                                                           \
	} while (0)

/* The exporter's name in /proc/self/fdinfo/@fd ("" when not a dma-buf). */
static void exporter(int fd, char *name, size_t len)
{
	char path[64], line[160];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	name[0] = '\0';
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "exp_name: %63s", name) == 1)
			break;
	fclose(f);
	(void)len;
}

static int dmabuf(CUdevice dev, int argc, char **argv)
{
	unsigned int fds0 = fd_count();
	int v = -1, bad = 0;

	CK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev));
	printf("CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED=%d\n", v);
	if (v != 1)
		return 3;
	for (int i = 2; i < argc; i++) {
		size_t size = strtoull(argv[i], NULL, 0);
		char name[64];
		struct stat st;
		CUdeviceptr d;
		off_t end;
		int fd = -1;

		CK(cuMemAlloc(&d, size));
		CK(cuMemGetHandleForAddressRange(&fd, d, size, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
						 0));
		end = lseek(fd, 0, SEEK_END);
		exporter(fd, name, sizeof(name));
		printf("size=%zu fd=%d lseek_end=%lld fstat=%s exporter=%s cloexec=%d\n", size, fd,
		       (long long)end, fstat(fd, &st) == 0 ? "ok" : "failed", name[0] ? name : "?",
		       (fcntl(fd, F_GETFD) & FD_CLOEXEC) ? 1 : 0);
		if (end != (off_t)size || !name[0])
			bad = 1;
		/* A second export of the same range is a second fd. */
		{
			int fd2 = -1;

			CK(cuMemGetHandleForAddressRange(&fd2, d, size,
							 CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0));
			if (fd2 == fd || lseek(fd2, 0, SEEK_END) != (off_t)size)
				bad = 1;
			close(fd2);
		}
		if (close(fd) != 0)
			bad = 1;
		CK(cuMemFree(d));
	}
	/* A range that is not whole host pages is refused. */
	{
		CUdeviceptr d;
		int fd = -1;
		CUresult r;

		CK(cuMemAlloc(&d, 1 << 20));
		r = cuMemGetHandleForAddressRange(&fd, d + 100, 4096,
						  CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
		printf("unaligned range: %s\n", r == CUDA_SUCCESS ? "accepted" : "refused");
		if (r == CUDA_SUCCESS)
			close(fd);
		CK(cuMemFree(d));
	}
	printf("fds before=%u after=%u\n", fds0, fd_count());
	if (fd_count() != fds0)
		bad = 1;
	return bad;
}

static CUdeviceptr open_handle(const char *hex)
{
	CUipcMemHandle h;
	CUdeviceptr d;

	if (strlen(hex) != 2 * sizeof(h.reserved)) {
		fprintf(stderr, "gpu-helper: handle must be %zu hex chars\n",
			2 * sizeof(h.reserved));
		exit(1);
	}
	for (size_t i = 0; i < sizeof(h.reserved); i++) {
		unsigned int v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1) {
			fprintf(stderr, "gpu-helper: bad hex\n");
			exit(1);
		}
		h.reserved[i] = (char)v;
	}
	CK(cuIpcOpenMemHandle(&d, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
	return d;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUresult r;
	char name[128];

	if (argc < 2) {
		fprintf(stderr, "usage: gpu-helper name|meminfo|ipc|read|write ...\n");
		return 1;
	}
	r = cuInit(0);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "gpu-helper: no GPU (cuInit %d)\n", (int)r);
		return 77;
	}
	CK(cuDeviceGet(&dev, 0));
	if (!strcmp(argv[1], "name")) {
		CK(cuDeviceGetName(name, sizeof(name), dev));
		printf("%s\n", name);
		return 0;
	}
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	if (!strcmp(argv[1], "meminfo")) {
		size_t fr, total;

		CK(cuMemGetInfo(&fr, &total));
		printf("%zu\n", fr);
		return 0;
	}
	if (!strcmp(argv[1], "dmabuf"))
		return dmabuf(dev, argc, argv);
	if (argc < 3)
		return 1;
	CUdeviceptr d = open_handle(argv[2]);

	if (!strcmp(argv[1], "ipc")) {
		unsigned int type = 0;
		size_t size = 0;

		CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
		CK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d));
		printf("type=%s size=%zu\n", type == CU_MEMORYTYPE_DEVICE ? "device" : "other",
		       size);
	} else if (!strcmp(argv[1], "read") && argc == 5) {
		size_t off = strtoull(argv[3], NULL, 0), len = strtoull(argv[4], NULL, 0);
		char *buf = malloc(len);

		CK(cuMemcpyDtoH(buf, d + off, len));
		fwrite(buf, 1, len, stdout);
		free(buf);
	} else if (!strcmp(argv[1], "write") && argc == 4) {
		size_t off = strtoull(argv[3], NULL, 0), n = 0, cap = 1 << 20;
		char *buf = malloc(cap);
		size_t got;

		while ((got = fread(buf + n, 1, cap - n, stdin)) > 0) {
			n += got;
			if (n == cap)
				buf = realloc(buf, cap *= 2);
		}
		CK(cuMemcpyHtoD(d + off, buf, n));
		free(buf);
	} else {
		fprintf(stderr, "gpu-helper: bad command\n");
		return 1;
	}
	CK(cuIpcCloseMemHandle(d));
	CK(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
