// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated card's register mapping for this process's own stores
 * (ga_dev_map_regs), with every store to the control word seen, as
 * firmware sees every AXI-Lite write (issue 25 item 4, docs/sim.md).
 *
 * The register block is shared memory the model looks at when it polls,
 * so of the DRP's enable 0 then 1, made back to back, it would see only
 * the 1, and the ring index would not be reset.  Here the page holding
 * the control word is read-only in the mapping handed out (the model
 * keeps its own writable one).  A store to it faults (SIGSEGV): the
 * handler opens the page and sets the CPU's trap flag; the store lands;
 * the single-step trap (SIGTRAP) closes the page, clears the flag and
 * logs the word's new value for the model (ga_model_ctl_stored), which
 * plays each value in order before its next frame, poll or write.  Signals
 * that are not ours go on to the handler that was there before.
 *
 * What it cannot see: stores through another mapping of the shm file
 * (another process: ga_dev_reg_path), stores another thread of this
 * process makes in the few instructions the page is open for one store,
 * and, with trap=no or off x86-64, any store between two looks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "sim_internal.h"

#if defined(__x86_64__) && defined(__linux__)
#define SIM_TRAP_FLAG 0x100ull /* EFLAGS.TF */
#define SIM_TRAP_MAX  32       /* trapped mappings (open sims) at once */

static struct sim *_Atomic trap_sims[SIM_TRAP_MAX];
static struct sigaction old_segv, old_trap;
static pthread_once_t trap_once = PTHREAD_ONCE_INIT;
static int trap_setup_err;

/* This thread's store in flight: the sim whose page is open for it. */
static __thread struct {
	struct sim *s;
	uint32_t off;	 /* core offset stored to */
	bool program_tf; /* the trap flag was the program's own */
} step __attribute__((tls_model("initial-exec")));

static void *ctl_page(const struct sim *s)
{
	long pg = sysconf(_SC_PAGESIZE);

	return (uint8_t *)s->user_regs + (s->model.ctl_offset & ~(uint32_t)(pg - 1));
}

/* The handler that was there before us, as the kernel would run it. */
static void chain(int sig, siginfo_t *si, void *uc, const struct sigaction *old)
{
	if (old->sa_flags & SA_SIGINFO) {
		old->sa_sigaction(sig, si, uc);
	} else if (old->sa_handler == SIG_DFL) {
		/* A fault comes again on return and then kills; a trap must be raised. */
		signal(sig, SIG_DFL);
		if (sig == SIGTRAP)
			raise(sig);
	} else if (old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
	}
}

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint8_t *a = si->si_addr;
	long pg = sysconf(_SC_PAGESIZE);

	for (unsigned int i = 0; i < SIM_TRAP_MAX; i++) {
		struct sim *s = atomic_load(&trap_sims[i]);
		uint8_t *p = s ? ctl_page(s) : NULL;

		if (!p || a < p || a >= p + pg || si->si_code != SEGV_ACCERR)
			continue;
		step.s = s;
		step.off = (uint32_t)(a - (const uint8_t *)s->user_regs);
		step.program_tf = uc->uc_mcontext.gregs[REG_EFL] & SIM_TRAP_FLAG;
		uc->uc_mcontext.gregs[REG_EFL] |= SIM_TRAP_FLAG;
		mprotect(p, (size_t)pg, PROT_READ | PROT_WRITE);
		return;
	}
	chain(sig, si, ucv, &old_segv);
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct sim *s = step.s;
	long pg = sysconf(_SC_PAGESIZE);

	if (!s || si->si_code != TRAP_TRACE) {
		chain(sig, si, ucv, &old_trap);
		return;
	}
	step.s = NULL;
	mprotect(ctl_page(s), (size_t)pg, PROT_READ);
	if ((step.off & ~3u) == s->model.ctl_offset)
		ga_model_ctl_stored(&s->model, __atomic_load_n(&s->regs[s->model.ctl_offset / 4],
							       __ATOMIC_ACQUIRE));
	atomic_fetch_add(&s->trapped_stores, 1);
	if (step.program_tf)
		chain(sig, si, ucv, &old_trap); /* the program's own single step */
	else
		uc->uc_mcontext.gregs[REG_EFL] &= ~SIM_TRAP_FLAG;
}

static void trap_setup(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sa.sa_sigaction = on_segv;
	if (sigaction(SIGSEGV, &sa, &old_segv)) {
		trap_setup_err = -errno;
		return;
	}
	sa.sa_sigaction = on_trap;
	if (sigaction(SIGTRAP, &sa, &old_trap)) {
		trap_setup_err = -errno;
		sigaction(SIGSEGV, &old_segv, NULL);
	}
}

bool sim_trap_supported(void)
{
	return true;
}

int sim_trap_map(struct sim *s)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct sim *none;
	void *m;
	unsigned int i;

	pthread_once(&trap_once, trap_setup);
	if (trap_setup_err)
		return ga_err(trap_setup_err,
			      "sim: cannot install the store trap's signal handlers");
	m = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, s->shm_fd,
		 (off_t)s->core_offset);
	if (m == MAP_FAILED)
		return ga_err(-errno, "sim: cannot map /dev/shm%s: %s", s->shm_name,
			      strerror(errno));
	s->user_regs = m;
	for (i = 0; i < SIM_TRAP_MAX; i++) {
		none = NULL;
		if (atomic_compare_exchange_strong(&trap_sims[i], &none, s))
			break;
	}
	if (i == SIM_TRAP_MAX) {
		sim_trap_unmap(s);
		return ga_err(-EMFILE, "sim: more than %u simulated cards map their registers",
			      SIM_TRAP_MAX);
	}
	if (mprotect(ctl_page(s), (size_t)pg, PROT_READ)) {
		int rc = -errno;

		sim_trap_unmap(s);
		return ga_err(rc, "sim: cannot write-protect the control page: %s", strerror(-rc));
	}
	return 0;
}

void sim_trap_unmap(struct sim *s)
{
	for (unsigned int i = 0; i < SIM_TRAP_MAX; i++) {
		struct sim *me = s;

		atomic_compare_exchange_strong(&trap_sims[i], &me, NULL);
	}
	if (s->user_regs)
		munmap((void *)s->user_regs, GA_CORE_SIZE);
	s->user_regs = NULL;
}

#else /* no trap flag to single-step with */

bool sim_trap_supported(void)
{
	return false;
}

int sim_trap_map(struct sim *s)
{
	(void)s;
	return ga_err(-ENOTSUP, "sim: trap=yes needs x86-64 Linux (the single-step flag)");
}

void sim_trap_unmap(struct sim *s)
{
	(void)s;
}
#endif
