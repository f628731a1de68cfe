// SPDX-License-Identifier: GPL-2.0
/*
 * Emulated GpuAsyncCore cards (emulate=N): a 16 MiB "BAR0" in kernel
 * memory holding an AxiVersion block (identity from the shared table
 * gpuasync/axiversion.h: version, git hash, DNA, build string, a live
 * uptime, GPU enable bit, DMA clock) and the
 * core block at 0x28000, run by the same firmware model as libgpuasync's
 * simulated card (core/ga_model.c, a Kbuild object of this module).  This
 * file is the model's kernel host:
 *  - register writes the driver sees go to ga_model_reg_write() at once;
 *    writes user space makes through mmap are picked up by a kthread that
 *    calls ga_model_poll() every emulate_poll_us; those it sees are counted
 *    (sysfs mapped_reg_writes; the driver counts DMA_Write_Register calls
 *    in user_reg_writes), so a test can show a process wrote nothing;
 *    stores to the page holding the control word are each seen as they
 *    land (ga_emu_trap.c, sysfs trapped_stores), as firmware sees every
 *    write, so an enable 0 then 1 back to back resets the ring index;
 *  - the model's DMA reaches "GPU memory" through nv_p2p_stub's bus
 *    addresses (as a card reaches BAR1), so a zeroed or stale address
 *    register fails like an IOMMU fault instead of writing anywhere;
 *  - a frame generator, driven by sysfs (gen_frames, gen_size, gen_user),
 *    pushes frames into the input stream so tests can make frames flow;
 *    a recorded run's frames come in one at a time through replay_frame
 *    and replay_push (gpuasync-play, docs/record.md);
 *  - emulate_upstream=1 makes the card behave as upstream's
 *    datadev_emulator does for its GPU tools (rdmaTestEmu,
 *    dmaGpuToggleTest): 4 buffers, DmaDataBytes 16, free-list and
 *    read-size words that hold their value until used (the model's
 *    level_words), and a source that offers one PRBS frame (SLAC's format,
 *    gpuasync/prbs.h) of write_max_size bytes per tick whenever the write
 *    engine is on and the next buffer is armed; every GPU->FPGA frame is
 *    checked as PRBS (sysfs tx_prbs_errors).  Those tools stop a run by
 *    withdrawing the free list right after their last frame and expect no
 *    frame more, so the source has deadtime, as a DAQ trigger held off
 *    while the readout is busy: after a frame it offers the next one only
 *    once the consumer has cleared that frame's size word (the tools do,
 *    when done with it) or the write engine was switched off.
 *
 * Locking: emu->model_lock guards the model and the generator.  It nests
 * inside card->reg_lock and outside the stub's lock; DMA completes under
 * it, so taking and dropping it is a DMA barrier.
 */
#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "ga_dmabuf.h"
#include "ga_drv.h"
#include "ga_emu.h"
#include "ga_emu_trap.h"
#include "ga_model.h"
#include "gpuasync/axiversion.h"
#include "gpuasync/prbs.h"
#include "gpuasync/sysmon.h"
#ifdef GA_P2P_STUB
#include "nv_p2p_stub.h"
#endif

#define GA_EMU_MAX 8
#define GA_EMU_SCRATCH (1u << 20) /* largest generated frame / read request */
#define GA_EMU_CLOCK_HZ GA_DMA_CLOCK_HZ_DEFAULT
#define GA_EMU_RAMP (GA_EMU_SCRATCH + 256) /* a largest frame from any offset 0..255 */

static int emulate_version = GA_VERSION_EMULATED;
module_param(emulate_version, int, 0444);
MODULE_PARM_DESC(emulate_version, "firmware version of emulated cards, 1 to the newest the "
				  "module knows (default " __stringify(GA_VERSION_EMULATED) ")");

static bool emulate_upstream;
module_param(emulate_upstream, bool, 0444);
MODULE_PARM_DESC(emulate_upstream,
		 "emulated cards behave as upstream's datadev_emulator for its GPU tools "
		 "(version 4 or 5)");

static int emulate_buffers;
module_param(emulate_buffers, int, 0444);
MODULE_PARM_DESC(emulate_buffers,
		 "max buffers of emulated cards (V1: <= 16; default 16, 4 with emulate_upstream)");

static int emulate_dma_data_bytes;
module_param(emulate_dma_data_bytes, int, 0444);
MODULE_PARM_DESC(emulate_dma_data_bytes,
		 "DmaDataBytes of emulated cards (default 32, 16 with emulate_upstream)");

static bool emulate_latency_legacy;
module_param(emulate_latency_legacy, bool, 0444);
MODULE_PARM_DESC(emulate_latency_legacy, "V4/V5: latency registers at 0x48/0x50/0x58");

static unsigned int emulate_poll_us = 500;
module_param(emulate_poll_us, uint, 0644);
MODULE_PARM_DESC(emulate_poll_us, "how often the emulated firmware looks at its registers");

static bool emulate_gpu_en = true;
module_param(emulate_gpu_en, bool, 0444);
MODULE_PARM_DESC(emulate_gpu_en, "AxiVersion's DATAGPU_EN bit of emulated cards (0: GPU async off)");

static bool emulate_dma_barrier = true;
module_param(emulate_dma_barrier, bool, 0444);
MODULE_PARM_DESC(emulate_dma_barrier,
		 "emulated cards tell the driver their DMA is synchronous (0: the driver "
		 "uses the fixed wait real cards before V5 get)");

static int emulate_map_version = GA_MEMMAP_NEWEST;
module_param(emulate_map_version, int, 0444);
/* In words: the newest version and the SysMon's offset are enum constants
 * of gpuasync/sysmon.def, which the preprocessor cannot spell into a string. */
MODULE_PARM_DESC(emulate_map_version,
		 "BAR0 memory-map version emulated cards report, 0 to 255 (default: the newest the "
		 "driver knows, whose map has the SysMon; above it the driver refuses the card)");

static bool emulate_sysmon = true;
module_param(emulate_sysmon, bool, 0444);
MODULE_PARM_DESC(emulate_sysmon, "AxiVersion's GEN_SYSMON_G bit of emulated cards (0: no SysMon)");

