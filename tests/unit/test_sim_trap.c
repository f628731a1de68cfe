// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Stores through the simulated card's register mapping reach the model as
 * firmware sees AXI-Lite writes: each one, when the card is opened with
 * trap=yes (sim_trap.c, docs/sim.md).  The LCLS-II DRP resets the ring
 * index with write enable 0 then 1 back to back through the mapping; a
 * card that only looks at the word when it polls sees the 1 alone and goes
 * on from where it was.  The trap must not hurt the program around it:
 * several threads storing at once are each stepped and counted, the
 * signal handlers go in only over the default actions and go away with
 * the last mapping, and a program's own SIGSEGV handler is left alone.
 *
 * GA_TRAP_STORES sets the stores per thread of test_threads (default 20000).
 */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/flavours.h"
#include "common/run_suite.h"
#include "gpuasync/device.h"
#include "gpuasync/sim.h"

static int NFLAV;

/* ASan (GA_SANITIZE) and TSan (test_sim_trap_tsan) install a SIGSEGV
 * handler of their own, and trap=yes refuses to replace a program's
 * handler (EBUSY, test_program_handler): this program leaves SIGSEGV to the
 * trap.  Each is read only under its sanitizer. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "handle_segv=0";
}

const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
	return "handle_segv=0";
}

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
 * The DRP's sequence: two frames (buffers 0 and 1, ring index now
 * 2 of 3), re-arm them, then enable 0 and 1 back to back through the
 * mapping: the next frame goes to buffer 0, as on firmware, not buffer 2.
 */
START_TEST(test_enable_pulse)
{
	volatile uint32_t *regs;
	struct ga_sim_stats st;
	uint32_t off, w;

	open_flavour(_i, ",trap=yes");
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

/* Whether @sig has the default action (no handler, not ignored). */
static bool sig_default(int sig)
{
	struct sigaction cur;

	ck_assert_int_eq(sigaction(sig, NULL, &cur), 0);
	return !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL;
}

/* Without trap=yes (the default, or trap=no): the model's own mapping,
 * nothing trapped, no handler installed (the pair is seen only if the
 * model happens to look between the stores). */
START_TEST(test_trap_off)
{
	static const char *const more[] = {"", ",trap=no"};
	volatile uint32_t *regs;
	struct ga_sim_stats st;
	uint32_t off;

	for (unsigned int i = 0; i < 2; i++) {
		open_flavour(0, more[i]);
		ck_assert_int_eq(ga_dev_map_regs(dev, &regs), 0);
		off = ctl_offset();
		regs[off / 4] = regs[off / 4];
		ck_assert(sig_default(SIGSEGV) && sig_default(SIGTRAP));
		ck_assert_int_eq(ga_sim_stats(dev, &st), 0);
		ck_assert_uint_eq(st.ctl_stores, 0);
		ga_dev_unmap_regs(dev, regs);
		ga_dev_close(dev);
	}
	ck_assert_int_eq(ga_dev_open("sim:trap=maybe", &dev), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "trap must be yes or no"));
}
END_TEST

/* The handlers go in with the first trapped mapping and the default
 * actions come back with the last unmap (or close), for two cards. */
