// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The simulated card end to end through the public API (gpuasync/device.h
 * and gpuasync/sim.h): open "sim:...", create buffers, arm, enable, let the
 * generator or ga_sim_push send frames, and check what lands in memory and
 * in the registers.  Every body runs for each firmware flavour (versions
 * 1-3 on the V1 map, 4 with the current and the legacy latency block, 5).
 *
 * Waiting for the model thread uses wait_for() with a generous deadline
 * that only guards against hanging; no assertion depends on timing.
 */
#include <check.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/flavours.h"
#include "common/run_suite.h"
#include "gpuasync/device.h"
#include "gpuasync/sim.h"
#include "common/gpu_probe.h"
#include "internal.h" /* ga_crc32 */

/* Every firmware version, from the table (common/flavours.h). */
static int NFLAV;

#define NBUF	    4
#define BUF_SIZE    65536u
#define DDB	    32u
#define PAYLOAD_MAX (BUF_SIZE - DDB)

static struct ga_dev *dev;
static const struct flavour *fl;
static struct ga_buf *wb[NBUF], *rb[NBUF];

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Poll @cond until true; fail after 20 s (a hang, not a timing check). */
#define wait_for(cond)                                                                             \
	do {                                                                                       \
		int waited_ = 0;                                                                   \
		while (!(cond)) {                                                                  \
			ck_assert_msg(waited_++ < 20000, "timed out waiting for %s", #cond);       \
			sleep_ms(1);                                                               \
		}                                                                                  \
	} while (0)

static bool use_gpu; /* GPU memory when one is present (test_stream_gpu) */

static void open_flavour(int i, const char *more)
{
	struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;
	char spec[256];

	fl = &FLAVOURS[i];
	o.use_gpu = use_gpu;
	snprintf(spec, sizeof(spec), "sim:version=%u,max_buffers=8,dma_data_bytes=%u%s%s",
		 fl->version, DDB, fl->legacy ? ",latency=legacy" : "", more ? more : "");
	ck_assert_msg(ga_dev_open_opts(spec, &o, &dev) == 0, "%s: %s", spec, ga_last_error());
	memset(wb, 0, sizeof(wb));
	memset(rb, 0, sizeof(rb));
}

static bool v4(void)
{
	return ga_dev_layout(dev) != GA_LAYOUT_V1;
}

static uint32_t reg(enum ga_reg_id id, unsigned int index)
{
	uint32_t v = 0xDEADBEEF;

	ck_assert_msg(ga_reg_read(dev, id, index, &v) == 0, "%s: %s", ga_regs[id].name,
		      ga_last_error());
	return v;
}

static bool has(enum ga_reg_id id)
{
	struct ga_dev_info info;

	ga_dev_info(dev, &info);
	return ga_reg_present(id, info.layout, info.version);
}

static void create(enum ga_dir dir, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct ga_buf **b = dir == GA_DIR_WRITE ? &wb[i] : &rb[i];

		ck_assert_msg(ga_buf_create(dev, dir, i, BUF_SIZE, b) == 0, "create %u: %s", i,
			      ga_last_error());
	}
}

static void arm_all(unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		ck_assert_int_eq(ga_buf_arm(wb[i]), 0);
}

/* Flavour @i (@more as for open_flavour) with @nw write buffers armed and
 * @nr read buffers, the write engine on, and the read engine when @nr. */
static void open_running(int i, const char *more, unsigned int nw, unsigned int nr)
{
	open_flavour(i, more);
	create(GA_DIR_WRITE, nw);
	if (nr)
		create(GA_DIR_READ, nr);
	arm_all(nw);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	if (nr)
		ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_READ, true), 0);
}

static struct ga_sim_stats stats(void)
{
	struct ga_sim_stats st;

	ck_assert_int_eq(ga_sim_stats(dev, &st), 0);
	return st;
}

static void gen_start(uint32_t size, enum ga_pattern p, uint64_t count)
{
	struct ga_sim_gen g;

	ck_assert_int_eq(ga_sim_gen_get(dev, &g), 0);
	g.running = true;
	g.rate_hz = 0;
	g.size = size;
	g.pattern = p;
	g.remaining = count;
	ck_assert_int_eq(ga_sim_gen_set(dev, &g), 0);
}

/* Frame @seq of @size bytes in write buffer @i, as the generator made it. */
static void check_frame(unsigned int i, uint32_t seq, uint32_t size, enum ga_pattern p)
{
	static uint8_t data[BUF_SIZE];
	struct ga_header h;

	ck_assert_int_eq(ga_buf_header(wb[i], &h), 0);
	ck_assert_uint_eq(h.size, size);
	ck_assert_uint_eq(h.result, 0);
	ck_assert(!h.overflow);
	ck_assert(!h.cont);
	ck_assert_uint_eq(h.first_user, 0x02);
	ck_assert_uint_eq(h.last_user, 0x00);
	ck_assert_int_eq(ga_buf_read(wb[i], DDB, data, size), 0);
	ck_assert_int_eq(ga_pattern_check(p, seq, data, size), -1);
}

static void close_dev(void)
{
	ga_dev_close(dev);
	dev = NULL;
}

/* ---- tests --------------------------------------------------------------- */

START_TEST(test_open_info)
{
	struct ga_dev_info info;

	open_flavour(_i, ",clock_hz=100000000");
	ck_assert_int_eq(ga_dev_info(dev, &info), 0);
	ck_assert_str_eq(info.backend, "sim");
	ck_assert_uint_eq(info.version, fl->version);
	ck_assert_uint_eq(info.max_buffers, 8);
	ck_assert_uint_eq(info.dma_data_bytes, DDB);
	ck_assert_uint_eq(info.clock_hz, 100000000);
	ck_assert_int_eq(info.layout, ga_layout_for_version(fl->version, fl->legacy));
	ck_assert(ga_dev_has(dev, GA_CAP_SIM));
	ck_assert(ga_dev_has(dev, GA_CAP_SUPPORTED));
	ck_assert(!ga_dev_has(dev, GA_CAP_GPU_MEMORY));
	ck_assert_uint_eq(reg(GA_REG_VERSION, 0), fl->version);
	ck_assert_uint_eq(reg(GA_REG_MAX_BUFFERS, 0), 8);
	ck_assert_uint_eq(reg(GA_REG_DMA_DATA_BYTES, 0), DDB);
	close_dev();
}
END_TEST

