/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The GpuAsyncCore firmware model (see ga_model.h for what it covers).
 *
 * Everything here acts on the register block through the register table:
 * a field is read and written with ga_reg_offset() + ga_reg_field_get/set,
 * so the same code serves the V1, V4 and V4-legacy layouts and every
 * version gate (a register absent from the running firmware is simply not
 * touched).  No libc, no kernel API (ga_base.h): part of core/, built into
 * libgpuasync and, as a Kbuild object, into gpuasync.ko.
 *
 * The write engine (FPGA->GPU) runs inside ga_model_push*(), one frame per
 * call; the read engine (GPU->FPGA) runs from ga_model_poll() and after
 * every register write, servicing requests strictly in index order.
 */
#include "ga_model.h"
#include "gpuasync/abi.h"
#include "gpuasync/frame.h"

#define GA_CORE_SIZE_WORDS (GA_CORE_SIZE / 4)

/* The 8-byte descriptor written at buffer offset 0 (AxiWrDesc64) and the
 * read completion block are memory formats, not registers: their layout is
 * GA_HDR_* / GA_READ_DONE_BYTES in gpuasync/abi.h, shared with the library. */

/* 4-bit write return value (axi_write_error_value). */
#define WR_RES_OVERFLOW (1u << 2)
#define WR_RES_TIMEOUT	(1u << 3)
/* AXI SLVERR: what a DMA the host could not perform reports. */
#define AXI_SLVERR 2u

#define NSEC_PER_SEC_U64 1000000000ull

/* ---- register access through the table ---------------------------------- */

/* Resolve every row for the running firmware, as ga_reg_offset() and
 * ga_reg_field_mask() would answer, so that the per-frame accessors below
 * are arithmetic. */
static void reg_cache(struct ga_model *m)
{
	unsigned int id, limit = ga_layout_max_buffers(m->layout);

	if (m->p.max_buffers && m->p.max_buffers < limit)
		limit = m->p.max_buffers;
	m->buf_limit = limit;
	for (id = 0; id < GA_REG_COUNT; id++) {
		const struct ga_reg_loc *l = &ga_regs[id].loc[m->layout];
		struct ga_model_loc *c = &m->loc[id];

		c->present = ga_reg_present(id, m->layout, m->p.version);
		c->offset = l->offset;
		c->stride = ga_regs[id].array == GA_ARRAY_NONE ? 0 : l->stride;
		c->mask = ga_reg_field_mask(id, m->layout);
		c->lsb = l->lsb;
		c->last = c->offset + (c->stride ? (limit - 1) * c->stride : 0);
	}
}

static bool reg_loc(const struct ga_model *m, enum ga_reg_id id, unsigned int index, uint32_t *off)
{
	const struct ga_model_loc *c = &m->loc[id];

	if (!c->present)
		return false;
	if (!c->stride) {
		if (index)
			return false;
		*off = c->offset;
		return true;
	}
	if (index >= m->buf_limit)
		return false;
	*off = c->offset + index * c->stride;
	return true;
}

static bool reg_has(const struct ga_model *m, enum ga_reg_id id)
{
	return m->loc[id].present;
}

static uint32_t field_get(const struct ga_model *m, enum ga_reg_id id, uint32_t word)
{
	return (word & m->loc[id].mask) >> m->loc[id].lsb;
}

static uint32_t field_max(const struct ga_model *m, enum ga_reg_id id)
{
	return m->loc[id].mask >> m->loc[id].lsb;
}

static uint32_t reg_get(const struct ga_model *m, enum ga_reg_id id, unsigned int index)
{
	uint32_t off;

	if (!reg_loc(m, id, index, &off))
		return 0;
	return field_get(m, id, m->regs[off / 4]);
}

/* A field the firmware sets itself; the model never makes a value wider
 * than its field (counters wrap or saturate at field_max, latencies clamp),
 * and one that were would be dropped, as every writer of a field does. */
static void reg_set(struct ga_model *m, enum ga_reg_id id, unsigned int index, uint32_t val)
{
	const struct ga_model_loc *c = &m->loc[id];
	uint32_t off, word;

	if (!reg_loc(m, id, index, &off) || !c->mask)
		return;
	word = m->regs[off / 4];
	if (ga_field_insert(&word, c->mask, c->lsb, val) == 0)
		m->regs[off / 4] = word;
}

/* Every instance of @id: @val, or the field's max when @val is ~0u. */
static void reg_fill(struct ga_model *m, enum ga_reg_id id, uint32_t val)
{
	unsigned int i, n = m->loc[id].stride ? m->buf_limit : 1;

	for (i = 0; i < n; i++)
		reg_set(m, id, i, val == ~0u ? field_max(m, id) : val);
}

/* V4 counters saturate at their maximum; V1 ones wrap (docs/firmware.md §3.1 step 6). */
static bool saturating(const struct ga_model *m)
{
	return m->layout != GA_LAYOUT_V1;
}

