/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Error handling for the CUDA programs (examples/cuda, bench/gpu): die()
 * prints "<program>: <message>" and exits 2; CK() dies naming the call, the
 * line and CUDA's error name when a Driver API call fails.
 */
#ifndef GA_CUDA_CHECK_H
#define GA_CUDA_CHECK_H

#include <err.h>

#include <cuda.h>

#define die(...) errx(2, __VA_ARGS__)

#define CK(call)                                                                                   \
	do {                                                                                       \
		CUresult r_ = (call);                                                              \
		if (r_ != CUDA_SUCCESS) {                                                          \
			const char *n_ = NULL;                                                     \
			cuGetErrorName(r_, &n_);                                                   \
			die("%s:%d: %s: %s", __FILE__, __LINE__, #call, n_ ? n_ : "?");            \
		}                                                                                  \
	} while (0)

#endif