START_TEST(test_bad_specs)
{
	static const struct {
		const char *spec;
		int err;
		const char *why;
	} bad[] = {
		{"sim:version=9", -ERANGE, "version"},
		{"sim:version=0", -ERANGE, "version"},
		{"sim:frobnicate=1", -EINVAL, "unknown option"},
		{"sim:version=2,max_buffers=17", -ERANGE, "16"},
		{"sim:max_buffers=1025", -ERANGE, "max_buffers"},
		{"sim:dma_data_bytes=24", -EINVAL, "power of two"},
		{"sim:latency=old", -EINVAL, "legacy"},
		{"sim:shm=a/b", -EINVAL, "shm"},
		{"sim:pattern=noise", -EINVAL, "pattern"},
		{"sim:clock_hz=4294967296", -ERANGE, "32-bit dma_clock_hz"},
		{"sim:clock_hz=0", -ERANGE, "clock_hz must be 1.."},
		{"sim:version", -EINVAL, "key=value"},
		{"simulator", -EINVAL, ""},
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = ga_dev_open(bad[i].spec, &dev);

		ck_assert_msg(rc == bad[i].err || (bad[i].err == -EINVAL && rc < 0), "%s -> %d",
			      bad[i].spec, rc);
		ck_assert_ptr_null(dev);
		ck_assert_msg(strstr(ga_last_error(), bad[i].why), "%s: '%s'", bad[i].spec,
			      ga_last_error());
	}
	/* Two sims cannot share one shm name. */
	{
		struct ga_dev *a;

		ck_assert_int_eq(ga_dev_open("sim:shm=gpuasync-test-dup", &a), 0);
		ck_assert_int_eq(ga_dev_open("sim:shm=gpuasync-test-dup", &dev), -EEXIST);
		ga_dev_close(a);
		ck_assert_int_eq(ga_dev_open("sim:shm=gpuasync-test-dup", &dev), 0);
		close_dev();
	}
}
END_TEST

START_TEST(test_stream)
{
	struct ga_sim_stats st;
	unsigned int k;

	open_flavour(_i, NULL);
	create(GA_DIR_WRITE, NBUF);
	/* The driver's add leaves the engine off and the ring sized. */
	ck_assert_uint_eq(reg(GA_REG_WRITE_ENABLE, 0), 0);
	ck_assert_uint_eq(reg(GA_REG_WRITE_COUNT, 0), NBUF - 1);
	if (has(GA_REG_WRITE_MAX_SIZE))
		ck_assert_uint_eq(reg(GA_REG_WRITE_MAX_SIZE, 0), PAYLOAD_MAX);
	else
		for (k = 0; k < NBUF; k++)
			ck_assert_uint_eq(reg(GA_REG_WRITE_SIZE, k), PAYLOAD_MAX);
	arm_all(NBUF);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	/* Two frames more than there are buffers: they wait, not vanish. */
	gen_start(1000 + 3, GA_PATTERN_PRBS, NBUF + 2);
	wait_for(stats().delivered == NBUF);
	for (k = 0; k < NBUF; k++)
		check_frame(k, k, 1003, GA_PATTERN_PRBS);
	wait_for(stats().stalled_ns > 0);
	st = stats();
	ck_assert_uint_eq(st.delivered, NBUF);
	ck_assert_uint_eq(st.generated, NBUF);
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), NBUF);
	/* Re-arm 0 and 1: frames NBUF and NBUF+1 land there, round robin. */
	ck_assert_int_eq(ga_buf_arm(wb[0]), 0);
	ck_assert_int_eq(ga_buf_arm(wb[1]), 0);
	wait_for(stats().delivered == NBUF + 2);
	check_frame(0, NBUF, 1003, GA_PATTERN_PRBS);
	check_frame(1, NBUF + 1, 1003, GA_PATTERN_PRBS);
	check_frame(2, 2, 1003, GA_PATTERN_PRBS); /* untouched */
	{
		struct ga_sim_gen g;

		wait_for(ga_sim_gen_get(dev, &g) == 0 && !g.running);
		ck_assert_uint_eq(g.remaining, 0);
	}
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), NBUF + 2);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 0);
	/* Counter pattern, full-size frames. */
	arm_all(NBUF);
	gen_start(PAYLOAD_MAX, GA_PATTERN_COUNTER, NBUF);
	wait_for(stats().delivered == 2 * NBUF + 2);
	for (k = 0; k < NBUF; k++)
		check_frame((k + 2) % NBUF, k, PAYLOAD_MAX, GA_PATTERN_COUNTER);
	close_dev();
}
END_TEST

/* The same stream into CUDA memory where a GPU is present (the frames go
 * through the memory layer's ordered asynchronous copies); host memory
 * otherwise, which ga_dev_info says. */
START_TEST(test_stream_gpu)
{
	struct ga_dev_info info;
	unsigned int k;

	use_gpu = true;
	open_flavour(_i, NULL);
	use_gpu = false;
	ck_assert_int_eq(ga_dev_info(dev, &info), 0);
	ck_assert(ga_dev_has(dev, GA_CAP_GPU_MEMORY) == (info.memory_note[0] == 0));
	create(GA_DIR_WRITE, NBUF);
	create(GA_DIR_READ, 1);
	arm_all(NBUF);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_READ, true), 0);
	gen_start(PAYLOAD_MAX, GA_PATTERN_PRBS, NBUF);
	wait_for(stats().delivered == NBUF);
	for (k = 0; k < NBUF; k++)
		check_frame(k, k, PAYLOAD_MAX, GA_PATTERN_PRBS);
	/* Loop back frame 2's payload through the read path. */
	{
		static uint8_t data[PAYLOAD_MAX], got[PAYLOAD_MAX];
		uint32_t n = 0, done = 0;

		ck_assert_int_eq(ga_buf_read(wb[2], DDB, data, PAYLOAD_MAX), 0);
		ck_assert_int_eq(ga_buf_write(rb[0], v4() ? DDB : 0, data, PAYLOAD_MAX), 0);
		ck_assert_int_eq(ga_buf_send(rb[0], PAYLOAD_MAX), 0);
		ck_assert_int_eq(ga_sim_last_read(dev, got, sizeof(got), &n), 0);
		ck_assert_uint_eq(n, PAYLOAD_MAX);
		ck_assert_int_eq(ga_pattern_check(GA_PATTERN_PRBS, 2, got, n), -1);
		if (v4()) {
			ck_assert_int_eq(ga_buf_read(rb[0], 0, &done, 4), 0);
			ck_assert_uint_eq(done, 1);
		}
	}
	close_dev();
}
END_TEST

START_TEST(test_push_drop_overflow)
{
	static uint8_t frame[BUF_SIZE + 100];
	struct ga_header h;
	struct ga_sim_stats st;
	uint8_t after[4];

	open_flavour(_i, NULL);
	create(GA_DIR_WRITE, 2);
	ga_pattern_fill(GA_PATTERN_COUNTER, 7, frame, sizeof(frame));
	/* Engine off: dropped, counted, header still written to buffer 0. */
	ck_assert_int_eq(ga_sim_push(dev, frame, 500, 0), 0);
	ck_assert_int_eq(ga_buf_header(wb[0], &h), 0);
	ck_assert_uint_eq(h.size, 500);
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), 1);
	st = stats();
	ck_assert_uint_eq(st.dropped, 1);
	ck_assert_uint_eq(st.delivered, 0);
	/* Engine on, nothing armed: backpressure, -EAGAIN, not consumed. */
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	ck_assert_int_eq(ga_sim_push(dev, frame, 500, 0), -EAGAIN);
	ck_assert_int_eq(ga_sim_push(dev, frame, 500, 5), -EAGAIN);
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), 1);
	/* Overflow: truncated at the payload limit, flagged, counted. */
	arm_all(2);
	ck_assert_int_eq(ga_sim_push(dev, frame, PAYLOAD_MAX + 100, 1000), 0);
	ck_assert_int_eq(ga_buf_header(wb[0], &h), 0);
	ck_assert_uint_eq(h.size, PAYLOAD_MAX);
	ck_assert(h.overflow);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 1);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_VALUE, 0), 0x4);
	ck_assert_uint_eq(stats().overflowed, 1);
	ck_assert_int_eq(ga_pattern_check(GA_PATTERN_COUNTER, 7, frame, PAYLOAD_MAX), -1);
	{
		static uint8_t got[BUF_SIZE];

		ck_assert_int_eq(ga_buf_read(wb[0], DDB, got, PAYLOAD_MAX), 0);
		ck_assert_mem_eq(got, frame, PAYLOAD_MAX);
	}
	/* The next frame goes to buffer 1. */
	ck_assert_int_eq(ga_sim_push(dev, frame, 64, 1000), 0);
	ck_assert_int_eq(ga_buf_read(wb[1], 4, after, 4), 0);
	ck_assert_uint_eq(after[0], 64);
	ck_assert_int_eq(ga_sim_push(dev, NULL, 64, 0), -EINVAL);
	ck_assert_int_eq(ga_sim_push(dev, frame, 0, 0), -EINVAL);
	close_dev();
}
END_TEST