struct ga_emu {
	struct ga_card *card;
	/* What the card DMAs as: a device with a 64-bit mask and no IOMMU,
	 * so that exporters map dma-bufs for it as for a PCI card. */
	struct platform_device *pdev;
	void *bar;
	struct mutex model_lock;
	struct ga_model *m;
	struct task_struct *thread;
	wait_queue_head_t wq;
	bool kick;
	void *scratch;
	u8 *ramp; /* GA_EMU_RAMP bytes, byte i = i & 0xff: generated payloads */
	u8 *replay; /* GA_EMU_SCRATCH bytes once written: the payload to push */
	u64 replayed; /* frames replay_push offered that the card took */
	/* frame generator and statistics, model_lock */
	u32 gen_left, gen_size, gen_seq;
	u32 gen_user; /* 0..0xff */
	u64 delivered, dropped, diverted;
	u64 overflowed; /* delivered, but cut at the payload limit */
	u64 tx_frames;
	u32 tx_last_len, tx_last_sum;
	/* emulate_upstream: the source's next sequence number, frames sent
	 * by it, GPU->FPGA frames that were not valid PRBS */
	u32 up_seq;
	u64 up_frames, tx_prbs_errors;
	u64 ticks;    /* firmware ticks run: absence checks wait for these */
	u64 clock_ns; /* the model's clock, last value (ga_emu_now_ns) */
	u32 free_first, free_end; /* the free-list words, core offsets [first, end) */
	/* upstream mode's last events (up_log): tick, what, buffer, value */
	struct { u64 tick; char what; u8 idx; u32 val; } up_log[32];
	unsigned int up_log_n;
	unsigned long born; /* jiffies at creation: AxiVersion uptime */
	u64 up_on_tick; /* tick the write engine was first seen on; 0: off */
	bool up_busy; /* deadtime: the last frame went to write buffer up_busy_index */
	unsigned int up_busy_index;
	u64 up_busy_base; /* ...at this address, its size word at + GA_HDR_SIZE_OFFSET */
	/*
	 * Stores through user mappings, as the card sees them (sysfs
	 * mapped_reg_writes): the words the register table names (watched,
	 * a bitmap of core words) are compared at each look with what the
	 * card left there (shadow); each word found changed counts one.
	 */
	unsigned long *watched;
	u32 *shadow;
	u64 mapped_reg_writes;
	/* The SysMon block at BAR0 + GA_SYSMON_BASE, under model_lock;
	 * has_sysmon false: the image has none (the words stay 0). */
	struct ga_sysmon sysmon;
	bool has_sysmon;
	struct ga_emu_trap trap; /* user mappings (ga_emu_trap.c) */
	u64 trapped_stores;	 /* stores to the control page, seen one by one */
};

static struct ga_card *ga_emu_cards[GA_EMU_MAX];
static int ga_emu_count;
static bool ga_emu_trapping; /* the store trap's notifier is registered */

/* ---- AxiVersion ------------------------------------------------------------ */

/* Word @w of AxiVersion row @id, at the offset the shared table gives. */
static void ga_emu_fw_set(struct ga_emu *e, enum ga_fw_id id, unsigned int w, u32 val)
{
	const struct ga_fw_field *f = &ga_fw_fields[id];

	if (w < f->words)
		WRITE_ONCE(*(u32 *)(e->bar + GA_FW_BASE + f->offset + 4 * w), val);
}

/* Single-word row @id's bits set to @val, the rest of its word kept. */
static void ga_emu_fw_field(struct ga_emu *e, enum ga_fw_id id, u32 val)
{
	u32 *p = (u32 *)(e->bar + GA_FW_BASE + ga_fw_fields[id].offset);

	WRITE_ONCE(*p, ga_fw_put(id, READ_ONCE(*p), val));
}

/*
 * The identity of an emulated card: the image both emulated cards model
 * (ga_fw_emulated, docs/firmware.md §2.5) with a DNA of its own, as chips
 * have.  Three words follow the module's parameters, as
 * the firmware derives them from the same constants: the GPU-enable bit,
 * the DMA clock (the latency clock) and the PCIe AXI data width (the core's
 * DmaDataBytes).  Uptime follows jiffies.
 */
static void ga_emu_fw_init(struct ga_emu *e, int i)
{
	/* The chip: "GA" and the module's card index. */
	ga_fw_emulated(e->bar + GA_FW_BASE, "gpuasync.ko", 0x4741000000000000ull | i);
	ga_emu_fw_field(e, GA_FW_GPU_ENABLE, emulate_gpu_en);
	ga_emu_fw_field(e, GA_FW_DMA_CLOCK_HZ, GA_EMU_CLOCK_HZ);
	ga_emu_fw_field(e, GA_FW_PCIE_AXI_DATA_BYTES, emulate_dma_data_bytes);
	ga_emu_fw_field(e, GA_FW_MEMORY_MAP_VERSION, emulate_map_version);
	ga_emu_fw_field(e, GA_FW_GEN_SYSMON, emulate_sysmon);
	e->born = jiffies;
	/* The block exists where the map places it and the image built it;
	 * its family is the board type's (KCU1500: UltraScale). */
	e->has_sysmon = emulate_sysmon && ga_memmap_has_sysmon(emulate_map_version) &&
			ga_sysmon_family_of(ga_fw_image_word(ga_fw_fields[GA_FW_HARDWARE_TYPE].offset)) >= 0;
	if (e->has_sysmon)
		ga_sysmon_init(&e->sysmon, e->bar + GA_SYSMON_BASE,
			       ga_sysmon_family_of(ga_fw_image_word(
				       ga_fw_fields[GA_FW_HARDWARE_TYPE].offset)));
}

/* ---- model environment --------------------------------------------------- */

/*
 * The card's DMA: the stub's "GPU memory" (its bus addresses, whether
 * handed out by nvidia_p2p or by its dma-buf exporter), else system memory
 * inside a window of a dma-buf buffer (udmabuf).  Real GPU memory is not
 * reachable from an emulated card.
 */
