// SPDX-License-Identifier: GPL-2.0
/*
 * Stores to an emulated card's control page, seen one by one, as firmware
 * sees every AXI-Lite write (kmod/README.md, "Stores to the control page").
 *
 * The card's register block is kernel memory its model looks at when it
 * polls, so of the LCLS-II DRP's write enable 0 then 1, stored back to
 * back through the mapping, it would see only the 1 and not reset the
 * ring index.  Shared mappings are therefore faulted in page by page
 * (VM_PFNMAP) and, with a pfn_mkwrite handler, mapped read-only until a
 * store: a store to any other page makes that page writable for good; a
 * store to the page holding the control word takes a step for the task
 * and lets the one store through.  A step goes through three states:
 *
 *   ARMING    the write fault queued the arm work, which runs as the task
 *             returns to user mode, after the kernel delivered any signal:
 *             if a signal frame was set up or a signal is pending, the
 *             store has not run, so the page is closed again and the step
 *             dropped (the store faults again after the handler); else the
 *             trap flag is set (block-step, a debugger's, off meanwhile);
 *   STEPPING  until the single-step trap (#DB, a die notifier): the newest
 *             stepping step of the task (signal handlers nest) is done; the
 *             trap flag is cleared unless it was the program's or a
 *             debugger's, whose SIGTRAP then goes on;
 *   DONE      its task work, before the task runs on, closes the page again
 *             and has the card look (ga_emu_trap.stored).
 *
 * A fault again on the same card while the task's step is arming, or
 * stepping with the trap flag still set (another thread closed the page
 * first), reuses that step: one step per store, and a trap flag of ours is
 * never taken for the program's.  A store made by the kernel into the
 * mapping (copy_to_user) is looked at when the task returns to user mode.
 *
 * What it cannot see: a store another thread of the process makes in the
 * instruction or two the page is open for one store; anything without
 * x86's trap flag or with emulate_trap_stores=0 (stores are then seen
 * when the card polls, as before).  A signal that arrives after the arm
 * work ran finds the trap flag set: the kernel saves it in the signal
 * frame, the handler runs without it, and sigreturn brings the step back;
 * a handler that leaves by longjmp keeps its step (and the card's file)
 * until the task's next #DB or its exit.
 *
 * emulate_trap_stores cannot change while any shared mapping of a card
 * exists (EBUSY): a mapping is trapped or not for its whole life.
 *
 * Locking: ga_trap_lock (raw, irqs off: the #DB handler takes it) guards
 * the step table.  A step holds a reference on the task and on the mapped
 * file (so on the card and this module) until its task work ran, or until
 * ga_emu_trap_reap() finds its task dead while stepping.
 */
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
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
static DEFINE_MUTEX(ga_trap_maps_lock);
static unsigned int ga_trap_maps; /* shared mappings alive; under ga_trap_maps_lock */

static int ga_trap_param_set(const char *val, const struct kernel_param *kp)
{
	bool on;
	int ret = kstrtobool(val, &on);

	if (ret)
		return ret;
	mutex_lock(&ga_trap_maps_lock);
	if (on != emulate_trap_stores && ga_trap_maps) {
		pr_warn("gpuasync: emulate_trap_stores not changed: %u mapping(s) of an emulated card exist\n",
			ga_trap_maps);
		ret = -EBUSY;
	} else if (on && !IS_ENABLED(CONFIG_X86)) {
		ret = -EOPNOTSUPP;
	} else {
		emulate_trap_stores = on;
	}
	mutex_unlock(&ga_trap_maps_lock);
	return ret;
}

static const struct kernel_param_ops ga_trap_param_ops = {
	.set = ga_trap_param_set,
	.get = param_get_bool,
};
module_param_cb(emulate_trap_stores, &ga_trap_param_ops, &emulate_trap_stores, 0644);
MODULE_PARM_DESC(emulate_trap_stores,
		 "emulated cards see every store through a mapping to their control page, "
		 "single-stepped (x86; default 1; 0: only what each poll finds; "
		 "fixed while a card is mapped)");

#define GA_TRAP_STEPS 64 /* stores in flight at once, one per task */

enum ga_step_state { GA_STEP_FREE, GA_STEP_ARMING, GA_STEP_STEPPING, GA_STEP_DONE };

struct ga_trap_step {
	struct callback_head work;
	struct task_struct *task;
	struct ga_emu_trap *t;
	struct file *file;
	unsigned long addr; /* the page, in task->mm */
	unsigned long ip;   /* the storing instruction */
	u64 seq;	    /* newest stepping step of a task first */
	u32 off;	    /* BAR offset stored to */
	enum ga_step_state state;
	bool program_tf; /* the trap flag was the task's own (a debugger's) */
	bool blockstep;	 /* a debugger's block-step, off for the step */
};

