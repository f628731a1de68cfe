// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * gpu-probe: may a GPU test run, skip or must it fail?  Exit 0 when GPU 0
 * opens, 77 (skip) when the machine has no GPU, 1 otherwise, with the
 * reason printed (tests/common/gpu_probe.h decides).  The tests/gpu
 * scripts call it before anything else.
 */
#include "common/gpu_probe.h"

int main(void)
{
	int rc = gpu_probe();

	if (rc == 0)
		printf("GPU 0 opens\n");
	return rc;
}