static int ga_emu_dma(struct ga_emu *e, u64 bus, void *data, u32 len, bool to_bus)
{
#ifdef GA_P2P_STUB
	if (!nv_p2p_stub_dma(bus, data, len, to_bus))
		return 0;
#endif
	return ga_dmabuf_card_dma(e->card, bus, data, len, to_bus);
}

static int ga_emu_dma_write(void *ctx, uint64_t bus, const void *src, uint32_t len)
{
	return ga_emu_dma(ctx, bus, (void *)src, len, true);
}

static int ga_emu_dma_read(void *ctx, uint64_t bus, void *dst, uint32_t len)
{
	return ga_emu_dma(ctx, bus, dst, len, false);
}

/*
 * The model's clock (latency counters, stream monitor rates), read a few
 * times per frame.  local_clock() is the CPU's TSC, where ktime_get_ns()
 * reads the clocksource, which in a VM without a stable TSC is the HPET: a
 * device access, about 40% of the card's time per frame under QEMU TCG.
 * local_clock() may differ between CPUs by a little (it is kept within a
 * tick of the timekeeping clock), so it is made monotonic here; the model
 * calls this only under model_lock.
 */
static uint64_t ga_emu_now_ns(void *ctx)
{
	struct ga_emu *e = ctx;
	u64 t = local_clock();

	if (t < e->clock_ns)
		t = e->clock_ns;
	e->clock_ns = t;
	return t;
}

static void ga_emu_frame_out(void *ctx, const void *data, uint32_t len)
{
	struct ga_emu *e = ctx;
	const u8 *p = data;
	u32 sum = 0, i;

	for (i = 0; i < len; i++)
		sum += p[i];
	e->tx_frames++;
	e->tx_last_len = len;
	e->tx_last_sum = sum;
	if (emulate_upstream && !ga_prbs_check(data, len, NULL)) {
		e->tx_prbs_errors++;
		pr_info_ratelimited("%s: GPU->FPGA frame of %u bytes is not PRBS\n",
				    e->card->name, len);
	}
}

static void *ga_emu_scratch(void *ctx, uint32_t len)
{
	struct ga_emu *e = ctx;

	return len <= GA_EMU_SCRATCH ? e->scratch : NULL;
}

static void ga_emu_fill_prbs(void *ctx, void *dst, uint32_t len)
{
	ga_prbs_fill(dst, len, ((struct ga_emu *)ctx)->up_seq);
}

/*
 * emulate_upstream's source: one frame per tick while the engine can take
 * it, as long as write_max_size says, 0 standing for 4096 and 64 KiB at
 * most, as upstream's emulator sizes them (its tools' per-frame work, and
 * so their timing, assumes frames of at most 64 KiB).
 */
#define GA_EMU_UPSTREAM_MAX_FRAME 65536u
/*
 * The source starts this many ticks after the write engine goes on: the
 * tools switch the engine on and only then clear their buffers' size words
 * and re-arm (dmaGpuToggleTest's resume), so a frame sent at once would be
 * wiped before they look (1% of 7.5 toggle runs stalled that way, where an
 * enable ioctl made the card act at once).  Upstream's emulator gets the
 * same grace from its tick phase, by chance.
 */
#define GA_EMU_UPSTREAM_START_TICKS 5
static void ga_emu_up_event(struct ga_emu *e, char what, unsigned int idx, u32 val)
{
	unsigned int k = e->up_log_n++ % ARRAY_SIZE(e->up_log);

	e->up_log[k].tick = e->ticks;
	e->up_log[k].what = what;
	e->up_log[k].idx = idx;
	e->up_log[k].val = val;
}

static void ga_emu_upstream_tick(struct ga_emu *e)
{
	struct ga_model *m = e->m;
	u32 off, size = 0, db;

	BUILD_BUG_ON(GA_EMU_UPSTREAM_MAX_FRAME > GA_EMU_SCRATCH);
	/* Deadtime ends when the consumer clears the size word, the engine
	 * goes off, or the buffer goes away (never read a stale address). */
	if (e->up_busy &&
	    (!m->write_enabled || ga_model_buf_addr(m, true, e->up_busy_index) != e->up_busy_base ||
	     ga_emu_dma_read(e, e->up_busy_base + GA_HDR_SIZE_OFFSET, &db, sizeof(db)) || !db)) {
		e->up_busy = false;
		ga_emu_up_event(e, m->write_enabled ? 'r' : 'o', e->up_busy_index, 0);
	}
	if (!m->write_enabled && e->up_on_tick) {
		e->up_on_tick = 0;
		ga_emu_up_event(e, 'd', 0, 0);
	} else if (m->write_enabled && !e->up_on_tick) {
		e->up_on_tick = e->ticks + 1;
		ga_emu_up_event(e, 'e', 0, 0);
	}
	if (e->up_busy || !ga_model_write_ready(m) ||
	    e->ticks + 1 < e->up_on_tick + GA_EMU_UPSTREAM_START_TICKS)
		return;
	if (!ga_reg_offset(GA_REG_WRITE_MAX_SIZE, m->layout, m->p.version, 0, m->p.max_buffers,
			   &off))
		size = ga_reg_field_get(GA_REG_WRITE_MAX_SIZE, m->layout, ga_model_reg_read(m, off));
	size = min_t(u32, size ? size : 4096, GA_EMU_UPSTREAM_MAX_FRAME);
	if (ga_model_push_fill(m, size, 0x02, 0, ga_emu_fill_prbs, e) != GA_PUSH_DELIVERED)
		return;
	ga_emu_up_event(e, 'F', m->last.index, e->up_seq);
	e->up_seq++;
	e->up_frames++;
	e->up_busy_index = m->last.index;
	e->up_busy_base = ga_model_buf_addr(m, true, m->last.index);
	e->up_busy = e->up_busy_base != 0;
}

/* A frame the input stream offered the model, by what became of it.
 * Locking: model_lock held. */
