/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * examples/ (issue 3 item 8) run against a real mount: the shell
 * walkthrough, the rate monitor, the Python metrics reader, the fstab
 * line (through mount.fuse3; skipped with a message where it is not
 * installed) and the systemd units (systemd-analyze when
 * present).  shellcheck and pyflakes vet the scripts when installed.
 * The Python reader imports the gpuasync package from this source tree
 * (PYTHONPATH, set in main), not an installed copy.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define EX GAFS_SRC "/examples"
/* A line of metrics_reader.py --watch: a time, then a rate per counter. */
#define RATE_LINE "'^[0-9:]*  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]*$'"

START_TEST(walkthrough)
{
	char *out;

	mnt_start(NULL);
	out = sh_out("sh " EX "/walkthrough.sh $M 20 2>&1; echo rc=$?");
	ck_assert_msg(strstr(out, "rc=0") != NULL, "walkthrough failed:\n%.2000s", out);
	ck_assert_ptr_nonnull(strstr(out, "rx_frame_count: "));
	ck_assert_ptr_nonnull(strstr(out, "size=1024 result=0"));
	free(out);
	/* it tears down what it made */
	ck_assert_int_eq(sh("test \"$(ls $M/buffers)\" = alloc_size"), 0);
}
END_TEST

START_TEST(monitor_prints_rates)
{
	char *out;
	double rate = 0;

	mnt_start(NULL);
	ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/buffers/1 && echo 1 > $M/buffers/1/write_enable "
			    "&& echo 500 > $M/sim/rate && echo 1 > $M/sim/running"),
			 0);
	out = sh_out("sh " EX "/monitor.sh $M 0.3 2");
	/* the write buffers' states, from metrics: buffer 1 stays armed (the
	 * engine is off; dropped frames' headers go to buffer 0) */
	ck_assert_msg(strstr(out, " FREE=1 "), "monitor output:\n%s", out);
	/* header + 2 lines; frames are dropped (engine off) but counted */
	{
		char *third = strchr(out, '\n');

		third = third ? strchr(third + 1, '\n') : NULL;
		ck_assert_msg(third && sscanf(third + 1, "%*s %lf", &rate) == 1,
			      "monitor output:\n%s", out);
	}
	ck_assert_msg(rate > 10, "rx rate %.1f from:\n%s", rate, out);
	free(out);
}
END_TEST

