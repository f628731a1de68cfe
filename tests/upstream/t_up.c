// SPDX-License-Identifier: GPL-2.0
/*
 * t_up: libgpuasync on SLAC's upstream datadev driver and its emulated
 * card, in the QEMU guest of tests/upstream/run.sh.
 *
 *   t_up DEVICE            the library's whole buffer life cycle
 *   t_up wipe DEVICE       what another program (upstream's dmaGpuIoctlTest)
 *                          does to the card: remove every buffer; prints the
 *                          result, exit 0 if the driver accepted it
 *   t_up owner DEVICE      the GPU DRP of "two lanes, two owners"
 *                          (lanes_up.sh): holds a write buffer and lanes 4-7,
 *                          says "owner ready", and after a line on stdin
 *                          checks that it still owns both and frames still land
 *   t_up lanes DEVICE      the CPU DRP beside it: only non-GPU calls (registers,
 *                          DMA_Set_MaskBytes for lanes 0-3); says "lanes ready",
 *                          and after a line on stdin reads registers again
 *
 * With no GPU the library must pick upstream's p2p stub memory, and then
 * frames the emulator generates land in our buffers (header, READY, a
 * payload), a loopback send of that payload completes (the emulator checks
 * its PRBS), one buffer can be removed while the others keep working, arms
 * from another thread are accepted (7.5 owns the card per thread), and
 * nothing stays registered.  KTEST lines; exit status = failures.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpuasync/abi.h"
#include "gpuasync/device.h"

#define SIZE 0x10000u

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("KTEST FAIL up:%d: (" #cond ") ", __LINE__);                        \
			printf(" " __VA_ARGS__);                                                   \
			printf(" [%s]\n", ga_last_error());                                        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static void ok(const char *step)
{
	printf("KTEST ok up_%s\n", step);
}

/* Bounded wait (the emulator polls every 100-1000 us; TCG is slow). */
static enum ga_buf_state wait_state(struct ga_buf *b, enum ga_buf_state want)
{
	struct ga_buf_info bi = {0};

	for (int i = 0; i < 2000; i++) {
		if (ga_buf_info(b, &bi) == 0 && bi.state == want)
			return want;
		usleep(5000);
	}
	return bi.state;
}

static void *arm_thread(void *arg)
{
	return (void *)(intptr_t)ga_buf_arm(arg);
}

/* Arm @b from a thread of its own: on 7.5.0/7.5.1 a thread that is not
 * the owner gets EBUSY unless the library sends it through its owner. */
static int arm_elsewhere(struct ga_buf *b)
{
	pthread_t t;
	void *ret;

	if (pthread_create(&t, NULL, arm_thread, b))
		return -EAGAIN;
	pthread_join(t, &ret);
	return (int)(intptr_t)ret;
}

/* A frame in write buffer @w: READY, the size the card was told
 * (write_max_size), and a payload that is not all zeros. */
static void check_frame(struct ga_dev *dev, struct ga_buf *w, const char *step, uint8_t *payload)
{
	struct ga_dev_info di;
	struct ga_header h;
	uint32_t max = 0;
	size_t nz = 0;

	ga_dev_info(dev, &di);
	CHECK(wait_state(w, GA_BUF_READY) == GA_BUF_READY, "%s: no frame landed", step);
	CHECK(ga_buf_header(w, &h) == 0 && h.size > 0, "%s: header size %u", step, h.size);
	CHECK(ga_reg_read(dev, GA_REG_WRITE_MAX_SIZE, 0, &max) == 0);
	CHECK(h.size == max, "%s: frame of %u bytes, write_max_size %u", step, h.size, max);
	CHECK(h.result == 0 && !h.overflow, "%s: result %u overflow %d", step, h.result,
	      h.overflow);
	if (h.size == 0 || h.size > SIZE - di.dma_data_bytes)
		return;
	CHECK(ga_buf_read(w, di.dma_data_bytes, payload, h.size) == 0);
	for (uint32_t i = 0; i < h.size; i++)
		nz += payload[i] != 0;
	CHECK(nz > h.size / 2, "%s: payload mostly zero (%zu of %u bytes set)", step, nz, h.size);
	printf("KTEST ok up_%s (frame of %u bytes, %zu non-zero)\n", step, h.size, nz);
}

static int wipe(const char *path)
{
	int fd = open(path, O_RDWR), r;

	if (fd < 0) {
		printf("wipe: %s: %s\n", path, strerror(errno));
		return 2;
	}
	r = ioctl(fd, GPU_Rem_Nvidia_Memory, 0);
	printf("wipe: GPU_Rem_Nvidia_Memory = %d (%s)\n", r, r < 0 ? strerror(errno) : "ok");
	close(fd);
	return r < 0 ? 1 : 0;
}

