// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * poke DEVICE INDEX ADDRESS: write a bus address into write buffer INDEX's
 * address registers behind the driver's back, as a process that died
 * without removing its buffers leaves them (the platform suite's stale
 * case).  Through libgpuasync's raw register access, as a mount would.
 */
#include <stdio.h>
#include <stdlib.h>

#include <gpuasync/gpuasync.h>

int main(int argc, char **argv)
{
	struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;
	struct ga_dev_info info;
	uint32_t lo, hi;
	unsigned long long a;
	struct ga_dev *dev;
	unsigned int idx;

	if (argc != 4) {
		fprintf(stderr, "usage: poke DEVICE INDEX ADDRESS\n");
		return 2;
	}
	idx = (unsigned int)strtoul(argv[2], NULL, 0);
	a = strtoull(argv[3], NULL, 0);
	o.use_gpu = false;
	o.gpu_index = -1;
	if (ga_dev_open_opts(argv[1], &o, &dev)) {
		fprintf(stderr, "poke: %s\n", ga_last_error());
		return 1;
	}
	ga_dev_info(dev, &info);
	if (ga_reg_offset(GA_REG_WRITE_ADDR_LO, info.layout, info.version, idx, info.max_buffers,
			  &lo) ||
	    ga_reg_offset(GA_REG_WRITE_ADDR_HI, info.layout, info.version, idx, info.max_buffers,
			  &hi) ||
	    ga_reg_write_raw(dev, lo, (uint32_t)a) ||
	    ga_reg_write_raw(dev, hi, (uint32_t)(a >> 32))) {
		fprintf(stderr, "poke: %s\n", ga_last_error());
		ga_dev_close(dev);
		return 1;
	}
	ga_dev_close(dev);
	return 0;
}
