/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The benches' consumer (rearm.h). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gpuasync/abi.h>
#include <gpuasync/regs.h>

#include "rearm.h"

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

void *rearm_main(void *arg)
{
	struct rearm *ra = arg;

	while (!atomic_load(&ra->stop)) {
		if (!atomic_load(&ra->run)) {
			usleep(1000);
			continue;
		}
		for (unsigned int i = 0; i < ra->n; i++)
			ra->regs[ra->free_off[i] / 4] = 1;
		/* A GPU re-arms once per frame, not in a tight loop of stores
		 * to the page the card's registers live in. */
		for (int k = 0; k < 64; k++)
			relax();
	}
	return NULL;
}

int rearm_map(const char *dir, struct rearm *ra, unsigned int n)
{
	char path[256], file[200];
	unsigned long long off = 0;
	FILE *f;
	int fd, ok;
	void *p;

	if (n > REARM_MAX)
		return -1;
	snprintf(path, sizeof(path), "%s/device/registers_path", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%199s %llx", file, &off) == 2;
	fclose(f);
	if (!ok)
		return -1;
	fd = open(file, O_RDWR);
	if (fd < 0)
		return -1;
	p = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	ra->regs = p;
	ra->n = n;
	for (unsigned int i = 0; i < n; i++)
		if (ga_reg_offset(GA_REG_FREE_LIST, GA_LAYOUT_V4, 4, i, 1024, &ra->free_off[i]))
			return -1;
	return 0;
}

int mnt_put(const char *dir, const char *rel, const char *val)
{
	char path[512];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	if (close(fd) < 0) /* the value is applied at close */
		ok = 0;
	return ok ? 0 : -1;
}

void rearm_unmap(struct rearm *ra)
{
	if (ra->regs)
		munmap((void *)ra->regs, GA_CORE_SIZE);
	ra->regs = NULL;
}