static void counter_inc(struct ga_model *m, enum ga_reg_id id)
{
	uint32_t v;

	if (!reg_has(m, id))
		return;
	v = reg_get(m, id, 0);
	if (v == field_max(m, id)) {
		if (saturating(m))
			return;
		v = 0;
	} else {
		v++;
	}
	reg_set(m, id, 0, v);
}

static uint64_t now(struct ga_model *m)
{
	return m->env.now_ns ? m->env.now_ns(m->env.ctx) : 0;
}

/* Nanoseconds -> cycles of clock_hz, without overflowing for long spans. */
static uint64_t ns_to_cycles(const struct ga_model *m, uint64_t ns)
{
	uint64_t hz = m->p.clock_hz;

	return (ns / NSEC_PER_SEC_U64) * hz + (ns % NSEC_PER_SEC_U64) * hz / NSEC_PER_SEC_U64;
}

static uint32_t clamp32(uint64_t v)
{
	return v > 0xFFFFFFFFull ? 0xFFFFFFFFu : (uint32_t)v;
}

/*
 * Record one latency measurement of buffer @index.  V1 keeps one set per
 * buffer, 32-bit wrapping; V4 measures buffer 0 only, saturating, and the
 * current layout adds max/min (ga_reg_offset refuses other indices there).
 */
static void latency_record(struct ga_model *m, enum ga_reg_id cur, enum ga_reg_id max,
			   enum ga_reg_id min, unsigned int index, uint64_t ns)
{
	uint64_t cyc = ns_to_cycles(m, ns);
	uint32_t v = saturating(m) ? clamp32(cyc) : (uint32_t)cyc;
	uint32_t off;

	if (!reg_has(m, cur) || !reg_loc(m, cur, index, &off))
		return;
	reg_set(m, cur, index, v);
	if (reg_has(m, max) && v > reg_get(m, max, index))
		reg_set(m, max, index, v);
	if (reg_has(m, min) && v < reg_get(m, min, index))
		reg_set(m, min, index, v);
}

uint64_t ga_model_buf_addr(const struct ga_model *m, bool write, unsigned int index)
{
	enum ga_reg_id lo = write ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO;
	enum ga_reg_id hi = write ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI;

	return ((uint64_t)reg_get(m, hi, index) << 32) | reg_get(m, lo, index);
}

/* ---- stream monitors ----------------------------------------------------- */

/*
 * The two AxiStreamMonAxiL blocks (FPGA->GPU inbound, GPU->FPGA outbound),
 * as SURF's AxiStreamMon measures: a 64-bit frame count; frame rate and
 * bandwidth (bytes) over one-second windows, a quiet window reading 0;
 * the size of the last frame.  Each max/min pair is re-armed by the
 * monitor's reset: both take the present value, and the first measurement
 * after it sets both, later ones widen them.
 */
struct mon_ids {
	enum ga_reg_id reset, count, rate, rate_max, rate_min, bw, bw_max, bw_min, size, size_max,
		size_min;
};

static const struct mon_ids mon_ids[2] = {
	{GA_REG_IB_MON_RESET, GA_REG_IB_MON_FRAME_COUNT, GA_REG_IB_MON_FRAME_RATE,
	 GA_REG_IB_MON_FRAME_RATE_MAX, GA_REG_IB_MON_FRAME_RATE_MIN, GA_REG_IB_MON_BANDWIDTH,
	 GA_REG_IB_MON_BANDWIDTH_MAX, GA_REG_IB_MON_BANDWIDTH_MIN, GA_REG_IB_MON_FRAME_SIZE,
	 GA_REG_IB_MON_FRAME_SIZE_MAX, GA_REG_IB_MON_FRAME_SIZE_MIN},
	{GA_REG_OB_MON_RESET, GA_REG_OB_MON_FRAME_COUNT, GA_REG_OB_MON_FRAME_RATE,
	 GA_REG_OB_MON_FRAME_RATE_MAX, GA_REG_OB_MON_FRAME_RATE_MIN, GA_REG_OB_MON_BANDWIDTH,
	 GA_REG_OB_MON_BANDWIDTH_MAX, GA_REG_OB_MON_BANDWIDTH_MIN, GA_REG_OB_MON_FRAME_SIZE,
	 GA_REG_OB_MON_FRAME_SIZE_MAX, GA_REG_OB_MON_FRAME_SIZE_MIN},
};

/* 64-bit rows (GA_F_U64): low word at the row's offset, high word next. */
static uint64_t reg_get64(const struct ga_model *m, enum ga_reg_id id)
{
	uint32_t off;

	if (!reg_loc(m, id, 0, &off) || off + 8 > GA_CORE_SIZE)
		return 0;
	return ((uint64_t)m->regs[off / 4 + 1] << 32) | m->regs[off / 4];
}

static void reg_set64(struct ga_model *m, enum ga_reg_id id, uint64_t v)
{
	uint32_t off;

	if (!reg_loc(m, id, 0, &off) || off + 8 > GA_CORE_SIZE)
		return;
	m->regs[off / 4] = (uint32_t)v;
	m->regs[off / 4 + 1] = (uint32_t)(v >> 32);
}

