/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gafs-recrate: the rate a recording keeps up with (frames/record,
 * docs/record.md), sustained rather than one ring's burst.
 *
 *   gafs-recrate DIR OUTDIR SECONDS RATE...      (RATE 0: as fast as it goes)
 *
 * DIR is a gpuasyncfs --sim mount (version=4) with write buffers 0..N-1;
 * for each rate the generator runs SECONDS at that rate while a thread
 * re-arms every buffer through the mapped registers (rearm.h), and the
 * mount records everything its frame watcher sees into a new file in
 * OUTDIR (removed after).  Per rate: frames the card delivered, frames
 * the watcher saw, frames recorded, drops (the recording's queue full),
 * and the bytes written per second, each rate run once without and once
 * with the recording.  A rate is kept up with when every frame delivered
 * was seen and recorded, none dropped.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure.h"
#include "rearm.h"

static const char *dir;

static int put(const char *rel, const char *val)
{
	return mnt_put(dir, rel, val);
}

/* A number file, or the value of "KEY N" in a status file. */
static unsigned long long num(const char *rel, const char *key)
{
	char path[512], line[512];
	unsigned long long v = 0;
	size_t kl = key ? strlen(key) : 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!key) {
			v = strtoull(line, NULL, 10);
			break;
		}
		if (!strncmp(line, key, kl) && line[kl] == ' ') {
			v = strtoull(line + kl + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* Seconds, from the benches' clock (measure.c). */
static double now_s(void)
{
	return now_us() / 1e6;
}

/* Wait until @rel stops changing for 0.3 s (at most 20 s). */
static unsigned long long settle(const char *rel)
{
	unsigned long long v = num(rel, NULL), w;
	double t0 = now_s(), still = now_s();

	while (now_s() - t0 < 20) {
		usleep(20000);
		w = num(rel, NULL);
		if (w != v) {
			v = w;
			still = now_s();
		} else if (now_s() - still >= 0.3) {
			break;
		}
	}
	return v;
}

static unsigned int count_buffers(void)
{
	char path[512];
	struct dirent *e;
	unsigned int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/buffers", dir);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] >= '0' && e->d_name[0] <= '9';
	closedir(d);
	return n;
}

struct pass {
	unsigned long long delivered, seen, recorded, drops, bytes;
	double secs;
};

/* The generator at @rate for @secs with the consumer re-arming, recorded
 * into @file or (NULL) not. */
static int run(unsigned long long rate, double secs, const char *file, struct rearm *ra,
	       struct pass *o)
{
	unsigned long long d0 = num("sim/stats/delivered", NULL), s0 = num("frames/seen", NULL);
	char val[700];
	double t0;

	memset(o, 0, sizeof(*o));
	if (file) {
		unlink(file);
		snprintf(val, sizeof(val), "%s queue=256M", file);
		if (put("frames/record", val) < 0) {
			perror("frames/record");
			return -1;
		}
	}
	snprintf(val, sizeof(val), "%llu", rate);
	if (put("sim/rate", val) || put("registers/write_enable", "1"))
		return -1;
	atomic_store(&ra->run, true);
	t0 = now_s();
	put("sim/running", "1");
	usleep((useconds_t)(secs * 1e6));
	put("sim/running", "0");
	o->secs = now_s() - t0;
	o->delivered = settle("sim/stats/delivered") - d0;
	o->seen = settle("frames/seen") - s0;
	atomic_store(&ra->run, false);
	put("registers/write_enable", "0");
	if (file) {
		put("frames/record", "stop");
		o->recorded = num("frames/record_status", "frames");
		o->drops = num("frames/record_status", "drops");
		o->bytes = num("frames/record_status", "bytes");
		unlink(file);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct rearm ra = {0};
	unsigned int nbuf;
	pthread_t th;
	double secs;

	if (argc < 5) {
		fprintf(stderr, "usage: gafs-recrate DIR OUTDIR SECONDS RATE...\n");
		return 2;
	}
	dir = argv[1];
	secs = atof(argv[3]);
	nbuf = count_buffers();
	if (!nbuf || rearm_map(dir, &ra, nbuf) || pthread_create(&th, NULL, rearm_main, &ra)) {
		fprintf(stderr, "gafs-recrate: %s: no write buffers or no register mapping\n", dir);
		return 1;
	}
	/* Each rate without and with the recording: what the watcher sees
	 * alone, what it sees while recording, and what was written. */
	printf("rate/s | alone: delivered/s seen/s | recording: delivered/s seen/s recorded/s "
	       "drops MB/s | kept_up\n");
	for (int i = 4; i < argc; i++) {
		unsigned long long rate = strtoull(argv[i], NULL, 10);
		struct pass a, r;
		char file[600];

		snprintf(file, sizeof(file), "%s/recrate-%llu.gar", argv[2], rate);
		if (run(rate, secs, NULL, &ra, &a) || run(rate, secs, file, &ra, &r))
			return 1;
		/* Kept up: every frame delivered was seen and written, none dropped. */
		printf("%llu | %.0f %.0f | %.0f %.0f %.0f %llu %.1f | %s\n", rate,
		       (double)a.delivered / a.secs, (double)a.seen / a.secs,
		       (double)r.delivered / r.secs, (double)r.seen / r.secs,
		       (double)r.recorded / r.secs, r.drops, (double)r.bytes / 1e6 / r.secs,
		       !r.drops && r.recorded == r.seen && r.seen == r.delivered ? "yes" : "no");
		fflush(stdout);
	}
	atomic_store(&ra.stop, true);
	pthread_join(th, NULL);
	rearm_unmap(&ra);
	return 0;
}
