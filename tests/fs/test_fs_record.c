/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * frames/record and sim/replay on real mounts, the files read by the
 * NumPy reader (python/gpuasync/record.py) and made by gpuasync-synth:
 *
 *   - a Jungfrau-shaped run with a pulse-ID gap and a duplicate, recorded
 *     from one mount and replayed into a second one that records too: the
 *     two files hold the same descriptors and payloads frame for frame,
 *     and the second mount's frames/ counters equal the first's;
 *   - the daemon killed with SIGKILL while it records: the file reads up
 *     to its last whole record, numbered without a hole;
 *   - a file with a corrupt record, or cut short, is refused naming the
 *     frame (EBADMSG, one errors line) and not one frame reaches the card;
 *     bad words for record and replay are refused and change nothing;
 *   - records that do not fit the recorder's queue are drops, counted;
 *   - a file 128 times the read-ahead, played twice: the daemon's peak
 *     memory grows by less than a fifth of the file, the read-ahead never
 *     holds more than its bound and one frame;
 *   - repeat with live=1: pulse IDs go on across plays (no backwards step),
 *     without it they step back at each play; rate=recorded keeps the
 *     recorded pace (a lower bound only); a recording left running is
 *     written out at unmount, and libgpuasync's reader reads it: pulse
 *     IDs in sequence, time stamps of the replay, not of the file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpuasync/record.h>
#include <gpuasync/timing.h>

#include "harness.h"

static const char *const counters[] = {
	"seen",		  "not_seen",	      "unchecked",	     "not_compared",
	"pulse_id_gaps",  "pulse_ids_missed", "pulse_id_duplicates", "pulse_id_backwards",
	"ring_laps",	  "batch_too_short",  "batch_zero_size",     "batch_corrupt",
	"batch_overflow", "last_pulse_id",
};
#define NCOUNTERS (sizeof(counters) / sizeof(counters[0]))

static char dir[64];

/* The suite's process: a failed assertion ends a test's process at once
 * (no atexit), so main removes what the tests left. */
static pid_t runner;

/* A scratch directory for the run files ($D), removed at the end. */
static void scratch(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gafs-rec-%d-XXXXXX", (int)runner);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("D", dir, 1);
	setenv("SYNTH", GA_SYNTH_BIN, 1);
	setenv("READER", GAFS_SRC "/python/gpuasync/record.py", 1);
}

static void scratch_done(void)
{
	ck_assert_int_eq(sh("rm -rf %s", dir), 0);
}

/* A python3 with NumPy in $PY (Debian's, where a pyenv one has none). */
static bool have_numpy(void)
{
	char *py = sh_out("for p in python3 /usr/bin/python3; do "
			  "$p -c 'import numpy' 2>/dev/null && { echo $p; break; }; done");
	bool ok;

	py[strcspn(py, "\n")] = '\0';
	ok = py[0] != '\0';
	if (ok)
		setenv("PY", py, 1);
	free(py);
	return ok || have_py("numpy", "python3-numpy");
}

/* Field @key of a "key value" status file, as a number. */
static unsigned long long status_num(const char *file, const char *key)
{
	char *s = readf(file), *p;
	size_t n = strlen(key);
	unsigned long long v = 0;
	bool found = false;

	ck_assert_ptr_nonnull(s);
	for (p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ') {
			v = strtoull(p + n + 1, NULL, 0);
			found = true;
			break;
		}
	ck_assert_msg(found, "%s has no %s: %s", file, key, s);
	free(s);
	return v;
}

static void wait_status(const char *file, const char *key, unsigned long long want)
{
	for (int i = 0; i < 2000 && status_num(file, key) < want; i++)
		usleep(10000);
	ck_assert_uint_ge(status_num(file, key), want);
}

/* Consume frames 4..11 through the mount, in ring order (4 buffers). */
static void consume_rest(void)
{
	for (unsigned int k = 4; k < 12; k++) {
		arm_write(k % 4);
		wait_num("sim/stats/delivered", k + 1);
	}
}

static void read_counters(char *out[NCOUNTERS])
{
	char rel[64];

	for (unsigned int i = 0; i < NCOUNTERS; i++) {
		snprintf(rel, sizeof(rel), "frames/%s", counters[i]);
		out[i] = readf(rel);
		ck_assert_ptr_nonnull(out[i]);
	}
}

