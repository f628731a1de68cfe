// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The firmware model alone (core/ga_model.c) over a host environment
 * made of plain arrays: "bus" memory is one byte array at a fake bus base,
 * the clock is a variable the test moves (each DMA also advances it by a
 * fixed step, so latencies come out exact), and frames the card sends are
 * recorded.  Every test body runs for each firmware flavour in FLAVOURS
 * (versions 1-3 on the V1 map, 4 current and legacy latency block, 5),
 * using the register table for every location, as the model does.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/flavours.h"
#include "common/run_suite.h"
#include "ga_model.h"
#include "gpuasync/abi.h"
#include "gpuasync/regs.h"

/* Every firmware version, from the table (common/flavours.h). */
static int NFLAV;

#define BUS_BASE    0x7000000000ull
#define BUF_SIZE    4096u
#define NBUF	    4
#define DDB	    32u
#define MEM_SIZE    (2 * NBUF * BUF_SIZE)
#define CLOCK_HZ    250000000ull /* 4 ns per cycle */
#define DMA_STEP_NS 40ull	 /* each DMA call takes 40 ns = 10 cycles */

struct host {
	uint8_t mem[MEM_SIZE];
	uint64_t t;
	unsigned int dma_writes, dma_reads;
	uint64_t last_write_bus;
	bool fail_dma;
	uint8_t scratch[MEM_SIZE];
	uint8_t out[8][BUF_SIZE];
	uint32_t out_len[8];
	unsigned int outs;
	unsigned int fills;
};

static struct host *h;
static struct ga_model *m;
static uint32_t regs[GA_CORE_SIZE / 4];
static const struct flavour *fl;
static bool level; /* the next setup_flavour() models upstream's emulator words */

static int env_write(void *ctx, uint64_t bus, const void *src, uint32_t len)
{
	struct host *hh = ctx;

	hh->t += DMA_STEP_NS;
	if (hh->fail_dma || bus < BUS_BASE || bus + len > BUS_BASE + MEM_SIZE)
		return -14;
	memcpy(hh->mem + (bus - BUS_BASE), src, len);
	hh->dma_writes++;
	hh->last_write_bus = bus;
	return 0;
}

static int env_read(void *ctx, uint64_t bus, void *dst, uint32_t len)
{
	struct host *hh = ctx;

	hh->t += DMA_STEP_NS;
	if (hh->fail_dma || bus < BUS_BASE || bus + len > BUS_BASE + MEM_SIZE)
		return -14;
	memcpy(dst, hh->mem + (bus - BUS_BASE), len);
	hh->dma_reads++;
	return 0;
}

static uint64_t env_now(void *ctx)
{
	return ((struct host *)ctx)->t;
}

static void env_out(void *ctx, const void *data, uint32_t len)
{
	struct host *hh = ctx;
	unsigned int k = hh->outs++ % 8;

	hh->out_len[k] = len;
	memcpy(hh->out[k], data, len < BUF_SIZE ? len : BUF_SIZE);
}

static void *env_scratch(void *ctx, uint32_t len)
{
	return len <= MEM_SIZE ? ((struct host *)ctx)->scratch : NULL;
}

/* ---- helpers over the table --------------------------------------------- */

static enum ga_layout layout(void)
{
	return ga_layout_for_version(fl->version, fl->legacy);
}

static bool has(enum ga_reg_id id)
{
	return ga_reg_present(id, layout(), fl->version);
}

static uint32_t off(enum ga_reg_id id, unsigned int i)
{
	uint32_t o = 0;

	ck_assert_int_eq(ga_reg_offset(id, layout(), fl->version, i, NBUF * 2, &o), 0);
	return o;
}

static uint32_t rd(enum ga_reg_id id, unsigned int i)
{
	return ga_reg_field_get(id, layout(), ga_model_reg_read(m, off(id, i)));
}

static int io_read(void *ctx, uint32_t o, uint32_t *word)
{
	(void)ctx;
	*word = ga_model_reg_read(m, o);
	return 0;
}

static int io_write(void *ctx, uint32_t o, uint32_t word)
{
	(void)ctx;
	ga_model_reg_write(m, o, word);
	return 0;
}

/* A register write as the driver does it: core's field accessor. */
static void wr(enum ga_reg_id id, unsigned int i, uint32_t v)
{
	const struct ga_reg_io io = {NULL, io_read, io_write};

	ck_assert_int_eq(ga_field_write(&io, id, layout(), off(id, i), v), 0);
}

/* A write the host does not see (a GPU writing the shared block). */
static void shm_wr(enum ga_reg_id id, unsigned int i, uint32_t v)
{
	regs[off(id, i) / 4] = v;
}

static uint64_t wbus(unsigned int i)
{
	return BUS_BASE + (uint64_t)i * BUF_SIZE;
}

static uint64_t rbus(unsigned int i)
{
	return BUS_BASE + (uint64_t)(NBUF + i) * BUF_SIZE;
}

static uint8_t *wmem(unsigned int i)
{
	return h->mem + (wbus(i) - BUS_BASE);
}

static uint8_t *rmem(unsigned int i)
{
	return h->mem + (rbus(i) - BUS_BASE);
}

static uint32_t word(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static void setup_flavour(int flav)
{
	struct ga_model_params p = {
		.version = FLAVOURS[flav].version,
		.latency_legacy = FLAVOURS[flav].legacy,
		.max_buffers = NBUF * 2,
		.dma_data_bytes = DDB,
		.clock_hz = CLOCK_HZ,
		.level_words = level,
	};
	struct ga_model_env env;

	fl = &FLAVOURS[flav];
	h = calloc(1, sizeof(*h));
	m = calloc(1, sizeof(*m));
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(m);
	memset(&env, 0, sizeof(env));
	env.ctx = h;
	env.dma_write = env_write;
	env.dma_read = env_read;
	env.now_ns = env_now;
	env.frame_out = env_out;
	env.scratch = env_scratch;
	h->t = 1000000;
	memset(h->mem, 0xEE, sizeof(h->mem));
	ga_model_init(m, regs, &p, &env);
}

/* Program NBUF write and read buffers the way the driver does. */
static void add_buffers(uint32_t max_payload)
{
	unsigned int i;

	for (i = 0; i < NBUF; i++) {
		wr(GA_REG_WRITE_ADDR_LO, i, (uint32_t)wbus(i));
		wr(GA_REG_WRITE_ADDR_HI, i, (uint32_t)(wbus(i) >> 32));
		wr(GA_REG_READ_ADDR_LO, i, (uint32_t)rbus(i));
		wr(GA_REG_READ_ADDR_HI, i, (uint32_t)(rbus(i) >> 32));
		if (has(GA_REG_WRITE_SIZE))
			wr(GA_REG_WRITE_SIZE, i, max_payload);
	}
	if (has(GA_REG_WRITE_MAX_SIZE))
		wr(GA_REG_WRITE_MAX_SIZE, 0, max_payload);
	wr(GA_REG_WRITE_COUNT, 0, NBUF - 1);
	wr(GA_REG_READ_COUNT, 0, NBUF - 1);
}

static void teardown(void)
{
	free(m);
	free(h);
	m = NULL;
	h = NULL;
}

static void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	uint32_t k;

	for (k = 0; k < len; k++)
		p[k] = (uint8_t)(seed + k * 7);
}

