// SPDX-License-Identifier: GPL-2.0
/*
 * kt: the gpuasync.ko suite, run inside the QEMU guest by tests/kmod/init.
 *
 *   kt [-d /dev/gpuasync_emu0] CASE...     run the named cases ("all": all)
 *   kt hold                                register buffers, arm, enable,
 *                                          print "HOLDING", wait for death
 *
 * Every case prints "KTEST ok <case>" or "KTEST FAIL <case>: why" lines;
 * the exit status is the number of failed cases.  "GPU memory" comes from
 * nv_p2p_stub (NVSTUB_ALLOC returns a fake GPU VA plus an mmap offset, so
 * the test reads what the card wrote, as cudaMemcpy would) or from plain
 * host memory.  Register offsets come from the shared register table
 * (core/regs.c is linked in), never from numbers written here; AxiVersion
 * offsets likewise from core/axiversion.c.
 * Waits for the emulated card's thread are bounded polls: they only decide
 * how long a broken driver may take to show it is broken.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuasync/abi.h"
#include "gpuasync/axiversion.h"
#include "gpuasync/prbs.h"
#include "gpuasync/regs.h"
#include "nv_p2p_stub_uapi.h"

#include "kt.h"

const char *dev_path = "/dev/gpuasync_emu0";
static char sys_dir[256];
int case_failed;
const char *case_skipped;

/* ---- reporting ------------------------------------------------------------ */

void fail(const char *fn, int line, const char *fmt, ...)
{
	va_list ap;

	printf("KTEST FAIL %s:%d: ", fn, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	case_failed = 1;
}

/* ---- environment ---------------------------------------------------------- */

int open_card(void)
{
	int fd = open(dev_path, O_RDWR);

	if (fd < 0) {
		printf("KTEST FAIL open %s: %s\n", dev_path, strerror(errno));
		exit(100);
	}
	return fd;
}

int open_stub(void)
{
	int fd = open("/dev/nv_p2p_stub", O_RDWR);

	if (fd < 0) {
		printf("KTEST FAIL open /dev/nv_p2p_stub: %s\n", strerror(errno));
		exit(100);
	}
	return fd;
}

long sys_read(const char *name)
{
	char path[512], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", sys_dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtol(buf, NULL, 0);
}

int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

int sys_gets(const char *name, char *buf, int len)
{
	char path[512];
	FILE *f;
	int ret = -1;

	snprintf(path, sizeof(path), "%s/%s", sys_dir, name);
	f = fopen(path, "r");
	if (f) {
		ret = fgets(buf, len, f) ? 0 : -1;
		fclose(f);
	}
	return ret;
}

int sys_write(const char *name, const char *val)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", sys_dir, name);
	return write_file(path, val);
}

int stub_param(const char *name, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/module/nv_p2p_stub/parameters/%s", name);
	return write_file(path, val);
}

long sys_read_param(const char *name)
{
	char path[256], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/gpuasync/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	if (buf[0] == 'Y' || buf[0] == 'N')
		return buf[0] == 'Y';
	return buf[0] ? strtol(buf, NULL, 0) : -1;
}

/* Does the kernel log hold a line containing @text? */
bool dmesg_has(const char *text)
{
	char rec[2048];
	bool found = false;
	ssize_t n;
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		return false;
	while (!found && ((n = read(fd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE))) {
		if (n <= 0)
			continue; /* EPIPE: records overwritten meanwhile; go on */
		rec[n] = 0;
		found = strstr(rec, text) != NULL;
	}
	close(fd);
	return found;
}

struct nvstub_stats stub_stats(void)
{
	struct nvstub_stats st = { 0 };
	int s = open_stub();

	if (ioctl(s, NVSTUB_STATS, &st))
		printf("KTEST FAIL NVSTUB_STATS: %s\n", strerror(errno));
	close(s);
	return st;
}

/* Wait (bounded) until sysfs @name reaches at least @want. */
long sys_wait(const char *name, long want)
{
	long v = 0;
	int i;

	for (i = 0; i < 4000; i++) { /* 20 s */
		v = sys_read(name);
		if (v >= want)
			break;
		usleep(5000);
	}
	return v;
}

struct gmem galloc(int s, uint64_t size)
{
	struct nvstub_alloc a = { .size = size };
	struct gmem g = { 0 };

	if (ioctl(s, NVSTUB_ALLOC, &a)) {
		printf("KTEST FAIL NVSTUB_ALLOC %llu: %s\n", (unsigned long long)size,
		       strerror(errno));
		return g;
	}
	g.va = a.gpu_va;
	g.size = (size + KB64 - 1) & ~(uint64_t)(KB64 - 1);
	g.map = mmap(NULL, g.size, PROT_READ | PROT_WRITE, MAP_SHARED, s, (off_t)a.mmap_offset);
	if (g.map == MAP_FAILED) {
		printf("KTEST FAIL mmap stub region: %s\n", strerror(errno));
		g.map = NULL;
	}
	return g;
}

void gfree(int s, struct gmem *g)
{
	struct nvstub_range r = { .va = g->va };

	if (g->map)
		munmap(g->map, g->size);
	ioctl(s, NVSTUB_FREE, &r);
	g->map = NULL;
}

int add_buf(int fd, int write, uint64_t va, uint32_t size)
{
	struct GpuNvidiaData d = { .write = (uint32_t)write, .address = va, .size = size };

	return ioctl(fd, GPU_Add_Nvidia_Memory, &d);
}

/* ---- registers through the table ------------------------------------------ */

unsigned int version, max_buffers, ddb;
/* Where the card's GpuAsyncCore sits in BAR0 (sysfs core_offset). */
static uint32_t core_base = 0x28000;
enum ga_layout layout;

uint32_t reg_off(enum ga_reg_id id, unsigned int index)
{
	uint32_t off = 0;

	if (ga_reg_offset(id, layout, version, index, max_buffers, &off))
		printf("KTEST FAIL no offset for %s[%u]\n", ga_regs[id].name, index);
	return off;
}

uint32_t rd_word(int fd, uint32_t core_off)
{
	struct DmaRegisterData r = { .address = core_base + core_off };

	if (ioctl(fd, DMA_Read_Register, &r))
		printf("KTEST FAIL DMA_Read_Register %#x: %s\n", core_off, strerror(errno));
	return r.data;
}

volatile uint32_t *map_core(int fd)
{
	void *p = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, core_base);

	return p == MAP_FAILED ? NULL : p;
}

void wr_word(int fd, uint32_t core_off, uint32_t val)
{
	struct DmaRegisterData r = { .address = core_base + core_off, .data = val };

	if (ioctl(fd, DMA_Write_Register, &r))
		printf("KTEST FAIL DMA_Write_Register %#x: %s\n", core_off, strerror(errno));
}

uint32_t field(int fd, enum ga_reg_id id, unsigned int index)
{
	return ga_reg_field_get(id, layout, rd_word(fd, reg_off(id, index)));
}

uint64_t buf_addr_reg(int fd, bool write, unsigned int i)
{
	return (uint64_t)field(fd, write ? GA_REG_WRITE_ADDR_HI : GA_REG_READ_ADDR_HI, i) << 32 |
	       field(fd, write ? GA_REG_WRITE_ADDR_LO : GA_REG_READ_ADDR_LO, i);
}

int get_table(int fd, struct ga_buffer_entry *e, unsigned int cap)
{
	struct ga_buffer_table t = { .entries = (uintptr_t)e, .capacity = cap };

	if (ioctl(fd, GA_Get_Buffer_Table, &t))
		return -1;
	return (int)t.count;
}

/* Nothing pinned anywhere, no buffers, no owner, addresses clear. */
void check_clean(int fd, const char *why)
{
	struct nvstub_stats st = stub_stats();
	unsigned int i;

	CHECK(st.pins == 0, "%s: %llu pins left", why, (unsigned long long)st.pins);
	CHECK(st.mappings == 0, "%s: %llu mappings left", why, (unsigned long long)st.mappings);
	CHECK(st.stale_dma == 0, "%s: %llu stale DMAs", why, (unsigned long long)st.stale_dma);
	CHECK(get_table(fd, NULL, 0) == 0, "%s: buffers left", why);
	CHECK(sys_read("owner_tgid") == 0, "%s: still owned", why);
	CHECK(sys_read("live_pins") == 0, "%s: driver counts pins", why);
	CHECK(sys_read("live_dmabufs") == 0, "%s: driver holds dma-buf attachments", why);
	CHECK(sys_read("dma_faults") == 0, "%s: the card DMAed outside every buffer", why);
	CHECK(st.dmabufs == 0, "%s: %llu dma-bufs alive", why, (unsigned long long)st.dmabufs);
	for (i = 0; i < max_buffers; i++) {
		CHECK(buf_addr_reg(fd, true, i) == 0, "%s: write address %u not cleared", why, i);
		CHECK(buf_addr_reg(fd, false, i) == 0, "%s: read address %u not cleared", why, i);
	}
}

/* ---- cases ----------------------------------------------------------------- */

static void t_identity(void)
{
	int fd = open_card(), abi;

	CHECK(ioctl(fd, GPU_Is_Gpu_Async_Supp, 0) == 1);
	CHECK((unsigned int)ioctl(fd, GPU_Get_Gpu_Async_Ver, 0) == version);
	CHECK((unsigned int)ioctl(fd, GPU_Get_Max_Buffers, 0) == max_buffers);
	CHECK(ioctl(fd, DMA_Get_Buff_Count, 0) == 0);
	CHECK(ioctl(fd, DMA_Get_Buff_Size, 0) > 0);
	CHECK(ioctl(fd, DMA_Get_Version, 0) == DMA_VERSION);
	abi = ioctl(fd, GA_Get_Abi_Version, 0);
	CHECK(abi >> 16 == GA_ABI_VERSION, "abi %#x", abi);
	CHECK((abi & 0xffff) == (GA_FEAT_REM_BUFFER | GA_FEAT_ARM_MANY | GA_FEAT_BUFFER_TABLE |
				 GA_FEAT_DMABUF | GA_FEAT_MASKED_WRITE));
	CHECK_ERR(ioctl(fd, 0x8000, 0), ENOTTY);
	CHECK_ERR(ioctl(fd, 0x80ff, 0), ENOTTY);
	CHECK_ERR(ioctl(fd, _IOR('x', 1, int), 0), ENOTTY);
	CHECK(field(fd, GA_REG_VERSION, 0) == version);
	CHECK(field(fd, GA_REG_DMA_DATA_BYTES, 0) == ddb);
	close(fd);
}

/* AxiVersion row @id of the card as text (the library's formatting). */
static const char *fw_text(int fd, enum ga_fw_id id)
{
	static char text[GA_FW_TEXT_MAX];
	const struct ga_fw_field *f = &ga_fw_fields[id];
	uint32_t words[64] = { 0 };
	struct DmaRegisterData r;
	unsigned int w;

	for (w = 0; w < f->words; w++) {
		r = (struct DmaRegisterData){ .address = GA_FW_BASE + f->offset + 4 * w };
		CHECK_OK(ioctl(fd, DMA_Read_Register, &r));
		words[w] = r.data;
	}
	if (ga_fw_format(id, words, text, sizeof(text)) < 0)
		snprintf(text, sizeof(text), "(unformattable)");
	return text;
}

