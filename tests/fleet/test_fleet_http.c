/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The daemon's own HTTP server and its Prometheus file_sd target file
 * (fs/http.c), on a real mount of the simulated card, read with real curl:
 *
 *   - GET /metrics is the mount's metrics (the same families, the text
 *     format's content type); other paths are 404, other methods 405;
 *   - the target file in targets_dir names ADDR:PORT and carries the
 *     instrument/partition/detname/alias labels given; promtool accepts a
 *     prometheus.yml whose file_sd_configs read that directory;
 *   - a clean stop (unmount) removes the file, a killed daemon leaves it;
 *   - bad input fails the start with the reason and writes no file: a port
 *     in use (EADDRINUSE), an address that is not one, targets_dir without
 *     http, a directory that is not there, a label value with a quote;
 *   - a port alone serves every address and the target names this host;
 *   - the same settings from a config file's [prometheus] section, shown in
 *     the mount's config; a bad one there names the file and line.
 *
 * Each server binds its own loopback address (127.0.0.N), or every address
 * and is read on 127.0.0.1: nothing is sent off the machine.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../fs/harness.h"

/* A port the kernel hands out now on @addr. */
static int free_port(const char *addr)
{
	char *out = sh_out("python3 -c 'import socket; s = socket.socket(); "
			   "s.bind((\"%s\", 0)); print(s.getsockname()[1])'",
			   addr);
	int port = atoi(out);

	free(out);
	ck_assert_int_gt(port, 0);
	return port;
}

/* The daemon writes its target file just after the mount appears (and
 * before a daemon in the background reports that it started): wait for it,
 * 10 s at most. */
static void wait_target(const char *dir, const char *addr, int port)
{
	ck_assert_int_eq(sh("for i in $(seq 1000); do test -s %s/gpuasyncfs_%s_%d.yaml && exit 0; "
			    "sleep 0.01; done; exit 1",
			    dir, addr, port),
			 0);
}

/* The metric names (# TYPE lines) of @text, sorted, one a line. */
static char *families(const char *cmd)
{
	return sh_out("%s | sed -n 's/^# TYPE \\([^ ]*\\) .*/\\1/p' | sort", cmd);
}

START_TEST(serves_metrics_and_target)
{
	char dir[] = "/tmp/gafs-fleet-XXXXXX", opts[512], *a, *b, *out;
	int port;

	if (!have_cmd("curl", "curl"))
		return;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	port = free_port("127.0.0.7");
	snprintf(opts, sizeof(opts),
		 "-o version=4 -o http=127.0.0.7:%d,targets_dir=%s -o instrument=tmo,partition=2,"
		 "detname=jungfrau,alias=jungfrau_0",
		 port, dir);
	mnt_start(opts);
	wait_target(dir, "127.0.0.7", port);

	/* the same families over HTTP as in the file */
	a = families("cat $M/metrics");
	ck_assert_msg(strstr(a, "gpuasync_link_up\n"), "%s", a);
	out = sh_out("echo curl -sf http://127.0.0.7:%d/metrics", port);
	out[strcspn(out, "\n")] = '\0';
	b = families(out);
	free(out);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	out = sh_out("curl -s -o /dev/null -w '%%{http_code} %%{content_type}' "
		     "http://127.0.0.7:%d/metrics",
		     port);
	ck_assert_str_eq(out, "200 text/plain; version=0.0.4; charset=utf-8");
	free(out);
	out = sh_out("curl -s -o /dev/null -w '%%{http_code}' http://127.0.0.7:%d/nothing; "
		     "echo; curl -s -o /dev/null -w '%%{http_code}' -X POST "
		     "http://127.0.0.7:%d/metrics",
		     port, port);
	ck_assert_str_eq(out, "404\n405");
	free(out);

	/* the target file, exactly */
	out = sh_out("grep -v '^#' %s/gpuasyncfs_127.0.0.7_%d.yaml", dir, port);
	a = NULL;
	ck_assert_int_ge(asprintf(&a,
				  "- targets:\n    - '127.0.0.7:%d'\n  labels:\n"
				  "    instrument: 'tmo'\n    partition: '2'\n"
				  "    detname: 'jungfrau'\n    alias: 'jungfrau_0'\n",
				  port),
			 0);
	ck_assert_str_eq(out, a);
	free(a);
	free(out);
	if (have_cmd("promtool", "prometheus")) {
		ck_assert_int_eq(sh("printf 'scrape_configs:\\n  - job_name: gpuasyncfs\\n"
				    "    file_sd_configs:\\n      - files: [\"%s/*.yaml\"]\\n' "
				    "> %s/prometheus.yml && promtool check config %s/prometheus.yml "
				    ">/dev/null 2>&1",
				    dir, dir, dir),
				 0);
	}
	/* a clean stop takes the file away */
	ck_assert_int_eq(mnt_stop(), 0);
	ck_assert_int_ne(sh("ls %s/*.yaml 2>/dev/null | grep -q .", dir), 0);
	sh("rm -rf %s", dir);
}
END_TEST

START_TEST(killed_daemon_leaves_target)
{
	char dir[] = "/tmp/gafs-fleet-XXXXXX", opts[256];
	int port;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	port = free_port("127.0.0.8");
	snprintf(opts, sizeof(opts), "-o http=127.0.0.8:%d,targets_dir=%s", port, dir);
	mnt_start(opts);
	wait_target(dir, "127.0.0.8", port);
	ck_assert_int_eq(kill(M.pid, SIGKILL), 0);
	mnt_stop();
	/* Prometheus keeps the target and sees it down: the fleet's signal */
	ck_assert_int_eq(sh("test -s %s/gpuasyncfs_127.0.0.8_%d.yaml", dir, port), 0);
	sh("rm -rf %s", dir);
}
END_TEST