START_TEST(test_faults)
{
	static uint8_t frame[256];
	struct ga_header h;
	uint32_t got;

	open_running(_i, NULL, NBUF, 1);
	ck_assert_int_eq(ga_sim_inject(dev, GA_FAULT_WRITE_ERROR, 1, 3), 0);
	ck_assert_int_eq(ga_sim_push(dev, frame, sizeof(frame), 1000), 0);
	ck_assert_int_eq(ga_buf_header(wb[0], &h), 0);
	ck_assert_uint_eq(h.result, 3);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 1);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_VALUE, 0), 3);
	{
		struct ga_buf_info bi;

		ck_assert_int_eq(ga_buf_info(wb[0], &bi), 0);
		ck_assert_int_eq(bi.state, GA_BUF_ERROR);
	}
	ck_assert_int_eq(ga_sim_inject(dev, GA_FAULT_WRITE_TIMEOUT, 1, 0), 0);
	ck_assert_int_eq(ga_sim_push(dev, frame, sizeof(frame), 1000), 0);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 2);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_VALUE, 0), 0x8);
	if (has(GA_REG_AXI_WRITE_TIMEOUT_COUNT))
		ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_TIMEOUT_COUNT, 0), 1);
	else
		ck_assert_int_eq(ga_reg_read(dev, GA_REG_AXI_WRITE_TIMEOUT_COUNT, 0, &got),
				 -ENOENT);
	ck_assert_int_eq(ga_sim_push(dev, frame, sizeof(frame), 1000), 0);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 2);
	/* Read error: counted; no frame reaches the card's output. */
	ck_assert_int_eq(ga_sim_inject(dev, GA_FAULT_READ_ERROR, 1, 6), 0);
	ck_assert_int_eq(ga_buf_send(rb[0], 100), 0);
	ck_assert_uint_eq(reg(GA_REG_AXI_READ_ERROR_COUNT, 0), 1);
	ck_assert_uint_eq(reg(GA_REG_AXI_READ_ERROR_VALUE, 0), 6);
	ck_assert_uint_eq(reg(GA_REG_TX_FRAME_COUNT, 0), 1);
	ck_assert_uint_eq(stats().reads, 0);
	ck_assert_int_eq(ga_sim_inject(dev, GA_FAULT_READ_ERROR, 1, 8), -ERANGE);
	ck_assert_int_eq(ga_sim_inject(dev, GA_FAULT_WRITE_ERROR, 1, 4), -ERANGE);
	close_dev();
}
END_TEST

START_TEST(test_count_reset)
{
	static uint8_t frame[128];

	open_flavour(_i, NULL);
	create(GA_DIR_WRITE, NBUF);
	arm_all(NBUF);
	ck_assert_int_eq(ga_sim_push(dev, frame, sizeof(frame), 0), 0); /* dropped */
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	ck_assert_int_eq(ga_sim_inject(dev, GA_FAULT_WRITE_ERROR, 1, 1), 0);
	ck_assert_int_eq(ga_sim_push(dev, frame, sizeof(frame), 1000), 0);
	ck_assert_int_eq(ga_sim_push(dev, frame, sizeof(frame), 1000), 0);
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), 3);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 1);
	/* Frame 1 went to buffer 0, which every layout measures. */
	if (has(GA_REG_WRITE_LATENCY_MIN))
		ck_assert_uint_ne(reg(GA_REG_WRITE_LATENCY_MIN, 0), 0xFFFFFFFFu);
	ck_assert_int_eq(ga_reg_write(dev, GA_REG_COUNT_RESET, 0, 1), 0);
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), 0);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 0);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_VALUE, 0), 0);
	if (has(GA_REG_MIN_WRITE_BUFFERS)) {
		ck_assert_uint_eq(reg(GA_REG_MIN_WRITE_BUFFERS, 0), NBUF - 2);
		ck_assert_int_eq(ga_sim_push(dev, frame, sizeof(frame), 1000), 0);
		ck_assert_uint_eq(reg(GA_REG_MIN_WRITE_BUFFERS, 0), NBUF - 3);
	}
	if (has(GA_REG_WRITE_LATENCY_MIN)) {
		ck_assert_uint_eq(reg(GA_REG_WRITE_LATENCY_MIN, 0), 0xFFFFFFFFu);
		ck_assert_uint_eq(reg(GA_REG_WRITE_LATENCY_MAX, 0), 0);
	}
	close_dev();
}
END_TEST

START_TEST(test_latency)
{
	static uint8_t frame[128];
	uint32_t gpu;

	/* 1 GHz: one cycle per nanosecond. */
	open_running(_i, ",clock_hz=1000000000", 2, 2);
	ck_assert_int_eq(ga_sim_push(dev, frame, sizeof(frame), 1000), 0);
	ck_assert_int_eq(ga_sim_push(dev, frame, sizeof(frame), 1000), 0);
	sleep_ms(3); /* the "GPU" holds buffer 0 for at least 3 ms */
	ck_assert_int_eq(ga_buf_arm(wb[0]), 0);
	gpu = reg(GA_REG_GPU_LATENCY, 0);
	ck_assert_uint_ge(gpu, 3000000);
	ck_assert_uint_lt(gpu, 0xFFFFFFFFu);
	if (!v4()) {
		/* V1 measures each buffer. */
		ck_assert_uint_eq(reg(GA_REG_GPU_LATENCY, 1), 0);
		ck_assert_int_eq(ga_buf_arm(wb[1]), 0);
		ck_assert_uint_ge(reg(GA_REG_GPU_LATENCY, 1), 3000000);
	} else {
		uint32_t v;

		ck_assert_int_eq(ga_reg_read(dev, GA_REG_GPU_LATENCY, 1, &v), -ERANGE);
	}
	/* Total: accepted into write buffer 0 until read buffer 0 is done. */
	ck_assert_int_eq(ga_buf_send(rb[0], 64), 0);
	ck_assert_uint_ge(reg(GA_REG_TOTAL_LATENCY, 0), 3000000);
	if (has(GA_REG_GPU_LATENCY_MAX)) {
		ck_assert_uint_eq(reg(GA_REG_GPU_LATENCY_MAX, 0), gpu);
		ck_assert_uint_eq(reg(GA_REG_GPU_LATENCY_MIN, 0), gpu);
		ck_assert_uint_le(reg(GA_REG_READ_LATENCY, 0), reg(GA_REG_READ_LATENCY_MAX, 0));
	}
	close_dev();
}
END_TEST