static bool all_hex(const char *s, size_t n)
{
	return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

/* One AxiVersion word through the register ioctls (fw_text's path). */
static uint32_t fw_word(int fd, uint32_t off)
{
	struct DmaRegisterData r = { .address = GA_FW_BASE + off };

	CHECK_OK(ioctl(fd, DMA_Read_Register, &r));
	return r.data;
}

static void fw_store(int fd, uint32_t off, uint32_t val)
{
	struct DmaRegisterData r = { .address = GA_FW_BASE + off, .data = val };

	CHECK_OK(ioctl(fd, DMA_Write_Register, &r));
}

/*
 * pyrogue's PcieAxiVersion words (userValues, AxiVersion + 0x400-0x42C),
 * the memory-map version (+0x4FC) of the emulated card: the KCU1500 image of docs/firmware.md §2.5, word by
 * word as that page gives them, the PCIe AXI width being the card's
 * DmaDataBytes; DeviceId is DRIVER_TYPE_ID_G.  Firmware ignores writes
 * to all of them.
 */
static void fw_user_values(int fd)
{
	static const struct {
		uint32_t off, word;
	} e[] = {
		{ 0x400, 8 },		/* DMA_SIZE_G */
		{ 0x404, 1 },		/* reserved */
		{ 0x408, 0 },		/* DRIVER_TYPE_ID_G */
		{ 0x40c, 0 },		/* XIL_DEVICE_G: UltraScale */
		{ 0x410, 250000000 },	/* DMA_CLK_FREQ_C */
		{ 0x414, 1 },		/* BOOT_PROM_G: SPIx8 */
		{ 0x418, 0x10820110 },	/* DMA_AXIS_CONFIG_G */
		{ 0x41c, 0x40000408 },	/* AXI_PCIE_CONFIG_C, data bytes below */
		{ 0x420, 156250000 },	/* AppClkFreq */
		{ 0x424, 0x0000000d },	/* PCIE_HW_TYPE_G: XilinxKcu1500 */
		{ 0x428, 1 },		/* DataGpuEn */
		{ 0x42c, 1 },		/* userValues[11] bit 0: GEN_SYSMON_G */
		{ 0x430, 0 },		/* userValues[12..62]: 0 */
		{ 0x4f8, 0 },
		{ 0x4fc, 1 },		/* userValues[63]: memory-map version 1 */
		{ 0x500, 0 },		/* DeviceId = DRIVER_TYPE_ID_G */
	};
	unsigned int k;

	for (k = 0; k < sizeof(e) / sizeof(e[0]); k++) {
		uint32_t want = e[k].word | (e[k].off == 0x41c ? ddb << 16 : 0);

		CHECK(fw_word(fd, e[k].off) == want, "AxiVersion +%#x reads %#x, want %#x",
		      e[k].off, fw_word(fd, e[k].off), want);
		fw_store(fd, e[k].off, ~want);
		CHECK(fw_word(fd, e[k].off) == want, "AxiVersion +%#x kept a write", e[k].off);
	}
	CHECK(!strcmp(fw_text(fd, GA_FW_HARDWARE_TYPE), "0x00d"));
	CHECK(!strcmp(fw_text(fd, GA_FW_APP_CLOCK_HZ), "156250000"));
}

/* The emulated card's AxiVersion: an identity in SURF's formats, a
 * running uptime, no way to overwrite it, and a ScratchPad that keeps what
 * is written (0 at power-up: "all" runs this case before any other case
 * writes it). */
static void t_firmware(void)
{
	int fd = open_card();
	struct DmaRegisterData r;
	const char *s;
	unsigned long up;
	uint32_t ver;
	int k;

	s = fw_text(fd, GA_FW_GIT_HASH);
	CHECK(all_hex(s, 40), "git_hash %s", s);
	s = fw_text(fd, GA_FW_DNA);
	CHECK(!strncmp(s, "0x", 2) && all_hex(s + 2, 32), "dna %s", s);
	s = fw_text(fd, GA_FW_BUILD_STAMP);
	CHECK(strchr(s, ':') && strstr(s, ", Built ") && strstr(s, " by "), "build_stamp %s", s);
	CHECK(!strcmp(fw_text(fd, GA_FW_GPU_ENABLE), "1"));
	CHECK(strtoul(fw_text(fd, GA_FW_DMA_CLOCK_HZ), NULL, 10) > 0);
	CHECK(strcmp(fw_text(fd, GA_FW_HARDWARE_TYPE), "0x000"));
	fw_user_values(fd);
	s = fw_text(fd, GA_FW_FPGA_VERSION);
	CHECK(strcmp(s, "0x00000000") && strcmp(s, "0xffffffff"), "fpga_version %s", s);
	ver = (uint32_t)strtoul(s, NULL, 16);
	/* uptime moves with time (bounded wait: 3 s) */
	up = strtoul(fw_text(fd, GA_FW_UPTIME), NULL, 10);
	for (k = 0; k < 300 && strtoul(fw_text(fd, GA_FW_UPTIME), NULL, 10) == up; k++)
		usleep(10000);
	CHECK(strtoul(fw_text(fd, GA_FW_UPTIME), NULL, 10) > up, "uptime stuck at %lu", up);
	/* identity is read-only: a write leaves it as it was */
	r = (struct DmaRegisterData){ .address = GA_FW_BASE, .data = 0x12345678 };
	CHECK_OK(ioctl(fd, DMA_Write_Register, &r));
	CHECK((uint32_t)strtoul(fw_text(fd, GA_FW_FPGA_VERSION), NULL, 16) == ver);
	/* ScratchPad: firmware's reset value, then pyrogue's write-verify */
	s = fw_text(fd, GA_FW_SCRATCH_PAD);
	CHECK(!strcmp(s, "0x00000000"), "scratch_pad at power-up %s", s);
	static const uint32_t pat[] = { 0xdeadbeef, 0xffffffff, 0x00000001, 0x5a5aa5a5, 0 };
	for (k = 0; k < (int)(sizeof(pat) / sizeof(pat[0])); k++) {
		fw_store(fd, ga_fw_fields[GA_FW_SCRATCH_PAD].offset, pat[k]);
		CHECK(fw_word(fd, ga_fw_fields[GA_FW_SCRATCH_PAD].offset) == pat[k],
		      "scratch_pad reads %#x after writing %#x",
		      fw_word(fd, ga_fw_fields[GA_FW_SCRATCH_PAD].offset), pat[k]);
		CHECK((uint32_t)strtoul(fw_text(fd, GA_FW_FPGA_VERSION), NULL, 16) == ver);
	}
	/* the reload and reset controls (0x100-0x10C) are not emulated: a
	 * write is dropped, they read 0 as after power-up */
	for (k = 0; k < 4; k++) {
		fw_store(fd, 0x100 + 4 * k, 1);
		CHECK(fw_word(fd, 0x100 + 4 * k) == 0, "AxiVersion +%#x kept a write", 0x100 + 4 * k);
	}
	close(fd);
}

/*
 * rogue's AxiMemMap on this driver (research: drp-and-rogue §2.2): open
 * O_RDWR, DMA_Get_Version at least 0x06 and equal to DMA_VERSION (rogue's
 * dmaGetApiVersion, then dmaCheckVersion: the same ioctl), then nothing
 * but 32-bit DMA_Read_Register/DMA_Write_Register.  pyrogue reads every
 * variable (each word AxiVersion's rows and the register table name on
 * this firmware), writes the RW ones and verifies: ScratchPad and
 * AxisDeMuxSelect.  As root (CAP_SYS_RAWIO); the unprivileged refusal is
 * in t_perms.
 */
static void t_rogue_memmap(void)
{
	int fd = open(dev_path, O_RDWR), id, v;
	struct DmaRegisterData r;
	unsigned int w, n = 0;
	uint32_t off, sp = ga_fw_fields[GA_FW_SCRATCH_PAD].offset;

	CHECK(fd >= 0, "open O_RDWR: %s", strerror(errno));
	if (fd < 0)
		return;
	v = ioctl(fd, DMA_Get_Version, 0);
	CHECK(v >= 0x06, "API version %#x: AxiMemMap wants >= 0x06", v);
	CHECK(v == DMA_VERSION, "dmaCheckVersion: %#x != DMA_VERSION %#x", v, DMA_VERSION);
	for (id = 0; id < GA_FW_COUNT; id++)
		for (w = 0; w < ga_fw_fields[id].words; w++, n++) {
			r = (struct DmaRegisterData){ .address = GA_FW_BASE +
								 ga_fw_fields[id].offset + 4 * w };
			CHECK_OK(ioctl(fd, DMA_Read_Register, &r));
		}
	for (id = 0; id < GA_REG_COUNT; id++)
		if (!ga_reg_offset(id, layout, version, 0, max_buffers, &off)) {
			r = (struct DmaRegisterData){ .address = core_base + off };
			CHECK_OK(ioctl(fd, DMA_Read_Register, &r));
			n++;
		}
	CHECK(n > GA_FW_COUNT, "read %u words", n);
	/* LoadConfig's write then verify, one transaction each */
	fw_store(fd, sp, 0xc0ffee00 | (unsigned int)version);
	CHECK(fw_word(fd, sp) == (0xc0ffee00 | version), "ScratchPad %#x", fw_word(fd, sp));
	fw_store(fd, sp, 0);
	if (ga_reg_present(GA_REG_DEMUX_SELECT, layout, version)) {
		off = reg_off(GA_REG_DEMUX_SELECT, 0);
		wr_word(fd, off, ga_reg_field_set(GA_REG_DEMUX_SELECT, layout, rd_word(fd, off), 0));
		CHECK(field(fd, GA_REG_DEMUX_SELECT, 0) == 0, "AxisDeMuxSelect CPU_path");
		wr_word(fd, off, ga_reg_field_set(GA_REG_DEMUX_SELECT, layout, rd_word(fd, off), 1));
		CHECK(field(fd, GA_REG_DEMUX_SELECT, 0) == 1, "AxisDeMuxSelect GPU_path");
	}
	close(fd);
}

static void t_registers(void)
{
	int fd = open_card();
	struct DmaRegisterData r;
	volatile uint32_t *m;
	uint32_t aw = reg_off(GA_REG_AW_CACHE, 0);
	void *p;

	/* The upstream window: BAR0 0x10000 .. 0xFFFFFC, 4-byte words. */
	r = (struct DmaRegisterData){ .address = 0xFFFC };
	CHECK_ERR(ioctl(fd, DMA_Read_Register, &r), EINVAL);
	r = (struct DmaRegisterData){ .address = 0x10000 };
	CHECK_OK(ioctl(fd, DMA_Read_Register, &r));
	r = (struct DmaRegisterData){ .address = 0xFFFFFC };
	CHECK_OK(ioctl(fd, DMA_Read_Register, &r));
	r = (struct DmaRegisterData){ .address = 0x1000000 };
	CHECK_ERR(ioctl(fd, DMA_Read_Register, &r), EINVAL);
	r = (struct DmaRegisterData){ .address = core_base + 1 };
	CHECK_ERR(ioctl(fd, DMA_Read_Register, &r), EINVAL);
	r = (struct DmaRegisterData){ .address = ~0ull - 3 };
	CHECK_ERR(ioctl(fd, DMA_Read_Register, &r), EINVAL);
	CHECK_ERR(ioctl(fd, DMA_Write_Register, &r), EINVAL);
	CHECK_ERR(ioctl(fd, DMA_Read_Register, NULL), EFAULT);
	CHECK_ERR(ioctl(fd, DMA_Read_Register, (void *)8), EFAULT);
	CHECK_ERR(ioctl(fd, DMA_Write_Register, (void *)-4096L), EFAULT);
	/* AxiVersion says GPU async is built in; the clock is there. */
	r = (struct DmaRegisterData){ .address = GA_AXIVERSION_GPU_EN };
	CHECK_OK(ioctl(fd, DMA_Read_Register, &r));
	CHECK(r.data & 1);

	/* mmap: the register block at file offset 0x28000 (0 DMA buffers). */
	p = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, core_base);
	CHECK(p != MAP_FAILED, "mmap core: %s", strerror(errno));
	if (p != MAP_FAILED) {
		m = p;
		CHECK(ga_reg_field_get(GA_REG_VERSION, layout,
				       m[reg_off(GA_REG_VERSION, 0) / 4]) == version);
		/* ioctl write, mapped read; mapped write, ioctl read. */
		wr_word(fd, aw, ga_reg_field_set(GA_REG_AW_CACHE, layout, rd_word(fd, aw), 0x3));
		CHECK(ga_reg_field_get(GA_REG_AW_CACHE, layout, m[aw / 4]) == 0x3);
		m[aw / 4] = ga_reg_field_set(GA_REG_AW_CACHE, layout, m[aw / 4], 0x5);
		CHECK(field(fd, GA_REG_AW_CACHE, 0) == 0x5);
		munmap(p, GA_CORE_SIZE);
	}
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EINVAL,
	      "mapping the DMA engine block must fail");
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0x10000);
	CHECK(p != MAP_FAILED, "window start must map");
	if (p != MAP_FAILED)
		munmap(p, 4096);
	CHECK(mmap(NULL, 0x20000, PROT_READ, MAP_SHARED, fd, 0xFF0000) == MAP_FAILED,
	      "past the 16 MiB BAR must fail");
	close(fd);
}

