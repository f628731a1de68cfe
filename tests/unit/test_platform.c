// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The platform doctor (lib/src/platform) on fixture trees: a temporary
 * directory laid out like /sys, /proc, /dev and /boot holding the files
 * each check reads, built per test.  The base tree is a machine where
 * everything is right (card and GPU under one switch, no ACS redirect, no
 * IOMMU, full links, one NUMA node, 32 GiB BAR1, the open NVIDIA module,
 * stream memops on, dma-buf, gpuasync.ko with GPU async on); each test
 * breaks one thing and checks that exactly the expected verdict moves,
 * with what it found.  Bad input (missing, unreadable, vanished files) must
 * give "could not tell", never a crash and never OK.  The QEMU suite
 * (tests/platform/run.sh) checks the PCI facts on a real kernel; this file
 * is the only place the NVIDIA, NUMA-node and datadev facts are exercised.
 */
#define _GNU_SOURCE
#include <check.h>

#include "common/doc_file.h"
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuasync/device.h"
#include "gpuasync/platform.h"
#include "common/run_suite.h"

static char root[64];
static struct ga_check_result res[GA_CHECK_COUNT];

/* ---- building the tree ------------------------------------------------------------ */

static void mkdirs(const char *path)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(tmp, 0755);
			*p = '/';
		}
	mkdir(tmp, 0755);
}

