// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The public device API (gpuasync/device.h) through the simulated card:
 * open specs, identity per firmware version, register access by id, name
 * and raw offset with every error, read-modify-write that leaves the other
 * fields of a word alone (a loop over the register table), concurrent
 * writers of one word, and the buffer rules (index order, sizes, the V4
 * shared size, limits, destroy order, arming, state, header, memory).
 *
 * The upstream driver cannot remove one buffer; test_emulated_remove runs
 * the library's emulation (remove all, register the rest again) against
 * the sim with its per-buffer removal hidden, then pushes frames to show
 * the re-registered buffers still work.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuasync/device.h"
#include "gpuasync/sim.h"
#include "internal.h"
#include "common/run_suite.h"

#define K64 65536u

static struct ga_dev *open_sim(const char *spec)
{
	struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;
	struct ga_dev *dev = NULL;
	int rc;

	o.use_gpu = false; /* deterministic: host memory everywhere */
	rc = ga_dev_open_opts(spec, &o, &dev);
	ck_assert_msg(rc == 0, "open %s: %d (%s)", spec, rc, ga_last_error());
	ck_assert_ptr_nonnull(dev);
	return dev;
}

static uint32_t rd(struct ga_dev *dev, enum ga_reg_id id, unsigned int index)
{
	uint32_t v = 0xdeadbeef;
	int rc = ga_reg_read(dev, id, index, &v);

	ck_assert_msg(rc == 0, "read %s[%u]: %d (%s)", ga_regs[id].name, index, rc,
		      ga_last_error());
	return v;
}

static void wr(struct ga_dev *dev, enum ga_reg_id id, unsigned int index, uint32_t v)
{
	int rc = ga_reg_write(dev, id, index, v);

	ck_assert_msg(rc == 0, "write %s[%u]=%u: %d (%s)", ga_regs[id].name, index, v, rc,
		      ga_last_error());
}

/* An error must come with an explanation. */
#define ck_err(expr, want)                                                                         \
	do {                                                                                       \
		int rc_ = (expr);                                                                  \
		ck_assert_msg(rc_ == (want), "%s: got %d, want %d (%s)", #expr, rc_, (want),       \
			      ga_last_error());                                                    \
		ck_assert_msg(ga_last_error()[0] != '\0', "%s: no explanation", #expr);            \
	} while (0)

/* ---- open ------------------------------------------------------------------ */

START_TEST(test_open_specs)
{
	struct ga_dev *dev = (struct ga_dev *)1;
	struct ga_dev_info info;

	dev = open_sim("sim");
	ck_assert_int_eq(ga_dev_info(dev, &info), 0);
	ck_assert_str_eq(info.backend, "sim");
	ck_assert_str_eq(info.path, "sim");
	ck_assert_uint_eq(info.version, 4);
	ck_assert_uint_eq(info.dma_data_bytes, 32);
	ck_assert_uint_eq(info.clock_hz, 250000000u);
	ck_assert_str_eq(info.gpu, "none (host memory)");
	ck_assert_msg(info.memory_note[0] != '\0', "host memory without a reason");
	ck_assert(ga_dev_has(dev, GA_CAP_SIM));
	ck_assert(ga_dev_has(dev, GA_CAP_SUPPORTED));
	ck_assert(!ga_dev_has(dev, GA_CAP_GPU_MEMORY));
	ck_assert(!ga_dev_has(dev, GA_CAP_COUNT));
	ga_dev_close(dev);

	dev = (struct ga_dev *)1;
	ck_err(ga_dev_open("sim:version=9", &dev), -ERANGE);
	ck_assert_ptr_null(dev);
	ck_err(ga_dev_open("sim:version=abc", &dev), -EINVAL);
	ck_err(ga_dev_open("sim:frobnicate=1", &dev), -EINVAL);
	ck_assert_msg(strstr(ga_last_error(), "frobnicate"), "\"%s\"", ga_last_error());
	ck_err(ga_dev_open("/dev/datadev_does_not_exist_7", &dev), -ENOENT);
	ck_assert_msg(strstr(ga_last_error(), "/dev/datadev_does_not_exist_7"), "\"%s\"",
		      ga_last_error());
	ck_assert_ptr_null(dev);
	ck_err(ga_dev_open("", &dev), -EINVAL);
	ck_err(ga_dev_open(NULL, &dev), -EINVAL);
	ck_err(ga_dev_open("sim", NULL), -EINVAL);
	ga_dev_close(NULL);
}
END_TEST

/* Identity for every firmware version, with both latency-block choices. */
START_TEST(test_info_per_version)
{
	unsigned int v = (unsigned int)_i + 1;
	struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;
	struct ga_dev_info info;
	struct ga_dev *dev;
	char spec[64];

	snprintf(spec, sizeof(spec), "sim:version=%u,dma_data_bytes=64,clock_hz=156250000", v);
	dev = open_sim(spec);
	ck_assert_int_eq(ga_dev_info(dev, &info), 0);
	ck_assert_uint_eq(info.version, v);
	ck_assert_uint_eq(info.dma_data_bytes, 64);
	ck_assert_uint_eq(info.clock_hz, 156250000u);
	ck_assert_uint_eq(info.max_buffers, v <= 3 ? 16 : 1024);
	ck_assert_int_eq(info.layout, v <= 3 ? GA_LAYOUT_V1 : GA_LAYOUT_V4);
	ck_assert_int_eq(ga_dev_layout(dev), info.layout);
	ck_assert_uint_eq(rd(dev, GA_REG_VERSION, 0), v);
	ck_assert_uint_eq(rd(dev, GA_REG_MAX_BUFFERS, 0), info.max_buffers);
	ck_assert_uint_eq(rd(dev, GA_REG_DMA_DATA_BYTES, 0), 64);
	ga_dev_close(dev);

	if (v < 4)
		return;
	/* The legacy latency block, by spec and by open option. */
	snprintf(spec, sizeof(spec), "sim:version=%u,latency=legacy", v);
	dev = open_sim(spec);
	ck_assert_int_eq(ga_dev_layout(dev), GA_LAYOUT_V4_LEGACY);
	ga_dev_close(dev);
	o.use_gpu = false;
	o.latency_legacy = true;
	snprintf(spec, sizeof(spec), "sim:version=%u", v);
	ck_assert_int_eq(ga_dev_open_opts(spec, &o, &dev), 0);
	ck_assert_int_eq(ga_dev_layout(dev), GA_LAYOUT_V4_LEGACY);
	ga_dev_close(dev);
}
END_TEST

/* ---- registers ----------------------------------------------------------- */

START_TEST(test_reg_errors)
{
	struct ga_dev *dev = open_sim("sim:version=4,max_buffers=8");
	struct ga_dev *v1 = open_sim("sim:version=3");
	struct ga_dev *v5 = open_sim("sim:version=5");
	uint32_t v = 0;

	/* by id, by name, raw: the same word */
	ck_assert_uint_eq(rd(dev, GA_REG_VERSION, 0), 4);
	ck_assert_int_eq(ga_reg_read_name(dev, "version", 0, &v), 0);
	ck_assert_uint_eq(v, 4);
	ck_assert_int_eq(ga_reg_read_raw(dev, 0x30, &v), 0);
	ck_assert_uint_eq(v & 0xff, 4);
	ck_assert_int_eq(ga_reg_write_raw(dev, 0x4000 + 8 * 5, 0x12345678), 0);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_ADDR_LO, 5), 0x12345678);
	ck_assert_int_eq(ga_reg_write_name(dev, "write_address_high", 5, 0xabc), 0);
	ck_assert_int_eq(ga_reg_read_raw(dev, 0x4000 + 8 * 5 + 4, &v), 0);
	ck_assert_uint_eq(v, 0xabc);

	/* access modes */
	ck_err(ga_reg_write(dev, GA_REG_VERSION, 0, 4), -EACCES);
	ck_err(ga_reg_write(dev, GA_REG_RX_FRAME_COUNT, 0, 0), -EACCES);
	ck_err(ga_reg_write_name(dev, "dma_data_bytes", 0, 1), -EACCES);
	ck_err(ga_reg_read(dev, GA_REG_COUNT_RESET, 0, &v), -EACCES);
	ck_err(ga_reg_read(dev, GA_REG_FREE_LIST, 0, &v), -EACCES);
	ck_assert_int_eq(ga_reg_write(dev, GA_REG_COUNT_RESET, 0, 0xffffffffu), 0);

	/* value wider than the field */
	ck_err(ga_reg_write(dev, GA_REG_WRITE_ENABLE, 0, 2), -ERANGE);
	ck_err(ga_reg_write(dev, GA_REG_AR_CACHE, 0, 16), -ERANGE);
	ck_err(ga_reg_write(v1, GA_REG_WRITE_COUNT, 0, 256), -ERANGE);
	ck_assert_int_eq(ga_reg_write(dev, GA_REG_WRITE_COUNT, 0, 7), 0);

	/* absent from the running firmware */
	ck_err(ga_reg_read(dev, GA_REG_ROUTE_MASK0, 0, &v), -ENOENT);
	ck_err(ga_reg_read(dev, GA_REG_WRITE_SIZE, 0, &v), -ENOENT);
	ck_err(ga_reg_read(dev, GA_REG_WRITE_ACTIVE, 0, &v), -ENOENT);
	ck_err(ga_reg_write(dev, GA_REG_ROUTE_MASK0, 0, 0), -ENOENT);
	ck_err(ga_reg_read(v1, GA_REG_WRITE_MAX_SIZE, 0, &v), -ENOENT);
	ck_err(ga_reg_read(v1, GA_REG_MAX_READ_QUEUE, 0, &v), -ENOENT);
	ck_assert_int_eq(ga_reg_read(v5, GA_REG_WRITE_ACTIVE, 0, &v), 0);
	ck_err(ga_reg_read_name(dev, "no_such_register", 0, &v), -ENOENT);
	ck_err(ga_reg_write_name(dev, "no_such_register", 0, 0), -ENOENT);
	ck_err(ga_reg_read(dev, GA_REG_COUNT, 0, &v), -ENOENT);

	/* instance index */
	ck_err(ga_reg_read(dev, GA_REG_VERSION, 1, &v), -ERANGE);
	ck_err(ga_reg_write(dev, GA_REG_FREE_LIST, 8, 1), -ERANGE);
	ck_err(ga_reg_read(dev, GA_REG_WRITE_ADDR_LO, 8, &v), -ERANGE);
	ck_assert_int_eq(ga_reg_read(dev, GA_REG_WRITE_ADDR_LO, 7, &v), 0);
	ck_err(ga_reg_read(dev, GA_REG_TOTAL_LATENCY, 1, &v), -ERANGE);
	ck_assert_int_eq(ga_reg_read(v1, GA_REG_TOTAL_LATENCY, 15, &v), 0);
	ck_err(ga_reg_read(v1, GA_REG_TOTAL_LATENCY, 16, &v), -ERANGE);

	/* raw window */
	ck_err(ga_reg_read_raw(dev, 2, &v), -EINVAL);
	ck_err(ga_reg_write_raw(dev, 0x31, 0), -EINVAL);
	ck_err(ga_reg_read_raw(dev, GA_CORE_SIZE, &v), -ERANGE);
	ck_err(ga_reg_write_raw(dev, 0xfffffffc, 0), -ERANGE);
	ck_assert_int_eq(ga_reg_read_raw(dev, GA_CORE_SIZE - 4, &v), 0);

	/* NULL arguments */
	ck_err(ga_reg_read(dev, GA_REG_VERSION, 0, NULL), -EINVAL);
	ck_err(ga_reg_read(NULL, GA_REG_VERSION, 0, &v), -EINVAL);

	ga_dev_close(v5);
	ga_dev_close(v1);
	ga_dev_close(dev);
}
END_TEST