static void t_add_bad(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, 4 * KB64), h = galloc(s, 2 * KB64);
	struct nvstub_stats st;

	CHECK_ERR(add_buf(fd, 1, g.va, 0), EINVAL);
	CHECK_ERR(add_buf(fd, 1, g.va, 4096), EINVAL);
	CHECK_ERR(add_buf(fd, 1, g.va, KB64 + 1), EINVAL);
	CHECK_ERR(add_buf(fd, 1, g.va, 0xFFFF0000u), EINVAL);       /* beyond the region */
	CHECK_ERR(add_buf(fd, 1, g.va + 4 * KB64, KB64), EINVAL);   /* the guard gap */
	CHECK_ERR(add_buf(fd, 1, 0xFFFFFFFFFFFF0000ull, 2 * KB64), EINVAL); /* wraps */
	CHECK_ERR(add_buf(fd, 1, 0, KB64), EINVAL);                  /* unmapped user page */
	CHECK_ERR(ioctl(fd, GPU_Add_Nvidia_Memory, NULL), EFAULT);
	CHECK_ERR(ioctl(fd, GPU_Add_Nvidia_Memory, (void *)1), EFAULT);
	CHECK_ERR(ioctl(fd, GPU_Add_Nvidia_Memory, (void *)0xffff888000000000ull), EFAULT);

	/* Failures inside the NVIDIA interface unwind completely. */
	CHECK_OK(stub_param("fail_get_pages", "1"));
	CHECK_ERR(add_buf(fd, 1, g.va, KB64), ENOMEM);
	CHECK_OK(stub_param("fail_dma_map", "1"));
	CHECK_ERR(add_buf(fd, 1, g.va, KB64), ENOMEM);
	CHECK_OK(stub_param("scatter", "1"));
	CHECK_ERR(add_buf(fd, 1, g.va, 2 * KB64), EINVAL); /* not bus-contiguous */
	CHECK_OK(add_buf(fd, 1, g.va, KB64));              /* one page is always contiguous */
	CHECK_OK(stub_param("scatter", "0"));
	/* The memory goes away between get_pages and dma_map_pages. */
	CHECK_OK(stub_param("invalidate_on_map", "1"));
	CHECK_ERR(add_buf(fd, 1, g.va + KB64, KB64), ENXIO);
	CHECK(get_table(fd, NULL, 0) == 1, "a half-set-up buffer must not stay");
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	st = stub_stats();
	CHECK(st.pins == 0 && st.mappings == 0, "pins %llu maps %llu",
	      (unsigned long long)st.pins, (unsigned long long)st.mappings);

	/*
	 * The memory goes away once the mapping exists, before the driver has
	 * it back.  Under NVIDIA's open modules' contract the resource manager
	 * frees what the callback leaves: nothing leaks, nothing is misused.
	 * Under the older reading (legacy_free: the callback frees it all),
	 * the one mapping the driver never saw leaks: a known limit
	 * (kmod/README.md), while a live buffer's callback frees everything.
	 */
	{
		struct nvstub_stats st0 = stub_stats();
		struct nvstub_range rg = { .va = g.va + KB64, .len = KB64 };

		CHECK_OK(stub_param("invalidate_after_map", "1"));
		CHECK_ERR(add_buf(fd, 1, g.va + KB64, KB64), ENXIO);
		st = stub_stats();
		CHECK(st.pins == 0 && st.mappings == 0 && st.leaked == st0.leaked &&
			      st.misuse == st0.misuse,
		      "open-modules reading: pins %llu maps %llu leaked %llu misuse %llu",
		      (unsigned long long)st.pins, (unsigned long long)st.mappings,
		      (unsigned long long)(st.leaked - st0.leaked),
		      (unsigned long long)(st.misuse - st0.misuse));
		CHECK_OK(stub_param("legacy_free", "1"));
		CHECK_OK(stub_param("invalidate_after_map", "1"));
		CHECK_ERR(add_buf(fd, 1, g.va + KB64, KB64), ENXIO);
		st = stub_stats();
		CHECK(st.leaked == st0.leaked + 1 && st.misuse == st0.misuse,
		      "legacy reading: leaked %llu (want 1: the mapping the driver never saw)",
		      (unsigned long long)(st.leaked - st0.leaked));
		CHECK_OK(add_buf(fd, 1, g.va + KB64, KB64));
		CHECK(ioctl(s, NVSTUB_INVALIDATE, &rg) == 1, "one callback");
		st = stub_stats();
		CHECK(st.leaked == st0.leaked + 1 && st.misuse == st0.misuse,
		      "legacy reading, live buffer: leaked %llu more",
		      (unsigned long long)(st.leaked - st0.leaked - 1));
		CHECK_OK(stub_param("legacy_free", "0"));
		CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	}

	/* V4: every write buffer has the one shared size. */
	if (layout != GA_LAYOUT_V1) {
		CHECK_OK(add_buf(fd, 1, g.va, KB64));
		CHECK_ERR(add_buf(fd, 1, h.va, 2 * KB64), EINVAL);
		CHECK_OK(add_buf(fd, 0, h.va, 2 * KB64)); /* read buffers have no such rule */
		CHECK(field(fd, GA_REG_WRITE_MAX_SIZE, 0) == KB64 - ddb, "payload limit");
		CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
		CHECK(field(fd, GA_REG_WRITE_MAX_SIZE, 0) <= 1, "size not reset");
		CHECK_OK(add_buf(fd, 1, h.va, 2 * KB64)); /* a new size after the reset */
		CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	}
	gfree(s, &g);
	gfree(s, &h);
	check_clean(fd, "after bad adds");
	close(s);
	close(fd);
}

static void t_add_remove(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, 8 * KB64);
	struct ga_buffer_entry e[8];
	struct ga_buffer_ref ref;
	uint32_t wsize = 2 * KB64;
	struct nvstub_stats st0 = stub_stats(), st1;
	int n;

	/* A misaligned start pins the 64 KiB pages around it. */
	CHECK_OK(add_buf(fd, 1, g.va, wsize));
	CHECK_OK(add_buf(fd, 1, g.va + 2 * KB64 + 0x1000, wsize));
	CHECK_OK(add_buf(fd, 0, g.va + 5 * KB64, KB64));
	n = get_table(fd, e, 8);
	CHECK(n == 3, "table has %d", n);
	if (n == 3) {
		CHECK(e[0].write == 1 && e[0].index == 0 && e[0].gpu_address == g.va &&
		      e[0].size == wsize && e[0].pages == 2 && e[0].flags == 0);
		CHECK(e[1].write == 1 && e[1].index == 1 && e[1].pages == 3,
		      "misaligned: %u pages", e[1].pages);
		CHECK((e[1].bus_address & 0xffff) == 0x1000, "bus %#llx",
		      (unsigned long long)e[1].bus_address);
		CHECK(e[2].write == 0 && e[2].index == 0 && e[2].size == KB64);
		CHECK(e[0].owner_tgid == (uint32_t)getpid());
		CHECK(buf_addr_reg(fd, true, 0) == e[0].bus_address);
		CHECK(buf_addr_reg(fd, true, 1) == e[1].bus_address);
		CHECK(buf_addr_reg(fd, false, 0) == e[2].bus_address);
		CHECK(e[0].bus_address >> 32 != 0, "high word must be exercised");
	}
	CHECK(field(fd, GA_REG_WRITE_COUNT, 0) == 1);
	CHECK(field(fd, GA_REG_READ_COUNT, 0) == 0);
	CHECK(field(fd, GA_REG_WRITE_ENABLE, 0) == 0, "add must not enable the engine");
	/* The payload limit: what fits behind the DmaDataBytes header. */
	if (layout == GA_LAYOUT_V1)
		CHECK(field(fd, GA_REG_WRITE_SIZE, 1) == wsize - ddb);
	else
		CHECK(field(fd, GA_REG_WRITE_MAX_SIZE, 0) == wsize - ddb);
	CHECK(sys_read("owner_tgid") == getpid());
	CHECK(stub_stats().pins == 3);

	/* Remove one: only the last, and not while its engine runs. */
	ref = (struct ga_buffer_ref){ .write = 1, .index = 0 };
	CHECK_ERR(ioctl(fd, GA_Rem_Buffer, &ref), EINVAL);
	ref.index = 5;
	CHECK_ERR(ioctl(fd, GA_Rem_Buffer, &ref), EINVAL);
	CHECK_ERR(ioctl(fd, GA_Rem_Buffer, NULL), EFAULT);
	ref.index = 1;
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 1));
	CHECK_ERR(ioctl(fd, GA_Rem_Buffer, &ref), EBUSY);
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 0));
	CHECK_OK(ioctl(fd, GA_Rem_Buffer, &ref));
	CHECK(buf_addr_reg(fd, true, 1) == 0, "removed buffer's address not zeroed");
	CHECK(buf_addr_reg(fd, true, 0) != 0);
	CHECK(get_table(fd, e, 8) == 2);
	CHECK(stub_stats().pins == 2);
	/* The freed index is the next one again. */
	CHECK_OK(add_buf(fd, 1, g.va + 2 * KB64, wsize));
	n = get_table(fd, e, 8);
	CHECK(n == 3 && e[1].index == 1);
	/* A table smaller than the set still says how many exist. */
	CHECK(get_table(fd, e, 1) == 3);
	CHECK_ERR(ioctl(fd, GA_Get_Buffer_Table, NULL), EFAULT);
	{
		struct ga_buffer_table t = { .entries = 16, .capacity = 4 };

		CHECK_ERR(ioctl(fd, GA_Get_Buffer_Table, &t), EFAULT);
	}
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0)); /* nothing left: still fine */
	/* The normal path releases with put_pages, never with a callback. */
	st1 = stub_stats();
	CHECK(st1.put_pages - st0.put_pages == 4, "%llu put_pages",
	      (unsigned long long)(st1.put_pages - st0.put_pages));
	CHECK(st1.callbacks == st0.callbacks);
	CHECK(st1.misuse == 0);
	check_clean(fd, "after remove all");
	gfree(s, &g);
	close(s);
	close(fd);
}