/* One value with its max/min pair; @armed says the pair holds a measurement. */
/*
 * A monitor's config word (its offset 0x00, read-only but for the CntRst
 * bit 0 written): the generics SURF's AxiStreamMonAxiL reports, as the
 * GpuAsyncCore instantiates both monitors (docs/firmware.md §2.4): the
 * stream is as wide as the core's AXI bus (DmaDataBytes), 8 TDEST, TUSER
 * and TID bits, TKEEP_COUNT_C (3), TUSER_FIRST_LAST_C (1), no TSTRB, and
 * not a common clock (bit 0: 0).
 */
static uint32_t monitor_config(const struct ga_model *m)
{
	return (m->p.dma_data_bytes & 0xffu) << 24 | 8u << 20 | 8u << 16 | 8u << 12 | 3u << 8 |
	       1u << 4;
}

static void mon_stat(struct ga_model *m, enum ga_reg_id cur, enum ga_reg_id max, enum ga_reg_id min,
		     bool *armed, uint64_t v)
{
	bool wide = ga_regs[cur].flags & GA_F_U64;
	uint64_t hi, lo;

	if (wide) {
		reg_set64(m, cur, v);
		hi = reg_get64(m, max);
		lo = reg_get64(m, min);
	} else {
		v = clamp32(v);
		reg_set(m, cur, 0, (uint32_t)v);
		hi = reg_get(m, max, 0);
		lo = reg_get(m, min, 0);
	}
	if (!*armed) {
		hi = lo = v;
		*armed = true;
	}
	if (v > hi)
		hi = v;
	if (v < lo)
		lo = v;
	if (wide) {
		reg_set64(m, max, hi);
		reg_set64(m, min, lo);
	} else {
		reg_set(m, max, 0, (uint32_t)hi);
		reg_set(m, min, 0, (uint32_t)lo);
	}
}

static void monitor_reset(struct ga_model *m, unsigned int d)
{
	const struct mon_ids *id = &mon_ids[d];
	struct ga_model_mon *mon = &m->mon[d];

	if (!reg_has(m, id->count))
		return;
	reg_set64(m, id->count, 0);
	/* The pairs restart from the present values, not yet armed. */
	mon->rate_armed = mon->bw_armed = mon->size_armed = false;
	mon_stat(m, id->rate, id->rate_max, id->rate_min, &mon->rate_armed,
		 reg_get(m, id->rate, 0));
	mon_stat(m, id->bw, id->bw_max, id->bw_min, &mon->bw_armed, reg_get64(m, id->bw));
	mon_stat(m, id->size, id->size_max, id->size_min, &mon->size_armed,
		 reg_get(m, id->size, 0));
	mon->rate_armed = mon->bw_armed = mon->size_armed = false;
	mon->t0 = now(m);
	mon->frames = 0;
	mon->bytes = 0;
}

/* @n events in @span ns (>= 1 s) as events per second, without overflow. */
static uint64_t per_second(uint64_t n, uint64_t span)
{
	if (n <= ~0ull / NSEC_PER_SEC_U64)
		return n * NSEC_PER_SEC_U64 / span;
	return n / (span / 1000000u) * 1000u; /* > 18 GB in a window: ms steps */
}

/* Close the one-second window if it has run out. */
static void monitor_tick(struct ga_model *m, unsigned int d, uint64_t t)
{
	const struct mon_ids *id = &mon_ids[d];
	struct ga_model_mon *mon = &m->mon[d];
	uint64_t span;

	if (t < mon->t0) {
		mon->t0 = t;
		return;
	}
	span = t - mon->t0;
	if (span < NSEC_PER_SEC_U64)
		return;
	if (reg_has(m, id->count)) {
		mon_stat(m, id->rate, id->rate_max, id->rate_min, &mon->rate_armed,
			 per_second(mon->frames, span));
		mon_stat(m, id->bw, id->bw_max, id->bw_min, &mon->bw_armed,
			 per_second(mon->bytes, span));
	}
	mon->t0 = t;
	mon->frames = 0;
	mon->bytes = 0;
}

static void monitor_frame(struct ga_model *m, bool inbound, uint32_t size, uint64_t t)
{
	unsigned int d = inbound ? 0 : 1;
	const struct mon_ids *id = &mon_ids[d];
	struct ga_model_mon *mon = &m->mon[d];

	if (!reg_has(m, id->count))
		return;
	reg_set64(m, id->count, reg_get64(m, id->count) + 1);
	mon_stat(m, id->size, id->size_max, id->size_min, &mon->size_armed, size);
	monitor_tick(m, d, t);
	mon->frames++;
	mon->bytes += size;
}

/* ---- free list, watermarks ----------------------------------------------- */

static void write_watermark(struct ga_model *m)
{
	if (reg_has(m, GA_REG_MIN_WRITE_BUFFERS) &&
	    m->free_count < reg_get(m, GA_REG_MIN_WRITE_BUFFERS, 0))
		reg_set(m, GA_REG_MIN_WRITE_BUFFERS, 0, m->free_count);
}

