/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * metrics: Prometheus text exposition checked by promtool (Debian's
 * prometheus package) with buffers in every state, counters as _total,
 * latencies in seconds (cycles / clock_hz), per-buffer state labels, 1024
 * V4 buffers, the card's identity labels (device, card) on every sample;
 * and scraped for real by prometheus-node-exporter's textfile collector
 * pointed at the mount.  Tests needing a tool that is missing
 * say SKIP; tools/packages.txt makes them present in CI.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static bool have(const char *tool)
{
	return have_cmd(tool,
			strcmp(tool, "promtool") == 0 ? "prometheus" : "prometheus-node-exporter");
}

/* The value of the sample whose line starts with @prefix. */
static double sample(const char *text, const char *prefix)
{
	const char *p = text;

	while ((p = strstr(p, prefix))) {
		if (p == text || p[-1] == '\n')
			return strtod(p + strlen(prefix), NULL);
		p++;
	}
	ck_abort_msg("no sample %s", prefix);
	return 0;
}

/* The identity labels of the mounted simulated card, as metrics writes
 * them: its register file (the first word of device/registers_path) and
 * the number that ends it; @sorted: in name order, as node_exporter
 * writes them. */
static const char *card_id_as(bool sorted)
{
	static char id[400];
	char *rp = readf("device/registers_path"), *sp, *dna = readf("device/firmware/dna");
	size_t n, d = 0;

	ck_assert_ptr_nonnull(rp);
	sp = strchr(rp, ' ');
	ck_assert_ptr_nonnull(sp);
	*sp = '\0';
	n = strlen(rp);
	while (d < n && rp[n - d - 1] >= '0' && rp[n - d - 1] <= '9')
		d++;
	ck_assert_uint_gt(d, 0);
	ck_assert_ptr_nonnull(dna); /* the simulated card has an AxiVersion block */
	dna[strcspn(dna, "\n")] = '\0';
	if (sorted)
		snprintf(id, sizeof(id), "card=\"%s\",device=\"%s\",dna=\"%s\"", rp + n - d, rp,
			 dna);
	else
		snprintf(id, sizeof(id), "device=\"%s\",card=\"%s\",dna=\"%s\"", rp, rp + n - d,
			 dna);
	free(rp);
	free(dna);
	return id;
}

static const char *card_id(void)
{
	return card_id_as(false);
}