static void put(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(const char *rel, const char *fmt, ...)
{
	char p[PATH_MAX], *slash;
	va_list ap;
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	slash = strrchr(p, '/');
	*slash = 0;
	mkdirs(p);
	*slash = '/';
	f = fopen(p, "w");
	ck_assert_msg(f != NULL, "%s: %s", p, strerror(errno));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static void link_to(const char *target, const char *rel)
{
	char p[PATH_MAX], *slash;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	slash = strrchr(p, '/');
	*slash = 0;
	mkdirs(p);
	*slash = '/';
	unlink(p);
	ck_assert_int_eq(symlink(target, p), 0);
}

static void rm(const char *rel)
{
	char p[PATH_MAX], cmd[PATH_MAX + 16];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
	ck_assert_int_eq(system(cmd), 0);
}

/* Config space: a PCIe capability list with ACS (control @acs) at 0x100,
 * or only the first @len bytes (64: what a non-root reader gets). */
static void config(const char *dev, int acs, size_t len)
{
	unsigned char c[4096] = {0};
	char p[PATH_MAX];
	FILE *f;

	c[0] = 0x86;
	c[1] = 0x80;
	if (acs >= 0) {
		c[0x100] = 0x0d; /* ACS, version 1, no next capability */
		c[0x102] = 0x01;
		c[0x104] = 0x1f; /* capability: SV TB RR CR UF */
		c[0x106] = (unsigned char)acs;
		c[0x107] = (unsigned char)(acs >> 8);
	}
	snprintf(p, sizeof(p), "%s/sys/devices/%s/config", root, dev);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fwrite(c, 1, len, f);
	fclose(f);
}

/* A PCI function at /sys/devices/@path (its last component is its address). */
static void pci(const char *path, unsigned int vendor, unsigned int device, unsigned int class,
		const char *speed, int width, int numa)
{
	const char *bdf = strrchr(path, '/') + 1;
	char d[PATH_MAX], t[PATH_MAX];

	snprintf(d, sizeof(d), "/sys/devices/%s", path);
	put(strcat(strcpy(t, d), "/vendor"), "0x%04x\n", vendor);
	put(strcat(strcpy(t, d), "/device"), "0x%04x\n", device);
	put(strcat(strcpy(t, d), "/class"), "0x%06x\n", class);
	put(strcat(strcpy(t, d), "/numa_node"), "%d\n", numa);
	put(strcat(strcpy(t, d), "/current_link_speed"), "%s PCIe\n", speed);
	put(strcat(strcpy(t, d), "/max_link_speed"), "%s PCIe\n", speed);
	put(strcat(strcpy(t, d), "/current_link_width"), "%d\n", width);
	put(strcat(strcpy(t, d), "/max_link_width"), "%d\n", width);
	put(strcat(strcpy(t, d), "/resource"),
	    "0x00000000f0000000 0x00000000f0ffffff 0x0000000000040200\n"
	    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n");
	config(path, -1, 256);
	snprintf(t, sizeof(t), "../../../devices/%s", path);
	snprintf(d, sizeof(d), "/sys/bus/pci/devices/%s", bdf);
	link_to(t, d);
}

static void bind(const char *bdf, const char *drv)
{
	char rel[128], t[128];

	snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/driver", bdf);
	snprintf(t, sizeof(t), "../../../bus/pci/drivers/%s", drv);
	link_to(t, rel);
}

#define RP    "pci0000:00/0000:00:01.0"
#define USP   RP "/0000:01:00.0"
#define DSP_C USP "/0000:02:01.0"
#define DSP_G USP "/0000:02:02.0"
#define CARD  DSP_C "/0000:03:00.0"
#define GPU   DSP_G "/0000:04:00.0"

/* The good machine. */
static void base(void)
{
	snprintf(root, sizeof(root), "/tmp/ga-platform-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	pci(RP, 0x8086, 0x1234, 0x060400, "16.0 GT/s", 16, 0);
	pci(USP, 0x10b5, 0x8747, 0x060400, "16.0 GT/s", 16, 0);
	pci(DSP_C, 0x10b5, 0x8747, 0x060400, "16.0 GT/s", 16, 0);
	pci(DSP_G, 0x10b5, 0x8747, 0x060400, "16.0 GT/s", 16, 0);
	config(DSP_C, 0x0011, 4096); /* SV + UF: no redirect */
	config(DSP_G, 0x0011, 4096);
	pci(CARD, 0x1a4a, 0x2030, 0xff0000, "8.0 GT/s", 8, 0);
	pci(GPU, 0x10de, 0x2330, 0x030200, "16.0 GT/s", 16, 0);
	put("/sys/devices/" GPU "/resource",
	    "0x00000000f0000000 0x00000000f0ffffff 0x0000000000040200\n"
	    "0x0000038000000000 0x00000387ffffffff 0x000000000014220c\n"
	    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n");
	bind("0000:03:00.0", "gpuasync");
	bind("0000:04:00.0", "nvidia");
	link_to("../../devices/" CARD, "/sys/class/gpuasync/gpuasync_0/device");
	put("/sys/class/gpuasync/gpuasync_0/version", "4\n");
	put("/sys/class/gpuasync/gpuasync_0/gpu_enabled", "1\n");
	put("/sys/module/gpuasync/version", "0.1.0\n");
	put("/sys/devices/system/node/node0/cpulist", "0-4095\n");
	put("/proc/driver/nvidia/version",
	    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  "
	    "(dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:15:33 UTC 2024\n"
	    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
	put("/proc/driver/nvidia/params", "ResmanDebugLevel: 4294967295\nEnableStreamMemOPs: 1\n"
					  "RegistryDwords: \"PeerMappingOverride=1;\"\n");
	put("/sys/module/nvidia/version", "550.54.15\n");
	mkdirs(strcat(strcpy((char[PATH_MAX]){0}, root), "/sys/kernel/dmabuf/buffers"));
}

/* What every run must keep, whatever the tree: "could not tell" is never
 * OK, and a check that could tell nothing (its found text starts so) is
 * WARN, never FAIL (docs/platform.md); the short line fits its width. */
static void no_guess(void)
{
	char line[2048];

	for (int i = 0; i < GA_CHECK_COUNT; i++) {
		int n = ga_check_format_short(&res[i], line, sizeof(line));

		ck_assert_msg(!strstr(res[i].found, "could not tell") ||
				      res[i].verdict != GA_VERDICT_OK,
			      "%s: OK on could not tell: %s", ga_check_info(i)->name, res[i].found);
		ck_assert_msg(strncmp(res[i].found, "could not tell", 14) ||
				      res[i].verdict == GA_VERDICT_WARN,
			      "%s: %s on could not tell: %s", ga_check_info(i)->name,
			      ga_verdict_name(res[i].verdict), res[i].found);
		ck_assert_msg(n <= GA_CHECK_SHORT_WIDTH + 1 && line[n - 1] == '\n' &&
				      !strchr(line, '\n')[1],
			      "%s: short line of %d: %s", ga_check_info(i)->name, n, line);
	}
}

static int run(struct ga_platform_opts *o)
{
	int rc;

	o->root = root;
	o->cuda = 0; /* this machine's CUDA answers nothing about a fixture */
	rc = ga_platform_run(o, res);
	if (rc >= 0)
		no_guess();
	return rc;
}

static int run_default(void)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;

	o.open_device = 0;
	return run(&o);
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void teardown(void)
{
	if (root[0])
		nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	root[0] = 0;
}

/* Check @id's verdict and that its found text holds @needle. */
#define EXPECT(id, v, needle)                                                                      \
	do {                                                                                       \
		char line_[2048];                                                                  \
		ga_check_format(&res[id], line_, sizeof(line_));                                   \
		ck_assert_msg(res[id].verdict == (v), "%s: want %s, got: %s",                      \
			      ga_check_info(id)->name, ga_verdict_name(v), line_);                 \
		ck_assert_msg(strstr(res[id].found, needle), "%s: '%s' not in: %s",                \
			      ga_check_info(id)->name, needle, res[id].found);                     \
	} while (0)

/* ---- the good machine --------------------------------------------------------------- */

START_TEST(test_good)
{
	ck_assert_int_eq(run_default(), GA_VERDICT_WARN); /* stale: not opened */
	EXPECT(GA_CHECK_CARD, GA_VERDICT_OK,
	       "0000:03:00.0 (1a4a:2030), driver gpuasync as gpuasync_0");
	EXPECT(GA_CHECK_GPU, GA_VERDICT_OK, "0000:04:00.0 (10de:2330)");
	EXPECT(GA_CHECK_PCIE_PATH, GA_VERDICT_OK, "4 hops, via switch port 0000:01:00.0");
	EXPECT(GA_CHECK_ACS, GA_VERDICT_OK, "0000:02:01.0: ACS ctrl 0x0011, no redirect");
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_OK, "no IOMMU in use");
	EXPECT(GA_CHECK_LINK_CARD, GA_VERDICT_OK, "Gen3 x8");
	EXPECT(GA_CHECK_LINK_GPU, GA_VERDICT_OK, "Gen4 x16");
	EXPECT(GA_CHECK_NUMA, GA_VERDICT_OK, "1 node; card on node 0, GPU on node 0");
	EXPECT(GA_CHECK_BAR1, GA_VERDICT_OK, "BAR1: 32 GiB");
	EXPECT(GA_CHECK_NVIDIA, GA_VERDICT_OK, "Open kernel module, version 550.54.15");
	EXPECT(GA_CHECK_STREAM_MEMOPS, GA_VERDICT_OK, "EnableStreamMemOPs: 1");
	EXPECT(GA_CHECK_DMABUF, GA_VERDICT_OK, "/sys/kernel/dmabuf exists");
	EXPECT(GA_CHECK_PIN_PATH, GA_VERDICT_OK, "dmabuf");
	EXPECT(GA_CHECK_CARD_DRIVER, GA_VERDICT_OK, "GpuAsyncCore version 4, GPU async on");
	EXPECT(GA_CHECK_STALE, GA_VERDICT_WARN, "not checked");
	EXPECT(GA_CHECK_PAIRING, GA_VERDICT_OK, "nothing to pair");
}
END_TEST

/* ---- one thing wrong at a time -------------------------------------------------------- */

START_TEST(test_acs_redirect)
{
	config(DSP_G, 0x001d, 4096); /* SV RR CR UF */
	ck_assert_int_eq(run_default(), GA_VERDICT_FAIL);
	EXPECT(GA_CHECK_ACS, GA_VERDICT_FAIL, "0000:02:02.0: ACS ctrl 0x001d, P2P redirect ON");
}
END_TEST

START_TEST(test_acs_unreadable)
{
	config(DSP_G, 0x001d, 64); /* what a user without CAP_SYS_ADMIN reads */
	run_default();
	EXPECT(GA_CHECK_ACS, GA_VERDICT_WARN, "could not tell (extended config space unreadable");
	rm("/sys/devices/" DSP_C "/config");
	run_default();
	EXPECT(GA_CHECK_ACS, GA_VERDICT_WARN, "0000:02:01.0: could not tell (No such file");
}
END_TEST

START_TEST(test_root_complex)
{
	/* The GPU moves under its own root port. */
	pci("pci0000:00/0000:00:02.0", 0x8086, 0x1235, 0x060400, "16.0 GT/s", 16, 0);
	pci("pci0000:00/0000:00:02.0/0000:05:00.0", 0x10de, 0x2330, 0x030200, "16.0 GT/s", 16, 0);
	rm("/sys/bus/pci/devices/0000:04:00.0");
	run_default();
	EXPECT(GA_CHECK_PCIE_PATH, GA_VERDICT_WARN,
	       "via root complex pci0000:00 (different root ports)");
	/* ACS redirect at a root port costs less there: WARN, not FAIL. */
	config("pci0000:00/0000:00:02.0", 0x001d, 4096);
	run_default();
	EXPECT(GA_CHECK_ACS, GA_VERDICT_WARN, "0000:00:02.0: ACS ctrl 0x001d, P2P redirect ON");
	EXPECT(GA_CHECK_PAIRING, GA_VERDICT_OK, "nothing to pair");
}
END_TEST

START_TEST(test_two_root_complexes)
{
	rm("/sys/bus/pci/devices/0000:04:00.0");
	pci("pci0000:40/0000:40:01.0", 0x8086, 0x1234, 0x060400, "16.0 GT/s", 16, 1);
	pci("pci0000:40/0000:40:01.0/0000:41:00.0", 0x10de, 0x2330, 0x030200, "16.0 GT/s", 16, 1);
	ck_assert_int_eq(run_default(), GA_VERDICT_FAIL);
	EXPECT(GA_CHECK_PCIE_PATH, GA_VERDICT_FAIL,
	       "different root complexes (pci0000:00, pci0000:40)");
}
END_TEST

START_TEST(test_pairing)
{
	/* A second card and GPU under a second switch: each card keeps its own. */
	pci("pci0000:00/0000:00:03.0", 0x8086, 0x1234, 0x060400, "16.0 GT/s", 16, 0);
	pci("pci0000:00/0000:00:03.0/0000:81:00.0", 0x10de, 0x2330, 0x030200, "16.0 GT/s", 16, 0);
	pci("pci0000:00/0000:00:04.0", 0x8086, 0x1234, 0x060400, "16.0 GT/s", 16, 0);
	pci("pci0000:00/0000:00:04.0/0000:82:00.0", 0x1a4a, 0x2030, 0xff0000, "8.0 GT/s", 8, 0);
	pci("pci0000:00/0000:00:03.0/0000:81:00.1", 0x1a4a, 0x2030, 0xff0000, "8.0 GT/s", 8, 0);
	run_default();
	EXPECT(GA_CHECK_PAIRING, GA_VERDICT_WARN, "card 0000:03:00.0 -> GPU 0000:04:00.0 (4 hops");
	EXPECT(GA_CHECK_PAIRING, GA_VERDICT_WARN, "card 0000:81:00.1 -> GPU 0000:81:00.0 (2 hops");
	/* The third card only reaches a GPU through the root complex. */
	EXPECT(GA_CHECK_PAIRING, GA_VERDICT_WARN, "card 0000:82:00.0 -> GPU");
	EXPECT(GA_CHECK_PAIRING, GA_VERDICT_WARN, "via root complex pci0000:00");
	EXPECT(GA_CHECK_CARD, GA_VERDICT_OK, "one of 3 cards");
	rm("/sys/bus/pci/devices/0000:82:00.0");
	run_default();
	EXPECT(GA_CHECK_PAIRING, GA_VERDICT_OK, "card 0000:81:00.1 -> GPU 0000:81:00.0");
}
END_TEST

START_TEST(test_iommu)
{
	put("/sys/class/iommu/dmar0/x", "\n");
	put("/sys/kernel/iommu_groups/7/type", "DMA-FQ\n");
	put("/sys/kernel/iommu_groups/7/devices/0000:03:00.0", "\n");
	link_to("../../../../kernel/iommu_groups/7", "/sys/devices/" CARD "/iommu_group");
	ck_assert_int_eq(run_default(), GA_VERDICT_FAIL);
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_FAIL,
	       "card 0000:03:00.0 in group 7 (1 device), type DMA-FQ");
	ck_assert_ptr_nonnull(strstr(res[GA_CHECK_IOMMU].todo, "iommu=pt"));
	put("/sys/kernel/iommu_groups/7/type", "identity\n");
	run_default();
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_OK, "type identity");
	rm("/sys/kernel/iommu_groups/7/type");
	run_default();
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_WARN, "type could not tell");
	rm("/sys/devices/" CARD "/iommu_group");
	run_default();
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_WARN,
	       "could not tell: card 0000:03:00.0 has no iommu_group");
}
END_TEST

/* Inside a virtual machine the host's IOMMU translates and cannot be seen:
 * no IOMMU, or an identity group, in the guest is not OK there.  Told by
 * the CPU's hypervisor flag, DMI, or Xen's /sys/hypervisor. */
START_TEST(test_iommu_vm)
{
	put("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor lahf_lm\n"
			     "processor\t: 1\nflags\t\t: fpu vme sse2 hypervisor lahf_lm\n");
	run_default();
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_WARN,
	       "could not tell: the host's IOMMU, from a VM (cpuinfo hypervisor flag); "
	       "none in the VM");
	ck_assert_ptr_nonnull(strstr(res[GA_CHECK_IOMMU].todo, "on the host: iommu=pt"));
	put("/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme sse2 lahf_lm\n");
	run_default();
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_OK, "no IOMMU in use");
	put("/sys/class/dmi/id/sys_vendor", "QEMU\n");
	run_default();
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_WARN, "from a VM (DMI sys_vendor QEMU)");
	rm("/sys/class/dmi");
	put("/sys/hypervisor/type", "xen\n");
	run_default();
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_WARN, "from a VM (/sys/hypervisor/type xen)");
	/* An IOMMU of the guest's own: identity there still leaves the host's. */
	put("/sys/class/iommu/dmar0/x", "\n");
	put("/sys/kernel/iommu_groups/7/type", "identity\n");
	put("/sys/kernel/iommu_groups/7/devices/0000:03:00.0", "\n");
	link_to("../../../../kernel/iommu_groups/7", "/sys/devices/" CARD "/iommu_group");
	run_default();
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_WARN,
	       "type identity; could not tell: the host's IOMMU, from a VM (/sys/hyp");
	/* ... and DMA there is the guest translating: a fact. */
	put("/sys/kernel/iommu_groups/7/type", "DMA\n");
	run_default();
	EXPECT(GA_CHECK_IOMMU, GA_VERDICT_FAIL,
	       "type DMA: the card's DMA addresses are translated (in this VM)");
}
END_TEST