START_TEST(test_read_path)
{
	static uint8_t data[2][4096], got[4096];
	struct ga_sim_stats st;
	uint32_t n, off, word;
	unsigned int k;

	open_flavour(_i, NULL);
	create(GA_DIR_READ, 2);
	off = v4() ? DDB : 0;
	for (k = 0; k < 2; k++) {
		ga_pattern_fill(GA_PATTERN_PRBS, 100 + k, data[k], sizeof(data[k]));
		ck_assert_int_eq(ga_buf_write(rb[k], off, data[k], sizeof(data[k])), 0);
	}
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_READ, true), 0);
	/* Index order: 1 waits for 0. */
	ck_assert_int_eq(ga_buf_send(rb[1], 2000), 0);
	ck_assert_uint_eq(stats().reads, 0);
	ck_assert_int_eq(ga_buf_send(rb[0], 3000), 0);
	st = stats();
	ck_assert_uint_eq(st.reads, 2);
	ck_assert_uint_eq(st.read_bytes, 5000);
	ck_assert_uint_eq(st.last_read_crc, ga_crc32(0, data[1], 2000));
	ck_assert_int_eq(ga_sim_last_read(dev, got, sizeof(got), &n), 0);
	ck_assert_uint_eq(n, 2000);
	ck_assert_mem_eq(got, data[1], 2000);
	ck_assert_uint_eq(reg(GA_REG_TX_FRAME_COUNT, 0), 2);
	if (has(GA_REG_OB_MON_FRAME_COUNT))
		ck_assert_uint_eq(reg(GA_REG_OB_MON_FRAME_SIZE, 0), 2000);
	for (k = 0; k < 2; k++) {
		struct ga_buf_info bi;

		ck_assert_int_eq(ga_buf_read(rb[k], 0, &word, 4), 0);
		ck_assert_int_eq(ga_buf_info(rb[k], &bi), 0);
		if (v4()) {
			ck_assert_uint_eq(word, 1); /* completion word */
			ck_assert_int_eq(bi.state, GA_BUF_READY);
		} else {
			ck_assert_uint_eq(word, ((uint32_t *)data[k])[0]); /* V1 writes nothing */
		}
	}
	/* Wrap to 0 again; read_enable=0 discards what is pending. */
	ck_assert_int_eq(ga_buf_send(rb[0], 10), 0);
	ck_assert_uint_eq(stats().reads, 3);
	ck_assert_int_eq(ga_buf_send(rb[0], 10), 0); /* index is at 1 now: waits */
	ck_assert_uint_eq(stats().reads, 3);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_READ, false), 0);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_READ, true), 0);
	ck_assert_int_eq(ga_buf_send(rb[1], 10), 0); /* index reset to 0: waits */
	ck_assert_uint_eq(stats().reads, 3);
	ck_assert_int_eq(ga_buf_send(rb[0], 20), 0);
	ck_assert_uint_eq(stats().reads, 5);
	close_dev();
}
END_TEST

/* A consumer in "another process": the shm file mapped on its own. */
START_TEST(test_shm_consumer)
{
	struct ga_dev_info info;
	char path[256];
	uint64_t moff;
	volatile uint32_t *regs;
	uint32_t free_off[NBUF], cr_off;
	unsigned int k, i;
	int fd;

	open_flavour(_i, NULL);
	ga_dev_info(dev, &info);
	create(GA_DIR_WRITE, NBUF);
	ck_assert_int_eq(ga_dev_reg_path(dev, path, sizeof(path), &moff), 0);
	ck_assert(strncmp(path, "/dev/shm/", 9) == 0);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	regs = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)moff);
	ck_assert(regs != MAP_FAILED);
	close(fd);
	for (i = 0; i < NBUF; i++) {
		ck_assert_int_eq(ga_reg_offset(GA_REG_FREE_LIST, info.layout, info.version, i,
					       info.max_buffers, &free_off[i]),
				 0);
		regs[free_off[i] / 4] = 1; /* arm, as cuStreamWriteValue32 would */
	}
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	gen_start(512, GA_PATTERN_COUNTER, 3 * NBUF);
	for (k = 0; k < 3 * NBUF; k++) {
		uint32_t db = 0, zero = 0;

		i = k % NBUF;
		wait_for(ga_buf_read(wb[i], 4, &db, 4) == 0 && db != 0);
		check_frame(i, k, 512, GA_PATTERN_COUNTER);
		ck_assert_int_eq(ga_buf_write(wb[i], 4, &zero, 4), 0);
		regs[free_off[i] / 4] = 1;
	}
	wait_for(stats().delivered == 3 * NBUF);
	/* The model took every arm: the words read back 0. */
	for (i = 0; i < NBUF; i++)
		wait_for(regs[free_off[i] / 4] == 0);
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), 3 * NBUF);
	ck_assert_int_eq(
		ga_reg_offset(GA_REG_COUNT_RESET, info.layout, info.version, 0, 0, &cr_off), 0);
	regs[cr_off / 4] = 1;
	wait_for(regs[cr_off / 4] == 0);
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), 0);
	munmap((void *)regs, GA_CORE_SIZE);
	close_dev();
}
END_TEST

/*
 * A stalled generator sleeps until an arm comes (issue 24 item 13: it
 * used to spin on sched_yield, ~45% of a core).  Over a 1 s window of
 * stall its thread must use under a tenth of a core; the old spin used
 * several times that even sharing two loaded cores.  Then an arm through
 * the library and one stored into the shared register block must each
 * end the stall.
 */
START_TEST(test_stall_sleeps)
{
	struct ga_dev_info info;
	struct ga_sim_stats a, b;
	char path[256];
	uint64_t moff, t0, t1;
	volatile uint32_t *regs;
	uint32_t free_off;
	int fd;

	open_flavour(3, NULL);
	ga_dev_info(dev, &info);
	create(GA_DIR_WRITE, NBUF);
	arm_all(NBUF);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	gen_start(512, GA_PATTERN_ZERO, 0);
	wait_for(stats().delivered == NBUF && stats().stalled_ns > 0);
	a = stats();
	t0 = ga_mono_ns();
	do
		sleep_ms(50);
	while ((t1 = ga_mono_ns()) - t0 < 1000000000ull);
	b = stats();
	ck_assert_uint_eq(b.delivered, NBUF); /* still stalled throughout */
	ck_assert_msg((b.cpu_ns - a.cpu_ns) * 10 < t1 - t0,
		      "the stalled card's thread used %.1f%% of a core",
		      100.0 * (double)(b.cpu_ns - a.cpu_ns) / (double)(t1 - t0));
	/* An arm through the library wakes it. */
	ck_assert_int_eq(ga_buf_arm(wb[0]), 0);
	wait_for(stats().delivered == NBUF + 1);
	/* An arm stored into the shared block, which nothing announces, is
	 * found by the thread's own looks. */
	ck_assert_int_eq(ga_dev_reg_path(dev, path, sizeof(path), &moff), 0);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	regs = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)moff);
	ck_assert(regs != MAP_FAILED);
	close(fd);
	ck_assert_int_eq(ga_reg_offset(GA_REG_FREE_LIST, info.layout, info.version, 1,
				       info.max_buffers, &free_off),
			 0);
	sleep_ms(20); /* let the looks back off to their longest first */
	regs[free_off / 4] = 1;
	wait_for(stats().delivered == NBUF + 2);
	munmap((void *)regs, GA_CORE_SIZE);
	close_dev();
}
END_TEST

