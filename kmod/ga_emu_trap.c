// SPDX-License-Identifier: GPL-2.0
/*
 * Stores to an emulated card's control page, seen one by one, as firmware
 * sees every AXI-Lite write (issue 25 item 4; kmod/README.md).
 *
 * The card's register block is kernel memory its model looks at when it
 * polls, so of the LCLS-II DRP's write enable 0 then 1, stored back to
 * back through the mapping, it would see only the 1 and not reset the
 * ring index.  Shared mappings are therefore faulted in page by page
 * (VM_PFNMAP) and, with a pfn_mkwrite handler, mapped read-only until a
 * store: a store to any other page makes that page writable for good; a
 * store to the page holding the control word sets the task's trap flag
 * and lets the one store through; the single-step trap (#DB, a die
 * notifier) queues task work that, before the task runs on, zaps the page
 * again and has the card look at the word (ga_emu_trap.stored).  A store
 * made by the kernel into the mapping (copy_to_user) is looked at when the
 * task returns to user mode.
 *
 * What it cannot see: a store another thread of the process makes in the
 * instruction or two the page is open for one store; anything without
 * x86's trap flag or with emulate_trap_stores=0 (stores are then seen
 * when the card polls, as before).
 *
 * Locking: ga_trap_lock (raw, irqs off: the #DB handler takes it) guards
 * the step table.  A step holds a reference on the task and on the mapped
 * file (so on the card and this module) until its task work ran, or until
 * ga_emu_trap_reap() finds its task dead before the store.
 */
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/spinlock.h>
#include <linux/task_work.h>
#include <linux/vmalloc.h>
#include <linux/version.h>
#ifdef CONFIG_X86
#include <asm/debugreg.h>
#include <linux/kdebug.h>
#endif

#include "ga_emu_trap.h"

static bool emulate_trap_stores = IS_ENABLED(CONFIG_X86);
module_param(emulate_trap_stores, bool, 0644);
MODULE_PARM_DESC(emulate_trap_stores,
		 "emulated cards see every store through a mapping to their control page, "
		 "single-stepped (x86; default 1; 0: only what each poll finds)");

#define GA_TRAP_STEPS 64 /* stores in flight at once, one per task */

struct ga_trap_step {
	struct callback_head work;
	struct task_struct *task; /* NULL: free */
	struct ga_emu_trap *t;
	struct file *file;
	unsigned long addr; /* the page, in task->mm */
	u32 off;	    /* BAR offset stored to */
	bool stepping;	    /* trap flag set, #DB not seen yet */
	bool program_tf;    /* the trap flag was the task's own (a debugger's) */
};

static struct ga_trap_step ga_trap_steps[GA_TRAP_STEPS];
static DEFINE_RAW_SPINLOCK(ga_trap_lock);
static atomic_t ga_trap_busy = ATOMIC_INIT(0);

static const struct vm_operations_struct ga_trap_vm_ops;

static void ga_trap_put(struct ga_trap_step *s)
{
	struct task_struct *task = s->task;
	struct file *file = s->file;
	struct ga_emu_trap *t = s->t;
	unsigned long flags;

	raw_spin_lock_irqsave(&ga_trap_lock, flags);
	s->task = NULL;
	raw_spin_unlock_irqrestore(&ga_trap_lock, flags);
	atomic_dec(&ga_trap_busy);
	atomic_dec(&t->pending); /* the file's reference keeps @t */
	fput(file);
	put_task_struct(task);
}

/* The store landed: close the page again, then let the card look. */
static void ga_trap_done(struct callback_head *work)
{
	struct ga_trap_step *s = container_of(work, struct ga_trap_step, work);
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;

	if (mm) {
		mmap_read_lock(mm);
		vma = vma_lookup(mm, s->addr);
		if (vma && vma->vm_ops == &ga_trap_vm_ops)
			zap_vma_ptes(vma, s->addr, PAGE_SIZE);
		mmap_read_unlock(mm);
	}
	s->t->stored(s->t, s->off);
	ga_trap_put(s);
}

void ga_emu_trap_reap(void)
{
	struct ga_trap_step *s;
	unsigned long flags;
	bool dead;

	if (!atomic_read(&ga_trap_busy))
		return;
	for (s = ga_trap_steps; s < ga_trap_steps + GA_TRAP_STEPS; s++) {
		raw_spin_lock_irqsave(&ga_trap_lock, flags);
		dead = s->task && s->stepping && READ_ONCE(s->task->exit_state);
		if (dead)
			s->stepping = false;
		raw_spin_unlock_irqrestore(&ga_trap_lock, flags);
		if (dead)
			ga_trap_put(s);
	}
}

