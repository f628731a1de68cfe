/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gpuasync-bench: how fast frames move between a GpuAsyncCore card and GPU
 * memory, through the public library API only, so the same binary measures
 * the simulated card and a real one.
 *
 *   gpuasync-bench load  [-D DEV] [-p PATTERN] [-b BUFFERS] [-g GROUP] [-t SECONDS]
 *                        [-S SIZE] [-R FMT [-P HZ]]
 *       Sustained FPGA->GPU throughput and frame rate for frames of 4 KiB
 *       .. 4 MiB, with a GPU-side consumer (stream memory operations wait
 *       on the doorbells, clear them and re-arm through the mapped register
 *       block, as on hardware), next to cuMemcpyHtoD of the same sizes from
 *       pinned memory measured in the same run: the ceiling.  The consumer
 *       takes GROUP frames at a time (default 8): one batch of waits, one of
 *       clears, one of re-arms (cuStreamBatchMemOp), so that its own cost
 *       per frame, printed first, stays below the card's; -g 1 is a wait,
 *       a clear and a re-arm per frame.  On the simulated card the
 *       generator is the source and the card's CPU time per frame is
 *       printed (ga_sim_stats cpu_ns); on a real card frames must come from
 *       outside, and only the consumer side is timed.
 *
 *       With -R FMT (the simulated card only) the source is a replay of
 *       recorded runs instead of the generator: for each frame size the
 *       file FMT names with that size (printf %zu, e.g. /tmp/run-%zu.gar,
 *       made beforehand with gpuasync-synth -s SIZE), played with
 *       sim/replay's path (ga_sim_replay_start) as fast as the consumer
 *       takes it, or at -P HZ: then the rate reached over the run is
 *       printed next to the one asked for (docs/record.md).  -S SIZE
 *       measures that one frame size of the sweep only.
 *
 *   gpuasync-bench paths [-D DEV] [-r REPS]
 *       One frame at a time, latency per transfer for each path:
 *         write-direct    card -> GPU memory (doorbell seen)
 *         write-indirect  card -> host memory, then cuMemcpyHtoD
 *         read-direct     GPU memory -> card (completion word seen)
 *         read-indirect   cuMemcpyDtoH to host memory, then host -> card
 *       over a size sweep; a path the device cannot do is reported n/a.
 *
 * Both fit t = l + s/b (latency l, bandwidth b) by least squares per path.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include <gpuasync/gpuasync.h>

#include "cuda_check.h"

