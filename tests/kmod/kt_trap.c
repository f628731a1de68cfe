// SPDX-License-Identifier: GPL-2.0
/*
 * The emulated card's store trap (kmod/ga_emu_trap.c) under what a program
 * and its debugger do: several threads storing to the control page at
 * once, signals arriving between a store's fault and its step, a debugger
 * single- and block-stepping the storing task, and emulate_trap_stores
 * fixed while a mapping exists.  Each storing program runs in a child, so
 * a stray SIGTRAP shows as its death; a step left behind keeps the card's
 * file, so the module's reference count shows it once the child closed.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

#define TRAP_PARAM "/sys/module/gpuasync/parameters/emulate_trap_stores"
#define REFCNT "/sys/module/gpuasync/refcnt"

static long refcnt(void)
{
	FILE *f = fopen(REFCNT, "r");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* The control word, stored with its own value (nothing changes on the card). */
static volatile uint32_t *ctl_word;

static void store_loop(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		*ctl_word = *ctl_word;
}

/* Child: the card mapped; returns the fd. */
static int child_map(void)
{
	int fd = open_card();
	volatile uint32_t *m = map_core(fd);

	if (!m)
		_exit(10);
	ctl_word = m + reg_off(GA_REG_WRITE_ENABLE, 0) / 4;
	return fd;
}

/* Child: unmapped and closed, the module's count back to @r0 (20 s at most). */
static void child_close(int fd, long r0)
{
	int i;

	munmap((void *)(ctl_word - reg_off(GA_REG_WRITE_ENABLE, 0) / 4), GA_CORE_SIZE);
	close(fd);
	for (i = 0; i < 400 && refcnt() != r0; i++)
		usleep(50000);
	_exit(refcnt() == r0 ? 0 : 3);
}

/* Wait for child @pid; say how it ended unless it exited 0. */
static void check_child(pid_t pid, const char *what)
{
	int st = 0;

	CHECK(waitpid(pid, &st, 0) == pid, "%s: waitpid", what);
	CHECK(!WIFSIGNALED(st), "%s: the storing program died of signal %d (%s)", what,
	      WTERMSIG(st), strsignal(WTERMSIG(st)));
	CHECK(!WIFEXITED(st) || WEXITSTATUS(st) != 3,
	      "%s: a step still holds the card's file after the program closed it", what);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %#x", what, st);
}

#define THREADS 8
#define STORES 3000

static void *storer(void *arg)
{
	store_loop((unsigned int)(uintptr_t)arg);
	return NULL;
}

/* Eight threads store to the control word at once (more than the CPUs: a
 * thread is often preempted between its fault and its store). */
static void t_trap_threads(void)
{
	long r0 = refcnt(), t0 = sys_read("trapped_stores");
	pid_t pid;

	CHECK(r0 >= 0 && t0 >= 0, "no %s or trapped_stores", REFCNT);
	pid = fork();
	if (pid == 0) {
		pthread_t th[THREADS];
		int fd = child_map(), i;

		for (i = 0; i < THREADS; i++)
			if (pthread_create(&th[i], NULL, storer, (void *)(uintptr_t)STORES))
				_exit(11);
		for (i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		child_close(fd, r0);
	}
	check_child(pid, "eight threads");
	t0 = sys_read("trapped_stores") - t0;
	CHECK(t0 > 0 && t0 <= THREADS * STORES, "%ld of %d stores trapped", t0, THREADS * STORES);
	printf("KTEST info trap_threads: %ld of %d stores stepped one by one\n", t0,
	       THREADS * STORES);
}

static volatile unsigned long handled;

static void on_usr1(int sig)
{
	(void)sig;
	*ctl_word = *ctl_word; /* a store from the handler too */
	handled++;
}

struct sigstorm {
	pthread_t target[2];
	volatile int stop;
};

static void *storm(void *p)
{
	struct sigstorm *s = p;
	unsigned int i = 0;

	while (!s->stop)
		pthread_kill(s->target[i++ & 1], SIGUSR1);
	return NULL;
}

/* Two threads store while a third sends them SIGUSR1 without pause. */
static void t_trap_signals(void)
{
	long r0 = refcnt(), t0 = sys_read("trapped_stores");
	pid_t pid = fork();

	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
		struct sigstorm s = { .stop = 0 };
		pthread_t k;
		int fd = child_map(), i;

		sigaction(SIGUSR1, &sa, NULL);
		for (i = 0; i < 2; i++)
			if (pthread_create(&s.target[i], NULL, storer, (void *)(uintptr_t)STORES))
				_exit(11);
		if (pthread_create(&k, NULL, storm, &s))
			_exit(11);
		for (i = 0; i < 2; i++)
			pthread_join(s.target[i], NULL);
		s.stop = 1;
		pthread_join(k, NULL);
		printf("KTEST info trap_signals: %lu handlers ran\n", handled);
		if (!handled)
			_exit(12);
		child_close(fd, r0);
	}
	check_child(pid, "stores under signals");
	CHECK(sys_read("trapped_stores") > t0, "no store trapped");
}