static void t_too_many(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, (uint64_t)(max_buffers + 1) * KB64);
	unsigned int i;

	for (i = 0; i < max_buffers; i++)
		CHECK_OK(add_buf(fd, 1, g.va + (uint64_t)i * KB64, KB64));
	CHECK_ERR(add_buf(fd, 1, g.va + (uint64_t)i * KB64, KB64), EINVAL);
	CHECK(field(fd, GA_REG_WRITE_COUNT, 0) == max_buffers - 1);
	CHECK((unsigned int)get_table(fd, NULL, 0) == max_buffers);
	CHECK(stub_stats().pins == max_buffers);
	close(fd); /* close without remove: the file's buffers go */
	fd = open_card();
	check_clean(fd, "after closing a full card");
	gfree(s, &g);
	close(s);
	close(fd);
}

static void t_arm(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, 4 * KB64);
	uint32_t idx[4] = { 0, 1, 2, 3 }, bad[2] = { 1, 7 };
	struct ga_arm_many a;
	uint32_t i = 0;

	CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, &i), EINVAL); /* no buffers yet */
	for (i = 0; i < 4; i++)
		CHECK_OK(add_buf(fd, 1, g.va + i * KB64, KB64));
	i = 3;
	CHECK_OK(ioctl(fd, GPU_Set_Write_Enable, &i));
	i = 4;
	CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, &i), EINVAL);
	i = 99;
	CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, &i), EINVAL);
	CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, NULL), EFAULT);
	a = (struct ga_arm_many){ .indices = (uintptr_t)idx, .count = 4 };
	CHECK_OK(ioctl(fd, GA_Arm_Buffers, &a));
	a.count = 0;
	CHECK_OK(ioctl(fd, GA_Arm_Buffers, &a));
	a.count = GA_MAX_BUFFERS + 1;
	CHECK_ERR(ioctl(fd, GA_Arm_Buffers, &a), EINVAL);
	a = (struct ga_arm_many){ .indices = (uintptr_t)bad, .count = 2 };
	CHECK_ERR(ioctl(fd, GA_Arm_Buffers, &a), EINVAL);
	a = (struct ga_arm_many){ .indices = 8, .count = 2 };
	CHECK_ERR(ioctl(fd, GA_Arm_Buffers, &a), EFAULT);
	CHECK_ERR(ioctl(fd, GA_Arm_Buffers, NULL), EFAULT);
	/* Enables are values, not pointers. */
	CHECK_OK(ioctl(fd, GPU_Enable_Rx, 1));
	CHECK(field(fd, GA_REG_READ_ENABLE, 0) == 1);
	CHECK_OK(ioctl(fd, GPU_Enable_Rx, 0));
	CHECK(field(fd, GA_REG_READ_ENABLE, 0) == 0);
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	check_clean(fd, "after arm tests");
	gfree(s, &g);
	close(s);
	close(fd);
}

/* Check a delivered frame: doorbell, header bits, generated payload. */
void check_frame(const uint8_t *b, uint32_t size, uint32_t seq, const char *what)
{
	uint32_t flags, len, got_seq, i;
	int bad = 0;

	memcpy(&flags, b, 4);
	memcpy(&len, b + 4, 4);
	memcpy(&got_seq, b + ddb, 4);
	CHECK(len == size, "%s: doorbell %u, want %u", what, len, size);
	CHECK((flags & 3) == 0 && !(flags & 4), "%s: result/overflow in %#x", what, flags);
	CHECK(flags >> 24 == 0x02, "%s: first user %#x", what, flags >> 24);
	CHECK(got_seq == seq, "%s: frame %u, want %u", what, got_seq, seq);
	for (i = 4; i < size && !bad; i++)
		bad = b[ddb + i] != (uint8_t)(seq + i);
	CHECK(!bad, "%s: payload differs at byte %u", what, i - 1);
}

static void t_frames(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, 4 * KB64);
	uint32_t idx[4] = { 0, 1, 2, 3 }, i, size = 1000, base_seq, rx0;
	struct ga_arm_many a = { .indices = (uintptr_t)idx, .count = 4 };
	long d0, dr0;
	char v[32];

	for (i = 0; i < 4; i++)
		CHECK_OK(add_buf(fd, 1, g.va + i * KB64, KB64));
	snprintf(v, sizeof(v), "%u", size);
	CHECK_OK(sys_write("gen_size", v));
	CHECK_OK(ioctl(fd, GA_Arm_Buffers, &a));
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 1));
	d0 = sys_read("delivered");
	rx0 = field(fd, GA_REG_RX_FRAME_COUNT, 0);
	base_seq = (uint32_t)(sys_read("delivered") + sys_read("dropped") + sys_read("diverted"));
	CHECK_OK(sys_write("gen_frames", "4"));
	CHECK(sys_wait("delivered", d0 + 4) == d0 + 4, "frames did not arrive");
	for (i = 0; i < 4; i++)
		check_frame(g.map + i * KB64, size, base_seq + i, "ring pass 1");
	CHECK(field(fd, GA_REG_RX_FRAME_COUNT, 0) - rx0 == 4);

	/* Backpressure: nothing armed, the frames wait.  Every tick of the
	 * card's clock offers the waiting frames to the model (ga_emu.c's
	 * thread: ticks++ and the generator under one lock), so two ticks
	 * after the write the generator has met the unarmed ring. */
	CHECK_OK(sys_write("gen_frames", "2"));
	{
		long t0 = sys_read("ticks");

		CHECK(sys_wait("ticks", t0 + 2) >= t0 + 2, "the card's clock stopped");
	}
	CHECK(sys_read("delivered") == d0 + 4, "delivered into an unarmed buffer");
	CHECK(sys_read("gen_frames") == 2);
	/* Consume buffer 0 (clear the doorbell) and re-arm it: round robin. */
	memset(g.map, 0, 8);
	i = 0;
	CHECK_OK(ioctl(fd, GPU_Set_Write_Enable, &i));
	CHECK(sys_wait("delivered", d0 + 5) == d0 + 5);
	check_frame(g.map, size, base_seq + 4, "re-armed buffer 0");
	/* Re-arm through the mapped free list, as a GPU stream would. */
	{
		volatile uint32_t *m = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
					    fd, core_base);

		CHECK(m != MAP_FAILED);
		if (m != MAP_FAILED) {
			memset(g.map + KB64, 0, 8);
			m[reg_off(GA_REG_FREE_LIST, 1) / 4] = 1;
			CHECK(sys_wait("delivered", d0 + 6) == d0 + 6, "mapped arm not seen");
			check_frame(g.map + KB64, size, base_seq + 5, "armed via mmap");
			munmap((void *)m, GA_CORE_SIZE);
		}
	}

	/* Engine off: frames are dropped. */
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 0));
	dr0 = sys_read("dropped");
	CHECK_OK(sys_write("gen_frames", "3"));
	CHECK(sys_wait("dropped", dr0 + 3) == dr0 + 3);
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	/* Dropped frames of a card without buffers hit address 0, never a
	 * stale mapping (checked by check_clean's stale_dma). */
	dr0 = sys_read("dropped");
	CHECK_OK(sys_write("gen_frames", "2"));
	CHECK(sys_wait("dropped", dr0 + 2) == dr0 + 2);
	check_clean(fd, "after frames");
	gfree(s, &g);
	close(s);
	close(fd);
}

/* GPU->FPGA: payload at +ddb, size written to read_size, completion at +0. */
static void t_read_path(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, KB64);
	uint32_t n = 300, sum = 0, i, done;
	long tx0 = sys_read("tx_frames");
	char last[64], path[512];
	FILE *f;

	/* V1 reads from the buffer's start and writes no completion. */
	uint32_t at = layout == GA_LAYOUT_V1 ? 0 : ddb;

	CHECK_OK(add_buf(fd, 0, g.va, KB64));
	if (at)
		memset(g.map, 0, 16);
	for (i = 0; i < n; i++) {
		g.map[at + i] = (uint8_t)(i * 7);
		sum += (uint8_t)(i * 7);
	}
	CHECK_OK(ioctl(fd, GPU_Enable_Rx, 1));
	wr_word(fd, reg_off(GA_REG_READ_SIZE, 0), n);
	CHECK(sys_wait("tx_frames", tx0 + 1) == tx0 + 1, "read not serviced");
	memcpy(&done, g.map, 4);
	if (layout != GA_LAYOUT_V1)
		CHECK(done == 1, "completion word %u", done);
	snprintf(path, sizeof(path), "%s/tx_last", sys_dir);
	f = fopen(path, "r");
	CHECK(f && fgets(last, sizeof(last), f));
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%u %u\n", n, sum);
	CHECK(strcmp(last, path) == 0, "tx_last '%s' want '%s'", last, path);
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	check_clean(fd, "after read path");
	gfree(s, &g);
	close(s);
	close(fd);
}

