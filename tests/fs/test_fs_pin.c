// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * -o pin= on a real mount of the simulated card:
 *
 *   $ gpuasyncfs --sim -o pin=p2p MNT && cat MNT/device/pin
 *   p2p
 *   $ sed -n 2p MNT/device/memory_note
 *   pin=p2p: buffers are registered by address (GPU_Add_Nvidia_Memory)
 *   $ gpuasyncfs --sim -o pin=dmabuf MNT     # no /dev/udmabuf on this kernel
 *   gpuasyncfs: sim:...: pin=dmabuf: /dev/udmabuf does not exist: ...
 *
 * p2p and auto show the path chosen in device/pin, memory_note and the
 * last column of device/pinned; dmabuf either mounts with every buffer a
 * dma-buf (frames still land, the daemon keeps no fd per buffer) or is
 * refused saying what is missing (then the dma-buf part counts as skipped:
 * a kernel feature, not a package); bad values are refused with the key
 * named, from -o and from the config file.  The memory is what the daemon
 * gets by default: CUDA memory where there is a GPU, else host memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuasync/device.h"
#include "harness.h"

/* What pin=dmabuf gives in this process, with the daemon's defaults:
 * "" when the memory exports, else the reason. */
static char no_dmabuf[512];

static void probe(void)
{
	struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;
	struct ga_dev *dev;

	o.pin = GA_PIN_DMABUF;
	no_dmabuf[0] = '\0';
	if (ga_dev_open_opts("sim", &o, &dev) == 0)
		ga_dev_close(dev);
	else
		snprintf(no_dmabuf, sizeof(no_dmabuf), "%s", ga_last_error());
}

/* Line 1 (the first buffer) of device/pinned, last field. */
static char *first_path(void)
{
	return sh_out("sed -n 2p $M/device/pinned | awk '{print $9}'");
}

START_TEST(pin_p2p)
{
	char *s;

	mnt_start("-o pin=p2p");
	assert_file_eq("device/pin", "p2p\n");
	ck_assert_int_eq(sh("sed -n 2p $M/device/memory_note | grep -q '^pin=p2p: '"), 0);
	ck_assert_int_eq(sh("grep -qx 'pin = p2p' $M/config"), 0);
	ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/buffers/1"), 0);
	s = first_path();
	ck_assert_str_eq(s, "p2p\n");
	free(s);
	ck_assert_int_eq(sh("test \"$(sed -n 2p $M/device/pinned | cut -d' ' -f3)\" = "
			    "\"$(cat $M/buffers/0/gpu_address)\""),
			 0);
	ck_assert_int_eq(sh("rmdir $M/buffers/1 $M/buffers/0"), 0);
}
END_TEST

START_TEST(pin_auto)
{
	const char *want = no_dmabuf[0] ? "p2p\n" : "dmabuf\n";
	char *s;

	mnt_start(""); /* the default */
	assert_file_eq("device/pin", want);
	ck_assert_int_eq(sh("grep -qx 'pin = auto' $M/config"), 0);
	s = sh_out("sed -n 2p $M/device/memory_note");
	ck_assert_msg(strncmp(s, "pin=auto: ", 10) == 0, "memory_note: %s", s);
	if (no_dmabuf[0]) /* the reason pin=dmabuf gives, after "pin=dmabuf: " */
		ck_assert_msg(strstr(s, no_dmabuf + 12), "'%s' lacks '%s'", s, no_dmabuf + 12);
	free(s);
	ck_assert_int_eq(sh("mkdir $M/buffers/0"), 0);
	s = first_path();
	ck_assert_str_eq(s, want);
	free(s);
}
END_TEST

/* pin=dmabuf where the memory exports: every buffer a dma-buf, a frame
 * lands, and making and removing buffers leaves the daemon's fds as they
 * were (each dma-buf fd closed after registration). */