static enum ga_model_push push_n(uint32_t len, uint8_t seed)
{
	static uint8_t buf[BUF_SIZE * 2];

	fill(buf, len, seed);
	return ga_model_push(m, buf, len, 0x02, 0x01);
}

/* ---- tests --------------------------------------------------------------- */

/* Power-on values, typed from docs/firmware.md (§2.3 0x38 demux select,
 * §2.4 0x60 write max size, §3.4 latency minimums), not from the table. */
static const struct {
	const char *name;
	uint32_t value;
} power_on[] = {
	{"demux_select", 1},
	{"write_max_size", 1},
	{"total_latency_min", 0xFFFFFFFFu},
	{"gpu_latency_min", 0xFFFFFFFFu},
	{"write_latency_min", 0xFFFFFFFFu},
	{"read_latency_min", 0xFFFFFFFFu},
};

START_TEST(test_power_on)
{
	setup_flavour(_i);
	/* Every field but the identity ones and those above powers on as 0. */
	for (unsigned int id = 0; id < GA_REG_COUNT; id++) {
		uint32_t expect = 0;

		if (!has(id) || ga_regs[id].flags & (GA_F_WIDE_ID | GA_F_PLUS_ONE))
			continue;
		for (unsigned int k = 0; k < sizeof(power_on) / sizeof(power_on[0]); k++)
			if (!strcmp(power_on[k].name, ga_regs[id].name))
				expect = power_on[k].value;
		ck_assert_msg(rd(id, 0) == expect, "%s powers on as %u, not %u", ga_regs[id].name,
			      rd(id, 0), expect);
	}
	ck_assert_uint_eq(rd(GA_REG_VERSION, 0), fl->version);
	ck_assert_uint_eq(rd(GA_REG_MAX_BUFFERS, 0), NBUF * 2);
	ck_assert_uint_eq(rd(GA_REG_DMA_DATA_BYTES, 0), DDB);
	if (has(GA_REG_DEMUX_SELECT))
		ck_assert_uint_eq(rd(GA_REG_DEMUX_SELECT, 0), 1);
	if (has(GA_REG_WRITE_MAX_SIZE)) {
		ck_assert_uint_eq(rd(GA_REG_WRITE_MAX_SIZE, 0), 1);
		wr(GA_REG_WRITE_MAX_SIZE, 0, 0); /* 0 is stored as 1 */
		ck_assert_uint_eq(rd(GA_REG_WRITE_MAX_SIZE, 0), 1);
		shm_wr(GA_REG_WRITE_MAX_SIZE, 0, 0);
		ga_model_poll(m);
		ck_assert_uint_eq(rd(GA_REG_WRITE_MAX_SIZE, 0), 1);
		wr(GA_REG_WRITE_MAX_SIZE, 0, 777);
		ck_assert_uint_eq(rd(GA_REG_WRITE_MAX_SIZE, 0), 777);
	}
	if (has(GA_REG_TOTAL_LATENCY_MIN))
		ck_assert_uint_eq(rd(GA_REG_TOTAL_LATENCY_MIN, 0), 0xFFFFFFFFu);
	/* Read-only fields ignore writes; RW fields next to them take them. */
	ga_model_reg_write(m, off(GA_REG_RX_FRAME_COUNT, 0), 55);
	ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 0);
	wr(GA_REG_AW_CACHE, 0, 0xA);
	ck_assert_uint_eq(rd(GA_REG_AW_CACHE, 0), 0xA);
	ck_assert_uint_eq(rd(GA_REG_DMA_DATA_BYTES, 0), DDB);
	ga_model_reg_write(m, off(GA_REG_DMA_DATA_BYTES, 0), 0);
	ck_assert_uint_eq(rd(GA_REG_DMA_DATA_BYTES, 0), DDB);
	ck_assert_uint_eq(rd(GA_REG_AW_CACHE, 0), 0);
	/* Registers of newer firmware are not there at all. */
	ck_assert(has(GA_REG_AXI_WRITE_TIMEOUT_COUNT) == (fl->version >= 2));
	ck_assert(has(GA_REG_MIN_WRITE_BUFFERS) == (fl->version >= 3));
	ck_assert(has(GA_REG_WRITE_ACTIVE) == (fl->version >= 5));
	teardown();
}
END_TEST

START_TEST(test_round_robin)
{
	unsigned int k, i;

	setup_flavour(_i);
	add_buffers(BUF_SIZE - DDB);
	for (i = 0; i < NBUF; i++)
		wr(GA_REG_FREE_LIST, i, 1);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	for (k = 0; k < 3 * NBUF + 1; k++) {
		uint32_t len = 100 + k * 13;
		uint8_t expect[BUF_SIZE];
		unsigned int idx = k % NBUF;
		uint8_t *b = wmem(idx);

		memset(b, 0xEE, BUF_SIZE);
		ck_assert_int_eq(push_n(len, (uint8_t)k), GA_PUSH_DELIVERED);
		/* Doorbell (size at +4) was the very last write. */
		ck_assert_uint_eq(h->last_write_bus, wbus(idx) + 4);
		ck_assert_uint_eq(word(b + 4), len);
		/* first_user 31:24, last_user 23:16, result/overflow/cont 0 */
		ck_assert_uint_eq(word(b), 0x02010000u);
		/* Bytes 8..DDB-1 untouched, payload at +DDB, nothing after it. */
		for (i = 8; i < DDB; i++)
			ck_assert_uint_eq(b[i], 0xEE);
		fill(expect, len, (uint8_t)k);
		ck_assert_mem_eq(b + DDB, expect, len);
		ck_assert_uint_eq(b[DDB + len], 0xEE);
		ck_assert_uint_eq(m->last.index, idx);
		/* Consumer: clear the doorbell, re-arm through shared memory. */
		memset(b + 4, 0, 4);
		shm_wr(GA_REG_FREE_LIST, idx, 1);
		ga_model_poll(m);
		ck_assert_uint_eq(regs[off(GA_REG_FREE_LIST, idx) / 4], 0);
	}
	ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 3 * NBUF + 1);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 0);
	/* Shrinking the ring: count 1 -> indices 0, 1 only. */
	wr(GA_REG_WRITE_COUNT, 0, 1);
	for (k = 0; k < 4; k++) {
		unsigned int idx = (k + 1) % 2; /* the index had advanced to 1 */

		ck_assert_int_eq(push_n(64, 0), GA_PUSH_DELIVERED);
		ck_assert_uint_eq(m->last.index, idx);
		wr(GA_REG_FREE_LIST, idx, 1);
	}
	teardown();
}
END_TEST

