// SPDX-License-Identifier: GPL-2.0
/*
 * kt cases for buffers registered from a dma-buf (GA_Add_Dmabuf).
 *
 * Exporters: nv_p2p_stub's regions (NVSTUB_EXPORT_DMABUF), static as
 * NVIDIA's exporter or dynamic (dmabuf_dynamic=1: move_notify on
 * NVSTUB_INVALIDATE, revoke on NVSTUB_FREE), on every kernel; and udmabuf
 * (host memory of a memfd), where the kernel has it (the debug kernel).
 * The emulated card writes frames into the exported memory, which the test
 * reads back through the region's or the memfd's mapping.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/udmabuf.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"

static int add_dmabuf(int fd, int write, int dfd, uint64_t off, uint32_t size, uint32_t *index)
{
	struct ga_dmabuf_add a = { .fd = (uint32_t)dfd, .write = (uint32_t)write, .offset = off,
				   .size = size, .index = ~0u };
	int r = ioctl(fd, GA_Add_Dmabuf, &a);

	if (!r && index)
		*index = a.index;
	return r;
}

/* A dma-buf of [va, va + len) of a stub region (len 0: to its end), or -1. */
static int stub_export(int s, uint64_t va, uint64_t len)
{
	struct nvstub_export x = { .va = va, .len = len };

	if (ioctl(s, NVSTUB_EXPORT_DMABUF, &x)) {
		printf("KTEST note: NVSTUB_EXPORT_DMABUF: %s\n", strerror(errno));
		return -1;
	}
	return x.fd;
}

/*
 * The table lists @n dma-buf buffers; those in @gone (bit 8 * write +
 * index) are invalidated, the others programmed at their bus address.
 */
static void check_table(int fd, unsigned int n, uint32_t gone)
{
	struct ga_buffer_entry e[16];
	unsigned int k;

	CHECK(get_table(fd, e, 16) == (int)n, "want %u buffers", n);
	for (k = 0; k < n && k < 16; k++) {
		uint32_t want = GA_BUF_DMABUF;

		if (gone & (1u << (8 * e[k].write + e[k].index)))
			want |= GA_BUF_INVALIDATED;
		CHECK(e[k].flags == want, "buffer %u/%u flags %#x want %#x", e[k].write, e[k].index,
		      e[k].flags, want);
		CHECK(e[k].pages == e[k].size / KB64);
		if (!(want & GA_BUF_INVALIDATED))
			CHECK(e[k].bus_address == buf_addr_reg(fd, e[k].write, e[k].index),
			      "table and address register disagree");
	}
}

/* Generate @n frames of @size into armed write buffers 0..n-1 of @mem. */
static void stream(int fd, uint8_t *mem, uint32_t n, uint32_t size, const char *what)
{
	uint32_t idx[16], i, base;
	struct ga_arm_many a = { .indices = (uintptr_t)idx, .count = n };
	char v[32];
	long d0;

	for (i = 0; i < n; i++) {
		idx[i] = i;
		memset(mem + i * KB64, 0, 8);
	}
	snprintf(v, sizeof(v), "%u", size);
	CHECK_OK(sys_write("gen_size", v));
	CHECK_OK(ioctl(fd, GA_Arm_Buffers, &a));
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 1));
	d0 = sys_read("delivered");
	base = (uint32_t)(d0 + sys_read("dropped") + sys_read("diverted"));
	snprintf(v, sizeof(v), "%u", n);
	CHECK_OK(sys_write("gen_frames", v));
	CHECK(sys_wait("delivered", d0 + n) == d0 + n, "%s: frames did not arrive", what);
	for (i = 0; i < n; i++)
		check_frame(mem + i * KB64, size, base + i, what);
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 0));
}

