/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gpuasync-consumer: a CUDA application consuming frames from a mounted
 * gpuasyncfs the way a GPU DAQ program does on the real card.
 *
 *   $ gpuasyncfs --sim /mnt/ga
 *   $ for i in 0 1 2 3; do mkdir /mnt/ga/buffers/$i /mnt/ga/read_buffers/$i; done
 *   $ gpuasync-consumer -n 10000 -p prbs -l /mnt/ga   # then start the generator
 *
 * What it does, all of it from the GPU's side of the fence:
 *   - opens every buffers/<i>/ipc_handle (and read_buffers/<i>/ipc_handle
 *     with -l) with cuIpcOpenMemHandle: the daemon owns the memory, this
 *     process only maps it;
 *   - maps the card's register block (device/registers_path: the simulated
 *     card's shared memory, or /dev/datadev_N) and registers it with CUDA
 *     (cuMemHostRegister, IOMEMORY for a PCIe BAR, DEVICEMAP for shared
 *     memory), so stream operations can write free-list and read-size
 *     registers directly;
 *   - arms every buffer from the GPU, enables the engine(s), and then for
 *     every frame enqueues, on one stream: wait for the size doorbell at +4
 *     (cuStreamWaitValue32 GEQ 1); copy the frame to a host slot for
 *     checking; with -l wait until the read buffer is idle, copy the payload
 *     into it, clear its completion word and copy the header's size word
 *     into the read-size register (the GPU->FPGA trigger, with the frame's
 *     own size); clear the doorbell; write the free-list register (re-arm).
 *   - the CPU only checks, a lap behind: header fields and every payload
 *     byte against the pattern (ga_pattern_check, the generator's own
 *     definition), then the card's counters at the end.
 *
 * The filesystem files are read for setup and counters only; frames never
 * pass through the daemon.  Exit status 0 only when every frame and counter
 * checked out.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include <gpuasync/gpuasync.h>

#include "cuda_check.h"
#include "mount_files.h"

#define MAX_BUFS 1024

static int verbose;

/* ---- the filesystem side ------------------------------------------------ */

/* Buffers present in buffers/ or read_buffers/: 0..n-1 must all exist. */
static unsigned int count_buffers(const char *dir)
{
	char rel[64], tmp[256];
	unsigned int n = 0;

	for (; n < MAX_BUFS; n++) {
		snprintf(rel, sizeof(rel), "%s/%u/size", dir, n);
		if (fs_read(rel, tmp, sizeof(tmp)))
			break;
	}
	return n;
}