static bool same_word(struct ga_dev *dev, enum ga_reg_id a, enum ga_reg_id b)
{
	enum ga_layout l = ga_dev_layout(dev);
	unsigned int ver = 0;
	uint32_t oa, ob;
	struct ga_dev_info info;

	ga_dev_info(dev, &info);
	ver = info.version;
	if (ga_reg_offset(a, l, ver, 0, info.max_buffers, &oa) ||
	    ga_reg_offset(b, l, ver, 0, info.max_buffers, &ob))
		return false;
	return oa == ob;
}

/* For every RW field that shares its word: writing its max and then 0
 * leaves every other field of that word as it was. */
START_TEST(test_rmw_neighbours)
{
	unsigned int v = (unsigned int)_i + 1;
	enum ga_layout l;
	struct ga_dev *dev;
	unsigned int tested = 0;
	char spec[32];

	snprintf(spec, sizeof(spec), "sim:version=%u,max_buffers=16", v);
	dev = open_sim(spec);
	l = ga_dev_layout(dev);
	for (unsigned int id = 0; id < GA_REG_COUNT; id++) {
		uint32_t before[GA_REG_COUNT], max, vals[2];

		if (ga_regs[id].access != GA_RW || !ga_reg_present(id, l, v) ||
		    ga_reg_field_mask(id, l) == 0xffffffffu)
			continue;
		max = ga_reg_field_max(id, l);
		vals[0] = max;
		vals[1] = 0;
		for (unsigned int o = 0; o < GA_REG_COUNT; o++)
			if (o != id && same_word(dev, id, o) && ga_regs[o].access != GA_WO)
				before[o] = rd(dev, o, 0);
		for (unsigned int k = 0; k < 2; k++) {
			wr(dev, id, 0, vals[k]);
			ck_assert_msg(rd(dev, id, 0) == vals[k], "v%u %s: wrote %u, read %u", v,
				      ga_regs[id].name, vals[k], rd(dev, id, 0));
			for (unsigned int o = 0; o < GA_REG_COUNT; o++) {
				if (o == id || !same_word(dev, id, o) || ga_regs[o].access == GA_WO)
					continue;
				/* write_buffers is write_count seen as a count: it moves. */
				if ((ga_regs[o].flags & GA_F_PLUS_ONE) &&
				    (ga_reg_field_mask(o, l) & ga_reg_field_mask(id, l)))
					continue;
				ck_assert_msg(rd(dev, o, 0) == before[o],
					      "v%u: writing %s=%u changed %s from %u to %u", v,
					      ga_regs[id].name, vals[k], ga_regs[o].name, before[o],
					      rd(dev, o, 0));
			}
		}
		tested++;
	}
	/* ar_cache, aw_cache, write/read count and enable at least */
	ck_assert_msg(tested >= 6, "only %u shared-word fields tested", tested);
	ga_dev_close(dev);
}
END_TEST