START_TEST(test_backpressure)
{
	setup_flavour(_i);
	add_buffers(BUF_SIZE - DDB);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	ck_assert_int_eq(push_n(10, 0), GA_PUSH_NO_BUFFER);
	wr(GA_REG_FREE_LIST, 0, 1);
	wr(GA_REG_FREE_LIST, 1, 1);
	ck_assert_int_eq(push_n(10, 0), GA_PUSH_DELIVERED);
	ck_assert_int_eq(push_n(10, 0), GA_PUSH_DELIVERED);
	/* Buffer 3 armed but 2 is next: strict order, the frame waits. */
	wr(GA_REG_FREE_LIST, 3, 1);
	ck_assert(!ga_model_write_ready(m));
	ck_assert_int_eq(push_n(10, 0), GA_PUSH_NO_BUFFER);
	ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 2);
	shm_wr(GA_REG_FREE_LIST, 2, 0x1234);
	ga_model_poll(m);
	ck_assert(ga_model_write_ready(m));
	ck_assert_int_eq(push_n(10, 0), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(m->last.index, 2);
	ck_assert_int_eq(push_n(10, 0), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(m->last.index, 3);
	ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 4);
	teardown();
}
END_TEST

START_TEST(test_drop_disabled)
{
	uint8_t *b0;
	unsigned int i;

	setup_flavour(_i);
	add_buffers(BUF_SIZE - DDB);
	b0 = wmem(0);
	for (i = 0; i < NBUF; i++)
		wr(GA_REG_FREE_LIST, i, 1);
	/* Engine off: dropped, counted, the header still lands at address 0. */
	ck_assert_int_eq(push_n(300, 1), GA_PUSH_DROPPED);
	ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 1);
	ck_assert_uint_eq(word(b0 + 4), 300);
	ck_assert_uint_eq(word(b0), 0x02010000u);
	ck_assert_uint_eq(b0[DDB], 0xEE); /* no payload */
	/* The free list survived: enabling delivers to 0, 1, ... */
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	ck_assert_int_eq(push_n(20, 2), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(m->last.index, 0);
	ck_assert_int_eq(push_n(20, 2), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(m->last.index, 1);
	/* Disable: index back to 0, free bits of 2 and 3 kept. */
	wr(GA_REG_WRITE_ENABLE, 0, 0);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	ck_assert_int_eq(push_n(20, 2), GA_PUSH_NO_BUFFER); /* 0 not re-armed */
	wr(GA_REG_FREE_LIST, 0, 1);
	ck_assert_int_eq(push_n(20, 2), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(m->last.index, 0);
	ck_assert_int_eq(push_n(20, 2), GA_PUSH_NO_BUFFER); /* 1 not re-armed */
	/* Cleared address registers: a drop writes nowhere and is no error. */
	wr(GA_REG_WRITE_ENABLE, 0, 0);
	wr(GA_REG_WRITE_ADDR_LO, 0, 0);
	wr(GA_REG_WRITE_ADDR_HI, 0, 0);
	i = h->dma_writes;
	ck_assert_int_eq(push_n(20, 2), GA_PUSH_DROPPED);
	ck_assert_uint_eq(h->dma_writes, i);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 0);
	ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 5);
	/* Demux to the CPU path (version 2+): the core never sees the frame. */
	if (has(GA_REG_DEMUX_SELECT)) {
		wr(GA_REG_DEMUX_SELECT, 0, 0);
		ck_assert_int_eq(push_n(20, 2), GA_PUSH_DIVERTED);
		ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 5);
	}
	teardown();
}
END_TEST

START_TEST(test_overflow)
{
	uint8_t *b;

	setup_flavour(_i);
	add_buffers(100);
	wr(GA_REG_FREE_LIST, 0, 1);
	wr(GA_REG_FREE_LIST, 1, 1);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	b = wmem(0);
	ck_assert_int_eq(push_n(150, 3), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(word(b + 4), 100);
	ck_assert_uint_eq(word(b) & 0xF, 0x4); /* overflow bit 2 */
	ck_assert_uint_eq(b[DDB + 99], (uint8_t)(3 + 99 * 7));
	ck_assert_uint_eq(b[DDB + 100], 0xEE);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 1);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_VALUE, 0), 0x4);
	ck_assert(m->last.overflow);
	/* Exactly max: no overflow. */
	ck_assert_int_eq(push_n(100, 3), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(word(wmem(1)) & 0xF, 0);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 1);
	teardown();
}
END_TEST

START_TEST(test_faults)
{
	unsigned int i;

	setup_flavour(_i);
	add_buffers(BUF_SIZE - DDB);
	for (i = 0; i < NBUF; i++)
		wr(GA_REG_FREE_LIST, i, 1);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	m->faults.write_error = 1;
	m->faults.write_error_code = 3;
	ck_assert_int_eq(push_n(40, 0), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(word(wmem(0)) & 0xF, 3);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 1);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_VALUE, 0), 3);
	m->faults.write_timeout = 1;
	ck_assert_int_eq(push_n(40, 0), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(word(wmem(1)) & 0xF, 0); /* header carries no timeout bit */
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 2);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_VALUE, 0), 0x8);
	if (has(GA_REG_AXI_WRITE_TIMEOUT_COUNT))
		ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_TIMEOUT_COUNT, 0), 1);
	/* Faults are consumed: the next frame is clean. */
	ck_assert_int_eq(push_n(40, 0), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 2);
	/* A DMA the host cannot perform: SLVERR. */
	h->fail_dma = true;
	ck_assert_int_eq(push_n(40, 0), GA_PUSH_DELIVERED);
	h->fail_dma = false;
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 3);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_VALUE, 0), 2);

	/* Read error: counted, completion still written, no frame out. */
	wr(GA_REG_READ_ENABLE, 0, 1);
	m->faults.read_error = 1;
	m->faults.read_error_code = 5;
	memset(rmem(0), 0xAA, 16);
	wr(GA_REG_READ_SIZE, 0, 64);
	ck_assert_uint_eq(h->outs, 0);
	ck_assert_uint_eq(rd(GA_REG_AXI_READ_ERROR_COUNT, 0), 1);
	ck_assert_uint_eq(rd(GA_REG_AXI_READ_ERROR_VALUE, 0), 5);
	ck_assert_uint_eq(rd(GA_REG_TX_FRAME_COUNT, 0), 1);
	if (layout() != GA_LAYOUT_V1)
		ck_assert_uint_eq(word(rmem(0)), 1);
	wr(GA_REG_READ_SIZE, 1, 64);
	ck_assert_uint_eq(h->outs, 1);
	ck_assert_uint_eq(rd(GA_REG_AXI_READ_ERROR_COUNT, 0), 1);
	teardown();
}
END_TEST

START_TEST(test_saturation)
{
	uint32_t o;

	setup_flavour(_i);
	add_buffers(BUF_SIZE - DDB);
	/* Counters near the top (set behind the model's back). */
	o = off(GA_REG_RX_FRAME_COUNT, 0);
	regs[o / 4] = 0xFFFFFFFFu;
	o = off(GA_REG_AXI_WRITE_ERROR_COUNT, 0);
	regs[o / 4] = 0xFFFFFFFFu;
	m->faults.write_error = 1;
	m->faults.write_error_code = 1;
	ck_assert_int_eq(push_n(40, 0), GA_PUSH_DROPPED); /* engine off */
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	wr(GA_REG_FREE_LIST, 0, 1);
	ck_assert_int_eq(push_n(40, 0), GA_PUSH_DELIVERED);
	if (layout() == GA_LAYOUT_V1) {
		/* V1 counters wrap: the drop took rx to 0, the frame to 1. */
		ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 1);
		ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 0);
	} else {
		ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 0xFFFFFFFFu);
		ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 0xFFFFFFFFu);
	}
	teardown();
}
END_TEST

