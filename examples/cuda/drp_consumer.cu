/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * gpuasync-drp-consumer: a consumer shaped like the LCLS-II GPU DRP's
 * frame receive loop, against a mounted gpuasyncfs (the simulated card).
 *
 *   $ gpuasyncfs --sim /mnt/ga
 *   $ for i in 0 1 2 3 4 5 6 7; do mkdir /mnt/ga/buffers/$i; done
 *   $ gpuasync-drp-consumer -n 1000000 -r 2 -g 4096 /mnt/ga
 *
 * Each of R readers owns the buffers r, r+R, r+2R, ... and is one CUDA
 * graph of three kernels, instantiated for device launch:
 *   wait   1 thread: poll the size word (+4) of its next buffer with
 *          __nanosleep back-off (8 ns doubling to 256 ns), note the GPU
 *          global timer when it turns non-zero; give up after -s us so
 *          the graph can come round again (and see a stop request);
 *   event  a few blocks: copy the 8-byte descriptor and the TimingHeader
 *          (at +dma_data_bytes) into the next slot of the reader's ring in
 *          pinned host memory, and check every payload word after it
 *          against the timing pattern's counter (gpuasync/timing.h);
 *   loop   1 thread: publish the slot, clear the size word, re-arm the
 *          buffer with a store to its free-list register in the card's
 *          register block (host-registered, device-mapped), move on by R
 *          buffers, and tail-launch its own graph.
 * Two DRPs run in the field (-m): the summer one (lcls2 4e09af765) re-arms
 * with a ONE-BYTE store; the late-2026 one (the default) with a 32-bit
 * store, starts up by clearing the size words, returning every free-list
 * index, resetting the ring index through the mapping (write enable 0
 * then 1) and then gpuEnableTx(fd, 1) (here registers/write_enable, which
 * the library turns into that ioctl on a 7.5 driver), wants its buffers
 * 64 KiB aligned, and calls a frame bad when its descriptor word has a
 * bit outside 0xfdffffff (the first beat's TUSER start-of-frame bit is
 * no error).
 * No host call is made per frame (with -H the CPU re-arms instead, by a
 * store through the mapping, after the reader cleared the size word
 * and published the frame: the DRP's HOST_REARMS_DMA path, less its
 * ioctl).  The CPU pops the rings in frame order
 * (frame k is reader k % R's) and checks that pulse IDs go up by exactly
 * one, evtCounter is the frame number, frame k sat in buffer k % N, and
 * the descriptor is clean; then the card's counters.
 *
 * Latency: the timing pattern's time stamp is the host's CLOCK_REALTIME
 * when the card made the frame; the wait kernel notes %globaltimer when it
 * sees the size word.  The offset between the two clocks is sampled
 * every 10 ms by a ping-pong through pinned memory (clk_one), so each
 * frame's latency is  seen - (made + offset at that time).
 *
 * A recorded run (-f FILE, a .gar file: docs/record.md) is played into the
 * buffers by the simulated card's replay instead of the generator, repeated
 * until -n frames have gone; each reader's event kernel compares every
 * payload byte with the file's frame (frame k is the file's k % F, held in
 * GPU memory), and the CPU checks each descriptor's size and TUSER bytes
 * against the file's; there is no pattern and no latency then (the time
 * stamps are the file's).  -p HZ paces the generator or the replay.
 *
 * Exit status 0 only when every frame and counter checked out; 3 when
 * device graph launch is unavailable (the error is printed).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <err.h>
#include <pthread.h>

#include <algorithm>
#include <string>
#include <vector>

#include <cuda_runtime.h>

extern "C" {
#include <gpuasync/gpuasync.h>
#include <gpuasync/frame.h>
#include <gpuasync/record.h>
#include <gpuasync/timing.h>
}

#define MAX_BUFS    1024
#define MAX_READERS 16
#define RING_SLOTS  4096u /* per reader; a power of two */
/* The late DRP: descriptor bits that make a frame bad (all but the first
 * beat's TUSER bit 1, start of frame), and its buffer alignment. */
#define DRP_ERR_MASK 0xfdffffffu
#define DRP_ALIGN    0x10000u

