/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Starting and stopping gpuasyncfs (issue 3 item 1): --help, --version,
 * background start that returns once mounted, a leading source argument
 * (mount.fuse3 / fstab), a datadev path that does not exist, clean
 * unmount on SIGINT, SIGTERM and fusermount3 -u with buffers released,
 * the daemon killed mid-run (mount detached with fusermount3 -uz,
 * nothing left behind), and unmount while files are open.  Where
 * fusermount3 is not installed the tests unmount with umount(8) (as root),
 * and the mount.fuse3 part skips with a message when mount.fuse3 is
 * missing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static void sleep_ms(int ms)
{
	usleep((useconds_t)ms * 1000);
}

/* The pid of a gpuasyncfs process whose command line names @dir. */
static pid_t find_daemon(const char *dir)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	while (d && (e = readdir(d))) {
		char path[300], cmd[4096];
		ssize_t n;
		int fd;

		if (!atoi(e->d_name))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		if (n <= 0)
			continue;
		cmd[n] = '\0';
		if (!strstr(cmd, "gpuasyncfs"))
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		if (strstr(cmd, dir) && !strstr(cmd, "sh -c")) {
			found = (pid_t)atoi(e->d_name);
			break;
		}
	}
	if (d)
		closedir(d);
	return found;
}

/* A daemon that has exited counts as gone while still a zombie: the
 * background daemon's parent is pid 1, which may reap it only seconds
 * later on a loaded machine (the VM's init reaps on its own schedule). */
static bool pid_alive(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')' */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static bool wait_gone(pid_t pid, int ms)
{
	for (int t = 0; t < ms; t += 10) {
		if (!pid_alive(pid))
			return true;
		sleep_ms(10);
	}
	return !pid_alive(pid);
}

static int count_shm(pid_t pid)
{
	char pat[64];
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	int n = 0;

	snprintf(pat, sizeof(pat), "gpuasync-sim-%d-", (int)pid);
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, pat, strlen(pat));
	if (d)
		closedir(d);
	return n;
}

START_TEST(help_and_version)
{
	char *out;

	setenv("GAFS", GAFS_BIN, 1);
	out = sh_out("\"$GAFS\" --help; echo rc=$?");
	ck_assert_ptr_nonnull(strstr(out, "usage: "));
	ck_assert_ptr_nonnull(strstr(out, "[DEVICE] MOUNTPOINT"));
	ck_assert_ptr_nonnull(strstr(out, "-o config=FILE"));
	ck_assert_ptr_nonnull(strstr(out, "FUSE options"));
	ck_assert_ptr_nonnull(strstr(out, "rc=0"));
	free(out);
	out = sh_out("\"$GAFS\" --version; echo rc=$?");
	ck_assert_ptr_nonnull(strstr(out, "gpuasyncfs 0.1.0"));
	ck_assert_ptr_nonnull(strstr(out, "FUSE library version"));
	ck_assert_ptr_nonnull(strstr(out, "rc=0"));
	free(out);
	ck_assert_int_ne(sh("\"$GAFS\" 2>/dev/null"), 0);
	ck_assert_int_ne(sh("\"$GAFS\" a b c 2>/dev/null"), 0);
}
END_TEST

START_TEST(background_start_and_fusermount)
{
	char dir[] = "/tmp/gafs-bg-XXXXXX";
	pid_t pid;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("GAFS", GAFS_BIN, 1);
	/* returns only once mounted: usable at once */
	ck_assert_int_eq(sh("\"$GAFS\" --sim %s && cat %s/device/version >/dev/null", dir, dir), 0);
	ck_assert(is_mounted(dir));
	pid = find_daemon(dir);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(sh("mkdir %s/buffers/0", dir), 0);
	ck_assert_int_eq(count_shm(pid), 1);
	ck_assert_int_eq(sh("%s %s", umount_cmd(false), dir), 0);
	ck_assert(wait_gone(pid, 5000));
	ck_assert(!is_mounted(dir));
	ck_assert_int_eq(count_shm(pid), 0); /* the card's register file is gone */
	rmdir(dir);
}
END_TEST

