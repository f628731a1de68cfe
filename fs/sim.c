/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * sim/: the simulated card's frame generator and fault injection, so a
 * user can watch frames arrive with nothing but a shell.
 *
 *   $ echo 1000 > /mnt/gpuasync/sim/rate        # frames per second
 *   $ echo 4K > /mnt/gpuasync/sim/size
 *   $ echo 1 > /mnt/gpuasync/sim/running
 *   $ cat /mnt/gpuasync/sim/stats/delivered
 *   $ echo 3 > /mnt/gpuasync/sim/inject_write_error   # next 3 frames fail
 *   $ printf hello > /mnt/gpuasync/sim/push           # one frame, now
 *   $ echo 3 > /mnt/gpuasync/sim/inject_pulse_gap     # pulse IDs skip 3
 *
 * Present only on the simulated card (rows are dropped at mount
 * otherwise).  Generator settings are changed read-modify-write under
 * gen_lock so two writers of different settings never undo each other.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

static pthread_mutex_t gen_lock = PTHREAD_MUTEX_INITIALIZER; /* leaf; guards get+set */

static bool is_sim(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	(void)n;
	(void)idx;
	return fs->sim;
}

enum gen_field {
	GEN_RUNNING,
	GEN_RATE,
	GEN_SIZE,
	GEN_PATTERN,
	GEN_REMAINING,
	GEN_FIRST_USER,
	GEN_LAST_USER
};

/* A numeric field of @g (not GEN_PATTERN). */
static unsigned long long gen_number(const struct ga_sim_gen *g, enum gen_field f)
{
	switch (f) {
	case GEN_RUNNING:
		return (unsigned long long)g->running;
	case GEN_RATE:
		return g->rate_hz;
	case GEN_SIZE:
		return g->size;
	case GEN_REMAINING:
		return g->remaining;
	case GEN_FIRST_USER:
		return g->first_user;
	case GEN_LAST_USER:
		return g->last_user;
	default:
		return 0;
	}
}

static int gen_show(struct fs_ctx *c, struct strbuf *sb, enum gen_field f)
{
	struct ga_sim_gen g;
	int ret = ga_sim_gen_get(c->fs->dev, &g);

	if (ret < 0)
		return ret;
	if (f == GEN_PATTERN)
		ret = sb_printf(sb, "%s\n", ga_pattern_name(g.pattern));
	else if (f == GEN_FIRST_USER || f == GEN_LAST_USER)
		ret = sb_printf(sb, "0x%02llx\n", gen_number(&g, f));
	else
		ret = sb_printf(sb, "%llu\n", gen_number(&g, f));
	return ret ? -ENOMEM : 0;
}

static int gen_store(struct fs_ctx *c, const char *buf, size_t len, enum gen_field f)
{
	struct ga_sim_gen g;
	uint64_t v = 0;
	bool on = false;
	enum ga_pattern pat = GA_PATTERN_PRBS;
	int ret;

	/* Parse first: nothing changes on bad input. */
	switch (f) {
	case GEN_RUNNING:
		ret = fs_parse_bool(buf, len, &on);
		break;
	case GEN_PATTERN: {
		char word[32];
		const char *p;
		size_t n;

		if (ga_parse_value(buf, len, &p, &n) < 0 || n >= sizeof(word))
			return fs_err(-EINVAL,
				      "pattern: one value, one of prbs, counter, zero, timing, "
				      "jungfrau, epixuhr");
		memcpy(word, p, n);
		word[n] = '\0';
		ret = ga_pattern_parse(word, &pat);
		if (ret < 0)
			return fs_err(-EINVAL,
				      "pattern '%s': one of prbs, counter, zero, timing, jungfrau, "
				      "epixuhr",
				      word);
		break;
	}
	case GEN_SIZE:
		ret = fs_parse_u64(buf, len, UINT32_MAX, true, &v);
		break;
	case GEN_FIRST_USER:
	case GEN_LAST_USER:
		ret = fs_parse_u64(buf, len, 0xff, false, &v);
		break;
	default:
		ret = fs_parse_u64(buf, len, UINT64_MAX, false, &v);
		break;
	}
	/* A batched pattern lays a batch out over the whole size. */
	if (ret == 0 && (f == GEN_SIZE || f == GEN_PATTERN) && ga_sim_gen_get(c->fs->dev, &g) == 0)
		ret = ga_pattern_size_ok(f == GEN_PATTERN ? pat : g.pattern,
					 f == GEN_SIZE ? (uint32_t)v : g.size);
	if (ret < 0 || c->check_only)
		return ret;
	/* Frame numbers restart at 0: a new sequence, not a step back. */
	if (f == GEN_RUNNING && on && ga_sim_gen_get(c->fs->dev, &g) == 0 && !g.running)
		fs_frames_new_run(c->fs, false);

	pthread_mutex_lock(&gen_lock);
	ret = ga_sim_gen_get(c->fs->dev, &g);
	if (ret == 0) {
		switch (f) {
		case GEN_RUNNING:
			g.running = on;
			break;
		case GEN_RATE:
			g.rate_hz = v;
			break;
		case GEN_SIZE:
			g.size = (uint32_t)v;
			break;
		case GEN_PATTERN:
			g.pattern = pat;
			break;
		case GEN_REMAINING:
			g.remaining = v;
			break;
		case GEN_FIRST_USER:
			g.first_user = (uint8_t)v;
			break;
		case GEN_LAST_USER:
			g.last_user = (uint8_t)v;
			break;
		}
		ret = ga_sim_gen_set(c->fs->dev, &g);
	}
	pthread_mutex_unlock(&gen_lock);
	return ret;
}

