/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The simulated card's PRBS pattern, defined once for the CPU (pattern.c,
 * and the CUDA layer's jump table in mem_cuda_kernel.c) and for the GPU
 * (fill.cu includes this file too, so it is plain macros): a Galois LFSR,
 * one step per 32-bit word, seeded from the frame number.
 */
#ifndef GA_PRBS_LFSR_H
#define GA_PRBS_LFSR_H

#define GA_LFSR_TAPS 0x80200003u
/* The state after @s. */
#define GA_LFSR_NEXT(s) (((s) >> 1) ^ ((0u - ((s) & 1u)) & GA_LFSR_TAPS))
/* Frame @seq's first word before the never-0 rule (an all-zero LFSR stays
 * zero: use 1 then); the mix spreads nearby frame numbers. */
#define GA_PRBS_MIX(seq) ((seq) * 0x9E3779B1u ^ 0xA5A5A5A5u)

#endif