static void ga_emu_tally(struct ga_emu *e, enum ga_model_push r)
{
	if (r == GA_PUSH_DELIVERED) {
		e->delivered++;
		e->overflowed += e->m->last.overflow;
	} else if (r == GA_PUSH_DROPPED) {
		e->dropped++;
	} else if (r != GA_PUSH_NO_BUFFER) {
		e->diverted++;
	}
}

/*
 * The frame generator: up to @max of the frames left, while they are
 * delivered, dropped or diverted; stops at backpressure (no armed buffer:
 * the frame waits for an arm).  Locking: model_lock held.
 */
static void ga_emu_generate(struct ga_emu *e, unsigned int max)
{
	enum ga_model_push r;
	u8 *p;
	u32 k, n;

	lockdep_assert_held(&e->model_lock);
	for (; max && e->gen_left; max--) {
		/*
		 * The payload: the frame's sequence number, then (seq + i)
		 * bytes.  Those repeat every 256, so it is the ramp from byte
		 * (seq & 0xff) on, with the sequence number in its first
		 * bytes for this frame only: the model copies it straight
		 * from there, no fill per frame.
		 */
		p = e->ramp + (e->gen_seq & 0xff);
		n = min_t(u32, e->gen_size, sizeof(e->gen_seq));
		memcpy(p, &e->gen_seq, n);
		r = ga_model_push(e->m, p, e->gen_size, e->gen_user, 0);
		for (k = 0; k < n; k++)
			p[k] = (u8)((e->gen_seq & 0xff) + k);
		if (r == GA_PUSH_NO_BUFFER)
			break;
		ga_emu_tally(e, r);
		e->gen_left--;
		e->gen_seq++;
	}
}

/* ---- stores through the mapping ------------------------------------------ */

/*
 * Only a word that differs from what the card left is seen: a store of the
 * value already there, or a second store to a word before the next look,
 * is not, as the model itself misses them, except on the control page,
 * whose stores are each looked at as they land (ga_emu_stored).  A look
 * opens every model_lock section that may change registers (driver
 * writes, ticks); ga_emu_settle() closes it, so the card's own changes
 * are never counted.  While a trapped store is in flight, a changed word
 * of the control page is taken in but left for ga_emu_stored to count
 * (@stored: the caller is it), so a tick between the store and its
 * handler cannot count it a second time.  Returns the words counted.
 * Locking: model_lock held.
 */
static unsigned int ga_emu_look(struct ga_emu *e, bool stored)
{
	const u32 *core = e->bar + ga_core_offset;
	bool trapped = stored || atomic_read(&e->trap.pending);
	unsigned int n = 0;
	unsigned long w;
	u32 v;

	for_each_set_bit(w, e->watched, GA_CORE_SIZE / 4) {
		v = READ_ONCE(core[w]);
		if (v == e->shadow[w])
			continue;
		e->shadow[w] = v;
		if (!trapped || ((ga_core_offset + w * 4) & PAGE_MASK) != e->trap.ctl_page)
			n++;
	}
	e->mapped_reg_writes += n;
	return n;
}

static void ga_emu_settle(struct ga_emu *e)
{
	const u32 *core = e->bar + ga_core_offset;
	unsigned long w;

	for_each_set_bit(w, e->watched, GA_CORE_SIZE / 4)
		e->shadow[w] = READ_ONCE(core[w]);
}

/* Every word the register table names on this card. */
static void ga_emu_watch(struct ga_emu *e)
{
	const struct ga_model *m = e->m;
	unsigned int id, i, n;
	u32 off;

	for (id = 0; id < GA_REG_COUNT; id++) {
		n = ga_regs[id].array == GA_ARRAY_NONE ? 1 : m->p.max_buffers;
		for (i = 0; i < n; i++)
			if (!ga_reg_offset(id, m->layout, m->p.version, i, m->p.max_buffers, &off))
				__set_bit(off / 4, e->watched);
	}
	ga_emu_settle(e);
}

/*
 * A store through a user mapping to the control page has landed (the
 * task's single-step trap, ga_emu_trap.c): the firmware acts on it now,
 * so the model plays it before the task's next store.  Counted once, even
 * when it changed nothing; a system call's stores into the page (the
 * kernel writing for read()) count once together.
 */
static void ga_emu_stored(struct ga_emu_trap *t, u32 off)
{
	struct ga_emu *e = container_of(t, struct ga_emu, trap);

	mutex_lock(&e->model_lock);
	ga_emu_look(e, true);
	e->mapped_reg_writes++;
	e->trapped_stores++;
	ga_model_poll(e->m);
	ga_emu_settle(e);
	mutex_unlock(&e->model_lock);
	WRITE_ONCE(e->kick, true); /* frames that wait for it go now */
	wake_up(&e->wq);
}

/* ---- card ops ------------------------------------------------------------ */

static bool ga_emu_in_core(u32 off)
{
	return off >= ga_core_offset && off < ga_core_offset + GA_CORE_SIZE;
}

static u32 ga_emu_read32(struct ga_card *card, u32 off)
{
	struct ga_emu *e = card->priv;
	u32 v;

	if (!ga_emu_in_core(off))
		return READ_ONCE(*(u32 *)(e->bar + off));
	mutex_lock(&e->model_lock);
	v = ga_model_reg_read(e->m, off - ga_core_offset);
	mutex_unlock(&e->model_lock);
	return v;
}