#define GEN_ATTR(nm, F)                                                                            \
	static int show_##nm(struct fs_ctx *c, struct strbuf *sb)                                  \
	{                                                                                          \
		return gen_show(c, sb, F);                                                         \
	}                                                                                          \
	static int store_##nm(struct fs_ctx *c, const char *buf, size_t len)                       \
	{                                                                                          \
		return gen_store(c, buf, len, F);                                                  \
	}
GEN_ATTR(running, GEN_RUNNING)
GEN_ATTR(rate, GEN_RATE)
GEN_ATTR(size, GEN_SIZE)
GEN_ATTR(pattern, GEN_PATTERN)
GEN_ATTR(remaining, GEN_REMAINING)
GEN_ATTR(first_user, GEN_FIRST_USER)
GEN_ATTR(last_user, GEN_LAST_USER)
#undef GEN_ATTR

/* ---- faults ------------------------------------------------------------------ */

static int inject(struct fs_ctx *c, const char *buf, size_t len, enum ga_sim_fault f)
{
	uint64_t n;
	int ret = fs_parse_u64(buf, len, UINT32_MAX, false, &n);

	if (ret < 0 || c->check_only)
		return ret;
	return ga_sim_inject(c->fs->dev, f, (uint32_t)n, atomic_load(&c->fs->fault_code));
}

/* sim/inject_<fault>: one store per fault. */
#define INJECT(nm, F)                                                                              \
	static int store_inject_##nm(struct fs_ctx *c, const char *buf, size_t len)                \
	{                                                                                          \
		return inject(c, buf, len, F);                                                     \
	}
INJECT(write_error, GA_FAULT_WRITE_ERROR)
INJECT(write_timeout, GA_FAULT_WRITE_TIMEOUT)
INJECT(read_error, GA_FAULT_READ_ERROR)
INJECT(register_ignored, GA_FAULT_REG_IGNORED)
INJECT(pulse_gap, GA_FAULT_PULSE_GAP)
INJECT(pulse_duplicate, GA_FAULT_PULSE_DUPLICATE)
INJECT(batch_too_short, GA_FAULT_BATCH_TOO_SHORT)
INJECT(batch_zero_size, GA_FAULT_BATCH_ZERO_SIZE)
INJECT(batch_corrupt, GA_FAULT_BATCH_CORRUPT)
INJECT(batch_overflow, GA_FAULT_BATCH_OVERFLOW)
#undef INJECT

static int show_fault_code(struct fs_ctx *c, struct strbuf *sb)
{
	return sb_printf(sb, "%u\n", atomic_load(&c->fs->fault_code)) ? -ENOMEM : 0;
}

static int store_fault_code(struct fs_ctx *c, const char *buf, size_t len)
{
	uint64_t v;
	int ret = fs_parse_u64(buf, len, 7, false, &v);

	if (ret < 0)
		return ret;
	if (!v)
		return fs_err(-EINVAL, "fault_code: 1..3 for write errors, 1..7 for read errors");
	if (c->check_only)
		return 0;
	atomic_store(&c->fs->fault_code, (uint32_t)v);
	return 0;
}

