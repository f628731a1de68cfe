// SPDX-License-Identifier: GPL-2.0
/*
 * kt cases for the upstream calls LCLS-II's GPU DRP and rogue's AxiMemMap
 * make besides the GPU ones: DMA_Set_MaskBytes (the DRP aborts when it
 * fails), the DMA_Get_RxBuffin*_Count gauges and the API version check.
 * What each must answer is upstream's behaviour (docs/abi.md says where
 * gpuasync.ko differs and why).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

/* A mask holding the destinations in @d (ends at -1), upstream's layout. */
static void mask_of(uint8_t m[DMA_MASK_SIZE], const int *d)
{
	memset(m, 0, DMA_MASK_SIZE);
	for (; *d >= 0; d++)
		m[*d / 8] |= (uint8_t)(1u << (*d % 8));
}

static int set_mask(int fd, const int *d)
{
	uint8_t m[DMA_MASK_SIZE];

	mask_of(m, d);
	return ioctl(fd, DMA_Set_MaskBytes, m);
}

/*
 * Reservations are per open file, once, all or none, and end with the
 * file (close or kill -9); a bad pointer reserves nothing.
 */
static void t_mask_bytes(void)
{
	const int first[] = { 0, 9, 3333, DMA_MAX_DEST - 1, -1 };
	const int one[] = { 1, -1 }, two[] = { 2, -1 }, none[] = { -1 };
	const int overlap[] = { 5, 3333, -1 }, five[] = { 5, -1 }, six[] = { 6, -1 };
	long page = sysconf(_SC_PAGESIZE);
	int a = open_card(), b = open_card(), c = open_card(), p[2], st = 0;
	uint8_t *edge;
	pid_t pid;
	char ok;

	CHECK_OK(set_mask(a, first));
	CHECK_ERR(set_mask(a, one), EPERM); /* once per file */
	CHECK(dmesg_has("DMA_Set_MaskBytes: this file holds destinations already"),
	      "no log line for the second mask");
	CHECK_ERR(set_mask(b, overlap), EPERM); /* 3333 is a's */
	CHECK(dmesg_has("DMA_Set_MaskBytes: destination 3333 is held by another open file"),
	      "no log line naming the held destination");
	CHECK_OK(set_mask(c, five)); /* b's refusal took nothing */
	CHECK_OK(set_mask(b, none)); /* reserves nothing; b may still ask */
	CHECK_OK(set_mask(b, two));
	close(c);

	/* A mask that runs into an unmapped page, and no mask at all. */
	edge = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(edge != MAP_FAILED);
	munmap(edge + page, page);
	c = open_card();
	edge[page - 1] = 0x02; /* a destination in the readable half */
	CHECK_ERR(ioctl(c, DMA_Set_MaskBytes, edge + page - DMA_MASK_SIZE / 2), EFAULT);
	CHECK_ERR(ioctl(c, DMA_Set_MaskBytes, NULL), EFAULT);
	CHECK_ERR(ioctl(c, DMA_Set_MaskBytes, (void *)8), EFAULT);
	CHECK_OK(set_mask(c, six)); /* c holds nothing yet */
	munmap(edge, page);
	close(c);

	/* Released on close: a new file gets a's destinations. */
	close(a);
	a = open_card();
	CHECK_OK(set_mask(a, first));
	close(a);

	/* Released when the holder is killed. */
	CHECK(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		int f = open_card();

		ok = set_mask(f, first) == 0 ? 'y' : 'n';
		if (write(p[1], &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK(read(p[0], &ok, 1) == 1 && ok == 'y', "the child could not reserve");
	a = open_card();
	CHECK_ERR(set_mask(a, first), EPERM);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK_OK(set_mask(a, first));
	close(a);
	close(p[0]);
	close(p[1]);
	close(b);
}

/*
 * The receive-buffer gauges count CPU DMA buffers by state, as upstream;
 * gpuasync.ko has none, and GPU buffers are not among them (nor are they
 * upstream's), so each is 0, also with a GPU buffer registered and armed.  Also the
 * version check rogue's AxiMemMap makes (equal to DMA_VERSION).
 */
static void t_rx_counts(void)
{
	static const unsigned int codes[] = { DMA_Get_RxBuffinUser_Count, DMA_Get_RxBuffinHW_Count,
					      DMA_Get_RxBuffinPreHWQ_Count,
					      DMA_Get_RxBuffinSWQ_Count };
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, KB64);
	unsigned int i;

	CHECK(ioctl(fd, DMA_Get_Version) == DMA_VERSION, "dmaCheckVersion");
	CHECK(ioctl(fd, DMA_Get_Buff_Count, 0) == 0);
	for (i = 0; i < 4; i++)
		CHECK(ioctl(fd, codes[i], 0) == 0, "0x%x without buffers", codes[i]);
	CHECK_OK(add_buf(fd, 1, g.va, KB64));
	CHECK_OK(ioctl(fd, GPU_Set_Write_Enable, &(uint32_t){ 0 }));
	for (i = 0; i < 4; i++)
		CHECK(ioctl(fd, codes[i], 0) == 0, "0x%x with a GPU buffer", codes[i]);
	/* Upper bits are ignored on generic codes, as upstream. */
	CHECK(ioctl(fd, DMA_Get_RxBuffinHW_Count | 0x10000u, 0) == 0);
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	gfree(s, &g);
	close(s);
	check_clean(fd, "after the receive counts");
	close(fd);
}

const struct kcase drp_cases[] = {
	{ "mask_bytes", t_mask_bytes },
	{ "rx_counts", t_rx_counts },
};
const unsigned int n_drp_cases = sizeof(drp_cases) / sizeof(drp_cases[0]);