START_TEST(record_then_replay_identical)
{
	char *a[NCOUNTERS], *b[NCOUNTERS], *da, *db;

	if (!have_numpy())
		return;
	scratch();
	/* Mount 1: the generator, a gap of 3 before frame 2, frame 3 a duplicate. */
	mnt_start(NULL);
	make_write_buffers(4, "64K");
	ck_assert_int_eq(sh("echo jungfrau > $M/sim/pattern && echo 4096 > $M/sim/size && "
			    "echo $D/run1.gar > $M/frames/record"),
			 0);
	sim_gap_and_duplicate(12);
	consume_rest();
	read_counters(a);
	ck_assert_str_eq(a[0], "12\n");
	ck_assert_str_eq(a[4], "1\n"); /* the gap */
	ck_assert_str_eq(a[6], "1\n"); /* the duplicate */
	ck_assert_int_eq(sh("echo stop > $M/frames/record"), 0);
	ck_assert_uint_eq(status_num("frames/record_status", "frames"), 12);
	ck_assert_uint_eq(status_num("frames/record_status", "drops"), 0);
	ck_assert_int_eq(mnt_stop(), 0);

	/* Mount 2: the file played as fast as the same ring takes it, read
	 * from the file as it plays (hold=0) and from its copy in the card's
	 * memory (hold=1). */
	for (int hold = 0; hold < 2; hold++) {
		mnt_start(NULL);
		make_write_buffers(4, "64K");
		ck_assert_int_eq(sh("echo $D/run2-%d.gar > $M/frames/record", hold), 0);
		for (unsigned int i = 0; i < 4; i++)
			arm_write(i);
		ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable && "
				    "echo \"$D/run1.gar rate=max hold=%d\" > $M/sim/replay",
				    hold),
				 0);
		ck_assert_uint_eq(status_num("sim/replay_status", "held"), hold);
		wait_num("sim/stats/delivered", 4);
		consume_rest();
		read_counters(b);
		for (unsigned int i = 0; i < NCOUNTERS; i++) {
			ck_assert_msg(!strcmp(a[i], b[i]),
				      "frames/%s: %s recorded, %s replayed (hold=%d)", counters[i],
				      a[i], b[i], hold);
			free(b[i]);
		}
		ck_assert_int_eq(sh("echo stop > $M/frames/record"), 0);
		ck_assert_uint_eq(status_num("sim/replay_status", "frames"), 12);
		ck_assert_int_eq(sh("grep -qx 'state ended' $M/sim/replay_status"), 0);
		ck_assert_int_eq(mnt_stop(), 0);

		/* Frame for frame: descriptor, payload (CRC), pulse ID, sub-frames. */
		da = sh_out("$PY $READER $D/run1.gar --dump");
		db = sh_out("$PY $READER $D/run2-%d.gar --dump", hold);
		ck_assert_int_eq(sh("$PY $READER $D/run1.gar --dump | wc -l | grep -qx 12"), 0);
		ck_assert_str_eq(da, db);
		/* ...and the payloads byte for byte, by the NumPy reader. */
		ck_assert_int_eq(
			sh("$PY -c 'import sys; sys.path.insert(0, \"%s/python/gpuasync\")\n"
			   "import record, numpy as np\n"
			   "a = [(f.descriptor, f.payload.copy()) for f in "
			   "record.RunFile(\"%s/run1.gar\")]\n"
			   "b = [(f.descriptor, f.payload.copy()) for f in "
			   "record.RunFile(\"%s/run2-%d.gar\")]\n"
			   "assert len(a) == len(b) == 12\n"
			   "assert all(x[0] == y[0] and np.array_equal(x[1], y[1]) "
			   "for x, y in zip(a, b))'",
			   GAFS_SRC, dir, dir, hold),
			0);
		free(da);
		free(db);
	}
	for (unsigned int i = 0; i < NCOUNTERS; i++)
		free(a[i]);
	scratch_done();
}
END_TEST