/* Four threads, one field each of the 0x08 word: a read-modify-write that
 * is not atomic loses another thread's update, which that thread sees. */
struct rmw_arg {
	struct ga_dev *dev;
	enum ga_reg_id id;
	unsigned int seed;
	atomic_uint *failures;
	uint32_t last;
};

#define RMW_ITERS 20000

static void *rmw_thread(void *p)
{
	struct rmw_arg *a = p;
	uint32_t max = ga_reg_field_max(a->id, ga_dev_layout(a->dev));

	for (unsigned int i = 0; i < RMW_ITERS; i++) {
		uint32_t want = (i * a->seed + 1) % (max < 15 ? max + 1 : 15), got = 0;

		if (ga_reg_write(a->dev, a->id, 0, want) || ga_reg_read(a->dev, a->id, 0, &got) ||
		    got != want)
			atomic_fetch_add(a->failures, 1);
		a->last = want;
	}
	return NULL;
}

START_TEST(test_rmw_concurrent)
{
	static const enum ga_reg_id ids[4] = {GA_REG_WRITE_COUNT, GA_REG_WRITE_ENABLE,
					      GA_REG_READ_COUNT, GA_REG_READ_ENABLE};
	struct ga_dev *dev = open_sim("sim:version=4,max_buffers=16");
	struct rmw_arg args[4];
	pthread_t th[4];
	atomic_uint failures = 0;

	for (unsigned int t = 0; t < 4; t++) {
		args[t] = (struct rmw_arg){dev, ids[t], 3 + 2 * t, &failures, 0};
		ck_assert_int_eq(pthread_create(&th[t], NULL, rmw_thread, &args[t]), 0);
	}
	for (unsigned int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	ck_assert_msg(atomic_load(&failures) == 0, "%u lost updates", atomic_load(&failures));
	for (unsigned int t = 0; t < 4; t++)
		ck_assert_uint_eq(rd(dev, ids[t], 0), args[t].last);
	ga_dev_close(dev);
}
END_TEST

/* Stream monitors through the library: 64-bit counts read whole (and
 * refused, not cut, by the 32-bit call once they pass 32 bits), and
 * count_reset clearing both monitors as well as the core's counters. */
START_TEST(test_monitor_counts)
{
	struct ga_dev *dev = open_sim("sim:version=4,max_buffers=4");
	volatile uint32_t *regs;
	uint8_t payload[64] = {0};
	uint64_t v = 0;
	uint32_t v32;

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(ga_sim_push(dev, payload, sizeof(payload), 5000), 0);
	ck_assert_int_eq(ga_reg_read64(dev, GA_REG_IB_MON_FRAME_COUNT, 0, &v), 0);
	ck_assert_uint_eq(v, 3);
	ck_assert_uint_eq(rd(dev, GA_REG_IB_MON_FRAME_COUNT, 0), 3);
	ck_assert_uint_eq(rd(dev, GA_REG_IB_MON_FRAME_SIZE_MAX, 0), 64);
	ck_assert_uint_eq(rd(dev, GA_REG_RX_FRAME_COUNT, 0), 3);
	/* the high word (SURF: FrameCnt at 0x104, 64 bits) */
	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), 0);
	regs[(0x100 + 0x08) / 4] = 2;
	ck_assert_int_eq(ga_reg_read64(dev, GA_REG_IB_MON_FRAME_COUNT, 0, &v), 0);
	ck_assert_uint_eq(v, (2ull << 32) + 3);
	ck_assert_int_eq(ga_reg_read(dev, GA_REG_IB_MON_FRAME_COUNT, 0, &v32), -EOVERFLOW);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "inbound_frames"));
	ga_dev_unmap_regs(dev, regs);
	/* the monitor reset alone is a strobe: it cannot be read */
	ck_assert_int_eq(ga_reg_read(dev, GA_REG_IB_MON_RESET, 0, &v32), -EACCES);
	wr(dev, GA_REG_COUNT_RESET, 0, 1);
	ck_assert_int_eq(ga_reg_read64(dev, GA_REG_IB_MON_FRAME_COUNT, 0, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_uint_eq(rd(dev, GA_REG_RX_FRAME_COUNT, 0), 0);
	/* no frames since: max and min both re-armed to the last size */
	ck_assert_uint_eq(rd(dev, GA_REG_IB_MON_FRAME_SIZE_MIN, 0), 64);
	ga_dev_close(dev);
}
END_TEST

/* write_buffers/read_buffers are the count fields + 1 (the firmware keeps
 * the index of the ring's last buffer); the raw fields stay as they are. */
START_TEST(test_buffer_counts)
{
	for (unsigned int ver = 1; ver <= 5; ver++) {
		struct ga_dev *dev;
		struct ga_buf *b[3];
		char spec[48];
		uint32_t v;

		snprintf(spec, sizeof(spec), "sim:version=%u,max_buffers=4", ver);
		dev = open_sim(spec);
		for (unsigned int i = 0; i < 3; i++)
			b[i] = NULL;
		for (unsigned int i = 0; i < 3; i++) {
			ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, i, K64, &b[i]), 0);
			ck_assert_uint_eq(rd(dev, GA_REG_WRITE_COUNT, 0), i);
			ck_assert_uint_eq(rd(dev, GA_REG_WRITE_BUFFERS, 0), i + 1);
			ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), i + 1);
		}
		ck_assert_int_eq(ga_buf_create(dev, GA_DIR_READ, 0, K64, &b[0]), 0);
		ck_assert_int_eq(ga_buf_create(dev, GA_DIR_READ, 1, K64, &b[1]), 0);
		ck_assert_uint_eq(rd(dev, GA_REG_READ_COUNT, 0), 1);
		ck_assert_uint_eq(rd(dev, GA_REG_READ_BUFFERS, 0), 2);
		/* a view is read-only: the ring is the driver's business */
		ck_assert_int_eq(ga_reg_write(dev, GA_REG_WRITE_BUFFERS, 0, 1), -EACCES);
		ck_assert_int_eq(ga_reg_read(dev, GA_REG_WRITE_BUFFERS, 0, &v), 0);
		ck_assert_uint_eq(v, 3);
		ga_dev_close(dev);
	}
}
END_TEST

/* A card whose link is down answers all-ones: seen as down, every write
 * refused with -ENOLINK before anything reaches the card, identity reads
 * refused too; back up, all works again.  Down at open: the open fails. */