static CUdeviceptr open_ipc(const char *dir, unsigned int i)
{
	char rel[64];
	CUipcMemHandle h;
	CUdeviceptr d;

	snprintf(rel, sizeof(rel), "%s/%u/ipc_handle", dir, i);
	fs_ipc_handle(rel, h.reserved, sizeof(h.reserved));
	CK(cuIpcOpenMemHandle(&d, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
	return d;
}

/* CRC-32 (IEEE, reflected), to compare with the card's last_read_crc. */
static uint32_t crc32_ieee(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xEDB88320u & -(c & 1));
	}
	return ~c;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: gpuasync-consumer [options] MOUNTPOINT\n"
		"  -n N        frames to consume (default 10000)\n"
		"  -p PATTERN  prbs|counter|zero|none: payload check (default prbs)\n"
		"  -q SEQ      frame number of the first frame (default 0)\n"
		"  -l          loopback: send every payload back through read_buffers/<i>\n"
		"  -g SIZE     start the simulated card's generator for N frames of SIZE bytes\n"
		"  -R PATH[:OFF] register block to map instead of the one device/registers_path\n"
		"              names (\"PATH 0xOFF\" there)\n"
		"  -d GPU      CUDA device ordinal (default: 0)\n"
		"  -v          print every frame header\n");
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t nframes = 10000, seq0 = 0, gen_size = 0, reg_off = 0;
	const char *pattern_name = "prbs", *reg_arg = NULL;
	bool loopback = false, check = true;
	enum ga_pattern pattern = GA_PATTERN_PRBS;
	int gpu = 0, opt;

	while ((opt = getopt(argc, argv, "n:p:q:lg:R:d:vh")) != -1) {
		switch (opt) {
		case 'n':
			nframes = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			pattern_name = optarg;
			break;
		case 'q':
			seq0 = strtoull(optarg, NULL, 0);
			break;
		case 'l':
			loopback = true;
			break;
		case 'g':
			gen_size = strtoull(optarg, NULL, 0);
			break;
		case 'R':
			reg_arg = optarg;
			break;
		case 'd':
			gpu = atoi(optarg);
			break;
		case 'v':
			verbose++;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1 || nframes == 0)
		usage();
	mnt = argv[optind];
	if (strcmp(pattern_name, "none") == 0)
		check = false;
	else if (ga_pattern_parse(pattern_name, &pattern))
		die("unknown pattern '%s'", pattern_name);

	/* ---- what the card and the filesystem say ---- */
	unsigned int version = fs_u64("device/version");
	unsigned int ddb = fs_u64("device/dma_data_bytes");
	unsigned int maxb = fs_u64("device/max_buffers");
	enum ga_layout layout = ga_layout_for_version(version, false);
	unsigned int nbuf = count_buffers("buffers");
	unsigned int nrd = loopback ? count_buffers("read_buffers") : 0;
	size_t bufsize;

	if (nbuf == 0)
		die("no buffers: mkdir %s/buffers/0 first", mnt);
	if (loopback && nrd < nbuf)
		die("loopback needs read_buffers/0..%u (found %u)", nbuf - 1, nrd);
	bufsize = fs_u64("buffers/0/size");
	for (unsigned int i = 1; i < nbuf; i++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "buffers/%u/size", i);
		if (fs_u64(rel) < bufsize)
			bufsize = fs_u64(rel);
	}
	if (loopback && version < 4)
		die("loopback uses the V4 read path (completion word); firmware is version %u",
		    version);

	/* ---- CUDA ---- */
	CUdevice dev;
	CUcontext ctx;
	CUstream st;
	char gpu_name[128];

	CK(cuInit(0));
	CK(cuDeviceGet(&dev, gpu));
	CK(cuDeviceGetName(gpu_name, sizeof(gpu_name), dev));
	/* Stream memory operations (cuStreamWaitValue32 and friends) are
	 * available by default since CUDA 11.7; older drivers needed the
	 * nvidia module option NVreg_EnableStreamMemOPs=1. */
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));

	/* ---- the register block, GPU-visible ---- */
	char regpath[4096];
	volatile uint32_t *regs;
	CUdeviceptr dregs;
	bool iomem;
	int fd;

	if (reg_arg) {
		snprintf(regpath, sizeof(regpath), "%s", reg_arg);
	} else {
		int rc = fs_read("device/registers_path", regpath, sizeof(regpath));

		if (rc)
			die("%s/device/registers_path: %s; give the register block with -R "
			    "PATH[:OFF]",
			    mnt, strerror(-rc));
	}
	/* device/registers_path is "PATH 0xOFFSET"; -R also takes "PATH:OFFSET"
	 * or "PATH".  The last separator splits, so PATH itself may hold one. */
	{
		char *sep = strrchr(regpath, ' ');

		if (!sep && reg_arg)
			sep = strrchr(regpath, ':');
		if (sep) {
			char *end;

			*sep = '\0';
			reg_off = strtoull(sep + 1, &end, 0);
			if (end == sep + 1 || *end)
				die("register block '%s': '%s' is not an offset", regpath, sep + 1);
		}
	}
	iomem = strncmp(regpath, "/dev/shm/", 9) != 0;
	fd = open(regpath, O_RDWR);
	if (fd < 0)
		die("open %s: %s", regpath, strerror(errno));
	regs = mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, reg_off);
	if (regs == MAP_FAILED)
		die("mmap %s at 0x%" PRIx64 ": %s", regpath, reg_off, strerror(errno));
	close(fd);
	/* A PCIe BAR is I/O memory (needs CAP_SYS_ADMIN); shared memory is
	 * ordinary pages the GPU reaches through a device mapping. */
	CK(cuMemHostRegister((void *)regs, GA_CORE_SIZE,
			     iomem ? CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_DEVICEMAP
				   : CU_MEMHOSTREGISTER_DEVICEMAP));
	CK(cuMemHostGetDevicePointer(&dregs, (void *)regs, 0));
	{
		uint32_t voff;

		if (ga_reg_offset(GA_REG_VERSION, layout, version, 0, maxb, &voff) ||
		    ga_reg_field_get(GA_REG_VERSION, layout, regs[voff / 4]) != version)
			die("%s does not look like this card's registers (version mismatch)",
			    regpath);
	}

	/* ---- buffers ---- */
	static CUdeviceptr rx[MAX_BUFS], tx[MAX_BUFS];
	static uint32_t free_off[MAX_BUFS], rsize_off[MAX_BUFS];
	uint8_t *slots;
	CUevent *ev;

	for (unsigned int i = 0; i < nbuf; i++) {
		rx[i] = open_ipc("buffers", i);
		if (ga_reg_offset(GA_REG_FREE_LIST, layout, version, i, maxb, &free_off[i]))
			die("no free-list register for buffer %u", i);
		if (loopback) {
			tx[i] = open_ipc("read_buffers", i);
			if (ga_reg_offset(GA_REG_READ_SIZE, layout, version, i, maxb,
					  &rsize_off[i]))
				die("no read-size register for buffer %u", i);
		}
	}
	CK(cuMemHostAlloc((void **)&slots, (size_t)nbuf * bufsize, 0));
	ev = calloc(nbuf, sizeof(*ev));
	for (unsigned int i = 0; i < nbuf; i++)
		CK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
	printf("consumer: %s, %u buffers of %zu bytes, firmware v%u, payload at +%u, %s%s\n",
	       gpu_name, nbuf, bufsize, version, ddb, check ? pattern_name : "no check",
	       loopback ? ", loopback" : "");

	/* Arm from the GPU, as on hardware: doorbells cleared, read buffers
	 * marked idle (completion word 1), every buffer on the free list. */
	for (unsigned int i = 0; i < nbuf; i++) {
		CK(cuStreamWriteValue32(st, rx[i] + GA_HDR_SIZE_OFFSET, 0, 0));
		if (loopback)
			CK(cuStreamWriteValue32(st, tx[i], 1, 0));
		CK(cuStreamWriteValue32(st, dregs + free_off[i], 1, 0));
	}
	CK(cuStreamSynchronize(st));
	fs_write("registers/count_reset", "1");
	if (loopback)
		fs_write("registers/read_enable", "1");
	fs_write("registers/write_enable", "1");
	if (gen_size) {
		char v[32];

		/* Starting the generator restarts its frame numbers at 0. */
		fs_write("sim/running", "0");
		fs_write("sim/pattern", check ? pattern_name : "zero");
		fs_write("sim/rate", "0");
		snprintf(v, sizeof(v), "%" PRIu64, gen_size);
		fs_write("sim/size", v);
		snprintf(v, sizeof(v), "%" PRIu64, nframes);
		fs_write("sim/remaining", v);
		fs_write("sim/running", "1");
	}

	/* ---- the loop ---- */
	uint64_t bad = 0, bytes = 0, first_bad = UINT64_MAX;
	uint32_t last_crc = 0;
	double t0 = now_s(), t1;

	/* Check frame @k, whose copy sits in its slot (event done). */