#ifdef CONFIG_X86
static int ga_trap_die(struct notifier_block *nb, unsigned long val, void *data)
{
	struct die_args *args = data;
	unsigned long *dr6 = (unsigned long *)args->err;
	struct ga_trap_step *s, *found = NULL;

	if (val != DIE_DEBUG || !user_mode(args->regs) || !(*dr6 & DR_STEP))
		return NOTIFY_DONE;
	raw_spin_lock(&ga_trap_lock); /* #DB runs with interrupts off */
	for (s = ga_trap_steps; s < ga_trap_steps + GA_TRAP_STEPS; s++) {
		if (s->task == current && s->stepping) {
			s->stepping = false;
			found = s;
			break;
		}
	}
	raw_spin_unlock(&ga_trap_lock);
	if (!found)
		return NOTIFY_DONE;
	init_task_work(&found->work, ga_trap_done);
	/* Runs before the task returns to user mode; it cannot be exiting here. */
	WARN_ON_ONCE(task_work_add(current, &found->work, TWA_RESUME));
	if (found->program_tf)
		return NOTIFY_DONE; /* the debugger's single step goes on to it */
	args->regs->flags &= ~X86_EFLAGS_TF;
	*dr6 &= ~DR_STEP;
	return (*dr6 & DR_TRAP_BITS) ? NOTIFY_DONE : NOTIFY_STOP;
}

static struct notifier_block ga_trap_nb = {
	.notifier_call = ga_trap_die,
};

int ga_emu_trap_init(void)
{
	return register_die_notifier(&ga_trap_nb);
}

void ga_emu_trap_exit(void)
{
	unregister_die_notifier(&ga_trap_nb);
}
#else
int ga_emu_trap_init(void)
{
	emulate_trap_stores = false;
	return 0;
}

void ga_emu_trap_exit(void)
{
}
#endif

/* ---- the mapping --------------------------------------------------------- */

static vm_fault_t ga_trap_fault(struct vm_fault *vmf)
{
	struct ga_emu_trap *t = vmf->vma->vm_private_data;
	unsigned long p = vmf->pgoff;

	if (p >= t->bar_pages)
		return VM_FAULT_SIGBUS;
	/* Read-only for a shared writable mapping (pfn_mkwrite: write notify). */
	return vmf_insert_pfn(vmf->vma, vmf->address, vmalloc_to_pfn(t->bar + p * PAGE_SIZE));
}

/* Is the store trapped?  Then a free step for current, else NULL. */
static struct ga_trap_step *ga_trap_step_get(void)
{
	struct ga_trap_step *s, *found = NULL;
	unsigned long flags;

	raw_spin_lock_irqsave(&ga_trap_lock, flags);
	for (s = ga_trap_steps; s < ga_trap_steps + GA_TRAP_STEPS; s++) {
		if (!s->task) {
			s->task = current;
			s->stepping = false;
			found = s;
			break;
		}
	}
	raw_spin_unlock_irqrestore(&ga_trap_lock, flags);
	if (found) {
		get_task_struct(current);
		atomic_inc(&ga_trap_busy);
	}
	return found;
}

static vm_fault_t ga_trap_mkwrite(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct ga_emu_trap *t = vma->vm_private_data;
	u32 off = (vmf->pgoff << PAGE_SHIFT) | offset_in_page(vmf->real_address);
	struct ga_trap_step *s;

	if ((off & PAGE_MASK) != t->ctl_page || !READ_ONCE(emulate_trap_stores) ||
	    (vmf->flags & FAULT_FLAG_REMOTE))
		return 0; /* writable until unmapped */
	s = ga_trap_step_get();
	if (!s)
		return VM_FAULT_NOPAGE; /* every step busy for an instruction: come again */
	s->t = t;
	atomic_inc(&t->pending); /* before the store can land */
	s->file = get_file(vma->vm_file);
	s->addr = vmf->address & PAGE_MASK;
	s->off = off;
#ifdef CONFIG_X86
	if (vmf->flags & FAULT_FLAG_USER) {
		struct pt_regs *regs = task_pt_regs(current);
		unsigned long flags;

		s->program_tf = regs->flags & X86_EFLAGS_TF;
		regs->flags |= X86_EFLAGS_TF;
		raw_spin_lock_irqsave(&ga_trap_lock, flags);
		s->stepping = true;
		raw_spin_unlock_irqrestore(&ga_trap_lock, flags);
		return 0;
	}
#endif
	/* The kernel writing for a system call: look when it returns. */
	init_task_work(&s->work, ga_trap_done);
	if (task_work_add(current, &s->work, TWA_RESUME))
		ga_trap_put(s);
	return 0;
}

static const struct vm_operations_struct ga_trap_vm_ops = {
	.fault = ga_trap_fault,
	.pfn_mkwrite = ga_trap_mkwrite,
};

int ga_emu_trap_mmap(struct ga_emu_trap *t, struct vm_area_struct *vma, u64 bar_off)
{
	/* A private mapping's stores never reach the card: no trap needed. */
	if (!(vma->vm_flags & VM_SHARED))
		return remap_vmalloc_range(vma, t->bar, bar_off >> PAGE_SHIFT);
	/* ga_mmap: file offset = BAR offset, so vmf->pgoff is the BAR page. */
	if (vma->vm_pgoff != bar_off >> PAGE_SHIFT)
		return -EINVAL;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
#else
	vma->vm_flags |= VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP;
#endif
	vma->vm_ops = &ga_trap_vm_ops;
	vma->vm_private_data = t;
	return 0;
}