START_TEST(test_link_down)
{
	struct ga_dev *dev = open_sim("sim:version=5,max_buffers=4");
	struct ga_buf *w = NULL, *r = NULL, *w1 = NULL;
	char text[GA_FW_TEXT_MAX];
	struct ga_buf_info bi;
	uint32_t raw = 0;

	ck_assert(ga_dev_has(dev, GA_CAP_FIRMWARE_ID));
	ck_assert_int_eq(ga_fw_read(dev, GA_FW_GPU_ENABLE, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "1");
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 0, K64, &w), 0);
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_READ, 0, K64, &r), 0);
	wr(dev, GA_REG_AW_CACHE, 0, 3);
	ck_assert_int_eq(ga_dev_link(dev), 1);

	ck_assert_int_eq(ga_sim_link_set(dev, false), 0);
	ck_assert_int_eq(ga_dev_link(dev), 0);
	/* reads: all ones is no value (issue 24 item 2), but a buffer
	 * state still reads, and the buffers are not taken for lost */
	ck_assert_int_eq(ga_reg_read_raw(dev, 0x30, &raw), -ENOLINK);
	ck_assert_int_eq(ga_reg_read(dev, GA_REG_AW_CACHE, 0, &raw), -ENOLINK);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "no value to read"));
	ck_assert_int_eq(ga_buf_info(w, &bi), 0);
	ck_assert_int_ne(bi.state, GA_BUF_ERROR);
	ck_assert_uint_eq(ga_dev_registrations_lost(dev), 0);
	ck_assert_int_eq(ga_reg_write(dev, GA_REG_AW_CACHE, 0, 5), -ENOLINK);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "link down"));
	ck_assert_int_eq(ga_reg_write(dev, GA_REG_COUNT_RESET, 0, 1), -ENOLINK);
	ck_assert_int_eq(ga_reg_write_raw(dev, 0x04, 0), -ENOLINK);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), -ENOLINK);
	ck_assert_int_eq(ga_buf_arm(w), -ENOLINK);
	ck_assert_int_eq(ga_buf_arm_many(dev, (const unsigned int[]){0}, 1), -ENOLINK);
	ck_assert_int_eq(ga_buf_send(r, 16), -ENOLINK);
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 1, K64, &w1), -ENOLINK);
	ck_assert_int_eq(ga_fw_read(dev, GA_FW_GIT_HASH, text, sizeof(text)), -ENOLINK);

	ck_assert_int_eq(ga_sim_link_set(dev, true), 0);
	ck_assert_int_eq(ga_dev_link(dev), 1);
	/* nothing of the refused writes reached the card */
	ck_assert_uint_eq(rd(dev, GA_REG_AW_CACHE, 0), 3);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_ENABLE, 0), 0);
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 1);
	ck_assert_int_eq(ga_buf_arm(w), 0);
	ck_assert_int_eq(ga_buf_info(w, &bi), 0);
	ck_assert_int_eq(bi.state, GA_BUF_FREE);
	ck_assert_uint_eq(ga_dev_registrations_lost(dev), 0);
	wr(dev, GA_REG_AW_CACHE, 0, 5);
	ck_assert_uint_eq(rd(dev, GA_REG_AW_CACHE, 0), 5);
	ga_dev_close(dev);

	dev = NULL;
	ck_assert_int_eq(ga_dev_open("sim:link=down", &dev), -ENOLINK);
	ck_assert_ptr_null(dev);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "0xffffffff"));
	ck_assert_int_eq(ga_dev_open("sim:link=sideways", &dev), -EINVAL);
}
END_TEST

/* AxiVersion's ScratchPad on the simulated card, as pyrogue checks it:
 * 0 at power-up, keeps every pattern written, identity around it ignores
 * writes; read-only rows refuse with -EACCES, link down with -ENOLINK;
 * a new card powers up at 0 again. */