#define VERIFY(k)                                                                                  \
	do {                                                                                       \
		uint64_t k_ = (k);                                                                 \
		const uint8_t *s_ = slots + (k_ % nbuf) * bufsize;                                 \
		struct ga_header h_;                                                               \
		bool ok_;                                                                          \
		ga_header_decode(s_, &h_);                                                         \
		ok_ = h_.size > 0 && h_.size <= bufsize - ddb && h_.result == 0 && !h_.overflow;   \
		if (ok_ && check)                                                                  \
			ok_ = ga_pattern_check(pattern, (uint32_t)(seq0 + k_), s_ + ddb,           \
					       h_.size) < 0;                                       \
		if (verbose)                                                                       \
			printf("frame %" PRIu64 " buf %" PRIu64 " size %u result %u ovf %d "       \
			       "user 0x%02x/0x%02x %s\n",                                          \
			       k_, k_ % nbuf, h_.size, h_.result, h_.overflow, h_.first_user,      \
			       h_.last_user, ok_ ? "ok" : "BAD");                                  \
		if (!ok_) {                                                                        \
			bad++;                                                                     \
			if (first_bad == UINT64_MAX)                                               \
				first_bad = k_;                                                    \
		} else {                                                                           \
			bytes += h_.size;                                                          \
		}                                                                                  \
		if (k_ == nframes - 1 && ok_)                                                      \
			last_crc = crc32_ieee(s_ + ddb, h_.size);                                  \
	} while (0)

	for (uint64_t k = 0; k < nframes; k++) {
		unsigned int i = k % nbuf;

		if (k >= nbuf) {
			/* The slot's previous frame: wait for its copy, check it. */
			CK(cuEventSynchronize(ev[i]));
			VERIFY(k - nbuf);
		}
		CK(cuStreamWaitValue32(st, rx[i] + GA_HDR_SIZE_OFFSET, 1,
				       CU_STREAM_WAIT_VALUE_GEQ));
		CK(cuMemcpyDtoHAsync(slots + (size_t)i * bufsize, rx[i], bufsize, st));
		if (loopback) {
			CK(cuStreamWaitValue32(st, tx[i], 1, CU_STREAM_WAIT_VALUE_GEQ));
			CK(cuMemcpyDtoDAsync(tx[i] + ddb, rx[i] + ddb, bufsize - ddb, st));
			CK(cuStreamWriteValue32(st, tx[i], 0, 0));
			/* The trigger carries the frame's own size: copy the
			 * header's size word straight into read_size[i]. */
			CK(cuMemcpyDtoDAsync(dregs + rsize_off[i], rx[i] + GA_HDR_SIZE_OFFSET, 4,
					     st));
		}
		CK(cuStreamWriteValue32(st, rx[i] + GA_HDR_SIZE_OFFSET, 0, 0));
		CK(cuStreamWriteValue32(st, dregs + free_off[i], 1, 0));
		CK(cuEventRecord(ev[i], st));
	}
	CK(cuStreamSynchronize(st));
	if (loopback) /* the last sends have completed once their words are 1 */
		for (unsigned int i = 0; i < nbuf; i++)
			CK(cuStreamWaitValue32(st, tx[i], 1, CU_STREAM_WAIT_VALUE_GEQ));
	CK(cuStreamSynchronize(st));
	t1 = now_s();
	for (uint64_t k = nframes > nbuf ? nframes - nbuf : 0; k < nframes; k++)
		VERIFY(k);

	/* ---- the card's side of the story ---- */
	uint64_t rxc = fs_u64("registers/rx_frame_count");
	uint64_t werr = fs_u64("registers/axi_write_error_count");
	int fails = 0;

	printf("consumer: %" PRIu64 " frames, %" PRIu64 " bad (first %" PRId64
	       "), %.1f MB in %.3f s"
	       ": %.0f frames/s, %.2f GB/s\n",
	       nframes, bad, first_bad == UINT64_MAX ? (int64_t)-1 : (int64_t)first_bad,
	       bytes / 1e6, t1 - t0, nframes / (t1 - t0), bytes / (t1 - t0) / 1e9);
	printf("card: rx_frame_count %" PRIu64 " axi_write_error_count %" PRIu64 "\n", rxc, werr);
	if (bad)
		fails++;
	if (rxc != nframes || werr) {
		printf("FAIL: card counters disagree with %" PRIu64 " frames\n", nframes);
		fails++;
	}
	if (loopback) {
		uint64_t txc = fs_u64("registers/tx_frame_count");
		uint64_t rerr = fs_u64("registers/axi_read_error_count");
		char buf[64];

		printf("card: tx_frame_count %" PRIu64 " axi_read_error_count %" PRIu64 "\n", txc,
		       rerr);
		if (txc != nframes || rerr) {
			printf("FAIL: read path counters disagree with %" PRIu64 " frames\n",
			       nframes);
			fails++;
		}
		if (fs_read("sim/stats/last_read_crc", buf, sizeof(buf)) == 0) {
			uint32_t card_crc = strtoul(buf, NULL, 0);

			printf("card: last frame received CRC-32 0x%08x, sent 0x%08x\n", card_crc,
			       last_crc);
			if (card_crc != last_crc) {
				printf("FAIL: loopback payload differs\n");
				fails++;
			}
		}
	}

	fs_write("registers/write_enable", "0");
	if (loopback)
		fs_write("registers/read_enable", "0");
	for (unsigned int i = 0; i < nbuf; i++) {
		cuIpcCloseMemHandle(rx[i]);
		if (loopback)
			cuIpcCloseMemHandle(tx[i]);
		cuEventDestroy(ev[i]);
	}
	cuMemFreeHost(slots);
	cuMemHostUnregister((void *)regs);
	munmap((void *)regs, GA_CORE_SIZE);
	cuStreamDestroy(st);
	cuDevicePrimaryCtxRelease(dev);
	printf("%s\n", fails ? "consumer: FAILED" : "consumer: OK");
	return fails ? 1 : 0;
}
