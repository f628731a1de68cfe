/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The daemon as the system runs it (issue 13): readiness for systemd
 * (Type=notify: "READY=1" on $NOTIFY_SOCKET once the mount is live),
 * syslog once in the background, refusing a second daemon on a live or a
 * dead mount, and the loud warning of an unattended start that serves the
 * simulated card only because no device was named.
 *
 * The syslog case needs its own /dev/log (this machine may have none, and
 * a real one would swallow the lines): it runs the daemon in a private
 * mount namespace (unshare -m) whose /dev is a tmpfs of links to the real
 * nodes plus /dev/log, a link to a datagram socket this test reads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define SIM_WARNED "serving the SIMULATED card"

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void stop_at_exit(void)
{
	mnt_stop();
}

/* Mount with a command line of our own (mnt_start always adds --sim). */
static void mnt_custom(const char *args)
{
	static bool registered;

	if (!registered) {
		atexit(stop_at_exit);
		registered = true;
	}
	mnt_dir("test");
	M.pid = daemon_spawn(args);
	ck_assert_int_gt(M.pid, 0);
	ck_assert_msg(wait_mounted(M.dir, true, 10000), "gpuasyncfs %s: no mount", args);
	M.mounted = true;
}

/* A datagram socket at @name (abstract when it starts with '@'). */
static int dgram_socket(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_lt(len, sizeof(sa.sun_path));
	memcpy(sa.sun_path, name, len);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	else
		unlink(name);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
			 0);
	return fd;
}

/* The next datagram within @ms, NUL-terminated in @buf; false on timeout. */
static bool recv_within(int fd, char *buf, size_t len, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return false;
	n = recv(fd, buf, len - 1, 0);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
}

static void notify_case(const char *name)
{
	char buf[256];
	int fd = dgram_socket(name);

	setenv("NOTIFY_SOCKET", name, 1);
	mnt_dir("test");
	M.pid = daemon_spawn("-f --sim -o config=/dev/null $M");
	ck_assert_msg(recv_within(fd, buf, sizeof(buf), 10000), "no READY=1 within 10 s");
	ck_assert_str_eq(buf, "READY=1");
	/* Ready means live: the mount is there and answers at once. */
	ck_assert(is_mounted(M.dir));
	M.mounted = true;
	ck_assert_uint_eq(readnum("device/version"), 4);
	/* --sim under systemd is a choice: no warning. */
	ck_assert_uint_eq(err_lines(), 0);
	ck_assert_int_eq(mnt_stop(), 0);
	close(fd);
	if (name[0] == '/')
		unlink(name);
	unsetenv("NOTIFY_SOCKET");
}

START_TEST(notify_ready_when_mounted)
{
	char path[64];

	atexit(stop_at_exit);
	snprintf(path, sizeof(path), "/tmp/gafs-notify-%d", (int)getpid());
	notify_case(path);
	snprintf(path, sizeof(path), "@gafs-notify-%d", (int)getpid());
	notify_case(path);
}
END_TEST

START_TEST(second_daemon_refused)
{
	char *out;

	mnt_start(NULL);
	ck_assert_int_eq(sh("mkdir $M/buffers/0"), 0);
	/* Foreground and background, absolute and relative paths: refused,
	 * non-zero, saying why; the first mount is untouched. */
	out = sh_out("timeout 20 $GAFS -f --sim -o config=/dev/null $M 2>&1; echo rc=$?");
	ck_assert_msg(strstr(out, "is already mounted by a running gpuasyncfs (device sim)") &&
			      strstr(out, "rc=1"),
		      "%s", out);
	free(out);
	out = sh_out("cd $M/.. && timeout 20 $GAFS --sim -o config=/dev/null ./$(basename $M) "
		     "2>&1; echo rc=$?");
	ck_assert_msg(strstr(out, "already mounted") && strstr(out, "rc=1"), "%s", out);
	free(out);
	ck_assert_int_eq(sh("test $(grep -c \" $M \" /proc/self/mountinfo) = 1"), 0);
	ck_assert_int_eq(sh("test -d $M/buffers/0"), 0);
}
END_TEST