START_TEST(test_fw_scratch_pad)
{
	static const uint32_t pat[] = {0xdeadbeef, 0xffffffff, 1, 0x5a5aa5a5, 0};
	struct ga_dev *dev = open_sim("sim:version=4");
	char text[GA_FW_TEXT_MAX], ver[GA_FW_TEXT_MAX];

	ck_assert_int_eq(ga_fw_read(dev, GA_FW_SCRATCH_PAD, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "0x00000000");
	ck_assert_int_eq(ga_fw_read(dev, GA_FW_FPGA_VERSION, ver, sizeof(ver)), 0);
	for (size_t k = 0; k < sizeof(pat) / sizeof(pat[0]); k++) {
		char want[16];

		ck_assert_int_eq(ga_fw_write(dev, GA_FW_SCRATCH_PAD, pat[k]), 0);
		ck_assert_int_eq(ga_fw_read(dev, GA_FW_SCRATCH_PAD, text, sizeof(text)), 0);
		snprintf(want, sizeof(want), "0x%08x", pat[k]);
		ck_assert_str_eq(text, want);
	}
	ck_assert_int_eq(ga_fw_write(dev, GA_FW_SCRATCH_PAD, 0x1234), 0);
	ck_assert_int_eq(ga_fw_write(dev, GA_FW_FPGA_VERSION, 7), -EACCES);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "read-only"));
	ck_assert_int_eq(ga_fw_write(dev, GA_FW_COUNT, 7), -ENOENT);
	ck_assert_int_eq(ga_fw_read(dev, GA_FW_FPGA_VERSION, text, sizeof(text)), 0);
	ck_assert_str_eq(text, ver);
	ck_assert_int_eq(ga_sim_link_set(dev, false), 0);
	ck_assert_int_eq(ga_fw_write(dev, GA_FW_SCRATCH_PAD, 0x99), -ENOLINK);
	ck_assert_int_eq(ga_sim_link_set(dev, true), 0);
	ck_assert_int_eq(ga_fw_read(dev, GA_FW_SCRATCH_PAD, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "0x00001234");
	ga_dev_close(dev);
	dev = open_sim("sim:version=4");
	ck_assert_int_eq(ga_fw_read(dev, GA_FW_SCRATCH_PAD, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "0x00000000");
	ga_dev_close(dev);
}
END_TEST

/*
 * The simulated card's userValues as pyrogue's PcieAxiVersion reads them:
 * the KCU1500 image of docs/firmware.md §2.5 (expected texts from that
 * page), each read-only; the DMA clock and the PCIe AXI width follow the
 * card's clock_hz and dma_data_bytes, as the firmware derives them.
 */
START_TEST(test_fw_user_values)
{
	static const struct {
		enum ga_fw_id id;
		const char *text;
	} e[] = {
		{GA_FW_DMA_LANES, "8"},
		{GA_FW_RESERVED, "1"},
		{GA_FW_DRIVER_TYPE_ID, "0x00000000"},
		{GA_FW_XIL_DEVICE, "0"},
		{GA_FW_DMA_CLOCK_HZ, "250000000"},
		{GA_FW_BOOT_PROM, "1"},
		{GA_FW_DMA_AXIS_TDATA_BYTES, "16"},
		{GA_FW_DMA_AXIS_TDEST_BITS, "8"},
		{GA_FW_DMA_AXIS_TUSER_BITS, "2"},
		{GA_FW_DMA_AXIS_TID_BITS, "0"},
		{GA_FW_DMA_AXIS_TKEEP_MODE, "1"},
		{GA_FW_DMA_AXIS_TUSER_MODE, "1"},
		{GA_FW_DMA_AXIS_TSTRB, "0"},
		{GA_FW_APP_RESET, "0"},
		{GA_FW_PCIE_AXI_ADDR_WIDTH, "64"},
		{GA_FW_PCIE_AXI_DATA_BYTES, "32"},
		{GA_FW_PCIE_AXI_ID_BITS, "4"},
		{GA_FW_PCIE_AXI_LEN_BITS, "8"},
		{GA_FW_APP_CLOCK_HZ, "156250000"},
		{GA_FW_HARDWARE_TYPE, "0x00d"},
		{GA_FW_GPU_ENABLE, "1"},
		{GA_FW_DEVICE_ID, "0x00000000"},
	};
	struct ga_dev *dev = open_sim("sim:version=4");
	char text[GA_FW_TEXT_MAX];

	for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++) {
		ck_assert_int_eq(ga_fw_read(dev, e[k].id, text, sizeof(text)), 0);
		ck_assert_msg(!strcmp(text, e[k].text), "%s: '%s', want '%s'",
			      ga_fw_fields[e[k].id].name, text, e[k].text);
		ck_assert_int_eq(ga_fw_write(dev, e[k].id, 7), -EACCES);
		ck_assert_int_eq(ga_fw_read(dev, e[k].id, text, sizeof(text)), 0);
		ck_assert_str_eq(text, e[k].text);
	}
	ga_dev_close(dev);

	dev = open_sim("sim:version=4,dma_data_bytes=64,clock_hz=200000000");
	ck_assert_int_eq(ga_fw_read(dev, GA_FW_PCIE_AXI_DATA_BYTES, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "64");
	ck_assert_int_eq(ga_fw_read(dev, GA_FW_PCIE_AXI_ADDR_WIDTH, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "64");
	ck_assert_int_eq(ga_fw_read(dev, GA_FW_PCIE_AXI_ID_BITS, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "4");
	ck_assert_int_eq(ga_fw_read(dev, GA_FW_DMA_CLOCK_HZ, text, sizeof(text)), 0);
	ck_assert_str_eq(text, "200000000");
	ga_dev_close(dev);
}
END_TEST

/* ---- buffers ------------------------------------------------------------- */

static struct ga_buf *mk(struct ga_dev *dev, enum ga_dir dir, unsigned int i, size_t size)
{
	struct ga_buf *b = NULL;
	int rc = ga_buf_create(dev, dir, i, size, &b);

	ck_assert_msg(rc == 0, "create %s %u (%zu): %d (%s)", dir == GA_DIR_WRITE ? "w" : "r", i,
		      size, rc, ga_last_error());
	ck_assert_ptr_nonnull(b);
	return b;
}

static enum ga_buf_state state(struct ga_buf *b)
{
	struct ga_buf_info bi;

	ck_assert_int_eq(ga_buf_info(b, &bi), 0);
	return bi.state;
}

START_TEST(test_buf_create_rules)
{
	struct ga_dev *dev = open_sim("sim:version=4,max_buffers=4");
	struct ga_buf *w[4], *r[2], *b = (struct ga_buf *)1;
	struct ga_buf_info bi;

	ck_err(ga_buf_create(dev, GA_DIR_WRITE, 1, K64, &b), -EINVAL);
	ck_assert_msg(strstr(ga_last_error(), "next index is 0"), "\"%s\"", ga_last_error());
	ck_assert_ptr_null(b);
	ck_err(ga_buf_create(dev, GA_DIR_WRITE, 0, 1000, &b), -EINVAL);
	ck_err(ga_buf_create(dev, GA_DIR_WRITE, 0, 0, &b), -EINVAL);
	ck_err(ga_buf_create(dev, (enum ga_dir)7, 0, K64, &b), -EINVAL);
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 0);

	w[0] = mk(dev, GA_DIR_WRITE, 0, 2 * K64);
	ck_err(ga_buf_create(dev, GA_DIR_WRITE, 1, K64, &b), -EINVAL); /* V4: one size */
	ck_assert_msg(strstr(ga_last_error(), "share one size"), "\"%s\"", ga_last_error());
	for (unsigned int i = 1; i < 4; i++)
		w[i] = mk(dev, GA_DIR_WRITE, i, 2 * K64);
	ck_err(ga_buf_create(dev, GA_DIR_WRITE, 4, 2 * K64, &b), -ENOSPC);
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 4);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_COUNT, 0), 3);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_MAX_SIZE, 0), 2 * K64 - 32);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_ENABLE, 0), 0);
	ck_assert_ptr_eq(ga_buf_get(dev, GA_DIR_WRITE, 2), w[2]);
	ck_assert_ptr_null(ga_buf_get(dev, GA_DIR_WRITE, 4));
	ck_assert_ptr_null(ga_buf_get(dev, GA_DIR_READ, 0));

	ck_assert_int_eq(ga_buf_info(w[1], &bi), 0);
	ck_assert_int_eq(bi.dir, GA_DIR_WRITE);
	ck_assert_uint_eq(bi.index, 1);
	ck_assert_uint_eq(bi.size, 2 * K64);
	ck_assert_uint_eq(bi.payload_max, 2 * K64 - 32);
	ck_assert(!bi.gpu_memory);
	ck_assert_int_eq(bi.state, GA_BUF_IDLE);
	ck_assert_msg(bi.bus_address != 0, "no bus address");
	ck_assert_uint_eq(((uint64_t)rd(dev, GA_REG_WRITE_ADDR_HI, 1) << 32) |
				  rd(dev, GA_REG_WRITE_ADDR_LO, 1),
			  bi.bus_address);

	/* read buffers: own index sequence, sizes may differ */
	r[0] = mk(dev, GA_DIR_READ, 0, K64);
	r[1] = mk(dev, GA_DIR_READ, 1, 3 * K64);
	ck_assert_uint_eq(rd(dev, GA_REG_READ_COUNT, 0), 1);
	ck_assert_int_eq(state(r[1]), GA_BUF_IDLE);

	/* destroy: last only */
	ck_err(ga_buf_destroy(w[1]), -EBUSY);
	ck_assert_msg(strstr(ga_last_error(), "only the last"), "\"%s\"", ga_last_error());
	ck_assert_int_eq(ga_buf_destroy(w[3]), 0);
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 3);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_COUNT, 0), 2);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_ADDR_LO, 3), 0);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_ADDR_HI, 3), 0);
	w[3] = mk(dev, GA_DIR_WRITE, 3, 2 * K64); /* the index is free again */

	/* armed while the engine runs */
	ck_assert_int_eq(ga_buf_arm(w[3]), 0);
	ck_assert_int_eq(state(w[3]), GA_BUF_FREE);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_ENABLE, 0), 1);
	ck_err(ga_buf_destroy(w[3]), -EBUSY);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, false), 0);
	ck_assert_int_eq(ga_buf_destroy(w[3]), 0);

	ck_assert_int_eq(ga_buf_destroy_all(dev), 0);
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 0);
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_READ), 0);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_ADDR_LO, 0), 0);
	/* a fresh start with another size */
	w[0] = mk(dev, GA_DIR_WRITE, 0, K64);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_MAX_SIZE, 0), K64 - 32);
	ga_dev_close(dev); /* destroys w[0] */
}
END_TEST