static void read_watermark(struct ga_model *m)
{
	if (reg_has(m, GA_REG_MIN_READ_QUEUE) &&
	    m->read_queue < reg_get(m, GA_REG_MIN_READ_QUEUE, 0))
		reg_set(m, GA_REG_MIN_READ_QUEUE, 0, m->read_queue);
	if (reg_has(m, GA_REG_MAX_READ_QUEUE) &&
	    m->read_queue > reg_get(m, GA_REG_MAX_READ_QUEUE, 0))
		reg_set(m, GA_REG_MAX_READ_QUEUE, 0, m->read_queue);
}

static void recount_free(struct ga_model *m)
{
	unsigned int i;

	m->free_count = 0;
	for (i = 0; i <= m->write_count && i < m->p.max_buffers; i++)
		m->free_count += m->armed[i];
	write_watermark(m);
}

/* A write to free list [i]: the buffer is free again; GPU latency stops. */
static void arm(struct ga_model *m, unsigned int i)
{
	if (i >= m->p.max_buffers)
		return;
	if (m->gpu_valid[i]) {
		latency_record(m, GA_REG_GPU_LATENCY, GA_REG_GPU_LATENCY_MAX,
			       GA_REG_GPU_LATENCY_MIN, i, now(m) - m->gpu_start_ns[i]);
		m->gpu_valid[i] = 0;
	}
	if (!m->armed[i]) {
		m->armed[i] = 1;
		if (i <= m->write_count)
			m->free_count++;
	}
	m->events++;
}

/* The buffer leaves the free list without a frame (withdrawn, removed). */
static void disarm(struct ga_model *m, unsigned int i)
{
	if (!m->armed[i])
		return;
	m->armed[i] = 0;
	if (i <= m->write_count)
		m->free_count--;
	write_watermark(m);
	m->events++;
}

static volatile uint32_t *free_word(struct ga_model *m, unsigned int i)
{
	return &m->regs[(m->free_base + i * m->free_stride) / 4];
}

static volatile uint32_t *rsize_word(struct ga_model *m, unsigned int i)
{
	return &m->regs[(m->rsize_base + i * m->rsize_stride) / 4];
}

/* ---- control word -------------------------------------------------------- */

static void discard_reads(struct ga_model *m)
{
	unsigned int i;

	for (i = 0; i < m->p.max_buffers; i++)
		m->read_pending[i] = 0;
	m->read_queue = 0;
	m->read_index = 0;
	read_watermark(m);
}

/*
 * Act on the control word holding @word (the enables and counts share it):
 * a disabled write engine sits at index 0 with its free list intact; a
 * disabled read engine has no pending requests and sits at index 0.
 * Counts that shrink below the current index wrap it.
 */
static void control_apply(struct ga_model *m, uint32_t word)
{
	bool we = field_get(m, GA_REG_WRITE_ENABLE, word) != 0;
	bool re = field_get(m, GA_REG_READ_ENABLE, word) != 0;
	uint32_t wc = field_get(m, GA_REG_WRITE_COUNT, word);
	uint32_t rc = field_get(m, GA_REG_READ_COUNT, word);

	if (!we)
		m->write_index = 0;
	if (!re && (m->read_queue || m->read_index))
		discard_reads(m);
	if (wc != m->write_count) {
		m->write_count = wc;
		recount_free(m);
	}
	m->read_count = rc;
	if (m->write_index > wc || m->write_index >= m->p.max_buffers)
		m->write_index = 0;
	if (m->read_index > rc || m->read_index >= m->p.max_buffers)
		m->read_index = 0;
	m->write_rises += we && !m->write_enabled;
	m->write_enabled = we;
	m->read_enabled = re;
	/* V5: the engines are idle between calls, so "active" = enabled. */
	reg_set(m, GA_REG_WRITE_ACTIVE, 0, we);
	reg_set(m, GA_REG_READ_ACTIVE, 0, re);
}