/* Does this driver own the card per process (7.5: "Owning Process")? */
static bool owned_driver(void)
{
	char line[256];
	bool owned = false;
	FILE *f = fopen("/proc/datadev_0", "r");

	while (f && fgets(line, sizeof(line), f))
		owned = owned || strstr(line, "Owning Process");
	if (f)
		fclose(f);
	return owned;
}

/*
 * Another program at the card while we hold buffers.  7.5: its add is
 * refused with EBUSY, and the library names us as the owner; its remove-all
 * too, and ours keep working.  7.4 (no owner): its remove-all wipes ours,
 * which must turn ERROR, be counted, refuse arming with a reason, still be
 * removable, and a new buffer must work again.
 */
static void other_program(const char *path, bool owned)
{
	struct ga_open_opts opts = GA_OPEN_OPTS_DEFAULT;
	struct ga_buf *w[2], *again = NULL;
	struct ga_buf_info bi;
	struct ga_dev *dev;
	char want[64];
	int status = -1;
	pid_t pid;

	CHECK(ga_dev_open_opts(path, &opts, &dev) == 0);
	CHECK(ga_buf_create(dev, GA_DIR_WRITE, 0, SIZE, &w[0]) == 0);
	CHECK(ga_buf_create(dev, GA_DIR_WRITE, 1, SIZE, &w[1]) == 0);
	if (failures)
		return;
	if (owned) {
		pid = fork();
		if (pid == 0) {
			struct ga_dev *d2;
			struct ga_buf *b;
			int rc = -1;

			snprintf(want, sizeof(want), "owner: process %d", (int)getppid());
			if (ga_dev_open_opts(path, &opts, &d2) == 0)
				rc = ga_buf_create(d2, GA_DIR_WRITE, 0, SIZE, &b);
			printf("other program: create = %d [%s]\n", rc, ga_last_error());
			_exit(rc == -EBUSY && strstr(ga_last_error(), want) ? 0 : 1);
		}
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "another process's add: EBUSY naming us expected");
	}
	pid = fork();
	if (pid == 0)
		_exit(wipe(path));
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status));
	CHECK(ga_buf_info(w[1], &bi) == 0);
	if (owned) {
		CHECK(WEXITSTATUS(status) == 1, "7.5 refuses another process's remove-all");
		CHECK(bi.state != GA_BUF_ERROR && ga_dev_registrations_lost(dev) == 0);
		CHECK(ga_buf_arm(w[0]) == 0);
	} else {
		CHECK(WEXITSTATUS(status) == 0, "7.4 lets another process remove all");
		CHECK(bi.state == GA_BUF_ERROR, "state %d", bi.state);
		CHECK(ga_dev_registrations_lost(dev) == 1);
		CHECK(ga_buf_arm(w[0]) == -EIO && strstr(ga_last_error(), "no longer registered"));
		CHECK(ga_buf_destroy(w[1]) == 0 && ga_buf_destroy(w[0]) == 0);
		CHECK(ga_buf_create(dev, GA_DIR_WRITE, 0, SIZE, &again) == 0);
		if (again) {
			CHECK(ga_buf_arm(again) == 0);
			CHECK(ga_dev_enable(dev, GA_DIR_WRITE, true) == 0);
			CHECK(wait_state(again, GA_BUF_READY) == GA_BUF_READY,
			      "no frame after wipe");
			CHECK(ga_dev_enable(dev, GA_DIR_WRITE, false) == 0);
		}
	}
	ga_dev_close(dev);
	printf("KTEST %s up_other_program (%s)\n", failures ? "FAIL" : "ok",
	       owned ? "7.5: refused, ours kept" : "7.4: ours wiped, detected, recovered");
}

/* The kernel log as it is now (malloc'd, NUL-terminated; "" if unreadable). */
static char *klog(void)
{
	int n = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf = malloc(n > 0 ? (size_t)n + 1 : 1);

	if (!buf)
		return NULL;
	n = n > 0 ? klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, n) : 0;
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/*
 * Kernel-log lines added since @before, or -1 when @before is not where
 * @now starts (the log wrapped: nothing can be counted).
 */
static int klog_new_lines(const char *before, const char *now, bool *unknown)
{
	const char *p = now + strlen(before);
	int n = 0;

	if (strncmp(before, now, strlen(before)) != 0)
		return -1;

	*unknown = *unknown || strstr(p, "Invalid command") != NULL;
	for (; *p; p++)
		n += *p == '\n';
	return n;
}

