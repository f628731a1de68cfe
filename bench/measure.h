/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* How gafs-fsbench's parts time an operation and sum the timings up
 * (bench/measure.c). */
#ifndef GAFS_MEASURE_H
#define GAFS_MEASURE_H

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

#endif