static void t_invalidate(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g0 = galloc(s, KB64), g1 = galloc(s, KB64), g2 = galloc(s, KB64);
	struct nvstub_range r = { .va = g1.va };
	struct ga_buffer_entry e[4];
	uint32_t idx[2] = { 0, 1 }, i;
	struct ga_arm_many a = { .indices = (uintptr_t)idx, .count = 2 };
	struct nvstub_stats st0 = stub_stats(), st1;
	long d0;
	int n;

	CHECK_OK(add_buf(fd, 1, g0.va, KB64));
	CHECK_OK(add_buf(fd, 1, g1.va, KB64));
	CHECK_OK(add_buf(fd, 0, g2.va, KB64));
	CHECK_OK(ioctl(fd, GA_Arm_Buffers, &a));
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 1));
	CHECK_OK(ioctl(fd, GPU_Enable_Rx, 1));

	/* The GPU memory of write buffer 1 goes away while armed and running. */
	CHECK(ioctl(s, NVSTUB_INVALIDATE, &r) == 1, "one callback expected");
	n = get_table(fd, e, 4);
	CHECK(n == 3);
	if (n == 3) {
		CHECK(e[0].flags == 0, "buffer 0 must survive");
		CHECK(e[1].flags & GA_BUF_INVALIDATED);
		CHECK(e[2].flags == 0);
	}
	CHECK(buf_addr_reg(fd, true, 1) == 0, "invalidated address not zeroed");
	CHECK(buf_addr_reg(fd, true, 0) != 0);
	CHECK(buf_addr_reg(fd, false, 0) != 0);
	CHECK(field(fd, GA_REG_WRITE_ENABLE, 0) == 0, "write engine must be stopped");
	CHECK(field(fd, GA_REG_READ_ENABLE, 0) == 1, "read engine is not concerned");
	CHECK(stub_stats().pins == 2);
	CHECK(sys_read("live_pins") == 2);
	i = 1;
	CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, &i), ENXIO);
	CHECK_ERR(ioctl(fd, GA_Arm_Buffers, &a), ENXIO);
	CHECK(ioctl(s, NVSTUB_INVALIDATE, &r) == 0, "a second invalidation finds nothing");

	/* Buffer 0 still works once the engine is back on. */
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 1));
	d0 = sys_read("delivered");
	CHECK_OK(sys_write("gen_frames", "1"));
	CHECK(sys_wait("delivered", d0 + 1) == d0 + 1);

	/* cudaFree of the read buffer's memory, then of buffer 0's. */
	gfree(s, &g2);
	CHECK(buf_addr_reg(fd, false, 0) == 0);
	CHECK(field(fd, GA_REG_READ_ENABLE, 0) == 0);
	gfree(s, &g0);
	CHECK(stub_stats().pins == 0);
	CHECK(get_table(fd, NULL, 0) == 3, "invalidated buffers stay listed until removed");
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	/* Three callbacks, and no put_pages for what they released. */
	st1 = stub_stats();
	CHECK(st1.callbacks - st0.callbacks == 3);
	CHECK(st1.put_pages == st0.put_pages, "put_pages after invalidation");
	CHECK(st1.misuse == 0);
	CHECK(sys_read("quiesce_timeouts") == 0);
	{
		/* What the callbacks waited for the card: V5 until its active
		 * bits cleared (the model updates them every poll), before V5
		 * the emulated card's barrier or quiesce_ms. */
		long us = sys_read("callback_quiesce_us"), q = sys_read_param("quiesce_ms");

		if (q == 0) /* the version's figure: 50 ms (docs/firmware.md §4) */
			q = 50;
		bool fixed = version < 5 && sys_read_param("emulate_dma_barrier") == 0;

		printf("KTEST info callback quiesce (v%u): longest %ld us (%s)\n", version, us,
		       version >= 5 ? "active bits" : fixed ? "fixed quiesce_ms" : "emulated barrier");
		/* At least quiesce_ms (init.sh sets it above the version's 50 ms),
		 * and not wildly more: half a second of slack for a loaded host. */
		if (fixed)
			CHECK(us >= q * 1000 && us < q * 1000 + 500000,
			      "fixed wait %ld us for quiesce_ms %ld", us, q);
		else
			CHECK(us >= 0 && us < 100000, "waited %ld us for an idle card", us);
	}
	check_clean(fd, "after invalidation");
	gfree(s, &g1);
	close(s);
	close(fd);
}

/*
 * cudaFree on another CPU while the driver is inside dma_map_pages: the
 * stub (callback_during_map) fires the callback from a work item and waits
 * until it either returns, which means the driver let NVIDIA free the page
 * table under the call (misuse: the add then fails), or blocks on the
 * driver's buffer lock.  The driver must hold it off: the add succeeds,
 * then the callback tears the live buffer down.
 */
static void t_map_race(void)
{
	int fd = open_card(), s = open_stub(), j;
	struct gmem g = galloc(s, KB64);
	struct nvstub_stats st0 = stub_stats(), st;
	struct ga_buffer_entry e[1];
	uint32_t i = 0;

	CHECK_OK(stub_param("callback_during_map", "1"));
	CHECK_OK(add_buf(fd, 1, g.va, KB64));
	/* The callback finishes once the add has let go (bounded wait). */
	for (j = 0; j < 10000 && stub_stats().callbacks == st0.callbacks; j++)
		usleep(1000);
	st = stub_stats();
	CHECK(st.callbacks == st0.callbacks + 1, "callback did not finish");
	CHECK(st.misuse == st0.misuse, "page table freed under dma_map_pages");
	CHECK(st.pins == 0 && st.mappings == 0, "pins %llu maps %llu",
	      (unsigned long long)st.pins, (unsigned long long)st.mappings);
	CHECK(get_table(fd, e, 1) == 1 && (e[0].flags & GA_BUF_INVALIDATED),
	      "the buffer must be listed as invalidated");
	CHECK(buf_addr_reg(fd, true, 0) == 0, "invalidated address not zeroed");
	CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, &i), ENXIO);
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	CHECK(sys_read("live_pins") == 0);
	gfree(s, &g);
	close(s);
	check_clean(fd, "after the map race");
	close(fd);
}

/*
 * The ABI's rules on a real driver (docs/abi.md): our numbers with another
 * size or direction are other commands (ENOTTY), version 1's bare numbers
 * are gone, a non-zero pad is EINVAL with a log line, upstream's generic
 * codes answer whatever their upper bits hold.
 */
static void t_abi(void)
{
	const unsigned int size_bits = (unsigned int)_IOC_SIZEMASK << _IOC_SIZESHIFT;
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, KB64);
	uint32_t idx[1] = { 0 };
	struct ga_arm_many a = { .indices = (uintptr_t)idx, .count = 1 };
	struct ga_buffer_ref ref = { .write = 1, .index = 0 };
	unsigned char big[64] = { 0 };
	unsigned int cmd;

	CHECK(ioctl(fd, DMA_Get_Version | 0x12340000u, 0) == DMA_VERSION,
	      "generic codes match on the low 16 bits");
	CHECK_ERR(ioctl(fd, GPU_Get_Max_Buffers | 0x10000u, 0), ENOTTY);
	CHECK(ioctl(fd, GA_Get_Abi_Version, 0) >> 16 == GA_ABI_VERSION);
	cmd = (GA_Rem_Buffer & ~size_bits) | (16u << _IOC_SIZESHIFT);
	CHECK_ERR(ioctl(fd, cmd, big), ENOTTY);
	cmd = (GA_Rem_Buffer & ~size_bits) | (4u << _IOC_SIZESHIFT);
	CHECK_ERR(ioctl(fd, cmd, big), ENOTTY);
	CHECK_ERR(ioctl(fd, GA_Rem_Buffer ^ (_IOC_READ << _IOC_DIRSHIFT), &ref), ENOTTY);
	CHECK_ERR(ioctl(fd, 0x8101u, &ref), ENOTTY); /* version 1's GA_Rem_Buffer */
	CHECK_ERR(ioctl(fd, 0x8102u, &a), ENOTTY);
	CHECK_ERR(ioctl(fd, 0x8103u, big), ENOTTY);
	CHECK_ERR(ioctl(fd, 0x8104u, big), ENOTTY);

	CHECK_OK(add_buf(fd, 1, g.va, KB64));
	a.pad = 1;
	CHECK_ERR(ioctl(fd, GA_Arm_Buffers, &a), EINVAL);
	CHECK(dmesg_has("GA_Arm_Buffers: pad is 0x1, must be 0"), "no log line naming the pad");
	a.pad = 0;
	CHECK_OK(ioctl(fd, GA_Arm_Buffers, &a));
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	gfree(s, &g);
	close(s);
	check_clean(fd, "after the ABI checks");
	close(fd);
}

/* Invalidations racing a stream of frames and re-arms. */
void *rearm_loop(void *p)
{
	struct racer *r = p;
	uint32_t i = 0;

	while (!r->stop) {
		memset(r->map[i % 4], 0, 8);
		ioctl(r->fd, GPU_Set_Write_Enable, &(uint32_t){ i % 4 });
		ioctl(r->fd, GPU_Enable_Tx, 1);
		i++;
	}
	return NULL;
}

static void t_invalidate_race(void)
{
	int fd = open_card(), s = open_stub(), k;
	struct gmem g[4];
	struct racer r = { .fd = fd };
	pthread_t th;
	uint32_t i;

	for (i = 0; i < 4; i++) {
		g[i] = galloc(s, KB64);
		r.map[i] = g[i].map;
		CHECK_OK(add_buf(fd, 1, g[i].va, KB64));
	}
	CHECK_OK(sys_write("gen_size", "4096"));
	CHECK_OK(sys_write("gen_frames", "1000000"));
	pthread_create(&th, NULL, rearm_loop, &r);
	for (k = 0; k < 4; k++) {
		struct nvstub_range fr = { .va = g[k].va };
		long d0 = sys_read("delivered");
		int j;

		/* The first free under traffic for sure: frames keep landing
		 * (bounded wait).  It stops the engine (the driver's rule), so
		 * the later frees race the re-armer alone. */
		for (j = 0; k == 0 && j < 4000 && sys_read("delivered") < d0 + 8; j++)
			usleep(1000);
		CHECK(k > 0 || sys_read("delivered") >= d0 + 8, "no traffic before the first free");
		/* cudaFree under traffic; the mapping stays for the re-armer */
		CHECK_OK(ioctl(s, NVSTUB_FREE, &fr));
	}
	r.stop = 1;
	pthread_join(th, NULL);
	for (k = 0; k < 4; k++)
		munmap(g[k].map, g[k].size);
	CHECK(stub_stats().pins == 0);
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	/* Drain the generator (engine off: drops are immediate). */
	CHECK_OK(sys_write("gen_frames", "0"));
	close(fd);
	fd = open_card();
	check_clean(fd, "after racing invalidations");
	close(s);
	close(fd);
}

/*
 * A disabled core writes the header of every dropped frame to write
 * address 0: while buffer 0 is programmed and cleared over and over, no
 * frame may ever see half an address (one word old, one new).
 */
static void t_addr_atomic(void)
{
	int fd = open_card(), s = open_stub(), k;
	struct gmem g = galloc(s, KB64);
	uint32_t err0 = field(fd, GA_REG_AXI_WRITE_ERROR_COUNT, 0);
	long dr0 = sys_read("dropped");

	CHECK_OK(sys_write("gen_size", "64"));
	CHECK_OK(sys_write("gen_frames", "100000000"));
	for (k = 0; k < 300; k++) {
		CHECK_OK(add_buf(fd, 1, g.va, KB64));
		CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	}
	CHECK_OK(sys_write("gen_frames", "0"));
	CHECK(sys_read("dropped") > dr0, "no frames were dropped meanwhile");
	CHECK(field(fd, GA_REG_AXI_WRITE_ERROR_COUNT, 0) == err0,
	      "a dropped frame's header went to a half-written address");
	check_clean(fd, "after address churn");
	gfree(s, &g);
	close(s);
	close(fd);
}

