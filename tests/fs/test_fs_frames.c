/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * frames/ and the frame histograms in metrics, on the simulated card
 * driven with real echo, printf and cat.
 *
 *   - pulse-ID gap and duplicate injected through sim/inject_pulse_gap and
 *     sim/inject_pulse_duplicate into the timing pattern (bare 32-byte
 *     TimingHeaders) and the batched jungfrau and epixuhr patterns: exact
 *     counts in frames/ and metrics, every delivered frame seen once;
 *   - the default prbs pattern: every frame unchecked, no pulse-ID counter
 *     moves (it once gave pulse_ids_missed about 1.2e16);
 *   - each batch error the DRP latches, injected: its file and metric 1,
 *     the frame unchecked, no gap counted around it;
 *   - a new run (sim/running, registers/write_enable 0 then 1) starts a new
 *     sequence, no backwards step;
 *   - a shell loop re-arming in ring order as fast as it can: no gap, no
 *     backwards step, seen + not_seen = delivered; an injected gap exact;
 *   - a consumer re-arming through the register mapping faster than the
 *     watcher looks: frames not seen, counted apart, and no gap;
 *   - TimingHeaders written by printf into sim/push: duplicate, backwards
 *     (out of order), gap, and a frame too short to carry one;
 *   - every histogram in metrics is a valid Prometheus histogram (buckets
 *     ascending in le, counts never falling, +Inf == _count, _sum there),
 *     and promtool check metrics accepts the text;
 *   - buffer 0's latency registers are sampled once per ring lap (V4): the
 *     sample count follows the laps, not reads of metrics nor the 1 ms
 *     poll interval, and the sums are exactly the values the registers
 *     held at each lap; on V1 (a latency set per buffer) once per frame;
 *   - an observer mount has no frames/ and no frame series.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpuasync/timing.h>

#include "harness.h"

/* The value of the one sample whose line starts with @name and whose
 * labels contain @label ("" for any). */
static double sample(const char *text, const char *name, const char *label)
{
	size_t n = strlen(name);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
		const char *end = strchr(p, '\n'), *sp;

		if (strncmp(p, name, n) || p[n] != '{')
			continue;
		sp = strstr(p, "} ");
		if (!sp || (end && sp > end))
			continue;
		if (*label) {
			char *l = strstr(p, label);

			if (!l || l > sp)
				continue;
		}
		return strtod(sp + 2, NULL);
	}
	ck_abort_msg("no sample %s{..%s..}", name, label);
	return 0;
}

/* Each NAME=VALUE of @want (unlabelled samples) as @text has it. */
static void expect_samples(const char *text, const char *want)
{
	const char *p = want;
	char name[96];
	double v;
	int n;

	for (; sscanf(p, " %95[a-z_]=%lf%n", name, &v, &n) == 2; p += n)
		ck_assert_msg(sample(text, name, "") == v, "%s is %g, want %g", name,
			      sample(text, name, ""), v);
	ck_assert_msg(!p[strspn(p, " ")], "expect_samples: '%s': NAME=VALUE expected", p);
}

static char *metrics(void)
{
	char *m = readf("metrics");

	ck_assert_ptr_nonnull(m);
	return m;
}

/* Buffers 0..@n-1 of @size made, pattern @pattern of @frame-byte frames. */
static void setup_pattern(unsigned int n, const char *size, const char *pattern, unsigned int frame)
{
	make_write_buffers(n, size);
	ck_assert_int_eq(sh("echo %s > $M/sim/pattern && echo %u > $M/sim/size", pattern, frame),
			 0);
}

/* ... the timing pattern of bare TimingHeaders (32 bytes, transitions). */
static void setup(unsigned int n, const char *size)
{
	setup_pattern(n, size, "timing", GA_TIMING_HDR_BYTES);
}

/* A ring of buffers consumed through the mount, the generator running
 * unlimited: ring_start fills every buffer, ring_more(k) re-arms the
 * oldest k times, a frame landing each time.  A fault injected between
 * them takes the next frame that lands. */
static unsigned int ring_n, ring_next;
static unsigned long long ring_delivered;