/*
 * 7.4 and 7.5 have no dma-buf commands, and log every code they do not
 * know: the library must find that out without asking, report dma_buf no
 * and gpudirect yes, and refuse pin=dmabuf saying which commands are
 * missing.  An open logs what upstream logs for it anyway (its mmap of the
 * registers); the refused open may log nothing more than that.
 */
static void dmabuf_refused(const char *path)
{
	struct ga_open_opts opts = GA_OPEN_OPTS_DEFAULT;
	struct ga_dev *dev = NULL;
	char *before = klog(), *mid, *after;
	bool unknown = false;
	int rc, plain, refused, f0 = failures;

	rc = ga_dev_open_opts(path, &opts, &dev);
	CHECK(rc == 0);
	if (rc == 0) {
		CHECK(!ga_dev_has(dev, GA_CAP_DMABUF) && !ga_dev_has(dev, GA_CAP_DMABUF_WHOLE));
		CHECK(ga_dev_has(dev, GA_CAP_GPUDIRECT));
		ga_dev_close(dev);
	}
	mid = klog();
	opts.pin = GA_PIN_DMABUF;
	rc = ga_dev_open_opts(path, &opts, &dev);
	CHECK(rc == -ENOTSUP && strstr(ga_last_error(), "pin=dmabuf") &&
		      strstr(ga_last_error(), "GA_Add_Dmabuf") &&
		      strstr(ga_last_error(), "GPU_DmaBuf_Add_Wr/Rd_Buffer"),
	      "pin=dmabuf: %d", rc);
	if (rc == 0)
		ga_dev_close(dev);
	after = klog();
	CHECK(before && mid && after);
	if (before && mid && after) {
		plain = klog_new_lines(before, mid, &unknown);
		refused = klog_new_lines(mid, after, &unknown);
		CHECK(plain >= 0 && refused >= 0, "the kernel log wrapped during the test");
		CHECK(!unknown && refused <= plain,
		      "the refused open logged %d lines, a plain open %d: %s", refused, plain,
		      refused >= 0 ? after + strlen(mid) : "");
	}
	free(before);
	free(mid);
	free(after);
	printf("KTEST %s up_dmabuf_refused_quietly\n", failures == f0 ? "ok" : "FAIL");
}

/* Destinations @lanes (-1 ends) of a DMA_Set_MaskBytes bitmap. */
static int set_mask(int fd, const int *lanes)
{
	uint8_t m[DMA_MASK_SIZE] = {0};

	for (; *lanes >= 0; lanes++)
		m[*lanes / 8] |= (uint8_t)(1u << (*lanes % 8));
	return ioctl(fd, DMA_Set_MaskBytes, m);
}

/* The thread that owns the GPU state on 7.5, if it is ours. */
static bool owner_is_us(void)
{
	char line[256], path[64];
	long tid = 0, tgid = 0;
	FILE *f = fopen("/proc/datadev_0", "r");

	while (f && fgets(line, sizeof(line), f))
		sscanf(line, " Owning Process : %ld", &tid);
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%ld/status", tid);
	f = tid > 0 ? fopen(path, "r") : NULL;
	while (f && fgets(line, sizeof(line), f))
		sscanf(line, "Tgid: %ld", &tgid);
	if (f)
		fclose(f);
	return tgid == getpid();
}