/* A driver that calls the callback from inside dma_unmap_pages. */
static void t_reentry(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, 2 * KB64);

	CHECK_OK(add_buf(fd, 1, g.va, KB64));
	CHECK_OK(add_buf(fd, 0, g.va + KB64, KB64));
	CHECK_OK(stub_param("reenter_unmap", "1"));
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	CHECK_OK(stub_param("reenter_unmap", "0"));
	CHECK(stub_stats().pins == 0);
	check_clean(fd, "after re-entered callbacks");
	gfree(s, &g);
	close(s);
	close(fd);
}

/* Host memory (what libgpuasync registers without CUDA). */
static void t_host_memory(void)
{
	int fd = open_card(), s = open_stub();
	struct nvstub_range r;
	uint8_t *mem = NULL;
	long d0;
	uint32_t i = 0;

	CHECK(posix_memalign((void **)&mem, KB64, 2 * KB64) == 0);
	memset(mem, 0, 2 * KB64);
	CHECK_OK(add_buf(fd, 1, (uintptr_t)mem, KB64));
	CHECK_OK(ioctl(fd, GPU_Set_Write_Enable, &i));
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 1));
	CHECK_OK(sys_write("gen_size", "100"));
	d0 = sys_read("delivered");
	CHECK_OK(sys_write("gen_frames", "1"));
	CHECK(sys_wait("delivered", d0 + 1) == d0 + 1);
	CHECK(*(uint32_t *)(mem + 4) == 100, "doorbell %u", *(uint32_t *)(mem + 4));
	r = (struct nvstub_range){ .va = (uintptr_t)mem, .len = KB64 };
	CHECK(ioctl(s, NVSTUB_INVALIDATE, &r) == 1);
	CHECK(field(fd, GA_REG_WRITE_ENABLE, 0) == 0);
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	check_clean(fd, "after host memory");
	free(mem);
	close(s);
	close(fd);
}

static void t_bad_pointers(void)
{
	int fd = open_card();
	static const unsigned int cmds[] = { GPU_Add_Nvidia_Memory, GPU_Set_Write_Enable,
					     DMA_Read_Register,     DMA_Write_Register,
					     GA_Rem_Buffer,         GA_Arm_Buffers,
					     GA_Get_Buffer_Table };
	static const unsigned long ptrs[] = { 0, 1, 4095, 0xffff888000000000ul, ~0ul };
	unsigned int c, p;

	for (c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++)
		for (p = 0; p < sizeof(ptrs) / sizeof(ptrs[0]); p++)
			CHECK_ERR(ioctl(fd, cmds[c], ptrs[p]), EFAULT);
	/* Readable but not writable memory where the driver writes back. */
	{
		struct DmaRegisterData *r = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
						 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ga_buffer_table *t = (void *)(r + 1);

		r->address = core_base;
		t->capacity = 0;
		mprotect(r, 4096, PROT_READ);
		CHECK_ERR(ioctl(fd, DMA_Read_Register, r), EFAULT);
		CHECK_ERR(ioctl(fd, GA_Get_Buffer_Table, t), EFAULT);
		munmap(r, 4096);
	}
	check_clean(fd, "after bad pointers");
	close(fd);
}

/*
 * Register, arm, enable; tell the parent through @wfd (or, with -1, print
 * HOLDING); then exit at once without cleaning up, or wait to be killed.
 * @stub_first: open the stub before the card, so the process's exit closes
 * them in the other order (invalidation first, then the card's release).
 */
static void hold(int wfd, bool exit_after, bool stub_first)
{
	int s = stub_first ? open_stub() : -1, fd = open_card();
	struct gmem g;
	uint32_t idx[2] = { 0, 1 };
	struct ga_arm_many a = { .indices = (uintptr_t)idx, .count = 2 };
	char c = 'k';

	if (s < 0)
		s = open_stub();
	g = galloc(s, 4 * KB64);
	if (add_buf(fd, 1, g.va, KB64) || add_buf(fd, 1, g.va + KB64, KB64) ||
	    add_buf(fd, 0, g.va + 2 * KB64, KB64) || ioctl(fd, GA_Arm_Buffers, &a) ||
	    ioctl(fd, GPU_Enable_Tx, 1))
		c = 'e';
	if (wfd < 0) {
		printf(c == 'k' ? "HOLDING\n" : "KTEST FAIL hold setup\n");
		fflush(stdout);
	} else if (write(wfd, &c, 1) != 1) {
		_exit(3);
	}
	if (exit_after)
		_exit(0); /* no remove, no close: exit does it */
	for (;;)
		pause();
}

static pid_t spawn_holder(bool exit_after, bool stub_first)
{
	int p[2];
	pid_t pid;
	char c = 0;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		hold(p[1], exit_after, stub_first);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || c != 'k')
		printf("KTEST FAIL holder setup (%c)\n", c ? c : '?');
	close(p[0]);
	return pid;
}

static void t_close_without_remove(void)
{
	int fd = open_card(), st;
	pid_t pid = spawn_holder(true, true);

	waitpid(pid, &st, 0);
	check_clean(fd, "after the owner exited without removing");
	CHECK(field(fd, GA_REG_WRITE_ENABLE, 0) == 0, "engine left on");
	close(fd);
}

static void t_kill9(void)
{
	int fd = open_card(), st;
	pid_t pid = spawn_holder(false, false);

	CHECK(sys_read("owner_tgid") == pid);
	CHECK(get_table(fd, NULL, 0) == 3);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	check_clean(fd, "after kill -9 of the owner");
	CHECK(field(fd, GA_REG_WRITE_ENABLE, 0) == 0, "engine left on");
	close(fd);
}

/* kill -9 at arbitrary points of a process busy adding, arming, removing. */
static void t_kill_busy(void)
{
	int fd = open_card(), k, st;

	CHECK_OK(sys_write("gen_size", "256"));
	CHECK_OK(sys_write("gen_frames", "100000000"));
	for (k = 0; k < 8; k++) {
		pid_t pid = fork();

		if (pid == 0) {
			int c = open_card(), s = open_stub();
			struct gmem g = galloc(s, 2 * KB64);
			uint32_t idx[2] = { 0, 1 };
			struct ga_arm_many a = { .indices = (uintptr_t)idx, .count = 2 };

			for (;;) {
				add_buf(c, 1, g.va, KB64);
				add_buf(c, 1, g.va + KB64, KB64);
				ioctl(c, GA_Arm_Buffers, &a);
				ioctl(c, GPU_Enable_Tx, 1);
				ioctl(c, GPU_Rem_Nvidia_Memory, 0);
			}
		}
		usleep(3000 + 7919 * k % 20000);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		CHECK(WIFSIGNALED(st));
	}
	CHECK_OK(sys_write("gen_frames", "0"));
	check_clean(fd, "after killing busy owners");
	close(fd);
}

static void t_two_processes(void)
{
	int fd = open_card(), fd2, s = open_stub(), st;
	struct gmem g = galloc(s, 2 * KB64);
	struct ga_buffer_entry e[4];
	struct ga_buffer_ref ref = { .write = 1, .index = 2 };
	pid_t pid = spawn_holder(false, false);
	uint32_t i = 0;

	/* Another thread group: everything that changes buffers is refused. */
	CHECK_ERR(add_buf(fd, 1, g.va, KB64), EBUSY);
	CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, &i), EBUSY);
	CHECK_ERR(ioctl(fd, GPU_Rem_Nvidia_Memory, 0), EBUSY);
	CHECK_ERR(ioctl(fd, GPU_Enable_Tx, 0), EBUSY);
	CHECK_ERR(ioctl(fd, GA_Rem_Buffer, &ref), EBUSY);
	CHECK(get_table(fd, e, 4) == 3 && e[0].owner_tgid == (uint32_t)pid);
	CHECK(field(fd, GA_REG_VERSION, 0) == version, "reading stays allowed");
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);

	/* One thread group, two files: each file's buffers go with it. */
	fd2 = open_card();
	CHECK_OK(add_buf(fd, 1, g.va, KB64));
	CHECK_OK(add_buf(fd2, 1, g.va + KB64, KB64));
	close(fd);
	CHECK(get_table(fd2, e, 4) == 1 && e[0].index == 1);
	CHECK(buf_addr_reg(fd2, true, 0) == 0 && buf_addr_reg(fd2, true, 1) != 0);
	CHECK(field(fd2, GA_REG_WRITE_COUNT, 0) == 1, "ring still ends at buffer 1");
	close(fd2);
	fd = open_card();
	check_clean(fd, "after two files");
	gfree(s, &g);
	close(s);
	close(fd);
}

/* fork: the child shares the file; buffers live until the last close. */
static void t_fork(void)
{
	int fd = open_card(), s = open_stub(), st;
	struct gmem g = galloc(s, KB64);
	pid_t pid;

	CHECK_OK(add_buf(fd, 1, g.va, KB64));
	pid = fork();
	if (pid == 0) {
		/* Same file, other thread group: not the owner. */
		_exit(ioctl(fd, GPU_Rem_Nvidia_Memory, 0) == -1 && errno == EBUSY ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child could change the owner's buffers");
	CHECK(get_table(fd, NULL, 0) == 1, "child exit must not release the shared file");
	close(fd);
	fd = open_card();
	check_clean(fd, "after fork");
	gfree(s, &g);
	close(s);
	close(fd);
}

/* A card whose firmware has GPU async disabled (AxiVersion bit clear). */
static void t_unsupported(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, KB64);
	struct ga_buffer_ref ref = { .write = 1 };
	struct ga_arm_many a = { .count = 1 };
	uint32_t i = 0;

	CHECK(ioctl(fd, GPU_Is_Gpu_Async_Supp, 0) == 0);
	CHECK(ioctl(fd, GPU_Get_Gpu_Async_Ver, 0) >= 1, "the version is still reported");
	CHECK_ERR(ioctl(fd, GPU_Get_Max_Buffers, 0), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(add_buf(fd, 1, g.va, KB64), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GPU_Rem_Nvidia_Memory, 0), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, &i), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GPU_Enable_Tx, 1), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GPU_Enable_Rx, 1), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GA_Rem_Buffer, &ref), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GA_Arm_Buffers, &a), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GPU_Is_Dma_Buf_Supp, 0), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GPU_Is_GpuDirect_Supp, 0), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GPU_DmaBuf_Add_Wr_Buffer, 3), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GPU_DmaBuf_Add_Rd_Buffer, 3), GA_KERNEL_ENOTSUPP);
	CHECK_ERR(ioctl(fd, GPU_DmaBuf_Remove_Buffers, 0), GA_KERNEL_ENOTSUPP);
	CHECK(get_table(fd, NULL, 0) == 0);
	CHECK(ioctl(fd, DMA_Get_Version, 0) == DMA_VERSION, "the DMA side still answers");
	CHECK(stub_stats().pins == 0);
	gfree(s, &g);
	close(s);
	close(fd);
}

