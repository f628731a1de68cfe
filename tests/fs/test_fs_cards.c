/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Several cards on one host: two simulated cards (two daemons, two
 * mountpoints; each card's register file is /dev/shm/gpuasync-sim-<pid>-0,
 * so they are told apart by the daemon's pid) feed one textfile-collector
 * directory through links to their metrics files, and the real
 * prometheus-node-exporter scrapes it: both cards' series are there, with
 * distinct identity labels (device, card), no series twice, and node_exporter
 * reports no error (node_textfile_scrape_error 0, and nothing in its log:
 * it logs series that two files both hold, and drops the second).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* The first card's mount while the harness's M holds the second one. */
static struct mnt card_a;

static void stop_card_a(void)
{
	struct mnt b = M;

	M = card_a;
	mnt_stop();
	card_a = M;
	M = b;
}

/* The register file of the mount in M: its device label. */
/* The mounted card's DNA (device/firmware/dna), the metrics' dna label. */
static char *dna_of_mount(void)
{
	char *d = readf("device/firmware/dna");

	ck_assert_ptr_nonnull(d);
	d[strcspn(d, "\n")] = '\0';
	return d;
}

static char *device_of_mount(void)
{
	char *rp = readf("device/registers_path"), *sp;

	ck_assert_ptr_nonnull(rp);
	sp = strchr(rp, ' ');
	ck_assert_ptr_nonnull(sp);
	*sp = '\0';
	return rp;
}

/* Lines of @text that are samples, each name{labels} seen once. */
static void assert_no_duplicate_series(const char *text)
{
	char *copy = strdup(text), *save = NULL;
	char **seen = NULL;
	size_t n = 0;

	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');

		if (line[0] == '#' || !sp)
			continue;
		*sp = '\0';
		for (size_t i = 0; i < n; i++)
			ck_assert_msg(strcmp(seen[i], line) != 0, "series twice: %s", line);
		seen = realloc(seen, (n + 1) * sizeof(*seen));
		seen[n++] = line;
	}
	ck_assert_uint_gt(n, 0);
	free(seen);
	free(copy);
}

START_TEST(two_cards_one_node_exporter)
{
	char dir[] = "/tmp/gafs-textfile-XXXXXX", want[600];
	char *dev_a, *dev_b, *dna_a, *dna_b, *out, *log;
	pid_t ne;
	int port;

	if (!have_cmd("prometheus-node-exporter", "prometheus-node-exporter"))
		return;
	atexit(stop_card_a); /* registered before mnt_start's: runs after it */
	mnt_start(NULL);
	/* card A: one frame delivered */
	ck_assert_int_eq(sh("cd $M && mkdir buffers/0 && echo 1 > registers/write_enable && "
			    "echo 1 > buffers/0/write_enable && printf abc > sim/push"),
			 0);
	dev_a = device_of_mount();
	dna_a = dna_of_mount();
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(sh("ln -s $M/metrics %s/card-a.prom", dir), 0);
	card_a = M;
	memset(&M, 0, sizeof(M));

	mnt_start(NULL);
	/* card B: two frames delivered */
	ck_assert_int_eq(sh("cd $M && mkdir buffers/0 buffers/1 && echo 1 > registers/write_enable "
			    "&& echo 1 > buffers/0/write_enable && echo 1 > buffers/1/write_enable "
			    "&& printf abc > sim/push && printf def > sim/push"),
			 0);
	dev_b = device_of_mount();
	dna_b = dna_of_mount();
	ck_assert_str_ne(dev_a, dev_b);
	ck_assert_str_ne(dna_a, dna_b); /* each chip its own DNA */
	ck_assert_int_eq(sh("ln -s $M/metrics %s/card-b.prom", dir), 0);

	ne = node_exporter_start(dir, &port, "$M.ne.log");
	out = scrape(port);
	node_exporter_stop(ne);
	log = sh_out("grep -i 'error' $M.ne.log; rm -f $M.ne.log");
	ck_assert_msg(!*log, "node_exporter logged errors:\n%.1500s", log);
	free(log);

	ck_assert_msg(strstr(out, "\nnode_textfile_scrape_error 0\n") != NULL,
		      "node_exporter reports a textfile error:\n%.2000s", out);
	/* each card's own value under its own labels (node_exporter sorts
	 * labels by name; each register file ends in -0) */
	snprintf(want, sizeof(want),
		 "\ngpuasync_rx_frame_count_total{card=\"0\",device=\"%s\",dna=\"%s\"} 1\n", dev_a,
		 dna_a);
	ck_assert_msg(strstr(out, want) != NULL, "no %s in:\n%.3000s", want + 1, out);
	snprintf(want, sizeof(want),
		 "\ngpuasync_rx_frame_count_total{card=\"0\",device=\"%s\",dna=\"%s\"} 2\n", dev_b,
		 dna_b);
	ck_assert_msg(strstr(out, want) != NULL, "no %s in:\n%.3000s", want + 1, out);
	snprintf(want, sizeof(want),
		 "\ngpuasync_buffers{card=\"0\",device=\"%s\",direction=\"write\",dna=\"%s\","
		 "state=\"READY\"} 2\n",
		 dev_b, dna_b);
	ck_assert_msg(strstr(out, want) != NULL, "no %s", want + 1);
	/* both files read */
	snprintf(want, sizeof(want), "node_textfile_mtime_seconds{file=\"%s/card-a.prom\"}", dir);
	ck_assert_ptr_nonnull(strstr(out, want));
	snprintf(want, sizeof(want), "node_textfile_mtime_seconds{file=\"%s/card-b.prom\"}", dir);
	ck_assert_ptr_nonnull(strstr(out, want));
	assert_no_duplicate_series(out);
	free(out);
	free(dev_a);
	free(dev_b);
	free(dna_a);
	free(dna_b);

	sh("rm -rf %s", dir);
	ck_assert_int_eq(mnt_stop(), 0);
	M = card_a;
	memset(&card_a, 0, sizeof(card_a));
}
END_TEST

SUITE_MAIN("fs_cards", "cards", TEST_TIMEOUT, {two_cards_one_node_exporter})
