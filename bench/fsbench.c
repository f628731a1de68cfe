/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gafs-fsbench: what gpuasyncfs costs, measured against floorfs (a
 * one-file FUSE filesystem served the same way) in the same run.
 *
 *   build-fs/bench/gafs-fsbench [ITERATIONS]
 *
 * GAFS_BIN and FLOORFS_BIN name other daemons than the ones built beside it
 * (bench/compare runs one bench against two builds' daemons).
 *
 * Mounts floorfs and gpuasyncfs --sim (V4) on temporary directories and
 * reports, per operation, the median and 90th percentile of single
 * timings (clock_gettime around each call):
 *   - open+read+close of registers/rx_frame_count and pread on an open fd,
 *     as ratios to the same on floorfs (goal: within 1.25x);
 *   - a full read of metrics with 1024 V4 buffers allocated (goal < 2 ms);
 *   - mkdir and rmdir of a buffer;
 *   - poll(POLLPRI) wake-up: a write to registers/ar_cache through one fd
 *     until poll on another returns (the sampler runs every interval_ms,
 *     so this is about interval/2 plus a FUSE round trip);
 *   - control under load (bench/fsload.c), on a second mount with
 *     -o threads=4: register read, echo and mkdir+rmdir while the card
 *     delivers, drops and stalls, as ratios to the idle figures.
 * Not a test: nothing is asserted.  Both mounts are unmounted and both
 * daemons stopped (by pid) on every exit path.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fsload.h"
#include "measure.h"

#define POLL_INTERVAL_MS 1

struct mount {
	char dir[64];
	pid_t pid;
};

static struct mount floor_m, gafs_m;

static bool mounted(const char *dir)
{
	char line[1024], needle[96];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	bool found = false;

	snprintf(needle, sizeof(needle), " %s ", dir);
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			found = true;
	if (f)
		fclose(f);
	return found;
}

static int start(struct mount *m, const char *bin, const char *extra)
{
	char cmd[1024];

	snprintf(m->dir, sizeof(m->dir), "/tmp/gafs-bench-XXXXXX");
	if (!mkdtemp(m->dir))
		return -1;
	snprintf(cmd, sizeof(cmd), "exec %s -f %s %s", bin, extra, m->dir);
	m->pid = fork();
	if (m->pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		if (mounted(m->dir))
			return 0;
		usleep(10000);
	}
	fprintf(stderr, "%s did not mount\n", bin);
	return -1;
}

static void stop(struct mount *m)
{
	char cmd[256];

	if (!m->dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "fusermount3 -u %s 2>/dev/null || fusermount3 -uz %s", m->dir,
		 m->dir);
	if (mounted(m->dir) && system(cmd) != 0)
		fprintf(stderr, "cannot unmount %s\n", m->dir);
	if (m->pid > 0) {
		for (int i = 0; i < 500 && waitpid(m->pid, NULL, WNOHANG) != m->pid; i++)
			usleep(10000);
		if (kill(m->pid, 0) == 0) {
			kill(m->pid, SIGKILL);
			waitpid(m->pid, NULL, 0);
		}
	}
	rmdir(m->dir);
	m->dir[0] = '\0';
}

static void cleanup(void)
{
	stop(&gafs_m);
	stop(&floor_m);
}

static void on_signal(int sig)
{
	(void)sig;
	exit(1); /* atexit cleanup unmounts */
}

static void time_open_read_close(const char *path, double *t, int n)
{
	for (int i = 0; i < n; i++)
		t[i] = open_read_close_us(path);
}

static void time_pread(const char *path, double *t, int n)
{
	char buf[64];
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		perror(path);
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		double t0 = now_us();

		if (pread(fd, buf, sizeof(buf), 0) <= 0) {
			perror(path);
			exit(1);
		}
		t[i] = now_us() - t0;
	}
	close(fd);
}

/* Floor and gpuasyncfs in alternating blocks, so that load from other
 * processes on the machine falls on both alike. */
static void compare(void (*fn)(const char *, double *, int), const char *a, const char *b, int n,
		    struct stat_out *sa, struct stat_out *sb)
{
	enum { BLOCKS = 20 };
	double *ta = calloc((size_t)n, sizeof(double)), *tb = calloc((size_t)n, sizeof(double));
	int per = n / BLOCKS;

	for (int k = 0; k < BLOCKS; k++) {
		fn(a, ta + k * per, per);
		fn(b, tb + k * per, per);
	}
	*sa = summarize(ta, per * BLOCKS);
	*sb = summarize(tb, per * BLOCKS);
	free(ta);
	free(tb);
}