#define die(...) errx(2, __VA_ARGS__)
#include "mount_files.h"
#define CU(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess)                                                             \
			die("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));   \
	} while (0)

/* One frame as a reader hands it to the CPU (64 bytes). */
struct drp_entry {
	uint32_t desc[2]; /* the descriptor: flags word, size word */
	uint32_t th[8];	  /* the TimingHeader */
	uint32_t buf;	  /* which buffer it sat in */
	uint32_t bad;	  /* payload words that disagreed with the pattern */
	uint64_t t_seen;  /* %globaltimer when the size word was seen */
	uint64_t pad;
};

/* A single-producer (the reader's graph), single-consumer (the CPU) ring
 * in pinned, mapped host memory; head and tail on their own lines. */
struct drp_ring {
	volatile uint64_t head;
	uint64_t pad0[15];
	volatile uint64_t tail;
	uint64_t pad1[15];
	drp_entry slot[RING_SLOTS];
};

/* A reader's state, in GPU memory. */
struct drp_reader {
	uint32_t idx;	/* next buffer */
	uint32_t ready; /* the wait kernel saw a frame */
	uint32_t bad;
	uint32_t pad;
	uint64_t t_seen;
	uint64_t head, tail_seen; /* ring positions as the GPU knows them */
	unsigned long long launches, timeouts, full, frames;
};

/* What every kernel reads, in GPU memory. */
struct drp_cfg {
	uint8_t *buf[MAX_BUFS];
	uint32_t free_off[MAX_BUFS];
	uint8_t *regs; /* the register block, device-mapped */
	drp_ring *ring[MAX_READERS];
	volatile uint32_t *stop; /* GPU memory; the host sets it to end */
	uint32_t nbuf, nreaders, ddb, check;
	uint32_t host_rearm; /* -H: the CPU re-arms, as the DRP's HOST_REARMS_DMA */
	uint32_t rearm32;    /* the late DRP: 32-bit re-arm stores (else one byte) */
	uint64_t spin_ns;
	/* -f: the recorded run's payloads, each at an 8-byte aligned offset */
	const uint8_t *ref;
	const uint64_t *ref_off;
	const uint32_t *ref_len;
	uint32_t nref; /* frames in the file; 0: check the timing pattern */
};

/* A buffer back on the card's free list: a one-byte store (summer DRP) or
 * a 32-bit one (late DRP); from the GPU or the CPU. */
__host__ __device__ static inline void drp_rearm(uint8_t *regs, uint32_t off, bool rearm32)
{
	if (rearm32)
		*(volatile uint32_t *)(regs + off) = 1;
	else
		*(volatile uint8_t *)(regs + off) = 1;
}

__device__ static inline uint64_t gtimer(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void drp_wait(const drp_cfg *c, drp_reader *rd, unsigned int r)
{
	volatile uint32_t *size = (volatile uint32_t *)(c->buf[rd->idx] + GA_HDR_SIZE_OFFSET);
	uint64_t t0 = gtimer();
	unsigned int ns = 8;

	rd->ready = 0;
	rd->launches++;
	/* A full ring waits for the CPU as an empty buffer waits for the card
	 * (the tail is host memory: read it only when the cached one says full). */
	while (rd->head - rd->tail_seen >= RING_SLOTS) {
		rd->tail_seen = c->ring[r]->tail;
		if (rd->head - rd->tail_seen < RING_SLOTS)
			break;
		rd->full++;
		if (gtimer() - t0 > c->spin_ns || *c->stop)
			return;
		__nanosleep(256);
	}
	for (;;) {
		if (*size) {
			rd->t_seen = gtimer();
			rd->bad = 0;
			rd->ready = 1;
			return;
		}
		if (gtimer() - t0 > c->spin_ns) {
			rd->timeouts++;
			return;
		}
		__nanosleep(ns);
		if (ns < 256)
			ns *= 2;
	}
}

__global__ void drp_event(const drp_cfg *c, drp_reader *rd, unsigned int r)
{
	if (!rd->ready)
		return;
	const uint32_t *d = (const uint32_t *)c->buf[rd->idx];
	const uint32_t *w = (const uint32_t *)(c->buf[rd->idx] + c->ddb);
	drp_entry *e = &c->ring[r]->slot[rd->head % RING_SLOTS];
	unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
	unsigned int nt = gridDim.x * blockDim.x;
	uint32_t size = d[1], seq = w[5], words = size / 4, bad = 0;

	if (tid < 2)
		e->desc[tid] = d[tid];
	if (tid < GA_TIMING_HDR_BYTES / 4)
		e->th[tid] = w[tid];
	if (c->nref) {
		/* Frame k of the run is reader r's frames-th: the file's k % F. */
		uint32_t f = (uint32_t)((rd->frames * c->nreaders + r) % c->nref);
		uint32_t n = min(size, c->ref_len[f]);
		const uint8_t *want = c->ref + c->ref_off[f], *got = (const uint8_t *)w;

		for (uint32_t b = 4 * tid; b + 4 <= n; b += 4 * nt)
			bad += *(const uint32_t *)(got + b) != *(const uint32_t *)(want + b);
		if (tid == 0) {
			for (uint32_t b = n & ~3u; b < n; b++)
				bad += got[b] != want[b];
			bad += size != c->ref_len[f];
		}
	} else if (c->check) {
		for (uint32_t k = GA_TIMING_HDR_BYTES / 4 + tid; k < words; k += nt)
			bad += w[k] != seq + k;
	}
	if (bad)
		atomicAdd(&rd->bad, bad);
}

__global__ void drp_loop(const drp_cfg *c, drp_reader *rd, unsigned int r)
{
	if (rd->ready) {
		drp_ring *q = c->ring[r];
		drp_entry *e = &q->slot[rd->head % RING_SLOTS];
		uint32_t i = rd->idx;

		bool publish = true;

#ifdef GA_DRP_BREAK /* to see the checks fail: lose one frame in 1000 */
		publish = rd->frames % 1000 != 999;
#endif
		e->buf = i;
		e->bad = rd->bad;
		e->t_seen = rd->t_seen;
		/* The doorbell cleared before the buffer goes back to the card:
		 * before the head moves where the CPU re-arms on seeing it. */
		if (c->host_rearm)
			*(volatile uint32_t *)(c->buf[i] + GA_HDR_SIZE_OFFSET) = 0;
		__threadfence_system(); /* the slot before the head that shows it */
		if (publish)
			q->head = ++rd->head;
		if (!c->host_rearm) {
			*(volatile uint32_t *)(c->buf[i] + GA_HDR_SIZE_OFFSET) = 0;
			__threadfence_system();
			drp_rearm(c->regs, c->free_off[i], c->rearm32);
		}
		rd->idx = (i + c->nreaders) % c->nbuf;
		rd->frames++;
	}
	if (!*c->stop)
		cudaGraphLaunch(cudaGetCurrentGraphExec(), cudaStreamGraphTailLaunch);
}

/* The clock ping-pong: for i = 1..n, wait for ping == i, note the timer,
 * answer pong = i.  Also the timer's step (smallest non-zero change). */
__global__ void clk_pingpong(volatile uint32_t *ping, volatile uint32_t *pong, uint64_t *gt,
			     unsigned int n)
{
	uint64_t a = gtimer(), step = ~0ull;

	for (int k = 0; k < 10000; k++) {
		uint64_t b = gtimer();

		if (b != a && b - a < step)
			step = b - a;
		a = b;
	}
	gt[0] = step;
	for (unsigned int i = 1; i <= n; i++) {
		uint64_t t0 = gtimer();

		while (*ping != i)
			if (gtimer() - t0 > 1000000000ull)
				return; /* the host gave up */
		gt[i] = gtimer();
		__threadfence_system();
		*pong = i;
	}
}

/* The floor (-F): a bare doorbell ping-pong.  For i = 1..n the host stores
 * i into pinned mapped memory; this kernel polls it with the readers'
 * back-off (__nanosleep 8 ns doubling to 256) and answers. */
__global__ void floor_pingpong(volatile uint32_t *ping, volatile uint32_t *pong, unsigned int n)
{
	for (unsigned int i = 1; i <= n; i++) {
		uint64_t t0 = gtimer();
		unsigned int ns = 8;

		while (*ping != i) {
			if (gtimer() - t0 > 1000000000ull)
				return; /* the host gave up */
			__nanosleep(ns);
			if (ns < 256)
				ns *= 2;
		}
		*pong = i;
		__threadfence_system();
	}
}

/* ---- host side ------------------------------------------------------------ */


static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}


static void *open_ipc(unsigned int i)
{
	char rel[64];
	cudaIpcMemHandle_t h;
	void *p;

	snprintf(rel, sizeof(rel), "buffers/%u/ipc_handle", i);
	fs_ipc_handle(rel, h.reserved, sizeof(h.reserved));
	CU(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
	return p;
}

/*
 * The clocks: %globaltimer against CLOCK_REALTIME.  One sample is @n
 * ping-pongs through pinned memory with a kernel on its own stream (it
 * runs beside the readers); the exchange with the shortest round trip
 * gives the offset (timer minus clock) at its midpoint, half the round
 * trip bounds its error.  The two clocks drift apart by microseconds a
 * second here, so a thread samples every 10 ms during the run and each
 * frame's offset is interpolated at the time the card made it.
 */
struct clk_sample {
	uint64_t host; /* CLOCK_REALTIME at the midpoint */
	int64_t off;
	uint64_t err;
};

struct clk {
	volatile uint32_t *flags; /* ping at [0], pong at [32] */
	uint64_t *gt;
	cudaStream_t st;
	unsigned int n;
	uint64_t step;
	double timeout_s; /* how long the host waits for one answer (-t) */
	std::vector<clk_sample> v;
	volatile bool stop;
	bool lost; /* a run-time sample got no answer: the GPU ran nothing beside the readers */
	pthread_t thread;
};

static void clk_init(struct clk *c, unsigned int n)
{
	c->n = n;
	CU(cudaHostAlloc((void **)&c->flags, 256, cudaHostAllocMapped));
	CU(cudaHostAlloc((void **)&c->gt, (n + 1) * sizeof(*c->gt), cudaHostAllocMapped));
	CU(cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking));
}

/* One sample into *@out: false when the GPU did not answer within
 * c->timeout_s (its kernel still waits on c->st, and gives up by itself). */
static bool clk_one(struct clk *c, clk_sample *out)
{
	std::vector<uint64_t> t0(c->n + 1), t1(c->n + 1);
	clk_sample best = {0, 0, ~0ull};

	/* A ping-pong that got no answer may still be queued: let it end first. */
	CU(cudaStreamSynchronize(c->st));
	c->flags[0] = c->flags[32] = 0;
	clk_pingpong<<<1, 1, 0, c->st>>>(c->flags, c->flags + 32, c->gt, c->n);
	CU(cudaGetLastError());
	for (unsigned int i = 1; i <= c->n; i++) {
		double give_up = now_s() + c->timeout_s;

		t0[i] = realtime_ns();
		c->flags[0] = i;
		while (c->flags[32] != i)
			if (now_s() > give_up)
				return false;
		t1[i] = realtime_ns();
	}
	CU(cudaStreamSynchronize(c->st));
	c->step = c->gt[0];
	for (unsigned int i = 1; i <= c->n; i++)
		if ((t1[i] - t0[i]) / 2 < best.err) {
			best.err = (t1[i] - t0[i]) / 2;
			best.host = (t0[i] + t1[i]) / 2;
			best.off = (int64_t)(c->gt[i] - best.host);
		}
	*out = best;
	return true;
}

/* A sample the run cannot do without; without an answer the program ends
 * at once (_exit: the readers' kernels may never end, and the CUDA
 * runtime's exit handlers would wait for them). */
static clk_sample clk_must(struct clk *c, const char *when)
{
	clk_sample s;

	if (!clk_one(c, &s)) {
		printf("drp: FAIL: clock ping-pong %s: no answer from the GPU within %.0f s "
		       "(-t SECONDS waits longer, as under compute-sanitizer)\n",
		       when, c->timeout_s);
		fflush(stdout);
		_exit(2);
	}
	return s;
}

static void *clk_thread(void *arg)
{
	struct clk *c = (struct clk *)arg;

	while (!c->stop) {
		clk_sample s;

		/* No answer while the readers run: this GPU runs one kernel at
		 * a time (compute-sanitizer serializes them).  The run goes on
		 * with the samples taken before and after it. */
		if (!clk_one(c, &s)) {
			c->lost = true;
			break;
		}
		c->v.push_back(s);
		usleep(10000);
	}
	return NULL;
}

/* The offset at host time @t: interpolated between the samples around it
 * (v sorted by time, at least one). */
static int64_t clk_offset_at(const std::vector<clk_sample> &v, uint64_t t)
{
	size_t i = std::lower_bound(v.begin(), v.end(), t,
				    [](const clk_sample &a, uint64_t x) { return a.host < x; }) -
		   v.begin();

	if (i == 0)
		return v.front().off;
	if (i == v.size())
		return v.back().off;
	const clk_sample &a = v[i - 1], &b = v[i];

	return a.off + (int64_t)((double)(b.off - a.off) * (double)(t - a.host) /
				 (double)(b.host - a.host));
}

/* A recorded run for -f: every payload in one block (each at an 8-byte
 * aligned offset), with its length and descriptor word 0 as recorded. */
struct ref_run {
	std::vector<uint8_t> bytes;
	std::vector<uint64_t> off;
	std::vector<uint32_t> len, flags;
};

/* Read @path whole; every payload must fit a buffer's @room bytes. */
static void ref_load(const char *path, uint32_t room, ref_run *rr)
{
	struct ga_rec_reader *r;
	struct ga_rec_file info;
	struct ga_rec_frame f;
	uint32_t w0;
	int rc;

	if (ga_rec_open(path, &r, &info) < 0)
		die("-f %s: %s", path, ga_last_error());
	while ((rc = ga_rec_next(r, &f)) == 1) {
		if (f.payload_bytes > room)
			die("-f %s: frame %" PRIu64 " has %u bytes, a buffer holds %u", path,
			    f.number, f.payload_bytes, room);
		rr->off.push_back(rr->bytes.size());
		rr->len.push_back(f.payload_bytes);
		memcpy(&w0, f.desc, 4);
		rr->flags.push_back(w0);
		rr->bytes.insert(rr->bytes.end(), f.payload, f.payload + f.payload_bytes);
		rr->bytes.resize((rr->bytes.size() + 7) & ~(size_t)7);
	}
	if (rc < 0)
		die("-f %s: %s", path, ga_last_error());
	ga_rec_close(r);
	if (rr->off.empty())
		die("-f %s: no frame in the file", path);
}

/* What is wrong with frame @k of a replay of @rr, against the file's
 * frame k % F; NULL when nothing. */
static const char *ref_why(const ref_run *rr, uint64_t k, const struct ga_header *h,
			   const drp_entry *e, unsigned int nbuf)
{
	size_t f = k % rr->off.size();
	uint8_t raw[GA_HDR_BYTES];
	struct ga_header want;

	memcpy(raw, &rr->flags[f], 4);
	memcpy(raw + 4, &rr->len[f], 4);
	ga_header_decode(raw, &want);
	if (h->size != want.size)
		return "size (not the file's)";
	if (h->first_user != want.first_user || h->last_user != want.last_user)
		return "TUSER bytes (not the file's)";
	if (e->buf != k % nbuf)
		return "buffer (round robin)";
	if (e->bad)
		return "payload (not the file's, byte for byte)";
	return NULL;
}

/* -F: @n ping-pongs with floor_pingpong on an idle GPU; the one-way times
 * (half of each round trip), sorted, in ns.  Empty when it got no answer. */
static std::vector<double> floor_measure(unsigned int n, double timeout_s)
{
	volatile uint32_t *flags;
	std::vector<double> v;
	cudaStream_t st;

	CU(cudaHostAlloc((void **)&flags, 256, cudaHostAllocMapped));
	CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	flags[0] = flags[32] = 0;
	floor_pingpong<<<1, 1, 0, st>>>(flags, flags + 32, n);
	CU(cudaGetLastError());
	for (unsigned int i = 1; i <= n; i++) {
		double give_up = now_s() + timeout_s;
		uint64_t t0 = realtime_ns();

		flags[0] = i;
		while (flags[32] != i)
			if (now_s() > give_up)
				return std::vector<double>();
		v.push_back((realtime_ns() - t0) / 2.0);
	}
	CU(cudaStreamSynchronize(st));
	CU(cudaStreamDestroy(st));
	CU(cudaFreeHost((void *)flags));
	std::sort(v.begin(), v.end());
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: gpuasync-drp-consumer [options] MOUNTPOINT\n"
		"  -n N      frames to consume (default 100000)\n"
		"  -r R      readers (default 2; must divide the buffer count, at most %d)\n"
		"  -g SIZE   start the simulated card's generator: N timing frames of SIZE bytes\n"
		"  -f FILE   play the recorded run FILE (.gar) on the simulated card instead,\n"
		"            repeated until N frames, and check each frame byte for byte\n"
		"            against the file's\n"
		"  -w WORDS  more words for the replay (sim/replay: docs/record.md)\n"
		"  -p HZ     pace the generator or the replay at HZ frames/s (default 0: as\n"
		"            fast as the buffers take them)\n"
		"  -F N      first measure the floor: N bare doorbell ping-pongs (host store\n"
		"            into pinned memory, a GPU thread polling with the readers'\n"
		"            back-off answers); the latency is then also given against it\n"
		"  -c 0      do not check payload words on the GPU\n"
		"  -b B      blocks of 256 threads for the event kernel (default 2)\n"
		"  -s US     the wait kernel's spin before its graph comes round (default 1000)\n"
		"  -o FILE   write the latency histogram there (le_ns count, one bucket a line)\n"
		"  -d GPU    CUDA device ordinal (default 0)\n"
		"  -t SEC    wait this long for the GPU's answer to a clock ping (default 2;\n"
		"            longer under compute-sanitizer), and for a frame at least 10 s\n"
		"            or this long\n"
		"  -m MODE   late (default): the late-2026 DRP (start-up with the index reset\n"
		"            through the mapping, then gpuEnableTx; 32-bit re-arms; 64 KiB\n"
		"            aligned buffers; descriptor error mask 0x%08x);\n"
		"            summer: the summer-2026 DRP (one-byte re-arms)\n"
		"  -H        the CPU re-arms each buffer when it takes the frame (a store\n"
		"            through the register mapping), as the DRP's HOST_REARMS_DMA build\n"
		"            does by ioctl; the GPU then never writes the registers\n",
		MAX_READERS, DRP_ERR_MASK);
	exit(2);
}

