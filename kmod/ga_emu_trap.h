/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stores through user mappings of an emulated card's register block, the
 * control page's seen one by one (ga_emu_trap.c).  ga_emu.c embeds a
 * struct ga_emu_trap per card and maps through it.
 */
#ifndef GA_EMU_TRAP_H
#define GA_EMU_TRAP_H

#include <linux/atomic.h>
#include <linux/mm_types.h>
#include <linux/types.h>

struct ga_emu_trap {
	void *bar;		 /* the card's BAR0, vmalloc_user memory */
	unsigned long bar_pages; /* its size in pages */
	u32 ctl_page;		 /* BAR offset of the page whose stores are stepped */
	/* Stores to the control page let through and not yet handed to
	 * @stored: while any is, only @stored counts that page's words. */
	atomic_t pending;
	/* A store to the control page at BAR offset @off has landed (task
	 * context, the card's model lock not held). */
	void (*stored)(struct ga_emu_trap *t, u32 off);
};

/* The die notifier (x86 single-step); with the first emulated card. */
int ga_emu_trap_init(void);
void ga_emu_trap_exit(void);
/* mmap of @vma at BAR offset @bar_off. */
int ga_emu_trap_mmap(struct ga_emu_trap *t, struct vm_area_struct *vma, u64 bar_off);
/* Release steps of tasks that died before their store (from a card's tick). */
void ga_emu_trap_reap(void);

#endif /* GA_EMU_TRAP_H */
