/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What gafs-fsbench's parts share (bench/fsbench.c). */
#ifndef GAFS_FSBENCH_H
#define GAFS_FSBENCH_H

struct stat_out {
	double p50, p90, p99, mean;
};

double now_us(void);
/* Microseconds to open, read and close @path (exits on an error). */
double open_read_close_us(const char *path);
/* Sorts @t. */
struct stat_out summarize(double *t, int n);
/* The number in file @rel of mount @dir (0 if unreadable). */
unsigned long long read_num(const char *dir, const char *rel);
/* Control under load (bench/fsload.c) on the gpuasyncfs --sim mount @dir:
 * prints its table; -1 when it cannot set up. */
int bench_load(const char *dir, int n);

#endif
