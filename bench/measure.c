/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gafs-fsbench's measuring: a clock in microseconds, one timed
 * open+read+close, a file's number, and the percentiles of a run of
 * timings.  What fsbench.c (against floorfs) and fsload.c (under load)
 * both time with.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "measure.h"

double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stat_out summarize(double *t, int n)
{
	struct stat_out s = {0};

	for (int i = 0; i < n; i++)
		s.mean += t[i];
	s.mean /= n;
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	s.p50 = t[n / 2];
	s.p90 = t[n * 9 / 10];
	s.p99 = t[n * 99 / 100];
	return s;
}

unsigned long long read_num(const char *dir, const char *rel)
{
	char path[256], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strtoull(buf, NULL, 0);
}

double open_read_close_us(const char *path)
{
	char buf[64];
	double t0 = now_us();
	int fd = open(path, O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0) {
		perror(path);
		exit(1);
	}
	close(fd);
	return now_us() - t0;
}
