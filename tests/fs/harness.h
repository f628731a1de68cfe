/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Mount harness for the gpuasyncfs tests (the lxcfs tests/main.sh.in
 * shape, in C for Check): each test mounts the simulated card on a fresh
 * mktemp directory with the daemon in the foreground, waits for the mount,
 * drives it with real tools (cat, echo, mkdir, rmdir, ls, dd, python3)
 * through system(), and always unmounts (fusermount3 -u, then -z) and
 * kills the daemon it started, by pid:
 *   - mnt_stop() at the end of a test, and from atexit() when a ck_assert
 *     ends the test process early;
 *   - the daemon gets PR_SET_PDEATHSIG=SIGTERM, so a test process killed
 *     by Check's timeout still takes its daemon (and mount) with it.
 * Shell snippets see the mountpoint as $M and the binary as $GAFS.
 */
#ifndef GAFS_TEST_HARNESS_H
#define GAFS_TEST_HARNESS_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/types.h>

#include "../common/put_file.h"
/* After each test that passed, the mount it left (if any) is stopped, and
 * must stop cleanly: mnt_teardown, a checked fixture of every TCase. */
#define SUITE_TEARDOWN mnt_teardown
#include "../common/suite_tests.h"

struct mnt {
	char dir[128];
	pid_t pid;
	bool mounted;
	char log[64]; /* the daemon's stderr (mnt_start_logged), or "" */
};

extern struct mnt M;

/* Mount the simulated card with extra arguments ("-o version=1").
 * Fails the test when the mount does not appear. */
void mnt_start(const char *extra);
/* A new empty mountpoint in M.dir (/tmp/gafs-@tag-XXXXXX), $M and $GAFS
 * set: for a test that mounts it its own way (mount.fuse3, daemon_spawn). */
void mnt_dir(const char *tag);
/* Unmount $M with the system's command (umount_cmd(@lazy)), wait until it
 * is gone and remove the directory: a mount made without mnt_start. */
void mnt_umount(bool lazy);
/* The mount left by a test, stopped: it must stop cleanly (mnt_stop 0). */
void mnt_teardown(void);
/* mnt_start with the daemon's stderr kept in a file, so a failure message
 * can show what the daemon said (daemon_output): a test that checks how
 * the daemon ended uses it. */
void mnt_start_logged(const char *extra);
/* What the daemon of mnt_start_logged wrote so far (malloc'd, never NULL). */
char *daemon_output(void);
/* Unmount and stop the daemon; returns its exit status (or -1). */
int mnt_stop(void);
/* Start the daemon with @args (a shell word list, mountpoint included) in
 * the background; returns its pid (foreground) without waiting. */
pid_t daemon_spawn(const char *args);
bool is_mounted(const char *dir);
bool wait_mounted(const char *dir, bool want, int ms);

/* Run a shell command (sh -c) with $M and $GAFS set; exit status. */
int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, returning stdout (malloc'd, never NULL). */
char *sh_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A fresh directory /tmp/gafs-@tag.XXXXXX for a case's own files, into
 * @dir (@len bytes); rm_dir removes it and all in it. */
void tmp_dir(char *dir, size_t len, const char *tag);
void rm_dir(const char *dir);

/* Is tool @name (Debian package @package) on PATH?  When it is not: under
 * CI=true the case fails (CI installs every tool, tools/packages.txt);
 * otherwise it prints "SKIP: ..." and the whole executable then exits 77
 * (ctest: skipped) instead of passing, since part of it did not run. */
bool have_cmd(const char *name, const char *package);
/* A part that cannot run on this machine for want of a kernel feature (not
 * a package: no CI exception): prints "SKIP: @why" and the executable then
 * exits 77, as for have_cmd. */
void skip_part(const char *why);
/* The same for a Python 3 module (python3 -c "import @module"); have_py_at
 * asks a given interpreter (an example's #! line names /usr/bin/python3,
 * which is not the python3 on every PATH). */
bool have_py(const char *module, const char *package);
bool have_py_at(const char *python, const char *module, const char *package);

/* "fusermount3 -u" ("-uz" when @lazy), or umount(8)'s "umount" ("umount -l")
 * where fusermount3 is not installed (the tests run as root there). */
const char *umount_cmd(bool lazy);

/* Start prometheus-node-exporter with only its textfile collector, reading
 * @dir, on a free port of 127.0.0.1 (written to *@port), its log to @log
 * (NULL: none); its pid, killed by node_exporter_stop (and by the end of
 * the test process).  node_exporter 1.5 reports a series that two files
 * both hold only in its log ("error gathering metrics: ... collected
 * before with the same name and label values"), and serves the first. */
pid_t node_exporter_start(const char *dir, int *port, const char *log);
/* The same, run through the command prefix @as ("setpriv --reuid=..."). */
pid_t node_exporter_start_as(const char *as, const char *dir, int *port, const char *log);
void node_exporter_stop(pid_t pid);
/* GET http://127.0.0.1:@port/metrics, retried for up to 10 s while the
 * server comes up: the body (malloc'd), or "" when it never answered. */
char *scrape(int port);

/* Paths relative to the mountpoint. */
const char *P(const char *rel);
/* Whole file as a string (malloc'd), or NULL with errno set. */
char *readf(const char *rel);
/* Fails the test unless file @rel reads exactly @want; a macro, so the
 * failure names the test's line. */
#define assert_file_eq(rel, want)                                                                  \
	do {                                                                                       \
		char *file_ = readf(rel);                                                          \
                                                                                                   \
		ck_assert_str_eq(file_, (want));                                                   \
		free(file_);                                                                       \
	} while (0)
/* One write() of @s to @rel: 0, or -errno from open or write. */
int writef(const char *rel, const char *s);
int writen(const char *rel, const void *buf, size_t len);
/* Lines in errors, and the last one (static buffer). */
unsigned int err_lines(void);
const char *err_last(void);
/* @text written to the mount's file @file is refused with @err, one errors
 * line more that names @what, and the mount's `settings` read the same
 * after: a whole-or-nothing refusal. */
void write_refused(const char *file, const char *text, int err, const char *what);
/* The value of a one-line file as a number (fails the test if absent). */
unsigned long long readnum(const char *rel);
/* Fails the test unless each NAME=NUMBER of @want (space-separated) names
 * a file under @dir ("frames/") that reads NUMBER. */
void expect_nums(const char *dir, const char *want);
/* Wait until the number in @rel reaches @want (10 s at most; fails the test). */
void wait_num(const char *rel, unsigned long long want);

/* Write buffers 0..@n-1 of @size (buffers/alloc_size: "64K"), and one of
 * them, @i, armed (buffers/<i>/write_enable). */
void make_write_buffers(unsigned int n, const char *size);
void arm_write(unsigned int i);
/* The simulated card's pulse-ID faults on four write buffers made and
 * idle: buffers 0 and 1 armed, @frames frames asked for; frames 0 and 1
 * land, a gap of 3 before frame 2 (in buffer 2), frame 3 a duplicate (in
 * buffer 3).  Returns with 4 frames delivered, the rest waiting for a
 * re-arm. */
void sim_gap_and_duplicate(unsigned int frames);

/* Assert a write fails with @err, leaves @file's value as it was and adds
 * one errors line mentioning @path_part. */
void expect_refused(const char *rel, const char *value, int err);

/* Run a suite (one TCase per test function) and return the exit code. */
int run_suite(Suite *s);
#define TEST_TIMEOUT 60

#endif
