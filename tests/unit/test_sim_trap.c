// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Stores through the simulated card's register mapping reach the model as
 * firmware sees AXI-Lite writes: each one (issue 25 item 4; sim_trap.c).
 * The LCLS-II DRP resets the ring index with write enable 0 then 1 back to
 * back through the mapping; a card that only looks at the word when it
 * polls sees the 1 alone and goes on from where it was.
 */
#define _GNU_SOURCE
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/flavours.h"
#include "common/run_suite.h"
#include "gpuasync/device.h"
#include "gpuasync/sim.h"

static int NFLAV;

#define NBUF 3

static struct ga_dev *dev;
static struct ga_buf *wb[NBUF];

static void open_flavour(int i, const char *more)
{
	const struct flavour *fl = &FLAVOURS[i];
	char spec[256];

	snprintf(spec, sizeof(spec), "sim:version=%u,max_buffers=8%s%s", fl->version,
		 fl->legacy ? ",latency=legacy" : "", more);
	ck_assert_msg(ga_dev_open(spec, &dev) == 0, "%s: %s", spec, ga_last_error());
	for (unsigned int b = 0; b < NBUF; b++) {
		ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, b, 65536, &wb[b]), 0);
		ck_assert_int_eq(ga_buf_arm(wb[b]), 0);
	}
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
}

static uint32_t ctl_offset(void)
{
	struct ga_dev_info info;
	uint32_t off = 0;

	ga_dev_info(dev, &info);
	ck_assert_int_eq(ga_reg_offset(GA_REG_WRITE_ENABLE, info.layout, info.version, 0,
				       info.max_buffers, &off),
			 0);
	return off;
}

static uint32_t enable_bit(void)
{
	struct ga_dev_info info;

	ga_dev_info(dev, &info);
	return ga_reg_field_set(GA_REG_WRITE_ENABLE, info.layout, 0, 1);
}

/* Push a frame of @size bytes (the card takes it: a buffer is armed). */
static void push(uint32_t size)
{
	static uint8_t payload[1024];

	ck_assert_msg(ga_sim_push(dev, payload, size, 5000) == 0, "push: %s", ga_last_error());
}

static uint32_t size_in(unsigned int b)
{
	struct ga_header h;

	ck_assert_int_eq(ga_buf_header(wb[b], &h), 0);
	return h.size;
}

/*
 * The sequence of issue 25: two frames (buffers 0 and 1, ring index now
 * 2 of 3), re-arm them, then enable 0 and 1 back to back through the
 * mapping: the next frame goes to buffer 0, as on firmware, not buffer 2.
 */
START_TEST(test_enable_pulse)
{
	volatile uint32_t *regs;
	struct ga_sim_stats st;
	uint32_t off, w;

	open_flavour(_i, "");
	push(100);
	push(200);
	ck_assert_uint_eq(size_in(0), 100);
	ck_assert_uint_eq(size_in(1), 200);
	ck_assert_int_eq(ga_buf_arm(wb[0]), 0);
	ck_assert_int_eq(ga_buf_arm(wb[1]), 0);
	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), 0);
	off = ctl_offset();
	w = regs[off / 4];
	ck_assert_uint_ne(w & enable_bit(), 0);
	regs[off / 4] = w & ~enable_bit();
	regs[off / 4] = w;
	push(300);
	ck_assert_msg(size_in(0) == 300 && size_in(2) == 0,
		      "the frame after enable 0, 1 went to buffer %s, firmware puts it in 0",
		      size_in(2) == 300 ? "2" : "?");
	ck_assert_int_eq(ga_sim_stats(dev, &st), 0);
	ck_assert_uint_eq(st.ctl_stores, 2);
	ck_assert_uint_eq(st.ctl_lost, 0);
	/* A store of the value already there is seen too; reads are free. */
	regs[off / 4] = regs[off / 4];
	ck_assert_int_eq(ga_sim_stats(dev, &st), 0);
	ck_assert_uint_eq(st.ctl_stores, 3);
	ga_dev_unmap_regs(dev, regs);
	ga_dev_close(dev);
}
END_TEST

/* trap=no: the model's own mapping, nothing trapped (the old way: the
 * pair is seen only if the model happens to look between the stores). */
START_TEST(test_trap_off)
{
	volatile uint32_t *regs;
	struct ga_sim_stats st;
	uint32_t off;

	open_flavour(0, ",trap=no");
	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), 0);
	off = ctl_offset();
	regs[off / 4] = regs[off / 4];
	ck_assert_int_eq(ga_sim_stats(dev, &st), 0);
	ck_assert_uint_eq(st.ctl_stores, 0);
	ga_dev_unmap_regs(dev, regs);
	ga_dev_close(dev);
	ck_assert_int_eq(ga_dev_open("sim:trap=maybe", &dev), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "trap must be yes or no"));
}
END_TEST

/* A fault that is not the card's goes on to the program's own handler. */
static volatile sig_atomic_t program_faults;
static void *fault_page;

static void program_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_addr == fault_page) {
		program_faults++;
		mprotect(fault_page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE);
	}
}

START_TEST(test_chain)
{
	struct sigaction sa = {.sa_sigaction = program_segv, .sa_flags = SA_SIGINFO};
	long pg = sysconf(_SC_PAGESIZE);
	volatile uint32_t *regs;
	struct ga_sim_stats st;

	fault_page = mmap(NULL, (size_t)pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(fault_page, MAP_FAILED);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	open_flavour(0, "");
	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), 0);
	*(volatile int *)fault_page = 1;
	ck_assert_int_eq(program_faults, 1);
	regs[ctl_offset() / 4] = regs[ctl_offset() / 4];
	ck_assert_int_eq(program_faults, 1);
	ck_assert_int_eq(ga_sim_stats(dev, &st), 0);
	ck_assert_uint_eq(st.ctl_stores, 1);
	ga_dev_close(dev);
	munmap(fault_page, (size_t)pg);
}
END_TEST

int main(void)
{
	NFLAV = flavours_init();
#if !(defined(__x86_64__) && defined(__linux__))
	return 77; /* the store trap needs the x86 single-step flag */
#endif
	return run_suite(
		suite_of("sim_trap", "trap", 60,
			 SUITE_TESTS({test_enable_pulse, NFLAV}, {test_trap_off}, {test_chain})));
}
