// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated card's register mapping for this process's own stores
 * (ga_dev_map_regs with trap=yes), with every store to the control word
 * seen, as firmware sees every AXI-Lite write (docs/sim.md, "Stores
 * through the mapping").
 *
 * The register block is shared memory the model looks at when it polls,
 * so of the DRP's enable 0 then 1, made back to back, it would see only
 * the 1, and the ring index would not be reset.  Here the page holding
 * the control word is read-only in the mapping handed out, and stays so.
 * A store to it faults (SIGSEGV).  The handler moves the store instead of
 * opening the page: it adds to the instruction's base register (or index)
 * the distance to the model's own, writable, mapping of the same shm file,
 * blocks the process's other signals for this thread and sets the CPU's
 * trap flag.  The store lands there; the single-step trap (SIGTRAP) moves
 * the register back, restores flag and mask and logs the word's new value
 * for the model (ga_model_ctl_stored), which plays each value in order
 * before its next frame, poll or write.
 *
 * The page is never writable in the program's mapping, so a store made by
 * another thread meanwhile faults too and is stepped in its turn (one step
 * per card at a time: trap_busy), and a thread's step state is its own
 * (struct trap_step): a fault taken while its step is pending is refused,
 * never mistaken for the program's own single-stepping.
 *
 * Signal handlers are process-wide, so the library only installs them over
 * the default action, when the first trapped mapping is made, and puts the
 * default back when the last one goes (ga_dev_unmap_regs or close).  A
 * program with a SIGSEGV or SIGTRAP handler of its own gets -EBUSY and keeps
 * its handler.  What it cannot see: stores through another mapping of the
 * shm file (another process: ga_dev_reg_path); store forms listed at
 * trap_target as refused.
 *
 * Only sim.c calls into this file; it uses only the core (sim_core.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "sim_core.h"

#if defined(__x86_64__) && defined(__linux__)
#define SIM_TRAP_FLAG 0x100ull /* EFLAGS.TF */
#define SIM_TRAP_MAX  32       /* trapped mappings (open sims) at once */

static struct sim *_Atomic trap_sims[SIM_TRAP_MAX];

/* Guards trap_users, the handlers' installation and each sim's user_maps;
 * never taken in a signal handler. */
static pthread_mutex_t trap_mutex = PTHREAD_MUTEX_INITIALIZER;
static unsigned int trap_users; /* sims with a trapped mapping: handlers in while > 0 */
static long trap_pg;		/* the page size, read before any handler runs */

/* This thread's store in flight (s NULL: none).  initial-exec: a signal
 * handler must not be the first to touch a lazily allocated TLS block. */
static __thread struct trap_step {
	struct sim *s;
	int reg;	 /* gregs[] index of the register moved */
	long long moved; /* added to it for the step */
	uint32_t off;	 /* offset in the block stored to */
	bool program_tf; /* the trap flag was set before our fault: not ours */
	sigset_t mask;	 /* the interrupted code's signal mask */
} step __attribute__((tls_model("initial-exec")));

static void *ctl_page(const struct sim *s)
{
	return (uint8_t *)s->user_regs + (s->model.ctl_offset & ~(uint32_t)(trap_pg - 1));
}

/* x86 register number (ModRM/SIB encoding, REX-extended) to gregs[] index. */
static const int greg_of[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP,
				REG_RSI, REG_RDI, REG_R8,  REG_R9,  REG_R10, REG_R11,
				REG_R12, REG_R13, REG_R14, REG_R15};

/*
 * Which register of the store at @ip to move, and by what shift of the
 * distance, so that its memory operand lands in the model's mapping: the
 * ModRM base, or the SIB index (scaled) when there is no base; RDI for the
 * string stores (movs, stos).  Refused (-1): no register to move (RIP-
 * relative or absolute addresses, which no pointer into an mmap'ed block
 * compiles to), 32-bit addressing (0x67), the stack pointer, a base that is
 * also the index.  Every legacy, VEX and EVEX encoding with a ModRM memory
 * operand is covered; a one-byte opcode without ModRM other than the
 * string stores cannot store to arbitrary memory.
 */
static int trap_target(const uint8_t *ip, int *reg, int *shift)
{
	const uint8_t *p = ip;
	unsigned int rex_b = 0, rex_x = 0, modrm, sib, base, index;

	for (int n = 0;; n++, p++) {
		if (n == 14)
			return -1;
		if (*p == 0x67)
			return -1;
		if (*p != 0xF0 && *p != 0xF2 && *p != 0xF3 && *p != 0x2E && *p != 0x36 &&
		    *p != 0x3E && *p != 0x26 && *p != 0x64 && *p != 0x65 && *p != 0x66)
			break;
	}
	if ((*p & 0xF0) == 0x40) { /* REX */
		rex_b = *p & 1;
		rex_x = (*p >> 1) & 1;
		p++;
	}
	if (*p == 0xC5) { /* 2-byte VEX: no B or X */
		p += 3;
	} else if (*p == 0xC4) { /* 3-byte VEX: B and X inverted */
		rex_b = !(p[1] & 0x20);
		rex_x = !(p[1] & 0x40);
		p += 4;
	} else if (*p == 0x62) { /* EVEX */
		rex_b = !(p[1] & 0x20);
		rex_x = !(p[1] & 0x40);
		p += 5;
	} else if (*p == 0x0F) {
		p += (p[1] == 0x38 || p[1] == 0x3A) ? 3 : 2;
	} else if (*p == 0xA4 || *p == 0xA5 || *p == 0xAA || *p == 0xAB) {
		*reg = REG_RDI; /* movs, stos: the destination is (%rdi) */
		*shift = 0;
		return 0;
	} else {
		p += 1;
	}
	modrm = *p;
	if (modrm >> 6 == 3)
		return -1; /* a register operand: not a store to memory */
	if ((modrm & 7) == 4) {
		sib = p[1];
		base = (sib & 7) | rex_b << 3;
		index = ((sib >> 3) & 7) | rex_x << 3;
		if ((sib & 7) == 5 && modrm >> 6 == 0) { /* no base: disp32 + index */
			if (index == 4)
				return -1;
			*reg = greg_of[index];
			*shift = sib >> 6;
			return 0;
		}
		if (index != 4 && index == base)
			return -1;
	} else if ((modrm & 7) == 5 && modrm >> 6 == 0) {
		return -1; /* RIP-relative */
	} else {
		base = (modrm & 7) | rex_b << 3;
	}
	if (base == 4)
		return -1;
	*reg = greg_of[base];
	*shift = 0;
	return 0;
}

/*
 * Not the card's, or not a store we can step: the default action, as
 * without the trap (the handlers are only ever installed over it).  A
 * fault comes again on return and then kills; a trap must be raised.
 */
static void to_default(int sig)
{
	signal(sig, SIG_DFL);
	if (sig == SIGTRAP)
		raise(sig);
}

static void step_lock(struct sim *s)
{
	unsigned int spins = 0;

	while (atomic_exchange_explicit(&s->trap_busy, 1, memory_order_acquire)) {
		/* The holder is one instruction from its trap, unless preempted. */
		if (++spins % 64 == 0)
			sched_yield();
		else
			sim_cpu_relax();
	}
}

static void step_unlock(struct sim *s)
{
	atomic_store_explicit(&s->trap_busy, 0, memory_order_release);
}

/* Put the interrupted code's register, flag and mask back. */
static void step_undo(ucontext_t *uc)
{
	uc->uc_mcontext.gregs[step.reg] -= step.moved;
	uc->uc_sigmask = step.mask;
	if (!step.program_tf)
		uc->uc_mcontext.gregs[REG_EFL] &= ~SIM_TRAP_FLAG;
}

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	static const char refused[] =
		"gpuasync: sim: a store to the trapped control page that cannot be stepped "
		"(see docs/sim.md); open with trap=no\n";
	ucontext_t *uc = ucv;
	uint8_t *a = si->si_addr;
	struct sim *s = NULL;
	sigset_t all;
	int reg, shift;

	for (unsigned int i = 0; i < SIM_TRAP_MAX && si->si_code == SEGV_ACCERR; i++) {
		struct sim *t = atomic_load(&trap_sims[i]);
		uint8_t *p = t ? ctl_page(t) : NULL;

		if (p && a >= p && a < p + trap_pg) {
			s = t;
			break;
		}
	}
	if (!s) {
		to_default(sig);
		return;
	}
	if (step.s) {
		/* The stepped instruction faulted on a card page again (an
		 * operand the move did not cover): give up the step, never
		 * taking its flag for the program's. */
		struct sim *held = step.s;

		step_undo(uc);
		step.s = NULL;
		step_unlock(held);
		goto refuse;
	}
	if (trap_target((const uint8_t *)uc->uc_mcontext.gregs[REG_RIP], &reg, &shift))
		goto refuse;
	step_lock(s);
	step.s = s;
	step.reg = reg;
	step.moved = (long long)(((intptr_t)s->regs - (intptr_t)s->user_regs) >> shift);
	step.off = (uint32_t)(a - (const uint8_t *)s->user_regs);
	step.program_tf = uc->uc_mcontext.gregs[REG_EFL] & SIM_TRAP_FLAG;
	step.mask = uc->uc_sigmask;
	/* No handler may run between here and the trap (it could store to
	 * the page and wait for this very step); the synchronous signals
	 * stay open, as the kernel kills a thread that blocks them. */
	sigfillset(&all);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	uc->uc_sigmask = all;
	uc->uc_mcontext.gregs[REG_EFL] |= SIM_TRAP_FLAG;
	uc->uc_mcontext.gregs[reg] += step.moved;
	return;
refuse:
	if (write(STDERR_FILENO, refused, sizeof(refused) - 1) < 0) {
		/* dying either way */
	}
	to_default(sig);
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct sim *s = step.s;
	bool program_tf = step.program_tf;

	if (!s || si->si_code != TRAP_TRACE) {
		to_default(sig);
		return;
	}
	step_undo(uc);
	if ((step.off & ~3u) == s->model.ctl_offset)
		ga_model_ctl_stored(&s->model, __atomic_load_n(&s->regs[s->model.ctl_offset / 4],
							       __ATOMIC_ACQUIRE));
	atomic_fetch_add(&s->trapped_stores, 1);
	step.s = NULL;
	step_unlock(s);
	if (program_tf)
		to_default(sig); /* the program's own single step, as without us */
}

static bool is_default(const struct sigaction *sa)
{
	return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_DFL;
}

/* Install both handlers over the default actions, or neither.  trap_mutex held. */
static int handlers_install(void)
{
	struct sigaction segv, trap, sa;

	if (sigaction(SIGSEGV, NULL, &segv) || sigaction(SIGTRAP, NULL, &trap))
		return ga_err(-errno, "sim: cannot read the signal dispositions: %s",
			      strerror(errno));
	if (!is_default(&segv) || !is_default(&trap))
		return ga_err(-EBUSY,
			      "sim: trap=yes needs SIGSEGV and SIGTRAP at their default action, "
			      "and this program has a %s handler of its own, which the library "
			      "leaves alone (open the card with trap=no)",
			      is_default(&segv) ? "SIGTRAP" : "SIGSEGV");
	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sa.sa_sigaction = on_segv;
	if (sigaction(SIGSEGV, &sa, NULL))
		return ga_err(-errno, "sim: cannot install the store trap's SIGSEGV handler");
	sa.sa_sigaction = on_trap;
	if (sigaction(SIGTRAP, &sa, NULL)) {
		int rc = -errno;

		signal(SIGSEGV, SIG_DFL);
		return ga_err(rc, "sim: cannot install the store trap's SIGTRAP handler");
	}
	return 0;
}

/* Back to the default action, where the handler is still ours (a program
 * that replaced it since keeps its own).  trap_mutex held. */
static void handlers_remove(void)
{
	struct sigaction cur;

	if (!sigaction(SIGSEGV, NULL, &cur) && (cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_sigaction == on_segv)
		signal(SIGSEGV, SIG_DFL);
	if (!sigaction(SIGTRAP, NULL, &cur) && (cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_sigaction == on_trap)
		signal(SIGTRAP, SIG_DFL);
}

/* Undo a mapping of s's own.  trap_mutex held. */
static void trap_teardown(struct sim *s)
{
	for (unsigned int i = 0; i < SIM_TRAP_MAX; i++) {
		struct sim *me = s;

		atomic_compare_exchange_strong(&trap_sims[i], &me, NULL);
	}
	if (s->user_regs)
		munmap((void *)s->user_regs, GA_CORE_SIZE);
	s->user_regs = NULL;
	s->user_maps = 0;
	if (--trap_users == 0)
		handlers_remove();
}

bool sim_trap_supported(void)
{
	return true;
}

static int trap_create(struct sim *s)
{
	const char *preload = getenv("LD_PRELOAD");
	struct sim *none;
	unsigned int i;
	void *m;
	int rc;

	if (preload && strstr(preload, "vgpreload"))
		return ga_err(-ENOTSUP,
			      "sim: trap=yes does not work under valgrind (it does not "
			      "emulate the single-step flag): open the card with trap=no");
	if (!trap_pg) /* once, before the first handler is installed */
		trap_pg = sysconf(_SC_PAGESIZE);
	if (trap_users == 0) {
		rc = handlers_install();
		if (rc)
			return rc;
	}
	trap_users++;
	s->user_maps = 1;
	m = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, s->shm_fd,
		 (off_t)s->core_offset);
	if (m == MAP_FAILED) {
		rc = ga_err(-errno, "sim: cannot map /dev/shm%s: %s", s->shm_name, strerror(errno));
		goto out_teardown;
	}
	s->user_regs = m;
	sim_regs_shared(m);
	if (mprotect(ctl_page(s), (size_t)trap_pg, PROT_READ)) {
		rc = ga_err(-errno, "sim: cannot write-protect the control page: %s",
			    strerror(errno));
		goto out_teardown;
	}
	for (i = 0; i < SIM_TRAP_MAX; i++) {
		none = NULL;
		if (atomic_compare_exchange_strong(&trap_sims[i], &none, s))
			return 0;
	}
	rc = ga_err(-EMFILE, "sim: more than %u simulated cards map their registers with trap=yes",
		    SIM_TRAP_MAX);
out_teardown:
	trap_teardown(s);
	return rc;
}

int sim_trap_map(struct sim *s)
{
	int rc = 0;

	pthread_mutex_lock(&trap_mutex);
	if (s->user_maps)
		s->user_maps++;
	else
		rc = trap_create(s);
	pthread_mutex_unlock(&trap_mutex);
	return rc;
}

void sim_trap_put(struct sim *s)
{
	pthread_mutex_lock(&trap_mutex);
	if (s->user_maps && --s->user_maps == 0)
		trap_teardown(s);
	pthread_mutex_unlock(&trap_mutex);
}

void sim_trap_unmap(struct sim *s)
{
	pthread_mutex_lock(&trap_mutex);
	if (s->user_maps)
		trap_teardown(s);
	pthread_mutex_unlock(&trap_mutex);
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

void sim_trap_put(struct sim *s)
{
	(void)s;
}

void sim_trap_unmap(struct sim *s)
{
	(void)s;
}
#endif