static void dmabuf_mount(void)
{
	char *s, *fds0, *fds1;

	mnt_start("-o pin=dmabuf,buffers.size=128K");
	assert_file_eq("device/pin", "dmabuf\n");
	ck_assert_int_eq(sh("sed -n 2p $M/device/memory_note | grep -q '^pin=dmabuf: buffers are "
			    "registered as dma-bufs'"),
			 0);
	fds0 = sh_out("ls /proc/%d/fd | wc -l", (int)M.pid);
	for (int round = 0; round < 5; round++) {
		ck_assert_int_eq(sh("mkdir $M/buffers/0 $M/buffers/1 $M/read_buffers/0"), 0);
		s = sh_out("awk 'NR > 1 { print $3, $9 }' $M/device/pinned | sort -u");
		ck_assert_str_eq(s, "0x0 dmabuf\n");
		free(s);
		ck_assert_int_eq(
			sh("echo 1 > $M/buffers/0/write_enable && "
			   "echo 1 > $M/registers/write_enable && "
			   "head -c 5000 /dev/urandom > $M.frame && cat $M.frame > $M/sim/push"),
			0);
		ck_assert_int_eq(sh("grep -q 'size=5000 result=0' $M/buffers/0/header && "
				    "cmp -s $M.frame $M/buffers/0/data"),
				 0);
		ck_assert_int_eq(sh("echo 0 > $M/registers/write_enable && rm -f $M.frame && "
				    "rmdir $M/read_buffers/0 $M/buffers/1 $M/buffers/0"),
				 0);
	}
	fds1 = sh_out("ls /proc/%d/fd | wc -l", (int)M.pid);
	ck_assert_str_eq(fds0, fds1);
	free(fds0);
	free(fds1);
	ck_assert_int_eq(mnt_stop(), 0);
}

/* pin=dmabuf where it cannot: exit status 1, the reason on stderr, no
 * mount left behind. */
static void dmabuf_refused(void)
{
	char dir[] = "/tmp/gafs-test-XXXXXX", *err;
	int rc;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("GAFS", GAFS_BIN, 1);
	rc = sh("\"$GAFS\" --sim -o config=/dev/null -o pin=dmabuf %s 2>%s.err", dir, dir);
	if (rc == 0) /* mounted after all: take it down (the daemon exits) */
		sh("%s %s", umount_cmd(false), dir);
	ck_assert_int_ne(rc, 0);
	ck_assert(!is_mounted(dir));
	err = sh_out("cat %s.err; rm -f %s.err", dir, dir);
	ck_assert_msg(strstr(err, no_dmabuf), "stderr '%s' lacks '%s'", err, no_dmabuf);
	free(err);
	rmdir(dir);
}

START_TEST(pin_dmabuf)
{
	if (no_dmabuf[0]) {
		dmabuf_refused();
		skip_part(no_dmabuf);
	} else {
		dmabuf_mount();
	}
}
END_TEST

/* Bad values: refused with the key named, nothing mounted. */
START_TEST(pin_bad)
{
	char dir[] = "/tmp/gafs-test-XXXXXX", *err;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("GAFS", GAFS_BIN, 1);
	ck_assert_int_eq(
		sh("\"$GAFS\" --sim -o config=/dev/null -o pin=nvidia %s 2>%s.err", dir, dir), 1);
	err = sh_out("cat %s.err", dir);
	ck_assert_msg(strstr(err, "[device] pin: 'nvidia' is not auto, p2p or dmabuf"), "%s", err);
	free(err);
	ck_assert_int_eq(sh("printf '[device]\\npin = always\\n' > %s.conf && "
			    "\"$GAFS\" --sim -o config=%s.conf %s 2>%s.err",
			    dir, dir, dir, dir),
			 1);
	err = sh_out("cat %s.err; rm -f %s.err %s.conf", dir, dir, dir);
	ck_assert_msg(strstr(err, ".conf:2: [device] pin: 'always'"), "%s", err);
	free(err);
	ck_assert(!is_mounted(dir));
	rmdir(dir);
}
END_TEST

int main(void)
{
	probe();
	printf("pin=dmabuf here: %s\n", no_dmabuf[0] ? no_dmabuf : "works");
	return run_suite(suite_of("fs_pin", "pin", TEST_TIMEOUT,
				  SUITE_TESTS({pin_p2p}, {pin_auto}, {pin_dmabuf}, {pin_bad})));
}