static void ring_start(unsigned int nbuf)
{
	ring_n = nbuf;
	ring_next = 0;
	ring_delivered = readnum("sim/stats/delivered") + nbuf;
	for (unsigned int i = 0; i < nbuf; i++)
		arm_write(i);
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable && echo 1 > $M/sim/running"), 0);
	wait_num("sim/stats/delivered", ring_delivered);
}

static void ring_more(unsigned int k)
{
	while (k--) {
		arm_write(ring_next++ % ring_n);
		wait_num("sim/stats/delivered", ++ring_delivered);
	}
}

/* The patterns whose every frame has a TimingHeader where the DRP finds it. */
static const struct {
	const char *name;
	unsigned int size;
} checked[] = {{"timing", 32}, {"jungfrau", 4096}, {"epixuhr", 16 * 1024}};

START_TEST(pulse_gap_and_duplicate)
{
	char *m;

	mnt_start(NULL);
	setup_pattern(4, "64K", checked[_i].name, checked[_i].size);
	sim_gap_and_duplicate(8);
	/* Consumed through the mount: 6, 7 into buffers 0, 1; 8, 9 into 2, 3. */
	arm_write(0);
	arm_write(1);
	wait_num("sim/stats/delivered", 6);
	arm_write(2);
	arm_write(3);
	wait_num("sim/stats/delivered", 8);

	/* 0 1 5 5 6 7 8 9 */
	expect_nums("frames/", "seen=8 pulse_id_gaps=1 pulse_ids_missed=3 pulse_id_duplicates=1 "
			       "pulse_id_backwards=0 unchecked=0 not_seen=0");
	ck_assert_uint_eq(readnum("frames/not_compared"), 1); /* the first */
	ck_assert_uint_eq(readnum("frames/ring_laps"), 2);
	ck_assert_uint_eq(readnum("frames/last_pulse_id"), GA_TIMING_PULSE0 + 9);
	ck_assert_uint_eq(readnum("frames/batch_corrupt"), 0);
	m = metrics();
	expect_samples(m, "gpuasync_frames_seen_total=8 gpuasync_pulse_id_gaps_total=1 "
			  "gpuasync_pulse_ids_missed_total=3 gpuasync_pulse_id_duplicates_total=1 "
			  "gpuasync_pulse_id_backwards_total=0 gpuasync_ring_laps_total=2");
	/* Every frame has an age (the card's stamp is this host's clock). */
	ck_assert_double_eq(sample(m, "gpuasync_frame_age_seconds_count", ""), 8);
	ck_assert_double_gt(sample(m, "gpuasync_frame_age_seconds_sum", ""), 0);
	free(m);
	/* Reading again counts nothing twice. */
	ck_assert_uint_eq(readnum("frames/seen"), 8);
	ck_assert_uint_eq(readnum("frames/pulse_id_duplicates"), 1);
}
END_TEST

/* One frame of a TimingHeader with @pulse, pushed with printf (octal
 * escapes: dash's printf has no \x), stamp 0 (the epoch: a very old frame). */
static void push_pulse(uint64_t pulse)
{
	uint8_t h[GA_TIMING_HDR_BYTES] = {0};
	char fmt[GA_TIMING_HDR_BYTES * 4 + 1];
	uint64_t w = pulse | (uint64_t)GA_TIMING_CONTROL << 56;

	for (int i = 0; i < 8; i++)
		h[i] = (uint8_t)(w >> (8 * i));
	for (unsigned int i = 0; i < GA_TIMING_HDR_BYTES; i++)
		sprintf(fmt + 4 * i, "\\%03o", h[i]);
	ck_assert_int_eq(sh("printf '%s' > $M/sim/push", fmt), 0);
}