int main(int argc, char **argv)
{
	uint64_t nframes = 100000, gen_size = 0, spin_us = 1000;
	unsigned int nreaders = 2, blocks = 2, check = 1, host_rearm = 0;
	bool late = true;
	const char *hist_path = NULL, *ref_path = NULL, *replay_words = "";
	uint64_t pace_hz = 0;
	unsigned int floor_n = 0;
	std::vector<double> flr;
	static ref_run rr;
	double clock_timeout_s = 2, frame_wait_s;
	int gpu = 0, opt;

	/* Line by line: under a sanitizer or a timeout, what was printed
	 * last says where it stood. */
	setvbuf(stdout, NULL, _IOLBF, 0);

	while ((opt = getopt(argc, argv, "n:r:g:f:w:p:F:c:b:s:o:d:m:t:Hh")) != -1) {
		switch (opt) {
		case 'n':
			nframes = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			nreaders = strtoul(optarg, NULL, 0);
			break;
		case 'g':
			gen_size = strtoull(optarg, NULL, 0);
			break;
		case 'f':
			ref_path = optarg;
			break;
		case 'w':
			replay_words = optarg;
			break;
		case 'p':
			pace_hz = strtoull(optarg, NULL, 0);
			break;
		case 'F':
			floor_n = strtoul(optarg, NULL, 0);
			if (floor_n == 0)
				usage();
			break;
		case 'c':
			check = strtoul(optarg, NULL, 0) != 0;
			break;
		case 'b':
			blocks = strtoul(optarg, NULL, 0);
			break;
		case 's':
			spin_us = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			hist_path = optarg;
			break;
		case 'd':
			gpu = atoi(optarg);
			break;
		case 'm':
			if (strcmp(optarg, "late") && strcmp(optarg, "summer"))
				usage();
			late = strcmp(optarg, "late") == 0;
			break;
		case 't':
			clock_timeout_s = atof(optarg);
			if (!(clock_timeout_s > 0))
				usage();
			break;
		case 'H':
			host_rearm = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1 || nframes == 0 || nreaders == 0 || nreaders > MAX_READERS ||
	    blocks == 0 || spin_us == 0 || (gen_size && ref_path))
		usage();
	frame_wait_s = clock_timeout_s > 10 ? clock_timeout_s : 10;
	if (gen_size && gen_size < GA_TIMING_HDR_BYTES)
		die("-g %" PRIu64 ": a frame must hold the %u-byte TimingHeader", gen_size,
		    GA_TIMING_HDR_BYTES);
	mnt = argv[optind];

	/* ---- the card and the filesystem ---- */
	unsigned int version = fs_u64("device/version");
	unsigned int ddb = fs_u64("device/dma_data_bytes");
	unsigned int maxb = fs_u64("device/max_buffers");
	enum ga_layout layout = ga_layout_for_version(version, false);
	unsigned int nbuf = 0;
	char tmp[4096];

	for (; nbuf < MAX_BUFS; nbuf++) {
		snprintf(tmp, sizeof(tmp), "buffers/%u/size", nbuf);
		if (fs_read(tmp, tmp, sizeof(tmp)))
			break;
	}
	if (nbuf == 0)
		die("no buffers: mkdir %s/buffers/0 first", mnt);
	if (nbuf % nreaders)
		die("%u readers do not divide %u buffers", nreaders, nbuf);
	if (ddb % 4)
		die("dma_data_bytes %u is not a multiple of 4", ddb);
	/* The late DRP rounds its buffers up to 64 KiB; the mount allocates
	 * them, so here it is checked: the address the card was given. */
	for (unsigned int i = 0; late && i < nbuf; i++) {
		snprintf(tmp, sizeof(tmp), "buffers/%u/gpu_address", i);
		if (fs_u64(tmp) % DRP_ALIGN)
			die("buffer %u at 0x%" PRIx64 ": not 64 KiB aligned, as the late DRP wants",
			    i, fs_u64(tmp));
	}

	/* ---- CUDA ---- */
	cudaDeviceProp prop;

	CU(cudaSetDevice(gpu));
	CU(cudaGetDeviceProperties(&prop, gpu));
	printf("drp: %s (sm_%d%d), %u buffers, %u readers, firmware v%u, payload at +%u, the %s "
	       "DRP\n",
	       prop.name, prop.major, prop.minor, nbuf, nreaders, version, ddb,
	       late ? "late-2026" : "summer-2026");

	/* ---- the register block, GPU-visible ---- */
	char regpath[4096];
	uint64_t reg_off = 0;
	volatile uint32_t *regs;
	void *dregs;
	bool iomem;
	int fd, rc;

	rc = fs_read("device/registers_path", regpath, sizeof(regpath));
	if (rc)
		die("%s/device/registers_path: %s", mnt, strerror(-rc));
	{
		char *sep = strrchr(regpath, ' ');

		if (sep) {
			*sep = '\0';
			reg_off = strtoull(sep + 1, NULL, 0);
		}
	}
	iomem = strncmp(regpath, "/dev/shm/", 9) != 0;
	fd = open(regpath, O_RDWR);
	if (fd < 0)
		die("open %s: %s", regpath, strerror(errno));
	regs = (volatile uint32_t *)mmap(NULL, GA_CORE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
					 fd, reg_off);
	if (regs == MAP_FAILED)
		die("mmap %s: %s", regpath, strerror(errno));
	close(fd);
	/* As the DRP does (IOMEMORY for a PCIe BAR, which needs CAP_SYS_ADMIN);
	 * the simulated card's block is ordinary shared memory. */
	CU(cudaHostRegister((void *)regs, GA_CORE_SIZE,
			    cudaHostRegisterMapped | (iomem ? cudaHostRegisterIoMemory : 0)));
	CU(cudaHostGetDevicePointer(&dregs, (void *)regs, 0));
	{
		uint32_t voff;

		if (ga_reg_offset(GA_REG_VERSION, layout, version, 0, maxb, &voff) ||
		    ga_reg_field_get(GA_REG_VERSION, layout, regs[voff / 4]) != version)
			die("%s does not look like this card's registers", regpath);
	}

	/* ---- buffers, rings, the readers' state ---- */
	static drp_cfg cfg;
	drp_cfg *dcfg;
	drp_reader *drd;
	drp_ring *rings;
	uint32_t *dstop;

	memset(&cfg, 0, sizeof(cfg));
	for (unsigned int i = 0; i < nbuf; i++) {
		cfg.buf[i] = (uint8_t *)open_ipc(i);
		if (ga_reg_offset(GA_REG_FREE_LIST, layout, version, i, maxb, &cfg.free_off[i]))
			die("no free-list register for buffer %u", i);
	}
	CU(cudaHostAlloc((void **)&rings, nreaders * sizeof(drp_ring), cudaHostAllocMapped));
	memset((void *)rings, 0, nreaders * sizeof(drp_ring));
	for (unsigned int r = 0; r < nreaders; r++)
		CU(cudaHostGetDevicePointer((void **)&cfg.ring[r], (void *)&rings[r], 0));
	CU(cudaMalloc((void **)&dstop, sizeof(*dstop)));
	CU(cudaMemset(dstop, 0, sizeof(*dstop)));
	cfg.regs = (uint8_t *)dregs;
	cfg.stop = dstop;
	cfg.nbuf = nbuf;
	cfg.nreaders = nreaders;
	cfg.ddb = ddb;
	cfg.check = check;
	cfg.host_rearm = host_rearm;
	cfg.rearm32 = late;
	cfg.spin_ns = spin_us * 1000;
	if (ref_path) {
		uint8_t *dref;
		uint64_t *doff;
		uint32_t *dlen;

		ref_load(ref_path, (uint32_t)(fs_u64("buffers/0/size") - ddb), &rr);
		CU(cudaMalloc((void **)&dref, rr.bytes.size()));
		CU(cudaMemcpy(dref, rr.bytes.data(), rr.bytes.size(), cudaMemcpyHostToDevice));
		CU(cudaMalloc((void **)&doff, rr.off.size() * sizeof(*doff)));
		CU(cudaMemcpy(doff, rr.off.data(), rr.off.size() * sizeof(*doff),
			      cudaMemcpyHostToDevice));
		CU(cudaMalloc((void **)&dlen, rr.len.size() * sizeof(*dlen)));
		CU(cudaMemcpy(dlen, rr.len.data(), rr.len.size() * sizeof(*dlen),
			      cudaMemcpyHostToDevice));
		cfg.ref = dref;
		cfg.ref_off = doff;
		cfg.ref_len = dlen;
		cfg.nref = (uint32_t)rr.off.size();
		printf("drp: %s: %u frames, %.1f MB, played until %" PRIu64 " frames\n", ref_path,
		       cfg.nref, rr.bytes.size() / 1e6, nframes);
	}
	CU(cudaMalloc((void **)&dcfg, sizeof(cfg)));
	CU(cudaMemcpy(dcfg, &cfg, sizeof(cfg), cudaMemcpyHostToDevice));
	{
		std::vector<drp_reader> rd(nreaders);

		for (unsigned int r = 0; r < nreaders; r++) {
			memset(&rd[r], 0, sizeof(rd[r]));
			rd[r].idx = r;
		}
		CU(cudaMalloc((void **)&drd, nreaders * sizeof(*drd)));
		CU(cudaMemcpy(drd, rd.data(), nreaders * sizeof(*drd), cudaMemcpyHostToDevice));
	}

	/* ---- the floor, on an idle GPU ---- */
	if (floor_n) {
		flr = floor_measure(floor_n, clock_timeout_s);
		if (flr.empty())
			die("-F: no answer from the GPU to a doorbell within %.0f s", clock_timeout_s);
		printf("floor: %u doorbell ping-pongs, one-way: min %.2f p50 %.2f p90 %.2f p99 %.2f "
		       "us\n",
		       floor_n, flr[0] / 1e3, flr[flr.size() / 2] / 1e3, flr[flr.size() * 9 / 10] / 1e3,
		       flr[flr.size() * 99 / 100] / 1e3);
	}

	/* ---- the clocks ---- */
	static struct clk clk;

	clk_init(&clk, 200);
	clk.timeout_s = clock_timeout_s;
	clk.v.push_back(clk_must(&clk, "before the run"));
	printf("drp: %%globaltimer - CLOCK_REALTIME = %" PRId64 " ns (+-%" PRIu64
	       " ns), timer step %" PRIu64 " ns\n",
	       clk.v[0].off, clk.v[0].err, clk.step);
	if (pthread_create(&clk.thread, NULL, clk_thread, &clk))
		die("cannot start the clock thread");

	/* A consumer killed mid-run leaves the generator running and the
	 * engine on at some place in the ring: stop both first, so that no
	 * frame of that run lands in this one and the ring starts at buffer 0
	 * (an engine switched off starts again there). */
	if (gen_size || ref_path) {
		fs_write("sim/replay", "stop");
		fs_write("sim/running", "0");
	}
	fs_write("registers/write_enable", "0");

	/* ---- arm: doorbells cleared, every buffer on the free list ---- */
	for (unsigned int i = 0; i < nbuf; i++)
		CU(cudaMemset(cfg.buf[i] + GA_HDR_SIZE_OFFSET, 0, 4));
	CU(cudaDeviceSynchronize());
	for (unsigned int i = 0; i < nbuf; i++)
		drp_rearm((uint8_t *)regs, cfg.free_off[i], late);
	fs_write("registers/count_reset", "1");
	if (late) {
		/* The late DRP's index reset through the mapping (write enable
		 * 0 then 1), then gpuEnableTx(fd, 1). */
		uint32_t eoff;

		if (ga_reg_offset(GA_REG_WRITE_ENABLE, layout, version, 0, maxb, &eoff))
			die("no write_enable register on firmware v%u", version);
		regs[eoff / 4] = ga_reg_field_set(GA_REG_WRITE_ENABLE, layout, regs[eoff / 4], 0);
		regs[eoff / 4] = ga_reg_field_set(GA_REG_WRITE_ENABLE, layout, regs[eoff / 4], 1);
	}
	fs_write("registers/write_enable", "1");
	if (late && fs_u64("registers/write_enable") != 1)
		die("write_enable reads 0 after the start-up");

	/* ---- one graph per reader, launched once from the host ---- */
	std::vector<cudaStream_t> st(nreaders);
	std::vector<cudaGraphExec_t> ex(nreaders);

	for (unsigned int r = 0; r < nreaders; r++) {
		cudaGraph_t g;
		cudaError_t e;

		CU(cudaStreamCreateWithFlags(&st[r], cudaStreamNonBlocking));
		CU(cudaStreamBeginCapture(st[r], cudaStreamCaptureModeThreadLocal));
		drp_wait<<<1, 1, 0, st[r]>>>(dcfg, drd + r, r);
		drp_event<<<blocks, 256, 0, st[r]>>>(dcfg, drd + r, r);
		drp_loop<<<1, 1, 0, st[r]>>>(dcfg, drd + r, r);
		CU(cudaStreamEndCapture(st[r], &g));
		e = cudaGraphInstantiate(&ex[r], g, cudaGraphInstantiateFlagDeviceLaunch);
		if (e != cudaSuccess) {
			printf("drp: device graph launch unavailable: cudaGraphInstantiate(..., "
			       "cudaGraphInstantiateFlagDeviceLaunch): %s (%s)\n",
			       cudaGetErrorName(e), cudaGetErrorString(e));
			return 3;
		}
		CU(cudaGraphUpload(ex[r], st[r]));
		CU(cudaGraphDestroy(g));
	}
	for (unsigned int r = 0; r < nreaders; r++)
		CU(cudaGraphLaunch(ex[r], st[r]));

	double t0 = now_s(), t1, last_progress;

	if (gen_size) {
		char v[32];

		fs_write("sim/running", "0");
		fs_write("sim/pattern", "timing");
		snprintf(v, sizeof(v), "%" PRIu64, pace_hz);
		fs_write("sim/rate", v);
		snprintf(v, sizeof(v), "%" PRIu64, gen_size);
		fs_write("sim/size", v);
		snprintf(v, sizeof(v), "%" PRIu64, nframes);
		fs_write("sim/remaining", v);
		fs_write("sim/running", "1");
	}
	if (ref_path) {
		/* The daemon's working directory is not ours: an absolute path. */
		char *abs = realpath(ref_path, NULL), v[8192], rate[32];

		if (!abs)
			die("-f %s: %s", ref_path, strerror(errno));
		if (pace_hz)
			snprintf(rate, sizeof(rate), "%" PRIu64, pace_hz);
		else
			snprintf(rate, sizeof(rate), "max");
		if ((size_t)snprintf(v, sizeof(v), "%s rate=%s repeat=0 count=%" PRIu64 " %s", abs,
				     rate, nframes, replay_words) >= sizeof(v))
			die("-f %s: path too long", ref_path);
		free(abs);
		fs_write("sim/replay", v);
		/* From the file as it plays, or from its copy in GPU memory. */
		if (!fs_read("sim/replay_status", v, sizeof(v))) {
			const char *held = strstr(v, "\nheld "), *bytes = strstr(v, "held_bytes ");

			printf("drp: replay held %c (%llu bytes)\n", held ? held[6] : '?',
			       bytes ? strtoull(bytes + 11, NULL, 10) : 0ull);
		}
	}

	/* ---- the CPU: pop in frame order and check ---- */
	std::vector<std::pair<uint64_t, uint64_t>> seen; /* made (clock), seen (timer) */
	uint64_t bad = 0, first_bad = UINT64_MAX, bytes = 0, k;
	uint64_t prev_pulse = 0;

	seen.reserve(nframes);
	last_progress = now_s();
	for (k = 0; k < nframes; k++) {
		drp_ring *q = &rings[k % nreaders];
		uint64_t tail = q->tail;
		const char *why = NULL;

		while (q->head == tail) {
			if (now_s() - last_progress > frame_wait_s) {
				printf("drp: FAIL: no frame %" PRIu64 " after %.0f s (reader %" PRIu64
				       ")\n",
				       k, frame_wait_s, k % nreaders);
				goto stop;
			}
		}
		last_progress = now_s();
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		{
			const drp_entry *e = &q->slot[tail % RING_SLOTS];
			struct ga_timing_header th;
			struct ga_header h;
			uint64_t pulse, made;

			ga_header_decode((const uint8_t *)e->desc, &h);
			memcpy(&th, e->th, sizeof(th));
			pulse = th.pulse_ctl & GA_TIMING_PULSE_MASK;
			made = (uint64_t)th.time_s * 1000000000ull + th.time_ns;
			if (h.size == 0 ||
			    (late ? (e->desc[0] & DRP_ERR_MASK) != 0 : h.result || h.overflow))
				why = "descriptor";
			else if (ref_path)
				why = ref_why(&rr, k, &h, e, nbuf);
			else if (gen_size && h.size != gen_size)
				why = "size";
			else if (th.evt_counter != (uint32_t)k)
				why = "evtCounter";
			else if (pulse != GA_TIMING_PULSE0 + k || (k && pulse != prev_pulse + 1))
				why = "pulse ID";
			else if (e->buf != k % nbuf)
				why = "buffer (round robin)";
			else if (th.pulse_ctl >> 56 != GA_TIMING_CONTROL || th.env != GA_TIMING_ENV)
				why = "control/env";
			else if (e->bad)
				why = "payload";
			if (why) {
				if (bad < 5)
					printf("drp: frame %" PRIu64 " bad %s: buf %u size %u evt %u "
					       "pulse 0x%" PRIx64 " payload words bad %u\n",
					       k, why, e->buf, h.size, th.evt_counter, pulse, e->bad);
				if (first_bad == UINT64_MAX)
					first_bad = k;
				bad++;
			} else {
				bytes += h.size;
			}
			prev_pulse = pulse;
			if (!ref_path)
				seen.push_back({made, e->t_seen});
			/* The reader cleared the doorbell before publishing. */
			if (host_rearm && e->buf < nbuf)
				drp_rearm((uint8_t *)regs, cfg.free_off[e->buf], late);
		}
		__atomic_thread_fence(__ATOMIC_RELEASE);
		q->tail = tail + 1;
	}
stop:
	t1 = now_s();
	{
		/* On a stream of its own that waits for nothing: a plain
		 * cudaMemcpy would wait for the readers, which wait for it
		 * (under compute-sanitizer, where kernels run one at a time,
		 * for ever).  Then each reader gets a bounded time to end. */
		static const uint32_t one = 1;
		double give_up = now_s() + frame_wait_s;
		cudaStream_t sst;

		cudaError_t e;

		CU(cudaStreamCreateWithFlags(&sst, cudaStreamNonBlocking));
		CU(cudaMemcpyAsync(dstop, &one, sizeof(one), cudaMemcpyHostToDevice, sst));
		/* Where the GPU runs one kernel at a time, even this copy waits
		 * behind a reader that never ends: give up in bounded time.  The
		 * exits are _exit (see clk_must). */
		while ((e = cudaStreamQuery(sst)) == cudaErrorNotReady && now_s() < give_up)
			usleep(1000);
		if (e == cudaErrorNotReady) {
			printf("drp: FAIL: the stop flag was not written within %.0f s: the GPU ran "
			       "nothing beside the readers (one kernel at a time, as under "
			       "compute-sanitizer: run one reader there)\n",
			       frame_wait_s);
			fflush(stdout);
			_exit(1);
		}
		CU(e);
		CU(cudaStreamDestroy(sst));
		for (unsigned int r = 0; r < nreaders; r++) {
			while ((e = cudaStreamQuery(st[r])) == cudaErrorNotReady &&
			       now_s() < give_up)
				usleep(1000);
			if (e == cudaErrorNotReady) {
				printf("drp: FAIL: reader %u did not stop within %.0f s of the stop "
				       "flag\n",
				       r, frame_wait_s);
				fflush(stdout);
				_exit(1);
			}
			CU(e);
		}
	}
	clk.stop = true;
	pthread_join(clk.thread, NULL);
	if (clk.lost)
		printf("drp: note: the GPU answered no clock ping while the readers ran (one "
		       "kernel at a time): latencies use the samples before and after the run\n");
	clk.v.push_back(clk_must(&clk, "after the run"));

	/* ---- what is left over, the card's side ---- */
	std::vector<drp_reader> rd(nreaders);
	uint64_t extra = 0;
	int fails = 0;

	CU(cudaMemcpy(rd.data(), drd, nreaders * sizeof(*drd), cudaMemcpyDeviceToHost));
	for (unsigned int r = 0; r < nreaders; r++) {
		extra += rings[r].head - rings[r].tail;
		printf("drp: reader %u: %llu frames, %llu graph launches, %llu spin timeouts, "
		       "%llu ring-full waits\n",
		       r, rd[r].frames, rd[r].launches, rd[r].timeouts, rd[r].full);
	}
	uint64_t rxc = fs_u64("registers/rx_frame_count");
	uint64_t werr = fs_u64("registers/axi_write_error_count");

	printf("drp: %" PRIu64 " frames, %" PRIu64 " bad (first %" PRId64 "), %" PRIu64
	       " extra, %.1f MB in %.3f s: %.0f frames/s, %.2f GB/s\n",
	       k, bad, first_bad == UINT64_MAX ? (int64_t)-1 : (int64_t)first_bad, extra,
	       bytes / 1e6, t1 - t0, k / (t1 - t0), bytes / (t1 - t0) / 1e9);
	printf("card: rx_frame_count %" PRIu64 " axi_write_error_count %" PRIu64 "\n", rxc, werr);
	{
		uint64_t worst = 0;

		for (const clk_sample &c : clk.v)
			worst = std::max(worst, c.err);
		printf("drp: clock offset first %" PRId64 ", last %" PRId64 " ns (%zu samples, "
		       "error at most %" PRIu64 " ns)\n",
		       clk.v.front().off, clk.v.back().off, clk.v.size(), worst);
	}
	if (k != nframes || bad || extra)
		fails++;
	if (rxc != nframes || werr) {
		printf("drp: FAIL: card counters disagree with %" PRIu64 " frames\n", nframes);
		fails++;
	}

	/* ---- latency ---- */
	std::vector<int64_t> lat;

	if (ref_path)
		printf("drp: latency not measured: a replay's time stamps are the file's\n");
	for (const auto &f : seen)
		lat.push_back((int64_t)(f.second - f.first) - clk_offset_at(clk.v, f.first));
	if (!lat.empty()) {
		static const int64_t edges[] = {1000,	 2000,	  5000,	   10000,    20000,
						50000,	 100000,  200000,  500000,   1000000,
						2000000, 5000000, 10000000, 100000000, INT64_MAX};
		std::vector<int64_t> s = lat;
		size_t n = s.size(), b = 0;
		uint64_t cnt[sizeof(edges) / sizeof(edges[0])] = {0};
		FILE *f = hist_path ? fopen(hist_path, "w") : NULL;

		std::sort(s.begin(), s.end());
		for (size_t i = 0; i < n; i++) {
			while (s[i] > edges[b])
				b++;
			cnt[b]++;
		}
		printf("latency (card made the frame -> reader saw its size word), %zu frames: "
		       "min %.2f p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.2f us\n",
		       n, s[0] / 1e3, s[n / 2] / 1e3, s[n * 9 / 10] / 1e3, s[n * 99 / 100] / 1e3,
		       s[n * 999 / 1000] / 1e3, s[n - 1] / 1e3);
		for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
			if (edges[i] == INT64_MAX)
				printf("  >  %8.0f us: %" PRIu64 "\n", edges[i - 1] / 1e3, cnt[i]);
			else
				printf("  <= %8.0f us: %" PRIu64 "\n", edges[i] / 1e3, cnt[i]);
			if (f)
				fprintf(f, "%s %" PRIu64 "\n",
					edges[i] == INT64_MAX ? "+Inf"
							      : std::to_string(edges[i]).c_str(),
					cnt[i]);
		}
		if (f)
			fclose(f);
		if (!flr.empty())
			printf("latency against the floor (its p50): p50 %.2fx, p99 %.2fx\n",
			       s[n / 2] / flr[flr.size() / 2], s[n * 99 / 100] / flr[flr.size() / 2]);
	}

	fs_write("registers/write_enable", "0");
	for (unsigned int r = 0; r < nreaders; r++) {
		cudaGraphExecDestroy(ex[r]);
		cudaStreamDestroy(st[r]);
	}
	for (unsigned int i = 0; i < nbuf; i++)
		cudaIpcCloseMemHandle(cfg.buf[i]);
	cudaFree((void *)cfg.ref);
	cudaFree((void *)cfg.ref_off);
	cudaFree((void *)cfg.ref_len);
	cudaHostUnregister((void *)regs);
	munmap((void *)regs, GA_CORE_SIZE);
	printf("%s\n", fails ? "drp: FAILED" : "drp: OK");
	return fails ? 1 : 0;
}