START_TEST(leading_source_argument)
{
	/* "gpuasyncfs SOURCE MNT -o ..." as mount.fuse3 runs it */
	mnt_dir("src");
	M.pid = daemon_spawn("-f sim \"$M\" -o version=1");
	ck_assert(wait_mounted(M.dir, true, 10000));
	ck_assert_uint_eq(readnum("device/version"), 1);
	ck_assert_int_eq(mnt_stop(), 0);

	/* "gpuasyncfs" as the source: the device comes from the config */
	mnt_dir("src");
	M.pid = daemon_spawn("-f gpuasyncfs \"$M\"");
	ck_assert(wait_mounted(M.dir, true, 10000));
	assert_file_eq("device/backend", "sim\n");
	ck_assert_int_eq(mnt_stop(), 0);

	/* mount.fuse3 itself, both fstab spellings (fuse3 package; some
	 * machines have the library without it) */
	if (!have_cmd("mount.fuse3", "fuse3"))
		return;
	mnt_dir("src");
	ck_assert_int_eq(sh("PATH=$(dirname \"$GAFS\"):$PATH mount.fuse3 'gpuasyncfs#sim' \"$M\" "
			    "-o version=5,allow_other,nofail,x-systemd.requires=x.device"),
			 0);
	ck_assert(is_mounted(M.dir));
	ck_assert_uint_eq(readnum("device/version"), 5);
	ck_assert_int_eq(sh("grep \" $M \" /proc/mounts | grep -q 'fuse.gpuasyncfs.*allow_other'"),
			 0);
	ck_assert_int_eq(sh("%s \"$M\"", umount_cmd(false)), 0);
	ck_assert_int_eq(
		sh("PATH=$(dirname \"$GAFS\"):$PATH mount.fuse3 sim \"$M\" -t fuse.gpuasyncfs "
		   "-o version=1"),
		0);
	ck_assert_uint_eq(readnum("device/version"), 1);
	mnt_umount(false);
}
END_TEST

START_TEST(datadev_missing)
{
	char *out;

	setenv("GAFS", GAFS_BIN, 1);
	out = sh_out("d=$(mktemp -d); \"$GAFS\" /dev/datadev_97 $d 2>&1; echo rc=$?; "
		     "mountpoint -q $d && echo MOUNTED && %s $d; rmdir $d",
		     umount_cmd(false));
	ck_assert_msg(strstr(out, "datadev_97") != NULL, "no explanation: %s", out);
	ck_assert_ptr_null(strstr(out, "rc=0"));
	ck_assert_ptr_null(strstr(out, "MOUNTED"));
	free(out);
}
END_TEST

/* Bad start-up options: refused at once with a reason, nothing mounted.
 * -o config=/dev/zero once hung start-up (inih read it forever); threads
 * once took -1 as 4294967295.  The timeout only bounds a regression. */
START_TEST(bad_startup_options)
{
	static const char *const bad[][2] = {
		{"-o threads=-1", "threads=-1"},   {"-o threads=0", "threads=0"},
		{"-o threads=100000", "1 to 256"}, {"-o threads=two", "threads=two"},
		{"-o config=/dev/zero", "not a regular file"},
	};

	setenv("GAFS", GAFS_BIN, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *out = sh_out("d=$(mktemp -d); timeout 60 \"$GAFS\" --sim %s $d 2>&1; "
				   "echo rc=$?; mountpoint -q $d && echo MOUNTED && %s $d; rmdir $d",
				   bad[i][0], umount_cmd(false));

		ck_assert_msg(strstr(out, bad[i][1]), "%s: no explanation: %s", bad[i][0], out);
		ck_assert_msg(!strstr(out, "rc=0") && !strstr(out, "rc=124"), "%s: %s", bad[i][0],
			      out);
		ck_assert_msg(!strstr(out, "MOUNTED"), "%s: mounted", bad[i][0]);
		free(out);
	}
}
END_TEST

/* Start-up mistakes that once mounted anyway: --sim beside a device (a fake
 * card where a real one was meant), in either order, and a regular file as
 * the mountpoint (mounted, then EIO on every access). */