START_TEST(pushed_out_of_order)
{
	char *m;

	mnt_start(NULL);
	setup(8, "64K");
	ck_assert_int_eq(sh("for i in $(seq 0 7); do echo 1 > $M/buffers/$i/write_enable; done && "
			    "echo 1 > $M/registers/write_enable"),
			 0);
	push_pulse(10);
	push_pulse(11);
	push_pulse(11); /* duplicate */
	push_pulse(9);	/* backwards */
	push_pulse(14); /* gap: 10..13 missed (compared with 9, the frame before) */
	ck_assert_int_eq(sh("printf hello > $M/sim/push"), 0); /* too short to check */
	push_pulse(15);
	expect_nums("frames/", "seen=7 unchecked=1 pulse_id_duplicates=1 pulse_id_backwards=1 "
			       "pulse_id_gaps=1 pulse_ids_missed=4");
	ck_assert_uint_eq(readnum("frames/not_compared"), 1); /* the first */
	ck_assert_uint_eq(readnum("frames/last_pulse_id"), 15);
	ck_assert_uint_eq(readnum("frames/ring_laps"), 1);
	/* Stamped 1970: every age in the +Inf bucket only. */
	m = metrics();
	ck_assert_double_eq(sample(m, "gpuasync_frame_age_seconds_count", ""), 6);
	ck_assert_double_eq(sample(m, "gpuasync_frame_age_seconds_bucket", "le=\"10\""), 0);
	ck_assert_double_eq(sample(m, "gpuasync_frame_age_seconds_bucket", "le=\"+Inf\""), 6);
	free(m);
}
END_TEST

/* A new run starts a new sequence: the generator restarted (its frame
 * numbers start at 0 again) and the write engine switched off and on
 * (the card starts again at buffer 0) count no backwards step. */
START_TEST(new_run_new_sequence)
{
	mnt_start(NULL);
	setup(4, "64K");
	ring_start(4);
	ring_more(2); /* frames 0..5 */
	ck_assert_int_eq(sh("echo 0 > $M/sim/running && echo 1 > $M/sim/running"), 0);
	ring_more(2); /* frames 0, 1 of the new run */
	expect_nums("frames/", "seen=8 pulse_id_backwards=0 pulse_id_gaps=0 pulse_id_duplicates=0");
	ck_assert_uint_eq(readnum("frames/not_compared"), 2); /* each run's first */
	ck_assert_uint_eq(readnum("frames/last_pulse_id"), GA_TIMING_PULSE0 + 1);
	/* The engine off and on, every buffer armed: the next frames go to
	 * buffers 0 and 1, pulse IDs 3 and 4 (below the last run's). */
	ck_assert_int_eq(sh("echo 0 > $M/sim/running && echo 0 > $M/registers/write_enable"), 0);
	for (unsigned int i = 0; i < 4; i++)
		arm_write(i);
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable"), 0);
	push_pulse(3);
	push_pulse(4);
	ck_assert_uint_eq(readnum("frames/seen"), 10);
	ck_assert_int_eq(sh("test \"$(cat $M/buffers/0/status)\" = READY && "
			    "test \"$(cat $M/buffers/1/status)\" = READY"),
			 0);
	expect_nums("frames/",
		    "pulse_id_backwards=0 pulse_id_gaps=0 not_compared=3 last_pulse_id=4");
}
END_TEST

/* One shell loop consuming in ring order as fast as it can (wait for
 * status READY, re-arm), the generator unlimited: nothing is lost, so no
 * gap, duplicate or backwards step may show, every delivered frame is
 * seen; then a gap of 5 injected mid-stream is counted exactly.  (Before,
 * at about 500 frames/s: thousands of gaps and backwards steps.) */
static void consume_loop(unsigned int frames)
{
	ck_assert_int_eq(sh("i=0; n=0; while [ $n -lt %u ]; do t=0; "
			    "while [ \"$(cat $M/buffers/$i/status)\" != READY ]; do "
			    "t=$((t+1)); [ $t -gt 20000 ] && exit 1; done; "
			    "echo 1 > $M/buffers/$i/write_enable || exit 2; "
			    "i=$(((i+1)%%4)); n=$((n+1)); done",
			    frames),
			 0);
}