START_TEST(test_links)
{
	put("/sys/devices/" CARD "/current_link_speed", "2.5 GT/s PCIe\n");
	put("/sys/devices/" CARD "/current_link_width", "1\n");
	put("/sys/devices/" DSP_C "/max_link_width", "4\n");
	run_default();
	EXPECT(GA_CHECK_LINK_CARD, GA_VERDICT_WARN,
	       "Gen1 x1 (2.5 GT/s PCIe), can do Gen3 x8: trained below");
	EXPECT(GA_CHECK_LINK_CARD, GA_VERDICT_WARN, "its port 0000:02:01.0 can do only Gen4 x4");
	put("/sys/devices/" CARD "/current_link_width", "0\n");
	ck_assert_int_eq(run_default(), GA_VERDICT_FAIL);
	EXPECT(GA_CHECK_LINK_CARD, GA_VERDICT_FAIL, "link down");
	put("/sys/devices/" GPU "/current_link_speed", "Unknown\n");
	run_default();
	EXPECT(GA_CHECK_LINK_GPU, GA_VERDICT_WARN, "could not tell: speed or width unknown");
	rm("/sys/devices/" GPU "/max_link_width");
	run_default();
	EXPECT(GA_CHECK_LINK_GPU, GA_VERDICT_WARN,
	       "GPU 0000:04:00.0: could not tell (No such file");
}
END_TEST

/* The link as the metrics read it (ga_platform_link): all four values,
 * "Unknown" speed and a missing file left at "could not tell", never a
 * number; the card found from its /dev node, an emulated card told apart. */