START_TEST(bad_startup_arguments)
{
	static const char *const bad[][2] = {
		{"--sim /dev/datadev_0 $d", "both --sim and the device '/dev/datadev_0'"},
		{"/dev/datadev_0 --sim $d", "both --sim and the device '/dev/datadev_0'"},
		{"--sim $d/file", "not a directory"},
		{"--sim sim $d/file", "not a directory"},
	};

	setenv("GAFS", GAFS_BIN, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *out = sh_out("d=$(mktemp -d); touch $d/file; timeout 60 \"$GAFS\" %s 2>&1; "
				   "echo rc=$?; for m in $d $d/file; do mountpoint -q $m && "
				   "echo MOUNTED && %s $m; done; rm $d/file; rmdir $d",
				   bad[i][0], umount_cmd(true));

		ck_assert_msg(strstr(out, bad[i][1]), "%s: no explanation: %s", bad[i][0], out);
		ck_assert_msg(strstr(out, "rc=1"), "%s: %s", bad[i][0], out);
		ck_assert_msg(!strstr(out, "MOUNTED"), "%s: mounted: %s", bad[i][0], out);
		free(out);
	}
	/* what stays allowed: --sim with the placeholder "sim" */
	ck_assert_int_eq(sh("d=$(mktemp -d); \"$GAFS\" --sim sim $d -o config=/dev/null && "
			    "test -d $d/registers; rc=$?; %s $d; rmdir $d; exit $rc",
			    umount_cmd(false)),
			 0);
}
END_TEST

/* Stop with @sig (0: fusermount3 -u) with buffers allocated and armed. */
static void clean_stop(int sig)
{
	pid_t pid;
	int st;

	mnt_start(NULL);
	pid = M.pid;
	ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/buffers/1 $M/read_buffers/0 && "
			    "echo 1 > $M/buffers/0/write_enable"),
			 0);
	ck_assert_int_eq(count_shm(pid), 1);
	if (sig) {
		ck_assert_int_eq(kill(pid, sig), 0);
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		M.pid = 0;
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x after signal %d",
			      st, sig);
		ck_assert(wait_mounted(M.dir, false, 2000));
	} else {
		ck_assert_int_eq(mnt_stop(), 0);
	}
	ck_assert_int_eq(count_shm(pid), 0);
	mnt_stop();
}

START_TEST(stop_on_sigint)
{
	clean_stop(SIGINT);
}
END_TEST

START_TEST(stop_on_sigterm)
{
	clean_stop(SIGTERM);
}
END_TEST

START_TEST(stop_on_fusermount)
{
	clean_stop(0);
}
END_TEST

/* A killed daemon that nobody has reaped yet (a zombie) is dead too: the
 * next start removes its register file (it once counted as alive). */
START_TEST(killed_not_reaped)
{
	siginfo_t si;
	pid_t pid;
	int st;

	mnt_start(NULL);
	pid = M.pid;
	ck_assert_int_eq(count_shm(pid), 1);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0); /* a zombie now */
	M.pid = 0;
	ck_assert_int_eq(sh("%s $M", umount_cmd(true)), 0);
	mnt_stop();
	mnt_start(NULL);
	ck_assert_int_eq(count_shm(pid), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	mnt_stop();
}
END_TEST

START_TEST(killed_mid_run)
{
	pid_t pid;
	int fd, st;
	char buf[64];

	mnt_start(NULL);
	pid = M.pid;
	ck_assert_int_eq(sh("mkdir $M/buffers/0 && echo 1 > $M/buffers/0/write_enable && "
			    "echo 1 > $M/registers/write_enable && echo 1 > $M/sim/running"),
			 0);
	fd = open(P("registers/rx_frame_count"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	M.pid = 0;
	/* the mount is dead: every access says so */
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), -1);
	ck_assert_int_eq(errno, ENOTCONN);
	ck_assert_int_eq(sh("cat $M/device/version 2>&1 | grep -q 'not connected'"), 0);
	close(fd);
	/* detach it */
	ck_assert_int_eq(sh("%s $M", umount_cmd(true)), 0);
	ck_assert(!is_mounted(M.dir));
	ck_assert(!pid_alive(pid));
	/* the register file it could not remove is swept at the next start
	 * (of any gpuasyncfs: a test running in parallel may be first) */
	ck_assert_int_le(count_shm(pid), 1);
	mnt_stop();
	mnt_start(NULL);
	ck_assert_int_eq(count_shm(pid), 0);
}
END_TEST

