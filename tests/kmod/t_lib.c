// SPDX-License-Identifier: GPL-2.0
/*
 * t_lib: libgpuasync's datadev backend against gpuasync.ko, in the guest.
 *
 *   t_lib /dev/gpuasync_emu0
 *
 * The library is linked statically from lib/ (no CUDA in the guest, so its
 * host-memory layer provides the buffers, which nv_p2p_stub pins as user
 * pages).  It must find gpuasync.ko's extensions, register and arm
 * buffers, see frames land (the emulated card's generator makes them),
 * send a GPU->FPGA frame, read the driver's table of pinned buffers (and
 * see an invalidated buffer there and as ERROR), remove one buffer and
 * then all, and leave nothing pinned.  Prints KTEST lines; exit status = failures.
 *
 *   t_lib dmabuf /dev/gpuasync_emu0
 *
 * The dma-buf pin path (host memory in udmabuf huge pages; needs
 * /dev/udmabuf and free huge pages): each buffer is a whole dma-buf, so the
 * library must add it through upstream's GPU_DmaBuf_Add_Wr/Rd_Buffer and
 * remove all through GPU_DmaBuf_Remove_Buffers, not GA_Add_Dmabuf and
 * GPU_Rem_Nvidia_Memory.  Which commands the driver answered it counts
 * itself (debugfs gpuasync/<card>/commands).  Not kprobes: patching kernel
 * text while the other vCPU runs hung a TCG guest (both CPUs spinning, one
 * on a stale int3 in __schedule, the other waiting for its IPI).
 *
 *   t_lib same_run PLAYED RECORDED
 *
 * Two recorded runs (gpuasync/record.h) hold the same frames: as many, and
 * each with the same payload, TUSER bytes and pulse ID (fs_test.sh plays
 * one into the card with gpuasync-play while the mount records).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "gpuasync/device.h"
#include "gpuasync/frame.h"
#include "gpuasync/record.h"
#include "nv_p2p_stub_uapi.h"

static int failures;
static char sys_dir[256];

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("KTEST FAIL lib:%d: (" #cond ") ", __LINE__);                       \
			printf(" " __VA_ARGS__);                                                   \
			printf(" [%s]\n", ga_last_error());                                        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static int sys_write(const char *name, const char *val)
{
	char path[512];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", sys_dir, name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -1;
}

/* Bounded wait for a landed frame: the doorbell at +4 turns non-zero. */
static int wait_header(struct ga_buf *b, struct ga_header *h)
{
	int i;

	for (i = 0; i < 4000; i++) {
		if (ga_buf_header(b, h) == 0 && h->size)
			return 0;
		usleep(5000);
	}
	return -1;
}

/* Entry @at of the driver's table (of @count) is buffer @b, as its
 * ga_buf_info says, owned by this process and not invalidated. */
static void check_pinned(struct ga_dev *dev, struct ga_buf *b, unsigned int at, unsigned int count)
{
	struct ga_pinned pin[8];
	struct ga_buf_info bi;
	unsigned int n = 0;
	const struct ga_pinned *p;

	CHECK(ga_dev_pinned(dev, pin, 8, &n) == 0 && n == count, "count %u, want %u", n, count);
	CHECK(ga_buf_info(b, &bi) == 0);
	if (n != count || at >= n)
		return;
	p = &pin[at];
	CHECK(p->dir == bi.dir && p->index == bi.index, "entry %u: %d %u", at, p->dir, p->index);
	CHECK(p->gpu_address == bi.gpu_address, "entry %u: gpu 0x%llx", at,
	      (unsigned long long)p->gpu_address);
	CHECK(p->bus_address == bi.bus_address && p->bus_address != 0, "entry %u: bus 0x%llx", at,
	      (unsigned long long)p->bus_address);
	CHECK(p->size == bi.size && p->pages == bi.size / 0x10000, "entry %u: size %zu pages %u",
	      at, p->size, p->pages);
	CHECK(p->owner == (int)getpid(), "entry %u: owner %d", at, p->owner);
	CHECK(!p->invalidated, "entry %u invalidated", at);
}

/* ---- the driver's commands, as it counts them ---------------------------- */

static char card_name[64];

/* How often gpuasync.ko answered command @name on the card under test
 * (debugfs gpuasync/<card>/commands), or -1. */
static long cmd_count(const char *name)
{
	char path[256], line[128], row[64];
	long hits = -1, n;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/gpuasync/%s/commands", card_name);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", row, &n) == 2 && strcmp(row, name) == 0)
			hits = n;
	if (f)
		fclose(f);
	return hits;
}