START_TEST(test_link_values)
{
	struct ga_pci_link l;
	char bdf[16];

	put("/sys/devices/" CARD "/current_link_speed", "2.5 GT/s PCIe\n");
	put("/sys/devices/" CARD "/current_link_width", "1\n");
	ck_assert_int_eq(ga_platform_link(root, "0000:03:00.0", &l), 0);
	ck_assert_str_eq(l.bdf, "0000:03:00.0");
	ck_assert(l.speed == 2.5 && l.max_speed == 8.0);
	ck_assert_int_eq(l.width, 1);
	ck_assert_int_eq(l.max_width, 8);
	put("/sys/devices/" CARD "/current_link_speed", "Unknown\n");
	put("/sys/devices/" CARD "/current_link_width", "0\n");
	ck_assert_int_eq(ga_platform_link(root, "0000:03:00.0", &l), -ENODATA);
	ck_assert(l.speed == 0 && l.max_speed == 8.0);
	ck_assert_int_eq(l.width, 0); /* link down: the kernel's 0, a fact */
	rm("/sys/devices/" CARD "/max_link_width");
	ck_assert_int_eq(ga_platform_link(root, "0000:03:00.0", &l), -ENODATA);
	ck_assert_int_eq(l.max_width, -1);
	ck_assert_int_eq(ga_platform_link(root, "0000:0f:00.0", &l), -ENOENT);
	ck_assert(l.speed == 0 && l.max_speed == 0 && l.width == -1 && l.max_width == -1);
	ck_assert_int_eq(ga_platform_link(root, "not-a-bdf", &l), -EINVAL);
	ck_assert_int_eq(ga_platform_card_pci(root, "/dev/gpuasync_0", bdf, sizeof(bdf)), 0);
	ck_assert_str_eq(bdf, "0000:03:00.0");
	ck_assert_int_eq(ga_platform_card_pci(root, "0000:04:00.0", bdf, sizeof(bdf)), 0);
	ck_assert_str_eq(bdf, "0000:04:00.0");
	ck_assert_int_eq(ga_platform_card_pci(root, "/dev/nothing_0", bdf, sizeof(bdf)), -ENOENT);
	put("/sys/class/gpuasync/gpuasync_emu0/version", "4\n");
	ck_assert_int_eq(ga_platform_card_pci(root, "/dev/gpuasync_emu0", bdf, sizeof(bdf)),
			 -ENODEV);
}
END_TEST

START_TEST(test_numa)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;

	put("/sys/devices/system/node/node0/cpulist", "0-3\n");
	put("/sys/devices/system/node/node1/cpulist", "4-7\n");
	o.open_device = 0;
	o.cpus = "0-3";
	run(&o);
	EXPECT(GA_CHECK_NUMA, GA_VERDICT_OK,
	       "2 nodes; card on node 0, GPU on node 0, this process may run on node 0");
	o.cpus = "2-5";
	run(&o);
	EXPECT(GA_CHECK_NUMA, GA_VERDICT_WARN, "may run on nodes 0,1");
	ck_assert_ptr_nonnull(strstr(res[GA_CHECK_NUMA].todo, "numactl --cpunodebind=0"));
	o.cpus = "0-3";
	put("/sys/devices/" GPU "/numa_node", "1\n");
	run(&o);
	EXPECT(GA_CHECK_NUMA, GA_VERDICT_WARN, "card and GPU on different nodes");
	put("/sys/devices/" CARD "/numa_node", "-1\n");
	run(&o);
	EXPECT(GA_CHECK_NUMA, GA_VERDICT_WARN,
	       "could not tell: the firmware gave no node (-1); 2 nodes; card on node -1");
	/* One node: -1 is a fact on one socket, unknown on two seen as one. */
	rm("/sys/devices/system/node/node1");
	put("/sys/devices/system/node/node0/cpulist", "0-7\n");
	put("/sys/devices/system/cpu/cpu0/topology/physical_package_id", "0\n");
	put("/sys/devices/system/cpu/cpu1/topology/physical_package_id", "0\n");
	run(&o);
	EXPECT(GA_CHECK_NUMA, GA_VERDICT_OK, "card on node -1, GPU on node 1");
	EXPECT(GA_CHECK_NUMA, GA_VERDICT_OK, "(-1 on one socket, one node: nothing to choose)");
	put("/sys/devices/system/cpu/cpu1/topology/physical_package_id", "1\n");
	run(&o);
	EXPECT(GA_CHECK_NUMA, GA_VERDICT_WARN, "could not tell: 2 sockets seen as one node");
	rm("/sys/devices/system/cpu");
	run(&o);
	EXPECT(GA_CHECK_NUMA, GA_VERDICT_WARN,
	       "could not tell: node -1 on one node, and the sockets are not readable");
	/* No card: nothing to place (the GPU machine without a card said OK). */
	rm("/sys/devices/" CARD);
	rm("/sys/bus/pci/devices/0000:03:00.0");
	rm("/sys/class/gpuasync");
	run(&o);
	EXPECT(GA_CHECK_NUMA, GA_VERDICT_WARN, "could not tell: no card to place");
	EXPECT(GA_CHECK_PCIE_PATH, GA_VERDICT_WARN, "could not tell: no card");
	EXPECT(GA_CHECK_CARD_DRIVER, GA_VERDICT_WARN, "could not tell: no card");
	EXPECT(GA_CHECK_PIN_PATH, GA_VERDICT_WARN, "could not tell: no card");
	EXPECT(GA_CHECK_PAIRING, GA_VERDICT_WARN, "could not tell: no card");
	EXPECT(GA_CHECK_CARD, GA_VERDICT_FAIL, "no card");
}
END_TEST

START_TEST(test_bar1)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;

	o.open_device = 0;
	o.buffer_bytes = 64ull << 30;
	ck_assert_int_eq(run(&o), GA_VERDICT_FAIL);
	EXPECT(GA_CHECK_BAR1, GA_VERDICT_FAIL, "BAR1: 32 GiB, buffers want 64 GiB");
	put("/sys/devices/" GPU "/resource",
	    "0x00000000f0000000 0x00000000f0ffffff 0x0000000000040200\n"
	    "0x00000000e0000000 0x00000000efffffff 0x000000000014220c\n");
	o.buffer_bytes = 0;
	run(&o);
	EXPECT(GA_CHECK_BAR1, GA_VERDICT_WARN, "BAR1: 256 MiB: a small window");
	/* A 64-bit BAR0 takes two lines: BAR1 is then the second memory region
	 * on line 2 (the H200's resource file, 256 GiB). */
	put("/sys/devices/" GPU "/resource",
	    "0x0000104002000000 0x0000104002ffffff 0x000000000014220c\n"
	    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
	    "0x0000100000000000 0x0000103fffffffff 0x000000000014220c\n"
	    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
	    "0x0000104000000000 0x0000104001ffffff 0x000000000014220c\n");
	run(&o);
	EXPECT(GA_CHECK_BAR1, GA_VERDICT_OK, "BAR1: 256 GiB");
	put("/sys/devices/" GPU "/resource", "garbage\n");
	run(&o);
	EXPECT(GA_CHECK_BAR1, GA_VERDICT_WARN, "could not tell: no memory BAR1");
}
END_TEST