static void ga_emu_write32(struct ga_card *card, u32 off, u32 val)
{
	struct ga_emu *e = card->priv;
	bool quiet = false;

	if (!ga_emu_in_core(off)) {
		u32 *w = (u32 *)(e->bar + off), mask;

		/* AxiVersion keeps a write only in its read-write words
		 * (ScratchPad), as the card; SysMon only in its limits;
		 * the rest is plain memory. */
		if (off >= GA_SYSMON_BASE && off < GA_SYSMON_BASE + GA_SYSMON_SIZE) {
			mutex_lock(&e->model_lock);
			if (e->has_sysmon)
				ga_sysmon_write(&e->sysmon, off - GA_SYSMON_BASE, val);
			mutex_unlock(&e->model_lock);
		} else if (off < GA_FW_BASE || off >= GA_FW_BASE + GA_FW_SIZE) {
			WRITE_ONCE(*w, val);
		} else {
			mask = ga_fw_write_mask(off - GA_FW_BASE);
			if (mask)
				WRITE_ONCE(*w, (READ_ONCE(*w) & ~mask) | (val & mask));
		}
		return;
	}
	off -= ga_core_offset;
	mutex_lock(&e->model_lock);
	ga_emu_look(e, false);
	ga_model_reg_write(e->m, off, val);
	/*
	 * An arm (the driver's GPU_Set_Write_Enable, GA_Arm_Buffers or a
	 * register write) lets the generated frames that wait for it go at
	 * once, in the writer's context, as the firmware acts on the write: no
	 * wake-up and hand-over to the card's thread per frame.  Bounded; the
	 * thread is kicked for the rest, and not at all when the frames took
	 * every armed buffer (its tick would find nothing to do for this write).
	 */
	if (off >= e->free_first && off < e->free_end && e->gen_left &&
	    ga_model_write_ready(e->m)) {
		ga_emu_generate(e, 16);
		quiet = !ga_model_write_ready(e->m);
	}
	ga_emu_settle(e);
	mutex_unlock(&e->model_lock);
	if (quiet)
		return;
	WRITE_ONCE(e->kick, true);
	wake_up(&e->wq);
}

/* Both words under one model_lock hold: the model never sees half. */
static void ga_emu_write64(struct ga_card *card, u32 off, u64 val)
{
	struct ga_emu *e = card->priv;

	if (!ga_emu_in_core(off) || !ga_emu_in_core(off + 4)) {
		ga_emu_write32(card, off, lower_32_bits(val));
		ga_emu_write32(card, off + 4, upper_32_bits(val));
		return;
	}
	mutex_lock(&e->model_lock);
	ga_emu_look(e, false);
	ga_model_reg_write(e->m, off - ga_core_offset, lower_32_bits(val));
	ga_model_reg_write(e->m, off + 4 - ga_core_offset, upper_32_bits(val));
	ga_emu_settle(e);
	mutex_unlock(&e->model_lock);
}

static int ga_emu_mmap(struct ga_card *card, struct vm_area_struct *vma, u64 bar_off)
{
	struct ga_emu *e = card->priv;

	return ga_emu_trap_mmap(&e->trap, vma, bar_off);
}

static void ga_emu_dma_barrier(struct ga_card *card)
{
	struct ga_emu *e = card->priv;

	/* The model's DMA runs to completion under model_lock. */
	mutex_lock(&e->model_lock);
	mutex_unlock(&e->model_lock);
}

static void ga_emu_stop(struct ga_card *card)
{
	struct ga_emu *e = card->priv;

	if (e->thread) {
		kthread_stop(e->thread);
		e->thread = NULL;
	}
}

static void ga_emu_free(struct ga_emu *e)
{
	if (e->pdev)
		platform_device_unregister(e->pdev);
	bitmap_free(e->watched);
	vfree(e->shadow);
	vfree(e->ramp);
	vfree(e->replay);
	vfree(e->scratch);
	kvfree(e->m);
	vfree(e->bar);
	kfree(e);
}

static void ga_emu_destroy(struct ga_card *card)
{
	ga_emu_free(card->priv);
}

/* The emulated card's sysfs attributes (below), only in its directory. */
static const struct attribute_group ga_emu_group;

static const struct ga_card_ops ga_emu_ops = {
	.read32 = ga_emu_read32,
	.write32 = ga_emu_write32,
	.write64 = ga_emu_write64,
	.mmap = ga_emu_mmap,
	.dma_barrier = ga_emu_dma_barrier,
	.stop = ga_emu_stop,
	.destroy = ga_emu_destroy,
	.group = &ga_emu_group,
};

/* The same without the barrier: exercises the fixed wait. */
static const struct ga_card_ops ga_emu_ops_nobarrier = {
	.read32 = ga_emu_read32,
	.write32 = ga_emu_write32,
	.write64 = ga_emu_write64,
	.mmap = ga_emu_mmap,
	.stop = ga_emu_stop,
	.destroy = ga_emu_destroy,
	.group = &ga_emu_group,
};

/* ---- the firmware's clock ------------------------------------------------ */

static int ga_emu_thread(void *data)
{
	struct ga_emu *e = data;
	bool kicked;

	while (!kthread_should_stop()) {
		kicked = READ_ONCE(e->kick);
		WRITE_ONCE(e->kick, false);
		/*
		 * A timer tick that finds the model busy (a driver call acting
		 * on it, sending generated frames) comes again one tick later:
		 * waiting for the lock would take a CPU from its holder, which
		 * in a VM is a vCPU the host may have to share.  A kick waits.
		 */
		if (kicked)
			mutex_lock(&e->model_lock);
		else if (!mutex_trylock(&e->model_lock))
			goto sleep;
		ga_emu_look(e, false);
		ga_model_poll(e->m);
		if (emulate_upstream)
			ga_emu_upstream_tick(e);
		e->ticks++;
		ga_emu_fw_set(e, GA_FW_UPTIME, 0, (jiffies - e->born) / HZ);
		/* A bounded burst per tick keeps register access responsive. */
		ga_emu_generate(e, 64);
		ga_emu_settle(e);
		mutex_unlock(&e->model_lock);
		ga_emu_trap_reap();
sleep:
		/* An hrtimer, not jiffies: a tick is emulate_poll_us whatever HZ is. */
		wait_event_interruptible_hrtimeout(e->wq, READ_ONCE(e->kick) || kthread_should_stop(),
						   ns_to_ktime((u64)max(emulate_poll_us, 10u) * 1000));
	}
	return 0;
}

/* ---- sysfs (emulated cards only) ------------------------------------------ */

static struct ga_emu *ga_emu_of(struct device *dev)
{
	struct ga_card *card = dev_get_drvdata(dev);

	return card->priv;
}