/* sim/link: "down" makes the card answer all-ones, as one that fell off
 * the bus; device/link, errors and refused writes follow. */
static int show_link(struct fs_ctx *c, struct strbuf *sb)
{
	int up = ga_dev_link(c->fs->dev);

	if (up < 0)
		return up;
	return sb_printf(sb, "%s\n", up ? "up" : "down") ? -ENOMEM : 0;
}

static int store_link(struct fs_ctx *c, const char *buf, size_t len)
{
	if (len && buf[len - 1] == '\n')
		len--;
	if (len == 2 && !memcmp(buf, "up", 2))
		return c->check_only ? 0 : ga_sim_link_set(c->fs->dev, true);
	if (len == 4 && !memcmp(buf, "down", 4))
		return c->check_only ? 0 : ga_sim_link_set(c->fs->dev, false);
	return fs_err(-EINVAL, "link: write up or down");
}

/* sim/push: the bytes of one write() become one frame on the input. */
static ssize_t push_write(struct fs_ctx *c, const char *src, size_t len, off_t off)
{
	int ret;

	if (!len)
		return fs_err(-EINVAL, "push: a frame has 1 byte or more");
	/* One write, one frame: a bigger write reaches us in pieces, each of
	 * which would become a frame of its own. */
	if (off != 0 || len > FS_WHOLE_WRITE)
		return fs_err(-EFBIG,
			      "push: a frame must arrive in one write of at most %u bytes (the "
			      "kernel splits larger writes into pieces)",
			      FS_WHOLE_WRITE);
	/* a dead link takes no frame: say so, not "no free buffer" */
	ret = ga_dev_link(c->fs->dev);
	if (ret == 0)
		return fs_err(-ENOLINK, "push: the card's link is down (sim/link): no frame "
					"reaches it until it is back");
	if (ret < 0)
		return ret;
	ret = ga_sim_push(c->fs->dev, src, (uint32_t)len, 0);
	return ret < 0 ? ret : (ssize_t)len;
}

static ssize_t last_read_read(struct fs_ctx *c, char *dst, size_t len, off_t off)
{
	uint32_t got = 0, whole = 0;
	size_t want;
	char *frame;
	int ret;

	/* Allocate for what the frame holds, not for the offset asked. */
	ret = ga_sim_last_read(c->fs->dev, NULL, 0, &whole);
	if (ret < 0)
		return ret;
	if (off < 0 || (uint64_t)off >= whole || len == 0)
		return 0;
	want = (uint64_t)off + len < whole ? (size_t)off + len : whole;
	frame = malloc(want);
	if (!frame)
		return -ENOMEM;
	ret = ga_sim_last_read(c->fs->dev, frame, (uint32_t)want, &got);
	if (ret == 0) {
		if ((uint64_t)off >= got)
			len = 0;
		else if (len > got - (uint64_t)off)
			len = got - (size_t)off;
		memcpy(dst, frame + off, len);
	}
	free(frame);
	return ret < 0 ? ret : (ssize_t)len;
}

/* ---- stats -------------------------------------------------------------------- */

#define STAT_SHOW(field)                                                                           \
	static int show_stat_##field(struct fs_ctx *c, struct strbuf *sb)                          \
	{                                                                                          \
		struct ga_sim_stats st;                                                            \
		int ret = ga_sim_stats(c->fs->dev, &st);                                           \
		if (ret < 0)                                                                       \
			return ret;                                                                \
		return sb_printf(sb, "%llu\n", (unsigned long long)st.field) ? -ENOMEM : 0;        \
	}
STAT_SHOW(generated)
STAT_SHOW(delivered)
STAT_SHOW(dropped)
STAT_SHOW(overflowed)
STAT_SHOW(stalled_ns)
STAT_SHOW(reads)
STAT_SHOW(read_bytes)
STAT_SHOW(cpu_ns)
#undef STAT_SHOW

static int show_stat_last_read_crc(struct fs_ctx *c, struct strbuf *sb)
{
	struct ga_sim_stats st;
	int ret = ga_sim_stats(c->fs->dev, &st);

	if (ret < 0)
		return ret;
	return sb_printf(sb, "0x%08x\n", st.last_read_crc) ? -ENOMEM : 0;
}

