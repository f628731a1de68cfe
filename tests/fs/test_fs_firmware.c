/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Issue 12 ("Field-ready"), driven with cat and echo on real mounts:
 *   - the two stream monitors (registers/inbound_*, outbound_*): 64-bit
 *     counts, sizes with max/min, count_reset clearing both monitors and
 *     each monitor's own reset clearing only itself;
 *   - ring sizes under names that cannot be misread: registers/write_buffers
 *     and read_buffers are the count fields + 1, the raw fields stay;
 *   - device/firmware/ (the AxiVersion identity) in the formats pyrogue
 *     and /proc/datadev_N use;
 *   - a card whose link drops (sim/link down: all-ones everywhere):
 *     device/link, an errors line, a POLLPRI wake from the sampler, writes
 *     refused with ENOLINK and nothing changed, all back when it is up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

START_TEST(monitors)
{
	char *s;

	mnt_start(NULL);
	ck_assert_int_eq(
		sh("cd $M && mkdir read_buffers/0 read_buffers/1 && "
		   "for i in 0 1 2 3; do mkdir buffers/$i && "
		   "echo 1 > buffers/$i/write_enable || exit 1; done && "
		   "echo 1 > registers/write_enable && echo 0 > sim/rate && echo 300 > sim/size && "
		   "echo 3 > sim/remaining && echo 1 > sim/running"),
		0);
	wait_num("sim/stats/delivered", 3);
	expect_nums("registers/", "inbound_frames=3 inbound_frame_size=300 "
				  "inbound_frame_size_max=300 inbound_frame_size_min=300");
	/* GPU->FPGA: two frames of 100 and 40 bytes through read buffer 0 and 1 */
	ck_assert_int_eq(sh("cd $M && "
			    "echo 1 > registers/read_enable && echo 100 > read_buffers/0/send && "
			    "echo 40 > read_buffers/1/send"),
			 0);
	wait_num("registers/outbound_frames", 2);
	expect_nums(
		"registers/",
		"outbound_frame_size_max=100 outbound_frame_size_min=40 outbound_frame_size=40");

	/* each monitor's reset is a strobe: 0200, refuses reads and values
	 * wider than its bit, and clears only its own monitor */
	ck_assert_int_eq(sh("test \"$(stat -c %%a $M/registers/inbound_monitor_reset)\" = 200"), 0);
	s = readf("registers/inbound_monitor_reset");
	ck_assert_ptr_null(s);
	ck_assert_int_eq(errno, EACCES);
	expect_refused("registers/outbound_monitor_reset", "2", ERANGE);
	ck_assert_uint_eq(readnum("registers/outbound_frames"), 2);
	ck_assert_int_eq(sh("echo 1 > $M/registers/outbound_monitor_reset"), 0);
	expect_nums("registers/", "outbound_frames=0 inbound_frames=3 tx_frame_count=2");

	/* count_reset: the core's counters and both monitors */
	ck_assert_int_eq(sh("echo 1 > $M/sim/remaining && echo 1 > $M/sim/running && "
			    "echo 7 > $M/read_buffers/0/send"),
			 0);
	wait_num("registers/inbound_frames", 4);
	wait_num("registers/outbound_frames", 1);
	ck_assert_int_eq(sh("echo 1 > $M/registers/count_reset"), 0);
	expect_nums("registers/",
		    "inbound_frames=0 outbound_frames=0 rx_frame_count=0 tx_frame_count=0");
	/* re-armed: both ends hold the last frame's size until the next one */
	ck_assert_uint_eq(readnum("registers/outbound_frame_size_max"), 7);
	ck_assert_uint_eq(readnum("registers/outbound_frame_size_min"), 7);
}
END_TEST

/* The firmware's V1 map has no monitor blocks: no such files. */
START_TEST(monitors_absent_v1)
{
	mnt_start("-o version=3");
	ck_assert_int_ne(access(P("registers/inbound_frames"), F_OK), 0);
	ck_assert_int_ne(access(P("registers/outbound_monitor_reset"), F_OK), 0);
	ck_assert_int_eq(access(P("registers/write_buffers"), F_OK), 0);
}
END_TEST