START_TEST(rearm_loop_no_false_gaps)
{
	unsigned long long seen, delivered;

	mnt_start(NULL);
	setup(4, "64K");
	for (unsigned int i = 0; i < 4; i++)
		arm_write(i);
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable && echo 1 > $M/sim/running"), 0);
	consume_loop(600);
	expect_nums(
		"frames/",
		"pulse_id_gaps=0 pulse_ids_missed=0 pulse_id_backwards=0 pulse_id_duplicates=0");
	ck_assert_int_eq(sh("echo 5 > $M/sim/inject_pulse_gap"), 0);
	consume_loop(600);
	ck_assert_int_eq(sh("echo 0 > $M/sim/running"), 0);
	delivered = readnum("sim/stats/delivered");
	seen = readnum("frames/seen");
	ck_assert_uint_ge(delivered, 1200);
	ck_assert_uint_eq(seen, delivered);
	expect_nums("frames/", "not_seen=0 unchecked=0 not_compared=1 pulse_id_gaps=1 "
			       "pulse_ids_missed=5 pulse_id_backwards=0 pulse_id_duplicates=0");
}
END_TEST

/* A consumer that re-arms through the register mapping (as the DRP does
 * from the GPU) far faster than the watcher looks: most frames are never
 * seen.  They are counted apart (not_seen), never as pulse-ID gaps; seen
 * and not_seen add up to what the card delivered. */
START_TEST(fast_consumer_no_false_gaps)
{
	unsigned long long seen, not_seen, delivered;

	mnt_start(NULL);
	setup(4, "64K");
	for (unsigned int i = 0; i < 4; i++)
		arm_write(i);
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable && echo 1 > $M/sim/running"), 0);
	/* V4: the free list at 0x2000 + 4 i; 2 s of re-arming every buffer,
	 * never zeroing a size word (the old descriptor stays while the card
	 * writes the next payload under it) */
	ck_assert_int_eq(sh("python3 -c 'import mmap, os, struct, sys, time\n"
			    "path, off = open(sys.argv[1]).read().split()\n"
			    "fd = os.open(path, os.O_RDWR)\n"
			    "m = mmap.mmap(fd, 0x8000, offset=int(off, 16))\n"
			    "one = struct.pack(\"<I\", 1); end = time.time() + 2\n"
			    "while time.time() < end:\n"
			    "    for i in range(4): m[0x2000 + 4 * i:0x2004 + 4 * i] = one\n"
			    "' $M/device/registers_path"),
			 0);
	ck_assert_int_eq(sh("echo 0 > $M/sim/running"), 0);
	delivered = readnum("sim/stats/delivered");
	seen = readnum("frames/seen");
	not_seen = readnum("frames/not_seen");
	ck_assert_uint_gt(delivered, 1000);
	ck_assert_uint_gt(not_seen, 0); /* the watcher missed some */
	ck_assert_uint_gt(seen, 0);
	ck_assert_uint_eq(seen + not_seen, delivered);
	expect_nums("frames/", "pulse_id_gaps=0 pulse_ids_missed=0 pulse_id_backwards=0 "
			       "pulse_id_duplicates=0 unchecked=0");
}
END_TEST

/* Check every histogram of @text: per series (name and labels without le),
 * buckets in ascending le ending at +Inf, counts never falling, the +Inf
 * count equal to _count, and a _sum.  Returns how many histograms. */
static unsigned int check_histograms(const char *text)
{
	char series[1024] = "", name[256];
	double last_le = -INFINITY, last_count = -1, inf_count = -1;
	unsigned int found = 0;
	const char *p = text;

	while (*p) {
		const char *end = strchr(p, '\n');
		char line[2048], *b, *le, *close;
		size_t n = end ? (size_t)(end - p) : strlen(p);

		ck_assert_uint_lt(n, sizeof(line));
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (end ? 1 : 0);
		b = strstr(line, "_bucket{");
		if (line[0] == '#' || !b)
			continue;
		le = strstr(b, ",le=\"");
		ck_assert_msg(le != NULL, "bucket without le: %s", line);
		close = strstr(le, "\"} ");
		ck_assert_ptr_nonnull(close);
		{
			/* the series: everything but the le label */
			char key[1024];
			double v = strtod(close + 3, NULL), bound;

			snprintf(key, sizeof(key), "%.*s%s", (int)(le - line), line, close + 1);
			*strstr(key, "} ") = '\0';
			if (strcmp(key, series)) {
				ck_assert_msg(!series[0] || inf_count >= 0, "%s: no +Inf bucket",
					      series);
				snprintf(series, sizeof(series), "%s", key);
				last_le = -INFINITY;
				last_count = -1;
				inf_count = -1;
				found++;
			}
			ck_assert_msg(inf_count < 0, "%s: a bucket after +Inf", line);
			bound = !strncmp(le + 5, "+Inf\"", 5) ? INFINITY : strtod(le + 5, NULL);
			ck_assert_msg(bound > last_le, "%s: le not ascending", line);
			ck_assert_msg(v >= last_count, "%s: count falls", line);
			last_le = bound;
			last_count = v;
			if (isinf(bound)) {
				/* _count and _sum of the same labels */
				char want[1024], *lb = strchr(key, '{');

				inf_count = v;
				snprintf(name, sizeof(name), "%.*s", (int)(b - line), line);
				snprintf(want, sizeof(want), "%s_count", name);
				ck_assert_double_eq(sample(text, want, lb + 1), v);
				snprintf(want, sizeof(want), "%s_sum", name);
				(void)sample(text, want, lb + 1);
			}
		}
	}
	ck_assert_msg(!series[0] || inf_count >= 0, "%s: no +Inf bucket", series);
	return found;
}