/* GPU->FPGA from read buffer 0 at @mem: the card fetches what is there. */
static void fetch(int fd, uint8_t *mem, const char *what)
{
	uint32_t at = layout == GA_LAYOUT_V1 ? 0 : ddb, n = 333, sum = 0, i;
	long tx0 = sys_read("tx_frames");
	char last[64] = "", want[64];

	memset(mem, 0, at + 8);
	for (i = 0; i < n; i++) {
		mem[at + i] = (uint8_t)(i * 13 + 1);
		sum += (uint8_t)(i * 13 + 1);
	}
	CHECK_OK(ioctl(fd, GPU_Enable_Rx, 1));
	wr_word(fd, reg_off(GA_REG_READ_SIZE, 0), n);
	CHECK(sys_wait("tx_frames", tx0 + 1) == tx0 + 1, "%s: read not serviced", what);
	CHECK_OK(sys_gets("tx_last", last, sizeof(last)));
	snprintf(want, sizeof(want), "%u %u\n", n, sum);
	CHECK(strcmp(last, want) == 0, "%s: the card read '%s', want '%s'", what, last, want);
	CHECK_OK(ioctl(fd, GPU_Enable_Rx, 0));
}

/* Register from a static export (NVIDIA's kind), stream both ways, remove. */
static void t_dmabuf_frames(void)
{
	int fd = open_card(), s = open_stub(), x;
	struct gmem g = galloc(s, 5 * KB64);
	uint32_t i, index = 99;

	x = stub_export(s, g.va, 0);
	CHECK(x >= 0);
	for (i = 0; i < 4; i++) {
		CHECK_OK(add_dmabuf(fd, 1, x, i * KB64, KB64, &index));
		CHECK(index == i, "write buffer %u got index %u", i, index);
	}
	CHECK_OK(add_dmabuf(fd, 0, x, 4 * KB64, KB64, &index));
	CHECK(index == 0);
	close(x); /* the driver holds its own reference */
	CHECK(stub_stats().dmabufs == 1);
	CHECK(stub_stats().mappings == 5, "one mapping per buffer");
	CHECK(sys_read("live_dmabufs") == 5);
	check_table(fd, 5, 0);
	stream(fd, g.map, 4, 1000, "dma-buf write buffers");
	fetch(fd, g.map + 4 * KB64, "dma-buf read buffer");
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	check_clean(fd, "after dma-buf frames");
	gfree(s, &g);
	close(s);
	close(fd);
}

/* Every refusal: right errno, and nothing registered or left attached. */
static void t_dmabuf_bad(void)
{
	int fd = open_card(), s = open_stub(), x, y, nul = open("/dev/null", O_RDONLY);
	struct gmem g = galloc(s, 4 * KB64), h = galloc(s, 16 * KB64);
	uint32_t i;

	x = stub_export(s, g.va, 0);
	CHECK(x >= 0);
	CHECK_ERR(add_dmabuf(fd, 1, -1, 0, KB64, NULL), EBADF);
	CHECK_ERR(add_dmabuf(fd, 1, nul, 0, KB64, NULL), EINVAL);
	CHECK_ERR(add_dmabuf(fd, 1, x, 0, 0, NULL), EINVAL);
	CHECK_ERR(add_dmabuf(fd, 1, x, 0, 4096, NULL), EINVAL);
	CHECK_ERR(add_dmabuf(fd, 1, x, 4096, KB64, NULL), EINVAL);
	CHECK_ERR(add_dmabuf(fd, 1, x, 4 * KB64, KB64, NULL), EINVAL);
	CHECK_ERR(add_dmabuf(fd, 1, x, 3 * KB64, 2 * KB64, NULL), EINVAL);
	CHECK_ERR(add_dmabuf(fd, 1, x, ~0ull - KB64 + 1, KB64, NULL), EINVAL);
	CHECK_ERR(ioctl(fd, GA_Add_Dmabuf, NULL), EFAULT);
	CHECK_ERR(ioctl(fd, GA_Add_Dmabuf, (void *)8), EFAULT);
	/* An exporter that cannot reach the card (NVIDIA's: ENOTSUPP, 524,
	 * when the PCIe topology gives no peer-to-peer path). */
	CHECK_OK(stub_param("fail_dmabuf_attach", "1"));
	CHECK_ERR(add_dmabuf(fd, 1, x, 0, KB64, NULL), GA_KERNEL_ENOTSUPP);
	CHECK(get_table(fd, NULL, 0) == 0, "a refused buffer was registered");
	CHECK(sys_read("live_dmabufs") == 0 && stub_stats().mappings == 0);
	CHECK(sys_read("owner_tgid") == 0, "a refusal made us the owner");

	/* Memory that is not one run on the bus: the card takes one address. */
	y = stub_export(s, g.va, 0);
	CHECK_OK(stub_param("scatter", "1")); /* read when the card maps it */
	CHECK_ERR(add_dmabuf(fd, 1, y, 0, 2 * KB64, NULL), EINVAL);
	CHECK(stub_stats().mappings == 0, "the refused mapping was not given back");
	CHECK_OK(add_dmabuf(fd, 1, y, KB64, KB64, NULL)); /* one page is one run */
	CHECK_OK(stub_param("scatter", "0"));
	close(y);

	/* V4 and later: one size for every write buffer. */
	if (ga_reg_present(GA_REG_WRITE_MAX_SIZE, layout, version))
		CHECK_ERR(add_dmabuf(fd, 1, x, 2 * KB64, 2 * KB64, NULL), EINVAL);
	/* The firmware's number of buffers. */
	y = stub_export(s, h.va, 0);
	for (i = 1; i < max_buffers && i <= 16; i++)
		CHECK_OK(add_dmabuf(fd, 1, i < 16 ? y : x, (i % 16) * KB64, KB64, NULL));
	if (max_buffers <= 16)
		CHECK_ERR(add_dmabuf(fd, 1, x, 0, KB64, NULL), EINVAL);
	close(y);
	CHECK(get_table(fd, NULL, 0) == (int)(max_buffers < 17 ? max_buffers : 17));
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	close(x);
	close(nul);
	check_clean(fd, "after refused dma-bufs");
	CHECK(stub_stats().misuse == 0);
	gfree(s, &g);
	gfree(s, &h);
	close(s);
	close(fd);
}