static struct ga_trap_step ga_trap_steps[GA_TRAP_STEPS];
static DEFINE_RAW_SPINLOCK(ga_trap_lock);
static atomic_t ga_trap_busy = ATOMIC_INIT(0);
static u64 ga_trap_seq; /* under ga_trap_lock */

static const struct vm_operations_struct ga_trap_vm_ops;

static void ga_trap_put(struct ga_trap_step *s)
{
	struct task_struct *task = s->task;
	struct file *file = s->file;
	struct ga_emu_trap *t = s->t;
	unsigned long flags;

	raw_spin_lock_irqsave(&ga_trap_lock, flags);
	s->state = GA_STEP_FREE;
	s->task = NULL;
	raw_spin_unlock_irqrestore(&ga_trap_lock, flags);
	atomic_dec(&ga_trap_busy);
	atomic_dec(&t->pending); /* the file's reference keeps @t */
	fput(file);
	put_task_struct(task);
}

/* Map the page read-only again: the next store to it faults. */
static void ga_trap_close(struct ga_trap_step *s)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;

	if (!mm)
		return;
	mmap_read_lock(mm);
	vma = vma_lookup(mm, s->addr);
	if (vma && vma->vm_ops == &ga_trap_vm_ops)
		zap_vma_ptes(vma, s->addr, PAGE_SIZE);
	mmap_read_unlock(mm);
}

/* The store landed: close the page again, then let the card look. */
static void ga_trap_done(struct callback_head *work)
{
	struct ga_trap_step *s = container_of(work, struct ga_trap_step, work);

	ga_trap_close(s);
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
		dead = s->state == GA_STEP_STEPPING && READ_ONCE(s->task->exit_state);
		if (dead)
			s->state = GA_STEP_DONE;
		raw_spin_unlock_irqrestore(&ga_trap_lock, flags);
		if (dead)
			ga_trap_put(s);
	}
}

#ifdef CONFIG_X86
/* A debugger's block-step (branches only) off, or back on, for current. */
static void ga_trap_blockstep(bool on)
{
	unsigned long flags, debugctl;

	local_irq_save(flags); /* TIF_BLOCKSTEP and the MSR change together */
	debugctl = get_debugctlmsr();
	if (on) {
		set_thread_flag(TIF_BLOCKSTEP);
		update_debugctlmsr(debugctl | DEBUGCTLMSR_BTF);
	} else {
		clear_thread_flag(TIF_BLOCKSTEP);
		update_debugctlmsr(debugctl & ~DEBUGCTLMSR_BTF);
	}
	local_irq_restore(flags);
}

/*
 * On the way back to user mode, after any signal was delivered: step the
 * store, or, when a signal comes first, close the page and drop the step.
 */
static void ga_trap_arm(struct callback_head *work)
{
	struct ga_trap_step *s = container_of(work, struct ga_trap_step, work);
	struct pt_regs *regs = task_pt_regs(current);
	unsigned long flags;

	if (!current->mm || (current->flags & PF_EXITING) || regs->ip != s->ip ||
	    signal_pending(current)) {
		ga_trap_close(s);
		ga_trap_put(s);
		return;
	}
	raw_spin_lock_irqsave(&ga_trap_lock, flags);
	s->program_tf = regs->flags & X86_EFLAGS_TF;
	s->blockstep = test_thread_flag(TIF_BLOCKSTEP);
	if (s->blockstep)
		ga_trap_blockstep(false);
	regs->flags |= X86_EFLAGS_TF;
	s->seq = ++ga_trap_seq;
	s->state = GA_STEP_STEPPING;
	raw_spin_unlock_irqrestore(&ga_trap_lock, flags);
}

