// SPDX-License-Identifier: GPL-2.0
/*
 * The consumer of tests/upstream/rate.sh: one program for every card it
 * compares (upstream's datadev + datadev_emulator, gpuasync.ko's emulated
 * card), speaking only the upstream datadev ABI (gpuasync/abi.h) and the
 * stub memory node both p2p stubs offer, so that the frames/s it prints
 * measure the cards, not the consumers.
 *
 *   rate DEV SECONDS SIZE BUFFERS [GEN_SYSFS_DIR]
 *
 * It reserves BUFFERS buffers of 128 KiB from /dev/nvidia_p2p_stub_mem, one
 * reservation each as upstream's tools make them (room for a 64 KiB frame
 * after the payload offset), registers them for
 * FPGA->GPU (GPU_Add_Nvidia_Memory), sets write_max_size to SIZE (upstream's
 * emulator sends frames of that size), clears every size word, arms every
 * buffer and switches the write engine on.  With GEN_SYSFS_DIR (gpuasync.ko's
 * /sys/class/gpuasync/<card>) it then starts the card's own generator with
 * frames of SIZE bytes.  The loop, the same for every card: wait for the
 * size word at +4 of the next buffer in ring order, check it says SIZE,
 * clear it and re-arm that buffer (GPU_Set_Write_Enable), for SECONDS from
 * the first frame on.  It prints one line:
 *
 *   RATE frames=N seconds=S fps=F bad=B rx_frame_count=R
 *
 * bad counts size words other than SIZE; rx_frame_count is the card's own
 * counter over the same interval (frames it finished, a check on N).
 * Exit 0 when frames arrived and none was bad.
 *
 *   rate copy SECONDS SIZE
 *
 * measures the ceiling of any card that writes each payload once: memcpy
 * of SIZE bytes between two 1 MiB areas, ring-wise, as "frames" per second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gpuasync/abi.h"
#include "gpuasync/regs.h"

#define BUF_BYTES (2 * GA_GPU_PAGE_SIZE)
#define MAX_BUFS 64

/* The stub memory node's reservation (both stubs): size in, id out. */
struct stub_reserve {
	uint32_t size;
	uint32_t buf_id;
};
#define STUB_RESERVE _IOWR('S', 1, struct stub_reserve)