START_TEST(metrics_reader)
{
	char *out;

	if (!have_py_at("/usr/bin/python3", "prometheus_client", "python3-prometheus-client"))
		return;
	/* The package it imports is this tree's. */
	ck_assert_int_eq(sh("test \"$(/usr/bin/python3 -c 'import gpuasync; "
			    "print(gpuasync.__file__)')\" = " GAFS_SRC
			    "/python/gpuasync/__init__.py"),
			 0);
	mnt_start(NULL);
	ck_assert_int_eq(sh("mkdir $M/buffers/0 && echo 1 > $M/buffers/0/write_enable"), 0);
	/* The mount point, and its metrics file as the path (as before the
	 * reader used the package): the same summary. */
	out = sh_out(EX "/metrics_reader.py $M 2>&1");
	ck_assert_msg(strstr(out, "card: sim, firmware version 4") != NULL, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "write buffers: FREE=1"));
	ck_assert_ptr_nonnull(strstr(out, "gpuasync_rx_frame_count_total"));
	free(out);
	out = sh_out(EX "/metrics_reader.py $M/metrics 2>&1");
	ck_assert_msg(strstr(out, "card: sim, firmware version 4") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(
		sh(EX "/metrics_reader.py --json $M | "
		      "python3 -c 'import json,sys; d=json.load(sys.stdin); "
		      "assert d[\"gpuasync_buffer_state\"][0][\"labels\"][\"state\"] == \"FREE\"'"),
		0);
	/* Counters by name; a register that refuses reads ends it with the
	 * mount's reason, one the firmware lacks with its name. */
	out = sh_out(EX "/metrics_reader.py $M --watch 0.1 --counters rx_frame_count,count_reset "
			"2>&1; echo rc=$?");
	ck_assert_msg(strstr(out, "metrics_reader.py: [Errno 13] Permission denied: ") == out &&
			      strstr(out, "registers/count_reset: EACCES: write-only file") &&
			      strchr(out, '\n') == strstr(out, "\nrc=1\n"),
		      "%s", out);
	free(out);
	out = sh_out(EX "/metrics_reader.py $M --watch 0.1 --counters nope 2>&1; echo rc=$?");
	ck_assert_str_eq(out, "metrics_reader.py: registers has no file 'nope'\nrc=1\n");
	free(out);
	/* --frames sleeps in poll() until rx_frame_count moves: the
	 * generator starts once it waits (3 frames, dropped with the write
	 * engine off, but counted). */
	ck_assert_int_eq(
		sh("f=$(mktemp); { " EX "/metrics_reader.py $M --frames 3 --timeout 60 "
		   ">$f 2>&1; echo rc=$? >>$f; } & p=$!; i=0; "
		   "until grep -q '^waiting for rx_frame_count to reach 3 (now 0)$' $f; do "
		   "i=$((i+1)); [ $i -gt 1200 ] && break; sleep 0.1; done; "
		   "echo 3 > $M/sim/remaining && echo 1 > $M/sim/running; wait $p; "
		   "grep -q '^3 frames in [0-9.]* s$' $f && "
		   "grep -q '^gpuasync_rx_frame_count_total  *3$' $f && grep -q '^rc=0$' $f; "
		   "r=$?; [ $r = 0 ] || cat $f; rm -f $f; exit $r"),
		0);
	/* Nothing comes: the wait times out, one line. */
	out = sh_out(EX "/metrics_reader.py $M --frames 1 --timeout 0.3 2>&1 >/dev/null; "
			"echo rc=$?");
	ck_assert_str_eq(out, "metrics_reader.py: registers/rx_frame_count: still '3' after 0.3 s\n"
			      "rc=1\n");
	free(out);
	/* A directory that is not a mount. */
	out = sh_out(EX "/metrics_reader.py /proc/self 2>&1; echo rc=$?");
	ck_assert_str_eq(out, "metrics_reader.py: /proc/self: not a gpuasyncfs mount (no "
			      "device/version)\nrc=1\n");
	free(out);
	/* --watch runs until interrupted: wait for its first report (bounded
	 * generously: python3 may be a slow shim), then stop it.  A rate line
	 * is a time and one rate per counter, the first rx_frame_count's:
	 * frames flow (dropped with the write engine off, but counted). */
	ck_assert_int_eq(sh("echo 500 > $M/sim/rate && echo 0 > $M/sim/remaining && "
			    "echo 1 > $M/sim/running"),
			 0);
	ck_assert_int_eq(sh("f=$(mktemp); " EX
			    "/metrics_reader.py --watch 0.3 $M/metrics >$f 2>&1 & "
			    "p=$!; i=0; until grep -q " RATE_LINE " $f; do i=$((i+1)); "
			    "[ $i -gt 1200 ] && break; sleep 0.1; done; kill -TERM $p; wait $p; "
			    "grep -q '^time *rx_frame_count/s  *tx_frame_count/s ' $f && "
			    "grep " RATE_LINE " $f | awk '$2 > 10 { ok = 1 } END { exit !ok }'; "
			    "r=$?; [ $r = 0 ] || cat $f; rm -f $f; exit $r"),
			 0);
	ck_assert_int_eq(sh("echo 0 > $M/sim/running"), 0);
	/* Every sample, one a line, in aligned columns: all lines as long. */
	ck_assert_int_eq(sh("test $(" EX "/metrics_reader.py --all $M | "
			    "awk '{print length($0)}' | sort -u | wc -l) = 1"),
			 0);
	/* A closed pipe ends --watch quietly: 141 (as SIGPIPE), nothing on stderr. */
	ck_assert_int_eq(sh("f=$(mktemp); { timeout 60 " EX "/metrics_reader.py --watch 0.05 "
			    "$M 2>$f.err; echo $? >$f; } | head -2 >/dev/null; "
			    "r=$(cat $f); e=$(cat $f.err); rm -f $f $f.err; "
			    "test \"$r\" = 141 && test -z \"$e\""),
			 0);
}
END_TEST

/* The reader on files of our own: the format's escapes, and errors as one
 * line each, no traceback. */
START_TEST(metrics_reader_errors)
{
	char path[64], *out;
	FILE *f;

	if (!have_py_at("/usr/bin/python3", "prometheus_client", "python3-prometheus-client"))
		return;
	snprintf(path, sizeof(path), "/tmp/gafs-metrics-%d", (int)getpid());
	setenv("F", path, 1);
	/* In the file: C:\\new (a backslash) and a\nb (a newline). */
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("# TYPE x gauge\nx{path=\"C:\\\\new\",n=\"a\\nb\"} 1\n", f);
	fclose(f);
	out = sh_out(EX "/metrics_reader.py --all $F 2>&1; echo rc=$?");
	ck_assert_str_eq(out, "x  n=a\\nb,path=C:\\new  1\nrc=0\n");
	free(out);
	ck_assert_int_eq(sh(EX
			    "/metrics_reader.py --json $F | /usr/bin/python3 -c 'import json,sys; "
			    "l = json.load(sys.stdin)[\"x\"][0][\"labels\"]; "
			    "assert l[\"path\"] == \"C:\\\\new\" and l[\"n\"] == \"a\\nb\", l'"),
			 0);
	/* A saved file (not a mount's) has no card to watch or wait on. */
	out = sh_out(EX "/metrics_reader.py $F --frames 1 2>&1; echo rc=$?");
	ck_assert_msg(!strncmp(out, "metrics_reader.py: /tmp/gafs-metrics-", 37) &&
			      strstr(out, ": --watch and --frames need a mount point\nrc=1\n"),
		      "%s", out);
	free(out);

	/* More output than a pipe holds, then "| head -1": 141, stderr empty. */
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 5000; i++)
		fprintf(f, "x{i=\"%d\"} %d\n", i, i);
	fclose(f);
	ck_assert_int_eq(sh("{ " EX "/metrics_reader.py --all $F 2>$F.err; echo $? >$F.rc; } | "
			    "head -1 >/dev/null; test \"$(cat $F.rc)\" = 141 && test ! -s $F.err"),
			 0);
	unlink(path);
	ck_assert_int_eq(sh("rm $F.rc $F.err"), 0);

	{
		char want[160];

		snprintf(want, sizeof(want),
			 "metrics_reader.py: %s: No such file or directory\nrc=1\n", path);
		out = sh_out(EX "/metrics_reader.py $F 2>&1; echo rc=$?");
		ck_assert_str_eq(out, want);
		free(out);
	}
	/* Not the format: one line naming the file, status 1. */
	ck_assert_int_eq(sh("printf 'garbage{ here\\n' >$F"), 0);
	out = sh_out(EX "/metrics_reader.py $F 2>&1; echo rc=$?");
	ck_assert_msg(!strncmp(out, "metrics_reader.py: /tmp/gafs-metrics-", 37) &&
			      strstr(out, ": not Prometheus text format: ") &&
			      strchr(out, '\n') == strstr(out, "\nrc=1\n"),
		      "%s", out);
	free(out);
	unlink(path);
}
END_TEST