/* write_buffers = write_count + 1, read_buffers = read_count + 1, read-only. */
START_TEST(buffer_counts)
{
	static const char *const versions[] = {"-o version=2", "-o version=5"};

	for (unsigned int v = 0; v < 2; v++) {
		mnt_start(versions[v]);
		ck_assert_uint_eq(readnum("registers/write_count"), 0);
		ck_assert_uint_eq(readnum("registers/write_buffers"), 1);
		ck_assert_int_eq(sh("cd $M && mkdir buffers/0 buffers/1 buffers/2 read_buffers/0 "
				    "read_buffers/1"),
				 0);
		expect_nums("registers/",
			    "write_buffers=3 write_count=2 read_buffers=2 read_count=1");
		ck_assert_int_eq(sh("test \"$(stat -c %%a $M/registers/write_buffers)\" = 444"), 0);
		expect_refused("registers/write_buffers", "5", EACCES);
		ck_assert_int_eq(sh("rmdir $M/buffers/2"), 0);
		ck_assert_uint_eq(readnum("registers/write_buffers"), 2);
		ck_assert_int_eq(mnt_stop(), 0);
	}
}
END_TEST

static void match(const char *rel, const char *re)
{
	char *s = readf(rel);
	regex_t rx;

	ck_assert_msg(s, "%s: %s", rel, strerror(errno));
	ck_assert_int_eq(regcomp(&rx, re, REG_EXTENDED | REG_NOSUB), 0);
	ck_assert_msg(regexec(&rx, s, 0, NULL, 0) == 0, "%s: '%s' does not match %s", rel, s, re);
	regfree(&rx);
	free(s);
}

START_TEST(firmware_identity)
{
	unsigned long long up;

	mnt_start(NULL);
	match("device/firmware/fpga_version", "^0x[0-9a-f]{8}\n$");
	match("device/firmware/device_id", "^0x[0-9a-f]{8}\n$");
	match("device/firmware/git_hash", "^([0-9a-f]{40}|dirty)\n$");
	match("device/firmware/dna", "^0x[0-9a-f]{32}\n$");
	match("device/firmware/hardware_type", "^0x[0-9a-f]{3}\n$");
	/* SURF's build string: "{ImageName}: {BuildEnv}, {BuildServer}, Built
	 * {BuildDate} by {Builder}" */
	match("device/firmware/build_stamp", "^[^:]+: [^,]+, [^,]+, Built .+ by .+\n$");
	ck_assert_uint_eq(readnum("device/firmware/gpu_enable"), 1);
	/* the DMA clock AxiVersion reports is the clock of the latency counters */
	ck_assert_uint_eq(readnum("device/firmware/dma_clock_hz"), readnum("device/clock_hz"));
	/* uptime counts seconds: wait for it to move */
	up = readnum("device/firmware/uptime");
	for (int i = 0; i < 300 && readnum("device/firmware/uptime") == up; i++)
		usleep(10000);
	ck_assert_uint_eq(readnum("device/firmware/uptime"), up + 1);
	/* read-only identity: 0444, and a write is refused */
	ck_assert_int_eq(sh("test \"$(stat -c %%a $M/device/firmware/git_hash)\" = 444"), 0);
	expect_refused("device/firmware/fpga_version", "1", EACCES);
	/* README lists every file of the table */
	ck_assert_int_eq(sh("for f in $(ls $M/device/firmware); do "
			    "grep -q \"^device/firmware/$f \" $M/README || exit 1; done"),
			 0);
}
END_TEST

/*
 * pyrogue's PcieAxiVersion words through cat: the KCU1500 image of
 * docs/firmware.md §2.5 (expected values from that page), read-only,
 * each in the mount's pyrogue index under its PcieAxiVersion name; the
 * PCIe AXI width follows the card's DmaDataBytes.
 */