START_TEST(dead_mount_refused)
{
	char *out;
	struct stat st;
	int status;

	mnt_start(NULL);
	kill(M.pid, SIGKILL);
	ck_assert_int_eq(waitpid(M.pid, &status, 0), M.pid);
	M.pid = 0;
	ck_assert_int_ne(stat(M.dir, &st), 0);
	ck_assert_int_eq(errno, ENOTCONN);
	out = sh_out("timeout 20 $GAFS -f --sim -o config=/dev/null $M 2>&1; echo rc=$?");
	ck_assert_msg(strstr(out, "a dead FUSE mount") && strstr(out, "fusermount3 -uz") &&
			      strstr(out, "rc=1"),
		      "%s", out);
	free(out);
	/* The command it names clears it, and a new daemon mounts. */
	mnt_umount(true);
	mnt_start(NULL);
	ck_assert_uint_eq(readnum("device/version"), 4);
}
END_TEST

START_TEST(sim_warning_when_unattended)
{
	char *out, *errs;

	/* Under systemd (INVOCATION_ID) with no device and a config without
	 * [device] path: warned on stderr (the journal) and in errors. */
	setenv("INVOCATION_ID", "0123456789abcdef0123456789abcdef", 1);
	mnt_custom("-f -o config=/dev/null $M 2>$M.stderr");
	errs = readf("errors");
	ck_assert_ptr_nonnull(errs);
	ck_assert_msg(strstr(errs, "device: WARNING: ") && strstr(errs, SIM_WARNED), "%s", errs);
	free(errs);
	ck_assert_int_eq(mnt_stop(), 0);
	out = sh_out("cat $M.stderr; rm -f $M.stderr");
	ck_assert_msg(strstr(out, SIM_WARNED) != NULL, "stderr: %s", out);
	free(out);

	/* Chosen explicitly: --sim, or [device] path = sim in the config. */
	mnt_custom("-f --sim -o config=/dev/null $M");
	ck_assert_uint_eq(err_lines(), 0);
	ck_assert_int_eq(mnt_stop(), 0);
	ck_assert_int_eq(sh("printf '[device]\\npath = sim\\n' > /tmp/gafs-sim-%d.conf", getpid()),
			 0);
	{
		char args[128];

		snprintf(args, sizeof(args), "-f -o config=/tmp/gafs-sim-%d.conf $M", getpid());
		mnt_custom(args);
	}
	ck_assert_uint_eq(err_lines(), 0);
	ck_assert_int_eq(mnt_stop(), 0);
	ck_assert_int_eq(sh("rm /tmp/gafs-sim-%d.conf", getpid()), 0);

	/* By hand at a terminal: the default stays quiet. */
	unsetenv("INVOCATION_ID");
	mnt_custom("-f -o config=/dev/null $M");
	ck_assert_uint_eq(err_lines(), 0);
}
END_TEST

static pid_t bg_pid;

/* A failed check ends the test process at once (no atexit), so the test
 * leaves the daemon's pid and its directory in a file for the unchecked
 * teardown, which runs in Check's parent process (getppid() in the test). */
static void bg_note_path(char *buf, size_t len, pid_t parent)
{
	snprintf(buf, len, "/tmp/gafs-syslog-note-%d", (int)parent);
}

static void bg_note(const char *dir)
{
	char path[64];
	FILE *f;

	bg_note_path(path, sizeof(path), getppid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%d %s\n", (int)bg_pid, dir);
	fclose(f);
}

static void bg_teardown(void)
{
	char path[64], dir[128];
	int pid = 0;
	FILE *f;

	bg_note_path(path, sizeof(path), getpid());
	f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "%d %127s", &pid, dir) == 2) {
		if (pid > 0 && kill(pid, SIGTERM) == 0)
			for (int t = 0; t < 10000 && kill(pid, 0) == 0; t += 10)
				sleep_ms(10);
		if (!strncmp(dir, "/tmp/gafs-syslog-", 17) &&
		    sh("rmdir %s/mnt %s/dev 2>/dev/null; rm -f %s/log; rmdir %s", dir, dir, dir,
		       dir) != 0)
			fprintf(stderr, "left behind: %s\n", dir);
	}
	fclose(f);
	unlink(path);
}