START_TEST(fstab_line)
{
	/* The simulated card's line, as mount(8) hands it to mount.fuse3. */
	if (!have_cmd("mount.fuse3", "fuse3"))
		return;
	mnt_dir("fstab");
	ck_assert_int_eq(sh("line=$(grep '^# gpuasyncfs#sim' " EX "/fstab | sed 's/^# //'); "
			    "set -- $line; "
			    "PATH=$(dirname \"$GAFS\"):$PATH mount.fuse3 \"$1\" \"$M\" -o \"$4\""),
			 0);
	ck_assert(is_mounted(M.dir));
	ck_assert_uint_eq(readnum("device/version"), 4);
	mnt_umount(false);
}
END_TEST

START_TEST(unit_and_lint)
{
	/* The template unit as instance datadev_0, with ExecStart= pointing at
	 * the daemon under test (the unit names the installed /usr/local/bin
	 * one): not one line of complaint, warnings included (an unknown Type=
	 * is only a warning).  tests/install/units.sh runs it under systemd. */
	if (have_cmd("systemd-analyze", "systemd")) {
		char *out = sh_out(
			"d=$(mktemp -d) && "
			"sed \"s|/usr/local/bin/gpuasyncfs|$GAFS|\" " EX "/gpuasyncfs@.service "
			">$d/gpuasyncfs@.service && "
			"ln -s gpuasyncfs@.service $d/gpuasyncfs@datadev_0.service && "
			"systemd-analyze verify --man=no $d/gpuasyncfs@datadev_0.service 2>&1; "
			"echo rc=$?; rm -r $d");

		ck_assert_msg(!strcmp(out, "rc=0\n"), "systemd-analyze verify:\n%s", out);
		free(out);
	}
	/* Readiness, status and watchdog come from the daemon (test_fs_system,
	 * units.sh); the config is optional, so the unit does not name it. */
	ck_assert_int_eq(sh("grep -q '^Type=notify$' " EX "/gpuasyncfs@.service"), 0);
	ck_assert_int_eq(sh("grep -q '^WatchdogSec=' " EX "/gpuasyncfs@.service"), 0);
	ck_assert_int_ne(sh("grep -q 'config=' " EX "/gpuasyncfs@.service"), 0);
	ck_assert_int_eq(
		sh("grep -q '^ExecStart=.*gpuasyncfs -f /dev/%%i /run/gpuasyncfs/%%i$' " EX
		   "/gpuasyncfs@.service"),
		0);
	if (have_cmd("shellcheck", "shellcheck"))
		ck_assert_int_eq(sh("shellcheck -s sh " EX "/walkthrough.sh " EX "/monitor.sh"), 0);
	if (have_cmd("pyflakes3", "pyflakes3"))
		ck_assert_int_eq(sh("pyflakes3 " EX "/metrics_reader.py"), 0);
}
END_TEST

int main(void)
{
	/* examples/metrics_reader.py imports this tree's gpuasync package. */
	{
		const char *pp = getenv("PYTHONPATH");
		char *v;

		if (asprintf(&v, "%s%s%s", GAFS_SRC "/python", pp && *pp ? ":" : "",
			     pp && *pp ? pp : "") < 0)
			return 1;
		setenv("PYTHONPATH", v, 1);
		free(v);
	}
	return run_suite(
		suite_of("fs_examples", "examples", TEST_TIMEOUT,
			 SUITE_TESTS({walkthrough}, {monitor_prints_rates}, {metrics_reader},
				     {metrics_reader_errors}, {fstab_line}, {unit_and_lint})));
}