#define DBG_STORES 40

/*
 * A debugger steps the storing task: PTRACE_SINGLESTEP through the first
 * half of its stores, PTRACE_SINGLEBLOCK through some more, then
 * PTRACE_CONT.  Every stop is the debugger's SIGTRAP, none comes after
 * PTRACE_CONT, and every store is seen one by one.
 */
static void t_trap_ptrace(void)
{
	long r0 = refcnt(), t0 = sys_read("trapped_stores");
	unsigned long steps = 0, blocks = 0;
	int st = 0;
	pid_t pid = fork();

	if (pid == 0) {
		int fd;

		ptrace(PTRACE_TRACEME, 0, 0, 0);
		fd = child_map();
		raise(SIGSTOP);
		store_loop(DBG_STORES);
		child_close(fd, r0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP,
	      "the child did not stop (%#x)", st);
	/* Single steps until half the stores were seen, then block steps. */
	while (sys_read("trapped_stores") < t0 + DBG_STORES / 2 && steps < 2000000) {
		if (ptrace(PTRACE_SINGLESTEP, pid, 0, 0) || waitpid(pid, &st, 0) != pid ||
		    !WIFSTOPPED(st))
			break;
		steps++;
		CHECK(WSTOPSIG(st) == SIGTRAP, "single step %lu stopped with signal %d", steps,
		      WSTOPSIG(st));
		if (WSTOPSIG(st) != SIGTRAP)
			break;
	}
	while (WIFSTOPPED(st) && blocks < 20) {
		if (ptrace(PTRACE_SINGLEBLOCK, pid, 0, 0) || waitpid(pid, &st, 0) != pid ||
		    !WIFSTOPPED(st))
			break;
		blocks++;
		CHECK(WSTOPSIG(st) == SIGTRAP, "block step %lu stopped with signal %d", blocks,
		      WSTOPSIG(st));
	}
	if (WIFSTOPPED(st)) {
		CHECK_OK(ptrace(PTRACE_CONT, pid, 0, 0));
		CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
		CHECK(!WIFSTOPPED(st), "stopped with signal %d after PTRACE_CONT (a stray trap)",
		      WSTOPSIG(st));
		if (WIFSTOPPED(st)) {
			kill(pid, SIGKILL);
			ptrace(PTRACE_CONT, pid, 0, 0);
			waitpid(pid, &st, 0);
		}
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the stepped program ended with %#x", st);
	CHECK(sys_read("trapped_stores") == t0 + DBG_STORES, "%ld of %d stores trapped under the debugger",
	      sys_read("trapped_stores") - t0, DBG_STORES);
	printf("KTEST info trap_ptrace: %lu single steps, %lu block steps\n", steps, blocks);
}

/* emulate_trap_stores cannot change under a mapping (EBUSY), and can without. */
static void t_trap_param(void)
{
	int fd = open_card();
	volatile uint32_t *m = map_core(fd);

	CHECK(m != NULL, "mmap: %s", strerror(errno));
	CHECK(sys_read_param("emulate_trap_stores") == 1, "emulate_trap_stores is off");
	CHECK_ERR(write_file(TRAP_PARAM, "0"), EBUSY);
	CHECK(sys_read_param("emulate_trap_stores") == 1, "changed under a mapping");
	CHECK(dmesg_has("emulate_trap_stores not changed"), "no kernel log line saying why");
	CHECK_OK(write_file(TRAP_PARAM, "1")); /* the same value: no change */
	if (m)
		munmap((void *)m, GA_CORE_SIZE);
	CHECK_OK(write_file(TRAP_PARAM, "0"));
	CHECK(sys_read_param("emulate_trap_stores") == 0);
	CHECK_OK(write_file(TRAP_PARAM, "1"));
	close(fd);
}

const struct kcase trap_cases[] = {
	{ "trap_threads", t_trap_threads },
	{ "trap_signals", t_trap_signals },
	{ "trap_ptrace", t_trap_ptrace },
	{ "trap_param", t_trap_param },
};
const unsigned int n_trap_cases = sizeof(trap_cases) / sizeof(trap_cases[0]);