/* Show one u64/u32 field of struct ga_emu under model_lock. */
#define GA_EMU_SHOW(field)                                                                         \
	static ssize_t field##_show(struct device *dev, struct device_attribute *attr, char *buf) \
	{                                                                                          \
		struct ga_emu *e = ga_emu_of(dev);                                                 \
		unsigned long long v;                                                              \
	\
		mutex_lock(&e->model_lock);                                                        \
		v = e->field;                                                                      \
		mutex_unlock(&e->model_lock);                                                      \
		return sysfs_emit(buf, "%llu\n", v);                                               \
	}

GA_EMU_SHOW(delivered)
static DEVICE_ATTR_RO(delivered);
GA_EMU_SHOW(dropped)
static DEVICE_ATTR_RO(dropped);
GA_EMU_SHOW(overflowed)
static DEVICE_ATTR_RO(overflowed);
GA_EMU_SHOW(diverted)
static DEVICE_ATTR_RO(diverted);
GA_EMU_SHOW(tx_frames)
static DEVICE_ATTR_RO(tx_frames);
GA_EMU_SHOW(ticks)
static DEVICE_ATTR_RO(ticks);
GA_EMU_SHOW(up_frames)
static DEVICE_ATTR_RO(up_frames);
GA_EMU_SHOW(mapped_reg_writes)
static DEVICE_ATTR_RO(mapped_reg_writes);
GA_EMU_SHOW(trapped_stores)
static DEVICE_ATTR_RO(trapped_stores);
GA_EMU_SHOW(tx_prbs_errors)
static DEVICE_ATTR_RO(tx_prbs_errors);

/* The write engine's 0->1 transitions the card saw (trapped stores are
 * played one by one, so a back-to-back 0 then 1 counts). */
static ssize_t write_rises_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_emu *e = ga_emu_of(dev);
	u32 v;

	mutex_lock(&e->model_lock);
	v = e->m->write_rises;
	mutex_unlock(&e->model_lock);
	return sysfs_emit(buf, "%u\n", v);
}
static DEVICE_ATTR_RO(write_rises);


/* Upstream mode's source, for a tool that waits in vain: engine, ring
 * position, the first buffers' free-list state and size words, deadtime. */
static ssize_t up_state_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_emu *e = ga_emu_of(dev);
	struct ga_model *m = e->m;
	unsigned int i, n;
	int len;

	mutex_lock(&e->model_lock);
	n = min_t(unsigned int, m->p.max_buffers, 8);
	len = sysfs_emit(buf, "write_enabled=%d index=%u count=%u busy=%d busy_index=%u",
			 m->write_enabled, m->write_index, m->write_count, e->up_busy,
			 e->up_busy_index);
	len += sysfs_emit_at(buf, len, " armed=");
	for (i = 0; i < n; i++)
		len += sysfs_emit_at(buf, len, "%d", m->armed[i]);
	len += sysfs_emit_at(buf, len, " size_words=");
	for (i = 0; i < n; i++) {
		u64 base = ga_model_buf_addr(m, true, i);
		u32 db = 0;

		if (!base || ga_emu_dma_read(e, base + GA_HDR_SIZE_OFFSET, &db, sizeof(db)))
			len += sysfs_emit_at(buf, len, "%s-", i ? "," : "");
		else
			len += sysfs_emit_at(buf, len, "%s%u", i ? "," : "", db);
	}
	mutex_unlock(&e->model_lock);
	len += sysfs_emit_at(buf, len, "\n");
	return len;
}
static DEVICE_ATTR_RO(up_state);

/* The source's last events, oldest first: "tick:F<buffer>=<sequence>" a
 * frame sent, "r<buffer>" deadtime ended by the consumer, "o<buffer>" by the
 * engine going off, "e0"/"d0" the write engine seen on/off. */
static ssize_t up_log_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_emu *e = ga_emu_of(dev);
	unsigned int i, n, first;
	int len = 0;

	mutex_lock(&e->model_lock);
	n = min_t(unsigned int, e->up_log_n, ARRAY_SIZE(e->up_log));
	first = e->up_log_n - n;
	for (i = 0; i < n; i++) {
		unsigned int k = (first + i) % ARRAY_SIZE(e->up_log);

		len += sysfs_emit_at(buf, len, "%llu:%c%u", e->up_log[k].tick, e->up_log[k].what,
				     e->up_log[k].idx);
		if (e->up_log[k].what == 'F')
			len += sysfs_emit_at(buf, len, "=%u", e->up_log[k].val);
		len += sysfs_emit_at(buf, len, " ");
	}
	mutex_unlock(&e->model_lock);
	len += sysfs_emit_at(buf, len, "\n");
	return len;
}
static DEVICE_ATTR_RO(up_log);

static ssize_t tx_last_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_emu *e = ga_emu_of(dev);
	u32 len, sum;

	mutex_lock(&e->model_lock);
	len = e->tx_last_len;
	sum = e->tx_last_sum;
	mutex_unlock(&e->model_lock);
	return sysfs_emit(buf, "%u %u\n", len, sum);
}
static DEVICE_ATTR_RO(tx_last);

/* A generator setting written: a number in @min..@max (-ERANGE outside it,
 * kstrtou32's errno for what is not one), stored in @field under model_lock. */
static ssize_t ga_emu_store(struct device *dev, const char *buf, size_t count, u32 min, u32 max,
			    u32 *field)
{
	struct ga_emu *e = ga_emu_of(dev);
	u32 n;
	int ret = kstrtou32(buf, 0, &n);

	if (ret)
		return ret;
	if (n < min || n > max)
		return -ERANGE;
	mutex_lock(&e->model_lock);
	*field = n;
	mutex_unlock(&e->model_lock);
	return count;
}

/* Writing N: N frames are left to send (0 cancels); reading: how many are. */
static ssize_t gen_frames_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_emu *e = ga_emu_of(dev);
	u32 v;

	mutex_lock(&e->model_lock);
	v = e->gen_left;
	mutex_unlock(&e->model_lock);
	return sysfs_emit(buf, "%u\n", v);
}

static ssize_t gen_frames_store(struct device *dev, struct device_attribute *attr, const char *buf,
				size_t count)
{
	struct ga_emu *e = ga_emu_of(dev);
	ssize_t ret = ga_emu_store(dev, buf, count, 0, U32_MAX, &e->gen_left);

	if (ret >= 0) {
		WRITE_ONCE(e->kick, true);
		wake_up(&e->wq);
	}
	return ret;
}
static DEVICE_ATTR_RW(gen_frames);

