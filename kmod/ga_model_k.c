// SPDX-License-Identifier: GPL-2.0
/*
 * The firmware model, built into the kernel unchanged: lib/model/ga_model.c
 * is plain C with no libc and no kernel API (see ga_model.h), so the only
 * shim needed is this file, which kbuild compiles (kbuild wants the object
 * inside kmod/).
 */
#include "../lib/model/ga_model.c"
