// SPDX-License-Identifier: GPL-2.0
/*
 * A field of a shared register word written beside the driver's own
 * updates of the same word: GA_Write_Register_Masked against upstream's
 * two calls (DMA_Read_Register, then DMA_Write_Register).  The control
 * word holds the engine enables and the buffer counts the driver keeps;
 * one thread writes the read enable again and again while the test adds
 * and removes write buffers, and after each the card's write count must be
 * the driver's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kt.h"

#define ROUNDS 3000 /* buffer adds and removes per pass at most */

struct hammer {
	int fd;
	bool masked;
	uint64_t address;
	uint32_t mask;
	volatile int stop;
	unsigned long writes;
};

/* read_enable := 0, masked or as a read then a write of the whole word. */
static void *hammer_loop(void *arg)
{
	struct hammer *h = arg;

	while (!h->stop) {
		if (h->masked) {
			struct ga_reg_masked m = { .address = h->address, .mask = h->mask };

			if (ioctl(h->fd, GA_Write_Register_Masked, &m))
				break;
		} else {
			struct DmaRegisterData r = { .address = h->address };

			if (ioctl(h->fd, DMA_Read_Register, &r))
				break;
			r.data &= ~h->mask;
			if (ioctl(h->fd, DMA_Write_Register, &r))
				break;
		}
		h->writes++;
	}
	return NULL;
}

/* Driver updates of the write count lost while @h runs, in at most ROUNDS
 * adds and removes (stops at the first loss); -1 when a call failed. */
static long lost_updates(int fd, const struct gmem *g, struct hammer *h)
{
	pthread_t th;
	long lost = 0, round;
	unsigned int n = 0;
	bool up = true;

	h->stop = 0;
	h->writes = 0;
	if (pthread_create(&th, NULL, hammer_loop, h))
		return -1;
	for (round = 0; round < ROUNDS && !lost; round++) {
		if (up) {
			if (add_buf(fd, 1, g->va + n * KB64, KB64))
				break;
			n++;
		} else {
			struct ga_buffer_ref ref = { .write = 1, .index = n - 1 };

			if (ioctl(fd, GA_Rem_Buffer, &ref))
				break;
			n--;
		}
		up = n == 0 || (up && n < 4);
		if (field(fd, GA_REG_WRITE_COUNT, 0) != (n ? n - 1 : 0))
			lost++;
	}
	h->stop = 1;
	pthread_join(th, NULL);
	printf("KTEST info masked_write (%s): %ld driver update(s) lost in %ld adds and removes, "
	       "%lu writes beside them\n",
	       h->masked ? "GA_Write_Register_Masked" : "read, then write", lost, round,
	       h->writes);
	/*
	 * A lost update can leave a stale count in the word even with no
	 * buffer left (the hammer read it at 4 and wrote it back at 0), and a
	 * remove-all with nothing to remove writes no register: with one
	 * buffer back, the driver writes its own counts twice.
	 */
	if (!n)
		add_buf(fd, 1, g->va, KB64);
	ioctl(fd, GPU_Rem_Nvidia_Memory, 0);
	return round < ROUNDS && !lost ? -1 : lost;
}

static void t_masked_write(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, 4 * KB64);
	long core = sys_read("core_offset"), lost;
	struct hammer h = { .fd = fd, .mask = ga_reg_field_mask(GA_REG_READ_ENABLE, layout) };
	struct ga_reg_masked m = { 0 };
	uint32_t w0;

	CHECK((ioctl(fd, GA_Get_Abi_Version, 0) & GA_FEAT_MASKED_WRITE) != 0,
	      "GA_FEAT_MASKED_WRITE not announced");
	h.address = (uint64_t)(core > 0 ? core : GA_CORE_OFFSET) + reg_off(GA_REG_READ_ENABLE, 0);
	/* One field changes, the rest of the word stays. */
	CHECK_OK(add_buf(fd, 1, g.va, KB64));
	CHECK_OK(add_buf(fd, 1, g.va + KB64, KB64));
	w0 = rd_word(fd, reg_off(GA_REG_READ_ENABLE, 0));
	m = (struct ga_reg_masked){ .address = h.address, .mask = h.mask, .data = ~0u };
	CHECK_OK(ioctl(fd, GA_Write_Register_Masked, &m));
	CHECK(rd_word(fd, reg_off(GA_REG_READ_ENABLE, 0)) == (w0 | h.mask), "word %#x after, %#x before",
	      rd_word(fd, reg_off(GA_REG_READ_ENABLE, 0)), w0);
	m.data = 0;
	CHECK_OK(ioctl(fd, GA_Write_Register_Masked, &m));
	CHECK(rd_word(fd, reg_off(GA_REG_READ_ENABLE, 0)) == (w0 & ~h.mask));
	/* Bad input: DMA_Write_Register's rules, nothing changed. */
	m = (struct ga_reg_masked){ .address = 0x8, .mask = ~0u };
	CHECK_ERR(ioctl(fd, GA_Write_Register_Masked, &m), EINVAL);
	m.address = h.address + 1;
	CHECK_ERR(ioctl(fd, GA_Write_Register_Masked, &m), EINVAL);
	CHECK(rd_word(fd, reg_off(GA_REG_READ_ENABLE, 0)) == (w0 & ~h.mask), "a refused write changed the word");
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));

	h.masked = true;
	lost = lost_updates(fd, &g, &h);
	CHECK(lost == 0, "GA_Write_Register_Masked: %ld driver update(s) of the count lost", lost);
	h.masked = false;
	lost = lost_updates(fd, &g, &h);
	CHECK(lost > 0, "read, then write: no driver update lost in %d rounds (%ld)", ROUNDS, lost);
	CHECK(field(fd, GA_REG_WRITE_COUNT, 0) == 0 && field(fd, GA_REG_READ_COUNT, 0) == 0,
	      "ring counts %u/%u left in the word", field(fd, GA_REG_WRITE_COUNT, 0),
	      field(fd, GA_REG_READ_COUNT, 0));
	gfree(s, &g);
	close(s);
	check_clean(fd, "after the masked writes");
	close(fd);
}

const struct kcase regs_cases[] = {
	{ "masked_write", t_masked_write },
};
const unsigned int n_regs_cases = sizeof(regs_cases) / sizeof(regs_cases[0]);
