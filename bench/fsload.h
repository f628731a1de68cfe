/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* gafs-fsbench's control under load (bench/fsload.c). */
#ifndef GAFS_FSLOAD_H
#define GAFS_FSLOAD_H

/* Control under load on the gpuasyncfs --sim mount @dir: prints its
 * table; -1 when it cannot set up. */
int bench_load(const char *dir, int n);

#endif