void ga_model_ctl_stored(struct ga_model *m, uint32_t val)
{
	struct ga_model_ctl_log *l = &m->ctl;
	uint32_t h = __atomic_load_n(&l->head, __ATOMIC_RELAXED);

	do {
		if (h - __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE) >= GA_MODEL_CTL_LOG) {
			__atomic_add_fetch(&l->lost, 1, __ATOMIC_RELAXED);
			return;
		}
	} while (!__atomic_compare_exchange_n(&l->head, &h, h + 1, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	l->val[h % GA_MODEL_CTL_LOG] = val;
	__atomic_store_n(&l->seq[h % GA_MODEL_CTL_LOG], h + 1, __ATOMIC_RELEASE);
}

/*
 * Follow the control word: first every value a host logged (in order, up
 * to one still being written), then what the word holds now.
 */
static void sync_control(struct ga_model *m)
{
	struct ga_model_ctl_log *l = &m->ctl;
	uint32_t t = l->tail;

	while (__atomic_load_n(&l->seq[t % GA_MODEL_CTL_LOG], __ATOMIC_ACQUIRE) == t + 1) {
		control_apply(m, l->val[t % GA_MODEL_CTL_LOG]);
		__atomic_store_n(&l->tail, ++t, __ATOMIC_RELEASE);
	}
	control_apply(m, m->regs[m->ctl_offset / 4]);
}

/* What count_reset does to each row is in the row's flags (gpuasync/regs.h):
 * cleared fields to 0, running minimums to all ones, watermarks from the
 * present state (the part that is model state, below). */
static void count_reset(struct ga_model *m)
{
	unsigned int id;

	for (id = 0; id < GA_REG_COUNT; id++) {
		if (!reg_has(m, id))
			continue;
		if (ga_regs[id].flags & GA_F_COUNT_CLEARED)
			reg_fill(m, id, 0);
		if (ga_regs[id].flags & GA_F_RUNNING_MIN)
			reg_fill(m, id, ~0u);
	}
	/* Watermarks restart from the present state. */
	reg_set(m, GA_REG_MIN_WRITE_BUFFERS, 0, m->free_count);
	reg_set(m, GA_REG_MIN_READ_QUEUE, 0, m->read_queue);
	reg_set(m, GA_REG_MAX_READ_QUEUE, 0, m->read_queue);
	m->events++;
}

/* Round robin over 0..@count; a count field wider than the ring (the
 * register is 15 bits on V4) still wraps inside the buffers that exist. */
static unsigned int next_index(const struct ga_model *m, unsigned int i, uint32_t count)
{
	return (i >= count || i + 1 >= m->p.max_buffers) ? 0 : i + 1;
}

/* ---- read engine (GPU->FPGA) --------------------------------------------- */

static void queue_read(struct ga_model *m, unsigned int i, uint32_t size)
{
	if (i >= m->p.max_buffers || size == 0)
		return;
	/* A disabled read engine holds no requests (docs/firmware.md §3.3 step 4). */
	if (!m->read_enabled)
		return;
	m->read_len[i] = size;
	if (!m->read_pending[i]) {
		m->read_pending[i] = 1;
		m->read_queue++;
		read_watermark(m);
	}
}

static void cancel_read(struct ga_model *m, unsigned int i)
{
	if (!m->read_pending[i])
		return;
	m->read_pending[i] = 0;
	m->read_queue--;
	read_watermark(m);
}

static void service_read(struct ga_model *m, unsigned int i)
{
	uint32_t len = m->read_len[i];
	uint64_t base = ga_model_buf_addr(m, false, i);
	bool v4 = m->layout != GA_LAYOUT_V1;
	uint64_t t0 = now(m), t1;
	uint32_t result = 0;
	void *data = 0;

	if (m->faults.read_error) {
		m->faults.read_error--;
		result = m->faults.read_error_code & field_max(m, GA_REG_AXI_READ_ERROR_VALUE);
		if (!result)
			result = AXI_SLVERR;
	}
	if (!result) {
		data = m->env.scratch ? m->env.scratch(m->env.ctx, len) : 0;
		if (!data || !m->env.dma_read ||
		    m->env.dma_read(m->env.ctx, base + (v4 ? m->p.dma_data_bytes : 0), data, len))
			result = AXI_SLVERR;
	}
	if (!result && m->env.frame_out)
		m->env.frame_out(m->env.ctx, data, len);
	if (v4) {
		/* Completion block: word 0 = 1, then 12 zero bytes. */
		uint32_t done[GA_READ_DONE_BYTES / 4] = {1, 0, 0, 0};

		if (!m->env.dma_write || m->env.dma_write(m->env.ctx, base, done, sizeof(done)))
			result = result ? result : AXI_SLVERR;
	}
	t1 = now(m);
	if (result) {
		counter_inc(m, GA_REG_AXI_READ_ERROR_COUNT);
		reg_set(m, GA_REG_AXI_READ_ERROR_VALUE, 0, result);
	}
	counter_inc(m, GA_REG_TX_FRAME_COUNT);
	monitor_frame(m, false, len, t1);
	latency_record(m, GA_REG_READ_LATENCY, GA_REG_READ_LATENCY_MAX, GA_REG_READ_LATENCY_MIN, i,
		       t1 - t0);
	if (m->lat_valid[i]) {
		latency_record(m, GA_REG_TOTAL_LATENCY, GA_REG_TOTAL_LATENCY_MAX,
			       GA_REG_TOTAL_LATENCY_MIN, i, t1 - m->lat_start_ns[i]);
		m->lat_valid[i] = 0;
	}
	m->read_pending[i] = 0;
	m->read_queue--;
	if (m->p.level_words)
		__atomic_store_n(rsize_word(m, i), 0, __ATOMIC_RELEASE);
	read_watermark(m);
	m->events++;
}

/* Strict index order: stop at the first index without a request. */
static void run_reads(struct ga_model *m)
{
	unsigned int guard = 0;

	while (m->read_enabled && m->read_pending[m->read_index] && guard++ < m->p.max_buffers) {
		unsigned int i = m->read_index;

		m->read_index = next_index(m, i, m->read_count);
		service_read(m, i);
	}
}

/* ---- write engine (FPGA->GPU) -------------------------------------------- */

static uint32_t write_max(const struct ga_model *m, unsigned int i)
{
	if (reg_has(m, GA_REG_WRITE_MAX_SIZE))
		return reg_get(m, GA_REG_WRITE_MAX_SIZE, 0);
	return reg_get(m, GA_REG_WRITE_SIZE, i);
}

static int dma_out(struct ga_model *m, uint64_t bus, const void *src, uint32_t len)
{
	if (!m->env.dma_write)
		return -1;
	return m->env.dma_write(m->env.ctx, bus, src, len);
}

/* The descriptor: word 0 first, then (after a barrier) the size doorbell,
 * so a consumer that sees the doorbell also sees the rest. */
static int write_header(struct ga_model *m, uint64_t base, uint32_t result, uint32_t size,
			uint8_t fu, uint8_t lu)
{
	const struct ga_header h = {
		.size = size,
		.result = result & GA_HDR_RESULT_MASK,
		.overflow = (result & WR_RES_OVERFLOW) != 0,
		.first_user = fu,
		.last_user = lu,
	};
	uint8_t desc[GA_HDR_BYTES];
	int rc;

	ga_header_encode(&h, desc);
	/* Payload before descriptor: order the stores on weakly ordered CPUs
	 * too (a no-op on x86). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (m->env.dma_write_desc) {
		rc = m->env.dma_write_desc(m->env.ctx, base, desc);
		if (rc <= 0)
			return rc;
	}
	rc = dma_out(m, base + GA_HDR_FLAGS_OFFSET, desc + GA_HDR_FLAGS_OFFSET, 4);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!rc)
		rc = dma_out(m, base + GA_HDR_SIZE_OFFSET, desc + GA_HDR_SIZE_OFFSET, 4);
	return rc;
}

static void write_done(struct ga_model *m, uint32_t result)
{
	counter_inc(m, GA_REG_RX_FRAME_COUNT);
	if (result) {
		counter_inc(m, GA_REG_AXI_WRITE_ERROR_COUNT);
		reg_set(m, GA_REG_AXI_WRITE_ERROR_VALUE, 0, result);
		if (result & WR_RES_TIMEOUT)
			counter_inc(m, GA_REG_AXI_WRITE_TIMEOUT_COUNT);
	}
}

static enum ga_model_push push(struct ga_model *m, const void *payload, uint32_t len, uint8_t fu,
			       uint8_t lu, ga_model_fill_fn fill, void *fill_ctx)
{
	uint64_t t0, t1, base;
	uint32_t max, n, result = 0;
	unsigned int i;
	int rc;

	sync_control(m);
	if (reg_has(m, GA_REG_DEMUX_SELECT) && !reg_get(m, GA_REG_DEMUX_SELECT, 0))
		return GA_PUSH_DIVERTED;
	t0 = now(m);
	if (!m->write_enabled) {
		/* Accepted with "drop": nothing written but the descriptor,
		 * which goes to write address [0] (docs/firmware.md §3.1 steps 2, 5). */
		base = ga_model_buf_addr(m, true, 0);
		if (base && write_header(m, base, 0, len, fu, lu))
			result = AXI_SLVERR;
		write_done(m, result);
		monitor_frame(m, true, len, t0);
		m->last.index = 0;
		m->last.size = len;
		m->last.result = result;
		m->last.overflow = false;
		return GA_PUSH_DROPPED;
	}
	i = m->write_index;
	if (!m->armed[i])
		return GA_PUSH_NO_BUFFER;

	/* Take the buffer off the free list and advance round-robin. */
	m->armed[i] = 0;
	m->free_count--;
	if (m->p.level_words)
		__atomic_store_n(free_word(m, i), 0, __ATOMIC_RELEASE);
	write_watermark(m);
	m->write_index = next_index(m, i, m->write_count);
	m->lat_start_ns[i] = t0;
	m->lat_valid[i] = 1;

	base = ga_model_buf_addr(m, true, i);
	max = write_max(m, i);
	n = len;
	if (n > max) {
		n = max;
		result |= WR_RES_OVERFLOW;
	}
	/* The filler: 0 wrote in place, < 0 failed, > 0 (or none) the copy below. */
	rc = 1;
	if (n && !payload && fill && m->env.dma_write_fill)
		rc = m->env.dma_write_fill(m->env.ctx, base + m->p.dma_data_bytes, n, fill,
					   fill_ctx);
	if (rc <= 0) {
		if (rc)
			result |= AXI_SLVERR;
	} else if (n) {
		const void *src = payload;

		if (!src) {
			void *dst = m->env.scratch ? m->env.scratch(m->env.ctx, n) : 0;

			if (dst && fill)
				fill(fill_ctx, dst, n);
			src = dst;
		}
		if (!src || dma_out(m, base + m->p.dma_data_bytes, src, n))
			result |= AXI_SLVERR;
	}
	if (m->faults.write_error) {
		uint32_t code = m->faults.write_error_code & GA_HDR_RESULT_MASK;

		m->faults.write_error--;
		result |= code ? code : AXI_SLVERR;
	}
	if (m->faults.write_timeout) {
		m->faults.write_timeout--;
		result |= WR_RES_TIMEOUT;
	}
	if (write_header(m, base, result, n, fu, lu))
		result = (result & ~GA_HDR_RESULT_MASK) | AXI_SLVERR;
	t1 = now(m);
	write_done(m, result);
	latency_record(m, GA_REG_WRITE_LATENCY, GA_REG_WRITE_LATENCY_MAX, GA_REG_WRITE_LATENCY_MIN,
		       i, t1 - t0);
	m->gpu_start_ns[i] = t1;
	m->gpu_valid[i] = 1;
	monitor_frame(m, true, len, t1);
	m->last.index = i;
	m->last.size = n;
	m->last.result = result;
	m->last.overflow = (result & WR_RES_OVERFLOW) != 0;
	m->events++;
	return GA_PUSH_DELIVERED;
}