START_TEST(test_buf_v1_sizes)
{
	struct ga_dev *dev = open_sim("sim:version=2,max_buffers=4,dma_data_bytes=16");
	struct ga_buf *b;
	struct ga_buf_info bi;

	mk(dev, GA_DIR_WRITE, 0, K64);
	mk(dev, GA_DIR_WRITE, 1, 4 * K64); /* V1: per-buffer sizes */
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_SIZE, 0), K64 - 16);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_SIZE, 1), 4 * K64 - 16);
	b = mk(dev, GA_DIR_READ, 0, K64);
	ck_assert_int_eq(ga_buf_info(b, &bi), 0);
	ck_assert_uint_eq(bi.payload_max, K64); /* V1 reads from +0 */
	ck_assert_int_eq(ga_buf_send(b, K64), 0);
	ga_dev_close(dev);
}
END_TEST

START_TEST(test_buf_state_and_memory)
{
	struct ga_dev *dev = open_sim("sim:version=4,max_buffers=4");
	struct ga_buf *w = mk(dev, GA_DIR_WRITE, 0, K64);
	struct ga_buf *r = mk(dev, GA_DIR_READ, 0, K64);
	struct ga_header h = {.size = 100, .result = 0, .first_user = 2};
	uint8_t raw[8], buf[16] = {0};
	unsigned int idx[2] = {0, 1};

	/* a frame "lands": doorbell non-zero -> READY; result -> ERROR */
	ga_header_encode(&h, raw);
	ck_assert_int_eq(ga_buf_write(w, 0, raw, 8), 0);
	ck_assert_int_eq(state(w), GA_BUF_READY);
	h.result = 2;
	ga_header_encode(&h, raw);
	ck_assert_int_eq(ga_buf_write(w, 0, raw, 8), 0);
	ck_assert_int_eq(state(w), GA_BUF_ERROR);
	/* arming clears the header */
	ck_assert_int_eq(ga_buf_arm(w), 0);
	ck_assert_int_eq(state(w), GA_BUF_FREE);
	ck_assert_int_eq(ga_buf_header(w, &h), 0);
	ck_assert_uint_eq(h.size, 0);
	ck_assert_uint_eq(h.result, 0);

	ck_err(ga_buf_arm(r), -EINVAL);
	ck_err(ga_buf_send(w, 10), -EINVAL);
	ck_err(ga_buf_send(r, 0), -EINVAL);
	ck_err(ga_buf_send(r, K64 - 32 + 1), -ERANGE);
	ck_err(ga_buf_arm_many(dev, idx, 2), -ERANGE); /* only write buffer 0 exists */
	ck_assert_int_eq(ga_buf_arm_many(dev, idx, 1), 0);
	ck_assert_int_eq(ga_buf_arm_many(dev, idx, 0), 0);

	/* read path: BUSY until the completion word, READY after */
	ck_assert_int_eq(ga_buf_send(r, 64), 0);
	ck_assert_int_eq(state(r), GA_BUF_BUSY);
	raw[0] = 1, raw[1] = raw[2] = raw[3] = 0;
	ck_assert_int_eq(ga_buf_write(r, 0, raw, 4), 0);
	ck_assert_int_eq(state(r), GA_BUF_READY);

	/* memory bounds */
	ck_assert_int_eq(ga_buf_write(w, K64 - 16, buf, 16), 0);
	ck_assert_int_eq(ga_buf_read(w, K64 - 16, buf, 16), 0);
	ck_err(ga_buf_read(w, K64 - 15, buf, 16), -ERANGE);
	ck_err(ga_buf_write(w, K64 + 1, buf, 0), -ERANGE);
	ck_err(ga_buf_read(w, (size_t)-1, buf, 2), -ERANGE);
	ck_assert_int_eq(ga_buf_read(w, K64, buf, 0), 0);
	ck_err(ga_buf_ipc_handle(w, (char *)buf, sizeof(buf)), -ENOSPC);
	{
		char hex[129];

		ck_err(ga_buf_ipc_handle(w, hex, sizeof(hex)), -ENOTSUP);
	}
	ga_dev_close(dev);
}
END_TEST

START_TEST(test_header_roundtrip)
{
	/* exhaustive over the flag bits, a walk over the user bytes and sizes */
	for (unsigned int f = 0; f < 16; f++) {
		for (unsigned int u = 0; u < 256; u += 17) {
			struct ga_header in = {
				.size = 0x01020304u * (u + 1),
				.result = f & 3,
				.overflow = (f >> 2) & 1,
				.cont = (f >> 3) & 1,
				.last_user = (uint8_t)u,
				.first_user = (uint8_t)(255 - u),
			};
			struct ga_header out;
			uint8_t raw[8], again[8];

			ga_header_encode(&in, raw);
			ga_header_decode(raw, &out);
			ck_assert_uint_eq(out.size, in.size);
			ck_assert_uint_eq(out.result, in.result);
			ck_assert_int_eq(out.overflow, in.overflow);
			ck_assert_int_eq(out.cont, in.cont);
			ck_assert_uint_eq(out.last_user, in.last_user);
			ck_assert_uint_eq(out.first_user, in.first_user);
			ga_header_encode(&out, again);
			ck_assert_mem_eq(raw, again, 8);
		}
	}
	/* the wire layout (docs/firmware.md §3.1 step 4): flags word then size, little endian */
	{
		const uint8_t raw[8] = {0x05, 0x00, 0xAB, 0x02, 0x10, 0x00, 0x00, 0x00};
		struct ga_header h;

		ga_header_decode(raw, &h);
		ck_assert_uint_eq(h.result, 1);
		ck_assert(h.overflow);
		ck_assert(!h.cont);
		ck_assert_uint_eq(h.last_user, 0xAB);
		ck_assert_uint_eq(h.first_user, 0x02);
		ck_assert_uint_eq(h.size, 16);
	}
	ck_assert_str_eq(ga_buf_state_name(GA_BUF_FREE), "FREE");
	ck_assert_str_eq(ga_buf_state_name(GA_BUF_READY), "READY");
	ck_assert_str_eq(ga_buf_state_name(GA_BUF_IDLE), "IDLE");
	ck_assert_str_eq(ga_buf_state_name(GA_BUF_BUSY), "BUSY");
	ck_assert_str_eq(ga_buf_state_name(GA_BUF_ERROR), "ERROR");
}
END_TEST

/* A frame through the sim lands in an armed buffer: FREE -> READY. */
static void push_and_check(struct ga_dev *dev, struct ga_buf *expect, uint32_t len)
{
	uint8_t payload[256], back[256];
	struct ga_header h;

	for (unsigned int i = 0; i < len; i++)
		payload[i] = (uint8_t)(i * 7 + len);
	ck_assert_int_eq(ga_sim_push(dev, payload, len, 5000), 0);
	ck_assert_int_eq(state(expect), GA_BUF_READY);
	ck_assert_int_eq(ga_buf_header(expect, &h), 0);
	ck_assert_uint_eq(h.size, len);
	ck_assert_int_eq(ga_buf_read(expect, 32, back, len), 0);
	ck_assert_mem_eq(back, payload, len);
}