START_TEST(test_handlers_removed)
{
	volatile uint32_t *regs, *again, *regs2;
	struct ga_dev *dev2;
	struct ga_sim_stats st;
	uint32_t off;

	ck_assert(sig_default(SIGSEGV) && sig_default(SIGTRAP));
	open_flavour(0, ",trap=yes");
	ck_assert(sig_default(SIGSEGV) && sig_default(SIGTRAP)); /* only on map */
	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), 0);
	ck_assert(!sig_default(SIGSEGV) && !sig_default(SIGTRAP));
	ck_assert_int_eq(ga_dev_map_regs(dev, &again), 0);
	ck_assert(again == regs);
	ck_assert_int_eq(ga_dev_open("sim:version=4,trap=yes", &dev2), 0);
	ck_assert_int_eq(ga_dev_map_regs(dev2, &regs2), 0);
	ga_dev_unmap_regs(dev, again);
	off = ctl_offset();
	regs[off / 4] = regs[off / 4]; /* still mapped and trapped */
	ck_assert_int_eq(ga_sim_stats(dev, &st), 0);
	ck_assert_uint_eq(st.ctl_stores, 1);
	ga_dev_unmap_regs(dev, regs);
	ck_assert(!sig_default(SIGSEGV) && !sig_default(SIGTRAP)); /* dev2's */
	ga_dev_unmap_regs(dev2, regs2);
	ck_assert(sig_default(SIGSEGV) && sig_default(SIGTRAP));
	/* made again on the next map; close unmaps what is left */
	ck_assert_int_eq(ga_dev_map_regs(dev2, &regs2), 0);
	ck_assert(!sig_default(SIGSEGV));
	ga_dev_close(dev2);
	ck_assert(sig_default(SIGSEGV) && sig_default(SIGTRAP));
	ga_dev_close(dev);
}
END_TEST

/*
 * Several threads storing to the control word at once: each store is
 * stepped and counted, none dies of a stray SIGTRAP.  (The old trap opened
 * the page for one store, so another thread's stores meanwhile went
 * unseen, and a thread that faulted again while its own step was pending
 * took the step's flag for the program's and died of SIGTRAP.)
 */
#define NTHREADS 4
static volatile uint32_t *storm_word;
static uint32_t storm_val;
static unsigned long storm_n;
static pthread_barrier_t storm_start;

static void *storm(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&storm_start);
	for (unsigned long i = 0; i < storm_n; i++)
		__atomic_store_n(storm_word, storm_val, __ATOMIC_RELAXED);
	return NULL;
}

START_TEST(test_threads)
{
	const char *env = getenv("GA_TRAP_STORES");
	pthread_t t[NTHREADS];
	volatile uint32_t *regs;
	struct ga_sim_stats st;
	uint32_t off;

	storm_n = env ? strtoul(env, NULL, 0) : 20000;
	open_flavour(0, ",trap=yes");
	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), 0);
	off = ctl_offset();
	storm_word = &regs[off / 4];
	storm_val = *storm_word; /* its own value: the card goes on as it is */
	ck_assert_int_eq(pthread_barrier_init(&storm_start, NULL, NTHREADS), 0);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, storm, NULL), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&storm_start);
	ck_assert_int_eq(ga_sim_stats(dev, &st), 0);
	ck_assert_msg(st.ctl_stores == NTHREADS * storm_n,
		      "%d threads stored %lu times each: %llu stores stepped, %llu missed",
		      NTHREADS, storm_n, (unsigned long long)st.ctl_stores,
		      (unsigned long long)(NTHREADS * storm_n - st.ctl_stores));
	ck_assert_uint_eq(*storm_word, storm_val);
	ga_dev_unmap_regs(dev, regs);
	ck_assert(sig_default(SIGSEGV) && sig_default(SIGTRAP));
	ga_dev_close(dev);
}
END_TEST

/*
 * Store forms other than a plain mov land and are each counted: an index
 * register, an index without a base, xchg (an atomic store), a byte, a
 * 64-bit word, rep movs (one step per word), an AVX store.
 */
START_TEST(test_store_forms)
{
	volatile uint32_t *regs;
	struct ga_sim_stats st;
	uint32_t off, w, words[4];
	uint64_t q;
	unsigned long expect = 0;

	open_flavour(0, ",trap=yes");
	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), 0);
	off = ctl_offset();
	w = regs[off / 4];
