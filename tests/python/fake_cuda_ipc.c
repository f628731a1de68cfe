// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A stand-in libcuda.so.1 for the gpuasync package's CUDA IPC code
 * (test_gpuasync.py, python_gpuasync), so that its ctypes calls run where
 * there is no GPU.  Built against cuda.h, so every function here has the
 * real prototype and symbol (cuIpcOpenMemHandle is cuIpcOpenMemHandle_v2).
 *
 * One device (0), one primary context.  A handle opens when its first 8
 * bytes are "fakecuda", then a 32-bit little-endian size and a seed byte:
 * the "device memory" is host memory of that size holding byte i = seed +
 * i.  Everything that touches memory wants the primary context current
 * (CUDA_ERROR_INVALID_CONTEXT otherwise), so a caller that forgets to push
 * it fails here as on a GPU.  fake_cuda_state() tells a test what is still
 * open: mappings, primary-context retains, contexts pushed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define MAX_MAPS 16

static struct {
	CUdeviceptr ptr;
	size_t size;
} maps[MAX_MAPS];
static int retains, pushed;
static int primary; /* its address is the CUcontext */

#define PRIMARY ((CUcontext)&primary)

void fake_cuda_state(int *open_maps, int *open_retains, int *depth)
{
	*open_maps = 0;
	for (int i = 0; i < MAX_MAPS; i++)
		*open_maps += maps[i].ptr != 0;
	*open_retains = retains;
	*depth = pushed;
}

CUresult cuInit(unsigned int flags)
{
	return flags ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char **name)
{
	switch (error) {
	case CUDA_SUCCESS:
		*name = "CUDA_SUCCESS";
		return CUDA_SUCCESS;
	case CUDA_ERROR_INVALID_VALUE:
		*name = "CUDA_ERROR_INVALID_VALUE";
		return CUDA_SUCCESS;
	case CUDA_ERROR_INVALID_DEVICE:
		*name = "CUDA_ERROR_INVALID_DEVICE";
		return CUDA_SUCCESS;
	case CUDA_ERROR_INVALID_CONTEXT:
		*name = "CUDA_ERROR_INVALID_CONTEXT";
		return CUDA_SUCCESS;
	case CUDA_ERROR_INVALID_HANDLE:
		*name = "CUDA_ERROR_INVALID_HANDLE";
		return CUDA_SUCCESS;
	case CUDA_ERROR_OUT_OF_MEMORY:
		*name = "CUDA_ERROR_OUT_OF_MEMORY";
		return CUDA_SUCCESS;
	default:
		*name = NULL;
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = 0;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	retains++;
	*ctx = PRIMARY;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	if (dev != 0 || retains == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	retains--;
	return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
	if (ctx != PRIMARY || retains == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	pushed++;
	return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent(CUcontext *ctx)
{
	if (pushed == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	pushed--;
	if (ctx)
		*ctx = PRIMARY;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *ctx)
{
	*ctx = pushed ? PRIMARY : NULL;
	return CUDA_SUCCESS;
}

/* The mapping holding [p, p + n), or -1. */
static int find(CUdeviceptr p, size_t n)
{
	for (int i = 0; i < MAX_MAPS; i++)
		if (maps[i].ptr && p >= maps[i].ptr && n <= maps[i].size &&
		    p - maps[i].ptr <= maps[i].size - n)
			return i;
	return -1;
}

CUresult cuIpcOpenMemHandle(CUdeviceptr *ptr, CUipcMemHandle h, unsigned int flags)
{
	const unsigned char *b = (const unsigned char *)h.reserved;
	uint32_t size = b[8] | b[9] << 8 | b[10] << 16 | (uint32_t)b[11] << 24;
	unsigned char *mem;
	int i;

	if (!pushed)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
		return CUDA_ERROR_INVALID_VALUE;
	if (memcmp(b, "fakecuda", 8) != 0 || size == 0)
		return CUDA_ERROR_INVALID_HANDLE;
	for (i = 0; i < MAX_MAPS && maps[i].ptr; i++)
		;
	if (i == MAX_MAPS || !(mem = malloc(size)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint32_t k = 0; k < size; k++)
		mem[k] = (unsigned char)(b[12] + k);
	maps[i].ptr = (CUdeviceptr)(uintptr_t)mem;
	maps[i].size = size;
	*ptr = maps[i].ptr;
	return CUDA_SUCCESS;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr ptr)
{
	int i = find(ptr, 0);

	if (!pushed)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (i < 0 || maps[i].ptr != ptr)
		return CUDA_ERROR_INVALID_VALUE;
	free((void *)(uintptr_t)ptr);
	maps[i].ptr = 0;
	return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
	int i = find(ptr, 0);

	if (!pushed)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (i < 0 || attr != CU_POINTER_ATTRIBUTE_RANGE_SIZE)
		return CUDA_ERROR_INVALID_VALUE;
	*(size_t *)data = maps[i].size;
	return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	if (!pushed)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (find(src, n) < 0)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(dst, (void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	if (!pushed)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (find(dst, n) < 0)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy((void *)(uintptr_t)dst, src, n);
	return CUDA_SUCCESS;
}