/* The two lists open.c chooses from: every spec finds a backend (only the
 * last claims them all), every device finds memory (the last provider has
 * no condition), and "sim" is the simulated card's. */
START_TEST(test_descriptor_lists)
{
	unsigned int n;

	for (n = 0; ga_backends[n]; n++) {
		ck_assert_msg(ga_backends[n]->name && ga_backends[n]->open, "backend %u", n);
		if (!ga_backends[n]->claims)
			ck_assert_ptr_null(ga_backends[n + 1]);
	}
	ck_assert_uint_ge(n, 2);
	ck_assert_ptr_null(ga_backends[n - 1]->claims);
	ck_assert(ga_backend_sim.claims("sim") && ga_backend_sim.claims("sim:version=4"));
	ck_assert(!ga_backend_sim.claims("/dev/datadev_0") && !ga_backend_sim.claims("simx"));
	ck_assert(ga_backend_sim.flags & GA_BE_SIM);
	ck_assert(ga_backend_datadev.flags & GA_BE_DRIVER);
	for (n = 0; ga_mem_providers[n]; n++)
		ck_assert_msg(ga_mem_providers[n]->memory && ga_mem_providers[n]->open &&
				      ga_mem_providers[n]->note,
			      "provider %u", n);
	ck_assert_uint_ge(n, 1);
	ck_assert_uint_eq(ga_mem_providers[n - 1]->flags & (GA_MEMP_GPU | GA_MEMP_DRIVER), 0);
}
END_TEST

/* The upstream driver cannot remove one buffer: hide the sim's
 * remove_last and let the library remove all and re-register the rest. */
START_TEST(test_emulated_remove)
{
	struct ga_dev *dev = open_sim("sim:version=4,max_buffers=8");
	struct ga_backend_ops upstream_like = ga_backend_sim;
	struct ga_buf *w[3], *r[2];
	struct ga_buf_info bi;

	upstream_like.remove_last = NULL;
	upstream_like.flags &= ~GA_BE_SIM;
	for (unsigned int i = 0; i < 3; i++)
		w[i] = mk(dev, GA_DIR_WRITE, i, K64);
	r[0] = mk(dev, GA_DIR_READ, 0, K64);
	r[1] = mk(dev, GA_DIR_READ, 1, 2 * K64);
	ck_assert_int_eq(ga_buf_arm(w[0]), 0);
	ck_assert_int_eq(ga_buf_arm(w[1]), 0);

	dev->kind = dev->be = &upstream_like;
	ck_assert(!ga_dev_has(dev, GA_CAP_SIM));
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_READ, true), 0);
	ck_err(ga_buf_destroy(w[2]), -EBUSY); /* needs the engines off */
	ck_assert_msg(strstr(ga_last_error(), "engines off"), "\"%s\"", ga_last_error());
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_READ, false), 0);
	ck_assert_int_eq(ga_buf_destroy(w[2]), 0);
	ck_assert_int_eq(ga_buf_destroy(r[1]), 0);
	dev->kind = dev->be = &ga_backend_sim;

	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 2);
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_READ), 1);
	ck_assert_ptr_eq(ga_buf_get(dev, GA_DIR_WRITE, 1), w[1]);
	ck_assert_ptr_eq(ga_buf_get(dev, GA_DIR_READ, 0), r[0]);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_COUNT, 0), 1);
	ck_assert_uint_eq(rd(dev, GA_REG_READ_COUNT, 0), 0);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_MAX_SIZE, 0), K64 - 32);
	ck_assert_uint_eq(rd(dev, GA_REG_WRITE_ADDR_LO, 2), 0);
	ck_assert_uint_eq(rd(dev, GA_REG_READ_ADDR_LO, 1), 0);
	for (unsigned int i = 0; i < 2; i++) {
		ck_assert_int_eq(ga_buf_info(w[i], &bi), 0);
		ck_assert_int_eq(bi.state, GA_BUF_FREE);
		ck_assert_uint_eq(((uint64_t)rd(dev, GA_REG_WRITE_ADDR_HI, i) << 32) |
					  rd(dev, GA_REG_WRITE_ADDR_LO, i),
				  bi.bus_address);
	}
	/* the re-registered, re-armed buffers take frames in order */
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	push_and_check(dev, w[0], 100);
	push_and_check(dev, w[1], 200);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, false), 0);

	/* the last buffer again, and down to nothing */
	dev->kind = dev->be = &upstream_like;
	ck_assert_int_eq(ga_buf_destroy(w[1]), 0);
	ck_assert_int_eq(ga_buf_destroy(r[0]), 0);
	ck_assert_int_eq(ga_buf_destroy(w[0]), 0);
	dev->kind = dev->be = &ga_backend_sim;
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_WRITE), 0);
	ck_assert_uint_eq(ga_buf_count(dev, GA_DIR_READ), 0);
	ga_dev_close(dev);
}
END_TEST

/* ---- the table of pinned buffers ----------------------------------------- */

static void ck_pinned(const struct ga_pinned *p, struct ga_buf *b)
{
	struct ga_buf_info bi;

	ck_assert_int_eq(ga_buf_info(b, &bi), 0);
	ck_assert_int_eq(p->dir, bi.dir);
	ck_assert_uint_eq(p->index, bi.index);
	ck_assert_uint_eq(p->gpu_address, bi.gpu_address);
	ck_assert_uint_eq(p->bus_address, bi.bus_address);
	ck_assert_uint_eq(p->size, bi.size);
	ck_assert_uint_eq(p->pages, bi.size / K64);
	ck_assert_int_eq(p->owner, (int)getpid());
	ck_assert(!p->invalidated);
}