#if defined(__x86_64__)
	{
		uintptr_t base = (uintptr_t)regs;
		uintptr_t idx = off / 4;
		uint32_t x = w;
		void *dst, *src;
		unsigned long n;

		__asm__ volatile("movl %0, (%1,%2,4)" ::"r"(w), "r"(base), "r"(idx) : "memory");
		expect++;
		__asm__ volatile("movl %0, 0(,%1,1)" ::"r"(w), "r"(base + off) : "memory");
		expect++;
		__asm__ volatile("xchgl %0, (%1)" : "+r"(x) : "r"(base + off) : "memory");
		ck_assert_uint_eq(x, w);
		expect++;
		__asm__ volatile("movb %b0, (%1)" ::"q"(w & 0xff), "r"(base + off) : "memory");
		expect++;
		q = *(volatile uint64_t *)(base + off);
		__asm__ volatile("movq %0, (%1)" ::"r"(q), "r"(base + off) : "memory");
		expect++;
		for (int i = 0; i < 4; i++)
			words[i] = regs[off / 4 + (unsigned int)i];
		dst = (void *)(base + off);
		src = words;
		n = 4;
		__asm__ volatile("rep movsl" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
		ck_assert_ptr_eq(dst, (void *)(base + off + 16));
		expect += 4;
		if (__builtin_cpu_supports("avx")) {
			__asm__ volatile("vmovd %0, %%xmm0\n\tvmovd %%xmm0, (%1)" ::"r"(w),
					 "r"(base + off)
					 : "xmm0", "memory");
			expect++;
		}
	}
#endif
	regs[off / 4] = w;
	expect++;
	ck_assert_uint_eq(regs[off / 4], w);
	ck_assert_int_eq(ga_sim_stats(dev, &st), 0);
	ck_assert_uint_eq(st.ctl_stores, expect);
	ga_dev_unmap_regs(dev, regs);
	ga_dev_close(dev);
}
END_TEST

/*
 * A program with its own SIGSEGV handler: trap=yes is refused (EBUSY, the
 * reason in ga_last_error), its handler is untouched and still works, and
 * trap=no maps as ever.
 */
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

START_TEST(test_program_handler)
{
	struct sigaction sa = {.sa_sigaction = program_segv, .sa_flags = SA_SIGINFO};
	struct sigaction cur;
	long pg = sysconf(_SC_PAGESIZE);
	volatile uint32_t *regs;

	fault_page = mmap(NULL, (size_t)pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(fault_page, MAP_FAILED);
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	open_flavour(0, ",trap=yes");
	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), -EBUSY);
	ck_assert_msg(strstr(ga_last_error(), "SIGSEGV handler of its own") &&
			      strstr(ga_last_error(), "trap=no"),
		      "%s", ga_last_error());
	ck_assert_int_eq(sigaction(SIGSEGV, NULL, &cur), 0);
	ck_assert((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == program_segv);
	ck_assert(sig_default(SIGTRAP));
	*(volatile int *)fault_page = 1;
	ck_assert_int_eq(program_faults, 1);
	ga_dev_close(dev);
	ck_assert_int_eq(sigaction(SIGSEGV, NULL, &cur), 0);
	ck_assert(cur.sa_sigaction == program_segv);

	open_flavour(0, ",trap=no");
	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), 0);
	regs[ctl_offset() / 4] = regs[ctl_offset() / 4];
	ga_dev_unmap_regs(dev, regs);
	ga_dev_close(dev);
	ck_assert_int_eq(sigaction(SIGSEGV, NULL, &cur), 0);
	ck_assert(cur.sa_sigaction == program_segv);
	munmap(fault_page, (size_t)pg);

	/* the same for SIGTRAP (a debugger stub, say) */
	ck_assert_int_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	signal(SIGSEGV, SIG_DFL);
	open_flavour(0, ",trap=yes");
	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), -EBUSY);
	ck_assert_msg(strstr(ga_last_error(), "SIGTRAP handler"), "%s", ga_last_error());
	ck_assert(sig_default(SIGSEGV));
	ga_dev_close(dev);
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
			 SUITE_TESTS({test_enable_pulse, NFLAV}, {test_trap_off},
				     {test_handlers_removed}, {test_threads}, {test_store_forms},
				     {test_program_handler})));
}