START_TEST(test_count_reset)
{
	unsigned int i;

	setup_flavour(_i);
	add_buffers(50);
	for (i = 0; i < NBUF; i++)
		wr(GA_REG_FREE_LIST, i, 1);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	wr(GA_REG_READ_ENABLE, 0, 1);
	m->faults.write_timeout = 1;
	ck_assert_int_eq(push_n(80, 0), GA_PUSH_DELIVERED); /* overflow + timeout */
	wr(GA_REG_READ_SIZE, 0, 16); /* also completes buffer 0's total latency */
	m->faults.read_error = 1;
	m->faults.read_error_code = 2;
	wr(GA_REG_READ_SIZE, 1, 16);
	ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 1);
	ck_assert_uint_eq(rd(GA_REG_TX_FRAME_COUNT, 0), 2);
	ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_VALUE, 0), 0xC);
	if (has(GA_REG_TOTAL_LATENCY_MAX))
		ck_assert_uint_ne(rd(GA_REG_TOTAL_LATENCY_MAX, 0), 0);
	if (has(GA_REG_WRITE_LATENCY_MIN))
		ck_assert_uint_ne(rd(GA_REG_WRITE_LATENCY_MIN, 0), 0xFFFFFFFFu);

	/* First through the host-visible path, then through shared memory. */
	for (i = 0; i < 2; i++) {
		if (i == 0) {
			wr(GA_REG_COUNT_RESET, 0, 1);
		} else {
			shm_wr(GA_REG_COUNT_RESET, 0, 0xFFFFFFFFu);
			ga_model_poll(m);
		}
		ck_assert_uint_eq(regs[off(GA_REG_COUNT_RESET, 0) / 4], 0);
		ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 0);
		ck_assert_uint_eq(rd(GA_REG_TX_FRAME_COUNT, 0), 0);
		ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 0);
		ck_assert_uint_eq(rd(GA_REG_AXI_READ_ERROR_COUNT, 0), 0);
		ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_ERROR_VALUE, 0), 0);
		ck_assert_uint_eq(rd(GA_REG_AXI_READ_ERROR_VALUE, 0), 0);
		if (has(GA_REG_AXI_WRITE_TIMEOUT_COUNT))
			ck_assert_uint_eq(rd(GA_REG_AXI_WRITE_TIMEOUT_COUNT, 0), 0);
		/* docs/firmware.md §3.4: V4 max/min back to 0 / 0xFFFFFFFF. */
		if (has(GA_REG_TOTAL_LATENCY_MAX)) {
			ck_assert_uint_eq(rd(GA_REG_TOTAL_LATENCY_MAX, 0), 0);
			ck_assert_uint_eq(rd(GA_REG_GPU_LATENCY_MAX, 0), 0);
			ck_assert_uint_eq(rd(GA_REG_WRITE_LATENCY_MAX, 0), 0);
			ck_assert_uint_eq(rd(GA_REG_READ_LATENCY_MAX, 0), 0);
			ck_assert_uint_eq(rd(GA_REG_WRITE_LATENCY_MIN, 0), 0xFFFFFFFFu);
			ck_assert_uint_eq(rd(GA_REG_TOTAL_LATENCY_MIN, 0), 0xFFFFFFFFu);
			ck_assert_uint_eq(rd(GA_REG_GPU_LATENCY_MIN, 0), 0xFFFFFFFFu);
			ck_assert_uint_eq(rd(GA_REG_READ_LATENCY_MIN, 0), 0xFFFFFFFFu);
		}
		/* Free list and engine state are not counters. */
		ck_assert_uint_eq(m->free_count, NBUF - 1);
		ck_assert_uint_eq(rd(GA_REG_WRITE_ENABLE, 0), 1);
		ck_assert_int_eq(push_n(8, 0), GA_PUSH_DELIVERED);
		ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 1);
		wr(GA_REG_FREE_LIST, m->last.index, 1);
	}
	teardown();
}
END_TEST

