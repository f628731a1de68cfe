/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What core/ takes from its host, and nothing more: fixed-width integers,
 * bool, static_assert, errno values and strcmp.  The same sources build
 * into libgpuasync (libc headers) and into gpuasync.ko (kernel headers);
 * this is the only place among core's sources that tells the two apart.
 * The installed headers (include/gpuasync/) pick <linux/types.h> or
 * <stdint.h> themselves: users include them without this file.
 */
#ifndef GA_BASE_H
#define GA_BASE_H

#ifdef __KERNEL__
#include <linux/build_bug.h>
#include <linux/errno.h>
#include <linux/string.h>
#include <linux/types.h>
#else
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#endif

#endif