START_TEST(test_versions)
{
	struct ga_buf_info a, b;
	struct ga_buf *x;

	open_flavour(_i, NULL);
	create(GA_DIR_WRITE, 3);
	ck_assert_int_eq(ga_buf_info(wb[0], &a), 0);
	ck_assert_int_eq(ga_buf_info(wb[1], &b), 0);
	ck_assert_uint_ne(a.bus_address, b.bus_address);
	ck_assert_uint_eq(reg(GA_REG_WRITE_ADDR_LO, 1), (uint32_t)b.bus_address);
	ck_assert_uint_eq(reg(GA_REG_WRITE_ADDR_HI, 1), (uint32_t)(b.bus_address >> 32));
	ck_assert(has(GA_REG_WRITE_SIZE) == !v4());
	ck_assert(has(GA_REG_WRITE_MAX_SIZE) == v4());
	/* V4 write buffers share one size. */
	if (v4())
		ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 3, 2 * BUF_SIZE, &x), -EINVAL);
	else
		ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 3, 2 * BUF_SIZE, &x), 0);
	/* V5 active bits follow the enables. */
	if (has(GA_REG_WRITE_ACTIVE)) {
		ck_assert_uint_eq(reg(GA_REG_WRITE_ACTIVE, 0), 0);
		ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
		ck_assert_uint_eq(reg(GA_REG_WRITE_ACTIVE, 0), 1);
		ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, false), 0);
		ck_assert_uint_eq(reg(GA_REG_WRITE_ACTIVE, 0), 0);
	} else {
		ck_assert_uint_lt(fl->version, 5);
	}
	ck_assert(has(GA_REG_AXI_WRITE_TIMEOUT_COUNT) == (fl->version >= 2));
	ck_assert(has(GA_REG_MIN_WRITE_BUFFERS) == (fl->version >= 3));
	ck_assert(has(GA_REG_TOTAL_LATENCY_MAX) == (v4() && !fl->legacy));
	close_dev();
}
END_TEST

START_TEST(test_lifecycle)
{
	struct ga_buf_info before, after;
	struct ga_buf *x;

	open_flavour(_i, ",max_buffers=3");
	create(GA_DIR_WRITE, 3);
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 3, BUF_SIZE, &x), -ENOSPC);
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_READ, 0, BUF_SIZE + 1, &x), -EINVAL);
	ck_assert_int_eq(ga_buf_destroy(wb[0]), -EBUSY);
	ck_assert_int_eq(ga_buf_info(wb[2], &before), 0);
	ck_assert_int_eq(ga_buf_destroy(wb[2]), 0);
	ck_assert_uint_eq(reg(GA_REG_WRITE_COUNT, 0), 1);
	ck_assert_uint_eq(reg(GA_REG_WRITE_ADDR_LO, 2), 0);
	ck_assert_uint_eq(reg(GA_REG_WRITE_ADDR_HI, 2), 0);
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 2, BUF_SIZE, &wb[2]), 0);
	ck_assert_int_eq(ga_buf_info(wb[2], &after), 0);
	ck_assert_uint_ne(after.bus_address, before.bus_address); /* stale address is dead */
	ck_assert_int_eq(ga_buf_destroy_all(dev), 0);
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 0);
	ck_assert_uint_eq(reg(GA_REG_WRITE_ADDR_LO, 0), 0);
	ck_assert_uint_eq(reg(GA_REG_WRITE_COUNT, 0), 0);
	if (has(GA_REG_WRITE_MAX_SIZE))
		ck_assert_uint_eq(reg(GA_REG_WRITE_MAX_SIZE, 0), 1);
	close_dev();
}
END_TEST

/* Closing with buffers alive and the generator running leaks nothing
 * (ASan build) and removes the shared-memory file. */
START_TEST(test_close_alive)
{
	char path[256];
	struct stat sb;
	uint64_t moff;

	open_running(_i, NULL, NBUF, 1);
	ck_assert_int_eq(ga_buf_send(rb[0], 100), 0);
	gen_start(2048, GA_PATTERN_PRBS, 0);
	wait_for(stats().delivered >= NBUF);
	ck_assert_int_eq(ga_dev_reg_path(dev, path, sizeof(path), &moff), 0);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_size, GA_CORE_SIZE);
	close_dev();
	ck_assert_int_eq(stat(path, &sb), -1);
}
END_TEST

/* Many agents at once: two threads pushing, the generator, a consumer
 * re-arming with the API, a reader of registers.  Every frame must land
 * whole and in ring order, none lost, none doubled.  Frames carry the
 * counter pattern, so word 0 says which frame it is. */
#define PUSHES	   150
#define GEN_FRAMES 150

static void *pusher(void *arg)
{
	uint32_t base = (uint32_t)(uintptr_t)arg;
	static _Thread_local uint8_t frame[2048];
	unsigned int i;

	for (i = 0; i < PUSHES; i++) {
		uint32_t len = 64 + (i * 37) % 1900;

		ga_pattern_fill(GA_PATTERN_COUNTER, base + i, frame, len);
		if (ga_sim_push(dev, frame, len, 20000))
			return (void *)1;
	}
	return NULL;
}

START_TEST(test_concurrency)
{
	static uint8_t data[PAYLOAD_MAX];
	pthread_t t[2];
	unsigned int k, total = 2 * PUSHES + GEN_FRAMES;
	uint32_t seen_gen = 0;
	void *ret;

	open_running(_i, NULL, NBUF, 0);
	ck_assert_int_eq(pthread_create(&t[0], NULL, pusher, (void *)(uintptr_t)1000000), 0);
	ck_assert_int_eq(pthread_create(&t[1], NULL, pusher, (void *)(uintptr_t)2000000), 0);
	gen_start(777, GA_PATTERN_COUNTER, GEN_FRAMES);
	for (k = 0; k < total; k++) {
		unsigned int i = k % NBUF;
		struct ga_header h;
		uint32_t seq, v;

		wait_for(ga_buf_header(wb[i], &h) == 0 && h.size != 0);
		ck_assert_uint_eq(h.result, 0);
		ck_assert_int_eq(ga_buf_read(wb[i], DDB, data, h.size), 0);
		memcpy(&seq, data, 4);
		ck_assert_int_eq(ga_pattern_check(GA_PATTERN_COUNTER, seq, data, h.size), -1);
		if (seq < 1000000) {
			ck_assert_uint_eq(seq, seen_gen++); /* generator frames in order */
			ck_assert_uint_eq(h.size, 777);
		}
		ck_assert_int_eq(ga_reg_read(dev, GA_REG_RX_FRAME_COUNT, 0, &v), 0);
		ck_assert_int_eq(ga_buf_arm(wb[i]), 0); /* clears the header too */
	}
	for (k = 0; k < 2; k++) {
		ck_assert_int_eq(pthread_join(t[k], &ret), 0);
		ck_assert_ptr_null(ret);
	}
	ck_assert_uint_eq(seen_gen, GEN_FRAMES);
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), total);
	ck_assert_uint_eq(stats().delivered, total);
	ck_assert_uint_eq(stats().dropped, 0);
	close_dev();
}
END_TEST