START_TEST(test_watermarks)
{
	unsigned int i;

	setup_flavour(_i);
	add_buffers(BUF_SIZE - DDB);
	if (!has(GA_REG_MIN_WRITE_BUFFERS)) {
		ck_assert(!has(GA_REG_MIN_READ_QUEUE) && !has(GA_REG_MAX_READ_QUEUE));
		teardown();
		return;
	}
	ck_assert_uint_eq(rd(GA_REG_MIN_WRITE_BUFFERS, 0), 0); /* reset value */
	for (i = 0; i < NBUF; i++)
		wr(GA_REG_FREE_LIST, i, 1);
	wr(GA_REG_COUNT_RESET, 0, 1);
	ck_assert_uint_eq(rd(GA_REG_MIN_WRITE_BUFFERS, 0), NBUF);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(push_n(8, 0), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(rd(GA_REG_MIN_WRITE_BUFFERS, 0), 1);
	for (i = 0; i < 3; i++)
		wr(GA_REG_FREE_LIST, i, 1);
	ck_assert_uint_eq(rd(GA_REG_MIN_WRITE_BUFFERS, 0), 1); /* fewest, not current */
	/* Arming beyond write_count does not count as a free buffer. */
	wr(GA_REG_WRITE_COUNT, 0, 1);
	ck_assert_uint_eq(m->free_count, 2);

	/* Read queue: 1 and 2 wait behind 0 (strict order). */
	wr(GA_REG_READ_ENABLE, 0, 1);
	wr(GA_REG_READ_SIZE, 1, 8);
	wr(GA_REG_READ_SIZE, 2, 8);
	ck_assert_uint_eq(m->read_queue, 2);
	wr(GA_REG_COUNT_RESET, 0, 1);
	if (has(GA_REG_MAX_READ_QUEUE))
		ck_assert_uint_eq(rd(GA_REG_MAX_READ_QUEUE, 0), 2);
	if (has(GA_REG_MIN_READ_QUEUE))
		ck_assert_uint_eq(rd(GA_REG_MIN_READ_QUEUE, 0), 2);
	wr(GA_REG_READ_SIZE, 3, 8);
	wr(GA_REG_READ_SIZE, 0, 8);
	ck_assert_uint_eq(m->read_queue, 0);
	ck_assert_uint_eq(h->outs, 4);
	if (has(GA_REG_MAX_READ_QUEUE))
		ck_assert_uint_eq(rd(GA_REG_MAX_READ_QUEUE, 0), 4);
	if (has(GA_REG_MIN_READ_QUEUE))
		ck_assert_uint_eq(rd(GA_REG_MIN_READ_QUEUE, 0), 0);
	teardown();
}
END_TEST

static uint32_t cycles(uint64_t ns)
{
	return (uint32_t)(ns * CLOCK_HZ / 1000000000ull);
}

START_TEST(test_latency)
{
	uint64_t t_accept, t_done, t_done0 = 0;
	unsigned int writes, i;
	bool v1;

	setup_flavour(_i);
	v1 = layout() == GA_LAYOUT_V1;
	add_buffers(BUF_SIZE - DDB);
	for (i = 0; i < NBUF; i++)
		wr(GA_REG_FREE_LIST, i, 1);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	wr(GA_REG_READ_ENABLE, 0, 1);

	/* Write latency: acceptance to the DMA's return (DMA_STEP_NS each). */
	for (i = 0; i < 2; i++) {
		writes = h->dma_writes;
		t_accept = h->t;
		ck_assert_int_eq(push_n(64, 0), GA_PUSH_DELIVERED);
		t_done = h->t;
		if (i == 0)
			t_done0 = t_done;
		ck_assert_uint_eq(t_done - t_accept, (h->dma_writes - writes) * DMA_STEP_NS);
		if (i == 0 || v1)
			ck_assert_uint_eq(rd(GA_REG_WRITE_LATENCY, i), cycles(t_done - t_accept));
	}
	/* V4 measures buffer 0 only: there are no registers for buffer 1. */
	if (!v1) {
		uint32_t o;

		ck_assert_int_eq(
			ga_reg_offset(GA_REG_WRITE_LATENCY, layout(), fl->version, 1, NBUF, &o),
			-ERANGE);
	}
	/* GPU latency: write done until the consumer re-arms it. */
	h->t += 10000;
	wr(GA_REG_FREE_LIST, 0, 1);
	ck_assert_uint_eq(rd(GA_REG_GPU_LATENCY, 0), cycles(h->t - t_done0));
	h->t += 2000;
	wr(GA_REG_FREE_LIST, 1, 1);
	if (v1)
		ck_assert_uint_eq(rd(GA_REG_GPU_LATENCY, 1), cycles(h->t - t_done));
	else /* buffer 1 is not measured: buffer 0's value stands */
		ck_assert_uint_eq(rd(GA_REG_GPU_LATENCY, 0), cycles(h->t - 2000 - t_done0));
	/* Total latency: accepted into 0 until the read of read buffer 0 is done. */
	h->t += 5000;
	{
		uint64_t t_read = h->t;
		wr(GA_REG_READ_SIZE, 0, 32);
		if (has(GA_REG_READ_LATENCY))
			ck_assert_uint_eq(rd(GA_REG_READ_LATENCY, 0), cycles(h->t - t_read));
	}
	if (has(GA_REG_TOTAL_LATENCY_MAX)) {
		ck_assert_uint_eq(rd(GA_REG_TOTAL_LATENCY_MAX, 0), rd(GA_REG_TOTAL_LATENCY, 0));
		ck_assert_uint_eq(rd(GA_REG_TOTAL_LATENCY_MIN, 0), rd(GA_REG_TOTAL_LATENCY, 0));
		ck_assert_uint_eq(rd(GA_REG_WRITE_LATENCY_MAX, 0), rd(GA_REG_WRITE_LATENCY, 0));
	}
	ck_assert_uint_gt(rd(GA_REG_TOTAL_LATENCY, 0), cycles(17000));
	teardown();
}
END_TEST

START_TEST(test_total_latency_exact)
{
	uint64_t t0;

	setup_flavour(_i);
	add_buffers(BUF_SIZE - DDB);
	wr(GA_REG_FREE_LIST, 0, 1);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	wr(GA_REG_READ_ENABLE, 0, 1);
	t0 = h->t;
	ck_assert_int_eq(push_n(64, 0), GA_PUSH_DELIVERED);
	h->t += 123456;
	wr(GA_REG_READ_SIZE, 0, 8);
	ck_assert_uint_eq(rd(GA_REG_TOTAL_LATENCY, 0), cycles(h->t - t0));
	/* Legacy V4 places it at the driver header's offset. */
	if (fl->legacy)
		ck_assert_uint_eq(off(GA_REG_TOTAL_LATENCY, 0), 0x48);
	teardown();
}
END_TEST

START_TEST(test_read_path)
{
	unsigned int i, base;
	bool v4;

	setup_flavour(_i);
	v4 = layout() != GA_LAYOUT_V1;
	base = v4 ? DDB : 0;
	add_buffers(BUF_SIZE - DDB);
	for (i = 0; i < NBUF; i++) {
		fill(rmem(i) + base, 200, (uint8_t)(0x40 + i));
		if (v4)
			memset(rmem(i), 0x55, 16); /* "in flight" marker of the app */
	}
	/* Read engine off: requests are discarded. */
	wr(GA_REG_READ_SIZE, 0, 10);
	ck_assert_uint_eq(m->read_queue, 0);
	wr(GA_REG_READ_ENABLE, 0, 1);
	ck_assert_uint_eq(h->outs, 0);
	/* Out of order requests are served in index order. */
	wr(GA_REG_READ_SIZE, 2, 30);
	shm_wr(GA_REG_READ_SIZE, 1, 20);
	ga_model_poll(m);
	ck_assert_uint_eq(regs[off(GA_REG_READ_SIZE, 1) / 4], 0);
	ck_assert_uint_eq(h->outs, 0);
	ck_assert(!ga_model_reads_pending(m));
	wr(GA_REG_READ_SIZE, 0, 10);
	ck_assert_uint_eq(h->outs, 3);
	for (i = 0; i < 3; i++) {
		uint8_t expect[64];

		ck_assert_uint_eq(h->out_len[i], 10 + 10 * i);
		fill(expect, h->out_len[i], (uint8_t)(0x40 + i));
		ck_assert_mem_eq(h->out[i], expect, h->out_len[i]);
		if (v4) {
			ck_assert_uint_eq(word(rmem(i)), 1);
			ck_assert_uint_eq(word(rmem(i) + 4), 0);
			ck_assert_uint_eq(word(rmem(i) + 8), 0);
			ck_assert_uint_eq(word(rmem(i) + 12), 0);
		} else {
			ck_assert_uint_eq(rmem(i)[0], (uint8_t)(0x40 + i)); /* untouched */
		}
	}
	ck_assert_uint_eq(rd(GA_REG_TX_FRAME_COUNT, 0), 3);
	if (has(GA_REG_OB_MON_FRAME_COUNT)) {
		ck_assert_uint_eq(rd(GA_REG_OB_MON_FRAME_COUNT, 0), 3);
		ck_assert_uint_eq(rd(GA_REG_OB_MON_FRAME_SIZE, 0), 30);
	}
	/* Wrap: 3 then 0. */
	wr(GA_REG_READ_SIZE, 0, 5);
	ck_assert_uint_eq(h->outs, 3);
	wr(GA_REG_READ_SIZE, 3, 5);
	ck_assert_uint_eq(h->outs, 5);
	/* read_enable = 0 discards pending requests and resets the index. */
	wr(GA_REG_READ_SIZE, 2, 5);
	ck_assert_uint_eq(m->read_queue, 1);
	wr(GA_REG_READ_ENABLE, 0, 0);
	ck_assert_uint_eq(m->read_queue, 0);
	wr(GA_REG_READ_ENABLE, 0, 1);
	wr(GA_REG_READ_SIZE, 0, 7);
	ck_assert_uint_eq(h->outs, 6);
	ck_assert_uint_eq(h->out_len[5], 7);
	teardown();
}
END_TEST

/* level_words (upstream's emulator): the words are the state, 0 withdraws,
 * the engine clears a word when it uses it; strobes (the firmware) differ. */
START_TEST(test_level_words)
{
	uint32_t fw0, rs0;

	level = true;
	setup_flavour(_i);
	level = false;
	fw0 = off(GA_REG_FREE_LIST, 0);
	rs0 = off(GA_REG_READ_SIZE, 0);
	add_buffers(BUF_SIZE - DDB);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	wr(GA_REG_READ_ENABLE, 0, 1);
	/* Disarming before the engine looked: no frame. */
	shm_wr(GA_REG_FREE_LIST, 0, 1);
	shm_wr(GA_REG_FREE_LIST, 0, 0);
	ga_model_poll(m);
	ck_assert_int_eq(push_n(64, 1), GA_PUSH_NO_BUFFER);
	/* Armed: the word stays 1 until the frame lands, then reads 0. */
	shm_wr(GA_REG_FREE_LIST, 0, 1);
	ga_model_poll(m);
	ck_assert_uint_eq(regs[fw0 / 4], 1);
	ck_assert_int_eq(push_n(64, 1), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(regs[fw0 / 4], 0);
	ck_assert_uint_eq(word(wmem(0) + 4), 64);
	/* An armed buffer withdrawn by a seen write of 0. */
	wr(GA_REG_FREE_LIST, 1, 1);
	ck_assert(ga_model_write_ready(m));
	wr(GA_REG_FREE_LIST, 1, 0);
	ck_assert(!ga_model_write_ready(m));
	ga_model_poll(m);
	ck_assert_int_eq(push_n(64, 2), GA_PUSH_NO_BUFFER);
	ck_assert_uint_eq(rd(GA_REG_RX_FRAME_COUNT, 0), 1);
	/* Read requests: 0 asks for nothing, a size is served and cleared. */
	wr(GA_REG_READ_SIZE, 0, 0);
	ck_assert_uint_eq(h->outs, 0);
	shm_wr(GA_REG_READ_SIZE, 0, 40);
	ga_model_poll(m);
	ck_assert_uint_eq(h->outs, 1);
	ck_assert_uint_eq(h->out_len[0], 40);
	ck_assert_uint_eq(regs[rs0 / 4], 0);
	/* A request made while the engine is off waits in its word. */
	wr(GA_REG_READ_ENABLE, 0, 0);
	shm_wr(GA_REG_READ_SIZE, 1, 24);
	ga_model_poll(m);
	ck_assert_uint_eq(h->outs, 1);
	ck_assert_uint_eq(regs[off(GA_REG_READ_SIZE, 1) / 4], 24);
	wr(GA_REG_READ_ENABLE, 0, 1);
	ga_model_poll(m);
	ck_assert_uint_eq(h->outs, 1); /* strict index order: 0 first */
	shm_wr(GA_REG_READ_SIZE, 1, 0); /* withdrawn */
	ga_model_poll(m);
	wr(GA_REG_READ_SIZE, 0, 8);
	ck_assert_uint_eq(h->outs, 2);
	ga_model_poll(m);
	ck_assert_uint_eq(h->outs, 2);
	ck_assert_uint_eq(rd(GA_REG_TX_FRAME_COUNT, 0), 2);
	/* Host-side removal clears the word too. */
	shm_wr(GA_REG_FREE_LIST, 1, 1);
	ga_model_poll(m);
	ga_model_forget(m, true, 1);
	ck_assert_uint_eq(regs[off(GA_REG_FREE_LIST, 1) / 4], 0);
	ga_model_poll(m);
	ck_assert(!ga_model_write_ready(m));
	teardown();

	/* The firmware's strobes: any write arms, the word reads back 0. */
	setup_flavour(_i);
	add_buffers(BUF_SIZE - DDB);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	wr(GA_REG_FREE_LIST, 0, 0);
	ck_assert_uint_eq(regs[fw0 / 4], 0);
	ck_assert_int_eq(push_n(64, 3), GA_PUSH_DELIVERED);
	teardown();
}
END_TEST

START_TEST(test_active_bits)
{
	setup_flavour(_i);
	if (!has(GA_REG_WRITE_ACTIVE)) {
		ck_assert_uint_lt(fl->version, 5);
		teardown();
		return;
	}
	ck_assert_uint_eq(rd(GA_REG_WRITE_ACTIVE, 0), 0);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	ck_assert_uint_eq(rd(GA_REG_WRITE_ACTIVE, 0), 1);
	ck_assert_uint_eq(rd(GA_REG_READ_ACTIVE, 0), 0);
	wr(GA_REG_READ_ENABLE, 0, 1);
	ck_assert_uint_eq(rd(GA_REG_READ_ACTIVE, 0), 1);
	/* A shared-memory write to 0x08 is seen at the next poll. */
	shm_wr(GA_REG_WRITE_COUNT, 0, 0);
	ga_model_poll(m);
	ck_assert_uint_eq(rd(GA_REG_WRITE_ACTIVE, 0), 0);
	ck_assert_uint_eq(rd(GA_REG_READ_ACTIVE, 0), 0);
	teardown();
}
END_TEST

START_TEST(test_monitor)
{
	unsigned int i;

	setup_flavour(_i);
	if (!has(GA_REG_IB_MON_FRAME_COUNT)) {
		ck_assert(layout() == GA_LAYOUT_V1);
		teardown();
		return;
	}
	add_buffers(BUF_SIZE - DDB);
	for (i = 0; i < 10; i++) {
		ck_assert_int_eq(push_n(100 + i, 0), GA_PUSH_DROPPED);
		h->t += 100000000; /* 10 Hz */
	}
	ga_model_poll(m);
	ck_assert_uint_eq(rd(GA_REG_IB_MON_FRAME_COUNT, 0), 10);
	ck_assert_uint_eq(rd(GA_REG_IB_MON_FRAME_SIZE, 0), 109);
	ck_assert_uint_ge(rd(GA_REG_IB_MON_FRAME_RATE, 0), 9);
	ck_assert_uint_le(rd(GA_REG_IB_MON_FRAME_RATE, 0), 11);
	/* Quiet for two seconds: the rate falls to 0. */
	h->t += 1500000000;
	ga_model_poll(m);
	h->t += 1500000000;
	ga_model_poll(m);
	ck_assert_uint_eq(rd(GA_REG_IB_MON_FRAME_RATE, 0), 0);
	teardown();
}
END_TEST

/*
 * The stream monitor blocks by raw offset, from SURF's AxiStreamMonAxiL
 * register map (python/surf/axi/_AxiStreamMonAxiL.py) placed at the
 * core's inbound (0x100) and outbound (0x200) crossbar slots
 * (docs/firmware.md §2.4), not from the table: config 0x00 (bit 0 CntRst), FrameCnt 0x04
 * (64 bits), FrameRate/Max/Min 0x0C/0x10/0x14 (Hz), Bandwidth/Max/Min
 * 0x18/0x20/0x28 (64 bits, bytes per second, as AxiStreamMon counts),
 * FrameSize/Max/Min 0x30/0x34/0x38 (bytes).
 */
#define MON_IB 0x100u
#define MON_OB 0x200u
enum {
	MON_CFG = 0x00,
	MON_CNT = 0x04,
	MON_RATE = 0x0C,
	MON_RATE_MAX = 0x10,
	MON_RATE_MIN = 0x14,
	MON_BW = 0x18,
	MON_BW_MAX = 0x20,
	MON_BW_MIN = 0x28,
	MON_SIZE = 0x30,
	MON_SIZE_MAX = 0x34,
	MON_SIZE_MIN = 0x38,
};

static uint32_t mon32(uint32_t base, uint32_t o)
{
	return ga_model_reg_read(m, base + o);
}

static uint64_t mon64(uint32_t base, uint32_t o)
{
	return ((uint64_t)ga_model_reg_read(m, base + o + 4) << 32) |
	       ga_model_reg_read(m, base + o);
}

/* Frames 200 ms apart for a second, then 50 ms apart for a second, then
 * quiet: rates, bandwidths and sizes with their max/min, both counts. */
START_TEST(test_monitor_block)
{
	unsigned int i;

	setup_flavour(_i);
	if (layout() == GA_LAYOUT_V1) {
		/* No monitors on V1: 0x104 is write buffer 0's high address. */
		ck_assert(!has(GA_REG_IB_MON_FRAME_COUNT) && !has(GA_REG_OB_MON_RESET));
		teardown();
		return;
	}
	add_buffers(BUF_SIZE - DDB);
	/* engine off: every frame is dropped, and still seen by the monitor */
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(push_n(100 + i, 0), GA_PUSH_DROPPED);
		h->t += 200000000;
	}
	for (i = 0; i < 20; i++) {
		ck_assert_int_eq(push_n(1000, 0), GA_PUSH_DROPPED);
		h->t += 50000000;
	}
	ga_model_poll(m);
	ck_assert_uint_eq(mon64(MON_IB, MON_CNT), 25);
	ck_assert_uint_eq(mon32(MON_IB, MON_SIZE), 1000);
	ck_assert_uint_eq(mon32(MON_IB, MON_SIZE_MAX), 1000);
	ck_assert_uint_eq(mon32(MON_IB, MON_SIZE_MIN), 100);
	/* the second window: 20 frames of 1000 bytes */
	ck_assert_uint_ge(mon32(MON_IB, MON_RATE), 19);
	ck_assert_uint_le(mon32(MON_IB, MON_RATE), 21);
	ck_assert_uint_ge(mon64(MON_IB, MON_BW), 19000);
	ck_assert_uint_le(mon64(MON_IB, MON_BW), 21000);
	/* the first: 5 frames, 510 bytes */
	ck_assert_uint_ge(mon32(MON_IB, MON_RATE_MIN), 4);
	ck_assert_uint_le(mon32(MON_IB, MON_RATE_MIN), 6);
	ck_assert_uint_ge(mon64(MON_IB, MON_BW_MIN), 400);
	ck_assert_uint_le(mon64(MON_IB, MON_BW_MIN), 700);
	ck_assert_uint_eq(mon32(MON_IB, MON_RATE_MAX), mon32(MON_IB, MON_RATE));
	ck_assert_uint_eq(mon64(MON_IB, MON_BW_MAX), mon64(MON_IB, MON_BW));
	/* quiet seconds read 0 and pull the minimums down; maximums stay */
	h->t += 1100000000;
	ga_model_poll(m);
	h->t += 1100000000;
	ga_model_poll(m);
	ck_assert_uint_eq(mon32(MON_IB, MON_RATE), 0);
	ck_assert_uint_eq(mon64(MON_IB, MON_BW), 0);
	ck_assert_uint_eq(mon32(MON_IB, MON_RATE_MIN), 0);
	ck_assert_uint_eq(mon64(MON_IB, MON_BW_MIN), 0);
	ck_assert_uint_ge(mon32(MON_IB, MON_RATE_MAX), 19);
	/* the other direction saw nothing */
	ck_assert_uint_eq(mon64(MON_OB, MON_CNT), 0);
	ck_assert_uint_eq(mon32(MON_OB, MON_SIZE_MAX), 0);
	teardown();
}
END_TEST

/* FrameCnt is 64 bits: the low word carries into the high one. */
START_TEST(test_monitor_count_64)
{
	setup_flavour(_i);
	if (layout() == GA_LAYOUT_V1) {
		teardown();
		return;
	}
	regs[(MON_IB + MON_CNT) / 4] = 0xffffffffu;
	regs[(MON_IB + MON_CNT + 4) / 4] = 6;
	ck_assert_int_eq(push_n(64, 0), GA_PUSH_DROPPED);
	ck_assert_uint_eq(mon32(MON_IB, MON_CNT), 0);
	ck_assert_uint_eq(mon32(MON_IB, MON_CNT + 4), 7);
	ck_assert_uint_eq(mon64(MON_IB, MON_CNT), 7ull << 32);
	teardown();
}
END_TEST

/* Bit 0 of a monitor's config word resets that monitor alone: count 0, and
 * each max/min pair re-arms (takes the present value, then follows the
 * next measurement).  Other bits, and the core's count_reset, do not. */
START_TEST(test_monitor_reset)
{
	unsigned int i;

	setup_flavour(_i);
	if (layout() == GA_LAYOUT_V1) {
		teardown();
		return;
	}
	add_buffers(BUF_SIZE - DDB);
	wr(GA_REG_READ_ENABLE, 0, 1);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(push_n(300 - 100 * i, 0), GA_PUSH_DROPPED);
		wr(GA_REG_READ_SIZE, i, 40 + i);
	}
	ck_assert_uint_eq(mon64(MON_IB, MON_CNT), 3);
	ck_assert_uint_eq(mon64(MON_OB, MON_CNT), 3);
	ck_assert_uint_eq(mon32(MON_OB, MON_SIZE_MIN), 40);
	/* the config word reads the monitors' generics as the GpuAsyncCore
	 * builds them (SURF AxiStreamMonAxiL word 0: TDATA_BYTES = the AXI
	 * bus width, TDEST/TUSER/TID 8 bits each, TKEEP_COUNT_C 3,
	 * TUSER_FIRST_LAST_C 1, no TSTRB, no common clock) */
	ck_assert_uint_eq(mon32(MON_IB, MON_CFG), (uint32_t)DDB << 24 | 0x888310u);
	ck_assert_uint_eq(mon32(MON_OB, MON_CFG), (uint32_t)DDB << 24 | 0x888310u);
	/* the core's own count_reset leaves the monitors alone */
	ga_model_reg_write(m, off(GA_REG_COUNT_RESET, 0), 1);
	ck_assert_uint_eq(mon64(MON_IB, MON_CNT), 3);
	/* config bits other than 0 reset nothing */
	ga_model_reg_write(m, MON_IB + MON_CFG, 0x100);
	ck_assert_uint_eq(mon64(MON_IB, MON_CNT), 3);
	ga_model_reg_write(m, MON_IB + MON_CFG, 1);
	ck_assert_uint_eq(mon64(MON_IB, MON_CNT), 0);
	ck_assert_uint_eq(mon32(MON_IB, MON_CFG), (uint32_t)DDB << 24 | 0x888310u);
	ck_assert_uint_eq(mon32(MON_IB, MON_SIZE), 100);
	ck_assert_uint_eq(mon32(MON_IB, MON_SIZE_MAX), 100);
	ck_assert_uint_eq(mon32(MON_IB, MON_SIZE_MIN), 100);
	ck_assert_uint_eq(mon64(MON_OB, MON_CNT), 3); /* the other one kept its count */
	/* after the reset, the first frame sets both ends, later ones widen */
	ck_assert_int_eq(push_n(250, 0), GA_PUSH_DROPPED);
	ck_assert_uint_eq(mon32(MON_IB, MON_SIZE_MAX), 250);
	ck_assert_uint_eq(mon32(MON_IB, MON_SIZE_MIN), 250);
	ck_assert_int_eq(push_n(120, 0), GA_PUSH_DROPPED);
	ck_assert_uint_eq(mon32(MON_IB, MON_SIZE_MIN), 120);
	ck_assert_uint_eq(mon32(MON_IB, MON_SIZE_MAX), 250);
	ck_assert_uint_eq(mon64(MON_IB, MON_CNT), 2);
	/* a reset written behind the host's back is seen at the next poll */
	regs[(MON_OB + MON_CFG) / 4] = 1;
	ga_model_poll(m);
	ck_assert_uint_eq(mon64(MON_OB, MON_CNT), 0);
	ck_assert_uint_eq(mon32(MON_OB, MON_CFG), (uint32_t)DDB << 24 | 0x888310u);
	/* and a store of the config word read back (pyrogue writes CntRst so,
	 * the other bits as it read them) resets nothing */
	ck_assert_int_eq(push_n(64, 0), GA_PUSH_DROPPED);
	regs[(MON_IB + MON_CFG) / 4] = (uint32_t)DDB << 24 | 0x888310u;
	ga_model_poll(m);
	ck_assert_uint_eq(mon64(MON_IB, MON_CNT), 3);
	regs[(MON_IB + MON_CFG) / 4] = (uint32_t)DDB << 24 | 0x888311u;
	ga_model_poll(m);
	ck_assert_uint_eq(mon64(MON_IB, MON_CNT), 0);
	teardown();
}
END_TEST