START_TEST(firmware_user_values)
{
	static const char *const e[][3] = {
		{"dma_lanes", "8\n", "DMA_SIZE_G"},
		{"reserved", "1\n", "Reserved"},
		{"driver_type_id", "0x00000000\n", "DRIVER_TYPE_ID_G"},
		{"xil_device", "0\n", "XIL_DEVICE_G"},
		{"dma_clock_hz", "250000000\n", "DMA_CLK_FREQ_C"},
		{"boot_prom", "1\n", "BOOT_PROM_G"},
		{"dma_axis_tdata_bytes", "16\n", "DMA_AXIS_CONFIG_G_TDATA_BYTES_C"},
		{"dma_axis_tdest_bits", "8\n", "DMA_AXIS_CONFIG_G_TDEST_BITS_C"},
		{"dma_axis_tuser_bits", "2\n", "DMA_AXIS_CONFIG_G_TUSER_BITS_C"},
		{"dma_axis_tid_bits", "0\n", "DMA_AXIS_CONFIG_G_TID_BITS_C"},
		{"dma_axis_tkeep_mode", "1\n", "DMA_AXIS_CONFIG_G_TKEEP_MODE_C"},
		{"dma_axis_tuser_mode", "1\n", "DMA_AXIS_CONFIG_G_TUSER_MODE_C"},
		{"dma_axis_tstrb", "0\n", "DMA_AXIS_CONFIG_G_TSTRB_EN_C"},
		{"app_reset", "0\n", "AppReset"},
		{"pcie_axi_addr_width", "64\n", "AXI_PCIE_CONFIG_C_ADDR_WIDTH_C"},
		{"pcie_axi_data_bytes", "32\n", "AXI_PCIE_CONFIG_C_DATA_BYTES_C"},
		{"pcie_axi_id_bits", "4\n", "AXI_PCIE_CONFIG_C_ID_BITS_C"},
		{"pcie_axi_len_bits", "8\n", "AXI_PCIE_CONFIG_C_LEN_BITS_C"},
		{"app_clock_hz", "156250000\n", "AppClkFreq"},
		{"hardware_type", "0x00d\n", "PCIE_HW_TYPE_G"},
		{"gpu_enable", "1\n", "DataGpuEn"},
		{"device_id", "0x00000000\n", "DeviceId"},
	};
	char cmd[1024] = "cd $M/device/firmware && cat", want[512] = "", rel[64];
	char *got;

	mnt_start(NULL);
	/* one cat of them all, as a user would */
	for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++) {
		strcat(strcat(cmd, " "), e[k][0]);
		strcat(want, e[k][1]);
	}
	got = sh_out("%s", cmd);
	ck_assert_str_eq(got, want);
	free(got);
	for (size_t k = 0; k < sizeof(e) / sizeof(e[0]); k++) {
		snprintf(rel, sizeof(rel), "device/firmware/%s", e[k][0]);
		ck_assert_int_eq(sh("test \"$(stat -c %%a $M/device/firmware/%s)\" = 444", e[k][0]),
				 0);
		expect_refused(rel, "1", EACCES);
		ck_assert_msg(sh("grep -q '^AxiVersion.%s  *device/firmware/%s$' $M/pyrogue",
				 e[k][2], e[k][0]) == 0,
			      "pyrogue has no AxiVersion.%s for device/firmware/%s", e[k][2],
			      e[k][0]);
	}
	ck_assert_int_eq(mnt_stop(), 0);
	mnt_start("-o dma_data_bytes=64");
	assert_file_eq("device/firmware/pcie_axi_data_bytes", "64\n");
	assert_file_eq("device/firmware/pcie_axi_len_bits", "8\n");
}
END_TEST

/* device/firmware/scratch_pad: pyrogue's ScratchPad write-verify through
 * the mount, as the simulated card's firmware keeps the word; identity
 * stays read-only; bad values change nothing; a new card reads 0. */