enum ga_model_push ga_model_push(struct ga_model *m, const void *payload, uint32_t len,
				 uint8_t first_user, uint8_t last_user)
{
	return push(m, payload, len, first_user, last_user, 0, 0);
}

enum ga_model_push ga_model_push_fill(struct ga_model *m, uint32_t len, uint8_t first_user,
				      uint8_t last_user, ga_model_fill_fn fill, void *fill_ctx)
{
	return push(m, 0, len, first_user, last_user, fill, fill_ctx);
}

bool ga_model_write_ready(const struct ga_model *m)
{
	return m->write_enabled && m->armed[m->write_index];
}

bool ga_model_reads_pending(const struct ga_model *m)
{
	return m->read_enabled && m->read_pending[m->read_index];
}

/* ---- registers ----------------------------------------------------------- */

int ga_model_init(struct ga_model *m, volatile uint32_t *regs, const struct ga_model_params *p,
		  const struct ga_model_env *env)
{
	unsigned char *raw = (unsigned char *)m;
	unsigned int i, id;
	uint32_t off;

	if (ga_layout_for_version(p->version, p->latency_legacy) == GA_LAYOUT_COUNT)
		return -EINVAL;
	for (i = 0; i < sizeof(*m); i++)
		raw[i] = 0;
	m->regs = regs;
	m->p = *p;
	if (m->p.max_buffers > GA_MODEL_MAX_BUFFERS)
		m->p.max_buffers = GA_MODEL_MAX_BUFFERS;
	if (m->p.max_buffers == 0)
		m->p.max_buffers = 1;
	m->env = *env;
	m->layout = ga_layout_for_version(p->version, p->latency_legacy);
	reg_cache(m);
	for (i = 0; i < GA_CORE_SIZE_WORDS; i++)
		regs[i] = 0;

	/* Identity and reset values. */
	reg_set(m, GA_REG_VERSION, 0, p->version);
	reg_set(m, GA_REG_MAX_BUFFERS, 0, m->p.max_buffers);
	reg_set(m, GA_REG_DMA_DATA_BYTES, 0, p->dma_data_bytes);
	for (i = 0; i < 2; i++)
		if (reg_loc(m, mon_ids[i].reset, 0, &off))
			regs[off / 4] = monitor_config(m);
	for (id = 0; id < GA_REG_COUNT; id++) {
		if (ga_regs[id].flags & GA_F_RESET_ONE)
			reg_fill(m, id, 1);
		if (ga_regs[id].flags & GA_F_RUNNING_MIN)
			reg_fill(m, id, ~0u);
	}

	/* Where poll() looks for writes it cannot see. */
	reg_loc(m, GA_REG_FREE_LIST, 0, &m->free_base);
	reg_loc(m, GA_REG_READ_SIZE, 0, &m->rsize_base);
	m->free_stride = 4;
	m->rsize_stride = 4;
	if (m->p.max_buffers > 1) {
		if (reg_loc(m, GA_REG_FREE_LIST, 1, &off))
			m->free_stride = off - m->free_base;
		if (reg_loc(m, GA_REG_READ_SIZE, 1, &off))
			m->rsize_stride = off - m->rsize_base;
	}
	m->mon[0].t0 = m->mon[1].t0 = now(m);
	/* The enables and counts share one word in every layout (regs.h). */
	m->ctl_offset = m->loc[GA_REG_WRITE_ENABLE].offset;
	static_assert(sizeof(m->ctl.val) / sizeof(m->ctl.val[0]) == GA_MODEL_CTL_LOG,
		      "one sequence word per log slot");
	sync_control(m);
	return 0;
}