START_TEST(histograms_are_valid)
{
	char *m, *out;

	mnt_start(NULL);
	setup(2, "64K");
	ck_assert_int_eq(sh("echo 1 > $M/buffers/0/write_enable && echo 1 > "
			    "$M/buffers/1/write_enable && echo 1 > $M/registers/write_enable && "
			    "echo 5 > $M/sim/remaining && echo 1 > $M/sim/running"),
			 0);
	for (unsigned int i = 2; i < 5; i++) {
		wait_num("sim/stats/delivered", i);
		arm_write((i - 2) % 2);
	}
	wait_num("sim/stats/delivered", 5);
	m = metrics();
	/* frame age, and the total, gpu and write latencies of V4 */
	ck_assert_uint_eq(check_histograms(m), 4);
	ck_assert_double_eq(sample(m, "gpuasync_frame_age_seconds_count", ""), 5);
	free(m);
	if (have_cmd("promtool", "prometheus")) {
		out = sh_out("promtool check metrics < $M/metrics 2>&1; echo rc=$?");
		ck_assert_msg(strstr(out, "rc=0\n"), "promtool:\n%.3000s", out);
		free(out);
	}
}
END_TEST

/* The cycles buffer 0's @what latency register holds now. */
static unsigned long long lat0(const char *what)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "buffers/0/latency/%s", what);
	return readnum(rel);
}