static int ga_trap_die(struct notifier_block *nb, unsigned long val, void *data)
{
	struct die_args *args = data;
	unsigned long *dr6 = (unsigned long *)args->err;
	struct ga_trap_step *s, *found = NULL;

	if (val != DIE_DEBUG || !user_mode(args->regs) || !(*dr6 & DR_STEP))
		return NOTIFY_DONE;
	raw_spin_lock(&ga_trap_lock); /* #DB runs with interrupts off */
	for (s = ga_trap_steps; s < ga_trap_steps + GA_TRAP_STEPS; s++)
		if (s->task == current && s->state == GA_STEP_STEPPING &&
		    (!found || s->seq > found->seq))
			found = s;
	if (found)
		found->state = GA_STEP_DONE;
	raw_spin_unlock(&ga_trap_lock);
	if (!found)
		return NOTIFY_DONE;
	if (found->blockstep)
		ga_trap_blockstep(true);
	init_task_work(&found->work, ga_trap_done);
	/* Runs before the task returns to user mode; it cannot be exiting here. */
	WARN_ON_ONCE(task_work_add(current, &found->work, TWA_RESUME));
	if (found->program_tf)
		return NOTIFY_DONE; /* the program's or debugger's step goes on to it */
	if (test_thread_flag(TIF_SINGLESTEP)) {
		/* A debugger began stepping while the flag was ours: its trap,
		 * and its PTRACE_CONT clears the flag (as one it set). */
		set_thread_flag(TIF_FORCED_TF);
		return NOTIFY_DONE;
	}
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

/*
 * The step for a store of current to @t's control page: its step still
 * arming, or stepping with the trap flag set (the page was closed again
 * before the store ran), else a new one.  NULL: every step is busy.
 */
static struct ga_trap_step *ga_trap_step_get(struct ga_emu_trap *t, bool *fresh)
{
	struct ga_trap_step *s, *found = NULL, *free = NULL;
	bool tf = false;
	unsigned long flags;

#ifdef CONFIG_X86
	tf = task_pt_regs(current)->flags & X86_EFLAGS_TF;
#endif
	raw_spin_lock_irqsave(&ga_trap_lock, flags);
	for (s = ga_trap_steps; s < ga_trap_steps + GA_TRAP_STEPS; s++) {
		if (s->state == GA_STEP_FREE && !free)
			free = s;
		else if (s->task == current && s->t == t &&
			 (s->state == GA_STEP_ARMING || (s->state == GA_STEP_STEPPING && tf)))
			found = s;
	}
	*fresh = !found && free;
	if (*fresh) {
		found = free;
		found->task = current;
		found->t = t;
		found->state = GA_STEP_ARMING;
	}
	raw_spin_unlock_irqrestore(&ga_trap_lock, flags);
	if (*fresh) {
		get_task_struct(current);
		atomic_inc(&ga_trap_busy);
		atomic_inc(&t->pending); /* before the store can land */
	}
	return found;
}

static vm_fault_t ga_trap_mkwrite(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct ga_emu_trap *t = vma->vm_private_data;
	u32 off = (vmf->pgoff << PAGE_SHIFT) | offset_in_page(vmf->real_address);
	struct ga_trap_step *s;
	bool fresh;

	if ((off & PAGE_MASK) != t->ctl_page || !READ_ONCE(emulate_trap_stores) ||
	    (vmf->flags & FAULT_FLAG_REMOTE))
		return 0; /* writable until unmapped */
	s = ga_trap_step_get(t, &fresh);
	if (!s)
		return VM_FAULT_NOPAGE; /* every step busy for an instruction: come again */
	if (!fresh)
		return 0; /* the same store again: its step stands */
	s->file = get_file(vma->vm_file);
	s->addr = vmf->address & PAGE_MASK;
	s->off = off;
#ifdef CONFIG_X86
	if (vmf->flags & FAULT_FLAG_USER) {
		/* Armed on the way out, once signals had their turn. */
		s->ip = task_pt_regs(current)->ip;
		init_task_work(&s->work, ga_trap_arm);
		if (task_work_add(current, &s->work, TWA_RESUME))
			ga_trap_put(s);
		return 0;
	}
#endif
	/* The kernel writing for a system call: look when it returns. */
	s->state = GA_STEP_DONE;
	init_task_work(&s->work, ga_trap_done);
	if (task_work_add(current, &s->work, TWA_RESUME))
		ga_trap_put(s);
	return 0;
}

/* Each shared mapping (and each copy at fork or split) counts. */
static void ga_trap_open(struct vm_area_struct *vma)
{
	mutex_lock(&ga_trap_maps_lock);
	ga_trap_maps++;
	mutex_unlock(&ga_trap_maps_lock);
}

static void ga_trap_vm_close(struct vm_area_struct *vma)
{
	mutex_lock(&ga_trap_maps_lock);
	ga_trap_maps--;
	mutex_unlock(&ga_trap_maps_lock);
}

static const struct vm_operations_struct ga_trap_vm_ops = {
	.open = ga_trap_open,
	.close = ga_trap_vm_close,
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
	ga_trap_open(vma);
	return 0;
}
