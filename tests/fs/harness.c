/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The mount harness (see harness.h).  GAFS_BIN is the daemon under test,
 * set by tests/fs/CMakeLists.txt.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

struct mnt M;
static bool atexit_done;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

bool is_mounted(const char *dir)
{
	char line[1024], needle[256];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	bool found = false;

	if (!f)
		return false;
	snprintf(needle, sizeof(needle), " %s ", dir);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle) && strstr(line, "fuse")) {
			found = true;
			break;
		}
	fclose(f);
	return found;
}

bool wait_mounted(const char *dir, bool want, int ms)
{
	for (int t = 0; t < ms; t += 10) {
		if (is_mounted(dir) == want)
			return true;
		sleep_ms(10);
	}
	return is_mounted(dir) == want;
}

static void atexit_stop(void)
{
	mnt_stop();
}

pid_t daemon_spawn(const char *args)
{
	pid_t pid = fork();

	if (pid == 0) {
		char *cmd;

		/* Out of the test's process group, which Check SIGKILLs when a
		 * test ends (a killed daemon would leave its mount behind);
		 * instead, the end of the test process sends SIGTERM, on which
		 * the daemon unmounts cleanly. */
		setsid();
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (asprintf(&cmd, "exec \"$GAFS\" %s", args) < 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

void mnt_dir(const char *tag)
{
	if (!getenv("GAFS"))
		setenv("GAFS", GAFS_BIN, 1);
	snprintf(M.dir, sizeof(M.dir), "/tmp/gafs-%s-XXXXXX", tag);
	ck_assert_ptr_nonnull(mkdtemp(M.dir));
	setenv("M", M.dir, 1);
}

void mnt_umount(bool lazy)
{
	ck_assert_int_eq(sh("%s \"$M\"", umount_cmd(lazy)), 0);
	ck_assert(wait_mounted(M.dir, false, 5000));
	rmdir(M.dir);
	M.dir[0] = '\0';
}

void mnt_start(const char *extra)
{
	char args[1024];

	if (!atexit_done) {
		atexit(atexit_stop);
		atexit_done = true;
	}
	mnt_dir("test");
	/* Hermetic: no /etc/gpuasyncfs.conf of the machine unless asked for.
	 * GAFS_TEST_EXTRA adds options to every mount (ctest runs some suites
	 * again with "-o threads=4": the multi-threaded loop). */
	snprintf(args, sizeof(args), "-f --sim %s %s %s %s", M.dir,
		 extra && strstr(extra, "config=") ? "" : "-o config=/dev/null", extra ? extra : "",
		 getenv("GAFS_TEST_EXTRA") ? getenv("GAFS_TEST_EXTRA") : "");
	M.pid = daemon_spawn(args);
	ck_assert_int_gt(M.pid, 0);
	for (int t = 0; t < 10000; t += 10) {
		int st;

		if (is_mounted(M.dir)) {
			M.mounted = true;
			return;
		}
		if (waitpid(M.pid, &st, WNOHANG) == M.pid) {
			M.pid = 0;
			rmdir(M.dir);
			ck_abort_msg("gpuasyncfs %s exited (status 0x%x) before mounting", args,
				     st);
		}
		sleep_ms(10);
	}
	ck_abort_msg("gpuasyncfs %s: no mount after 10 s", args);
}

void mnt_start_logged(const char *extra)
{
	char args[1024];
	int fd;

	snprintf(M.log, sizeof(M.log), "/tmp/gafs-log-XXXXXX");
	fd = mkstemp(M.log);
	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(args, sizeof(args), "%s 2>>'%s'", extra ? extra : "", M.log);
	mnt_start(args);
}

char *daemon_output(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = M.log[0] ? fopen(M.log, "r") : NULL;
	FILE *mem = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(mem);
	fputs("--- the daemon's output ---\n", mem);
	if (f) {
		char chunk[512];
		size_t n;

		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			fwrite(chunk, 1, n, mem);
		fclose(f);
	}
	fclose(mem);
	return buf;
}

/* The daemon did not exit after the unmount: say where each of its threads
 * waits (kernel wchan and stack, user stacks where gdb is installed), so a
 * rare hang under load leaves evidence in the test log (stderr). */
static void dump_stuck_daemon(pid_t pid, const char *dir)
{
	char cmd[600];

	fprintf(stderr, "gpuasyncfs %d did not exit 5 s after unmounting %s (%s)\n", (int)pid, dir,
		is_mounted(dir) ? "still mounted" : "unmounted");
	snprintf(cmd, sizeof(cmd),
		 "for t in /proc/%d/task/*; do echo \"$t $(cat $t/wchan)\"; cat $t/stack; done; "
		 "command -v gdb >/dev/null && gdb -p %d -batch -ex 'thread apply all bt' 2>&1 | "
		 "grep -v '^\\[New'",
		 (int)pid, (int)pid);
	if (system(cmd) != 0) {
		/* best effort: the kill that follows ends the daemon anyway */
	}
}

int mnt_stop(void)
{
	int st = -1, rc = -1;
	char cmd[700];

	if (!M.dir[0])
		return -1;
	if (is_mounted(M.dir)) {
		/* umount(8) where fusermount3 is not installed (root only) */
		snprintf(cmd, sizeof(cmd),
			 "{ fusermount3 -u %s || umount %s || fusermount3 -uz %s || umount -l %s; "
			 "} 2>/dev/null",
			 M.dir, M.dir, M.dir, M.dir);
		if (system(cmd) != 0) {
			/* fall through: the kill below still ends the daemon */
		}
	}
	if (M.pid > 0) {
		for (int t = 0; t < 5000; t += 10) {
			if (waitpid(M.pid, &st, WNOHANG) == M.pid) {
				rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				M.pid = 0;
				break;
			}
			sleep_ms(10);
		}
		if (M.pid > 0) {
			dump_stuck_daemon(M.pid, M.dir);
			kill(M.pid, SIGKILL);
			waitpid(M.pid, &st, 0);
			M.pid = 0;
			rc = -1;
		}
	}
	wait_mounted(M.dir, false, 2000);
	rmdir(M.dir);
	M.dir[0] = '\0';
	if (M.log[0])
		unlink(M.log);
	M.log[0] = '\0';
	M.mounted = false;
	return rc;
}

void mnt_teardown(void)
{
	int rc;

	if (!M.dir[0])
		return;
	rc = mnt_stop();
	ck_assert_msg(rc == 0, "the test's mount did not stop cleanly (mnt_stop %d)", rc);
}

static int vsh(char **out, const char *fmt, va_list ap)
{
	char *cmd;
	int st;

	if (!getenv("GAFS"))
		setenv("GAFS", GAFS_BIN, 1);
	if (vasprintf(&cmd, fmt, ap) < 0)
		return -1;
	if (out) {
		FILE *p = popen(cmd, "r");
		size_t len = 0, cap = 4096;
		char *buf = malloc(cap);

		ck_assert_ptr_nonnull(p);
		for (;;) {
			size_t n = fread(buf + len, 1, cap - len - 1, p);

			len += n;
			if (len + 1 >= cap)
				buf = realloc(buf, cap *= 2);
			if (!n)
				break;
		}
		buf[len] = '\0';
		st = pclose(p);
		*out = buf;
	} else {
		st = system(cmd);
	}
	free(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int sh(const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vsh(NULL, fmt, ap);
	va_end(ap);
	return rc;
}

char *sh_out(const char *fmt, ...)
{
	va_list ap;
	char *out = NULL;

	va_start(ap, fmt);
	vsh(&out, fmt, ap);
	va_end(ap);
	return out;
}

void tmp_dir(char *dir, size_t len, const char *tag)
{
	snprintf(dir, len, "/tmp/gafs-%s.XXXXXX", tag);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

void rm_dir(const char *dir)
{
	sh("rm -rf '%s'", dir);
}

pid_t node_exporter_start(const char *dir, int *port, const char *log)
{
	return node_exporter_start_as("", dir, port, log);
}

pid_t node_exporter_start_as(const char *as, const char *dir, int *port, const char *log)
{
	char *out, *cmd;
	pid_t pid;

	/* a port the kernel just handed out, so free unless raced */
	out = sh_out("python3 -c 'import socket; s = socket.socket(); "
		     "s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])'");
	*port = atoi(out);
	free(out);
	ck_assert_int_gt(*port, 0);
	ck_assert_int_ge(
		asprintf(&cmd,
			 "exec %s prometheus-node-exporter --web.listen-address=127.0.0.1:%d "
			 "--collector.disable-defaults --collector.textfile "
			 "--collector.textfile.directory=%s >%s 2>&1",
			 as, *port, dir, log ? log : "/dev/null"),
		0);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* gone with the test */
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	ck_assert_int_gt(pid, 0);
	return pid;
}

void node_exporter_stop(pid_t pid)
{
	int st;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
}

char *scrape(int port)
{
	return sh_out("for i in $(seq 100); do python3 -c 'import urllib.request\n"
		      "print(urllib.request.urlopen(\"http://127.0.0.1:%d/metrics\").read()."
		      "decode())' 2>/dev/null && break; sleep 0.1; done",
		      port);
}

/* Cases run in forked children: the count of skipped parts lives in memory
 * they share with run_suite. */
static unsigned int *skipped_parts;

static bool have_or_skip(bool ok, const char *name, const char *package)
{
	const char *ci = getenv("CI");

	if (ok)
		return true;
	ck_assert_msg(!(ci && strcmp(ci, "true") == 0),
		      "%s is not installed under CI=true: add the Debian package %s to "
		      "tools/packages.txt",
		      name, package);
	printf("SKIP: %s is not installed (Debian package %s)\n", name, package);
	if (skipped_parts)
		__atomic_add_fetch(skipped_parts, 1, __ATOMIC_RELAXED);
	return false;
}

void skip_part(const char *why)
{
	printf("SKIP: %s\n", why);
	if (skipped_parts)
		__atomic_add_fetch(skipped_parts, 1, __ATOMIC_RELAXED);
}

bool have_cmd(const char *name, const char *package)
{
	return have_or_skip(sh("command -v %s >/dev/null 2>&1", name) == 0, name, package);
}

bool have_py_at(const char *python, const char *module, const char *package)
{
	char what[160];

	snprintf(what, sizeof(what), "%s module %s", python, module);
	return have_or_skip(sh("%s -c 'import %s' >/dev/null 2>&1", python, module) == 0, what,
			    package);
}

bool have_py(const char *module, const char *package)
{
	return have_py_at("python3", module, package);
}

const char *umount_cmd(bool lazy)
{
	static int have = -1;

	if (have < 0) {
		have = sh("command -v fusermount3 >/dev/null 2>&1") == 0;
		if (!have)
			printf("NOTE: fusermount3 is not installed; unmounting with umount(8)\n");
	}
	if (have)
		return lazy ? "fusermount3 -uz" : "fusermount3 -u";
	return lazy ? "umount -l" : "umount";
}

const char *P(const char *rel)
{
	/* Per thread: a test's own threads write files beside the main one. */
	static _Thread_local char bufs[4][512];
	static _Thread_local int i;

	i = (i + 1) % 4;
	snprintf(bufs[i], sizeof(bufs[i]), "%s/%s", M.dir, rel);
	return bufs[i];
}

char *readf(const char *rel)
{
	int fd = open(P(rel), O_RDONLY);
	size_t len = 0, cap = 65536;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	for (;;) {
		ssize_t n = read(fd, buf + len, cap - len - 1);

		if (n < 0) {
			int e = errno;

			free(buf);
			close(fd);
			errno = e;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len + 1 >= cap)
			buf = realloc(buf, cap *= 2);
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

int writen(const char *rel, const void *buf, size_t len)
{
	int fd = open(P(rel), O_WRONLY);
	ssize_t n;
	int e;

	if (fd < 0)
		return -errno;
	n = write(fd, buf, len);
	e = errno;
	/* a text is applied at close, which returns what that came to */
	if (close(fd) < 0 && n >= 0) {
		n = -1;
		e = errno;
	}
	if (n < 0)
		return -e;
	return n == (ssize_t)len ? 0 : -EIO;
}

int writef(const char *rel, const char *s)
{
	return writen(rel, s, strlen(s));
}

unsigned int err_lines(void)
{
	char *s = readf("errors");
	unsigned int n = 0;

	ck_assert_ptr_nonnull(s);
	for (char *p = s; *p; p++)
		n += *p == '\n';
	free(s);
	return n;
}

const char *err_last(void)
{
	static char last[300];
	char *s = readf("errors"), *end, *start;

	ck_assert_ptr_nonnull(s);
	last[0] = '\0';
	end = s + strlen(s);
	if (end > s && end[-1] == '\n')
		*--end = '\0';
	start = strrchr(s, '\n');
	snprintf(last, sizeof(last), "%s", start ? start + 1 : s);
	free(s);
	return last;
}

void write_refused(const char *file, const char *text, int err, const char *what)
{
	char *before = readf("settings"), *after;
	unsigned int lines = err_lines();
	int ret = writef(file, text);

	ck_assert_msg(ret == -err, "'%s': got %d, want -%d", text, ret, err);
	ck_assert_uint_eq(err_lines(), lines + 1);
	ck_assert_msg(strstr(err_last(), what), "errors line '%s' lacks '%s'", err_last(), what);
	after = readf("settings");
	ck_assert_str_eq(after, before);
	free(before);
	free(after);
}

unsigned long long readnum(const char *rel)
{
	char *s = readf(rel), *end;
	unsigned long long v;

	ck_assert_msg(s != NULL, "cannot read %s: %s", rel, strerror(errno));
	v = strtoull(s, &end, 0);
	ck_assert_msg(end != s && *end == '\n', "%s: not a number: '%s'", rel, s);
	free(s);
	return v;
}

void wait_num(const char *rel, unsigned long long want)
{
	/* 30 s: a generous bound, for a machine running other suites too */
	for (int i = 0; i < 3000; i++) {
		if (readnum(rel) >= want)
			return;
		usleep(10000);
	}
	ck_abort_msg("%s stayed below %llu", rel, want);
}

void expect_nums(const char *dir, const char *want)
{
	unsigned long long v, got;
	char name[64], rel[128];
	const char *p = want;
	int n;

	while (sscanf(p, " %63[a-z0-9_/]=%llu%n", name, &v, &n) == 2) {
		snprintf(rel, sizeof(rel), "%s%s", dir, name);
		got = readnum(rel);
		ck_assert_msg(got == v, "%s reads %llu, want %llu", rel, got, v);
		p += n;
	}
	p += strspn(p, " ");
	ck_assert_msg(!*p, "expect_nums: '%s': NAME=NUMBER expected", p);
}

void make_write_buffers(unsigned int n, const char *size)
{
	ck_assert_int_eq(sh("echo %s > $M/buffers/alloc_size && for i in $(seq 0 %u); do "
			    "mkdir $M/buffers/$i || exit 1; done",
			    size, n - 1),
			 0);
}

void arm_write(unsigned int i)
{
	ck_assert_int_eq(sh("echo 1 > $M/buffers/%u/write_enable", i), 0);
}

void sim_gap_and_duplicate(unsigned int frames)
{
	arm_write(0);
	arm_write(1);
	ck_assert_int_eq(sh("echo 1 > $M/registers/write_enable && echo %u > $M/sim/remaining && "
			    "echo 1 > $M/sim/running",
			    frames),
			 0);
	/* Frames 0 and 1 in buffers 0 and 1; frame 2 waits for buffer 2. */
	wait_num("sim/stats/delivered", 2);
	/* It goes as frame 5: numbers 2, 3, 4 lost before the card. */
	ck_assert_int_eq(sh("echo 3 > $M/sim/inject_pulse_gap"), 0);
	arm_write(2);
	wait_num("sim/stats/delivered", 3);
	/* The next one repeats 5. */
	ck_assert_int_eq(sh("echo 1 > $M/sim/inject_pulse_duplicate"), 0);
	arm_write(3);
	wait_num("sim/stats/delivered", 4);
}

void expect_refused(const char *rel, const char *value, int err)
{
	char *before = readf(rel), *after;
	unsigned int lines = err_lines();
	int ret = writef(rel, value);
	char name[128];
	const char *slash = strrchr(rel, '/');

	ck_assert_msg(ret == -err, "write '%s' to %s: got %d (%s), want -%d (%s)", value, rel, ret,
		      strerror(-ret), err, strerror(err));
	ck_assert_uint_eq(err_lines(), lines + 1);
	snprintf(name, sizeof(name), "%s", slash ? slash + 1 : rel);
	ck_assert_msg(strstr(err_last(), name), "errors line names %s: %s", name, err_last());
	after = readf(rel);
	if (before) /* readable files: the value did not change */
		ck_assert_str_eq(after, before);
	free(before);
	free(after);
}

int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	skipped_parts = mmap(NULL, sizeof(*skipped_parts), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (skipped_parts == MAP_FAILED)
		skipped_parts = NULL;
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed)
		return EXIT_FAILURE;
	if (skipped_parts && *skipped_parts) {
		printf("SKIP: %u part(s) did not run for want of a tool or kernel feature "
		       "(above)\n",
		       *skipped_parts);
		return 77;
	}
	return EXIT_SUCCESS;
}