static void put_header(struct ga_buf *b, uint32_t size, uint8_t result);

/*
 * Dropped frames while the generator runs flat out: each writes its header
 * to write address 0 (the card held back and merged those of a burst, see
 * docs/sim.md), so what software finds there is the last one's, and a
 * header cleared in between comes back with the next drop.
 */
START_TEST(test_drop_header)
{
	struct ga_header h;
	struct ga_sim_gen g;

	open_flavour(_i, NULL);
	create(GA_DIR_WRITE, 2);
	gen_start(100, GA_PATTERN_COUNTER, 5000);
	wait_for(ga_sim_gen_get(dev, &g) == 0 && !g.running);
	gen_start(200, GA_PATTERN_COUNTER, 5000);
	wait_for(ga_sim_gen_get(dev, &g) == 0 && !g.running);
	ck_assert_int_eq(ga_buf_header(wb[0], &h), 0);
	ck_assert_uint_eq(h.size, 200);
	ck_assert_uint_eq(h.first_user, 0x02);
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), 10000);
	ck_assert_uint_eq(stats().dropped, 10000);
	ck_assert_uint_eq(stats().delivered, 0);
	put_header(wb[0], 0, 0);
	gen_start(77, GA_PATTERN_COUNTER, 1);
	wait_for(ga_sim_gen_get(dev, &g) == 0 && !g.running);
	ck_assert_int_eq(ga_buf_header(wb[0], &h), 0);
	ck_assert_uint_eq(h.size, 77);
	ck_assert_int_eq(ga_buf_header(wb[1], &h), 0);
	ck_assert_uint_eq(h.size, 0); /* never written */
	close_dev();
}
END_TEST

/*
 * The write engine switched off and on while the generator runs flat out:
 * no frame is lost or doubled.  Every generated frame is delivered once or
 * dropped (counted either way); the consumer finds every delivered one,
 * each frame number once, each buffer's frames in increasing order, with
 * header and payload exact.
 *
 * Dropped frames write their header to write address 0, buffer 0's, as
 * the firmware does: software cannot tell that header from a frame's, so
 * the consumer switches the engine at a point where it knows.  After every
 * TOGGLE_EVERY frames it takes a frame out of buffer 0 without re-arming
 * it and switches the engine off at once (the engine may be filling the
 * other buffers then), waits for a drop, switches it on (the engine starts
 * again at buffer 0 and waits there), finds the drop's header over buffer
 * 0's old payload, and only then re-arms buffer 0.
 */
#define TOGGLE_FRAMES 20000u
#define TOGGLE_EVERY  40u
#define TOGGLE_SIZE   256u

struct toggle {
	uint8_t seen[TOGGLE_FRAMES];
	uint32_t last[NBUF];
	uint64_t got, since;
	bool hold0; /* buffer 0 emptied, not re-armed: the engine stops there */
};

/* One look at buffer @i: take its frame, if any (re-arm unless held). */
static bool take_frame(struct toggle *t, unsigned int i)
{
	static uint8_t data[TOGGLE_SIZE];
	struct ga_header h;
	uint32_t seq;

	if (i == 0 && t->hold0)
		return false;
	ck_assert_int_eq(ga_buf_header(wb[i], &h), 0);
	if (!h.size)
		return false;
	ck_assert_uint_eq(h.size, TOGGLE_SIZE);
	ck_assert_uint_eq(h.result, 0);
	ck_assert_uint_eq(h.first_user, 0x02);
	ck_assert_int_eq(ga_buf_read(wb[i], DDB, data, TOGGLE_SIZE), 0);
	memcpy(&seq, data, 4);
	ck_assert_msg(seq < TOGGLE_FRAMES, "buffer %u: frame number %u", i, seq);
	ck_assert_int_eq(ga_pattern_check(GA_PATTERN_COUNTER, seq, data, TOGGLE_SIZE), -1);
	ck_assert_msg(!t->seen[seq], "frame %u delivered twice", seq);
	ck_assert_msg(t->last[i] == UINT32_MAX || seq > t->last[i],
		      "buffer %u: frame %u after frame %u", i, seq, t->last[i]);
	t->seen[seq] = 1;
	t->last[i] = seq;
	t->got++;
	t->since++;
	if (i == 0 && t->since >= TOGGLE_EVERY)
		t->hold0 = true;
	else
		ck_assert_int_eq(ga_buf_arm(wb[i]), 0); /* clears the header */
	return true;
}

/* Engine back on, stopped at unarmed buffer 0: the drops' header is there,
 * over the payload of the frame taken before; then re-arm buffer 0. */
static void engine_back_on(struct toggle *t)
{
	static uint8_t data[TOGGLE_SIZE];
	struct ga_header h;
	uint32_t seq;

	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	ck_assert_int_eq(ga_buf_header(wb[0], &h), 0);
	ck_assert_uint_eq(h.size, TOGGLE_SIZE);
	ck_assert_uint_eq(h.first_user, 0x02);
	ck_assert_int_eq(ga_buf_read(wb[0], DDB, data, TOGGLE_SIZE), 0);
	memcpy(&seq, data, 4);
	ck_assert_uint_eq(seq, t->last[0]);
	t->hold0 = false;
	t->since = 0;
	ck_assert_int_eq(ga_buf_arm(wb[0]), 0);
}

static void toggle_case(int flavour, bool gpu)
{
	static struct toggle t;
	uint64_t drops0 = 0;
	unsigned int toggles = 0, i;
	struct ga_sim_stats st;
	struct ga_sim_gen g;
	bool off = false, done = false;
	int idle_scans = 0;
	time_t deadline = time(NULL) + 60;

	use_gpu = gpu;
	open_flavour(flavour, NULL);
	use_gpu = false;
	memset(&t, 0, sizeof(t));
	create(GA_DIR_WRITE, NBUF);
	arm_all(NBUF);
	for (i = 0; i < NBUF; i++)
		t.last[i] = UINT32_MAX;
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	gen_start(TOGGLE_SIZE, GA_PATTERN_COUNTER, TOGGLE_FRAMES);
	while (!done) {
		bool any = false;

		/* A hang guard, not a timing check. */
		ck_assert_msg(time(NULL) < deadline, "stuck: %llu frames seen, %llu delivered",
			      (unsigned long long)t.got, (unsigned long long)stats().delivered);
		for (i = 0; i < NBUF; i++)
			any = take_frame(&t, i) || any;
		ck_assert_int_eq(ga_sim_gen_get(dev, &g), 0);
		if (g.running) {
			if (!off && t.hold0) {
				ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, false), 0);
				off = true;
				drops0 = stats().dropped;
				toggles++;
			} else if (off && stats().dropped > drops0) {
				engine_back_on(&t);
				off = false;
			}
			continue;
		}
		/* Every frame is out: drain what the buffers hold. */
		if (off) {
			if (stats().dropped > drops0) {
				engine_back_on(&t);
			} else { /* the last frames were delivered before the switch */
				ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
				t.hold0 = false;
				ck_assert_int_eq(ga_buf_arm(wb[0]), 0);
			}
			off = false;
		} else if (t.hold0) {
			t.hold0 = false;
			ck_assert_int_eq(ga_buf_arm(wb[0]), 0);
		}
		idle_scans = any ? 0 : idle_scans + 1;
		done = idle_scans >= 2 && t.got == stats().delivered;
	}
	st = stats();
	ck_assert_uint_eq(st.generated, TOGGLE_FRAMES);
	ck_assert_uint_eq(st.delivered + st.dropped, TOGGLE_FRAMES);
	ck_assert_uint_eq(t.got, st.delivered);
	ck_assert_uint_gt(st.dropped, 0);
	ck_assert_uint_gt(st.delivered, 0);
	ck_assert_uint_gt(toggles, 0);
	ck_assert_uint_eq(reg(GA_REG_RX_FRAME_COUNT, 0), TOGGLE_FRAMES);
	ck_assert_uint_eq(reg(GA_REG_AXI_WRITE_ERROR_COUNT, 0), 0);
	close_dev();
}