static void fill_cb(void *ctx, void *dst, uint32_t len)
{
	(void)ctx;
	h->fills++;
	fill(dst, len, 9);
}

START_TEST(test_push_fill)
{
	setup_flavour(_i);
	add_buffers(64);
	ck_assert_int_eq(ga_model_push_fill(m, 100, 2, 0, fill_cb, NULL), GA_PUSH_DROPPED);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	ck_assert_int_eq(ga_model_push_fill(m, 100, 2, 0, fill_cb, NULL), GA_PUSH_NO_BUFFER);
	ck_assert_uint_eq(h->fills, 0);
	wr(GA_REG_FREE_LIST, 0, 1);
	ck_assert_int_eq(ga_model_push_fill(m, 100, 2, 0, fill_cb, NULL), GA_PUSH_DELIVERED);
	ck_assert_uint_eq(h->fills, 1);
	ck_assert_uint_eq(word(wmem(0) + 4), 64);
	ck_assert_uint_eq(wmem(0)[DDB + 63], (uint8_t)(9 + 63 * 7));
	ck_assert_uint_eq(wmem(0)[DDB + 64], 0xEE);
	teardown();
}
END_TEST

START_TEST(test_forget)
{
	setup_flavour(_i);
	add_buffers(64);
	wr(GA_REG_FREE_LIST, 0, 1);
	wr(GA_REG_FREE_LIST, 1, 1);
	ck_assert_uint_eq(m->free_count, 2);
	ga_model_forget(m, true, 0);
	ck_assert_uint_eq(m->free_count, 1);
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	ck_assert_int_eq(push_n(10, 0), GA_PUSH_NO_BUFFER);
	wr(GA_REG_READ_ENABLE, 0, 1);
	wr(GA_REG_READ_SIZE, 1, 8);
	ck_assert_uint_eq(m->read_queue, 1);
	ga_model_forget(m, false, 1);
	ck_assert_uint_eq(m->read_queue, 0);
	wr(GA_REG_READ_SIZE, 0, 8);
	ck_assert_uint_eq(h->outs, 1);
	teardown();
}
END_TEST

