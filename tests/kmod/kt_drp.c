// SPDX-License-Identifier: GPL-2.0
/*
 * kt cases for the upstream calls LCLS-II's GPU DRP and rogue's AxiMemMap
 * make besides the GPU ones: DMA_Set_MaskBytes (the DRP aborts when it
 * fails), the DMA_Get_RxBuffin*_Count gauges and the API version check.
 * What each must answer is upstream's behaviour (docs/abi.md says where
 * gpuasync.ko differs and why).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kt.h"

/* A mask holding the destinations in @d (ends at -1), upstream's layout. */
static void mask_of(uint8_t m[DMA_MASK_SIZE], const int *d)
{
	memset(m, 0, DMA_MASK_SIZE);
	for (; *d >= 0; d++)
		m[*d / 8] |= (uint8_t)(1u << (*d % 8));
}

static int set_mask(int fd, const int *d)
{
	uint8_t m[DMA_MASK_SIZE];

	mask_of(m, d);
	return ioctl(fd, DMA_Set_MaskBytes, m);
}

/*
 * Reservations are per open file, once, all or none, and end with the
 * file (close or kill -9); a bad pointer reserves nothing.
 */
static void t_mask_bytes(void)
{
	const int first[] = { 0, 9, 3333, DMA_MAX_DEST - 1, -1 };
	const int one[] = { 1, -1 }, two[] = { 2, -1 }, none[] = { -1 };
	const int overlap[] = { 5, 3333, -1 }, five[] = { 5, -1 }, six[] = { 6, -1 };
	long page = sysconf(_SC_PAGESIZE);
	int a = open_card(), b = open_card(), c = open_card(), p[2], st = 0;
	uint8_t *edge;
	pid_t pid;
	char ok;

	CHECK_OK(set_mask(a, first));
	CHECK_ERR(set_mask(a, one), EPERM); /* once per file */
	CHECK(dmesg_has("DMA_Set_MaskBytes: this file holds destinations already"),
	      "no log line for the second mask");
	CHECK_ERR(set_mask(b, overlap), EPERM); /* 3333 is a's */
	CHECK(dmesg_has("DMA_Set_MaskBytes: destination 3333 is held by another open file"),
	      "no log line naming the held destination");
	CHECK_OK(set_mask(c, five)); /* b's refusal took nothing */
	CHECK_OK(set_mask(b, none)); /* reserves nothing; b may still ask */
	CHECK_OK(set_mask(b, two));
	close(c);

	/* A mask that runs into an unmapped page, and no mask at all. */
	edge = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(edge != MAP_FAILED);
	munmap(edge + page, page);
	c = open_card();
	edge[page - 1] = 0x02; /* a destination in the readable half */
	CHECK_ERR(ioctl(c, DMA_Set_MaskBytes, edge + page - DMA_MASK_SIZE / 2), EFAULT);
	CHECK_ERR(ioctl(c, DMA_Set_MaskBytes, NULL), EFAULT);
	CHECK_ERR(ioctl(c, DMA_Set_MaskBytes, (void *)8), EFAULT);
	CHECK_OK(set_mask(c, six)); /* c holds nothing yet */
	munmap(edge, page);
	close(c);

	/* Released on close: a new file gets a's destinations. */
	close(a);
	a = open_card();
	CHECK_OK(set_mask(a, first));
	close(a);

	/* Released when the holder is killed. */
	CHECK(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		int f = open_card();

		ok = set_mask(f, first) == 0 ? 'y' : 'n';
		if (write(p[1], &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK(read(p[0], &ok, 1) == 1 && ok == 'y', "the child could not reserve");
	a = open_card();
	CHECK_ERR(set_mask(a, first), EPERM);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK_OK(set_mask(a, first));
	close(a);
	close(p[0]);
	close(p[1]);
	close(b);
}

/*
 * The receive-buffer gauges count CPU DMA buffers by state, as upstream;
 * gpuasync.ko has none, and GPU buffers are not among them (nor are they
 * upstream's), so each is 0, also with a GPU buffer registered and armed.  Also the
 * version check rogue's AxiMemMap makes (equal to DMA_VERSION).
 */
static void t_rx_counts(void)
{
	static const unsigned int codes[] = { DMA_Get_RxBuffinUser_Count, DMA_Get_RxBuffinHW_Count,
					      DMA_Get_RxBuffinPreHWQ_Count,
					      DMA_Get_RxBuffinSWQ_Count };
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, KB64);
	unsigned int i;

	CHECK(ioctl(fd, DMA_Get_Version) == DMA_VERSION, "dmaCheckVersion");
	CHECK(ioctl(fd, DMA_Get_Buff_Count, 0) == 0);
	for (i = 0; i < 4; i++)
		CHECK(ioctl(fd, codes[i], 0) == 0, "0x%x without buffers", codes[i]);
	CHECK_OK(add_buf(fd, 1, g.va, KB64));
	CHECK_OK(ioctl(fd, GPU_Set_Write_Enable, &(uint32_t){ 0 }));
	for (i = 0; i < 4; i++)
		CHECK(ioctl(fd, codes[i], 0) == 0, "0x%x with a GPU buffer", codes[i]);
	/* Upper bits are ignored on generic codes, as upstream. */
	CHECK(ioctl(fd, DMA_Get_RxBuffinHW_Count | 0x10000u, 0) == 0);
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	gfree(s, &g);
	close(s);
	check_clean(fd, "after the receive counts");
	close(fd);
}

#define TRAP_PARAM "/sys/module/gpuasync/parameters/emulate_trap_stores"

/*
 * The kernel stores @val into the control word @w for recvmsg(), which
 * then waits for four more bytes: the child sends those only once the
 * word has changed and the card has ticked three times, so its looks fall
 * between the store and the call's return, where the trap's handler
 * counts it.  0, or -1 when the call failed.
 */
static int recv_into(volatile uint32_t *w, uint32_t val)
{
	uint32_t tail = 0;
	struct iovec iov[2] = { { (void *)w, 4 }, { &tail, 4 } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
	int sv[2], st = -1, i;
	pid_t pid;
	ssize_t n;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	pid = fork();
	if (pid == 0) {
		if (write(sv[1], &val, 4) != 4)
			_exit(1);
		for (i = 0; i < 10000 && *w != val; i++)
			usleep(1000);
		sys_wait("ticks", sys_read("ticks") + 3);
		_exit(write(sv[1], &tail, 4) != 4 || *w != val ? 1 : 0);
	}
	n = pid > 0 ? recvmsg(sv[0], &msg, MSG_WAITALL) : -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	close(sv[0]);
	close(sv[1]);
	return n == 8 && WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1;
}

/*
 * The card's count of register writes from user space, which shows an
 * observer wrote none (tests/drp): every DMA_Write_Register that reached
 * the card counts one (user_reg_writes), a refused one or a read none; a
 * store through the mapping counts when the emulated card sees the word
 * changed (mapped_reg_writes); a store of the value already there is
 * seen only on the control page, whose stores the card steps one by one.
 */
static void t_reg_writes(void)
{
	struct DmaRegisterData bad = { .address = ~0ull - 3 };
	int fd = open_card();
	uint32_t aw = reg_off(GA_REG_AW_CACHE, 0), w;
	long u0 = sys_read("user_reg_writes"), m0 = sys_read("mapped_reg_writes"), t;
	volatile uint32_t *m = map_core(fd);

	CHECK(u0 >= 0 && m0 >= 0, "no user_reg_writes / mapped_reg_writes in sysfs");
	CHECK(m != NULL, "mmap: %s", strerror(errno));
	if (!m || u0 < 0 || m0 < 0)
		goto out;
	w = m[aw / 4];
	wr_word(fd, aw, ga_reg_field_set(GA_REG_AW_CACHE, layout, w, 0x3));
	CHECK_ERR(ioctl(fd, DMA_Write_Register, &bad), EINVAL);
	CHECK(field(fd, GA_REG_AW_CACHE, 0) == 0x3);
	CHECK(sys_read("user_reg_writes") == u0 + 1, "%ld ioctl writes counted, want 1",
	      sys_read("user_reg_writes") - u0);
	m[aw / 4] = ga_reg_field_set(GA_REG_AW_CACHE, layout, w, 0x5);
	CHECK(sys_wait("mapped_reg_writes", m0 + 1) == m0 + 1, "mapped store not counted once");
	/* The same value again: seen only because this word shares the
	 * control page, whose stores are each stepped (t_enable_pulse). */
	m[aw / 4] = m[aw / 4];
	t = sys_read("ticks");
	sys_wait("ticks", t + 3);
	CHECK(sys_read("mapped_reg_writes") == m0 + 2, "%ld mapped stores counted, want 2",
	      sys_read("mapped_reg_writes") - m0);
	/* A store the card's ticks see before its trap's handler: once. */
	CHECK(sys_read_param("emulate_trap_stores") == 1,
	      "emulate_trap_stores is off (its default is on)");
	CHECK_OK(recv_into(&m[aw / 4], ga_reg_field_set(GA_REG_AW_CACHE, layout, w, 0x6)));
	CHECK(field(fd, GA_REG_AW_CACHE, 0) == 0x6, "the kernel's store did not land");
	CHECK(sys_read("mapped_reg_writes") == m0 + 3,
	      "%ld mapped stores counted, want 3 (looks between a store and its trap)",
	      sys_read("mapped_reg_writes") - m0);
	CHECK(sys_read("user_reg_writes") == u0 + 1, "a mapped store counted as an ioctl");
	wr_word(fd, aw, w);
out:
	if (m)
		munmap((void *)m, GA_CORE_SIZE);
	close(fd);
}


/* Seconds per store of @n stores of the control word's own value. */
static double store_cost(volatile uint32_t *m, uint32_t ctl, unsigned int n)
{
	struct timespec a, b;
	unsigned int i;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++)
		m[ctl / 4] = m[ctl / 4];
	clock_gettime(CLOCK_MONOTONIC, &b);
	return ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9) / n;
}

/* Buffer @i's size word (the frame descriptor's doorbell at +4). */
static uint32_t size_word(const struct gmem *g, unsigned int i)
{
	return *(volatile uint32_t *)(g->map + i * KB64 + 4);
}

/*
 * Issue 25 item 4, the sequence as the DRP makes it: two frames (buffers 0
 * and 1; the ring index is now 2 of 3), both re-armed, then write enable 0
 * and 1 back to back through the mapping: firmware sees both stores and
 * puts the next frame in buffer 0.  The card steps each store to its
 * control page (trapped_stores +2).  Then what it costs: a loop of stores
 * to the control word, trapped and with emulate_trap_stores=0, in one run
 * (KTEST info, not a timed check), and where the frame goes without the
 * trap (info: it depends on whether the card's poll fell between).
 */
static void t_enable_pulse(void)
{
	int fd = open_card(), s = open_stub();
	struct gmem g = galloc(s, 3 * KB64);
	uint32_t idx[3] = { 0, 1, 2 }, ctl = reg_off(GA_REG_WRITE_ENABLE, 0), bit, w, i;
	struct ga_arm_many a = { .indices = (uintptr_t)idx, .count = 3 };
	volatile uint32_t *m = NULL;
	long d0, t0;
	double on = 0, off = 0;
	int pass;

	bit = ga_reg_field_set(GA_REG_WRITE_ENABLE, layout, 0, 1);
	for (i = 0; i < 3; i++)
		CHECK_OK(add_buf(fd, 1, g.va + i * KB64, KB64));
	CHECK_OK(sys_write("gen_size", "1000"));
	for (pass = 0; pass < 2; pass++) {
		CHECK_OK(write_file(TRAP_PARAM, pass ? "0" : "1"));
		memset(g.map, 0, 3 * KB64);
		CHECK_OK(ioctl(fd, GPU_Enable_Tx, 0)); /* ring index 0 */
		CHECK_OK(ioctl(fd, GA_Arm_Buffers, &a));
		CHECK_OK(ioctl(fd, GPU_Enable_Tx, 1));
		d0 = sys_read("delivered");
		CHECK_OK(sys_write("gen_frames", "2"));
		CHECK(sys_wait("delivered", d0 + 2) == d0 + 2, "two frames did not arrive");
		CHECK(size_word(&g, 0) && size_word(&g, 1) && !size_word(&g, 2));
		memset(g.map, 0, 8);
		memset(g.map + KB64, 0, 8);
		a.count = 2;
		CHECK_OK(ioctl(fd, GA_Arm_Buffers, &a));
		a.count = 3;
		m = map_core(fd);
		CHECK(m != NULL, "mmap: %s", strerror(errno));
		if (!m)
			break;
		t0 = sys_read("trapped_stores");
		w = m[ctl / 4];
		CHECK(w & bit, "the write engine is off");
		m[ctl / 4] = w & ~bit;
		m[ctl / 4] = w;
		CHECK_OK(sys_write("gen_frames", "1"));
		CHECK(sys_wait("delivered", d0 + 3) == d0 + 3, "the third frame did not arrive");
		if (!pass) {
			CHECK(size_word(&g, 0) && !size_word(&g, 2),
			      "enable 0, 1 back to back through the mapping: next frame in "
			      "buffer %d, firmware puts it in 0",
			      size_word(&g, 2) ? 2 : -1);
			CHECK(sys_read("trapped_stores") == t0 + 2, "%ld stores trapped, want 2",
			      sys_read("trapped_stores") - t0);
			on = store_cost(m, ctl, 2000);
		} else {
			printf("KTEST info enable_pulse untrapped (emulate_trap_stores=0): next frame "
			       "in buffer %d (firmware: 0)\n",
			       size_word(&g, 0) ? 0 : size_word(&g, 2) ? 2 : -1);
			CHECK(sys_read("trapped_stores") == t0, "a store trapped with the trap off");
			off = store_cost(m, ctl, 2000);
			printf("KTEST info enable_pulse_cost: a store to the control page %.2f us "
			       "trapped, %.3f us untrapped (%.0fx)\n",
			       on * 1e6, off * 1e6, on / off);
		}
		munmap((void *)m, GA_CORE_SIZE);
	}
	CHECK_OK(write_file(TRAP_PARAM, "1"));
	CHECK_OK(ioctl(fd, GPU_Enable_Tx, 0));
	CHECK_OK(ioctl(fd, GPU_Rem_Nvidia_Memory, 0));
	gfree(s, &g);
	close(s);
	check_clean(fd, "after the enable pulse");
	close(fd);
}

/*
 * Two lanes, two owners (production: a CPU DRP and a GPU DRP on different
 * lanes of one card).  The GPU owner rule guards the GPU state only: while
 * another process holds the card's buffers, engine on, a second process
 * opens the node, reserves its own lanes, reads registers (ioctl and a
 * read-only mapping), the gauges and the buffer table; it may not take the
 * owner's lanes nor touch its buffers or engines, and the owner's frames
 * keep flowing.
 */
static void t_two_lanes(void)
{
	const int gpu_lanes[] = { 4, 5, 6, 7, -1 }, cpu_lanes[] = { 0, 1, 2, 3, -1 };
	const int taken[] = { 5, -1 };
	int p[2], q[2], fd, fd2, st = 0, n;
	struct ga_buffer_entry e[4];
	volatile uint32_t *ro;
	uint32_t i = 0, off = 0;
	long d0;
	pid_t pid;
	char c = 0;

	CHECK(pipe(p) == 0 && pipe(q) == 0);
	pid = fork();
	if (pid == 0) {
		int f = open_card(), s = open_stub();
		struct gmem g = galloc(s, 2 * KB64);
		uint32_t idx[2] = { 0, 1 };
		struct ga_arm_many a = { .indices = (uintptr_t)idx, .count = 2 };

		c = set_mask(f, gpu_lanes) || add_buf(f, 1, g.va, KB64) ||
			    add_buf(f, 1, g.va + KB64, KB64) || ioctl(f, GA_Arm_Buffers, &a) ||
			    ioctl(f, GPU_Enable_Tx, 1) ? 'e' : 'k';
		if (write(p[1], &c, 1) != 1 || read(q[0], &c, 1) != 1)
			_exit(1);
		/* Still the owner, engine still on, lanes still ours. */
		_exit(field(f, GA_REG_WRITE_ENABLE, 0) == 1 && get_table(f, NULL, 0) == 2 ? 0 : 2);
	}
	CHECK(read(p[0], &c, 1) == 1 && c == 'k', "the GPU owner could not set up (%c)", c);
	d0 = sys_read("delivered");

	fd = open_card();
	CHECK_OK(set_mask(fd, cpu_lanes));
	fd2 = open_card();
	CHECK_ERR(set_mask(fd2, taken), EPERM); /* the GPU owner's lane */
	close(fd2);
	CHECK(field(fd, GA_REG_VERSION, 0) == version, "register read");
	ga_reg_offset(GA_REG_VERSION, layout, version, 0, 0, &off);
	ro = mmap(NULL, GA_CORE_SIZE, PROT_READ, MAP_SHARED, fd, (off_t)sys_read("core_offset"));
	CHECK(ro != MAP_FAILED, "read-only mapping: %s", strerror(errno));
	if (ro != MAP_FAILED) {
		CHECK(ga_reg_field_get(GA_REG_VERSION, layout, ro[off / 4]) == version);
		munmap((void *)ro, GA_CORE_SIZE);
	}
	CHECK(ioctl(fd, DMA_Get_Version, 0) == DMA_VERSION);
	CHECK(ioctl(fd, DMA_Get_RxBuffinHW_Count, 0) == 0);
	CHECK(ioctl(fd, GPU_Is_Gpu_Async_Supp, 0) == 1);
	CHECK((unsigned int)ioctl(fd, GPU_Get_Max_Buffers, 0) == max_buffers);
	n = get_table(fd, e, 4);
	CHECK(n == 2 && e[0].owner_tgid == (uint32_t)pid, "buffer table: %d, owner %u", n,
	      n > 0 ? e[0].owner_tgid : 0);
	CHECK(sys_read("owner_tgid") == pid);
	/* The GPU state stays the owner's. */
	CHECK_ERR(add_buf(fd, 1, 0x10000, KB64), EBUSY);
	CHECK_ERR(ioctl(fd, GPU_Set_Write_Enable, &i), EBUSY);
	CHECK_ERR(ioctl(fd, GPU_Enable_Tx, 0), EBUSY);
	CHECK_ERR(ioctl(fd, GPU_Rem_Nvidia_Memory, 0), EBUSY);
	/* The owner's frames flow beside it. */
	CHECK_OK(sys_write("gen_frames", "2"));
	CHECK(sys_wait("delivered", d0 + 2) == d0 + 2, "the owner's frames stopped");
	close(fd);

	CHECK(write(q[1], &c, 1) == 1);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "the GPU owner was disturbed (status %#x)", st);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
	fd = open_card();
	check_clean(fd, "after two lanes");
	close(fd);
}

const struct kcase drp_cases[] = {
	{ "enable_pulse", t_enable_pulse },
	{ "reg_writes", t_reg_writes },
	{ "mask_bytes", t_mask_bytes },
	{ "rx_counts", t_rx_counts },
	{ "two_lanes", t_two_lanes },
};
const unsigned int n_drp_cases = sizeof(drp_cases) / sizeof(drp_cases[0]);