/* Start the daemon with @opts on a scratch mountpoint; it must fail, print
 * @why, leave nothing mounted and no target file in @dir. */
static void refused(const char *dir, const char *opts, const char *why)
{
	char *out;

	out = sh_out("mkdir -p %s/mnt && \"$GAFS\" -f --sim -o config=/dev/null %s %s/mnt 2>&1; "
		     "echo rc=$?; mountpoint -q %s/mnt && echo MOUNTED; ls -A %s | sed -n 's/yaml/LEFT:&/p'",
		     dir, opts, dir, dir, dir);
	ck_assert_msg(strstr(out, why) && strstr(out, "rc=1\n") && !strstr(out, "MOUNTED") &&
			      !strstr(out, "LEFT:"),
		      "%s: wanted '%s':\n%s", opts, why, out);
	free(out);
}

START_TEST(bad_input_refused)
{
	char dir[] = "/tmp/gafs-fleet-XXXXXX", opts[512];
	int port;

	if (!getenv("GAFS"))
		setenv("GAFS", GAFS_BIN, 1);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	port = free_port("127.0.0.9");
	/* the port taken by a first daemon */
	snprintf(opts, sizeof(opts), "-o http=127.0.0.9:%d,targets_dir=%s/first", port, dir);
	ck_assert_int_eq(sh("mkdir %s/first", dir), 0);
	mnt_start(opts);
	snprintf(opts, sizeof(opts), "%s/first", dir);
	wait_target(opts, "127.0.0.9", port);
	snprintf(opts, sizeof(opts), "-o http=127.0.0.9:%d,targets_dir=%s", port, dir);
	refused(dir, opts, "Address already in use");
	refused(dir, "-o http=1.2.3:9330", "'1.2.3' is not an IPv4 address");
	refused(dir, "-o http=127.0.0.9:70000", "port 1..65535");
	snprintf(opts, sizeof(opts), "-o targets_dir=%s", dir);
	refused(dir, opts, "targets_dir needs http=");
	refused(dir, "-o http=127.0.0.9:0,targets_dir=/nonexistent/dir", "port 1..65535");
	snprintf(opts, sizeof(opts), "-o http=127.0.0.9:%d,targets_dir=%s/absent", port + 1, dir);
	refused(dir, opts, "cannot write");
	refused(dir, "-o alias=\"it's\"", "is not a label value");
	ck_assert_int_eq(mnt_stop(), 0);
	sh("rm -rf %s", dir);
}
END_TEST

/* A port alone serves every address; the target then names this host. */
START_TEST(every_address_names_host)
{
	char dir[] = "/tmp/gafs-fleet-XXXXXX", opts[256], host[256], *out, *want = NULL;
	int port;

	if (!have_cmd("curl", "curl"))
		return;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
	port = free_port("0.0.0.0");
	snprintf(opts, sizeof(opts), "-o http=%d,targets_dir=%s", port, dir);
	mnt_start(opts);
	wait_target(dir, host, port);
	out = sh_out("grep -v '^#' %s/gpuasyncfs_%s_%d.yaml; curl -sf http://127.0.0.1:%d/metrics "
		     "| grep -c '^gpuasync_link_up{'",
		     dir, host, port, port);
	ck_assert_int_ge(asprintf(&want, "- targets:\n    - '%s:%d'\n1\n", host, port), 0);
	ck_assert_str_eq(out, want);
	free(want);
	free(out);
	ck_assert_int_eq(mnt_stop(), 0);
	sh("rm -rf %s", dir);
}
END_TEST

/* The same settings from a config file's [prometheus] section; a bad value
 * there names the file and line. */
START_TEST(config_file_section)
{
	char dir[] = "/tmp/gafs-fleet-XXXXXX", opts[256], *out;
	int port;

	if (!getenv("GAFS"))
		setenv("GAFS", GAFS_BIN, 1);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	port = free_port("127.0.0.10");
	ck_assert_int_eq(sh("printf '[prometheus]\nhttp = 127.0.0.10:%d\ntargets_dir = %s\n"
			    "alias = epixuhr_1\n' > %s/ok.conf",
			    port, dir, dir),
			 0);
	snprintf(opts, sizeof(opts), "-o config=%s/ok.conf", dir);
	mnt_start(opts);
	wait_target(dir, "127.0.0.10", port);
	out = sh_out("grep -v '^#' %s/gpuasyncfs_127.0.0.10_%d.yaml; grep -A20 '^.prometheus.$' "
		     "$M/config | grep -v '^;'",
		     dir, port);
	ck_assert_msg(strstr(out, "  labels:\n    alias: 'epixuhr_1'\n") &&
			      !strstr(out, "instrument:") && strstr(out, "alias = epixuhr_1\n"),
		      "%s", out);
	free(out);
	ck_assert_int_eq(mnt_stop(), 0);
	ck_assert_int_eq(sh("printf '[prometheus]\nhttp = 9330\ninstrument = \"tmo\"\n' > "
			    "%s/bad.conf",
			    dir),
			 0);
	snprintf(opts, sizeof(opts), "-o config=%s/bad.conf", dir);
	out = sh_out("mkdir -p %s/mnt && \"$GAFS\" -f --sim %s %s/mnt 2>&1; echo rc=$?", dir, opts,
		     dir);
	ck_assert_msg(strstr(out, "bad.conf:3: [prometheus] instrument:") &&
			      strstr(out, "is not a label value") && strstr(out, "rc=1\n"),
		      "%s", out);
	free(out);
	sh("rm -rf %s", dir);
}
END_TEST

SUITE_MAIN("fleet_http", "http", TEST_TIMEOUT, {serves_metrics_and_target},
	   {killed_daemon_leaves_target}, {bad_input_refused}, {config_file_section},
	   {every_address_names_host})
