// SPDX-License-Identifier: GPL-2.0
/*
 * The register table (lib/src/regs.c), built into the kernel unchanged:
 * one table for the library, the filesystem and this driver.
 */
#include "../lib/src/regs.c"