/* A generator setting: shown with @fmt, written as a number in @min..@max. */
#define GA_EMU_SETTING(name, fmt, min, max)                                                        \
	static ssize_t name##_show(struct device *dev, struct device_attribute *attr, char *buf)   \
	{                                                                                          \
		return sysfs_emit(buf, fmt "\n", READ_ONCE(ga_emu_of(dev)->name));                 \
	}                                                                                          \
	static ssize_t name##_store(struct device *dev, struct device_attribute *attr,             \
				    const char *buf, size_t count)                                 \
	{                                                                                          \
		return ga_emu_store(dev, buf, count, min, max, &ga_emu_of(dev)->name);             \
	}                                                                                          \
	static DEVICE_ATTR_RW(name)

/*
 * The FPGA's temperature in millidegrees C, as its SysMon measures it
 * (the test's way to overheat a card): writing sets the temperature
 * register, and highest/lowest and the alarm follow (core/sysmon.c);
 * -ERANGE beyond what the 16-bit code holds, -ENODEV on a card without
 * SysMon.  Reading gives the value the register now holds.
 */
static ssize_t fpga_temperature_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	struct ga_emu *e = ga_emu_of(dev);
	int v = 0;

	mutex_lock(&e->model_lock);
	if (e->has_sysmon)
		v = ga_sysmon_get_milli(&e->sysmon, GA_SYSMON_TEMP);
	mutex_unlock(&e->model_lock);
	return e->has_sysmon ? sysfs_emit(buf, "%d\n", v) : -ENODEV;
}

static ssize_t fpga_temperature_store(struct device *dev, struct device_attribute *attr,
				      const char *buf, size_t count)
{
	struct ga_emu *e = ga_emu_of(dev);
	int mc, ret = kstrtoint(buf, 0, &mc);

	if (ret)
		return ret;
	mutex_lock(&e->model_lock);
	ret = e->has_sysmon ? ga_sysmon_set_temperature_mC(&e->sysmon, mc) : -ENODEV;
	mutex_unlock(&e->model_lock);
	return ret ? ret : count;
}
static DEVICE_ATTR_RW(fpga_temperature);

GA_EMU_SETTING(gen_size, "%u", 1, GA_EMU_SCRATCH);
GA_EMU_SETTING(gen_user, "0x%02x", 0, U8_MAX);

/*
 * A recorded run, frame by frame, from user space (gpuasync-play): the
 * payload is written into replay_frame (binary, at its offsets, in as many
 * writes as it takes; up to GA_EMU_SCRATCH bytes), then "SIZE FIRST LAST"
 * (its length and its descriptor's TUSER bytes) into replay_push, which
 * offers it to the input stream as the generator's frames are: -EAGAIN
 * while no write buffer is armed (the frame waits, as on the card), else
 * taken, and counted as delivered, dropped or diverted.
 */
static ssize_t replay_frame_write(struct file *f, struct kobject *kobj, struct bin_attribute *a,
				  char *buf, loff_t off, size_t count)
{
	struct ga_emu *e = ga_emu_of(kobj_to_dev(kobj));
	ssize_t ret = count;

	mutex_lock(&e->model_lock);
	if (!e->replay)
		e->replay = vmalloc(GA_EMU_SCRATCH);
	if (e->replay)
		memcpy(e->replay + off, buf, count); /* kernfs keeps it below the size */
	else
		ret = -ENOMEM;
	mutex_unlock(&e->model_lock);
	return ret;
}
static BIN_ATTR_WO(replay_frame, GA_EMU_SCRATCH);

static ssize_t replay_push_store(struct device *dev, struct device_attribute *attr,
				 const char *buf, size_t count)
{
	struct ga_emu *e = ga_emu_of(dev);
	enum ga_model_push r;
	u32 len, first, last;
	char end;

	if (sscanf(buf, "%u %i %i %c", &len, &first, &last, &end) != 3 || !len ||
	    len > GA_EMU_SCRATCH || first > U8_MAX || last > U8_MAX)
		return -EINVAL;
	mutex_lock(&e->model_lock);
	if (!e->replay) {
		mutex_unlock(&e->model_lock);
		return -ENODATA; /* nothing was written into replay_frame */
	}
	ga_emu_look(e, false);
	r = ga_model_push(e->m, e->replay, len, first, last);
	ga_emu_tally(e, r);
	if (r != GA_PUSH_NO_BUFFER)
		e->replayed++;
	ga_emu_settle(e);
	mutex_unlock(&e->model_lock);
	return r == GA_PUSH_NO_BUFFER ? -EAGAIN : count;
}
static DEVICE_ATTR_WO(replay_push);

GA_EMU_SHOW(replayed)
static DEVICE_ATTR_RO(replayed);

static struct attribute *ga_emu_attrs[] = {
	&dev_attr_gen_frames.attr,
	&dev_attr_gen_size.attr,
	&dev_attr_gen_user.attr,
	&dev_attr_delivered.attr,
	&dev_attr_dropped.attr,
	&dev_attr_overflowed.attr,
	&dev_attr_diverted.attr,
	&dev_attr_tx_frames.attr,
	&dev_attr_tx_last.attr,
	&dev_attr_ticks.attr,
	&dev_attr_up_frames.attr,
	&dev_attr_up_state.attr,
	&dev_attr_up_log.attr,
	&dev_attr_tx_prbs_errors.attr,
	&dev_attr_mapped_reg_writes.attr,
	&dev_attr_trapped_stores.attr,
	&dev_attr_write_rises.attr,
	&dev_attr_fpga_temperature.attr,
	&dev_attr_replay_push.attr,
	&dev_attr_replayed.attr,
	NULL,
};

static struct bin_attribute *ga_emu_bin_attrs[] = {
	&bin_attr_replay_frame,
	NULL,
};

static const struct attribute_group ga_emu_group = {
	.attrs = ga_emu_attrs,
	.bin_attrs = ga_emu_bin_attrs,
};