START_TEST(scratch_pad)
{
	char *ver;

	mnt_start(NULL);
	ck_assert_int_eq(sh("test -w $M/device/firmware/scratch_pad && "
			    "test \"$(stat -c %%a $M/device/firmware/fpga_version)\" = 444"),
			 0);
	assert_file_eq("device/firmware/scratch_pad", "0x00000000\n");
	ver = readf("device/firmware/fpga_version");
	ck_assert_int_eq(sh("cd $M/device/firmware && for v in 0xdeadbeef 0xffffffff 0x1 0x0; do "
			    "echo $v > scratch_pad && "
			    "test \"$(cat scratch_pad)\" = $(printf 0x%%08x $v) || exit 1; done"),
			 0);
	ck_assert_int_eq(writef("device/firmware/scratch_pad", "305419896\n"), 0);
	assert_file_eq("device/firmware/scratch_pad", "0x12345678\n");
	expect_refused("device/firmware/scratch_pad", "0x100000000", ERANGE);
	expect_refused("device/firmware/scratch_pad", "pad", EINVAL);
	assert_file_eq("device/firmware/scratch_pad", "0x12345678\n");
	assert_file_eq("device/firmware/fpga_version", ver);
	free(ver);
	/* pyrogue's name for it */
	ck_assert_int_eq(sh("grep -q '^AxiVersion.ScratchPad  *device/firmware/scratch_pad$' "
			    "$M/pyrogue"),
			 0);
	ck_assert_int_eq(mnt_stop(), 0);
	mnt_start(NULL);
	assert_file_eq("device/firmware/scratch_pad", "0x00000000\n");
}
END_TEST

START_TEST(link_down)
{
	struct pollfd pfd;
	char buf[16];
	unsigned int lines;

	mnt_start(NULL);
	ck_assert_int_eq(
		sh("cd $M && mkdir buffers/0 read_buffers/0 && echo 3 > registers/aw_cache"), 0);
	assert_file_eq("device/link", "up\n");
	/* a poller on device/link: the sampler wakes it when the link drops */
	pfd.fd = open(P("device/link"), O_RDONLY);
	ck_assert_int_ge(pfd.fd, 0);
	ck_assert_int_eq(read(pfd.fd, buf, sizeof(buf)), 3);
	pfd.events = POLLPRI;
	ck_assert_int_eq(poll(&pfd, 1, 0), 0); /* registers the poll, nothing yet */
	lines = err_lines();
	ck_assert_int_eq(writef("sim/link", "down\n"), 0);
	ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
	ck_assert(pfd.revents & POLLPRI);
	close(pfd.fd);
	ck_assert_uint_eq(err_lines(), lines + 1);
	ck_assert_ptr_nonnull(strstr(err_last(), "device/link: ENOLINK: link down"));
	assert_file_eq("device/link", "down\n");
	assert_file_eq("sim/link", "down\n");
	/* what the card answers (all ones) is no value: ENOLINK, never 0xf */
	ck_assert_ptr_null(readf("registers/aw_cache"));
	ck_assert_int_eq(errno, ENOLINK);
	/* writes are refused, each with its errors line */
	expect_refused("registers/aw_cache", "5", ENOLINK);
	expect_refused("registers/count_reset", "1", ENOLINK);
	expect_refused("registers/write_enable", "1", ENOLINK);
	expect_refused("buffers/0/write_enable", "1", ENOLINK);
	expect_refused("read_buffers/0/send", "16", ENOLINK);
	lines = err_lines();
	ck_assert_int_ne(sh("mkdir $M/buffers/1 2>/dev/null"), 0);
	ck_assert_uint_eq(err_lines(), lines + 1);
	ck_assert_ptr_nonnull(strstr(err_last(), "ENOLINK"));
	ck_assert_ptr_null(readf("device/firmware/git_hash"));
	ck_assert_int_eq(errno, ENOLINK);
	/* the injection itself refuses nonsense */
	expect_refused("sim/link", "sideways", EINVAL);
	/* back up: nothing of the refused writes happened, writes work again */
	ck_assert_int_eq(writef("sim/link", "up"), 0);
	assert_file_eq("device/link", "up\n");
	ck_assert_ptr_nonnull(strstr(err_last(), "link up again"));
	ck_assert_uint_eq(readnum("registers/aw_cache"), 3);
	ck_assert_uint_eq(readnum("registers/write_enable"), 0);
	ck_assert_int_eq(access(P("buffers/1"), F_OK), -1);
	ck_assert_int_eq(sh("echo 5 > $M/registers/aw_cache && mkdir $M/buffers/1"), 0);
	ck_assert_uint_eq(readnum("registers/aw_cache"), 5);
}
END_TEST

