/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Whether a GPU test may skip (issue 24 item 14).  Only a machine without
 * a GPU skips: no libcuda.so.1 to load, no NVIDIA device node, cuInit
 * answering CUDA_ERROR_NO_DEVICE or no device counted.  Any other failure
 * on the way to GPU 0 (a broken driver library, cuInit failing otherwise,
 * the library's own open failing) is a failure of the test, never a skip.
 * With GA_REQUIRE_GPU=1 (set on the GPU machine) a missing GPU fails too.
 *
 * GA_NVIDIA_DEV names the device node to look for (default /dev/nvidiactl):
 * only test_gpu_probe sets it, to run the decision with a stand-in
 * libcuda.so.1 on a machine that has no node.
 */
#ifndef GA_TEST_GPU_PROBE_H
#define GA_TEST_GPU_PROBE_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h" /* ga_mem_cuda_open */

#define GPU_PROBE_SKIP 77

/* cuda.h's values, which the test must not need cuda.h for. */
#define GPU_PROBE_CUDA_SUCCESS	 0
#define GPU_PROBE_CUDA_NO_DEVICE 100

/* GA_REQUIRE_GPU=1: the GPU machine's run, where a GPU case that would
 * skip (no GPU, or a part of it that cannot run) fails instead. */
static inline bool gpu_required(void)
{
	const char *req = getenv("GA_REQUIRE_GPU");

	return req && strcmp(req, "1") == 0;
}

static inline int gpu_probe_verdict(int absent, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (!absent) {
		printf("FAILED: GPU probe: ");
	} else if (gpu_required()) {
		printf("FAILED: GA_REQUIRE_GPU=1 and no GPU: ");
		absent = 0;
	} else {
		printf("SKIP: no GPU: ");
	}
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	return absent ? GPU_PROBE_SKIP : 1;
}

/* 0 when GPU 0 opens through the library; GPU_PROBE_SKIP (77) when there
 * is no GPU; 1 for anything else.  Prints the reason of a skip or failure. */
static inline int gpu_probe(void)
{
	const char *node = getenv("GA_NVIDIA_DEV");
	int (*cu_init)(unsigned int), (*cu_count)(int *);
	const struct ga_mem_ops *ops = NULL;
	char name[128], why[256];
	void *lib, *ctx = NULL;
	int r, count = 0, rc;

	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();

		/* Present but unloadable (wrong architecture, missing
		 * dependency) is a broken driver, not a missing one. */
		return gpu_probe_verdict(e && strstr(e, "No such file or directory") != NULL,
					 "libcuda.so.1: %s", e ? e : "cannot be loaded");
	}
	if (!node || !node[0])
		node = "/dev/nvidiactl";
	if (access(node, F_OK) != 0) {
		dlclose(lib);
		return gpu_probe_verdict(1, "no %s (no NVIDIA kernel driver or no card)", node);
	}
	*(void **)&cu_init = dlsym(lib, "cuInit");
	*(void **)&cu_count = dlsym(lib, "cuDeviceGetCount");
	if (!cu_init || !cu_count) {
		dlclose(lib);
		return gpu_probe_verdict(0, "libcuda.so.1 lacks cuInit or cuDeviceGetCount");
	}
	r = cu_init(0);
	if (r == GPU_PROBE_CUDA_SUCCESS)
		r = cu_count(&count);
	dlclose(lib);
	if (r == GPU_PROBE_CUDA_NO_DEVICE || (r == GPU_PROBE_CUDA_SUCCESS && count == 0))
		return gpu_probe_verdict(1, "the NVIDIA driver finds no CUDA device");
	if (r != GPU_PROBE_CUDA_SUCCESS)
		return gpu_probe_verdict(0, "cuInit or cuDeviceGetCount failed with CUDA error %d",
					 r);
	rc = ga_mem_cuda_open(0, &ops, &ctx, name, sizeof(name), why, sizeof(why));
	if (rc)
		return gpu_probe_verdict(0, "%d GPU(s), but the library cannot use GPU 0: %s (%d)",
					 count, why, rc);
	ops->close(ctx);
	return 0;
}

/* A --gpu run's first look, after gpu_probe: @rc and @dev are what opening
 * the simulated card for GPU memory gave.  0 when it opened and holds its
 * buffers in GPU memory; else the reason printed and EXIT_FAILURE.  Closes
 * @dev. */
static inline int gpu_card_in_gpu_memory(int rc, struct ga_dev *dev)
{
	struct ga_dev_info info;

	if (rc != 0) {
		printf("cannot open the simulated card: %s\n", ga_last_error());
		return EXIT_FAILURE;
	}
	ga_dev_info(dev, &info);
	ga_dev_close(dev);
	if (strcmp(info.memory, "gpu") != 0) {
		printf("FAILED: a GPU is there but the card uses host memory: %s\n",
		       info.memory_note);
		return EXIT_FAILURE;
	}
	return 0;
}

#endif /* GA_TEST_GPU_PROBE_H */