START_TEST(killed_while_recording)
{
	char *out;
	pid_t loop;

	if (!have_numpy())
		return;
	scratch();
	mnt_start(NULL);
	make_write_buffers(4, "64K");
	ck_assert_int_eq(sh("echo timing > $M/sim/pattern && echo 4096 > $M/sim/size && "
			    "echo $D/run.gar > $M/frames/record && "
			    "for i in 0 1 2 3; do echo 1 > $M/buffers/$i/write_enable; done && "
			    "echo 1 > $M/registers/write_enable && echo 1 > $M/sim/running"),
			 0);
	/* A consumer re-arming in ring order until the daemon dies. */
	loop = fork();
	ck_assert_int_ge(loop, 0);
	if (loop == 0) {
		execl("/bin/sh", "sh", "-c",
		      "while :; do for i in 0 1 2 3; do "
		      "echo 1 2>/dev/null > $M/buffers/$i/write_enable || exit 0; done; done",
		      (char *)NULL);
		_exit(127);
	}
	wait_status("frames/record_status", "frames", 200);
	ck_assert_int_eq(kill(M.pid, SIGKILL), 0);
	waitpid(loop, NULL, 0);
	mnt_stop();
	/* Every whole record reads; a cut one at the end is reported, no error. */
	out = sh_out("$PY $READER $D/run.gar 2>&1; echo rc=$?");
	ck_assert_msg(strstr(out, "rc=0"), "reader: %s", out);
	ck_assert_msg(strstr(out, "version 1 source sim frames "), "reader: %s", out);
	ck_assert_uint_ge(strtoull(strstr(out, "frames ") + 7, NULL, 10), 200);
	free(out);
	scratch_done();
}
END_TEST