uint32_t ga_model_reg_read(struct ga_model *m, uint32_t offset)
{
	if ((offset & 3) || offset >= GA_CORE_SIZE)
		return 0;
	return m->regs[offset / 4];
}

/* Which instance of @id, if any, lives at @offset? */
static bool reg_at(const struct ga_model *m, enum ga_reg_id id, uint32_t offset,
		   unsigned int *index)
{
	const struct ga_model_loc *l = &m->loc[id];
	uint32_t off;
	unsigned int i = 0;

	if (!l->present || offset < l->offset || offset > l->last)
		return false;
	if (l->stride) {
		if ((offset - l->offset) % l->stride)
			return false;
		i = (offset - l->offset) / l->stride;
	}
	if (!reg_loc(m, id, i, &off) || off != offset)
		return false;
	*index = i;
	return true;
}

void ga_model_reg_write(struct ga_model *m, uint32_t offset, uint32_t val)
{
	uint32_t mask = 0, word;
	unsigned int id, i;

	if ((offset & 3) || offset >= GA_CORE_SIZE)
		return;
	for (id = 0; id < GA_REG_COUNT; id++) {
		if (!reg_at(m, id, offset, &i))
			continue;
		switch (id) {
		case GA_REG_FREE_LIST:
			if (m->p.level_words)
				m->regs[offset / 4] = val;
			if (!m->p.level_words || val)
				arm(m, i);
			else
				disarm(m, i);
			break;
		case GA_REG_COUNT_RESET:
			count_reset(m);
			break;
		case GA_REG_IB_MON_RESET:
		case GA_REG_OB_MON_RESET:
			/* The config word's other bits are the monitor's
			 * generics (read-only); bit 0 resets its counters. */
			if (ga_reg_field_get(id, m->layout, val))
				monitor_reset(m, id == GA_REG_IB_MON_RESET ? 0 : 1);
			break;
		case GA_REG_READ_SIZE:
			/* Taken at once, reading back 0, unless level_words. */
			sync_control(m);
			if (m->p.level_words) {
				m->regs[offset / 4] = val;
				val = ga_reg_field_get(id, m->layout, val);
				if (!val)
					cancel_read(m, i);
			}
			queue_read(m, i, val);
			break;
		case GA_REG_WRITE_MAX_SIZE:
			mask |= ga_reg_field_mask(id, m->layout);
			if (ga_reg_field_get(id, m->layout, val) == 0)
				val = ga_reg_field_set(id, m->layout, val, 1);
			break;
		default:
			if (ga_regs[id].access == GA_RW)
				mask |= ga_reg_field_mask(id, m->layout);
			break;
		}
	}
	if (mask) {
		word = m->regs[offset / 4];
		m->regs[offset / 4] = (word & ~mask) | (val & mask);
	}
	sync_control(m);
	run_reads(m);
}