static struct stat_out bench_metrics(const char *path, int n, size_t *bytes)
{
	double *t = calloc((size_t)n, sizeof(*t));
	size_t cap = 1 << 22;
	char *buf = malloc(cap);
	struct stat_out s;

	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		int fd = open(path, O_RDONLY);
		size_t len = 0;
		ssize_t r;

		while ((r = read(fd, buf + len, cap - len)) > 0)
			len += (size_t)r;
		close(fd);
		t[i] = now_us() - t0;
		*bytes = len;
	}
	s = summarize(t, n);
	free(t);
	free(buf);
	return s;
}

static void bench_mkdir_rmdir(const char *dir, int n, struct stat_out *mk, struct stat_out *rm)
{
	double *a = calloc((size_t)n, sizeof(*a)), *b = calloc((size_t)n, sizeof(*b));
	char path[128];

	snprintf(path, sizeof(path), "%s/buffers/0", dir);
	for (int i = 0; i < n; i++) {
		double t0 = now_us();

		if (mkdir(path, 0755) < 0) {
			perror("mkdir");
			exit(1);
		}
		a[i] = now_us() - t0;
		t0 = now_us();
		if (rmdir(path) < 0) {
			perror("rmdir");
			exit(1);
		}
		b[i] = now_us() - t0;
	}
	*mk = summarize(a, n);
	*rm = summarize(b, n);
	free(a);
	free(b);
}

/* Poll wake-up: the main thread changes ar_cache and stamps the time; the
 * waiter wakes from poll(POLLPRI) and stamps again. */
struct pollbench {
	int fd;
	_Atomic double t_write;
	double *lat;
	int n;
	atomic_int ready;
};

static void *poll_waiter(void *arg)
{
	struct pollbench *pb = arg;
	char buf[32];

	for (int i = 0; i < pb->n; i++) {
		struct pollfd p = {.fd = pb->fd, .events = POLLPRI};

		if (pread(pb->fd, buf, sizeof(buf), 0) < 0)
			break;
		atomic_store(&pb->ready, 1);
		if (poll(&p, 1, 5000) != 1) {
			fprintf(stderr, "poll: no wake-up\n");
			pb->lat[i] = -1;
			continue;
		}
		pb->lat[i] = now_us() - atomic_load(&pb->t_write);
	}
	return NULL;
}

static struct stat_out bench_poll(const char *dir, int n)
{
	struct pollbench pb = {.n = n};
	char path[128];
	pthread_t th;
	int wfd;
	struct stat_out s;

	pb.lat = calloc((size_t)n, sizeof(double));
	snprintf(path, sizeof(path), "%s/registers/ar_cache", dir);
	pb.fd = open(path, O_RDONLY);
	if (pb.fd < 0) {
		perror(path);
		exit(1);
	}
	pthread_create(&th, NULL, poll_waiter, &pb);
	for (int i = 0; i < n; i++) {
		char v[8];

		while (!atomic_load(&pb.ready))
			usleep(100);
		atomic_store(&pb.ready, 0);
		usleep(2000 + (useconds_t)(rand() % 3000)); /* let the waiter block in poll */
		snprintf(v, sizeof(v), "%d\n", i % 2 ? 3 : 5);
		/* One open, one value, as echo writes it (a text written
		 * through an open is applied when it is closed). */
		wfd = open(path, O_WRONLY);
		atomic_store(&pb.t_write, now_us());
		if (wfd < 0 || write(wfd, v, strlen(v)) < 0 || close(wfd) < 0)
			perror("write");
	}
	pthread_join(th, NULL);
	close(pb.fd);
	s = summarize(pb.lat, n);
	free(pb.lat);
	return s;
}

static void machine(void)
{
	FILE *p = popen("lscpu | sed -n 's/^Model name: *//p' | head -1", "r");
	char model[128] = "?";

	if (p) {
		if (fgets(model, sizeof(model), p))
			model[strcspn(model, "\n")] = '\0';
		pclose(p);
	}
	printf("machine: %s, %ld CPUs, kernel ", model, sysconf(_SC_NPROCESSORS_ONLN));
	fflush(stdout);
	if (system("uname -r") != 0)
		printf("?\n");
}

/* "GPU memory", "host memory", ...: what mount @dir's device/memory says
 * its buffers are in, so the mkdir row names the memory it timed ("?
 * memory" when the file cannot be read). */
static void mount_memory(const char *dir, char *out, size_t len)
{
	char path[128], word[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/device/memory", dir);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(word, sizeof(word), f))
			word[0] = '\0';
		fclose(f);
	}
	word[strcspn(word, "\n")] = '\0';
	snprintf(out, len, "%s memory", strcmp(word, "gpu") == 0 ? "GPU" : word[0] ? word : "?");
}