START_TEST(latency_sampled_once_per_lap)
{
	const unsigned int laps = 5;
	unsigned long long write_sum = 0, gpu_sum = 0, hz;
	char *m;

	/* A poll interval of 1 ms: samples must not follow it. */
	mnt_start("-o interval_ms=1");
	hz = readnum("device/clock_hz");
	setup(2, "64K");
	ck_assert_int_eq(sh("echo 1 > $M/buffers/0/write_enable && echo 1 > "
			    "$M/buffers/1/write_enable && echo 1 > $M/registers/write_enable && "
			    "echo 1 > $M/sim/running"),
			 0);
	for (unsigned int lap = 1; lap <= laps; lap++) {
		/* Lap @lap: frames in buffers 0 and 1, the card waits for 0. */
		wait_num("sim/stats/delivered", 2 * lap);
		ck_assert_uint_eq(readnum("frames/ring_laps"), lap);
		/* What buffer 0's registers say now: its frame's write
		 * latency, and its previous re-arm (none at the first lap). */
		write_sum += lat0("write");
		if (lap > 1)
			gpu_sum += lat0("gpu");
		/* Reads and time add no sample: the watcher looks every 1 ms
		 * and the sampler every 1 ms while this polls. */
		for (int i = 0; i < 20; i++) {
			m = metrics();
			ck_assert_double_eq(sample(m, "gpuasync_frame_latency_seconds_count",
						   "latency=\"write\""),
					    lap);
			free(m);
		}
		/* poll(POLLPRI) on buffer 0's write latency for 50 x 1 ms: the
		 * sampler renders it every interval_ms meanwhile */
		ck_assert_int_eq(sh("python3 -c 'import os, select, sys\n"
				    "fd = os.open(sys.argv[1], os.O_RDONLY); os.read(fd, 64)\n"
				    "p = select.poll(); p.register(fd, select.POLLPRI)\n"
				    "for i in range(50): p.poll(1)' $M/buffers/0/latency/write"),
				 0);
		ck_assert_uint_eq(readnum("frames/ring_laps"), lap);
		if (lap < laps) {
			arm_write(0);
			arm_write(1);
		}
	}
	ck_assert_int_eq(sh("echo 0 > $M/sim/running"), 0);
	m = metrics();
	ck_assert_double_eq(sample(m, "gpuasync_ring_laps_total", ""), laps);
	ck_assert_double_eq(sample(m, "gpuasync_frames_seen_total", ""), 2 * laps);
	ck_assert_double_eq(sample(m, "gpuasync_frame_latency_seconds_count", "latency=\"write\""),
			    laps);
	ck_assert_double_eq(sample(m, "gpuasync_frame_latency_seconds_count", "latency=\"gpu\""),
			    laps - 1);
	/* No read DMA: the total latency never measured, never sampled. */
	ck_assert_double_eq(sample(m, "gpuasync_frame_latency_seconds_count", "latency=\"total\""),
			    0);
	/* The sums are the registers' values at each lap (9 digits printed). */
	ck_assert_double_eq_tol(
		sample(m, "gpuasync_frame_latency_seconds_sum", "latency=\"write\"") * (double)hz,
		(double)write_sum, 1e-6 * (double)write_sum + 1);
	ck_assert_double_eq_tol(sample(m, "gpuasync_frame_latency_seconds_sum", "latency=\"gpu\"") *
					(double)hz,
				(double)gpu_sum, 1e-6 * (double)gpu_sum + 1);
	ck_assert_uint_gt(write_sum, 0);
	ck_assert_uint_gt(gpu_sum, 0);
	free(m);
}
END_TEST

/* V1 keeps a latency set per buffer: a sample at every frame. */
START_TEST(v1_sampled_every_frame)
{
	char *m;

	mnt_start("-o version=1");
	setup(3, "64K");
	ck_assert_int_eq(sh("for i in 0 1 2; do echo 1 > $M/buffers/$i/write_enable; done && "
			    "echo 1 > $M/registers/write_enable && echo 3 > $M/sim/remaining && "
			    "echo 1 > $M/sim/running"),
			 0);
	wait_num("sim/stats/delivered", 3);
	ck_assert_uint_eq(readnum("frames/seen"), 3);
	ck_assert_uint_eq(readnum("frames/ring_laps"), 1);
	m = metrics();
	ck_assert_double_eq(sample(m, "gpuasync_frame_latency_seconds_count", "latency=\"write\""),
			    3);
	free(m);
}
END_TEST

/* The default pattern carries no TimingHeader: every frame unchecked,
 * no pulse-ID counter moves, no batch error. */
START_TEST(prbs_is_unchecked)
{
	char *m;

	mnt_start(NULL);
	ck_assert_int_eq(sh("echo 64K > $M/buffers/alloc_size && for i in 0 1 2 3; do "
			    "mkdir $M/buffers/$i || exit 1; done"),
			 0);
	ck_assert_int_eq(sh("test \"$(cat $M/sim/pattern)\" = prbs"), 0);
	ring_start(4);
	ring_more(8);
	expect_nums("frames/", "seen=12 unchecked=12 not_compared=0 pulse_id_gaps=0 "
			       "pulse_ids_missed=0 pulse_id_backwards=0 pulse_id_duplicates=0");
	ck_assert_int_eq(sh("test \"$(cat $M/frames/last_pulse_id)\" = none"), 0);
	m = metrics();
	expect_samples(m, "gpuasync_pulse_ids_missed_total=0 gpuasync_frames_unchecked_total=12");
	ck_assert_double_eq(sample(m, "gpuasync_batch_errors_total", "error=\"corrupt\""), 0);
	ck_assert_double_eq(sample(m, "gpuasync_frame_age_seconds_count", ""), 0);
	free(m);
}
END_TEST