START_TEST(test_toggle_under_load)
{
	toggle_case(_i, false);
}
END_TEST

START_TEST(test_toggle_under_load_gpu)
{
	toggle_case(_i, true);
}
END_TEST

/* Not a simulated device: sim controls say so. */
START_TEST(test_not_sim)
{
	struct ga_sim_gen g;

	ck_assert_int_eq(ga_sim_gen_get(NULL, &g), -EINVAL);
}
END_TEST

START_TEST(test_patterns)
{
	static const enum ga_pattern all[] = {GA_PATTERN_PRBS, GA_PATTERN_COUNTER, GA_PATTERN_ZERO};
	uint8_t a[1031], b[1031];
	enum ga_pattern p;
	unsigned int k;

	for (k = 0; k < 3; k++) {
		ck_assert_int_eq(ga_pattern_parse(ga_pattern_name(all[k]), &p), 0);
		ck_assert_int_eq(p, all[k]);
		ga_pattern_fill(all[k], 42, a, sizeof(a));
		ck_assert_int_eq(ga_pattern_check(all[k], 42, a, sizeof(a)), -1);
		/* A truncated frame is a prefix of the full one. */
		ga_pattern_fill(all[k], 42, b, 13);
		ck_assert_mem_eq(a, b, 13);
		a[777] ^= 0x10;
		ck_assert_int_eq(ga_pattern_check(all[k], 42, a, sizeof(a)), 777);
	}
	ck_assert_int_eq(ga_pattern_parse("counter\n", &p), 0);
	ck_assert_int_eq(ga_pattern_parse("sine", &p), -EINVAL);
	/* Frame numbers matter (except for zero). */
	ga_pattern_fill(GA_PATTERN_PRBS, 1, a, 64);
	ck_assert_int_ne(ga_pattern_check(GA_PATTERN_PRBS, 2, a, 64), -1);
	ga_pattern_fill(GA_PATTERN_COUNTER, 5, a, 8);
	ck_assert_uint_eq(a[0], 5);
	ck_assert_uint_eq(a[4], 6);
	/* PRBS words differ from each other. */
	ga_pattern_fill(GA_PATTERN_PRBS, 0, a, 8);
	ck_assert_mem_ne(a, a + 4, 4);
	ck_assert_uint_eq(ga_crc32(0, "123456789", 9), 0xCBF43926u);
	ck_assert_uint_eq(ga_crc32(ga_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
}
END_TEST

/* The timing pattern: an LCLS-II TimingHeader-shaped record, then counter
 * words; a check ignores the time stamp and nothing else. */
START_TEST(test_timing_pattern)
{
	struct ga_timing_header th;
	uint8_t a[100];
	enum ga_pattern p;
	uint32_t w;
	time_t now = time(NULL);

	ck_assert_int_eq(ga_pattern_parse("timing", &p), 0);
	ck_assert_int_eq(p, GA_PATTERN_TIMING);
	ck_assert_str_eq(ga_pattern_name(GA_PATTERN_TIMING), "timing");
	ga_pattern_fill(GA_PATTERN_TIMING, 7, a, sizeof(a));
	memcpy(&th, a, sizeof(th));
	ck_assert_uint_eq(th.pulse_ctl & GA_TIMING_PULSE_MASK, GA_TIMING_PULSE0 + 7);
	ck_assert_uint_eq(th.pulse_ctl >> 56, GA_TIMING_CONTROL);
	ck_assert_uint_eq(th.evt_counter, 7);
	ck_assert_uint_eq(th.env, GA_TIMING_ENV);
	ck_assert_uint_lt(th.time_ns, 1000000000u);
	ck_assert_int_le(llabs((long long)th.time_s - (long long)now), 5);
	{
		/* ga_timing_decode reads the same record byte by byte */
		struct ga_timing_header d;

		ga_timing_decode(a, &d);
		ck_assert_mem_eq(&d, &th, sizeof(d));
	}
	memcpy(&w, a + GA_TIMING_HDR_BYTES, 4);
	ck_assert_uint_eq(w, 7 + GA_TIMING_HDR_BYTES / 4); /* counter words go on */
	ck_assert_int_eq(ga_pattern_check(GA_PATTERN_TIMING, 7, a, sizeof(a)), -1);
	ck_assert_int_ne(ga_pattern_check(GA_PATTERN_TIMING, 8, a, sizeof(a)), -1);
	a[GA_TIMING_TIME_OFF + 7] ^= 0x40; /* another clock: still this frame */
	ck_assert_int_eq(ga_pattern_check(GA_PATTERN_TIMING, 7, a, sizeof(a)), -1);
	a[20] ^= 1; /* evtCounter */
	ck_assert_int_eq(ga_pattern_check(GA_PATTERN_TIMING, 7, a, sizeof(a)), 20);
	a[20] ^= 1;
	a[6] ^= 1; /* pulse ID */
	ck_assert_int_eq(ga_pattern_check(GA_PATTERN_TIMING, 7, a, sizeof(a)), 6);
	a[6] ^= 1;
	a[16] ^= 1; /* env */
	ck_assert_int_eq(ga_pattern_check(GA_PATTERN_TIMING, 7, a, 17), 16);
}
END_TEST

/* Header of a frame as the card would write it into write buffer @b. */
static void put_header(struct ga_buf *b, uint32_t size, uint8_t result)
{
	struct ga_header h = {.size = size, .result = result};
	uint8_t raw[8];

	ga_header_encode(&h, raw);
	ck_assert_int_eq(ga_buf_write(b, 0, raw, sizeof(raw)), 0);
}

static void info_eq(const struct ga_buf_info *a, const struct ga_buf_info *b)
{
	ck_assert_int_eq(a->dir, b->dir);
	ck_assert_uint_eq(a->index, b->index);
	ck_assert_uint_eq(a->size, b->size);
	ck_assert_uint_eq(a->payload_max, b->payload_max);
	ck_assert_uint_eq(a->gpu_address, b->gpu_address);
	ck_assert_uint_eq(a->bus_address, b->bus_address);
	ck_assert(a->gpu_memory == b->gpu_memory);
	ck_assert_msg(a->state == b->state, "%s buffer %u: %s vs %s",
		      a->dir == GA_DIR_WRITE ? "write" : "read", a->index,
		      ga_buf_state_name(a->state), ga_buf_state_name(b->state));
}

/*
 * ga_buf_info_all gives, buffer by buffer, what ga_buf_info gives, in
 * every state (write: filled by the generator, armed, filled over an arm,
 * errored, idle; read: completed, busy, idle), with one batched header
 * read; cap below the total fills cap entries and counts them all; it
 * notices a fill as ga_buf_info does (the arm is gone afterwards).  On GPU
 * memory when @gpu and one is present (the CUDA layer's read_many).
 */
static void info_all_case(int flavour, bool gpu)
{
	enum ga_buf_state want_w[6] = {GA_BUF_READY, GA_BUF_FREE, GA_BUF_READY,
				       GA_BUF_ERROR, GA_BUF_IDLE, GA_BUF_FREE};
	enum ga_buf_state want_r[3] = {GA_BUF_IDLE, GA_BUF_IDLE, GA_BUF_IDLE};
	struct ga_buf_info all[8], one;
	struct ga_buf *w[6], *r[3];
	unsigned int i, count = 99;

	use_gpu = gpu;
	open_flavour(flavour, NULL);
	use_gpu = false;
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, i, BUF_SIZE, &w[i]), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(ga_buf_create(dev, GA_DIR_READ, i, BUF_SIZE, &r[i]), 0);
	wb[0] = w[0];
	ck_assert_int_eq(ga_buf_arm(w[0]), 0);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	gen_start(64, GA_PATTERN_PRBS, 1);
	wait_for(stats().delivered == 1);
	ck_assert_int_eq(ga_buf_arm(w[1]), 0);
	ck_assert_int_eq(ga_buf_arm(w[2]), 0);
	put_header(w[2], 100, 0);
	put_header(w[3], 100, 2);
	ck_assert_int_eq(ga_buf_arm(w[5]), 0);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_READ, true), 0);
	ck_assert_int_eq(ga_buf_send(r[0], 10), 0); /* done at once */
	ck_assert_int_eq(ga_buf_send(r[2], 10), 0); /* waits for index 1 */
	if (v4()) {
		want_r[0] = GA_BUF_READY;
		want_r[2] = GA_BUF_BUSY;
	}

	memset(all, 0xA5, sizeof(all));
	ck_assert_int_eq(ga_buf_info_all(dev, GA_DIR_WRITE, all, 8, &count), 0);
	ck_assert_uint_eq(count, 6);
	for (i = 0; i < 6; i++) {
		ck_assert_uint_eq(all[i].index, i);
		ck_assert_msg(all[i].state == want_w[i], "write %u: %s, want %s", i,
			      ga_buf_state_name(all[i].state), ga_buf_state_name(want_w[i]));
	}
	ck_assert_uint_eq(all[6].index, 0xA5A5A5A5u); /* nothing past the total */
	/* Reading a state changes nothing: buffer 2, filled over its arm and
	 * read as READY above, is FREE once its doorbell is cleared (what a
	 * consumer does before re-arming it), whoever looked before. */
	put_header(w[2], 0, 0);
	want_w[2] = GA_BUF_FREE;
	ck_assert_int_eq(ga_buf_info(w[2], &one), 0);
	ck_assert_int_eq(one.state, GA_BUF_FREE);
	ck_assert_int_eq(ga_buf_info(w[2], &one), 0);
	ck_assert_int_eq(one.state, GA_BUF_FREE);

	/* Same infos as one by one, both directions; cap below the total. */
	memset(all, 0xA5, sizeof(all));
	count = 0;
	ck_assert_int_eq(ga_buf_info_all(dev, GA_DIR_WRITE, all, 4, &count), 0);
	ck_assert_uint_eq(count, 6);
	ck_assert_uint_eq(all[4].index, 0xA5A5A5A5u);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(ga_buf_info(w[i], &one), 0);
		ck_assert_int_eq(one.state, want_w[i]);
		info_eq(&all[i], &one);
	}
	ck_assert_int_eq(ga_buf_info_all(dev, GA_DIR_WRITE, all, 8, &count), 0);
	for (i = 0; i < 6; i++) {
		ck_assert_int_eq(ga_buf_info(w[i], &one), 0);
		info_eq(&all[i], &one);
		ck_assert(all[i].gpu_memory == ga_dev_has(dev, GA_CAP_GPU_MEMORY));
	}
	ck_assert_int_eq(ga_buf_info_all(dev, GA_DIR_READ, all, 8, &count), 0);
	ck_assert_uint_eq(count, 3);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(ga_buf_info(r[i], &one), 0);
		ck_assert_msg(one.state == want_r[i], "read %u: %s", i,
			      ga_buf_state_name(one.state));
		info_eq(&all[i], &one);
	}
	/* Counting only; bad arguments. */
	ck_assert_int_eq(ga_buf_info_all(dev, GA_DIR_READ, NULL, 0, &count), 0);
	ck_assert_uint_eq(count, 3);
	ck_assert_int_eq(ga_buf_info_all(dev, GA_DIR_READ, NULL, 1, &count), -EINVAL);
	ck_assert_int_eq(ga_buf_info_all(dev, GA_DIR_READ, all, 8, NULL), -EINVAL);
	ck_assert_int_eq(ga_buf_info_all(NULL, GA_DIR_READ, all, 8, &count), -EINVAL);
	ck_assert_int_eq(ga_buf_info_all(dev, (enum ga_dir)2, all, 8, &count), -EINVAL);
	close_dev();
}