/* Atomically take a word another agent wrote, leaving 0 behind. */
static uint32_t take(volatile uint32_t *w)
{
	if (!*w)
		return 0;
	return __atomic_exchange_n(w, 0, __ATOMIC_ACQ_REL);
}

/* level_words: the engine state follows what the words say now. */
static void poll_levels(struct ga_model *m, unsigned int i)
{
	uint32_t v = __atomic_load_n(free_word(m, i), __ATOMIC_ACQUIRE);

	if (v && !m->armed[i])
		arm(m, i);
	else if (!v && m->armed[i])
		disarm(m, i);
	v = ga_reg_field_get(GA_REG_READ_SIZE, m->layout,
			     __atomic_load_n(rsize_word(m, i), __ATOMIC_ACQUIRE));
	if (v && !m->read_pending[i])
		queue_read(m, i, v);
	else if (!v)
		cancel_read(m, i);
}

void ga_model_poll(struct ga_model *m)
{
	uint32_t off, v, cfg;
	unsigned int i;

	sync_control(m);
	if (reg_loc(m, GA_REG_WRITE_MAX_SIZE, 0, &off) && reg_get(m, GA_REG_WRITE_MAX_SIZE, 0) == 0)
		reg_set(m, GA_REG_WRITE_MAX_SIZE, 0, 1);
	if (reg_loc(m, GA_REG_COUNT_RESET, 0, &off) && take(&m->regs[off / 4]))
		count_reset(m);
	/* A store through the mapping over a monitor's config word: bit 0
	 * resets it, and the word reads its generics again. */
	cfg = monitor_config(m);
	for (i = 0; i < 2; i++)
		if (reg_loc(m, mon_ids[i].reset, 0, &off) && m->regs[off / 4] != cfg &&
		    ga_reg_field_get(mon_ids[i].reset, m->layout,
				     __atomic_exchange_n(&m->regs[off / 4], cfg, __ATOMIC_ACQ_REL)))
			monitor_reset(m, i);
	for (i = 0; i < m->p.max_buffers; i++) {
		if (m->p.level_words) {
			poll_levels(m, i);
			continue;
		}
		if (take(free_word(m, i)))
			arm(m, i);
		v = take(rsize_word(m, i));
		if (v)
			queue_read(m, i, ga_reg_field_get(GA_REG_READ_SIZE, m->layout, v));
	}
	run_reads(m);
	monitor_tick(m, 0, now(m));
	monitor_tick(m, 1, now(m));
}

void ga_model_forget(struct ga_model *m, bool write, unsigned int index)
{
	if (index >= m->p.max_buffers)
		return;
	if (write) {
		if (m->armed[index] && index <= m->write_count)
			m->free_count--;
		m->armed[index] = 0;
		m->lat_valid[index] = 0;
		m->gpu_valid[index] = 0;
		if (m->p.level_words)
			*free_word(m, index) = 0;
	} else {
		if (m->read_pending[index]) {
			m->read_pending[index] = 0;
			m->read_queue--;
		}
		if (m->p.level_words)
			*rsize_word(m, index) = 0;
	}
}