/*
 * A static dma-buf keeps its memory: the region freed (cudaFree) under a
 * running engine changes nothing for the card, as with NVIDIA's exporter.
 */
static void t_dmabuf_static_free(void)
{
	int fd = open_card(), s = open_stub(), x;
	struct gmem g = galloc(s, KB64);
	struct nvstub_range r = { .va = g.va };

	x = stub_export(s, g.va, 0);
	CHECK_OK(add_dmabuf(fd, 1, x, 0, KB64, NULL));
	close(x);
	CHECK_OK(ioctl(s, NVSTUB_FREE, &r));
	check_table(fd, 1, 0);
	CHECK(stub_stats().regions == 1 && stub_stats().dmabufs == 1, "the dma-buf keeps it");
	stream(fd, g.map, 1, 512, "after the region was freed");
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	CHECK(stub_stats().regions == 0, "the last reference frees the memory");
	check_clean(fd, "after a static dma-buf outlived its region");
	munmap(g.map, g.size);
	close(s);
	close(fd);
}

/*
 * A dynamic exporter moves one buffer's memory, then revokes another's:
 * each is torn down alone, exactly like an nvidia_p2p free callback.
 */
static void t_dmabuf_move(void)
{
	int fd = open_card(), s = open_stub(), x[3], k;
	struct gmem g[3];
	struct nvstub_range r;
	struct nvstub_stats st0 = stub_stats();
	uint32_t i;

	CHECK_OK(stub_param("dmabuf_dynamic", "1"));
	for (k = 0; k < 3; k++) {
		g[k] = galloc(s, KB64);
		x[k] = stub_export(s, g[k].va, 0);
	}
	CHECK_OK(stub_param("dmabuf_dynamic", "0"));
	CHECK_OK(add_dmabuf(fd, 1, x[0], 0, KB64, NULL));
	CHECK_OK(add_dmabuf(fd, 1, x[1], 0, KB64, NULL));
	CHECK_OK(add_dmabuf(fd, 0, x[2], 0, KB64, NULL));
	for (k = 0; k < 3; k++)
		close(x[k]);
	for (i = 0; i < 2; i++)
		CHECK_OK(ioctl(fd, GPU_Set_Write_Enable, &i));
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 1));
	CHECK_OK(ioctl(fd, GPU_Enable_Rx, 1));

	/* Write buffer 1's memory moves while armed and running. */
	r = (struct nvstub_range){ .va = g[1].va };
	CHECK(ioctl(s, NVSTUB_INVALIDATE, &r) == 1, "one dma-buf must move");
	check_table(fd, 3, 1u << 9);
	CHECK(buf_addr_reg(fd, true, 1) == 0, "moved buffer's address not zeroed");
	CHECK(field(fd, GA_REG_WRITE_ENABLE, 0) == 0, "write engine must be stopped");
	CHECK(field(fd, GA_REG_READ_ENABLE, 0) == 1, "read engine is not concerned");
	CHECK(stub_stats().mappings == 2, "the moved mapping must be given back");
	CHECK(sys_read("live_dmabufs") == 3, "attachments stay until removal");
	i = 1;
	CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, &i), ENXIO);
	CHECK(ioctl(s, NVSTUB_INVALIDATE, &r) == 1 && stub_stats().mappings == 2,
	      "a second move finds nothing mapped");
	/* Buffer 0 keeps working. */
	stream(fd, g[0].map, 1, 800, "buffer 0 after buffer 1 moved");

	/* cudaFree of the read buffer's memory revokes it. */
	gfree(s, &g[2]);
	check_table(fd, 3, 1u << 9 | 1u << 0);
	CHECK(buf_addr_reg(fd, false, 0) == 0);
	CHECK(field(fd, GA_REG_READ_ENABLE, 0) == 0, "read engine must be stopped");
	CHECK(stub_stats().moves - st0.moves == 3, "moves: invalidate twice, free once");
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	check_clean(fd, "after moved dma-bufs");
	CHECK(stub_stats().misuse == 0);
	gfree(s, &g[0]);
	gfree(s, &g[1]);
	close(s);
	close(fd);
}

