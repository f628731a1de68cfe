/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Emulated cards (ga_emu.c): a client of the driver that registers each
 * card with ga_card_register() and its struct ga_card_ops.  Only the
 * module's init (ga_main.c) calls these.
 */
#ifndef GA_EMU_H
#define GA_EMU_H

#ifdef GA_EMU
/* Create @n cards (/dev/gpuasync_emu0..), checking the emulate_* parameters. */
int ga_emu_create_all(int n);
/* Unregister every emulated card (safe when none exist). */
void ga_emu_destroy_all(void);
#else
/* The packages' build (kmod/Kbuild): no emulated cards, @n is always 0. */
static inline int ga_emu_create_all(int n)
{
	return 0;
}

static inline void ga_emu_destroy_all(void)
{
}
#endif

#endif /* GA_EMU_H */