START_TEST(test_info_all)
{
	info_all_case(_i, false);
}
END_TEST

START_TEST(test_info_all_gpu)
{
	info_all_case(_i, true);
}
END_TEST

static Suite *sim_suite(void)
{
	Suite *s = suite_create("sim");

	suite_add_tests(s, "flavours", 120,
			SUITE_TESTS({test_open_info, NFLAV}, {test_stream, NFLAV},
				    {test_push_drop_overflow, NFLAV}, {test_faults, NFLAV},
				    {test_count_reset, NFLAV}, {test_latency, NFLAV},
				    {test_read_path, NFLAV}, {test_shm_consumer, NFLAV},
				    {test_versions, NFLAV}, {test_lifecycle, NFLAV},
				    {test_close_alive, NFLAV}, {test_concurrency, NFLAV},
				    {test_drop_header, NFLAV}, {test_toggle_under_load, NFLAV},
				    {test_info_all, NFLAV}));
	suite_add_tests(s, "once", 60,
			SUITE_TESTS({test_bad_specs}, {test_not_sim}, {test_patterns},
				    {test_timing_pattern}, {test_stall_sleeps}));
	return s;
}

/* The cases that need GPU memory: their own ctest (test_sim_gpu), which is
 * skipped (77) where there is no GPU (tests/common/gpu_probe.h) instead of
 * running the host path. */
static Suite *sim_gpu_suite(void)
{
	return suite_of("sim_gpu", "flavours", 120,
			SUITE_TESTS({test_stream_gpu, NFLAV}, {test_info_all_gpu, NFLAV},
				    {test_toggle_under_load_gpu, NFLAV}));
}

int main(int argc, char **argv)
{
	bool gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;

	if (gpu) {
		struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;
		struct ga_dev *d = NULL;
		int rc = gpu_probe();

		if (rc)
			return rc; /* 77 only where there is no GPU */
		o.use_gpu = true;
		rc = ga_dev_open_opts("sim", &o, &d);
		if (gpu_card_in_gpu_memory(rc, d))
			return EXIT_FAILURE;
	}
	NFLAV = flavours_init();
	return run_suite(gpu ? sim_gpu_suite() : sim_suite());
}