/* Each batch error the DRP latches, injected into the batched patterns:
 * frames 0-3 good, 4-7 bad (too short, zero size, corrupt, overflow),
 * 8 good: the bad ones are unchecked, and frame 8 after 3 is no gap (the
 * four between may each have held one).  Then four bad frames again and a
 * gap of 10 before them: 19-22 bad, 23 good, 14 numbers after 8 of which
 * 4 frames may hold: 1 gap, 10 missed. */
static const char *const batch_err[] = {"too_short", "zero_size", "corrupt", "overflow"};

static void inject_batch_errors(void)
{
	for (unsigned int e = 0; e < 4; e++)
		ck_assert_int_eq(sh("echo 1 > $M/sim/inject_batch_%s", batch_err[e]), 0);
}

START_TEST(batch_errors_counted)
{
	char *m;

	mnt_start(NULL);
	setup_pattern(4, "64K", checked[1 + _i].name, checked[1 + _i].size);
	ring_start(4);
	inject_batch_errors();
	ring_more(4);
	ring_more(1);
	expect_nums("frames/", "seen=9 unchecked=4 pulse_id_gaps=0");
	ck_assert_uint_eq(readnum("frames/last_pulse_id"), GA_TIMING_PULSE0 + 8);
	inject_batch_errors();
	ck_assert_int_eq(sh("echo 10 > $M/sim/inject_pulse_gap"), 0);
	ring_more(5);
	ck_assert_int_eq(sh("echo 0 > $M/sim/running"), 0);
	expect_nums("frames/", "seen=14 unchecked=8 not_seen=0 not_compared=1");
	for (unsigned int e = 0; e < 4; e++) {
		char f[64], l[64];

		snprintf(f, sizeof(f), "frames/batch_%s", batch_err[e]);
		snprintf(l, sizeof(l), "error=\"%s\"", batch_err[e]);
		ck_assert_uint_eq(readnum(f), 2);
		m = metrics();
		ck_assert_double_eq(sample(m, "gpuasync_batch_errors_total", l), 2);
		free(m);
	}
	expect_nums(
		"frames/",
		"pulse_id_gaps=1 pulse_ids_missed=10 pulse_id_backwards=0 pulse_id_duplicates=0");
	ck_assert_uint_eq(readnum("frames/last_pulse_id"), GA_TIMING_PULSE0 + 23);
}
END_TEST

/* A batched pattern needs a size its batch fills exactly: refused with
 * the reason, nothing changed. */
START_TEST(batched_sizes_refused)
{
	mnt_start(NULL);
	ck_assert_int_eq(sh("echo 100 > $M/sim/size"), 0);
	expect_refused("sim/pattern", "jungfrau", EINVAL);
	ck_assert_int_eq(sh("echo 4096 > $M/sim/size && echo jungfrau > $M/sim/pattern"), 0);
	expect_refused("sim/size", "4100", EINVAL);
	expect_refused("sim/size", "64", EINVAL);
	ck_assert_int_eq(sh("echo epixuhr > $M/sim/pattern && echo 256 > $M/sim/size"), 0);
	expect_refused("sim/size", "240", EINVAL);
	ck_assert_int_eq(sh("grep -q 'multiple of 16' $M/errors"), 0);
}
END_TEST

START_TEST(observer_has_no_frames)
{
	char *m;

	mnt_start("-o observe");
	ck_assert_int_ne(access(P("frames"), F_OK), 0);
	ck_assert_int_eq(errno, ENOENT);
	m = metrics();
	ck_assert_ptr_null(strstr(m, "gpuasync_frames_seen_total"));
	ck_assert_ptr_null(strstr(m, "_bucket{"));
	free(m);
}
END_TEST

SUITE_MAIN("frames", "frames", TEST_TIMEOUT, {pulse_gap_and_duplicate, 3}, {prbs_is_unchecked},
	   {batch_errors_counted, 2}, {new_run_new_sequence}, {rearm_loop_no_false_gaps},
	   {fast_consumer_no_false_gaps}, {batched_sizes_refused}, {pushed_out_of_order},
	   {histograms_are_valid}, {latency_sampled_once_per_lap}, {v1_sampled_every_frame},
	   {observer_has_no_frames})