START_TEST(test_nvidia)
{
	put("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  "
					   "535.104.05  Sat Aug 19 01:15:15 UTC 2023\n");
	run_default();
	EXPECT(GA_CHECK_NVIDIA, GA_VERDICT_WARN, "proprietary kernel module, version 535.104.05");
	EXPECT(GA_CHECK_PIN_PATH, GA_VERDICT_OK,
	       "p2p (the driver pins GPU memory with nvidia_p2p_get_pages): dma-buf needs the open "
	       "NVIDIA module");
	/* 0 on R535: only the legacy API needs it (seen on the H200 with 580,
	 * where the stream-memop consumer runs with the parameter 0). */
	put("/proc/driver/nvidia/params",
	    "EnableStreamMemOPs: 0\nRegistryDwords: \"RMForceX=1;PeerMappingOverride=1\"\n");
	run_default();
	EXPECT(GA_CHECK_STREAM_MEMOPS, GA_VERDICT_OK,
	       "EnableStreamMemOPs: 0, PeerMappingOverride 1 (/proc/driver/nvidia/params): only "
	       "CUDA's legacy stream memory API needs EnableStreamMemOPs; driver 535.104.05 has "
	       "the current one on by default");
	/* Without PeerMappingOverride the GPU cannot store to the card's registers. */
	put("/proc/driver/nvidia/params", "EnableStreamMemOPs: 0\nRegistryDwords: \"\"\n");
	run_default();
	EXPECT(GA_CHECK_STREAM_MEMOPS, GA_VERDICT_WARN, "PeerMappingOverride 0 (unset)");
	EXPECT(GA_CHECK_STREAM_MEMOPS, GA_VERDICT_WARN, "cannot map the card's registers");
	ck_assert_ptr_nonnull(strstr(res[GA_CHECK_STREAM_MEMOPS].todo, "PeerMappingOverride=1"));
	put("/proc/driver/nvidia/params", "EnableStreamMemOPs: 0\nPeerMappingOverride: 0\n");
	run_default();
	EXPECT(GA_CHECK_STREAM_MEMOPS, GA_VERDICT_WARN, "PeerMappingOverride 0 (/proc");
	/* 0 on a driver before R515: the doorbell wait is refused. */
	put("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  "
					   "470.223.02  Sat Oct  7 15:35:11 UTC 2023\n");
	run_default();
	EXPECT(GA_CHECK_STREAM_MEMOPS, GA_VERDICT_WARN, "EnableStreamMemOPs: 0");
	/* Only the module parameter file left. */
	rm("/proc/driver/nvidia/params");
	put("/sys/module/nvidia/parameters/NVreg_EnableStreamMemOPs", "1\n");
	put("/sys/module/nvidia/parameters/NVreg_RegistryDwords", "PeerMappingOverride=1;\n");
	run_default();
	EXPECT(GA_CHECK_STREAM_MEMOPS, GA_VERDICT_OK,
	       "NVreg_EnableStreamMemOPs=1, PeerMappingOverride 1 (/sys/module/nvidia/parameters)");
	/* Unreadable: a directory where the file should be. */
	rm("/proc/driver/nvidia/version");
	rm("/sys/module/nvidia/version");
	put("/proc/driver/nvidia/version/x", "\n");
	run_default();
	EXPECT(GA_CHECK_NVIDIA, GA_VERDICT_WARN,
	       "could not tell: /proc/driver/nvidia/version: Is a directory");
	/* No driver at all. */
	rm("/proc/driver/nvidia");
	rm("/sys/module/nvidia");
	put("/sys/module/nv_p2p_stub/refcnt", "0\n");
	ck_assert_int_eq(run_default(), GA_VERDICT_FAIL);
	EXPECT(GA_CHECK_NVIDIA, GA_VERDICT_FAIL, "no NVIDIA driver loaded");
	EXPECT(GA_CHECK_NVIDIA, GA_VERDICT_FAIL, "nv_p2p_stub");
	EXPECT(GA_CHECK_STREAM_MEMOPS, GA_VERDICT_WARN, "could not tell");
	EXPECT(GA_CHECK_PIN_PATH, GA_VERDICT_FAIL, "no NVIDIA driver to pin with");
}
END_TEST

START_TEST(test_dmabuf)
{
	rm("/sys/kernel/dmabuf");
	run_default();
	EXPECT(GA_CHECK_DMABUF, GA_VERDICT_WARN,
	       "could not tell: no dma-buf files; /proc/config.gz or /proc/sys/kernel/osrelease: "
	       "No such file");
	put("/proc/sys/kernel/osrelease", "6.1.0-99-amd64\n");
	put("/boot/config-6.1.0-99-amd64", "CONFIG_X=y\n# CONFIG_DMA_SHARED_BUFFER is not set\n");
	run_default();
	EXPECT(GA_CHECK_DMABUF, GA_VERDICT_WARN,
	       "no dma-buf (/boot/config-6.1.0-99-amd64: CONFIG_DMA_SHARED_BUFFER=n)");
	EXPECT(GA_CHECK_PIN_PATH, GA_VERDICT_OK, "p2p");
	put("/boot/config-6.1.0-99-amd64", "CONFIG_DMA_SHARED_BUFFER=y\n");
	run_default();
	EXPECT(GA_CHECK_DMABUF, GA_VERDICT_OK, "CONFIG_DMA_SHARED_BUFFER=y");
	EXPECT(GA_CHECK_PIN_PATH, GA_VERDICT_OK, "dmabuf");
	/* Not named at all: nothing selected it. */
	put("/boot/config-6.1.0-99-amd64", "CONFIG_X=y\n");
	run_default();
	EXPECT(GA_CHECK_DMABUF, GA_VERDICT_WARN,
	       "no dma-buf (/boot/config-6.1.0-99-amd64: no CONFIG_DMA_SHARED_BUFFER)");
	/* /proc/config.gz (CONFIG_IKCONFIG_PROC) first: it is the running kernel's. */
	{
		char cmd[PATH_MAX + 128];

		snprintf(cmd, sizeof(cmd),
			 "printf 'CONFIG_A=y\\nCONFIG_DMA_SHARED_BUFFER=y\\n' | gzip >%s/proc/config.gz",
			 root);
		ck_assert_int_eq(system(cmd), 0);
		run_default();
		EXPECT(GA_CHECK_DMABUF, GA_VERDICT_OK,
		       "dma-buf supported (/proc/config.gz: CONFIG_DMA_SHARED_BUFFER=y)");
		snprintf(cmd, sizeof(cmd),
			 "printf '# CONFIG_DMA_SHARED_BUFFER is not set\\n' | gzip >%s/proc/config.gz",
			 root);
		ck_assert_int_eq(system(cmd), 0);
		run_default();
		EXPECT(GA_CHECK_DMABUF, GA_VERDICT_WARN,
		       "no dma-buf (/proc/config.gz: CONFIG_DMA_SHARED_BUFFER=n)");
	}
}
END_TEST