START_TEST(bad_files_refused)
{
	char ok[128];
	unsigned int lines;
	const char *e;

	scratch();
	ck_assert_int_eq(sh("$SYNTH -o $D/ok.gar -p jungfrau -s 4K -n 10 && "
			    "cp $D/ok.gar $D/corrupt.gar && "
			    /* a byte of frame 6's payload: 64 + 6 records of 4232, + 200 */
			    "printf X | dd of=$D/corrupt.gar bs=1 seek=$((64 + 6 * 4232 + 200)) "
			    "conv=notrunc status=none && "
			    "head -c $((64 + 7 * 4232 + 100)) $D/ok.gar > $D/cut.gar && "
			    "printf 'not a run' > $D/text.gar"),
			 0);
	mnt_start(NULL);
	make_write_buffers(4, "64K");
	for (unsigned int i = 0; i < 4; i++)
		arm_write(i);
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable"), 0);
	lines = err_lines();
	ck_assert_int_ne(sh("echo \"$D/corrupt.gar rate=max\" > $M/sim/replay 2>/dev/null"), 0);
	ck_assert_uint_eq(err_lines(), lines + 1);
	e = err_last();
	ck_assert_msg(strstr(e, "frame 6 ") && strstr(e, "CRC") && strstr(e, "EBADMSG"), "%s", e);
	ck_assert_int_ne(sh("echo \"$D/cut.gar rate=max\" > $M/sim/replay 2>/dev/null"), 0);
	e = err_last();
	ck_assert_msg(strstr(e, "frame 7 ") && strstr(e, "truncated"), "%s", e);
	ck_assert_int_ne(sh("echo $D/text.gar > $M/sim/replay 2>/dev/null"), 0);
	ck_assert_msg(strstr(err_last(), "not a recorded run"), "%s", err_last());
	/* Not one frame reached the card. */
	ck_assert_uint_eq(readnum("sim/stats/generated"), 0);
	ck_assert_uint_eq(readnum("sim/stats/delivered"), 0);
	ck_assert_int_eq(sh("for i in 0 1 2 3; do grep -q '^size=0 ' $M/buffers/$i/header || "
			    "exit 1; done"),
			 0);
	assert_file_eq("sim/replay", "off\n");
	/* Bad words: refused, nothing changed. */
	expect_refused("sim/replay", "relative.gar", EINVAL);
	expect_refused("sim/replay", "/x.gar rate=fast", EINVAL);
	expect_refused("sim/replay", "/x.gar hold=maybe", EINVAL);
	expect_refused("sim/replay", "/x.gar bogus=1", EINVAL);
	expect_refused("sim/replay", "/nonexistent/x.gar", ENOENT);
	expect_refused("frames/record", "relative.gar", EINVAL);
	expect_refused("frames/record", "/x.gar queue=1", EINVAL);
	expect_refused("frames/record", "/nonexistent/x.gar", ENOENT);
	expect_refused("frames/record", "/etc/passwd", EEXIST); /* never over a file */
	/* One recording at a time; the generator and a replay exclude each other. */
	ck_assert_int_eq(sh("echo $D/r.gar > $M/frames/record"), 0);
	expect_refused("frames/record", "/tmp/another.gar", EBUSY);
	ck_assert_int_eq(sh("echo stop > $M/frames/record"), 0);
	ck_assert_int_eq(sh("echo 1 > $M/sim/running"), 0);
	snprintf(ok, sizeof(ok), "%s/ok.gar", dir);
	expect_refused("sim/replay", ok, EBUSY);
	ck_assert_int_eq(mnt_stop(), 0);
	/* The good file plays whole. */
	mnt_start(NULL);
	make_write_buffers(16, "64K");
	for (unsigned int i = 0; i < 16; i++)
		arm_write(i);
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable && "
			    "echo \"$D/ok.gar rate=max\" > $M/sim/replay"),
			 0);
	wait_num("sim/stats/delivered", 10);
	ck_assert_uint_eq(readnum("frames/seen"), 10);
	ck_assert_uint_eq(readnum("frames/unchecked"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
	scratch_done();
}
END_TEST

START_TEST(record_drops_counted)
{
	struct ga_rec_reader *r;
	struct ga_rec_frame f;
	char path[128];

	scratch();
	mnt_start(NULL);
	ck_assert_int_eq(sh("echo 128K > $M/buffers/alloc_size && for i in 0 1 2 3; do "
			    "mkdir $M/buffers/$i && echo 1 > $M/buffers/$i/write_enable || exit 1; "
			    "done"),
			 0);
	/* Frames of 64 KiB, a queue of 64 KiB: no record fits, each is a drop. */
	ck_assert_int_eq(sh("echo epixuhr > $M/sim/pattern && echo 64K > $M/sim/size && "
			    "echo \"$D/d.gar queue=64K\" > $M/frames/record && "
			    "echo 1 > $M/registers/write_enable && echo 4 > $M/sim/remaining && "
			    "echo 1 > $M/sim/running"),
			 0);
	wait_num("sim/stats/delivered", 4);
	ck_assert_uint_eq(readnum("frames/seen"), 4);
	ck_assert_uint_eq(status_num("frames/record_status", "drops"), 4);
	ck_assert_uint_eq(status_num("frames/record_status", "frames"), 0);
	ck_assert_int_eq(sh("echo stop > $M/frames/record"), 0);
	ck_assert_int_eq(sh("grep -qx 'state stopped' $M/frames/record_status"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
	snprintf(path, sizeof(path), "%s/d.gar", dir);
	ck_assert_int_eq(ga_rec_open(path, &r, NULL), 0);
	ck_assert_int_eq(ga_rec_next(r, &f), 0); /* a header, no frame */
	ga_rec_close(r);
	scratch_done();
}
END_TEST

/* The daemon's peak resident memory, KiB. */
static unsigned long long vm_hwm(void)
{
	char *s = sh_out("grep VmHWM /proc/%d/status | tr -dc 0-9", (int)M.pid);
	unsigned long long v = strtoull(s, NULL, 10);

	free(s);
	return v;
}

START_TEST(replay_streams_bounded)
{
	unsigned long long before, after;
	char asan[512];

	scratch();
	/* 64 MiB: 1024 frames of 64 KiB; read-ahead 512 KiB, played twice. */
	ck_assert_int_eq(sh("$SYNTH -o $D/big.gar -p epixuhr -s 64K -n 1024"), 0);
	/* Under AddressSanitizer freed memory waits in a quarantine (256 MiB by
	 * default) before it is used again: peak memory would count every frame
	 * ever read. */
	snprintf(asan, sizeof(asan), "%s%squarantine_size_mb=4",
		 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "",
		 getenv("ASAN_OPTIONS") ? ":" : "");
	setenv("ASAN_OPTIONS", asan, 1);
	mnt_start(NULL);
	before = vm_hwm();
	/* The engine off: the card takes each frame and drops it, as fast as it can. */
	ck_assert_int_eq(sh("echo 0 > $M/registers/write_enable && "
			    "echo \"$D/big.gar rate=max repeat=2 queue=512K\" > $M/sim/replay"),
			 0);
	/* auto holds nothing in host memory: it streams */
	ck_assert_uint_eq(status_num("sim/replay_status", "held"), 0);
	wait_num("sim/stats/dropped", 2048);
	wait_status("sim/replay_status", "frames", 2048);
	ck_assert_uint_eq(status_num("sim/replay_status", "plays"), 2);
	ck_assert_uint_le(status_num("sim/replay_status", "queued_most"), 512 * 1024 + 65 * 1024);
	after = vm_hwm();
	ck_assert_msg(after - before < 128 * 1024 / 5,
		      "peak memory grew %llu KiB playing 128 MiB with a 512 KiB read-ahead",
		      after - before);
	ck_assert_int_eq(mnt_stop(), 0);
	scratch_done();
}
END_TEST

START_TEST(repeat_live_and_recorded_pace)
{
	struct timespec t0, t1, start;
	struct ga_rec_reader *r;
	struct ga_rec_file info;
	struct ga_rec_frame f;
	char path[128];
	unsigned int n = 0;
	int ret;
	double s;

	scratch();
	ck_assert_int_eq(sh("$SYNTH -o $D/t.gar -p timing -n 8 -r 50"), 0);
	sleep(1); /* the stamps a live replay writes are later than the file's */
	clock_gettime(CLOCK_REALTIME, &start);
	mnt_start(NULL);
	make_write_buffers(32, "64K");
	for (unsigned int i = 0; i < 32; i++)
		arm_write(i);
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable"), 0);
	/* Three plays as they were: pulse IDs step back twice. */
	ck_assert_int_eq(sh("echo \"$D/t.gar rate=max repeat=3\" > $M/sim/replay"), 0);
	wait_num("sim/stats/delivered", 24);
	ck_assert_uint_eq(readnum("frames/seen"), 24);
	ck_assert_uint_eq(readnum("frames/pulse_id_backwards"), 2);
	ck_assert_int_eq(mnt_stop(), 0);

	mnt_start(NULL);
	make_write_buffers(32, "64K");
	for (unsigned int i = 0; i < 32; i++)
		arm_write(i);
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable"), 0);
	/* Recorded too, and never stopped: the unmount writes it out. */
	ck_assert_int_eq(sh("echo $D/live.gar > $M/frames/record"), 0);
	/* live=1: one sequence, at the recorded 50 Hz (24 frames: 0.46 s at least). */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(sh("echo \"$D/t.gar repeat=3 live=1\" > $M/sim/replay"), 0);
	wait_num("sim/stats/delivered", 24);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	ck_assert_msg(s >= 0.40, "24 frames at a recorded 50 Hz took %.3f s", s);
	expect_nums("frames/",
		    "seen=24 pulse_id_backwards=0 pulse_id_gaps=0 pulse_id_duplicates=0");
	ck_assert_uint_eq(readnum("frames/last_pulse_id"), 0x123400000000ull + 23);
	ck_assert_int_eq(mnt_stop(), 0);
	/* The library's reader: 24 frames, pulse IDs 0..23 on, stamps rewritten. */
	snprintf(path, sizeof(path), "%s/live.gar", dir);
	ck_assert_int_eq(ga_rec_open(path, &r, &info), 0);
	ck_assert_str_eq(info.source, "sim");
	while ((ret = ga_rec_next(r, &f)) > 0) {
		ck_assert(f.flags & GA_REC_F_TIMING);
		ck_assert_uint_eq(f.pulse_ctl & GA_TIMING_PULSE_MASK, GA_TIMING_PULSE0 + n);
		/* the synthesised stamps were made before the replay began */
		ck_assert_uint_ge((uint64_t)f.th_time_s * 1000000000ull + f.th_time_ns,
				  (uint64_t)start.tv_sec * 1000000000ull + (uint64_t)start.tv_nsec);
		n++;
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(n, 24);
	ga_rec_close(r);

	/* The same from the copy in the card's memory: the TimingHeader the
	 * live rewrite makes goes over the copied payload. */
	mnt_start(NULL);
	make_write_buffers(32, "64K");
	for (unsigned int i = 0; i < 32; i++)
		arm_write(i);
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable && "
			    "echo \"$D/t.gar rate=max repeat=3 live=1 hold=1\" > $M/sim/replay"),
			 0);
	ck_assert_uint_eq(status_num("sim/replay_status", "held"), 1);
	ck_assert_uint_ge(status_num("sim/replay_status", "held_bytes"), 8 * 32);
	wait_num("sim/stats/delivered", 24);
	expect_nums("frames/",
		    "seen=24 pulse_id_backwards=0 pulse_id_gaps=0 pulse_id_duplicates=0");
	ck_assert_uint_eq(readnum("frames/last_pulse_id"), 0x123400000000ull + 23);
	ck_assert_int_eq(mnt_stop(), 0);
	scratch_done();
}
END_TEST

int main(void)
{
	int rc;

	runner = getpid();
	rc = run_suite(
		suite_of("record", "record", TEST_TIMEOUT,
			 SUITE_TESTS({record_then_replay_identical}, {killed_while_recording},
				     {bad_files_refused}, {record_drops_counted},
				     {replay_streams_bounded}, {repeat_live_and_recorded_pace})));
	if (sh("rm -rf /tmp/gafs-rec-%d-*", (int)runner) != 0)
		return 1;
	return rc;
}
