/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * examples/gpuasyncfs.rules.yml, the alerting rules: promtool check rules
 * accepts them, and promtool test rules runs them over series recorded
 * from a simulated card driven through each fault (alert_series.py: the
 * engine off while frames arrive, injected write errors, no buffer
 * re-armed, healthy stretches between).  Each alert must fire at the end
 * of the phases that cause it and at no other phase's end.  The same
 * recording run against a rules file whose write-error alert watches the
 * wrong counter must fail, so the expectations are known to bite.
 *
 * Issue 24 item 7: when the daemon dies every gpuasync_* series vanishes
 * and none of those rules can fire.  A real Prometheus (Debian's package)
 * scrapes a real node_exporter whose textfile directory links the mount's
 * metrics and holds an old copy; it must show GpuAsyncTextfileStale for the
 * copy, and once the daemon is killed GpuAsyncMetricsGone for the card and
 * GpuAsyncTextfileUnreadable (pending or firing, read from its HTTP API on
 * 127.0.0.1).  GpuAsyncCardWedged runs on series written by hand
 * (alerts_wedged.yml): the simulated card does not wedge.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define RULES  GAFS_SRC "/examples/gpuasyncfs.rules.yml"
#define SERIES GAFS_SRC "/tests/fs/alert_series.py"
#define WEDGED GAFS_SRC "/tests/fs/alerts_wedged.yml"
#define WAIT   "python3 " GAFS_SRC "/tests/fs/prom_wait.py"

START_TEST(rules_are_valid)
{
	if (!have_cmd("promtool", "prometheus"))
		return;
	ck_assert_int_eq(sh("promtool check rules " RULES), 0);
}
END_TEST

START_TEST(alerts_follow_recorded_faults)
{
	char dir[] = "/tmp/gafs-alerts-XXXXXX";
	char *out;

	if (!have_cmd("promtool", "prometheus") || !have_py("yaml", "python3-yaml"))
		return;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	mnt_start("-o version=4");
	out = sh_out("python3 " SERIES " $M " RULES " %s/test.yml 2>&1 && echo RECORDED", dir);
	ck_assert_msg(strstr(out, "RECORDED\n"), "alert_series.py:\n%.1500s", out);
	free(out);
	ck_assert_int_eq(mnt_stop(), 0);

	out = sh_out("promtool test rules %s/test.yml 2>&1 && echo PASSED", dir);
	ck_assert_msg(strstr(out, "PASSED\n"), "promtool test rules:\n%.3000s", out);
	free(out);

	/* A write-error alert watching the read-error counter misses the
	 * recorded write errors: the same test must now fail. */
	ck_assert_int_eq(
		sh("cd %s && sed 's/increase(gpuasync_axi_write_error_count_total/"
		   "increase(gpuasync_axi_read_error_count_total/' " RULES " > bad.yml && "
		   "! cmp -s bad.yml " RULES " && "
		   "sed 's|^- .*gpuasyncfs.rules.yml$|- %s/bad.yml|' test.yml > bad-test.yml",
		   dir, dir),
		0);
	out = sh_out("promtool test rules %s/bad-test.yml 2>&1; echo rc=$?", dir);
	ck_assert_msg(strstr(out, "GpuAsyncWriteErrors") && strstr(out, "rc=1\n"),
		      "the broken rule was not caught:\n%.1500s", out);
	free(out);
	sh("rm -rf %s", dir);
}
END_TEST

START_TEST(wedged_card_rule)
{
	char *out;

	if (!have_cmd("promtool", "prometheus"))
		return;
	out = sh_out("promtool test rules " WEDGED " 2>&1 && echo PASSED");
	ck_assert_msg(strstr(out, "PASSED\n"), "promtool test rules:\n%.3000s", out);
	free(out);
}
END_TEST

/* A free port on 127.0.0.1, as the kernel hands one out. */
static int free_port(void)
{
	char *out = sh_out("python3 -c 'import socket; s = socket.socket(); "
			   "s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])'");
	int port = atoi(out);

	free(out);
	ck_assert_int_gt(port, 0);
	return port;
}

/* Run @cmd (sh -c) in the background, gone with the test process. */
static pid_t bg(const char *cmd)
{
	pid_t pid = fork();

	if (pid == 0) {
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	return pid;
}

START_TEST(prometheus_sees_daemon_die)
{
	char dir[] = "/tmp/gafs-prom-XXXXXX", tf[64], conf[80], *cmd, *out;
	int ne_port, port, st;
	pid_t ne, prom;
	FILE *f;

	if (!have_cmd("prometheus", "prometheus") ||
	    !have_cmd("prometheus-node-exporter", "prometheus-node-exporter"))
		return;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	mnt_start("-o version=4");
	/* The link docs/operations.md recommends, and a copy of another card's
	 * metrics that nothing refreshes any more. */
	ck_assert_int_eq(
		sh("mkdir %s/tf %s/data && ln -s $M/metrics %s/tf/gpuasync.prom", dir, dir, dir),
		0);
	/* The copy is of another card (its own labels, the same families:
	 * node_exporter refuses a family whose help differs between files). */
	snprintf(conf, sizeof(conf), "%s/tf/gpuasync-9.prom", dir);
	ck_assert_int_eq(sh("sed -e 's/card=\"0\"/card=\"9\"/' "
			    "-e 's|device=\"[^\"]*\"|device=\"/dev/datadev_9\"|' $M/metrics > %s",
			    conf),
			 0);
	ck_assert_int_eq(sh("touch -d '-1 hour' %s", conf), 0);
	snprintf(tf, sizeof(tf), "%s/tf", dir);
	ne = node_exporter_start(tf, &ne_port, NULL);
	port = free_port();
	snprintf(conf, sizeof(conf), "%s/prometheus.yml", dir);
	f = fopen(conf, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
		"rule_files: [\"%s\"]\n"
		"scrape_configs:\n  - job_name: node\n    static_configs:\n"
		"      - targets: [\"127.0.0.1:%d\"]\n",
		RULES, ne_port);
	fclose(f);
	ck_assert_int_eq(sh("promtool check config %s >/dev/null", conf), 0);
	ck_assert_int_ge(asprintf(&cmd,
				  "exec prometheus --config.file=%s/prometheus.yml "
				  "--storage.tsdb.path=%s/data --web.listen-address=127.0.0.1:%d "
				  ">%s/prometheus.log 2>&1",
				  dir, dir, port, dir),
			 0);
	prom = bg(cmd);
	free(cmd);

	/* Scraped: the card's series are in Prometheus. */
	out = sh_out(WAIT " %d query 'gpuasync_link_up{card=\"0\"}' 2>&1; echo rc=$?", port);
	ck_assert_msg(strstr(out, "rc=0\n"), "%.2000s", out);
	free(out);
	out = sh_out(WAIT " %d alert GpuAsyncTextfileStale 'file=.*gpuasync-9.prom' 2>&1; "
			  "echo rc=$?",
		     port);
	ck_assert_msg(strstr(out, "rc=0\n"), "the stale copy raised nothing: %.2000s", out);
	free(out);
	/* Alive: the card's metrics are not gone. */
	out = sh_out(WAIT " %d quiet GpuAsyncMetricsGone card=0 2>&1; echo rc=$?", port);
	ck_assert_msg(strstr(out, "rc=0\n"), "GpuAsyncMetricsGone while alive: %.2000s", out);
	free(out);

	ck_assert_int_eq(kill(M.pid, SIGKILL), 0); /* dies as a crash would: a dead mount */
	out = sh_out(WAIT " %d alert GpuAsyncMetricsGone card=0 2>&1; echo rc=$?", port);
	ck_assert_msg(strstr(out, "rc=0\n"), "the dead daemon raised nothing: %.2000s", out);
	printf("%s", out);
	free(out);
	out = sh_out(WAIT " %d alert GpuAsyncTextfileUnreadable 'job=node' 2>&1; echo rc=$?", port);
	ck_assert_msg(strstr(out, "rc=0\n"), "%.2000s", out);
	printf("%s", out);
	free(out);

	kill(prom, SIGTERM);
	waitpid(prom, &st, 0);
	node_exporter_stop(ne);
	mnt_stop(); /* the daemon was killed: its status is 128 + 9 */
	sh("rm -rf %s", dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fs_alerts");

	suite_add_tests(s, "alerts", TEST_TIMEOUT,
			SUITE_TESTS({rules_are_valid}, {alerts_follow_recorded_faults},
				    {wedged_card_rule}));
	/* Prometheus and node_exporter start (seconds on a loaded machine) and
	 * each wait is bounded at 45 s by prom_wait.py. */
	suite_add_tests(s, "prometheus", 300, SUITE_TESTS({prometheus_sees_daemon_die}));
	return run_suite(s);
}