START_TEST(test_datadev)
{
	rm("/sys/class/gpuasync");
	bind("0000:03:00.0", "datadev");
	put("/proc/datadev_0", "PCIe[BUS:NUM:SLOT.FUNC] : 0000:03:00.0\n"
			       "---------- Firmware Axi Version -----------\n"
			       "     Firmware Version : 0x3010000\n"
			       "         GPU Async En : 1\n"
			       "---------------- DataGPU State ----------------\n"
			       " GpuAsyncCore Version : 4\n"
			       "-------- DMA Kernel Driver General --------\n"
			       "     GPUAsync Support : Enabled\n");
	run_default();
	EXPECT(GA_CHECK_CARD, GA_VERDICT_OK, "driver datadev as datadev_0");
	EXPECT(GA_CHECK_CARD_DRIVER, GA_VERDICT_OK,
	       "firmware 0x3010000, GPU Async En 1, GpuAsyncCore version 4, driver GPUAsync "
	       "Support Enabled");
	EXPECT(GA_CHECK_PIN_PATH, GA_VERDICT_OK,
	       "p2p (the driver pins GPU memory with nvidia_p2p_get_pages): datadev has no "
	       "dma-buf");
	put("/proc/datadev_0", "PCIe[BUS:NUM:SLOT.FUNC] : 0000:03:00.0\n"
			       "     Firmware Version : 0x3010000\n"
			       "         GPU Async En : 0\n"
			       "     GPUAsync Support : Disabled\n");
	ck_assert_int_eq(run_default(), GA_VERDICT_FAIL);
	EXPECT(GA_CHECK_CARD_DRIVER, GA_VERDICT_FAIL, "GPU Async En 0");
	EXPECT(GA_CHECK_PIN_PATH, GA_VERDICT_FAIL, "built without GPU support");
}
END_TEST

START_TEST(test_card_driver)
{
	put("/sys/class/gpuasync/gpuasync_0/gpu_enabled", "0\n");
	ck_assert_int_eq(run_default(), GA_VERDICT_FAIL);
	EXPECT(GA_CHECK_CARD_DRIVER, GA_VERDICT_FAIL, "GPU async off");
	put("/sys/class/gpuasync/gpuasync_0/gpu_enabled", "1\n");
	put("/sys/class/gpuasync/gpuasync_0/version", "9\n");
	run_default();
	EXPECT(GA_CHECK_CARD_DRIVER, GA_VERDICT_FAIL, "GpuAsyncCore version 9");
	rm("/sys/class/gpuasync/gpuasync_0/version");
	run_default();
	EXPECT(GA_CHECK_CARD_DRIVER, GA_VERDICT_WARN, "gpuasync_0: could not tell");
	rm("/sys/devices/" CARD "/driver");
	run_default();
	EXPECT(GA_CHECK_CARD, GA_VERDICT_FAIL, "no driver bound");
	EXPECT(GA_CHECK_CARD_DRIVER, GA_VERDICT_FAIL, "no driver bound to the card");
}
END_TEST

/* ---- bad input: nothing crashes, nothing guesses OK -------------------------------- */

START_TEST(test_vanished)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;

	o.open_device = 0;
	o.card = "0000:09:00.0"; /* named, but not on the bus */
	o.gpus = "0000:04:00.0,0000:0a:00.0";
	ck_assert_int_eq(run(&o), GA_VERDICT_FAIL);
	EXPECT(GA_CHECK_CARD, GA_VERDICT_FAIL, "card 0000:09:00.0: not on the PCI bus");
	EXPECT(GA_CHECK_GPU, GA_VERDICT_FAIL, "GPU 0000:0a:00.0: not on the PCI bus");
	EXPECT(GA_CHECK_PCIE_PATH, GA_VERDICT_WARN, "could not tell: no card");
	/* Without a card the first GPU's own link and BAR1 are still judged
	 * (the GPU machine once read "could not tell: no GPU" beside "1 GPU"). */
	ck_assert_msg(!strstr(res[GA_CHECK_LINK_GPU].found, "no GPU"), "link_gpu: %s",
		      res[GA_CHECK_LINK_GPU].found);
	ck_assert_msg(strstr(res[GA_CHECK_BAR1].found, "BAR1"), "bar1: %s",
		      res[GA_CHECK_BAR1].found);
	o.card = "/dev/nothing_0";
	run(&o);
	EXPECT(GA_CHECK_CARD, GA_VERDICT_FAIL, "no card /dev/nothing_0: no such file");
	/* A node that is there, but no class or proc entry says which card. */
	put("/dev/odd_0", "\n");
	o.card = "/dev/odd_0";
	run(&o);
	EXPECT(GA_CHECK_CARD, GA_VERDICT_WARN, "could not tell: which PCI device /dev/odd_0 is");
	/* A device node that is not a card: the stale check cannot open it. */
	o.card = "/dev/gpuasync_0";
	o.open_device = 1;
	put("/dev/gpuasync_0", "not a device\n");
	run(&o);
	EXPECT(GA_CHECK_CARD, GA_VERDICT_OK, "driver gpuasync as gpuasync_0");
	EXPECT(GA_CHECK_STALE, GA_VERDICT_WARN, "could not tell: opening /dev/gpuasync_0");
}
END_TEST

START_TEST(test_empty_root)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;
	char line[2048];

	snprintf(root, sizeof(root), "/tmp/ga-platform-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	ck_assert_int_eq(run(&o), GA_VERDICT_FAIL);
	for (int i = 0; i < GA_CHECK_COUNT; i++) {
		/* Without a machine to look at, only "no IOMMU" and "no NUMA" are facts. */
		if (i != GA_CHECK_IOMMU && i != GA_CHECK_NUMA)
			ck_assert_msg(res[i].verdict != GA_VERDICT_OK, "%s said OK on nothing",
				      ga_check_info(i)->name);
		ck_assert_int_gt(ga_check_format(&res[i], line, sizeof(line)), 10);
		ck_assert_ptr_nonnull(strstr(line, ga_check_info(i)->name));
	}
	EXPECT(GA_CHECK_CARD, GA_VERDICT_FAIL, "no card");
	EXPECT(GA_CHECK_GPU, GA_VERDICT_WARN, "could not tell");
	ck_assert_int_eq(ga_platform_run(NULL, res), -EINVAL);
	ck_assert_int_eq(ga_platform_run(&o, NULL), -EINVAL);
	teardown();
}
END_TEST

/* Options a caller got wrong: refused with the reason, nothing run. */
START_TEST(test_bad_options)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;

	o.open_device = 0;
	o.gpus = "0000:04:00.0,nonsense";
	ck_assert_int_eq(run(&o), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "GPU 'nonsense': not a PCI address"));
	o.gpus = ",";
	ck_assert_int_eq(run(&o), -EINVAL);
	o.gpus = NULL;
	o.cpus = "zero";
	ck_assert_int_eq(run(&o), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "CPU list 'zero': not a list"));
	o.cpus = "";
	ck_assert_int_eq(run(&o), -EINVAL);
	/* Beyond the machine's CPUs, when the tree says which it has. */
	o.cpus = "99";
	ck_assert_int_eq(run(&o), GA_VERDICT_WARN); /* no cpu/online: the form only */
	put("/sys/devices/system/cpu/online", "0-7\n");
	ck_assert_int_eq(run(&o), -EINVAL);
	ck_assert_ptr_nonnull(strstr(ga_last_error(), "CPU 99 is not one of this machine's"));
	o.cpus = "0-3,7";
	ck_assert_int_eq(run(&o), GA_VERDICT_WARN);
	o.cpus = NULL;
	o.root = "/nonexistent/ga-root";
	ck_assert_int_eq(ga_platform_run(&o, res), -ENOENT);
	o.root = "/etc/passwd";
	ck_assert_int_eq(ga_platform_run(&o, res), -ENOTDIR);
}
END_TEST