struct closer {
	int fd;
	int s;
	uint64_t va[4];
};

static void *revoke_all(void *p)
{
	struct closer *c = p;
	int k;

	for (k = 0; k < 4; k++)
		ioctl(c->s, NVSTUB_FREE, &(struct nvstub_range){ .va = c->va[k] });
	return NULL;
}

/*
 * Revocations racing a stream of frames and re-arms; then revocations
 * racing the close of the card file that removes the same buffers.
 */
static void t_dmabuf_race(void)
{
	int fd = open_card(), s = open_stub(), k, round;
	struct racer r = { .fd = fd };
	struct gmem g[4];
	pthread_t th;

	CHECK_OK(stub_param("dmabuf_dynamic", "1"));
	for (k = 0; k < 4; k++) {
		int x;

		g[k] = galloc(s, KB64);
		r.map[k] = g[k].map;
		x = stub_export(s, g[k].va, 0);
		CHECK_OK(add_dmabuf(fd, 1, x, 0, KB64, NULL));
		close(x);
	}
	CHECK_OK(sys_write("gen_size", "4096"));
	CHECK_OK(sys_write("gen_frames", "1000000"));
	pthread_create(&th, NULL, rearm_loop, &r);
	for (k = 0; k < 4; k++) {
		long d0 = sys_read("delivered");
		int j;

		for (j = 0; k == 0 && j < 4000 && sys_read("delivered") < d0 + 8; j++)
			usleep(1000);
		CHECK(k > 0 || sys_read("delivered") >= d0 + 8, "no traffic before the first revoke");
		CHECK_OK(ioctl(s, NVSTUB_FREE, &(struct nvstub_range){ .va = g[k].va }));
	}
	r.stop = 1;
	pthread_join(th, NULL);
	for (k = 0; k < 4; k++)
		munmap(g[k].map, g[k].size);
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	CHECK_OK(sys_write("gen_frames", "0"));
	check_clean(fd, "after racing revocations");

	for (round = 0; round < 20; round++) {
		struct closer c = { .s = s };
		int f2 = open_card();

		for (k = 0; k < 4; k++) {
			struct gmem m = galloc(s, KB64);
			int x = stub_export(s, m.va, 0);

			c.va[k] = m.va;
			munmap(m.map, m.size);
			CHECK_OK(add_dmabuf(f2, 1, x, 0, KB64, NULL));
			close(x);
		}
		CHECK_OK(ioctl(f2, GPU_Enable_Tx, 1));
		pthread_create(&th, NULL, revoke_all, &c);
		usleep((round % 5) * 200);
		close(f2); /* removes every buffer while they are revoked */
		pthread_join(th, NULL);
	}
	CHECK_OK(stub_param("dmabuf_dynamic", "0"));
	check_clean(fd, "after revocations racing close");
	CHECK(stub_stats().misuse == 0);
	close(s);
	close(fd);
}