START_TEST(background_logs_to_syslog)
{
	char dir[] = "/tmp/gafs-syslog-XXXXXX", sock[64], buf[1024], *out;
	char start[1024] = "", warning[1024] = "";
	int fd;

	if (!have_cmd("unshare", "util-linux") || !have_cmd("nsenter", "util-linux"))
		return;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/log", dir);
	fd = dgram_socket(sock);
	snprintf(M.dir, sizeof(M.dir), "%s/mnt", dir);
	ck_assert_int_eq(mkdir(M.dir, 0755), 0);
	setenv("M", M.dir, 1);
	setenv("T", dir, 1);
	unsetenv("INVOCATION_ID");
	unsetenv("NOTIFY_SOCKET");
	/* As mount(8) starts it from an fstab line with source "none": in the
	 * background, no device named.  The parent returns once mounted. */
	ck_assert_int_eq(
		sh("unshare -m --propagation private sh -c '"
		   "mkdir $T/dev && mount --rbind /dev $T/dev && mount -t tmpfs gafs /dev && "
		   "for e in $T/dev/*; do ln -s $e /dev/; done && ln -sf $T/log /dev/log && "
		   "exec \"$GAFS\" none $M -o config=/dev/null'"),
		0);
	/* Its pid now, from the unique mountpoint in its command line, so that
	 * a failure below still stops it (kill_bg). */
	out = sh_out("for p in /proc/[0-9]*; do tr '\\0' ' ' <$p/cmdline 2>/dev/null | "
		     "grep -q \" none $M \" && echo ${p#/proc/}; done");
	ck_assert_msg(sscanf(out, "%d", &bg_pid) == 1, "no daemon for %s: '%s'", M.dir, out);
	free(out);
	bg_note(dir);
	/* Wait for both lines (bounded), in whichever order they come. */
	while (!start[0] || !warning[0]) {
		ck_assert_msg(recv_within(fd, buf, sizeof(buf), 10000),
			      "syslog: start line '%s', warning '%s'", start, warning);
		if (strstr(buf, "serving sim"))
			snprintf(start, sizeof(start), "%s", buf);
		else if (strstr(buf, SIM_WARNED))
			snprintf(warning, sizeof(warning), "%s", buf);
	}
	/* "<PRI>Mon DD HH:MM:SS gpuasyncfs[PID]: ...": facility daemon (3),
	 * info (6) and warning (4). */
	ck_assert_msg(!strncmp(start, "<30>", 4), "%s", start);
	ck_assert_msg(!strncmp(warning, "<28>", 4), "%s", warning);
	{
		const char *p = strstr(start, "gpuasyncfs[");
		int pid = 0;

		ck_assert_msg(p && sscanf(p, "gpuasyncfs[%d]", &pid) == 1, "%s", start);
		ck_assert_int_eq(pid, bg_pid);
	}
	/* The mount lives in the daemon's namespace: look there. */
	out = sh_out("nsenter -t %d -m cat $M/device/version $M/errors", bg_pid);
	ck_assert_msg(!strncmp(out, "4\n", 2) && strstr(out, SIM_WARNED), "%s", out);
	free(out);
	ck_assert_int_eq(kill(bg_pid, SIGTERM), 0);
	ck_assert_msg(recv_within(fd, buf, sizeof(buf), 10000) && strstr(buf, "unmounting"),
		      "no unmounting line");
	for (int t = 0; t < 10000 && kill(bg_pid, 0) == 0; t += 10)
		sleep_ms(10);
	ck_assert_int_ne(kill(bg_pid, 0), 0);
	close(fd);
	M.dir[0] = '\0'; /* bg_teardown removes the directory */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fs_system");
	TCase *tc =
		suite_add_tests(s, "system", TEST_TIMEOUT,
				SUITE_TESTS({notify_ready_when_mounted}, {second_daemon_refused},
					    {dead_mount_refused}, {sim_warning_when_unattended},
					    {background_logs_to_syslog}));

	tcase_add_unchecked_fixture(tc, NULL, bg_teardown);
	return run_suite(s);
}
