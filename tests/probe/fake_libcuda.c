// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A stand-in libcuda.so.1 for test_gpu_probe: cuInit answers what
 * GA_FAKE_CUINIT says (default 999, CUDA_ERROR_UNKNOWN) and
 * cuDeviceGetCount counts GA_FAKE_CUCOUNT devices (default 1).  Nothing
 * else is there, so the library's own open of it fails (a driver that
 * lacks functions).  Loaded only through LD_LIBRARY_PATH by that test.
 */
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