/* The generator's sysfs files: a value out of range is ERANGE, one that is
 * not a number EINVAL, and a refused write changes nothing. */
static void t_emu_settings(void)
{
	long size0 = sys_read("gen_size"), user0 = sys_read("gen_user");
	char v[32];

	CHECK_ERR(sys_write("gen_size", "0"), ERANGE);
	CHECK_ERR(sys_write("gen_size", "1048577"), ERANGE); /* above the 1 MiB scratch */
	CHECK_ERR(sys_write("gen_size", "4x"), EINVAL);
	CHECK(sys_read("gen_size") == size0, "gen_size %ld, was %ld", sys_read("gen_size"), size0);
	CHECK_OK(sys_write("gen_size", "1048576"));
	CHECK(sys_read("gen_size") == 1048576);
	CHECK_ERR(sys_write("gen_user", "256"), ERANGE);
	CHECK_ERR(sys_write("gen_user", "-1"), EINVAL);
	CHECK(sys_read("gen_user") == user0, "gen_user %ld, was %ld", sys_read("gen_user"), user0);
	CHECK_OK(sys_write("gen_user", "0xff"));
	CHECK(sys_read("gen_user") == 0xff);
	CHECK_ERR(sys_write("gen_frames", "4294967296"), ERANGE);
	CHECK_ERR(sys_write("gen_frames", "many"), EINVAL);
	snprintf(v, sizeof(v), "%ld", size0);
	CHECK_OK(sys_write("gen_size", v));
	snprintf(v, sizeof(v), "%ld", user0);
	CHECK_OK(sys_write("gen_user", v));
}

/* ---- emulate_upstream=1 ------------------------------------------------------ */

/* A reservation of /dev/nvidia_p2p_stub_mem mapped 64 KiB aligned, as
 * upstream's tools map theirs (the driver pins whole 64 KiB pages). */
static uint8_t *stub_mem_map(int s, uint32_t size)
{
	struct stub_reserve_req req = { .size = size };
	uint8_t *rsv, *at, *p;

	if (ioctl(s, STUB_RESERVE_BUF, &req)) {
		printf("KTEST FAIL STUB_RESERVE_BUF %u: %s\n", size, strerror(errno));
		return NULL;
	}
	rsv = mmap(NULL, size + KB64, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rsv == MAP_FAILED)
		return NULL;
	at = (uint8_t *)(((uintptr_t)rsv + KB64 - 1) & ~(uintptr_t)(KB64 - 1));
	p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, s,
		 (off_t)req.buf_id * getpagesize());
	if (p == MAP_FAILED) {
		printf("KTEST FAIL mmap buf_id %u: %s\n", req.buf_id, strerror(errno));
		return NULL;
	}
	return p;
}

static uint32_t word_at(const volatile uint8_t *p)
{
	return __atomic_load_n((const volatile uint32_t *)p, __ATOMIC_ACQUIRE);
}

/* Until the 32-bit word at @p is non-zero (5 s at most). */
static uint32_t wait_word(const volatile uint8_t *p)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < 5000 && !(v = word_at(p)); i++)
		usleep(1000);
	return v;
}

/* Until the emulated firmware has run @n more ticks: what it did not do by
 * then, it did not do when it looked (absence, decided by events). */
static void wait_ticks(long n)
{
	long want = sys_read("ticks") + n;

	CHECK(sys_wait("ticks", want) >= want, "the card's ticks stopped");
}

static void set_field(int fd, enum ga_reg_id id, uint32_t v)
{
	uint32_t off = reg_off(id, 0);

	wr_word(fd, off, ga_reg_field_set(id, layout, rd_word(fd, off), v));
}

/*
 * What upstream's GPU tools need of the card, checked with our own code so
 * that CI covers it without upstream's source: stub_mem reservations,
 * free-list and read-size words written through the mapped registers and
 * held until used, the PRBS source with its deadtime, a withdrawn arm,
 * GPU->FPGA frames checked as PRBS.
 */
static void t_upstream(void)
{
	int fd = open_card(), s = open("/dev/nvidia_p2p_stub_mem", O_RDWR), i;
	struct stub_reserve_req req = { 0 };
	uint8_t *w[4] = { 0 }, *r[4] = { 0 };
	volatile uint32_t *regs;
	uint32_t seq = 99, fw[4];
	long up0 = sys_read("up_frames"), tx0 = sys_read("tx_frames");
	long bad0 = sys_read("tx_prbs_errors");

	CHECK(s >= 0, "open /dev/nvidia_p2p_stub_mem: %s", strerror(errno));
	if (s < 0)
		return;
	CHECK(max_buffers == 4 && ddb == 16, "%u buffers, DmaDataBytes %u", max_buffers, ddb);
	CHECK(field(fd, GA_REG_WRITE_MAX_SIZE, 0) == 4096);
	CHECK_ERR(ioctl(s, STUB_RESERVE_BUF, &req), EINVAL); /* size 0 */
	req.size = 0x80000000u;
	CHECK_ERR(ioctl(s, STUB_RESERVE_BUF, &req), EINVAL); /* above max_region_mb */
	CHECK_ERR(ioctl(s, NVSTUB_ALLOC, &req), ENOTTY);
	CHECK(mmap(NULL, KB64, PROT_READ, MAP_SHARED, s, 100000L * getpagesize()) == MAP_FAILED &&
		      errno == EINVAL,
	      "mmap of an unknown buf_id");
	for (i = 0; i < 4; i++) {
		w[i] = stub_mem_map(s, KB64);
		r[i] = stub_mem_map(s, KB64);
		if (!w[i] || !r[i])
			goto out;
		CHECK_OK(add_buf(fd, 1, (uintptr_t)w[i], KB64));
		CHECK_OK(add_buf(fd, 0, (uintptr_t)r[i], KB64));
		fw[i] = reg_off(GA_REG_FREE_LIST, i) / 4;
	}
	regs = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, core_base);
	CHECK(regs != MAP_FAILED, "mmap registers: %s", strerror(errno));
	if (regs == MAP_FAILED)
		goto out;
	set_field(fd, GA_REG_WRITE_MAX_SIZE, 1000);
	set_field(fd, GA_REG_WRITE_ENABLE, 1);
	set_field(fd, GA_REG_READ_ENABLE, 1);

	/* Nothing armed: the source waits. */
	wait_ticks(3);
	CHECK(sys_read("up_frames") == up0, "a frame without an armed buffer");
	/* Armed through the mapped word: one PRBS frame, the word read back 0. */
	regs[fw[0]] = 1;
	CHECK(wait_word(w[0] + 4) == 1000, "doorbell %u", word_at(w[0] + 4));
	CHECK(ga_prbs_check(w[0] + 16, 1000, &seq), "frame 0 is not PRBS");
	CHECK(regs[fw[0]] == 0, "free-list word still %u", regs[fw[0]]);
	/* Deadtime: buffer 0 not released, so buffer 1 waits though armed. */
	regs[fw[1]] = 1;
	wait_ticks(3);
	CHECK(word_at(w[1] + 4) == 0 && sys_read("up_frames") == up0 + 1, "no deadtime");
	memset(w[0] + 4, 0, 4); /* released: the next frame, next sequence number */
	CHECK(wait_word(w[1] + 4) == 1000, "doorbell %u", word_at(w[1] + 4));
	{
		uint32_t seq1 = 0;

		CHECK(ga_prbs_check(w[1] + 16, 1000, &seq1) && seq1 == seq + 1,
		      "frame 1: sequence %u after %u", seq1, seq);
	}
	/* An arm withdrawn (0) before the source could use it: no frame. */
	regs[fw[2]] = 1;
	regs[fw[2]] = 0;
	memset(w[1] + 4, 0, 4);
	wait_ticks(3);
	CHECK(word_at(w[2] + 4) == 0 && sys_read("up_frames") == up0 + 2, "withdrawn arm used");
	CHECK(field(fd, GA_REG_RX_FRAME_COUNT, 0) == 2);
	/* Startup grace: switched on with a buffer armed, the source lets a
	 * few ticks pass (the tools clear and re-arm after enabling).  Ticks
	 * of 20 ms, so that counting two of them cannot overshoot five. */
	CHECK_OK(write_file("/sys/module/gpuasync/parameters/emulate_poll_us", "20000"));
	set_field(fd, GA_REG_WRITE_ENABLE, 0);
	wait_ticks(2);
	regs[fw[0]] = 1;
	set_field(fd, GA_REG_WRITE_ENABLE, 1);
	wait_ticks(2);
	CHECK(word_at(w[0] + 4) == 0, "a frame at once after the enable");
	CHECK(wait_word(w[0] + 4) == 1000, "no frame after the grace");
	CHECK_OK(write_file("/sys/module/gpuasync/parameters/emulate_poll_us", "500"));

	/* GPU->FPGA: the frame sent back is PRBS; a zeroed one is counted. */
	memcpy(r[0] + 16, w[0] + 16, 1000);
	regs[reg_off(GA_REG_READ_SIZE, 0) / 4] = 1000;
	CHECK(wait_word(r[0]) == 1, "no completion word");
	regs[reg_off(GA_REG_READ_SIZE, 1) / 4] = 64;
	CHECK(wait_word(r[1]) == 1, "no completion word");
	CHECK(sys_wait("tx_frames", tx0 + 2) == tx0 + 2);
	CHECK(sys_read("tx_prbs_errors") == bad0 + 1, "tx_prbs_errors %ld, was %ld",
	      sys_read("tx_prbs_errors"), bad0);
	CHECK(regs[reg_off(GA_REG_READ_SIZE, 0) / 4] == 0, "read-size word not cleared");

	set_field(fd, GA_REG_WRITE_ENABLE, 0);
	set_field(fd, GA_REG_READ_ENABLE, 0);
	munmap((void *)regs, GA_CORE_SIZE);
out:
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	for (i = 0; i < 4; i++) {
		if (w[i])
			munmap(w[i], KB64);
		if (r[i])
			munmap(r[i], KB64);
	}
	close(s);
	check_clean(fd, "after upstream mode");
	close(fd);
}

/* ---- main ------------------------------------------------------------------ */

static const struct kcase cases[] = {
	{ "identity", t_identity },
	{ "registers", t_registers },
	{ "firmware", t_firmware },
	{ "rogue_memmap", t_rogue_memmap },
	{ "add_bad", t_add_bad },
	{ "add_remove", t_add_remove },
	{ "too_many", t_too_many },
	{ "arm", t_arm },
	{ "frames", t_frames },
	{ "emu_settings", t_emu_settings },
	{ "read_path", t_read_path },
	{ "invalidate", t_invalidate },
	{ "invalidate_race", t_invalidate_race },
	{ "map_race", t_map_race },
	{ "abi", t_abi },
	{ "reentry", t_reentry },
	{ "addr_atomic", t_addr_atomic },
	{ "host_memory", t_host_memory },
	{ "bad_pointers", t_bad_pointers },
	{ "close_without_remove", t_close_without_remove },
	{ "kill9", t_kill9 },
	{ "kill_busy", t_kill_busy },
	{ "two_processes", t_two_processes },
	{ "fork", t_fork },
};
static const unsigned int n_cases = sizeof(cases) / sizeof(cases[0]);