#define GA(call)                                                                                   \
	do {                                                                                       \
		int r_ = (call);                                                                   \
		if (r_ < 0)                                                                        \
			die("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, strerror(-r_),        \
			    ga_last_error());                                                      \
	} while (0)

#define KiB	 1024u
#define MiB	 (1024u * 1024u)
#define MAXBUF	 64
#define MAXGROUP 64

/* One batch of @n 32-bit stream memory operations of kind @op (a wait
 * for >= @val, or a write of @val) at @addr[0..n). */
static void memops(CUstream st, CUstreamBatchMemOpType op, const CUdeviceptr *addr, unsigned int n,
		   uint32_t val)
{
	CUstreamBatchMemOpParams p[MAXGROUP];

	memset(p, 0, n * sizeof(p[0]));
	for (unsigned int j = 0; j < n; j++) {
		if (op == CU_STREAM_MEM_OP_WAIT_VALUE_32) {
			p[j].waitValue.operation = op;
			p[j].waitValue.address = addr[j];
			p[j].waitValue.value = val;
			p[j].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
		} else {
			p[j].writeValue.operation = op;
			p[j].writeValue.address = addr[j];
			p[j].writeValue.value = val;
			p[j].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
		}
	}
	CK(cuStreamBatchMemOp(st, n, p, 0));
}

/* The consumer's share of frames k..k+n-1 (buffers k % nbuf on, no wrap
 * inside a group): wait for every doorbell, clear them, re-arm them. */
static void consume_group(CUstream st, const CUdeviceptr *bell, const CUdeviceptr *rearm,
			  unsigned int n)
{
	memops(st, CU_STREAM_MEM_OP_WAIT_VALUE_32, bell, n, 1);
	memops(st, CU_STREAM_MEM_OP_WRITE_VALUE_32, bell, n, 0);
	memops(st, CU_STREAM_MEM_OP_WRITE_VALUE_32, rearm, n, 1);
}

/* trap=no: the register mapping is registered with CUDA below, which
 * needs every page writable (the store trap keeps the control page
 * read-only; docs/sim.md). */
static const char *spec = "sim:version=4,max_buffers=64,trap=no";
static CUdevice cudev;
static CUcontext cuctx;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t round64k(size_t n)
{
	return (n + GA_GPU_PAGE_SIZE - 1) / GA_GPU_PAGE_SIZE * GA_GPU_PAGE_SIZE;
}

/* Least squares t = l + s/b over (s_i, t_i); l in seconds, b in bytes/s. */
static void fit(const double *s, const double *t, int n, double *l, double *b)
{
	double ms = 0, mt = 0, sst = 0, sss = 0;

	for (int i = 0; i < n; i++) {
		ms += s[i] / n;
		mt += t[i] / n;
	}
	for (int i = 0; i < n; i++) {
		sst += (s[i] - ms) * (t[i] - mt);
		sss += (s[i] - ms) * (s[i] - ms);
	}
	double slope = sss > 0 ? sst / sss : 0;

	*l = mt - slope * ms;
	*b = slope > 0 ? 1 / slope : INFINITY;
}

static void cuda_up(int gpu)
{
	CK(cuInit(0));
	CK(cuDeviceGet(&cudev, gpu));
	CK(cuDevicePrimaryCtxRetain(&cuctx, cudev));
	CK(cuCtxSetCurrent(cuctx));
}

static struct ga_dev *open_dev(bool gpu, struct ga_dev_info *info)
{
	struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;
	struct ga_dev *dev;

	o.use_gpu = gpu;
	GA(ga_dev_open_opts(spec, &o, &dev));
	GA(ga_dev_info(dev, info));
	/* The library made the primary context current on its threads; keep
	 * ours current here (the same context). */
	CK(cuCtxSetCurrent(cuctx));
	return dev;
}

/* ---- load ---------------------------------------------------------------- */

/* Time back-to-back cuMemcpyHtoD of @size from pinned memory. */
static double htod_time(CUdeviceptr d, void *pinned, size_t size, double budget)
{
	int n = 0;
	double t0 = now_s(), t;

	CK(cuMemcpyHtoD(d, pinned, size)); /* warm */
	t0 = now_s();
	do {
		CK(cuMemcpyHtoD(d, pinned, size));
		n++;
		t = now_s();
	} while (t - t0 < budget || n < 5);
	return (t - t0) / n;
}

/* Time per copy of back-to-back cuMemcpyHtoDAsync on one stream (pipelined,
 * as the card's queued copies are): the copy engine's own ceiling. */
static double htod_async_time(CUdeviceptr d, void *pinned, size_t size, CUstream st, double budget)
{
	int n = 0, batch = 64;
	double t0, t;

	CK(cuMemcpyHtoDAsync(d, pinned, size, st));
	CK(cuStreamSynchronize(st));
	t0 = now_s();
	do {
		for (int i = 0; i < batch; i++)
			CK(cuMemcpyHtoDAsync(d, pinned, size, st));
		CK(cuStreamSynchronize(st));
		n += batch;
		t = now_s();
	} while (t - t0 < budget);
	return (t - t0) / n;
}

static int cmd_load(int argc, char **argv)
{
	const char *pattern_name = "zero", *replay_fmt = NULL;
	unsigned int nbuf = 32, group = 8;
	uint64_t replay_hz = 0;
	size_t only = 0;
	double budget = 0.4;
	int opt;

	while ((opt = getopt(argc, argv, "D:p:b:g:t:R:P:S:")) != -1) {
		switch (opt) {
		case 'S':
			only = strtoull(optarg, NULL, 0);
			break;
		case 'R':
			replay_fmt = optarg;
			break;
		case 'P':
			replay_hz = strtoull(optarg, NULL, 0);
			break;
		case 'D':
			spec = optarg;
			break;
		case 'p':
			pattern_name = optarg;
			break;
		case 'b':
			nbuf = atoi(optarg);
			break;
		case 'g':
			group = atoi(optarg);
			break;
		case 't':
			budget = atof(optarg);
			break;
		default:
			die("usage: gpuasync-bench load [-D DEV] [-p zero|counter|prbs] [-b "
			    "BUFFERS] [-g GROUP] [-t SECONDS] [-S SIZE] [-R REPLAY_FMT [-P HZ]]");
		}
	}
	if (nbuf < 1 || nbuf > MAXBUF)
		die("-b: 1..%d buffers", MAXBUF);
	enum ga_pattern pattern;

	GA(ga_pattern_parse(pattern_name, &pattern));
	cuda_up(0);

	struct ga_dev_info info;
	struct ga_dev *dev = open_dev(true, &info);
	bool sim = ga_dev_has(dev, GA_CAP_SIM);
	char gpu_name[128];

	CK(cuDeviceGetName(gpu_name, sizeof(gpu_name), cudev));
	if (!ga_dev_has(dev, GA_CAP_GPU_MEMORY))
		die("buffers are not in GPU memory: %s", info.memory_note);
	if (replay_fmt && !sim)
		die("-R: replay is the simulated card's");
	if (nbuf > info.max_buffers)
		nbuf = info.max_buffers;
	if (group < 1 || group > MAXGROUP || nbuf % group)
		die("-g: 1..%d, dividing the number of buffers (%u)", MAXGROUP, nbuf);

	/* Registers, GPU-visible. */
	volatile uint32_t *regs;
	CUdeviceptr dregs;

	GA(ga_dev_map_regs(dev, &regs));
	CK(cuMemHostRegister((void *)regs, GA_CORE_SIZE,
			     sim ? CU_MEMHOSTREGISTER_DEVICEMAP
				 : CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_DEVICEMAP));
	CK(cuMemHostGetDevicePointer(&dregs, (void *)regs, 0));

	static const size_t sizes[] = {4 * KiB,	 8 * KiB,   16 * KiB,  32 * KiB,
				       64 * KiB, 128 * KiB, 256 * KiB, 512 * KiB,
				       1 * MiB,	 2 * MiB,   4 * MiB};
	const int ns = sizeof(sizes) / sizeof(sizes[0]);
	double ss[16], tc[16], tg[16], ta[16];
	int nm = 0; /* sizes measured */
	void *pinned;
	CUdeviceptr dtmp;
	CUstream st;

	CK(cuMemHostAlloc(&pinned, 4 * MiB, 0));
	memset(pinned, 0x5A, 4 * MiB);
	CK(cuMemAlloc(&dtmp, 4 * MiB));
	CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));

	printf("# gpuasync-bench load: %s, device %s (%s, v%u), %u buffers, pattern %s, consumer "
	       "groups of %u\n",
	       gpu_name, info.path, info.backend, info.version, nbuf, pattern_name, group);
	{
		/* The consumer's own ceiling: the same stream operations per
		 * group with the doorbells rung by the GPU itself (one batch of
		 * writes more) and the re-arms going to mapped host memory, as
		 * the registers do. */
		uint32_t *hw;
		CUdeviceptr dhw, bells[MAXGROUP], arms[MAXGROUP];
		const unsigned int n = 100000 / group * group;
		double t0;

		CK(cuMemHostAlloc((void **)&hw, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
		CK(cuMemHostGetDevicePointer(&dhw, hw, 0));
		for (unsigned int j = 0; j < group; j++) {
			bells[j] = dtmp + j * 4096 + GA_HDR_SIZE_OFFSET;
			arms[j] = dhw + 4 * j;
		}
		CK(cuStreamSynchronize(st));
		t0 = now_s();
		for (unsigned int k = 0; k < n; k += group) {
			memops(st, CU_STREAM_MEM_OP_WRITE_VALUE_32, bells, group, 1);
			consume_group(st, bells, arms, group);
		}
		CK(cuStreamSynchronize(st));
		printf("# GPU consumer alone (doorbells, waits, clears, re-arms): %.0f frames/s\n",
		       n / (now_s() - t0));
		CK(cuMemFreeHost(hw));
	}
	printf("%10s %12s %12s %12s %12s %8s %14s %8s %10s\n", "size", "frames/s", "card GB/s",
	       "HtoD GB/s", "HtoD/s", "ratio", "async GB/s", "ratio", "CPU us/fr");

	for (int si = 0; si < ns; si++) {
		size_t size = sizes[si];
		size_t bsize = round64k(size + info.dma_data_bytes);

		if (only && size != only)
			continue;
		struct ga_buf *b[MAXBUF];
		CUdeviceptr bell[MAXBUF], rearm[MAXBUF];
		uint32_t free_off[MAXBUF];
		uint64_t frames;
		double t0, t1;

		for (unsigned int i = 0; i < nbuf; i++) {
			struct ga_buf_info bi;

			GA(ga_buf_create(dev, GA_DIR_WRITE, i, bsize, &b[i]));
			GA(ga_buf_info(b[i], &bi));
			bell[i] = (CUdeviceptr)bi.gpu_address + GA_HDR_SIZE_OFFSET;
			GA(ga_reg_offset(GA_REG_FREE_LIST, info.layout, info.version, i,
					 info.max_buffers, &free_off[i]));
			rearm[i] = dregs + free_off[i];
		}
		/* The ceiling first, on an idle bus. */
		double thtod = htod_time(dtmp, pinned, size, budget / 4);
		double tasync = htod_async_time(dtmp, pinned, size, st, budget / 4);

		/* Enough frames for about @budget seconds at the ceiling. */
		frames = (uint64_t)(budget / thtod);
		if (frames < 2000)
			frames = 2000;
		if (frames > 400000)
			frames = 400000;
		if (replay_hz) /* paced: the run lasts -t seconds */
			frames = (uint64_t)(replay_hz * budget) / group * group + group;

		/* Arm from the GPU, enable, then consume on the stream. */
		for (unsigned int i = 0; i < nbuf; i++) {
			CK(cuStreamWriteValue32(st, bell[i], 0, 0));
			CK(cuStreamWriteValue32(st, dregs + free_off[i], 1, 0));
		}
		CK(cuStreamSynchronize(st));
		GA(ga_dev_enable(dev, GA_DIR_WRITE, true));
		struct ga_sim_stats st0, st1;

		if (sim) {
			struct ga_sim_gen g = {.running = true,
					       .rate_hz = 0,
					       .size = (uint32_t)size,
					       .pattern = pattern,
					       .remaining = frames,
					       .first_user = 0x02};

			GA(ga_sim_stats(dev, &st0));
			t0 = now_s();
			if (replay_fmt) {
				/* The recorded run of this size, played again and again. */
				char path[512];
				struct ga_sim_replay r = {
					.path = path,
					.rate_hz = replay_hz ? replay_hz : GA_SIM_REPLAY_MAX,
					.count = frames,
				};

				snprintf(path, sizeof(path), replay_fmt, size);
				GA(ga_sim_replay_start(dev, &r));
			} else {
				GA(ga_sim_gen_set(dev, &g));
			}
		} else {
			t0 = now_s();
		}
		for (uint64_t k = 0; k < frames;) {
			unsigned int i = k % nbuf;
			unsigned int n = frames - k < group ? (unsigned int)(frames - k) : group;

			if (!sim && k == 0) {
				/* Real card: time from the first frame on. */
				n = 1;
				consume_group(st, &bell[i], &rearm[i], n);
				CK(cuStreamSynchronize(st));
				t0 = now_s();
			} else {
				consume_group(st, &bell[i], &rearm[i], n);
			}
			k += n;
			if (n < group && k < frames && k % nbuf % group)
				/* after the real card's first frame: realign */
				for (; k < frames && k % group; k++)
					consume_group(st, &bell[k % nbuf], &rearm[k % nbuf], 1);
		}
		CK(cuStreamSynchronize(st));
		t1 = now_s();
		if (replay_fmt) {
			GA(ga_sim_replay_stop(dev));
			if (replay_hz)
				printf("# replay paced at %llu Hz: %.0f frames in %.3f s, %.4f%% "
				       "off\n",
				       (unsigned long long)replay_hz, (double)frames, t1 - t0,
				       100 * ((double)frames / (t1 - t0) - (double)replay_hz) /
					       (double)replay_hz);
		}
		GA(ga_dev_enable(dev, GA_DIR_WRITE, false));
		if (sim) {
			GA(ga_sim_stats(dev, &st1));
			if (st1.delivered - st0.delivered != frames)
				die("size %zu: card delivered %" PRIu64
				    " frames, consumer saw %" PRIu64,
				    size, st1.delivered - st0.delivered, frames);
		}
		GA(ga_buf_destroy_all(dev));

		double per = (t1 - t0) / (sim ? frames : frames - 1);

		ss[nm] = size;
		tg[nm] = per;
		tc[nm] = thtod;
		ta[nm++] = tasync;
		printf("%10zu %12.0f %12.2f %12.2f %12.0f %7.0f%% %14.2f %7.0f%%", size, 1 / per,
		       size / per / 1e9, size / thtod / 1e9, 1 / thtod, 100 * thtod / per,
		       size / tasync / 1e9, 100 * tasync / per);
		if (sim)
			printf(" %10.2f\n", (st1.cpu_ns - st0.cpu_ns) / 1e3 / frames);
		else
			printf(" %10s\n", "-");
		fflush(stdout);
	}

	double l, bw;

	if (nm < 2) /* one size: no line to fit */
		goto out;
	fit(ss, tg, nm, &l, &bw);
	printf("fit card->GPU  : t = %.2f us + s / (%.2f GB/s)\n", l * 1e6, bw / 1e9);
	fit(ss, tc, nm, &l, &bw);
	printf("fit cuMemcpyHtoD: t = %.2f us + s / (%.2f GB/s)\n", l * 1e6, bw / 1e9);
	fit(ss, ta, nm, &l, &bw);
	printf("fit HtoD async : t = %.2f us + s / (%.2f GB/s)\n", l * 1e6, bw / 1e9);
out:
	CK(cuStreamDestroy(st));
	CK(cuMemFree(dtmp));
	CK(cuMemFreeHost(pinned));
	CK(cuMemHostUnregister((void *)regs));
	ga_dev_unmap_regs(dev, regs);
	ga_dev_close(dev);
	return 0;
}

/* ---- paths --------------------------------------------------------------- */

enum path { W_DIRECT, W_INDIRECT, R_DIRECT, R_INDIRECT, NPATH };
static const char *const path_name[NPATH] = {"write-direct", "write-indirect", "read-direct",
					     "read-indirect"};
static const char *const path_doc[NPATH] = {"card -> GPU memory", "card -> host, cuMemcpyHtoD",
					    "GPU memory -> card", "cuMemcpyDtoH, host -> card"};

static int wait_header(struct ga_buf *b, double limit)
{
	struct ga_header h;
	double t0 = now_s();

	for (;;) {
		GA(ga_buf_header(b, &h));
		if (h.size)
			return 0;
		if (now_s() - t0 > limit)
			return -ETIMEDOUT;
	}
}

static int wait_done(struct ga_buf *b, double limit)
{
	uint32_t w = 0;
	double t0 = now_s();

	for (;;) {
		GA(ga_buf_read(b, 0, &w, 4));
		if (w >= 1)
			return 0;
		if (now_s() - t0 > limit)
			return -ETIMEDOUT;
	}
}

/*
 * Median time of @reps single transfers of @size over path @p, or a
 * negative errno when the device cannot do it.  @src is @size bytes of
 * payload in host memory (the frame the card receives from outside).
 */
static int run_path(enum path p, size_t size, int reps, double *out, char *why, size_t wlen)
{
	bool direct = p == W_DIRECT || p == R_DIRECT;
	bool write = p == W_DIRECT || p == W_INDIRECT;
	struct ga_dev_info info;
	struct ga_dev *dev = NULL;
	struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;
	struct ga_buf *b = NULL;
	struct ga_buf_info bi;
	CUdeviceptr gbuf = 0;
	double *t = calloc(reps, sizeof(*t));
	uint8_t *payload = malloc(size);
	int rc;

	memset(payload, 0xA5, size);
	o.use_gpu = direct;
	rc = ga_dev_open_opts(spec, &o, &dev);
	if (rc < 0) {
		snprintf(why, wlen, "open: %s", ga_last_error());
		goto out;
	}
	CK(cuCtxSetCurrent(cuctx));
	ga_dev_info(dev, &info);
	if (direct && !ga_dev_has(dev, GA_CAP_GPU_MEMORY)) {
		snprintf(why, wlen, "no GPU memory: %.120s", info.memory_note);
		rc = -ENOTSUP;
		goto out;
	}
	if (write && !ga_dev_has(dev, GA_CAP_SIM)) {
		/* A real card's frames come from its detector: this command
		 * cannot make one arrive at a known time. */
		snprintf(why, wlen, "needs the simulated card's ga_sim_push");
		rc = -ENOTSUP;
		goto out;
	}
	rc = ga_buf_create(dev, write ? GA_DIR_WRITE : GA_DIR_READ, 0,
			   round64k(size + info.dma_data_bytes), &b);
	if (rc < 0) {
		snprintf(why, wlen, "buffer: %s", ga_last_error());
		goto out;
	}
	ga_buf_info(b, &bi);
	if (!direct)
		CK(cuMemAlloc(&gbuf, size)); /* the GPU end of the indirect path */
	else if (!write)
		GA(ga_buf_write(b, info.dma_data_bytes, payload, size));
	ga_dev_enable(dev, write ? GA_DIR_WRITE : GA_DIR_READ, true);

	for (int r = 0; r < reps + 1; r++) {
		double t0, t1;

		if (write) {
			GA(ga_buf_arm(b));
			t0 = now_s();
			GA(ga_sim_push(dev, payload, (uint32_t)size, 1000));
			if (wait_header(b, 5.0))
				die("%s %zu: no frame", path_name[p], size);
			if (!direct) /* the frame is in host memory: move it on */
				CK(cuMemcpyHtoD(gbuf,
						(const uint8_t *)(uintptr_t)bi.gpu_address +
							info.dma_data_bytes,
						size));
			t1 = now_s();
		} else {
			t0 = now_s();
			if (!direct)
				CK(cuMemcpyDtoH((uint8_t *)(uintptr_t)bi.gpu_address +
							info.dma_data_bytes,
						gbuf, size));
			GA(ga_buf_send(b, (uint32_t)size));
			if (wait_done(b, 5.0))
				die("%s %zu: read never completed", path_name[p], size);
			t1 = now_s();
		}
		if (r > 0) /* the first one warms caches and mappings */
			t[r - 1] = t1 - t0;
	}
	ga_dev_enable(dev, write ? GA_DIR_WRITE : GA_DIR_READ, false);
	/* median */
	for (int i = 1; i < reps; i++)
		for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
			double x = t[j];

			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	*out = t[reps / 2];
	rc = 0;
out:
	if (gbuf)
		cuMemFree(gbuf);
	if (dev)
		ga_dev_close(dev);
	free(t);
	free(payload);
	return rc;
}

static int cmd_paths(int argc, char **argv)
{
	int reps = 50, opt;

	while ((opt = getopt(argc, argv, "D:r:")) != -1) {
		switch (opt) {
		case 'D':
			spec = optarg;
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		default:
			die("usage: gpuasync-bench paths [-D DEV] [-r REPS]");
		}
	}
	if (reps < 3)
		reps = 3;
	cuda_up(0);

	static const size_t sizes[] = {4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB};
	const int ns = sizeof(sizes) / sizeof(sizes[0]);
	double t[NPATH][8];
	bool ok[NPATH];
	char why[NPATH][160], gpu_name[128];

	CK(cuDeviceGetName(gpu_name, sizeof(gpu_name), cudev));
	printf("# gpuasync-bench paths: %s, device %s, median of %d transfers\n", gpu_name, spec,
	       reps);
	for (int p = 0; p < NPATH; p++) {
		ok[p] = true;
		for (int i = 0; i < ns && ok[p]; i++)
			if (run_path(p, sizes[i], reps, &t[p][i], why[p], sizeof(why[p])) < 0)
				ok[p] = false;
	}
	printf("%-15s %-28s", "path", "");
	for (int i = 0; i < ns; i++)
		printf(" %9zuK", sizes[i] / KiB);
	printf(" %10s %10s\n", "l (us)", "b (GB/s)");
	for (int p = 0; p < NPATH; p++) {
		double s[8], l, bw;

		printf("%-15s %-28s", path_name[p], path_doc[p]);
		if (!ok[p]) {
			printf(" n/a: %s\n", why[p]);
			continue;
		}
		for (int i = 0; i < ns; i++) {
			s[i] = sizes[i];
			printf(" %8.1fus", t[p][i] * 1e6);
		}
		fit(s, t[p], ns, &l, &bw);
		printf(" %10.2f %10.2f\n", l * 1e6, bw / 1e9);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "load") == 0)
		return cmd_load(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "paths") == 0)
		return cmd_paths(argc - 1, argv + 1);
	fprintf(stderr,
		"usage: gpuasync-bench load|paths [options]   (see the top of gpubench.c)\n");
	return 2;
}