/* The short line: the verdict, the name, what was found cut where a part
 * ends; the whole found text with --explain's form. */
START_TEST(test_format)
{
	struct ga_check_result r = {.id = GA_CHECK_PCIE_PATH, .verdict = GA_VERDICT_OK};
	char line[2048];
	int n;

	snprintf(r.found, sizeof(r.found), "short");
	ck_assert_int_eq(ga_check_format_short(&r, line, sizeof(line)), 22);
	ck_assert_str_eq(line, "OK   pcie_path: short\n");
	snprintf(r.found, sizeof(r.found),
		 "nearest: 0000:04:00.0; GPU 0000:04:00.0: 4 hops, via switch port 0000:01:00.0; "
		 "GPU 0000:06:00.0: 6 hops, via root complex pci0000:00 (different root ports)");
	n = ga_check_format_short(&r, line, sizeof(line));
	ck_assert_int_le(n, GA_CHECK_SHORT_WIDTH + 1);
	ck_assert_str_eq(line, "OK   pcie_path: nearest: 0000:04:00.0; GPU 0000:04:00.0: 4 hops "
			       "... (--explain)\n");
	snprintf(r.todo, sizeof(r.todo), "move it");
	ga_check_format(&r, line, sizeof(line));
	ck_assert_ptr_nonnull(strstr(line, "(different root ports)\n     why: peer-to-peer"));
	ck_assert_ptr_nonnull(strstr(line, "\n     do:  move it\n"));
}
END_TEST

START_TEST(test_table)
{
	/* Every row named, explained, and named once. */
	for (int i = 0; i < GA_CHECK_COUNT; i++) {
		const struct ga_check_info *a = ga_check_info(i);

		ck_assert_ptr_nonnull(a);
		ck_assert(a->name && a->title && a->why && a->fixes);
		ck_assert_int_gt(strlen(a->why), 20);
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(a->name, ga_check_info(j)->name);
	}
	ck_assert_ptr_null(ga_check_info(GA_CHECK_COUNT));
	ck_assert_str_eq(ga_verdict_name(GA_VERDICT_FAIL), "FAIL");
}
END_TEST

/* docs/platform.md lists every check with the table's texts (regenerated by
 * gpuasyncfs --check --list); the source tree is found from this file's path. */
START_TEST(test_docs)
{
	const char *path = doc_file_path("GA_PLATFORM_DOC", __FILE__, "docs/platform.md");
	char *doc = doc_file_read(path);

	ck_assert_msg(doc != NULL, "cannot read %s", path);
	for (int i = 0; i < GA_CHECK_COUNT; i++) {
		const struct ga_check_info *a = ga_check_info(i);
		char head[256];

		snprintf(head, sizeof(head), "### `%s`: %s\n", a->name, a->title);
		ck_assert_msg(strstr(doc, head),
			      "docs/platform.md lacks '%s' (gpuasyncfs --check --list)", head);
		ck_assert_msg(strstr(doc, a->why + 1), "docs/platform.md: %s's why differs",
			      a->name);
		ck_assert_msg(strstr(doc, a->fixes), "docs/platform.md: %s's verdicts differ",
			      a->name);
	}
	free(doc);
}
END_TEST

/* ---- device/topology: the pairing per card, by the Slurm gres rule ------------------------ */

static struct ga_topology topo;

static int topology(const char *card, const char *gpus, const char *paired)
{
	struct ga_platform_opts o = GA_PLATFORM_OPTS_DEFAULT;

	o.root = root;
	o.card = card;
	o.gpus = gpus;
	o.cuda = 0;
	o.open_device = 0;
	memset(&topo, 0, sizeof(topo));
	topo.paired = paired;
	topo.paired_from = "given";
	return ga_platform_topology(&o, &topo);
}

#define TOPO_HAS(needle)                                                                          \
	ck_assert_msg(strstr(topo.text, needle), "'%s' not in:\n%s", needle, topo.text)

/* One CPU's topology files: its hyperthread siblings and socket. */
static void cpu(int n, const char *siblings, int socket)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", n);
	put(rel, "%s\n", siblings);
	snprintf(rel, sizeof(rel), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", n);
	put(rel, "%d\n", socket);
}

static void nvidia_gpu(const char *bdf, int minor, const char *excluded, const char *bus)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "/proc/driver/nvidia/gpus/%s/information", bdf);
	put(rel, "Model: \t\t NVIDIA H200 NVL\nIRQ:   \t\t 180\nDevice Minor: \t %d\n"
		 "Bus Type: \t %s\nGPU Excluded:\t %s\n",
	    minor, bus, excluded);
}

static void datadev(int n, const char *bdf, int gpu_en)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "/proc/datadev_%d", n);
	put(rel,
	    "PCIe[BUS:NUM:SLOT.FUNC] : %s\n         Build String : DrpTDet: Vivado v2023.1\n"
	    "           GPU Async En : %d\n         GPUAsync Support : Enabled\n",
	    bdf, gpu_en);
}