/* clang-format off */
#define SIM_RW(nm, docstr) \
	{ .name = #nm, .parent = FS_D_SIM, .dir = FS_D_NONE, .mode = 0644, .flags = FS_LIVE, \
	  .show = show_##nm, .store = store_##nm, .visible = is_sim, .reg = -1, .doc = docstr }
#define SIM_WO(nm, docstr) \
	{ .name = #nm, .parent = FS_D_SIM, .dir = FS_D_NONE, .mode = 0200, \
	  .store = store_##nm, .visible = is_sim, .reg = -1, .doc = docstr }
#define SIM_STAT(nm, docstr) \
	{ .name = #nm, .parent = FS_D_SIM_STATS, .dir = FS_D_NONE, .mode = 0444, .flags = FS_LIVE, \
	  .show = show_stat_##nm, .visible = is_sim, .reg = -1, .doc = docstr }

const struct fs_node fs_sim_rows[] = {
	SIM_RW(running, "frame generator on (1) or off (0)"),
	SIM_RW(rate, "frames per second; 0 = as fast as buffers allow"),
	SIM_RW(size, "payload bytes per generated frame (size suffixes accepted)"),
	SIM_RW(pattern, "payload pattern: prbs, counter, zero, timing, jungfrau or epixuhr"),
	SIM_RW(remaining, "frames left to generate; 0 = unlimited"),
	SIM_RW(first_user, "TUSER of a frame's first beat (0x02 = start of frame)"),
	SIM_RW(last_user, "TUSER of a frame's last beat"),
	{ .name = "push", .parent = FS_D_SIM, .dir = FS_D_NONE, .mode = 0200, .flags = FS_BINARY,
	  .write_bin = push_write, .visible = is_sim, .reg = -1,
	  .doc = "one write (up to 1020 KiB) is one frame (EAGAIN: no buffer armed; EFBIG: bigger)" },
	SIM_WO(inject_write_error, "write N: the next N frames end with an AXI write error"),
	SIM_WO(inject_write_timeout, "write N: the next N frames time out"),
	SIM_WO(inject_read_error, "write N: the next N GPU->FPGA reads fail"),
	SIM_WO(inject_register_ignored,
	       "write N: the card ignores the next N register writes (a field its build holds fixed)"),
	SIM_WO(inject_pulse_gap,
	       "write N: the next generated frame's number (pulse ID, evtCounter) skips N, as if N frames were lost"),
	SIM_WO(inject_pulse_duplicate,
	       "write N: the next N generated frames repeat the number (pulse ID) of the frame before them"),
	SIM_WO(inject_batch_too_short,
	       "write N: the next N frames of a batched pattern are cut to 8 bytes (batch too short)"),
	SIM_WO(inject_batch_zero_size,
	       "write N: in the next N batched frames the last sub-frame's tail says 0 bytes"),
	SIM_WO(inject_batch_corrupt,
	       "write N: in the next N batched frames sub-frame 0's tail has another width"),
	SIM_WO(inject_batch_overflow,
	       "write N: in the next N batched frames the last sub-frame's tdest is 16 (overflow)"),
	SIM_RW(fault_code, "error code the next injected fault reports (1..3 write, 1..7 read)"),
	SIM_RW(link, "down: the card answers 0xffffffff everywhere, as one off the bus; up: back"),
	{ .name = "last_read", .parent = FS_D_SIM, .dir = FS_D_NONE, .mode = 0444,
	  .flags = FS_BINARY, .read_bin = last_read_read, .visible = is_sim, .reg = -1,
	  .doc = "the last GPU->FPGA frame the card received (binary)" },
	SIM_STAT(generated, "frames the generator produced"),
	SIM_STAT(delivered, "frames written into a buffer"),
	SIM_STAT(dropped, "frames dropped while the write engine was off"),
	SIM_STAT(overflowed, "frames truncated at the buffer's payload size"),
	SIM_STAT(stalled_ns, "nanoseconds the input waited for a free buffer"),
	SIM_STAT(reads, "GPU->FPGA frames the card received"),
	SIM_STAT(read_bytes, "bytes of GPU->FPGA frames received"),
	SIM_STAT(last_read_crc, "CRC-32 of the last GPU->FPGA frame"),
	SIM_STAT(cpu_ns, "CPU nanoseconds the card's thread has used"),
};
const unsigned int fs_sim_nrows = sizeof(fs_sim_rows) / sizeof(fs_sim_rows[0]);
/* clang-format on */