/*
 * The permission model as an unprivileged user (uid/gid 65534, so no
 * capabilities), in a child; exit 0 when every refusal and permission was
 * as documented in kmod/README.md, else the step that was not.
 */
static int unprivileged(bool owned_elsewhere, bool node_open)
{
	struct DmaRegisterData r = { .address = core_base + reg_off(GA_REG_AR_CACHE, 0) };
	uint8_t mask[DMA_MASK_SIZE] = { 0x80 }; /* destination 7 */
	uint32_t i = 0;
	void *m;
	int c;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 90;
	c = open(dev_path, O_RDWR);
	if (!node_open)
		return c < 0 && errno == EACCES ? 0 : 91; /* default mode: not for others */
	if (c < 0)
		return 92;
	if (ioctl(c, DMA_Read_Register, &r) != 0)
		return 93; /* reads: everyone who may open */
	if (ioctl(c, DMA_Set_MaskBytes, mask) != 0)
		return 89; /* destinations too, as upstream (freed by close: twice a run) */
	if (ioctl(c, DMA_Write_Register, &r) != -1 || errno != EPERM)
		return 94; /* writes: owner, CAP_SYS_RAWIO or CAP_SYS_ADMIN only, owned or not */
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, c, core_base);
	if (m != MAP_FAILED || errno != EPERM)
		return 95;
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, c, core_base);
	if (m == MAP_FAILED)
		return 96; /* read-only mappings: fine */
	if (((volatile uint32_t *)m)[reg_off(GA_REG_VERSION, 0) / 4] == 0)
		return 97;
	if (mprotect(m, 4096, PROT_READ | PROT_WRITE) == 0 || errno != EACCES)
		return 98; /* and it cannot be made writable */
	munmap(m, 4096);
	if (owned_elsewhere && (ioctl(c, GPU_Set_Write_Enable, &i) != -1 || errno != EBUSY))
		return 99;
	close(c);
	return 0;
}

static int run_unprivileged(bool owned_elsewhere, bool node_open, pid_t *child)
{
	pid_t pid = fork();
	int st = -1;

	if (pid == 0)
		_exit(unprivileged(owned_elsewhere, node_open));
	waitpid(pid, &st, 0);
	if (child)
		*child = pid;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200;
}

/*
 * Did the kernel log say why @pid's register write and writable mapping
 * were refused (EPERM reaches a rogue user as "error code -1" only)?  The
 * line must name the process, EPERM and the rule, and @owner when set.
 */
static void check_refusal_logged(pid_t pid, pid_t owner)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf, want[96], tgid[32];
	const char *what[] = { "register write at", "writable register mapping at" };
	unsigned int k;

	CHECK(len > 0, "klogctl size: %s", strerror(errno));
	if (len <= 0)
		return;
	buf = calloc(1, (size_t)len + 1);
	if (!buf)
		return;
	len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len);
	CHECK(len > 0, "klogctl read: %s", strerror(errno));
	for (k = 0; len > 0 && k < 2; k++) {
		char *line = buf, *hit = NULL;

		snprintf(want, sizeof(want), "by pid %d (kt) refused (EPERM)", (int)pid);
		while ((line = strstr(line, what[k]))) {
			char *eol = strchr(line, '\n');

			if (eol)
				*eol = 0;
			if (strstr(line, want))
				hit = line;
			if (eol)
				*eol = '\n';
			line++;
		}
		CHECK(hit, "no kernel-log line '%s ... %s'", what[k], want);
		if (!hit)
			continue;
		CHECK(strstr(hit, "owner of the card's GPU state") && strstr(hit, "CAP_SYS_RAWIO") &&
			      strstr(hit, "CAP_SYS_ADMIN"),
		      "the line does not say why: %.200s", hit);
		snprintf(tgid, sizeof(tgid), "(tgid %d)", (int)owner);
		CHECK(!owner || strstr(hit, tgid), "the line does not name owner %d: %.200s",
		      (int)owner, hit);
	}
	free(buf);
}

/* Needs the card loaded with node_mode=0666 so that 65534 may open it. */
static void t_perms(void)
{
	int fd = open_card(), s = open_stub(), rc;
	struct gmem g = galloc(s, KB64);
	struct DmaRegisterData r = { .address = core_base + reg_off(GA_REG_AR_CACHE, 0) };
	pid_t child;

	rc = run_unprivileged(false, true, &child);
	CHECK(rc == 0, "unowned card, unprivileged: step %d", rc);
	check_refusal_logged(child, 0);
	CHECK_OK(add_buf(fd, 1, g.va, KB64)); /* we own it now */
	rc = run_unprivileged(true, true, &child);
	CHECK(rc == 0, "owned card, unprivileged: step %d", rc);
	check_refusal_logged(child, getpid());
	/* root in another process: not the owner, but CAP_SYS_RAWIO */
	if (fork() == 0) {
		int c = open(dev_path, O_RDWR);

		_exit(c >= 0 && ioctl(c, DMA_Write_Register, &r) == 0 ? 0 : 1);
	}
	wait(&rc);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "CAP_SYS_RAWIO may write");
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	gfree(s, &g);
	close(s);
	check_clean(fd, "after perms");
	close(fd);
}

/* The default node (0660, group 0): others cannot even open it. */
static void t_perms_closed(void)
{
	struct stat st;
	int rc;

	CHECK(stat(dev_path, &st) == 0 && (st.st_mode & 0777) == 0660 && st.st_gid == 0,
	      "mode 0%o gid %u", st.st_mode & 0777, st.st_gid);
	rc = run_unprivileged(false, false, NULL);
	CHECK(rc == 0, "default node, unprivileged: step %d", rc);
}

/* Not part of "all": needs a card loaded with emulate_gpu_en=0. */
static const struct kcase unsupported_case = { "unsupported", t_unsupported };
static const struct kcase upstream_case = { "upstream_mode", t_upstream };
/* Not part of "all" either: they need the node's mode set at load. */
static const struct kcase perm_cases[] = {
	{ "perms", t_perms },
	{ "perms_closed", t_perms_closed },
};

/* The cases of "all", kt.c's first, then each case file's. */
static const struct kcase *case_at(unsigned int c)
{
	if (c < n_cases)
		return &cases[c];
	c -= n_cases;
	if (c < n_dmabuf_cases)
		return &dmabuf_cases[c];
	c -= n_dmabuf_cases;
	if (c < n_drp_cases)
		return &drp_cases[c];
	c -= n_drp_cases;
	if (c < n_proc_cases)
		return &proc_cases[c];
	c -= n_proc_cases;
	if (c < n_trap_cases)
		return &trap_cases[c];
	c -= n_trap_cases;
	if (c < n_regs_cases)
		return &regs_cases[c];
	return &hwmon_cases[c - n_regs_cases];
}

static void identify(void)
{
	int fd = open_card();

	if (sys_read("core_offset") > 0)
		core_base = (uint32_t)sys_read("core_offset");
	version = (unsigned int)ioctl(fd, GPU_Get_Gpu_Async_Ver, 0);
	max_buffers = (unsigned int)ioctl(fd, GPU_Get_Max_Buffers, 0);
	layout = ga_layout_for_version(version, false);
	ddb = 0;
	{
		uint32_t off = 0;
		struct DmaRegisterData r;

		ga_reg_offset(GA_REG_DMA_DATA_BYTES, layout, version, 0, 0, &off);
		r = (struct DmaRegisterData){ .address = core_base + off };
		if (ioctl(fd, DMA_Read_Register, &r) == 0)
			ddb = ga_reg_field_get(GA_REG_DMA_DATA_BYTES, layout, r.data);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	unsigned int c;
	int failed = 0, i = 1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && strcmp(argv[1], "-d") == 0) {
		dev_path = argv[2];
		i = 3;
	}
	snprintf(sys_dir, sizeof(sys_dir), "/sys/class/gpuasync/%s", strrchr(dev_path, '/') + 1);
	if (i < argc && strcmp(argv[i], "stubstat") == 0) {
		struct nvstub_stats st = stub_stats();

		printf("KTEST stub: pins %llu mappings %llu regions %llu callbacks %llu stale_dma "
		       "%llu misuse %llu leaked %llu\n",
		       (unsigned long long)st.pins, (unsigned long long)st.mappings,
		       (unsigned long long)st.regions, (unsigned long long)st.callbacks,
		       (unsigned long long)st.stale_dma, (unsigned long long)st.misuse,
		       (unsigned long long)st.leaked);
		printf("KTEST stub: dmabufs %llu moves %llu\n", (unsigned long long)st.dmabufs,
		       (unsigned long long)st.moves);
		return st.pins || st.mappings || st.regions || st.stale_dma || st.misuse ||
		       st.dmabufs;
	}
	if (i < argc && strcmp(argv[i], "hold") == 0) {
		identify();
		hold(-1, false, false);
		return 0;
	}
	if (i < argc && strcmp(argv[i], "hold_dmabuf") == 0) {
		identify();
		hold_dmabuf();
		return 0;
	}
	identify();
	printf("KTEST card %s: version %u, %u buffers, DmaDataBytes %u, core at 0x%x\n", dev_path,
	       version, max_buffers, ddb, core_base);
	for (; i < argc; i++) {
		bool all = strcmp(argv[i], "all") == 0, found = false;

		for (c = 0; c < n_cases + n_dmabuf_cases + n_drp_cases + n_proc_cases + n_trap_cases +
				    n_regs_cases + n_hwmon_cases;
		     c++) {
			const struct kcase *k = case_at(c);

			if (!all && strcmp(argv[i], k->name) != 0)
				continue;
			found = true;
			case_failed = 0;
			case_skipped = NULL;
			k->fn();
			if (case_skipped && !case_failed)
				printf("KTEST skip %s (v%u): %s\n", k->name, version, case_skipped);
			else
				printf("KTEST %s %s (v%u)\n", case_failed ? "FAIL" : "ok", k->name,
				       version);
			failed += case_failed;
		}
		for (c = 0; c < 2; c++) {
			const struct kcase *k = c ? &upstream_case : &unsupported_case;

			if (strcmp(argv[i], k->name) != 0)
				continue;
			found = true;
			case_failed = 0;
			k->fn();
			printf("KTEST %s %s (v%u)\n", case_failed ? "FAIL" : "ok", k->name, version);
			failed += case_failed;
		}
		for (c = 0; c < sizeof(perm_cases) / sizeof(perm_cases[0]); c++) {
			if (strcmp(argv[i], perm_cases[c].name) != 0)
				continue;
			found = true;
			case_failed = 0;
			perm_cases[c].fn();
			printf("KTEST %s %s\n", case_failed ? "FAIL" : "ok", perm_cases[c].name);
			failed += case_failed;
		}
		if (!found) {
			printf("KTEST FAIL unknown case %s\n", argv[i]);
			failed++;
		}
	}
	return failed;
}