START_TEST(test_topology)
{
	/* One card and one GPU under one switch, no CPU topology to read. */
	ck_assert_int_eq(topology(NULL, NULL, NULL), 0);
	TOPO_HAS("verdict   OK\n");
	TOPO_HAS("gpu       0000:04:00.0\n");
	TOPO_HAS("why       same PCIe switch: both below switch port 0000:01:00.0, shared "
		 "ancestry depth 3\n");
	TOPO_HAS("card_path pci0000:00 > 0000:00:01.0 > 0000:01:00.0 > 0000:02:01.0 > "
		 "0000:03:00.0\n");
	TOPO_HAS("card_numa node 0, local CPUs ? (no local_cpulist)\n");
	TOPO_HAS("cores     ? (could not tell");
	TOPO_HAS("gres      Name=gpu Type=dd03 (no File=");
	TOPO_HAS("doctor    GPU 0000:04:00.0 (the pairing check, 4 hops): the same\n");
	TOPO_HAS("card      0000:03:00.0 (no /proc/datadev_N: gen_gres_conf.py does not see it)");

	/* Two sockets of two cores of two threads, numbered as Linux does
	 * (siblings 0,4 1,5 on socket 0; 2,6 3,7 on socket 1); the GPU's
	 * NUMA node holds one core of socket 1: Slurm gets all of socket 1,
	 * in core numbers. */
	cpu(0, "0,4", 0), cpu(4, "0,4", 0), cpu(1, "1,5", 0), cpu(5, "1,5", 0);
	cpu(2, "2,6", 1), cpu(6, "2,6", 1), cpu(3, "3,7", 1), cpu(7, "3,7", 1);
	put("/sys/devices/" GPU "/local_cpulist", "2,6\n");
	put("/sys/devices/" GPU "/numa_node", "3\n");
	put("/sys/devices/" CARD "/local_cpulist", "2,6\n");
	put("/sys/devices/" CARD "/numa_node", "3\n");
	nvidia_gpu("0000:04:00.0", 3, "No", "PCIe");
	datadev(1, "0000:03:00.0", 1);
	ck_assert_int_eq(topology(NULL, NULL, NULL), 0);
	TOPO_HAS("verdict   OK\n");
	TOPO_HAS("gpu_numa  node 3, local CPUs 2,6\n");
	TOPO_HAS("cores     2-3: every core of socket 1, where the GPU's local CPUs are\n");
	TOPO_HAS("gres      Name=gpu Type=dd03 File=/dev/nvidia3 Cores=2-3\n");
	TOPO_HAS("card      0000:03:00.0 datadev_1, GPU Async En 1\n");

	/* A second card (first in the rule's order, datadev_0) alone under a
	 * root port, and a second GPU under another: to that card both GPUs
	 * are depth 1 and the lower address would win, but the card that
	 * shares a switch with GPU 04 takes it in the first pass. */
	pci("pci0000:00/0000:00:03.0", 0x8086, 0x1234, 0x060400, "16.0 GT/s", 16, 0);
	pci("pci0000:00/0000:00:03.0/0000:81:00.0", 0x10de, 0x2330, 0x030200, "16.0 GT/s", 16, 0);
	pci("pci0000:00/0000:00:04.0", 0x8086, 0x1234, 0x060400, "16.0 GT/s", 16, 0);
	pci("pci0000:00/0000:00:04.0/0000:82:00.0", 0x1a4a, 0x2030, 0xff0000, "8.0 GT/s", 8, 0);
	nvidia_gpu("0000:81:00.0", 0, "No", "PCIe");
	datadev(0, "0000:82:00.0", 1);
	ck_assert_int_eq(topology("0000:82:00.0", NULL, NULL), 0);
	TOPO_HAS("verdict   WARN: not behind one switch with its GPU (depth 1)\n");
	TOPO_HAS("gpu       0000:81:00.0\n");
	TOPO_HAS("why       root complex only (pci0000:00, different root ports): shared "
		 "ancestry depth 1");
	TOPO_HAS("gres      Name=gpu Type=dd82 File=/dev/nvidia0\n");
	TOPO_HAS("pairs     0000:82:00.0 -> 0000:81:00.0 (depth 1); 0000:03:00.0 -> "
		 "0000:04:00.0 (depth 3)\n");
	ck_assert_int_eq(topology("/dev/datadev_1", NULL, NULL), 0);
	TOPO_HAS("verdict   OK\n");
	TOPO_HAS("gpu       0000:04:00.0\n");

	/* GPU async off on the first card: the rule offers it nothing. */
	datadev(0, "0000:82:00.0", 0);
	ck_assert_int_eq(topology("0000:82:00.0", NULL, NULL), 0);
	TOPO_HAS("verdict   FAIL: GPU async is off on this card (/proc/datadev_0)");
	TOPO_HAS("gpu       none: GPU Async En is 0 in /proc/datadev_0");
	datadev(0, "0000:82:00.0", 1);

	/* The GPU under the switch excluded by the NVIDIA driver: the card
	 * first in order takes the other one, this card is left without,
	 * where the doctor still picks the nearer. */
	nvidia_gpu("0000:04:00.0", 3, "Yes", "PCIe");
	ck_assert_int_eq(topology("0000:03:00.0", NULL, NULL), 0);
	TOPO_HAS("verdict   FAIL: no GPU for this card; ");
	TOPO_HAS("gpu       none: every GPU went to a card before it in the rule's order\n");
	TOPO_HAS("pairs     0000:82:00.0 -> 0000:81:00.0 (depth 1); 0000:03:00.0 -> none\n");
	TOPO_HAS("skipped   GPU 0000:04:00.0: excluded by the NVIDIA driver\n");
	TOPO_HAS("doctor    GPU 0000:04:00.0 (the pairing check, 4 hops): DIFFERS from the rule\n");
	TOPO_HAS("the doctor's pairing check picks GPU 0000:04:00.0");
	/* Failed but still listed: not PCIe to its driver and no link speed. */
	nvidia_gpu("0000:04:00.0", 3, "No", "PCI");
	rm("/sys/devices/" GPU "/current_link_speed");
	ck_assert_int_eq(topology("0000:03:00.0", NULL, NULL), 0);
	TOPO_HAS("skipped   GPU 0000:04:00.0: failed: Bus Type PCI and no link speed");
	/* Either sign alone is not enough. */
	nvidia_gpu("0000:04:00.0", 3, "No", "PCIe");
	ck_assert_int_eq(topology("0000:03:00.0", NULL, NULL), 0);
	TOPO_HAS("gpu       0000:04:00.0\n");

	/* The GPU the card was paired with falls off the bus. */
	ck_assert_int_eq(topology("0000:03:00.0", NULL, "0000:04:00.0"), 0);
	TOPO_HAS("paired    GPU 0000:04:00.0 (given): the same\n");
	rm("/sys/bus/pci/devices/0000:04:00.0");
	ck_assert_int_eq(topology("0000:03:00.0", NULL, "0000:04:00.0"), 0);
	TOPO_HAS("verdict   FAIL: ");
	TOPO_HAS("the paired GPU 0000:04:00.0 is gone from the bus");
	TOPO_HAS("paired    GPU 0000:04:00.0 (given): GONE, not on the PCI bus\n");
	TOPO_HAS("gone      GPU 0000:04:00.0 (listed by the NVIDIA driver) is not on the PCI bus\n");
	TOPO_HAS("gpu       none: every GPU went to a card before it in the rule's order\n");

	/* Bad options are refused as ga_platform_run refuses them. */
	ck_assert_int_eq(topology(NULL, "04:00", NULL), -EINVAL);
}
END_TEST

static Suite *platform_suite(void)
{
	Suite *s =
		suite_of("platform", "platform", 0,
			 SUITE_TESTS({test_table}, {test_docs}, {test_empty_root}, {test_format}));
	/* the rest run on the machine base() builds, removed after each */
	TCase *tc = suite_add_tests(
		s, "machine", 0,
		SUITE_TESTS({test_good}, {test_acs_redirect}, {test_acs_unreadable},
			    {test_root_complex}, {test_link_values}, {test_two_root_complexes},
			    {test_pairing}, {test_iommu}, {test_iommu_vm}, {test_links},
			    {test_numa}, {test_bar1}, {test_nvidia}, {test_dmabuf}, {test_datadev},
			    {test_card_driver}, {test_vanished}, {test_bad_options},
			    {test_topology}));

	tcase_add_checked_fixture(tc, base, teardown);
	return s;
}

int main(void)
{
	return run_suite(platform_suite());
}