static int dev;
static enum ga_layout layout;
static unsigned int version, max_buffers;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what)
{
	fprintf(stderr, "rate: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint32_t reg_off(enum ga_reg_id id, unsigned int index)
{
	uint32_t off;

	if (ga_reg_offset(id, layout, version, index, max_buffers, &off)) {
		fprintf(stderr, "rate: register %s[%u] absent in version %u\n", ga_regs[id].name,
			index, version);
		exit(2);
	}
	return GA_CORE_OFFSET + off;
}

static uint32_t rd(uint32_t off)
{
	struct DmaRegisterData r = { .address = off };

	if (ioctl(dev, DMA_Read_Register, &r) < 0)
		die("DMA_Read_Register");
	return r.data;
}

static void wr(uint32_t off, uint32_t v)
{
	struct DmaRegisterData r = { .address = off, .data = v };

	if (ioctl(dev, DMA_Write_Register, &r) < 0)
		die("DMA_Write_Register");
}

static void set_field(enum ga_reg_id id, uint32_t v)
{
	uint32_t off = reg_off(id, 0);

	wr(off, ga_reg_field_set(id, layout, rd(off), v));
}

static void sys_write(const char *dir, const char *name, unsigned long v)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%lu\n", v) < 0 || fclose(f))
		die(path);
}

/* A reservation of @size bytes of stub memory, mapped 64 KiB aligned (the
 * driver pins whole 64 KiB pages). */
static uint8_t *stub_map(int s, uint32_t size)
{
	struct stub_reserve req = { .size = size };
	uint8_t *rsv, *at, *p;

	if (ioctl(s, STUB_RESERVE, &req) < 0)
		die("STUB_RESERVE_BUF");
	rsv = mmap(NULL, size + GA_GPU_PAGE_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (rsv == MAP_FAILED)
		die("mmap reserve");
	at = (uint8_t *)(((uintptr_t)rsv + GA_GPU_PAGE_SIZE - 1) & ~(uintptr_t)(GA_GPU_PAGE_SIZE - 1));
	p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, s,
		 (off_t)req.buf_id * getpagesize());
	if (p == MAP_FAILED)
		die("mmap stub memory");
	return p;
}

static volatile uint32_t *size_word(uint8_t *mem)
{
	return (volatile uint32_t *)(mem + GA_HDR_SIZE_OFFSET);
}

/* The copy ceiling: SIZE-byte memcpy calls per second for @secs. */
static int copy_rate(unsigned int secs, unsigned int size)
{
	static uint8_t a[1 << 20], b[1 << 20];
	unsigned long n = 0, slots = sizeof(a) / size;
	double t0 = now(), t1;

	memset(a, 0x5a, sizeof(a));
	do {
		for (unsigned int i = 0; i < 64; i++, n++)
			memcpy(b + (n % slots) * size, a + ((n + 1) % slots) * size, size);
		__asm__ volatile("" : : "r"(b) : "memory");
	} while ((t1 = now()) < t0 + secs);
	printf("RATE frames=%lu seconds=%.3f fps=%.0f bad=0 rx_frame_count=0\n", n, t1 - t0,
	       n / (t1 - t0));
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int secs, size, nbuf, i, idx = 0, spins;
	unsigned long frames = 0, bad = 0;
	uint32_t rx0 = 0, rx1, v;
	const char *gen = argc > 5 ? argv[5] : NULL;
	double t0 = 0, t1, deadline = 0;
	uint8_t *mem[MAX_BUFS];
	int s;

	if (argc == 4 && !strcmp(argv[1], "copy"))
		return copy_rate(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0));
	if (argc < 5) {
		fprintf(stderr, "usage: rate DEV SECONDS SIZE BUFFERS [GEN_SYSFS_DIR]\n"
				"       rate copy SECONDS SIZE\n");
		return 2;
	}
	secs = strtoul(argv[2], NULL, 0);
	size = strtoul(argv[3], NULL, 0);
	nbuf = strtoul(argv[4], NULL, 0);
	if (!secs || !size || size > GA_GPU_PAGE_SIZE || !nbuf || nbuf > MAX_BUFS) {
		fprintf(stderr, "rate: SIZE 1..65536, BUFFERS 1..%d\n", MAX_BUFS);
		return 2;
	}
	dev = open(argv[1], O_RDWR);
	if (dev < 0)
		die(argv[1]);
	s = open("/dev/nvidia_p2p_stub_mem", O_RDWR);
	if (s < 0)
		die("/dev/nvidia_p2p_stub_mem");
	version = ioctl(dev, GPU_Get_Gpu_Async_Ver, 0);
	max_buffers = ioctl(dev, GPU_Get_Max_Buffers, 0);
	if (version < 4 || !ga_version_find(version) || max_buffers < nbuf) {
		fprintf(stderr, "rate: firmware version %u, %u buffers: need V4/V5, %u\n", version,
			max_buffers, nbuf);
		return 2;
	}
	layout = ga_layout_for_version(version, false);

	for (i = 0; i < nbuf; i++) {
		struct GpuNvidiaData d = { .write = 1, .size = BUF_BYTES };

		mem[i] = stub_map(s, BUF_BYTES);
		memset(mem[i], 0, BUF_BYTES);
		d.address = (uintptr_t)mem[i];
		if (ioctl(dev, GPU_Add_Nvidia_Memory, &d) < 0)
			die("GPU_Add_Nvidia_Memory");
	}
	wr(reg_off(GA_REG_WRITE_MAX_SIZE, 0), size);
	for (i = 0; i < nbuf; i++)
		if (ioctl(dev, GPU_Set_Write_Enable, &i) < 0)
			die("GPU_Set_Write_Enable");
	set_field(GA_REG_WRITE_ENABLE, 1);
	if (gen) {
		sys_write(gen, "gen_size", size);
		sys_write(gen, "gen_frames", 0xffffffffUL);
	}
	deadline = now() + 10; /* the first frame: 10 s at most */

	for (;;) {
		volatile uint32_t *w = size_word(mem[idx]);

		/* Waiting: yield the CPU (the card may share it), look at the
		 * clock only every 256 turns (it can be a slow device read). */
		for (spins = 0; !(v = __atomic_load_n(w, __ATOMIC_ACQUIRE)); spins++) {
			if (!(spins & 255) && now() >= deadline)
				goto done;
			sched_yield();
		}
		if (!t0) {
			/* The clock starts at the first frame. */
			t0 = now();
			deadline = t0 + secs;
			rx0 = rd(reg_off(GA_REG_RX_FRAME_COUNT, 0));
		} else {
			frames++;
			if (v != size)
				bad++;
			if (!(frames & 63) && now() >= deadline)
				goto done;
		}
		__atomic_store_n(w, 0, __ATOMIC_RELEASE);
		if (ioctl(dev, GPU_Set_Write_Enable, &idx) < 0)
			die("GPU_Set_Write_Enable");
		idx = (idx + 1) % nbuf;
	}
done:
	t1 = now();
	rx1 = t0 ? rd(reg_off(GA_REG_RX_FRAME_COUNT, 0)) : 0;
	if (gen)
		sys_write(gen, "gen_frames", 0);
	set_field(GA_REG_WRITE_ENABLE, 0);
	if (ioctl(dev, GPU_Rem_Nvidia_Memory, 0) < 0)
		die("GPU_Rem_Nvidia_Memory");
	printf("RATE frames=%lu seconds=%.3f fps=%.0f bad=%lu rx_frame_count=%u\n", frames,
	       t0 ? t1 - t0 : 0.0, t0 ? frames / (t1 - t0) : 0.0, bad, rx1 - rx0);
	close(s);
	close(dev);
	return frames && !bad ? 0 : 1;
}