/* ---- creation ------------------------------------------------------------ */

static int ga_emu_create(int i)
{
	struct ga_model_params p = {
		.version = emulate_version,
		.latency_legacy = emulate_latency_legacy,
		.max_buffers = emulate_buffers,
		.dma_data_bytes = emulate_dma_data_bytes,
		.clock_hz = GA_EMU_CLOCK_HZ,
		.level_words = emulate_upstream,
	};
	struct ga_model_env env = {
		.dma_write = ga_emu_dma_write,
		.dma_read = ga_emu_dma_read,
		.now_ns = ga_emu_now_ns,
		.frame_out = ga_emu_frame_out,
		.scratch = ga_emu_scratch,
	};
	struct ga_card *card;
	struct ga_emu *e;
	char name[32];
	u32 j;
	int ret;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->bar = vmalloc_user(GA_BAR_SIZE);
	e->m = kvzalloc(sizeof(*e->m), GFP_KERNEL);
	e->scratch = vmalloc(GA_EMU_SCRATCH);
	e->ramp = vmalloc(GA_EMU_RAMP);
	e->watched = bitmap_zalloc(GA_CORE_SIZE / 4, GFP_KERNEL);
	e->shadow = vmalloc(GA_CORE_SIZE);
	if (!e->bar || !e->m || !e->scratch || !e->ramp || !e->watched || !e->shadow) {
		bitmap_free(e->watched);
		vfree(e->shadow);
		vfree(e->ramp);
		vfree(e->scratch);
		kvfree(e->m);
		vfree(e->bar);
		kfree(e);
		return -ENOMEM;
	}
	for (j = 0; j < GA_EMU_RAMP; j++)
		e->ramp[j] = (u8)j;
	mutex_init(&e->model_lock);
	init_waitqueue_head(&e->wq);
	e->gen_size = 4096;
	e->gen_user = 0x02; /* SOF, as the read engine emits */
	ga_emu_fw_init(e, i);
	env.ctx = e;
	ga_model_init(e->m, (volatile uint32_t *)(e->bar + ga_core_offset), &p, &env);
	if (!ga_reg_offset(GA_REG_FREE_LIST, e->m->layout, p.version, 0, p.max_buffers,
			   &e->free_first) &&
	    !ga_reg_offset(GA_REG_FREE_LIST, e->m->layout, p.version, p.max_buffers - 1,
			   p.max_buffers, &e->free_end))
		e->free_end += 4;
	if (emulate_upstream) {
		u32 off;

		if (!ga_reg_offset(GA_REG_WRITE_MAX_SIZE, e->m->layout, p.version, 0, p.max_buffers,
				   &off))
			ga_model_reg_write(e->m, off, 4096);
	}
	ga_emu_watch(e);
	e->trap.bar = e->bar;
	e->trap.bar_pages = GA_BAR_SIZE >> PAGE_SHIFT;
	e->trap.ctl_page = (ga_core_offset + e->m->ctl_offset) & PAGE_MASK;
	e->trap.stored = ga_emu_stored;
	atomic_set(&e->trap.pending, 0);

	e->pdev = platform_device_register_simple("gpuasync_emu", i, NULL, 0);
	ret = IS_ERR(e->pdev) ? PTR_ERR(e->pdev) :
				dma_coerce_mask_and_coherent(&e->pdev->dev, DMA_BIT_MASK(64));
	if (IS_ERR(e->pdev))
		e->pdev = NULL;
	snprintf(name, sizeof(name), "gpuasync_emu%d", i);
	card = ret ? NULL :
		     ga_card_alloc(name, emulate_dma_barrier ? &ga_emu_ops : &ga_emu_ops_nobarrier, e);
	if (!card) {
		ga_emu_free(e);
		return ret ? ret : -ENOMEM;
	}
	card->emulated = true;
	card->dma_dev = &e->pdev->dev;
	e->card = card;
	ret = ga_card_register(card, NULL);
	if (ret)
		goto out_unregister;
	e->thread = kthread_run(ga_emu_thread, e, "%s", name);
	if (IS_ERR(e->thread)) {
		ret = PTR_ERR(e->thread);
		e->thread = NULL;
		goto out_unregister;
	}
	ga_emu_cards[i] = card;
	return 0;

out_unregister:
	ga_card_unregister(card);
	return ret;
}

int ga_emu_create_all(int n)
{
	int i, ret;

	if (!emulate_buffers)
		emulate_buffers = emulate_upstream ? 4 : 16;
	if (!emulate_dma_data_bytes)
		emulate_dma_data_bytes = emulate_upstream ? 16 : 32;
	if (n && emulate_upstream && emulate_version < 4) {
		pr_err("gpuasync: emulate_upstream needs emulate_version 4 or 5\n");
		return -EINVAL;
	}
	/* Versions and buffer limits: versions.def, ga_layout_max_buffers (regs.h). */
	if (n && (!ga_version_find(emulate_version) || emulate_buffers < 1 ||
		  emulate_buffers >
			  ga_layout_max_buffers(ga_layout_for_version(emulate_version, false)) ||
		  emulate_dma_data_bytes < 8 || emulate_dma_data_bytes > 255 ||
		  emulate_map_version < 0 || emulate_map_version > 255)) {
		pr_err("gpuasync: emulate_* parameters out of range\n");
		return -EINVAL;
	}
	if (n) {
		ret = ga_emu_trap_init();
		if (ret)
			return ret;
		ga_emu_trapping = true;
	}
	for (i = 0; i < n; i++) {
		ret = ga_emu_create(i);
		if (ret) {
			ga_emu_destroy_all();
			return ret;
		}
		ga_emu_count = i + 1;
	}
	return 0;
}

void ga_emu_destroy_all(void)
{
	int i;

	for (i = 0; i < GA_EMU_MAX; i++) {
		if (ga_emu_cards[i]) {
			ga_card_unregister(ga_emu_cards[i]);
			ga_emu_cards[i] = NULL;
		}
	}
	ga_emu_count = 0;
	if (ga_emu_trapping)
		ga_emu_trap_exit();
	ga_emu_trapping = false;
}
