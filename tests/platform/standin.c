// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * standin BDF VERSION GPU_EN: make QEMU's NVMe controller at BDF stand in
 * for a card's registers, for gpuasync.ko bound to it with reg_bar=4 (the
 * platform suite).  QEMU backs the controller's persistent memory region
 * (BAR4) with plain RAM, which it maps only once the region is enabled
 * (PMRCTL.EN, BAR0 + 0xe04); this writes that bit, then a register image
 * into BAR4: AxiVersion's GPU enable word and a GpuAsyncCore at
 * GA_CORE_OFFSET in its power-on state, as the firmware model (core/)
 * resets it for VERSION.  A VERSION the model does not have keeps version
 * 4's image with only the version field changed (the unknown-version case).
 * Through /sys/bus/pci/devices/BDF/resourceN; run it with no driver bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ga_model.h"
#include "gpuasync/abi.h"
#include "gpuasync/regs.h"

#define NVME_PMRCAP 0xe00
#define NVME_PMRCTL 0xe04
#define PMR_BAR	    4

static volatile uint32_t *map_bar(const char *bdf, int bar, size_t *len)
{
	char p[128];
	struct stat st;
	void *m;
	int fd;

	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/resource%d", bdf, bar);
	fd = open(p, O_RDWR | O_SYNC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "standin: %s: %s\n", p, strerror(errno));
		return NULL;
	}
	*len = (size_t)st.st_size;
	m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		fprintf(stderr, "standin: mmap %s: %s\n", p, strerror(errno));
		return NULL;
	}
	return m;
}

static int write_file(const char *bdf, const char *name, const char *v)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/%s", bdf, name);
	if (!(f = fopen(p, "w")) || fputs(v, f) < 0 || fclose(f)) {
		fprintf(stderr, "standin: %s: %s\n", p, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static uint32_t core[GA_CORE_SIZE / 4];
	struct ga_model_params mp = {.max_buffers = 4, .dma_data_bytes = 32, .clock_hz = 250000000};
	static struct ga_model m;
	volatile uint32_t *regs, *img;
	size_t rlen, ilen;
	unsigned int version;
	uint32_t off;

	if (argc != 4) {
		fprintf(stderr, "usage: standin BDF VERSION GPU_EN\n");
		return 2;
	}
	version = (unsigned int)strtoul(argv[2], NULL, 0);
	/* Memory decoding on (no driver has enabled the function yet). */
	if (write_file(argv[1], "enable", "1"))
		return 1;
	if (!(regs = map_bar(argv[1], 0, &rlen)) || rlen < NVME_PMRCTL + 4)
		return 1;
	if (!regs[NVME_PMRCAP / 4]) {
		fprintf(stderr, "standin: %s has no persistent memory region (pmrdev=)\n", argv[1]);
		return 1;
	}
	regs[NVME_PMRCTL / 4] = 1;
	if (!(img = map_bar(argv[1], PMR_BAR, &ilen)) || ilen < GA_CORE_OFFSET + GA_CORE_SIZE)
		return 1;
	mp.version = ga_version_find(version) ? version : 4;
	if (ga_model_init(&m, core, &mp, &(struct ga_model_env){0})) {
		fprintf(stderr, "standin: the model has no version %u\n", mp.version);
		return 1;
	}
	if (mp.version != version) {
		ga_reg_offset(GA_REG_VERSION, GA_LAYOUT_V1, 1, 0, 0, &off);
		core[off / 4] =
			ga_reg_field_set(GA_REG_VERSION, GA_LAYOUT_V1, core[off / 4], version);
	}
	for (size_t i = 0; i < ilen / 4; i++)
		img[i] = 0;
	img[GA_AXIVERSION_GPU_EN / 4] = (uint32_t)strtoul(argv[3], NULL, 0);
	for (size_t i = 0; i < GA_CORE_SIZE / 4; i++)
		img[(GA_CORE_OFFSET / 4) + i] = core[i];
	if (img[GA_CORE_OFFSET / 4 + 1] != core[1]) {
		fprintf(stderr, "standin: BAR%d does not keep what is written\n", PMR_BAR);
		return 1;
	}
	printf("standin: %s BAR%d (%zu bytes): GpuAsyncCore version %u, GPU enable %s\n", argv[1],
	       PMR_BAR, ilen, version, argv[3]);
	return write_file(argv[1], "enable", "0") ? 1 : 0;
}