/*
 * Issue 24 item 2: a link flap while buffers are armed.  The all-ones reads
 * of a dead link must not pass for "the card dropped our buffers" (every
 * buffer ERROR for good), nor for numbers (4294967295 frames): register
 * reads and buffer states are ENOLINK while it is down, and everything works
 * again, unchanged, when it is back.
 */
START_TEST(link_flap)
{
	char *s;

	mnt_start(NULL);
	ck_assert_int_eq(sh("cd $M && for i in 0 1 2 3; do mkdir buffers/$i || exit 1; done && "
			    "echo 1 > buffers/0/write_enable && echo 1 > buffers/1/write_enable"),
			 0);
	for (int round = 0; round < 4; round++) {
		ck_assert_int_eq(writef("sim/link", "down"), 0);
		/* what a dead link answers is no value: registers, raw words,
		 * buffer states */
		ck_assert_int_ne(sh("cat $M/registers/rx_frame_count"), 0);
		ck_assert_ptr_null(readf("registers/rx_frame_count"));
		ck_assert_int_eq(errno, ENOLINK);
		ck_assert_ptr_null(readf("registers/inbound_frames")); /* a 64-bit pair */
		ck_assert_int_eq(errno, ENOLINK);
		ck_assert_int_ne(sh("dd if=$M/registers/raw bs=4 count=1 2>/dev/null | "
				    "od -An -tx4 | grep -q ."),
				 0);
		ck_assert_ptr_null(readf("buffers/0/status"));
		ck_assert_int_eq(errno, ENOLINK);
		ck_assert_ptr_nonnull(strstr(err_last(), "buffers/0/status: ENOLINK: link down"));
		ck_assert_ptr_null(readf("buffers/3/write_enable"));
		ck_assert_int_eq(errno, ENOLINK);
		/* metrics: no number made of all ones, no state, the link is 0 */
		ck_assert_int_eq(sh("grep -q '^gpuasync_link_up{.*} 0$' $M/metrics"), 0);
		ck_assert_int_ne(sh("grep -E '4294967295|state=\"ERROR\"|^gpuasync_buffer_state' "
				    "$M/metrics"),
				 0);
		ck_assert_int_eq(writef("sim/link", "up"), 0);
		/* back as they were: nothing lost, nothing ERROR */
		s = sh_out("cd $M && cat buffers/0/status buffers/1/status buffers/2/status "
			   "buffers/3/status");
		ck_assert_str_eq(s, "FREE\nFREE\nIDLE\nIDLE\n");
		free(s);
		ck_assert_int_eq(
			sh("grep -q '^gpuasync_registrations_lost_total{.*} 0$' $M/metrics"), 0);
	}
	/* and they work: arm the others, a frame lands in buffer 0 */
	ck_assert_int_eq(sh("cd $M && echo 1 > buffers/2/write_enable && "
			    "echo 1 > buffers/3/write_enable && echo 1 > registers/write_enable && "
			    "printf hello > sim/push"),
			 0);
	wait_num("sim/stats/delivered", 1);
	s = sh_out("cd $M && cat buffers/0/status buffers/3/status");
	ck_assert_str_eq(s, "READY\nFREE\n");
	free(s);
	ck_assert_int_ne(sh("grep -q 'no longer holds our buffers' $M/errors"), 0);
}
END_TEST

SUITE_MAIN("firmware", "monitors", TEST_TIMEOUT, {monitors}, {monitors_absent_v1}, {buffer_counts},
	   {firmware_identity}, {firmware_user_values}, {scratch_pad}, {link_down}, {link_flap})