static const char *bin(const char *env, const char *built)
{
	const char *v = getenv(env);

	return v && *v ? v : built;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	struct stat_out f_orc, g_orc, f_pr, g_pr, met, mk, rm, pl;
	char fval[96], greg[128], gmet[128], cmd[256], mem[48];
	size_t mbytes = 0;
	double t0;

	if (n < 100)
		n = 100;
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (start(&floor_m, bin("FLOORFS_BIN", FLOORFS_BIN), "") < 0)
		return 1;
	{
		char opt[64];

		snprintf(opt, sizeof(opt), "--sim -o version=4,interval_ms=%d", POLL_INTERVAL_MS);
		if (start(&gafs_m, bin("GAFS_BIN", GAFS_BIN), opt) < 0)
			return 1;
	}
	snprintf(fval, sizeof(fval), "%s/val", floor_m.dir);
	snprintf(greg, sizeof(greg), "%s/registers/rx_frame_count", gafs_m.dir);
	snprintf(gmet, sizeof(gmet), "%s/metrics", gafs_m.dir);
	mount_memory(gafs_m.dir, mem, sizeof(mem));

	/* warm up both (dentries, inodes, the sim), then measure */
	compare(time_open_read_close, fval, greg, 2000, &f_orc, &g_orc);
	compare(time_open_read_close, fval, greg, n, &f_orc, &g_orc);
	compare(time_pread, fval, greg, n, &f_pr, &g_pr);
	bench_mkdir_rmdir(gafs_m.dir, 500, &mk, &rm);
	pl = bench_poll(gafs_m.dir, 200);

	t0 = now_us();
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import os,sys\nfor i in range(1024): os.mkdir(sys.argv[1] + "
		 "\"/buffers/%%d\" %% i)' %s",
		 gafs_m.dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "cannot allocate 1024 buffers\n");
		return 1;
	}
	printf("(allocated 1024 V4 buffers of 64 KiB in %.0f ms)\n", (now_us() - t0) / 1e3);
	bench_metrics(gmet, 20, &mbytes);
	met = bench_metrics(gmet, 500, &mbytes);

	machine();
	printf("iterations: %d per open/pread row; gpuasyncfs single-threaded loop, "
	       "sampler every %d ms\n\n",
	       n, POLL_INTERVAL_MS);
	printf("| operation | floorfs p50 | gpuasyncfs p50 | gpuasyncfs p90 | ratio (p50) | goal "
	       "|\n");
	printf("|---|---|---|---|---|---|\n");
	printf("| open+read+close registers/rx_frame_count | %.1f us | %.1f us | %.1f us | %.2fx | "
	       "<= 1.25x |\n",
	       f_orc.p50, g_orc.p50, g_orc.p90, g_orc.p50 / f_orc.p50);
	printf("| pread on an open fd | %.1f us | %.1f us | %.1f us | %.2fx | <= 1.25x |\n",
	       f_pr.p50, g_pr.p50, g_pr.p90, g_pr.p50 / f_pr.p50);
	printf("| read all of metrics, 1024 V4 buffers (%zu bytes) | - | %.0f us | %.0f us | - | < "
	       "2000 us |\n",
	       mbytes, met.p50, met.p90);
	printf("| mkdir buffers/0 (64 KiB, %s) | - | %.1f us | %.1f us | - | - |\n", mem, mk.p50,
	       mk.p90);
	printf("| rmdir buffers/0 | - | %.1f us | %.1f us | - | - |\n", rm.p50, rm.p90);
	printf("| poll(POLLPRI) wake-up after a change (interval_ms=%d) | - | %.0f us | %.0f us | "
	       "- | - |\n",
	       POLL_INTERVAL_MS, pl.p50, pl.p90);
	printf("\nmeans: open+read+close %.1f / %.1f us, pread %.1f / %.1f us (floorfs / "
	       "gpuasyncfs)\n",
	       f_orc.mean, g_orc.mean, f_pr.mean, g_pr.mean);
	fflush(stdout);

	/* Control under load, on a fresh multi-threaded mount; GAFS_LOAD_OPTS
	 * adds options (e.g. use_gpu=0: the same card on host memory). */
	stop(&gafs_m);
	char load_opts[256];
	const char *extra = getenv("GAFS_LOAD_OPTS");

	snprintf(load_opts, sizeof(load_opts), "--sim -o version=4,threads=4%s%s",
		 extra && *extra ? "," : "", extra && *extra ? extra : "");
	printf("\ncontrol-under-load mount: %s\n", load_opts);
	if (start(&gafs_m, bin("GAFS_BIN", GAFS_BIN), load_opts) < 0 ||
	    bench_load(gafs_m.dir, n / 10 < 400 ? 400 : n / 10) < 0) {
		fprintf(stderr, "control under load: cannot set up\n");
		return 1;
	}
	return 0;
}