START_TEST(test_pinned_sim)
{
	struct ga_dev *dev = open_sim("sim:version=4,max_buffers=8");
	struct ga_pinned p[8];
	struct ga_buf *w0, *w1, *r0;
	unsigned int n = 99;

	ck_assert(ga_dev_has(dev, GA_CAP_BUFFER_TABLE));
	ck_assert_int_eq(ga_dev_pinned(dev, NULL, 0, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_err(ga_dev_pinned(dev, p, 8, NULL), -EINVAL);
	ck_err(ga_dev_pinned(dev, NULL, 1, &n), -EINVAL);
	ck_err(ga_dev_pinned(NULL, p, 8, &n), -EINVAL);

	w0 = mk(dev, GA_DIR_WRITE, 0, 2 * K64);
	r0 = mk(dev, GA_DIR_READ, 0, K64);
	w1 = mk(dev, GA_DIR_WRITE, 1, 2 * K64);
	/* write buffers first, each direction by index */
	ck_assert_int_eq(ga_dev_pinned(dev, p, 8, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_pinned(&p[0], w0);
	ck_pinned(&p[1], w1);
	ck_pinned(&p[2], r0);
	ck_assert_uint_eq(p[0].pages, 2);
	ck_assert_uint_eq(p[2].pages, 1);
	ck_assert_uint_ne(p[0].bus_address, p[1].bus_address);

	/* too small an array: what fits, and how many there are */
	memset(p, 0xa5, sizeof(p));
	ck_assert_int_eq(ga_dev_pinned(dev, p, 1, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_pinned(&p[0], w0);
	ck_assert_uint_eq(p[1].index, 0xa5a5a5a5u); /* untouched */
	ck_assert_int_eq(ga_dev_pinned(dev, NULL, 0, &n), 0);
	ck_assert_uint_eq(n, 3);

	/* destroyed buffers leave the table */
	ck_assert_int_eq(ga_buf_destroy(w1), 0);
	ck_assert_int_eq(ga_dev_pinned(dev, p, 8, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_pinned(&p[0], w0);
	ck_pinned(&p[1], r0);
	w1 = mk(dev, GA_DIR_WRITE, 1, 2 * K64);
	ck_assert_int_eq(ga_dev_pinned(dev, p, 8, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_pinned(&p[1], w1);
	ck_assert_int_eq(ga_buf_destroy_all(dev), 0);
	ck_assert_int_eq(ga_dev_pinned(dev, p, 8, &n), 0);
	ck_assert_uint_eq(n, 0);
	ga_dev_close(dev);
}
END_TEST

/* A driver that reports write buffer 1 invalidated, and read buffer 0 of
 * another process invalidated (same index as ours: it is not ours). */
static int pinned_invalidating(struct ga_dev *dev, struct ga_pinned **list, unsigned int *n)
{
	int rc = ga_backend_sim.pinned(dev, list, n);

	for (unsigned int i = 0; rc == 0 && i < *n; i++) {
		struct ga_pinned *p = &(*list)[i];

		if (p->dir == GA_DIR_WRITE && p->index == 1)
			p->invalidated = true;
		if (p->dir == GA_DIR_READ && p->index == 0) {
			p->invalidated = true;
			p->owner = (int)getpid() + 1;
		}
	}
	return rc;
}

START_TEST(test_pinned_invalidated)
{
	struct ga_dev *dev = open_sim("sim:version=4,max_buffers=8");
	struct ga_backend_ops be = ga_backend_sim;
	struct ga_buf *w0, *w1, *r0;
	struct ga_pinned p[4];
	unsigned int n = 0;

	w0 = mk(dev, GA_DIR_WRITE, 0, K64);
	w1 = mk(dev, GA_DIR_WRITE, 1, K64);
	r0 = mk(dev, GA_DIR_READ, 0, K64);
	ck_assert_int_eq(ga_buf_arm(w1), 0);
	ck_assert_int_eq(state(w1), GA_BUF_FREE);

	be.pinned = pinned_invalidating;
	dev->kind = dev->be = &be;
	/* marked even when the entry does not fit the caller's array */
	ck_assert_int_eq(ga_dev_pinned(dev, p, 1, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert(!p[0].invalidated);
	ck_assert_int_eq(state(w1), GA_BUF_ERROR);
	ck_assert_int_eq(state(w0), GA_BUF_IDLE);
	ck_assert_int_eq(state(r0), GA_BUF_IDLE);
	ck_assert_int_eq(ga_dev_pinned(dev, p, 4, &n), 0);
	ck_assert(p[1].invalidated && p[2].invalidated);

	/* a driver without the table */
	be.pinned = NULL;
	ck_err(ga_dev_pinned(dev, p, 4, &n), -ENOTSUP);
	ck_assert_msg(strstr(ga_last_error(), "table"), "\"%s\"", ga_last_error());
	ck_assert_uint_eq(n, 0);
	dev->kind = dev->be = &ga_backend_sim;

	/* an invalidated buffer is destroyed and created again */
	ck_assert_int_eq(ga_buf_destroy(w1), 0);
	w1 = mk(dev, GA_DIR_WRITE, 1, K64);
	ck_assert_int_eq(state(w1), GA_BUF_IDLE);
	ga_dev_close(dev);
}
END_TEST

/* Default options: GPU memory when this machine has a GPU and CUDA, host
 * memory with a reason otherwise.  Either way a frame lands and reads back
 * through the memory layer, and the register block can be mapped. */
START_TEST(test_default_memory)
{
	struct ga_dev *dev = NULL;
	struct ga_dev_info info;
	struct ga_buf *w;
	volatile uint32_t *regs = NULL;
	char path[256], hex[129];
	uint64_t off = 1;
	int rc;

	ck_assert_int_eq(ga_dev_open("sim:version=5,max_buffers=4", &dev), 0);
	ck_assert_int_eq(ga_dev_info(dev, &info), 0);
	if (ga_dev_has(dev, GA_CAP_GPU_MEMORY)) {
		ck_assert_msg(strcmp(info.gpu, "none (host memory)") != 0, "gpu: %s", info.gpu);
		ck_assert_str_eq(info.memory_note, "");
	} else {
		ck_assert_str_eq(info.gpu, "none (host memory)");
		ck_assert_msg(info.memory_note[0] != '\0', "host memory without a reason");
	}
	w = mk(dev, GA_DIR_WRITE, 0, K64);
	rc = ga_buf_ipc_handle(w, hex, sizeof(hex));
	if (ga_dev_has(dev, GA_CAP_GPU_MEMORY)) {
		ck_assert_msg(rc == 0, "ipc handle: %d (%s)", rc, ga_last_error());
		ck_assert_uint_eq(strlen(hex), 128);
		ck_assert_uint_eq(strspn(hex, "0123456789abcdefABCDEF"), 128);
	} else {
		ck_assert_int_eq(rc, -ENOTSUP);
	}
	ck_assert_int_eq(ga_buf_arm(w), 0);
	ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
	push_and_check(dev, w, 256);

	ck_assert_int_eq(ga_dev_map_regs(dev, &regs), 0);
	ck_assert_uint_eq(regs[0x30 / 4] & 0xff, 5);
	ga_dev_unmap_regs(dev, regs);
	ck_assert_int_eq(ga_dev_reg_path(dev, path, sizeof(path), &off), 0);
	ck_assert_msg(strncmp(path, "/dev/shm/", 9) == 0, "%s", path);
	ck_assert_uint_eq(off, 0);
	ga_dev_close(dev);
}
END_TEST

static Suite *dev_suite(void)
{
	Suite *s = suite_create("dev");

	suite_add_tests(s, "open", 0,
			SUITE_TESTS({test_open_specs}, {test_info_per_version, GA_VERSION_MAX}));
	suite_add_tests(s, "registers", 0,
			SUITE_TESTS({test_reg_errors}, {test_rmw_neighbours, GA_VERSION_MAX},
				    {test_rmw_concurrent}, {test_monitor_counts},
				    {test_buffer_counts}, {test_link_down}, {test_fw_scratch_pad},
				    {test_fw_user_values}));
	suite_add_tests(s, "buffers", 0,
			SUITE_TESTS({test_buf_create_rules}, {test_buf_v1_sizes},
				    {test_buf_state_and_memory}, {test_header_roundtrip},
				    {test_descriptor_lists}, {test_emulated_remove},
				    {test_default_memory}, {test_pinned_sim},
				    {test_pinned_invalidated}));
	return s;
}

int main(void)
{
	return run_suite(dev_suite());
}