/* A count register larger than the ring wraps inside the buffers there
 * are (max_buffers = 2 * NBUF here), never past the model's arrays. */
START_TEST(test_wide_count)
{
	unsigned int k;

	setup_flavour(_i);
	add_buffers(64);
	wr(GA_REG_WRITE_COUNT, 0, ga_reg_field_max(GA_REG_WRITE_COUNT, layout()));
	wr(GA_REG_READ_COUNT, 0, ga_reg_field_max(GA_REG_READ_COUNT, layout()));
	wr(GA_REG_WRITE_ENABLE, 0, 1);
	wr(GA_REG_READ_ENABLE, 0, 1);
	for (k = 0; k < 3 * NBUF * 2; k++) {
		unsigned int i = k % (NBUF * 2);

		wr(GA_REG_FREE_LIST, i, 1);
		ck_assert_int_eq(push_n(8, 0), GA_PUSH_DELIVERED);
		ck_assert_uint_eq(m->last.index, i);
		ck_assert(!ga_model_write_ready(m));
		wr(GA_REG_READ_SIZE, i, 4);
		ck_assert_uint_eq(m->read_queue, 0);
		ck_assert_uint_eq(m->read_index, (i + 1) % (NBUF * 2));
	}
	teardown();
}
END_TEST

static Suite *model_suite(void)
{
	return suite_of("model", "flavours", 0,
			SUITE_TESTS({test_power_on, NFLAV}, {test_round_robin, NFLAV},
				    {test_backpressure, NFLAV}, {test_drop_disabled, NFLAV},
				    {test_overflow, NFLAV}, {test_faults, NFLAV},
				    {test_saturation, NFLAV}, {test_count_reset, NFLAV},
				    {test_watermarks, NFLAV}, {test_latency, NFLAV},
				    {test_total_latency_exact, NFLAV}, {test_read_path, NFLAV},
				    {test_level_words, NFLAV}, {test_active_bits, NFLAV},
				    {test_monitor, NFLAV}, {test_monitor_block, NFLAV},
				    {test_monitor_count_64, NFLAV}, {test_monitor_reset, NFLAV},
				    {test_push_fill, NFLAV}, {test_forget, NFLAV},
				    {test_wide_count, NFLAV}));
}

int main(void)
{
	NFLAV = flavours_init();
	return run_suite(model_suite());
}