/* The daemon's exit status, with what it said when that is not 0. */
static void assert_clean_exit(pid_t pid, const char *how)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	M.pid = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		char *out = daemon_output();

		ck_abort_msg("%s: the daemon ended with status 0x%x, want exit 0\n%s", how, st, out);
	}
	ck_assert_int_eq(count_shm(pid), 0);
}

/* The open file @fd of a mount whose daemon is gone says so; closes it. */
static void assert_gone(int fd)
{
	char buf[64];

	ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), -1);
	ck_assert_msg(errno == ENOTCONN || errno == ECONNABORTED, "read after the end: %s",
		      strerror(errno));
	close(fd);
}

/* A mount with buffer 0 and its status file open, then lazily unmounted:
 * the daemon serves the open file until something ends it.  Returns the
 * open file. */
static int mount_open_detach(void)
{
	int fd;

	mnt_start_logged(NULL);
	ck_assert_int_eq(sh("mkdir $M/buffers/0"), 0);
	fd = open(P("buffers/0/status"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(sh("%s $M", umount_cmd(true)), 0);
	ck_assert(!is_mounted(M.dir));
	return fd;
}

/* The usual end: the last open file closes.  The kernel then shuts the
 * connection down, and a read of /dev/fuse that is taking the file's
 * RELEASE just then gets ECONNABORTED instead of ENODEV: a few instructions
 * wide, seen 2 times in 40 runs on a loaded machine, so the case repeats 50 times. */
START_TEST(unmount_with_open_files)
{
	for (int round = 0; round < 50; round++) {
		char buf[64];
		pid_t pid;
		int fd;

		mnt_start_logged(NULL);
		pid = M.pid;
		ck_assert_int_eq(sh("mkdir $M/buffers/0"), 0);
		fd = open(P("buffers/0/status"), O_RDONLY);
		ck_assert_int_ge(fd, 0);
		/* busy: a plain unmount is refused, the mount stays */
		ck_assert_int_ne(sh("%s $M 2>/dev/null", umount_cmd(false)), 0);
		ck_assert(is_mounted(M.dir));
		/* lazy: detached now, the daemon serves the open file until it closes */
		ck_assert_int_eq(sh("%s $M", umount_cmd(true)), 0);
		ck_assert(!is_mounted(M.dir));
		ck_assert_int_eq(pread(fd, buf, sizeof(buf), 0), 5);
		ck_assert(!memcmp(buf, "IDLE\n", 5));
		ck_assert(pid_alive(pid));
		close(fd);
		assert_clean_exit(pid, "last open file closed after a lazy unmount");
		mnt_stop();
	}
}
END_TEST

/* Stopped while detached with a file open: a clean stop all the same, and
 * the open file then says the filesystem is gone. */
START_TEST(lazy_unmount_then_sigterm)
{
	int fd = mount_open_detach();
	pid_t pid = M.pid;

	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	assert_clean_exit(pid, "SIGTERM after a lazy unmount");
	assert_gone(fd);
	mnt_stop();
}
END_TEST

/* Aborted through the FUSE control filesystem while detached (what an
 * administrator does to a hung mount): the session ends, not an error. */
START_TEST(lazy_unmount_then_abort)
{
	char path[128];
	struct stat st;
	pid_t pid;
	int fd;

	if (sh("mountpoint -q /sys/fs/fuse/connections || "
	       "mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null") != 0) {
		skip_part("no FUSE control filesystem (fusectl) at /sys/fs/fuse/connections");
		return;
	}
	fd = mount_open_detach();
	pid = M.pid;
	ck_assert_int_eq(fstat(fd, &st), 0);
	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/abort", minor(st.st_dev));
	ck_assert_int_eq(sh("echo 1 > %s", path), 0);
	assert_clean_exit(pid, "connection aborted after a lazy unmount");
	assert_gone(fd);
	mnt_stop();
}
END_TEST

SUITE_MAIN("fs_lifecycle", "lifecycle", TEST_TIMEOUT, {help_and_version},
	   {background_start_and_fusermount}, {leading_source_argument}, {datadev_missing},
	   {bad_startup_options}, {bad_startup_arguments}, {killed_not_reaped}, {stop_on_sigint},
	   {stop_on_sigterm}, {stop_on_fusermount}, {killed_mid_run}, {unmount_with_open_files},
	   {lazy_unmount_then_sigterm}, {lazy_unmount_then_abort})