/* t_up owner: see the head of this file.  Exit status = failures. */
static int gpu_owner(const char *path)
{
	const int lanes[] = {4, 5, 6, 7, -1};
	struct ga_open_opts opts = GA_OPEN_OPTS_DEFAULT;
	struct ga_dev *dev = NULL;
	struct ga_buf *w = NULL;
	uint32_t f0 = 0, f1 = 0;
	char line[16];
	int mfd = open(path, O_RDWR);

	CHECK(mfd >= 0 && set_mask(mfd, lanes) == 0, "lanes 4-7: %s", strerror(errno));
	CHECK(ga_dev_open_opts(path, &opts, &dev) == 0);
	if (dev)
		CHECK(ga_buf_create(dev, GA_DIR_WRITE, 0, SIZE, &w) == 0);
	if (!w)
		return 1;
	CHECK(ga_buf_arm(w) == 0 && ga_dev_enable(dev, GA_DIR_WRITE, true) == 0);
	CHECK(wait_state(w, GA_BUF_READY) == GA_BUF_READY, "no first frame");
	CHECK(!owned_driver() || owner_is_us(), "not the owner after the add");
	printf("owner ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		CHECK(0, "no go line");
	/* Still ours: buffer, owner, lanes (another file cannot take lane 5). */
	CHECK(ga_dev_registrations_lost(dev) == 0);
	CHECK(!owned_driver() || owner_is_us(), "the GPU state changed hands");
	CHECK(ga_reg_read(dev, GA_REG_RX_FRAME_COUNT, 0, &f0) == 0);
	CHECK(ga_buf_arm(w) == 0, "re-arm");
	CHECK(wait_state(w, GA_BUF_READY) == GA_BUF_READY, "no frame after the others");
	CHECK(ga_reg_read(dev, GA_REG_RX_FRAME_COUNT, 0, &f1) == 0 && f1 > f0,
	      "rx_frame_count %u -> %u", f0, f1);
	CHECK(ga_dev_enable(dev, GA_DIR_WRITE, false) == 0);
	CHECK(ga_buf_destroy_all(dev) == 0);
	ga_dev_close(dev);
	close(mfd);
	printf("KTEST %s up_lanes_gpu_owner (%d failures)\n", failures ? "FAIL" : "ok", failures);
	return failures;
}

/* The GpuAsyncCore version through the register ioctl (the field is at
 * the same place in every layout). */
static uint32_t read_version(int fd)
{
	struct DmaRegisterData r = {0};
	uint32_t off = 0;

	if (ga_reg_offset(GA_REG_VERSION, ga_layout_for_version(4, false), 4, 0, 1, &off))
		return 0;
	r.address = GA_CORE_OFFSET + off;
	if (ioctl(fd, DMA_Read_Register, &r))
		return 0;
	return ga_reg_field_get(GA_REG_VERSION, ga_layout_for_version(4, false), r.data);
}

/* t_up lanes: see the head of this file.  Exit status = failures. */
static int cpu_lanes(const char *path)
{
	const int mine[] = {0, 1, 2, 3, -1}, taken[] = {5, -1};
	int fd = open(path, O_RDWR), fd2 = open(path, O_RDWR);
	uint32_t v;
	char line[16];

	CHECK(fd >= 0 && fd2 >= 0);
	if (fd < 0 || fd2 < 0)
		return 1;
	CHECK(ioctl(fd, DMA_Get_Version, 0) == DMA_VERSION);
	v = read_version(fd);
	CHECK(v == 4 || v == 5, "version register %u", v);
	CHECK(set_mask(fd, mine) == 0, "lanes 0-3: %s", strerror(errno));
	CHECK(set_mask(fd2, taken) == -1 && errno == EPERM, "lane 5 (the GPU owner's) not refused");
	close(fd2);
	printf("lanes ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		CHECK(0, "no go line");
	CHECK(read_version(fd) == v, "version register later");
	CHECK(ioctl(fd, DMA_Get_RxBuffinHW_Count, 0) >= 0);
	close(fd);
	printf("KTEST %s up_lanes_cpu_client (%d failures)\n", failures ? "FAIL" : "ok", failures);
	return failures;
}

int main(int argc, char **argv)
{
	struct ga_open_opts opts = GA_OPEN_OPTS_DEFAULT;
	struct ga_buf *w0, *w1, *r0;
	struct ga_dev_info di;
	struct ga_dev *dev;
	struct ga_header h;
	uint8_t *payload = calloc(1, SIZE);
	uint32_t tx0 = 0, tx1 = 0, done = 0;
	int rc;

	if (argc > 2 && strcmp(argv[1], "wipe") == 0)
		return wipe(argv[2]);
	if (argc > 2 && strcmp(argv[1], "owner") == 0)
		return gpu_owner(argv[2]);
	if (argc > 2 && strcmp(argv[1], "lanes") == 0)
		return cpu_lanes(argv[2]);
	if (argc != 2 || !payload)
		return 2;
	/* Upstream programs buffer addresses at 0x28000: a core elsewhere is
	 * refused, saying why (such an image needs gpuasync.ko). */
	{
		struct ga_open_opts drp = opts;

		drp.core_offset = 0xd00000;
		rc = ga_dev_open_opts(argv[1], &drp, &dev);
		CHECK(rc == -EINVAL && strstr(ga_last_error(), "programs GpuAsyncCore at 0x28000") &&
			      strstr(ga_last_error(), "core_offset=0xd00000"),
		      "core_offset 0xd00000 on upstream: rc %d (%s)", rc, ga_last_error());
		if (rc == 0)
			ga_dev_close(dev);
		drp.core_offset = 0x28000; /* the same place, said explicitly: fine */
		rc = ga_dev_open_opts(argv[1], &drp, &dev);
		CHECK(rc == 0, "core_offset 0x28000 on upstream: %s", ga_last_error());
		if (rc == 0)
			ga_dev_close(dev);
		ok("core_offset");
	}
	rc = ga_dev_open_opts(argv[1], &opts, &dev);
	CHECK(rc == 0, "open %s", argv[1]);
	if (rc)
		return 1;
	ga_dev_info(dev, &di);
	printf("KTEST info up: version %u, %u buffers, DmaDataBytes %u, memory %s (%s)\n",
	       di.version, di.max_buffers, di.dma_data_bytes, di.memory, di.memory_note);
	CHECK(strcmp(di.memory, "stub") == 0, "memory %s", di.memory);
	CHECK(di.version == 4 || di.version == 5, "version %u", di.version);
	ok("open");
	dmabuf_refused(argv[1]);

	CHECK(ga_buf_create(dev, GA_DIR_WRITE, 0, SIZE, &w0) == 0);
	CHECK(ga_buf_create(dev, GA_DIR_WRITE, 1, SIZE, &w1) == 0);
	CHECK(ga_buf_create(dev, GA_DIR_READ, 0, SIZE, &r0) == 0);
	if (failures)
		goto out;
	ok("create");

	/* Frames from the emulator into our memory, round robin. */
	CHECK(ga_buf_arm(w0) == 0);
	CHECK(arm_elsewhere(w1) == 0, "arm from a second thread");
	CHECK(ga_dev_enable(dev, GA_DIR_WRITE, true) == 0);
	check_frame(dev, w0, "frame_w0", payload);
	check_frame(dev, w1, "frame_w1", payload);

	/* Loopback: w0's payload back to the card (the emulator checks it). */
	CHECK(ga_buf_header(w0, &h) == 0);
	CHECK(ga_buf_read(w0, di.dma_data_bytes, payload, h.size) == 0);
	CHECK(ga_buf_write(r0, di.dma_data_bytes, payload, h.size) == 0);
	CHECK(ga_reg_read(dev, GA_REG_TX_FRAME_COUNT, 0, &tx0) == 0);
	CHECK(ga_dev_enable(dev, GA_DIR_READ, true) == 0);
	CHECK(ga_buf_send(r0, h.size) == 0);
	CHECK(wait_state(r0, GA_BUF_READY) == GA_BUF_READY, "send did not complete");
	/* Upstream's emulator bumps the counter after it writes the completion
	 * word (its tools poll for it too): wait for it, bounded. */
	for (int i = 0; i < 2000; i++) {
		if (ga_reg_read(dev, GA_REG_TX_FRAME_COUNT, 0, &tx1) || tx1 != tx0)
			break;
		usleep(1000);
	}
	CHECK(ga_reg_read(dev, GA_REG_TX_FRAME_COUNT, 0, &tx1) == 0 && tx1 == tx0 + 1,
	      "tx_frame_count %u -> %u", tx0, tx1);
	ok("send");

	/* Remove the last write buffer; w0 and r0 keep working. */
	CHECK(ga_dev_enable(dev, GA_DIR_WRITE, false) == 0);
	CHECK(ga_dev_enable(dev, GA_DIR_READ, false) == 0);
	CHECK(ga_buf_destroy(w1) == 0, "remove write buffer 1");
	CHECK(ga_buf_count(dev, GA_DIR_WRITE) == 1 && ga_buf_count(dev, GA_DIR_READ) == 1);
	CHECK(arm_elsewhere(w0) == 0);
	CHECK(ga_dev_enable(dev, GA_DIR_WRITE, true) == 0);
	check_frame(dev, w0, "frame_after_remove", payload);
	CHECK(ga_dev_enable(dev, GA_DIR_WRITE, false) == 0);

	/* Everything goes. */
	CHECK(ga_buf_destroy_all(dev) == 0);
	CHECK(ga_buf_count(dev, GA_DIR_WRITE) == 0 && ga_buf_count(dev, GA_DIR_READ) == 0);
	CHECK(ga_reg_read(dev, GA_REG_WRITE_COUNT, 0, &done) == 0);
	ok("destroy_all");
	ga_dev_close(dev);
	other_program(argv[1], owned_driver());
	free(payload);
	printf("KTEST %s up_lib (%d failures)\n", failures ? "FAIL" : "ok", failures);
	return failures;
out:
	ga_dev_close(dev);
	free(payload);
	printf("KTEST %s up_lib (%d failures)\n", failures ? "FAIL" : "ok", failures);
	return failures;
}