/* "name{ID" + @rest: a series of this card, @rest being ",labels} " or "} ". */
static const char *series(const char *name, const char *rest)
{
	static char bufs[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(bufs[i], sizeof(bufs[i]), "%s{%s%s", name, card_id(), rest);
	return bufs[i];
}

static void make_states(void)
{
	/* IDLE, FREE, READY and an ERROR buffer; a read buffer sent. */
	ck_assert_int_eq(
		sh("cd $M && mkdir buffers/0 buffers/1 buffers/2 buffers/3 read_buffers/0 && "
		   "echo 1 > registers/write_enable && echo 1 > buffers/0/write_enable && "
		   "printf abc > sim/push && echo 1 > buffers/1/write_enable && "
		   "echo 1 > sim/inject_write_error && printf def > sim/push && "
		   "echo 1 > buffers/2/write_enable && echo 1 > registers/read_enable && "
		   "echo 8 > read_buffers/0/send"),
		0);
}

START_TEST(promtool_accepts)
{
	if (!have("promtool"))
		return;
	mnt_start("-o version=4");
	make_states();
	ck_assert_int_eq(sh("promtool check metrics < $M/metrics"), 0);
	ck_assert_int_eq(mnt_stop(), 0);
	mnt_start("-o version=1");
	make_states();
	ck_assert_int_eq(sh("promtool check metrics < $M/metrics"), 0);
}
END_TEST

/*
 * A reader that reads on after EOF (promtool, as Go reads stdin, reads
 * twice) gets EOF again, even when the file has grown meanwhile; it once
 * got the tail of the newer rendering, which promtool refused about once
 * in a hundred scrapes of a card taking frames.  A read from 0 sees the
 * new text.  (A read back inside the old length renders again, as a
 * reader that seeks back mid-file always got.)
 */
START_TEST(eof_stays_eof)
{
	char buf[4096];
	size_t first = 0;
	ssize_t n;
	int fd;

	mnt_start("-o version=4");
	fd = open(P("metrics"), O_RDONLY);
	ck_assert_int_ge(fd, 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		first += (size_t)n;
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/buffers/1"), 0); /* more lines */
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 0);
	ck_assert_int_eq(pread(fd, buf, sizeof(buf), (off_t)first + 10), 0);
	ck_assert_int_gt(pread(fd, buf, sizeof(buf), 0), 0);
	n = pread(fd, buf, sizeof(buf), (off_t)first);
	ck_assert_msg(n > 0, "the new text from 0 is longer: %zd bytes past the old end", n);
	close(fd);
}
END_TEST

START_TEST(names_units_labels)
{
	static const char *const states[][3] = {
		{"write", "0", "READY"}, {"write", "1", "ERROR"}, {"write", "2", "FREE"},
		{"write", "3", "IDLE"},	 {"read", "0", "READY"},
	};
	char *m;
	double hz, cycles;

	mnt_start("-o version=4");
	make_states();
	m = readf("metrics");
	ck_assert_ptr_nonnull(m);
	/* counters end in _total and agree with the register files */
	ck_assert_ptr_nonnull(strstr(m, "# TYPE gpuasync_rx_frame_count_total counter\n"));
	ck_assert_uint_eq(
		(unsigned long long)sample(m, series("gpuasync_rx_frame_count_total", "} ")),
		readnum("registers/rx_frame_count"));
	ck_assert_uint_eq(
		(unsigned long long)sample(m, series("gpuasync_axi_write_error_count_total", "} ")),
		1);
	/* every sample carries the card's identity first */
	ck_assert_int_eq(sh("grep -v '^#' $M/metrics | grep -vF '{%s' | grep -q .", card_id()), 1);
	ck_assert_ptr_nonnull(strstr(m, series("gpuasync_device_info", ",backend=\"sim\",")));
	/* every counter family is a _total */
	ck_assert_int_eq(sh("grep '^# TYPE .* counter$' $M/metrics | grep -v '_total counter$' | "
			    "grep -q ."),
			 1);
	/* latencies in seconds */
	hz = (double)readnum("device/clock_hz");
	cycles = (double)readnum("buffers/0/latency/write_max");
	ck_assert(fabs(sample(m, series("gpuasync_write_latency_max_seconds",
					",direction=\"write\",buffer=\"0\"} ")) -
		       cycles / hz) <= 1e-9 + cycles / hz * 1e-6);
	/* per-buffer state, one sample each (make_states' buffers), and the
	 * per-state counts */
	for (unsigned int i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		char labels[128];

		snprintf(labels, sizeof(labels),
			 ",direction=\"%s\",buffer=\"%s\",state=\"%s\"} 1\n", states[i][0],
			 states[i][1], states[i][2]);
		ck_assert_msg(strstr(m, series("gpuasync_buffer_state", labels)),
			      "no gpuasync_buffer_state sample %s", labels);
	}
	ck_assert_ptr_nonnull(
		strstr(m, series("gpuasync_buffers", ",direction=\"write\",state=\"IDLE\"} 1\n")));
	/* write-only strobes and driver plumbing are not metrics */
	ck_assert_ptr_null(strstr(m, "gpuasync_count_reset"));
	ck_assert_ptr_null(strstr(m, "gpuasync_write_address"));
	free(m);
}
END_TEST

/* The PCIe link: the simulated card has no PCI function, so its link
 * could not be told: a 0 marker with an empty pci label, and no speed or
 * width sample (never a made-up number); no GPU end with buffers in host
 * memory (use_gpu=0, also on a machine with a GPU: tests/gpu/gpu_fs.sh
 * checks the GPU end there).  The QEMU platform suite reads a real
 * function's link (tests/platform/init.sh). */
START_TEST(pcie_link_unknown_on_sim)
{
	char *m;

	mnt_start("-o version=4,use_gpu=0");
	m = readf("metrics");
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(strstr(m, "# TYPE gpuasync_pcie_link_readable gauge\n"));
	ck_assert_ptr_nonnull(
		strstr(m, series("gpuasync_pcie_link_readable", ",end=\"card\",pci=\"\"} 0\n")));
	ck_assert_ptr_null(strstr(m, "end=\"gpu\""));
	ck_assert_ptr_null(strstr(m, "gpuasync_pcie_current_link"));
	ck_assert_ptr_null(strstr(m, "gpuasync_pcie_max_link"));
	free(m);
}
END_TEST

/* Issue 24 item 6: a latency minimum before its first sample (all ones
 * since count_reset, by the facts sheet) reads "no sample" and has no
 * metrics sample, never 4294967295 cycles or 17.18 s. */
START_TEST(latency_min_no_sample)
{
	char *s;

	mnt_start("-o version=5");
	ck_assert_int_eq(sh("cd $M && mkdir buffers/0 && echo 1 > registers/write_enable"), 0);
	assert_file_eq("buffers/0/latency/gpu_min", "no sample\n");
	assert_file_eq("buffers/0/latency/total_min", "no sample\n");
	ck_assert_int_ne(
		sh("grep -E '^gpuasync_(gpu|total)_latency_min_seconds|4294967295|17\\.18' "
		   "$M/metrics"),
		0);
	/* a frame, and the buffer armed again: the GPU latency has a sample */
	ck_assert_int_eq(sh("cd $M && echo 1 > buffers/0/write_enable && printf abc > sim/push"),
			 0);
	wait_num("sim/stats/delivered", 1);
	ck_assert_int_eq(writef("buffers/0/write_enable", "1"), 0);
	s = readf("buffers/0/latency/gpu_min");
	ck_assert_msg(s[0] >= '0' && s[0] <= '9' && strtoull(s, NULL, 10) < 0xffffffffull, "%s", s);
	free(s);
	ck_assert_int_eq(sh("grep -q '^gpuasync_gpu_latency_min_seconds{.*buffer=\"0\"} ' "
			    "$M/metrics"),
			 0);
	/* count_reset: no sample again */
	ck_assert_int_eq(writef("registers/count_reset", "1"), 0);
	assert_file_eq("buffers/0/latency/gpu_min", "no sample\n");
	ck_assert_int_ne(sh("grep -q '^gpuasync_gpu_latency_min_seconds' $M/metrics"), 0);
}
END_TEST

START_TEST(metrics_with_1024_buffers)
{
	mnt_start("-o version=4");
	ck_assert_int_eq(
		sh("python3 -c 'import os,sys\n"
		   "for i in range(1024): os.mkdir(sys.argv[1] + \"/buffers/%%d\" %% i)' $M"),
		0);
	ck_assert_int_eq(
		sh("test $(grep -c '^gpuasync_buffer_state{.*,direction=\"write\"' $M/metrics) "
		   "-eq 1024"),
		0);
	ck_assert_int_eq(mkdir(P("buffers/1024"), 0755), -1);
	if (have("promtool"))
		ck_assert_int_eq(sh("promtool check metrics < $M/metrics"), 0);
	ck_assert_int_eq(sh("python3 -c 'import os,sys\n"
			    "for i in reversed(range(1024)): os.rmdir(sys.argv[1] + "
			    "\"/buffers/%%d\" %% i)' $M"),
			 0);
}
END_TEST

START_TEST(node_exporter_scrapes)
{
	char dir[] = "/tmp/gafs-textfile-XXXXXX", *out;
	char prom[300], want[512];
	pid_t ne;
	int port;

	if (!have("prometheus-node-exporter"))
		return;
	mnt_start(NULL);
	make_states();
	/* the textfile collector pointed at the mount itself (prometheus/),
	 * and at a directory holding a link to metrics (the other way) */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(sh("ln -s $M/metrics %s/gpuasync.prom", dir), 0);
	snprintf(prom, sizeof(prom), "%s/prometheus", M.dir);
	ne = node_exporter_start(prom, &port, NULL);
	out = scrape(port);
	node_exporter_stop(ne);
	snprintf(want, sizeof(want), "\ngpuasync_rx_frame_count_total{%s} ", card_id_as(true));
	ck_assert_msg(strstr(out, want) != NULL,
		      "node_exporter did not export the mount's metrics");
	{ /* sorted: buffer, card, device, direction, dna, state */
		char head[400], *dna = strstr(card_id_as(true), ",dna=");

		ck_assert_ptr_nonnull(dna);
		snprintf(head, sizeof(head), "%.*s", (int)(dna - card_id_as(true)),
			 card_id_as(true));
		snprintf(want, sizeof(want),
			 "gpuasync_buffer_state{buffer=\"0\",%s,direction=\"write\"%s,state="
			 "\"READY\"} 1",
			 head, strstr(card_id_as(true), ",dna="));
	}
	ck_assert_ptr_nonnull(strstr(out, want));
	ck_assert_ptr_nonnull(strstr(out, "node_textfile_scrape_error 0"));
	free(out);

	ne = node_exporter_start(dir, &port, NULL);
	out = scrape(port);
	node_exporter_stop(ne);
	sh("rm -rf %s", dir);
	snprintf(want, sizeof(want), "\ngpuasync_rx_frame_count_total{%s} ", card_id_as(true));
	ck_assert_ptr_nonnull(strstr(out, want));
	free(out);
}
END_TEST

SUITE_MAIN("fs_metrics", "metrics", TEST_TIMEOUT, {promtool_accepts}, {eof_stays_eof},
	   {names_units_labels}, {latency_min_no_sample}, {pcie_link_unknown_on_sim},
	   {metrics_with_1024_buffers}, {node_exporter_scrapes})