/* The dma-buf pin path: see the head of this file. */
static int dmabuf_path(const char *path)
{
	static const char *const cmds[] = {
		"GPU_DmaBuf_Add_Wr_Buffer", "GPU_DmaBuf_Add_Rd_Buffer", "GA_Add_Dmabuf",
		"GPU_DmaBuf_Remove_Buffers", "GPU_Rem_Nvidia_Memory", "GPU_Is_Dma_Buf_Supp",
	};
	enum { ADD_WR, ADD_RD, ADD_RANGE, REM_ALL_DMABUF, REM_ALL_NV, ASK_DMABUF, NCMDS };
	struct ga_open_opts opts = GA_OPEN_OPTS_DEFAULT;
	struct ga_buf *w0 = NULL, *w1 = NULL, *r0 = NULL;
	struct ga_dev_info info;
	struct ga_pinned pin[4];
	struct ga_dev *dev = NULL;
	struct ga_header h;
	unsigned int n = 0, i;
	long base[NCMDS];
	int rc;

	snprintf(card_name, sizeof(card_name), "%s",
		 strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
	for (i = 0; i < NCMDS; i++) {
		base[i] = cmd_count(cmds[i]);
		CHECK(base[i] >= 0, "debugfs gpuasync/%s/commands has no %s", card_name, cmds[i]);
	}
#define SINCE(c) (cmd_count(cmds[c]) - base[c])
	opts.use_gpu = false;
	opts.gpu_index = -1;
	opts.pin = GA_PIN_DMABUF;
	rc = ga_dev_open_opts(path, &opts, &dev);
	CHECK(rc == 0, "open %s with pin=dmabuf: %d", path, rc);
	if (rc)
		return 1;
	CHECK(ga_dev_info(dev, &info) == 0 && strcmp(info.pin, "dmabuf") == 0, "pin %s",
	      info.pin);
	CHECK(ga_dev_has(dev, GA_CAP_DMABUF) && ga_dev_has(dev, GA_CAP_DMABUF_WHOLE));
	CHECK(ga_dev_has(dev, GA_CAP_GPUDIRECT));
	CHECK(SINCE(ASK_DMABUF) == 1, "GPU_Is_Dma_Buf_Supp asked %ld times", SINCE(ASK_DMABUF));

	CHECK(ga_buf_create(dev, GA_DIR_WRITE, 0, 0x10000, &w0) == 0);
	CHECK(ga_buf_create(dev, GA_DIR_WRITE, 1, 0x10000, &w1) == 0);
	CHECK(ga_buf_create(dev, GA_DIR_READ, 0, 0x10000, &r0) == 0);
	CHECK(SINCE(ADD_WR) == 2 && SINCE(ADD_RD) == 1, "by value: %ld write, %ld read adds",
	      SINCE(ADD_WR), SINCE(ADD_RD));
	CHECK(SINCE(ADD_RANGE) == 0, "GA_Add_Dmabuf: %ld adds", SINCE(ADD_RANGE));
	CHECK(ga_dev_pinned(dev, pin, 4, &n) == 0 && n == 3, "table: %u", n);
	for (i = 0; i < n && i < 4; i++)
		CHECK(pin[i].dmabuf && pin[i].gpu_address == 0 && pin[i].size == 0x10000,
		      "entry %u: dmabuf %d offset %llu size %zu", i, pin[i].dmabuf,
		      (unsigned long long)pin[i].gpu_address, pin[i].size);
	if (w0 && w1) {
		/* frames land in memory the driver took as whole dma-bufs */
		CHECK(ga_buf_arm(w0) == 0 && ga_buf_arm(w1) == 0);
		CHECK(ga_dev_enable(dev, GA_DIR_WRITE, true) == 0);
		CHECK(sys_write("gen_size", "700") == 0 && sys_write("gen_frames", "2") == 0);
		CHECK(wait_header(w0, &h) == 0 && h.size == 700, "buffer 0: %u", h.size);
		CHECK(wait_header(w1, &h) == 0 && h.size == 700, "buffer 1: %u", h.size);
		CHECK(ga_dev_enable(dev, GA_DIR_WRITE, false) == 0);
	}
	CHECK(ga_buf_destroy_all(dev) == 0);
	CHECK(SINCE(REM_ALL_DMABUF) == 1, "GPU_DmaBuf_Remove_Buffers: %ld", SINCE(REM_ALL_DMABUF));
	CHECK(SINCE(REM_ALL_NV) == 0, "GPU_Rem_Nvidia_Memory: %ld", SINCE(REM_ALL_NV));
	CHECK(ga_dev_pinned(dev, pin, 4, &n) == 0 && n == 0, "left: %u", n);
	ga_dev_close(dev);
#undef SINCE
	printf("KTEST %s libgpuasync_dmabuf_by_value\n", failures ? "FAIL" : "ok");
	return failures;
}

static int same_run(const char *a, const char *b)
{
	struct ga_rec_reader *ra, *rb;
	struct ga_rec_frame fa, fb;
	struct ga_header ha, hb;
	struct ga_rec_file info;
	unsigned long long n = 0;
	int ka, kb = 0;

	if (ga_rec_open(a, &ra, &info) || ga_rec_open(b, &rb, &info)) {
		printf("KTEST FAIL replay_same (%s)\n", ga_last_error());
		return 1;
	}
	while ((ka = ga_rec_next(ra, &fa)) == 1 && (kb = ga_rec_next(rb, &fb)) == 1) {
		ga_header_decode(fa.desc, &ha);
		ga_header_decode(fb.desc, &hb);
		if (fa.payload_bytes != fb.payload_bytes || fa.pulse_ctl != fb.pulse_ctl ||
		    ha.first_user != hb.first_user || ha.last_user != hb.last_user ||
		    memcmp(fa.payload, fb.payload, fa.payload_bytes)) {
			printf("KTEST FAIL replay_same (frame %llu differs)\n", n);
			return 1;
		}
		n++;
	}
	if (ka != 0 || (kb = ga_rec_next(rb, &fb)) != 0) {
		printf("KTEST FAIL replay_same (%llu frames alike, then %s)\n", n,
		       ka < 0 || kb < 0 ? ga_last_error() : "one file ends first");
		return 1;
	}
	ga_rec_close(ra);
	ga_rec_close(rb);
	printf("KTEST ok replay_same (%llu frames)\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	struct ga_open_opts opts = GA_OPEN_OPTS_DEFAULT;
	const char *path = argc > 1 ? argv[1] : "/dev/gpuasync_emu0";
	struct ga_buf *w0 = NULL, *w1 = NULL, *r0 = NULL;
	struct nvstub_stats st = { 0 };
	struct ga_dev_info info;
	struct ga_buf_info bi;
	struct ga_dev *dev = NULL;
	struct ga_header h;
	unsigned int idx[2] = { 0, 1 }, n = 0;
	struct nvstub_range range = { 0 };
	struct ga_pinned pin[8];
	uint8_t payload[64];
	uint32_t v;
	int rc, i, s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 3 && strcmp(argv[1], "same_run") == 0)
		return same_run(argv[2], argv[3]);
	if (argc > 2 && strcmp(argv[1], "dmabuf") == 0) {
		snprintf(sys_dir, sizeof(sys_dir), "/sys/class/gpuasync/%s",
			 strrchr(argv[2], '/') + 1);
		return dmabuf_path(argv[2]);
	}
	snprintf(sys_dir, sizeof(sys_dir), "/sys/class/gpuasync/%s", strrchr(path, '/') + 1);
	opts.use_gpu = false;
	opts.gpu_index = -1;
	rc = ga_dev_open_opts(path, &opts, &dev);
	CHECK(rc == 0, "open %s: %d", path, rc);
	if (rc)
		return 1;
	CHECK(ga_dev_info(dev, &info) == 0);
	CHECK(strcmp(info.backend, "datadev") == 0, "backend %s", info.backend);
	printf("KTEST lib: %s version %u, %u buffers, ddb %u, clock %llu\n", info.path,
	       info.version, info.max_buffers, info.dma_data_bytes,
	       (unsigned long long)info.clock_hz);
	CHECK(info.dma_data_bytes == 32);
	CHECK(info.clock_hz == 250000000ull, "clock from AxiVersion");
	CHECK(ga_dev_has(dev, GA_CAP_SUPPORTED));
	CHECK(ga_dev_has(dev, GA_CAP_REG_MMAP), "register mmap not used");
	CHECK(ga_dev_has(dev, GA_CAP_REMOVE_ONE));
	CHECK(ga_dev_has(dev, GA_CAP_ARM_MANY));
	CHECK(ga_dev_has(dev, GA_CAP_BUFFER_TABLE));
	CHECK(ga_dev_has(dev, GA_CAP_ENABLE_IOCTL));
	CHECK(ga_reg_read(dev, GA_REG_VERSION, 0, &v) == 0 && v == info.version);

	CHECK(ga_buf_create(dev, GA_DIR_WRITE, 0, 0x20000, &w0) == 0);
	CHECK(ga_buf_create(dev, GA_DIR_WRITE, 1, 0x20000, &w1) == 0);
	CHECK(ga_buf_create(dev, GA_DIR_READ, 0, 0x10000, &r0) == 0);
	CHECK(ga_buf_create(dev, GA_DIR_WRITE, 5, 0x20000, &(struct ga_buf *){ NULL }) == -EINVAL,
	      "out-of-order index accepted");
	if (!w0 || !w1 || !r0) {
		printf("KTEST FAIL lib: no buffers, stopping\n");
		return 1;
	}
	CHECK(ga_buf_info(w1, &bi) == 0 && bi.bus_address != 0 && !bi.gpu_memory);

	/* FPGA->GPU: arm both, run the engine, let the card send two frames. */
	CHECK(ga_buf_arm_many(dev, idx, 2) == 0);
	CHECK(ga_dev_enable(dev, GA_DIR_WRITE, true) == 0);
	CHECK(sys_write("gen_size", "1000") == 0);
	CHECK(sys_write("gen_frames", "2") == 0);
	CHECK(wait_header(w0, &h) == 0 && h.size == 1000 && h.first_user == 0x02,
	      "buffer 0 header size %u", h.size);
	CHECK(wait_header(w1, &h) == 0 && h.size == 1000, "buffer 1 header size %u", h.size);
	CHECK(ga_buf_read(w0, info.dma_data_bytes + 4, payload, 8) == 0);
	for (i = 0; i < 8; i++)
		CHECK(payload[i] == (uint8_t)(payload[0] + i), "payload byte %d", i);
	CHECK(ga_reg_read_name(dev, "rx_frame_count", 0, &v) == 0 && v >= 2);

	/* GPU->FPGA: one frame out of the read buffer. */
	for (i = 0; i < 64; i++)
		payload[i] = (uint8_t)(i + 1);
	CHECK(ga_buf_write(r0, info.dma_data_bytes, payload, 64) == 0);
	CHECK(ga_dev_enable(dev, GA_DIR_READ, true) == 0);
	CHECK(ga_buf_send(r0, 64) == 0);
	for (i = 0; i < 4000; i++) {
		if (ga_buf_info(r0, &bi) == 0 && bi.state == GA_BUF_READY)
			break;
		usleep(5000);
	}
	CHECK(bi.state == GA_BUF_READY, "read buffer state %s", ga_buf_state_name(bi.state));

	/* The driver's table of pinned buffers, as the library reads it. */
	check_pinned(dev, w0, 0, 3);
	check_pinned(dev, w1, 1, 3);
	check_pinned(dev, r0, 2, 3);
	CHECK(ga_dev_pinned(dev, pin, 1, &n) == 0 && n == 3, "cap 1: count %u", n);
	CHECK(ga_buf_info(w1, &bi) == 0 && bi.state == GA_BUF_READY, "w1 state %s",
	      ga_buf_state_name(bi.state));

	/* Write buffer 1's memory goes away (cudaFree): the table says so and
	 * the library marks the buffer ERROR; the others are untouched. */
	s = open("/dev/nv_p2p_stub", O_RDWR);
	CHECK(s >= 0);
	range.va = bi.gpu_address;
	range.len = bi.size;
	CHECK(s >= 0 && ioctl(s, NVSTUB_INVALIDATE, &range) == 1, "one callback expected");
	if (s >= 0)
		close(s);
	n = 0;
	CHECK(ga_dev_pinned(dev, pin, 8, &n) == 0 && n == 3, "count %u", n);
	for (i = 0; i < (int)n && i < 8; i++)
		CHECK(pin[i].invalidated == (pin[i].dir == GA_DIR_WRITE && pin[i].index == 1),
		      "entry %d (%s %u) invalidated %d", i, pin[i].dir == GA_DIR_WRITE ? "w" : "r",
		      pin[i].index, pin[i].invalidated);
	CHECK(ga_buf_info(w1, &bi) == 0 && bi.state == GA_BUF_ERROR, "invalidated w1 state %s",
	      ga_buf_state_name(bi.state));
	CHECK(ga_buf_info(w0, &bi) == 0 && bi.state == GA_BUF_READY, "w0 state %s",
	      ga_buf_state_name(bi.state));
	CHECK(ga_buf_arm(w1) == -ENXIO);

	/* Remove the last write buffer alone, then everything. */
	CHECK(ga_dev_enable(dev, GA_DIR_WRITE, false) == 0);
	CHECK(ga_buf_destroy(w1) == 0);
	CHECK(ga_buf_count(dev, GA_DIR_WRITE) == 1);
	CHECK(ga_dev_pinned(dev, pin, 8, &n) == 0 && n == 2, "after destroy: count %u", n);
	check_pinned(dev, r0, 1, 2);
	CHECK(ga_buf_destroy_all(dev) == 0);
	ga_dev_close(dev);

	s = open("/dev/nv_p2p_stub", O_RDWR);
	CHECK(s >= 0 && ioctl(s, NVSTUB_STATS, &st) == 0);
	CHECK(st.pins == 0 && st.mappings == 0 && st.stale_dma == 0,
	      "pins %llu maps %llu stale %llu", (unsigned long long)st.pins,
	      (unsigned long long)st.mappings, (unsigned long long)st.stale_dma);
	if (s >= 0)
		close(s);
	printf("KTEST %s libgpuasync_datadev\n", failures ? "FAIL" : "ok");
	return failures;
}