/* Register dma-buf buffers, arm, enable, then report @c and wait or exit. */
static char hold_setup(void)
{
	int s = open_stub(), fd = open_card(), x;
	struct gmem g = galloc(s, 3 * KB64);
	uint32_t idx[2] = { 0, 1 };
	struct ga_arm_many a = { .indices = (uintptr_t)idx, .count = 2 };

	x = stub_export(s, g.va, 0);
	if (x < 0 || add_dmabuf(fd, 1, x, 0, KB64, NULL) ||
	    add_dmabuf(fd, 1, x, KB64, KB64, NULL) || add_dmabuf(fd, 0, x, 2 * KB64, KB64, NULL) ||
	    ioctl(fd, GA_Arm_Buffers, &a) || ioctl(fd, GPU_Enable_Tx, 1))
		return 'e';
	close(x);
	return 'k';
}

void hold_dmabuf(void)
{
	printf(hold_setup() == 'k' ? "HOLDING\n" : "KTEST FAIL hold_dmabuf setup\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* kill -9 of a process holding dma-buf buffers: all of it goes. */
static void t_dmabuf_kill9(void)
{
	int fd = open_card(), p[2], st;
	char c = 0;
	pid_t pid;

	CHECK(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		c = hold_setup();
		if (write(p[1], &c, 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(p[1]);
	CHECK(read(p[0], &c, 1) == 1 && c == 'k', "holder setup (%c)", c ? c : '?');
	close(p[0]);
	CHECK(sys_read("owner_tgid") == pid);
	CHECK(sys_read("live_dmabufs") == 3);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	check_clean(fd, "after kill -9 of a dma-buf owner");
	CHECK(field(fd, GA_REG_WRITE_ENABLE, 0) == 0, "engine left on");
	close(fd);
}

/* Physical frame of the page at @p (root reads /proc/self/pagemap). */
static uint64_t pfn_of(const void *p)
{
	uint64_t e = 0;
	int f = open("/proc/self/pagemap", O_RDONLY);

	if (f >= 0) {
		if (pread(f, &e, 8, (off_t)((uintptr_t)p / 4096) * 8) != 8)
			e = 0;
		close(f);
	}
	return e & ((1ull << 55) - 1);
}

/*
 * A udmabuf of @size bytes of memfd @m (sealed against shrinking), mapped
 * at *@map and faulted in first: udmabuf takes only pages that exist.
 */
static int udmabuf_of(int u, int m, uint64_t size, uint8_t **map)
{
	struct udmabuf_create c = { .memfd = (uint32_t)m, .flags = UDMABUF_FLAGS_CLOEXEC,
				    .size = size };

	*map = MAP_FAILED;
	if (m < 0 || ftruncate(m, (off_t)size) || fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK))
		return -1;
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
	if (*map == MAP_FAILED)
		return -1;
	memset(*map, 0, size);
	return ioctl(u, UDMABUF_CREATE, &c);
}

/*
 * Host memory through udmabuf, the kernel's own exporter: a huge page is
 * one run on the bus, so the card streams into it; ordinary memfd pages
 * are taken only when they happen to be contiguous (pagemap tells).
 */
static void t_dmabuf_udmabuf(void)
{
	const uint64_t huge = 2u << 20;
	int fd, u = open("/dev/udmabuf", O_RDWR), m, x, contiguous = 1;
	uint8_t *map;
	unsigned int k;

	if (u < 0) {
		case_skipped = "no /dev/udmabuf: this kernel has no CONFIG_UDMABUF";
		return;
	}
	fd = open_card();
	/* (given back at the end: later steps choose their pin path by it) */
	if (write_file("/proc/sys/vm/nr_hugepages", "4"))
		printf("KTEST note: nr_hugepages: %s\n", strerror(errno));
	m = memfd_create("kt-huge", MFD_HUGETLB | MFD_ALLOW_SEALING);
	CHECK(m >= 0, "hugetlb memfd: %s", strerror(errno));
	x = udmabuf_of(u, m, huge, &map);
	CHECK(x >= 0, "hugetlb udmabuf: %s", strerror(errno));
	if (x >= 0) {
		for (k = 0; k < 4; k++)
			CHECK_OK(add_dmabuf(fd, 1, x, k * KB64, KB64, NULL));
		CHECK_OK(add_dmabuf(fd, 0, x, 8 * KB64, KB64, NULL));
		close(x);
		check_table(fd, 5, 0);
		stream(fd, map, 4, 3000, "udmabuf write buffers");
		fetch(fd, map + 8 * KB64, "udmabuf read buffer");
		CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	}
	if (map != MAP_FAILED)
		munmap(map, huge);
	close(m);
	check_clean(fd, "after udmabuf");

	/* Small pages: registered only if they lie in one run. */
	m = memfd_create("kt-small", MFD_ALLOW_SEALING);
	x = udmabuf_of(u, m, KB64, &map);
	CHECK(x >= 0, "udmabuf: %s", strerror(errno));
	if (x >= 0) {
		for (k = 1; k < KB64 / 4096; k++)
			contiguous &= pfn_of(map + k * 4096) == pfn_of(map) + k;
		CHECK(pfn_of(map) != 0, "pagemap gave no frame numbers");
		if (contiguous) {
			CHECK_OK(add_dmabuf(fd, 1, x, 0, KB64, NULL));
			CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
		} else {
			CHECK_ERR(add_dmabuf(fd, 1, x, 0, KB64, NULL), EINVAL);
		}
		printf("KTEST note: 16 memfd pages %s\n",
		       contiguous ? "happened to be contiguous" : "scattered: refused");
		close(x);
	}
	if (map != MAP_FAILED)
		munmap(map, KB64);
	close(m);
	close(u);
	CHECK_OK(write_file("/proc/sys/vm/nr_hugepages", "0"));
	check_clean(fd, "after small udmabuf");
	close(fd);
}

/*
 * Upstream's dma-buf commands of after 7.5.1 (0x800A-0x800E): the fd is the
 * argument, the buffer the whole dma-buf.  Where gpuasync.ko differs from
 * upstream on purpose (kmod/README.md): only the owner adds or removes, an
 * add leaves the engine off, the payload limit is the buffer size minus
 * DmaDataBytes, any bus address is taken, a refusal (bad fd, wrong size,
 * scattered memory) says so with an errno and registers nothing, and
 * remove-all releases every buffer.  docs/abi.md's table lists these.
 */
static void t_dmabuf_upstream(void)
{
	int fd = open_card(), s = open_stub(), x[5], y, nul = open("/dev/null", O_RDONLY), st;
	struct gmem g = galloc(s, 6 * KB64);
	struct ga_buffer_entry e[8];
	pid_t pid;
	int i, n;

	CHECK(ioctl(fd, GPU_Is_Dma_Buf_Supp, 0) == 1);
	CHECK(ioctl(fd, GPU_Is_GpuDirect_Supp, 0) == 1);
	for (i = 0; i < 5; i++) {
		x[i] = stub_export(s, g.va + (uint64_t)i * KB64, KB64);
		CHECK(x[i] >= 0);
	}
	for (i = 0; i < 4; i++)
		CHECK(ioctl(fd, GPU_DmaBuf_Add_Wr_Buffer, x[i]) == 0, "write add %d: %s", i,
		      strerror(errno));
	CHECK(ioctl(fd, GPU_DmaBuf_Add_Rd_Buffer, x[4]) == 0, "read add: %s", strerror(errno));
	for (i = 0; i < 5; i++)
		close(x[i]); /* the driver holds its own references */
	n = get_table(fd, e, 8);
	CHECK(n == 5, "table has %d", n);
	for (i = 0; i < n && i < 5; i++)
		CHECK(e[i].flags == GA_BUF_DMABUF && e[i].size == KB64 && e[i].gpu_address == 0 &&
		      e[i].index == (uint32_t)(i < 4 ? i : 0) && e[i].write == (i < 4) &&
		      e[i].owner_tgid == (uint32_t)getpid(),
		      "buffer %d: flags %#x size %u offset %llu index %u", i, e[i].flags, e[i].size,
		      (unsigned long long)e[i].gpu_address, e[i].index);
	/* Upstream's alignment check takes no address at or above 64 KiB. */
	for (i = 0; i < n && i < 5; i++)
		CHECK(e[i].bus_address >= KB64, "buffer %d at bus address %#llx", i,
		      (unsigned long long)e[i].bus_address);
	check_table(fd, 5, 0);
	/* Upstream switches the engine on at every add and sets the limit to
	 * the buffer size; the payload starts at DmaDataBytes. */
	CHECK(field(fd, GA_REG_WRITE_ENABLE, 0) == 0, "an add switched the write engine on");
	CHECK(field(fd, GA_REG_READ_ENABLE, 0) == 0, "an add switched the read engine on");
	if (layout == GA_LAYOUT_V1)
		CHECK(field(fd, GA_REG_WRITE_SIZE, 3) == KB64 - ddb, "payload limit");
	else
		CHECK(field(fd, GA_REG_WRITE_MAX_SIZE, 0) == KB64 - ddb, "payload limit");
	stream(fd, g.map, 4, 1000, "upstream dma-buf write buffers");
	fetch(fd, g.map + 4 * KB64, "upstream dma-buf read buffer");

	/* Refusals: errno, nothing registered. */
	CHECK_ERR(ioctl(fd, GPU_DmaBuf_Add_Wr_Buffer, -1), EBADF);
	CHECK_ERR(ioctl(fd, GPU_DmaBuf_Add_Wr_Buffer, 1ul << 40), EBADF);
	CHECK_ERR(ioctl(fd, GPU_DmaBuf_Add_Wr_Buffer, nul), EINVAL);
	y = stub_export(s, g.va + 4 * KB64, 2 * KB64);
	if (ga_reg_present(GA_REG_WRITE_MAX_SIZE, layout, version))
		CHECK_ERR(ioctl(fd, GPU_DmaBuf_Add_Wr_Buffer, y), EINVAL); /* one write size */
	CHECK_OK(stub_param("scatter", "1"));
	CHECK_ERR(ioctl(fd, GPU_DmaBuf_Add_Rd_Buffer, y), EINVAL); /* not one run */
	CHECK(dmesg_has("are not contiguous on the bus"), "no log line for scattered memory");
	CHECK_OK(stub_param("scatter", "0"));
	CHECK(get_table(fd, NULL, 0) == 5, "a refused buffer was registered");

	/* Another thread group may neither add nor remove. */
	pid = fork();
	if (pid == 0) {
		int c = open_card(), r = 0;

		if (ioctl(c, GPU_DmaBuf_Add_Rd_Buffer, y) != -1 || errno != EBUSY)
			r |= 1;
		if (ioctl(c, GPU_DmaBuf_Remove_Buffers, 0) != -1 || errno != EBUSY)
			r |= 2;
		if (ioctl(c, GPU_Is_Dma_Buf_Supp, 0) != 1)
			r |= 4;
		_exit(r);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "another process: status %#x (1: added, 2: removed, 4: no answer)", st);
	CHECK(get_table(fd, NULL, 0) == 5, "another process changed the buffers");
	close(y);

	/* Remove all: every buffer, the engines off, the owner released. */
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 1)); /* the enable call is what turns it on */
	CHECK(field(fd, GA_REG_WRITE_ENABLE, 0) == 1, "GPU_Enable_Tx left the engine off");
	CHECK(ioctl(fd, GPU_DmaBuf_Remove_Buffers, 0) == 0);
	CHECK(field(fd, GA_REG_WRITE_ENABLE, 0) == 0, "remove left the engine on");
	check_clean(fd, "after GPU_DmaBuf_Remove_Buffers");
	CHECK(stub_stats().misuse == 0);
	close(nul);
	gfree(s, &g);
	close(s);
	close(fd);
}

const struct kcase dmabuf_cases[] = {
	{ "dmabuf_frames", t_dmabuf_frames },
	{ "dmabuf_bad", t_dmabuf_bad },
	{ "dmabuf_static_free", t_dmabuf_static_free },
	{ "dmabuf_move", t_dmabuf_move },
	{ "dmabuf_race", t_dmabuf_race },
	{ "dmabuf_kill9", t_dmabuf_kill9 },
	{ "dmabuf_udmabuf", t_dmabuf_udmabuf },
	{ "dmabuf_upstream", t_dmabuf_upstream },
};
const unsigned int n_dmabuf_cases = sizeof(dmabuf_cases) / sizeof(dmabuf_cases[0]);
