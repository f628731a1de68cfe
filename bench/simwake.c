/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * simwake: what a stalled simulated card costs and how fast an arm ends
 * the stall (issue 24 item 13).
 *
 *   simwake [TRIALS]      (default 200)
 *
 * The generator runs flat out into 4 write buffers until none is armed.
 * Then it prints the card thread's CPU use over 2 s of stall (ga_sim_stats
 * cpu_ns), and for each way of arming (ga_buf_arm through the library; a
 * plain store into the shared register block, as a GPU or another process
 * arms) the time from the arm to the frame's size word in the buffer:
 * arming as soon as the previous frame landed, and after 5 ms of stall
 * (the thread's looks for shared-memory arms backed off to their longest).
 * Timings are wall-clock: on a loaded machine the tails are scheduling.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gpuasync/device.h"
#include "gpuasync/sim.h"

#define NBUF 4

static struct ga_dev *dev;
static struct ga_buf *wb[NBUF];
static volatile uint32_t *regs;
static uint32_t free_off[NBUF];
static unsigned int next; /* the buffer the next frame goes to */

static void die(const char *what)
{
	fprintf(stderr, "simwake: %s: %s\n", what, ga_last_error());
	exit(1);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_us(unsigned int us)
{
	struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000L};

	nanosleep(&ts, NULL);
}

static struct ga_sim_stats stats(void)
{
	struct ga_sim_stats st;

	if (ga_sim_stats(dev, &st))
		die("stats");
	return st;
}

/* Arm the next buffer one way, wait for its frame; the latency in ns. */
static uint64_t one_arm(bool shm)
{
	uint32_t zero = 0, db = 0;
	unsigned int i = next;
	uint64_t t0, t;

	next = (next + 1) % NBUF;
	if (ga_buf_write(wb[i], 4, &zero, 4))
		die("clear the size word");
	t0 = mono_ns();
	if (shm)
		__atomic_store_n(&regs[free_off[i] / 4], 1, __ATOMIC_RELEASE);
	else if (ga_buf_arm(wb[i]))
		die("arm");
	do {
		if (ga_buf_read(wb[i], 4, &db, 4))
			die("read the size word");
		t = mono_ns();
		if (t - t0 > 5000000000ull) {
			fprintf(stderr, "simwake: no frame 5 s after the arm\n");
			exit(1);
		}
	} while (!db);
	return t - t0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void series(const char *name, bool shm, unsigned int stall_us, unsigned int n)
{
	uint64_t *v = calloc(n, sizeof(*v));

	if (!v)
		exit(1);
	for (unsigned int k = 0; k < n; k++) {
		/* The frame before this one has landed (one_arm waited for
		 * it): the generator is at, or about to reach, the stall. */
		if (stall_us)
			sleep_us(stall_us);
		v[k] = one_arm(shm);
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("%-34s %8.1f %8.1f %8.1f %8.1f\n", name, v[n / 2] / 1e3, v[n * 9 / 10] / 1e3,
	       v[n * 99 / 100] / 1e3, v[n - 1] / 1e3);
	free(v);
}

int main(int argc, char **argv)
{
	unsigned int trials = argc > 1 ? (unsigned int)atoi(argv[1]) : 200;
	struct ga_sim_stats a, b;
	struct ga_dev_info info;
	struct ga_sim_gen g;
	char path[256];
	uint64_t moff, t0, t1;
	int fd;

	if (!trials)
		trials = 1;
	if (ga_dev_open("sim:max_buffers=8", &dev))
		die("open");
	ga_dev_info(dev, &info);
	for (unsigned int i = 0; i < NBUF; i++) {
		if (ga_buf_create(dev, GA_DIR_WRITE, i, 65536, &wb[i]) || ga_buf_arm(wb[i]))
			die("buffer");
		if (ga_reg_offset(GA_REG_FREE_LIST, info.layout, info.version, i, info.max_buffers,
				  &free_off[i]))
			die("free-list offset");
	}
	if (ga_dev_reg_path(dev, path, sizeof(path), &moff))
		die("register file");
	fd = open(path, O_RDWR);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	regs = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)moff);
	close(fd);
	if (regs == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (ga_dev_enable(dev, GA_DIR_WRITE, true) || ga_sim_gen_get(dev, &g))
		die("enable");
	g.running = true;
	g.rate_hz = 0;
	g.size = 512;
	g.pattern = GA_PATTERN_ZERO;
	g.remaining = 0;
	if (ga_sim_gen_set(dev, &g))
		die("generator");
	while (stats().delivered < NBUF || stats().stalled_ns == 0)
		sleep_us(1000);

	a = stats();
	t0 = mono_ns();
	sleep_us(2000000);
	t1 = mono_ns();
	b = stats();
	printf("stalled: card thread CPU %.2f%% of a core (%.1f ms in %.1f ms)\n",
	       100.0 * (double)(b.cpu_ns - a.cpu_ns) / (double)(t1 - t0),
	       (b.cpu_ns - a.cpu_ns) / 1e6, (t1 - t0) / 1e6);

	printf("\narm to frame, us (%u trials)      %8s %8s %8s %8s\n", trials, "median", "p90",
	       "p99", "max");
	series("library arm, at once", false, 0, trials);
	series("library arm, 5 ms stall", false, 5000, trials);
	series("shared-memory store, at once", true, 0, trials);
	series("shared-memory store, 5 ms stall", true, 5000, trials);
	munmap((void *)regs, GA_CORE_SIZE);
	ga_dev_close(dev);
	return 0;
}
