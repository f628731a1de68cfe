/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The CUDA memory layer (lib/src/memory/mem_cuda*.c).
 *
 * Without a GPU (no libcuda.so.1, no device, or a build without cuda.h)
 * ga_mem_cuda_open must fail with a negative errno and a reason, and the
 * GPU cases print "SKIP: <reason>" and the program exits 77 (skipped).  With a GPU they allocate,
 * write, read back, use the asynchronous and pinned paths from several
 * threads, open the IPC handle in a second process (this program re-run
 * with --ipc-child), free, and check with cuMemGetInfo that nothing
 * leaked.  Runs without forking: CUDA state must not cross a fork.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/gpu_probe.h"
#include "common/suite_tests.h"
#include "internal.h"

extern char **environ;

static const struct ga_mem_ops *ops;
static void *mctx;
static char gpu_name[128], why[256];
static int open_rc;

/* A few driver calls the test makes itself, looked up the same way (the
 * test is built without cuda.h). */
typedef int (*cu_meminfo_fn)(size_t *, size_t *);
struct ipc_handle {
	char reserved[64]; /* CUipcMemHandle */
};

static cu_meminfo_fn cu_meminfo(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);

	return lib ? (cu_meminfo_fn)dlsym(lib, "cuMemGetInfo_v2") : NULL;
}

static bool have_gpu(void)
{
	if (open_rc) {
		printf("SKIP: %s\n", why);
		return false;
	}
	return true;
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

START_TEST(test_open_reports)
{
	if (open_rc) {
		ck_assert_int_lt(open_rc, 0);
		ck_assert_msg(why[0] != '\0', "failure without a reason");
		printf("SKIP: no GPU memory: %s (rc %d)\n", why, open_rc);
		return;
	}
	ck_assert_ptr_nonnull(ops);
	ck_assert_str_eq(ops->name, "cuda");
	ck_assert_msg(gpu_name[0] != '\0', "GPU has no name");
	printf("GPU: %s\n", gpu_name);
}
END_TEST

START_TEST(test_bad_index)
{
	const struct ga_mem_ops *o = NULL;
	void *c = NULL;
	char n[64], w[256] = "";
	int rc = ga_mem_cuda_open(999, &o, &c, n, sizeof(n), w, sizeof(w));

	ck_assert_int_lt(rc, 0);
	ck_assert_msg(w[0] != '\0', "failure without a reason");
	ck_assert_ptr_null(c);
	rc = ga_mem_cuda_open(-1, &o, &c, n, sizeof(n), w, sizeof(w));
	ck_assert_int_lt(rc, 0);
}
END_TEST

/* One allocate/use/free round; true when free memory came back exactly. */
static bool alloc_rw_round(cu_meminfo_fn meminfo, size_t *before, size_t *after)
{
	static const size_t sizes[] = {64 << 10, 1 << 20, (12 << 20) + (64 << 10)};
	struct ga_mem_block b[3];
	size_t total = 0;
	uint8_t *src, *dst;

	ck_assert_int_eq(meminfo(before, &total), 0);
	ck_assert_int_eq(ops->alloc(mctx, 1000, &b[0]), -EINVAL);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(ops->alloc(mctx, sizes[i], &b[i]), 0);
		ck_assert_uint_ne(b[i].dptr, 0);
		ck_assert_uint_eq(b[i].size, sizes[i]);
	}
	src = malloc(sizes[2]);
	dst = malloc(sizes[2]);
	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(dst);

	for (int i = 0; i < 3; i++) {
		/* zeroed on allocation */
		memset(dst, 0xAA, sizes[i]);
		ck_assert_int_eq(ops->read(mctx, &b[i], 0, dst, sizes[i]), 0);
		{
			/* One assertion, not one per byte: check's are slow. */
			size_t k = 0;

			while (k < sizes[i] && dst[k] == 0)
				k++;
			ck_assert_msg(k == sizes[i], "buffer %d byte %zu not zeroed", i, k);
		}
		/* whole buffer, then a piece at an odd offset */
		fill(src, sizes[i], i);
		ck_assert_int_eq(ops->write(mctx, &b[i], 0, src, sizes[i]), 0);
		ck_assert_int_eq(ops->read(mctx, &b[i], 0, dst, sizes[i]), 0);
		ck_assert_msg(memcmp(src, dst, sizes[i]) == 0, "buffer %d read back differs", i);
		fill(src, 333, 77);
		ck_assert_int_eq(ops->write(mctx, &b[i], 4097, src, 333), 0);
		ck_assert_int_eq(ops->read(mctx, &b[i], 4097, dst, 333), 0);
		ck_assert_int_eq(memcmp(src, dst, 333), 0);
	}
	/* out of range */
	ck_assert_int_eq(ops->read(mctx, &b[0], sizes[0] - 4, dst, 8), -ERANGE);
	ck_assert_int_eq(ops->write(mctx, &b[0], sizes[0] + 1, src, 1), -ERANGE);

	for (int i = 0; i < 3; i++) {
		ops->free(mctx, &b[i]);
		ck_assert_uint_eq(b[i].dptr, 0);
	}
	/* Frees happen on the free thread; sync waits for them. */
	ck_assert_int_eq(ops->sync(mctx), 0);
	ck_assert_int_eq(meminfo(after, &total), 0);
	free(src);
	free(dst);
	return *after == *before;
}

/*
 * cuMemGetInfo counts the whole GPU, so other processes (tests running in
 * parallel) move it too.  A leak shows in every round; noise does not, so
 * one exact round out of a few proves nothing leaked.
 */
START_TEST(test_alloc_rw_leak)
{
	size_t before = 0, after = 0;
	cu_meminfo_fn meminfo;
	bool exact = false;

	if (!have_gpu())
		return;
	meminfo = cu_meminfo();
	ck_assert_ptr_nonnull(meminfo);
	for (int round = 0; round < 8 && !exact; round++) {
		exact = alloc_rw_round(meminfo, &before, &after);
		printf("cuMemGetInfo free: before %zu after %zu\n", before, after);
	}
	ck_assert_msg(exact, "GPU memory leaked: %zd bytes", (ssize_t)before - (ssize_t)after);
}
END_TEST

/* Frames as the simulated card writes them: payload, then the 8-byte
 * header, queued without waiting, from a pageable and a pinned source. */
START_TEST(test_async_order)
{
	struct ga_mem_block b;
	uint8_t *pinned = NULL, page[4096], hdr[8], got[4096];

	if (!have_gpu())
		return;
	ck_assert_ptr_nonnull(ops->write_async);
	ck_assert_int_eq(ops->alloc(mctx, 1 << 20, &b), 0);
	ck_assert_int_eq(ops->host_alloc(mctx, 1 << 20, (void **)&pinned), 0);
	fill(pinned, 1 << 20, 5);
	for (uint32_t f = 0; f < 5000; f++) {
		size_t off = (f % 200) * 4096;

		fill(page, sizeof(page), f);
		ck_assert_int_eq(ops->write_async(mctx, &b, off + 32, page, 4000), 0);
		memcpy(hdr, &f, 4);
		memcpy(hdr + 4, &(uint32_t){4000}, 4);
		ck_assert_int_eq(ops->write_async(mctx, &b, off, hdr, 8), 0);
		if (f % 1000 == 999) {
			ck_assert_int_eq(ops->read(mctx, &b, off + 32, got, 4000), 0);
			ck_assert_int_eq(memcmp(got, page, 4000), 0);
		}
	}
	ck_assert_int_eq(ops->sync(mctx), 0);
	/* last lap: every slot holds the last frame written there */
	for (uint32_t f = 4800; f < 5000; f++) {
		size_t off = (f % 200) * 4096;
		uint32_t seq;

		fill(page, sizeof(page), f);
		ck_assert_int_eq(ops->read(mctx, &b, off, got, 4032), 0);
		memcpy(&seq, got, 4);
		ck_assert_uint_eq(seq, f);
		ck_assert_msg(memcmp(got + 32, page, 4000) == 0, "frame %u payload", f);
	}
	/* pinned source, no staging */
	ck_assert_int_eq(ops->write_async(mctx, &b, 0, pinned, 1 << 20), 0);
	ck_assert_int_eq(ops->sync(mctx), 0);
	{
		uint8_t *all = malloc(1 << 20);

		ck_assert_int_eq(ops->read(mctx, &b, 0, all, 1 << 20), 0);
		ck_assert_int_eq(memcmp(all, pinned, 1 << 20), 0);
		free(all);
	}
	ops->host_free(mctx, pinned);
	ops->free(mctx, &b);
}
END_TEST

struct worker {
	int id;
	int rc;
};

/* Each thread starts with no CUDA context: the layer must make one current. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ga_mem_block b;
	uint8_t in[65536], out[65536];

	w->rc = ops->alloc(mctx, 256 << 10, &b);
	if (w->rc)
		return NULL;
	for (int i = 0; i < 200 && !w->rc; i++) {
		fill(in, sizeof(in), w->id * 1000 + i);
		w->rc = ops->write_async(mctx, &b, (i % 3) * 65536, in, sizeof(in));
		if (!w->rc)
			w->rc = ops->read(mctx, &b, (i % 3) * 65536, out, sizeof(out));
		if (!w->rc && memcmp(in, out, sizeof(in)))
			w->rc = -EIO;
	}
	ops->free(mctx, &b);
	return NULL;
}

START_TEST(test_threads)
{
	pthread_t t[4];
	struct worker w[4];

	if (!have_gpu())
		return;
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){.id = i};
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_msg(w[i].rc == 0, "thread %d: rc %d (%s)", i, w[i].rc, ga_last_error());
	}
}
END_TEST

/* The handle opens in another process and shows the same bytes. */
START_TEST(test_ipc)
{
	struct ga_mem_block b;
	char hex[160], self[4096], arg_size[32];
	uint8_t data[65536];
	pid_t pid;
	int status;
	ssize_t n;

	if (!have_gpu())
		return;
	ck_assert_int_eq(ops->alloc(mctx, sizeof(data), &b), 0);
	ck_assert_int_eq(ops->ipc_handle(mctx, &b, hex, 10), -ENOSPC);
	ck_assert_int_eq(ops->ipc_handle(mctx, &b, hex, sizeof(hex)), 0);
	ck_assert_uint_eq(strlen(hex), 128);
	memset(data, 0x5C, sizeof(data));
	data[0] = 0x11;
	data[sizeof(data) - 1] = 0x22;
	ck_assert_int_eq(ops->write(mctx, &b, 0, data, sizeof(data)), 0);

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	snprintf(arg_size, sizeof(arg_size), "%zu", sizeof(data));
	char *argv[] = {self, "--ipc-child", hex, arg_size, NULL};
	ck_assert_int_eq(posix_spawn(&pid, self, NULL, NULL, argv, environ), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "IPC child failed (status 0x%x)", status);
	ops->free(mctx, &b);
}
END_TEST

/* Child: open the handle with cuIpcOpenMemHandle and check the bytes. */
static int ipc_child(const char *hex, size_t size)
{
	typedef int (*init_t)(unsigned int);
	typedef int (*devget_t)(int *, int);
	typedef int (*retain_t)(void **, int);
	typedef int (*setcur_t)(void *);
	typedef int (*open_t)(unsigned long long *, struct ipc_handle, unsigned int);
	typedef int (*close_t)(unsigned long long);
	typedef int (*dtoh_t)(void *, unsigned long long, size_t);
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	struct ipc_handle h;
	unsigned long long d = 0;
	void *ctx = NULL;
	int dev = 0, r;
	uint8_t *buf = malloc(size);

	if (!lib || !buf || strlen(hex) != 2 * sizeof(h.reserved))
		return 2;
	for (size_t i = 0; i < sizeof(h.reserved); i++) {
		unsigned int v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return 2;
		h.reserved[i] = (char)v;
	}
	r = ((init_t)dlsym(lib, "cuInit"))(0);
	r = r ? r : ((devget_t)dlsym(lib, "cuDeviceGet"))(&dev, 0);
	r = r ? r : ((retain_t)dlsym(lib, "cuDevicePrimaryCtxRetain"))(&ctx, dev);
	r = r ? r : ((setcur_t)dlsym(lib, "cuCtxSetCurrent"))(ctx);
	r = r ? r : ((open_t)dlsym(lib, "cuIpcOpenMemHandle_v2"))(&d, h, 1);
	if (r) {
		fprintf(stderr, "ipc child: CUDA error %d\n", r);
		return 3;
	}
	r = ((dtoh_t)dlsym(lib, "cuMemcpyDtoH_v2"))(buf, d, size);
	((close_t)dlsym(lib, "cuIpcCloseMemHandle"))(d);
	if (r || buf[0] != 0x11 || buf[size - 1] != 0x22 || buf[size / 2] != 0x5C) {
		fprintf(stderr, "ipc child: bytes differ (rc %d)\n", r);
		return 4;
	}
	printf("ipc child: opened handle, %zu bytes match\n", size);
	return 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/*
 * read_many on @o/@c: 8 bytes at +16 of 1024 blocks, each written just
 * before with write_async (no wait: the batch must come after the queued
 * writes), equal to what read gives block by block; ranges checked;
 * n == 0 reads nothing.  Prints both times (the GPU machine's figures).
 */
static void read_many_case(const struct ga_mem_ops *o, void *c, const char *label)
{
	enum { N = 1024 };
	static struct ga_mem_block b[N];
	static const struct ga_mem_block *bp[N];
	static uint8_t got[N * 8], want[N * 8];
	uint8_t one[8];
	double t0, t1, t2;

	ck_assert_ptr_nonnull(o->read_many);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(o->alloc(c, 64 << 10, &b[i]), 0);
		bp[i] = &b[i];
	}
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++) {
			fill(want + i * 8, 8, (uint32_t)(i * 7 + round * 100003));
			ck_assert_int_eq(o->write_async(c, &b[i], 16, want + i * 8, 8), 0);
		}
		memset(got, 0, sizeof(got));
		t0 = now_us();
		ck_assert_int_eq(o->read_many(c, bp, N, 16, got, 8), 0);
		t1 = now_us();
		for (int i = 0; i < N; i++)
			ck_assert_msg(memcmp(got + i * 8, want + i * 8, 8) == 0,
				      "%s round %d: block %d differs", label, round, i);
		for (int i = 0; i < N; i++) {
			ck_assert_int_eq(o->read(c, &b[i], 16, one, 8), 0);
			ck_assert_int_eq(memcmp(one, got + i * 8, 8), 0);
		}
		t2 = now_us();
		printf("%s: %d headers: read_many %.0f us, one read each %.0f us\n", label, N,
		       t1 - t0, t2 - t1);
	}
	/* A window outside one block refuses the whole batch. */
	ck_assert_int_eq(o->read_many(c, bp, N, (64 << 10) - 4, got, 8), -ERANGE);
	ck_assert_int_eq(o->read_many(c, bp, 0, 0, got, 8), 0);
	for (int i = 0; i < N; i++)
		o->free(c, &b[i]);
}

/* A second context opened with @var=@val (and @var2=1) in the environment:
 * the paths those force. */
static void open_with(const char *var, const char *val, const char *var2,
		      const struct ga_mem_ops **o, void **c)
{
	char n[128], w[256] = "";

	setenv(var, val, 1);
	if (var2)
		setenv(var2, "1", 1);
	ck_assert_int_eq(ga_mem_cuda_open(0, o, c, n, sizeof(n), w, sizeof(w)), 0);
	unsetenv(var);
	if (var2)
		unsetenv(var2);
}

START_TEST(test_read_many)
{
	const struct ga_mem_ops *o2 = NULL;
	void *c2 = NULL;
	long long k0;

	if (!have_gpu())
		return;
	k0 = ga_mem_cuda_kernel_copies(mctx);
	read_many_case(ops, mctx, k0 >= 0 ? "gather kernel" : "batch");
	/* With the kernel loaded, every header came through it. */
	if (k0 >= 0)
		ck_assert_int_eq(ga_mem_cuda_kernel_copies(mctx) - k0, 3 * 1024);
	else
		printf("gather kernel not loaded (library built without nvcc)\n");
	/* The copy-engine paths, forced: one batch, then single copies. */
	open_with("GPUASYNC_CUDA_NO_FILL", "1", NULL, &o2, &c2);
	ck_assert_int_eq(ga_mem_cuda_kernel_copies(c2), -1);
	read_many_case(o2, c2, "batch");
	o2->close(c2);
	open_with("GPUASYNC_CUDA_NO_FILL", "1", "GPUASYNC_CUDA_NO_BATCH", &o2, &c2);
	read_many_case(o2, c2, "single copies");
	o2->close(c2);
}
END_TEST

/*
 * Deferred writes (the simulated card's bursts) of every size and
 * alignment, from pinned memory and from memory that must be staged, land
 * exactly, with the bytes around them untouched.  With @limit (the
 * context's GPUASYNC_CUDA_KCOPY_MAX) those up to it went through the kernel
 * and the others through the copy engine; with @limit -1 (the default
 * limit) at least the smallest went through the kernel.
 */
static void defer_case(const struct ga_mem_ops *o, void *c, long limit)
{
	static const size_t sizes[] = {1, 3, 12, 100, 4096, 4099, 16384, 65536, 65537, 200000};
	static const size_t offs[] = {0, 1, 4, 16, 4099};
	enum { BLK = 256 << 10, NB = 4 };
	struct ga_mem_block b[NB];
	uint8_t *pin = NULL, *heap = malloc(BLK), *want = malloc(BLK), *got = malloc(BLK);
	long long k0 = ga_mem_cuda_kernel_copies(c);
	unsigned int small = 0, k = 0;

	ck_assert(heap && want && got);
	ck_assert_int_eq(o->host_alloc(c, BLK, (void **)&pin), 0);
	fill(pin, BLK, 7);
	fill(heap, BLK, 99);
	for (int i = 0; i < NB; i++)
		ck_assert_int_eq(o->alloc(c, BLK, &b[i]), 0);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
		for (size_t oi = 0; oi < sizeof(offs) / sizeof(offs[0]); oi++)
			for (int from_pin = 0; from_pin < 2; from_pin++, k++) {
				struct ga_mem_block *d = &b[k % NB];
				size_t len = sizes[si], off = offs[oi], soff = offs[(oi + 1) % 5];
				const uint8_t *src = (from_pin ? pin : heap) + soff;

				ck_assert_int_eq(o->read(c, d, 0, want, BLK), 0);
				memcpy(want + off, src, len);
				ck_assert_int_eq(o->write_defer(c, d, off, src, len), 0);
				/* Deferred: may be queued with the next ones. */
				if (k % 3 == 2)
					ck_assert_int_eq(o->write_flush(c), 0);
				ck_assert_int_eq(o->write_flush(c), 0);
				ck_assert_int_eq(o->read(c, d, 0, got, BLK), 0);
				ck_assert_msg(memcmp(got, want, BLK) == 0,
					      "len %zu at +%zu from %s +%zu: bytes differ", len,
					      off, from_pin ? "pinned" : "heap", soff);
				if (limit >= 0 && len <= (size_t)limit)
					small++;
			}
	/* Out of range: refused, nothing queued. */
	ck_assert_int_eq(o->write_defer(c, &b[0], BLK - 2, heap, 4), -ERANGE);
	if (limit >= 0)
		ck_assert_int_eq(ga_mem_cuda_kernel_copies(c) - k0, small);
	else
		ck_assert_int_ge(ga_mem_cuda_kernel_copies(c) - k0, 2 * 5); /* 1-byte copies */
	for (int i = 0; i < NB; i++)
		o->free(c, &b[i]);
	o->host_free(c, pin);
	free(heap);
	free(want);
	free(got);
}

START_TEST(test_defer_copies)
{
	const struct ga_mem_ops *o2 = NULL;
	void *c2 = NULL;

	if (!have_gpu())
		return;
	if (ga_mem_cuda_kernel_copies(mctx) < 0) {
		/* No kernel (built without nvcc): every copy on the copy engine. */
		printf("kernel not loaded (library built without nvcc)\n");
		open_with("GPUASYNC_CUDA_NO_FILL", "1", NULL, &o2, &c2);
		defer_case(o2, c2, 0);
		o2->close(c2);
		return;
	}
	defer_case(ops, mctx, -1);
	open_with("GPUASYNC_CUDA_KCOPY_MAX", "16384", NULL, &o2, &c2);
	defer_case(o2, c2, 16384);
	o2->close(c2);
	open_with("GPUASYNC_CUDA_KCOPY_MAX", "0", NULL, &o2, &c2);
	defer_case(o2, c2, 0);
	o2->close(c2);
}
END_TEST

/*
 * An allocation that finds the GPU full waits for the frees still on the
 * free thread.  The GPU is filled with 1 GiB blocks; the stream is kept
 * busy (1 GiB of copies queued) so that the free of one block waits behind
 * it; an allocation of the same size right after must still succeed.
 */
START_TEST(test_alloc_waits_for_frees)
{
	enum { MAXB = 1024 };
	static struct ga_mem_block b[MAXB];
	const size_t gib = (size_t)1 << 30, piece = 256u << 20;
	unsigned int n = 0;
	void *pin = NULL;

	if (!have_gpu())
		return;
	ck_assert_int_eq(ops->host_alloc(mctx, piece, &pin), 0);
	while (n < MAXB && ops->alloc(mctx, gib, &b[n]) == 0)
		n++;
	ck_assert_msg(n > 1 && n < MAXB, "%u blocks of 1 GiB", n);
	for (size_t off = 0; off < gib; off += piece)
		ck_assert_int_eq(ops->write_async(mctx, &b[0], off, pin, piece), 0);
	ops->free(mctx, &b[n - 1]);
	ck_assert_int_eq(ops->alloc(mctx, gib, &b[n - 1]), 0);
	printf("GPU full at %u GiB blocks; one freed and made again at once\n", n);
	for (unsigned int i = 0; i < n; i++)
		ops->free(mctx, &b[i]);
	ops->host_free(mctx, pin);
	ck_assert_int_eq(ops->sync(mctx), 0);
}
END_TEST

/*
 * Blocks copied into from another block where the memory is (write_from,
 * a replay's held copy): the bytes at any offset and length, seen by the
 * next read; a source range outside its block refused.  Every block at a
 * 64 KiB aligned address (GPUDirect RDMA pins 64 KiB pages), also after
 * the kernel's own small allocation.
 */
static void from_case(const struct ga_mem_ops *o, void *c)
{
	enum { SZ = 256 * 1024, NB = 8 };
	static const size_t len[NB] = {1, 3, 16, 100, 4096, 4099, 65536, SZ / 2};
	struct ga_mem_block src = {0}, b[NB];
	uint8_t *want = malloc(SZ), *got = malloc(SZ);

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	fill(want, SZ, 77);
	ck_assert_int_eq(o->alloc(c, SZ, &src), 0);
	ck_assert_int_eq(o->write(c, &src, 0, want, SZ), 0);
	for (int i = 0; i < NB; i++) {
		size_t off = (size_t)i * 4097 % 8192, soff = (size_t)i * 1237;

		memset(&b[i], 0, sizeof(b[i]));
		ck_assert_int_eq(o->alloc(c, SZ, &b[i]), 0);
		ck_assert_msg(b[i].dptr % GA_GPU_PAGE_SIZE == 0, "block at 0x%llx",
			      (unsigned long long)b[i].dptr);
		ck_assert_int_eq(o->write_from(c, &b[i], off, &src, soff, len[i]), 0);
		ck_assert_int_eq(o->read(c, &b[i], off, got, len[i]), 0);
		ck_assert_msg(!memcmp(got, want + soff, len[i]), "%zu bytes from %zu to %zu",
			      len[i], soff, off);
	}
	ck_assert_int_eq(o->write_from(c, &b[0], 0, &src, SZ - 8, 16), -ERANGE);
	for (int i = 0; i < NB; i++)
		o->free(c, &b[i]);
	o->free(c, &src);
	free(want);
	free(got);
}

START_TEST(test_write_from)
{
	const struct ga_mem_ops *o2 = NULL;
	void *c2 = NULL;

	if (!have_gpu())
		return;
	from_case(ops, mctx); /* a kernel job where the library has the kernel */
	open_with("GPUASYNC_CUDA_NO_FILL", "1", NULL, &o2, &c2);
	from_case(o2, c2); /* a device-to-device copy */
	o2->close(c2);
}
END_TEST

/*
 * The resident delivery kernel (GPUASYNC_CUDA_RESIDENT): every write of
 * defer_case lands exactly through its mailbox (those over 64 KiB on the
 * stream, ordered with it) and the frees between the cases, which park the
 * kernel, go on; a pattern and the descriptor after it (the card's frame)
 * land with the pattern exactly as the CPU makes it; then the same with
 * the payloads staged in host memory (GPUASYNC_CUDA_NO_FILL).  Fails with
 * no batch done: the mailbox was not used.  The kernel's report of its
 * work counts every batch it did, each in a plausible time.
 */
static void pattern_frames(const struct ga_mem_ops *o, void *c)
{
	enum { BLK = 64 << 10, LEN = 4096, N = 200 };
	static uint8_t want[LEN], got[LEN + 16];
	struct ga_mem_block b;
	long long b0 = ga_mem_cuda_resident_batches(c);

	ck_assert_int_eq(o->alloc(c, BLK, &b), 0);
	for (uint32_t seq = 0; seq < N; seq++) {
		/* PRBS and counter; payloads 16- and 8-byte aligned, with
		 * and without a partial last word. */
		enum ga_pattern p = seq % 2 ? GA_PATTERN_COUNTER : GA_PATTERN_PRBS;
		size_t off = seq % 4 < 2 ? 16 : 8, len = LEN - seq % 3;
		uint64_t size = len | (uint64_t)seq << 32;

		ga_pattern_fill(p, seq, want, len);
		if (!o->write_pattern || o->write_pattern(c, &b, off, p, seq, len) != 0)
			ck_assert_int_eq(o->write_defer(c, &b, off, want, len), 0);
		ck_assert_int_eq(o->write_defer(c, &b, 0, &size, 8), 0);
		ck_assert_int_eq(o->write_flush(c), 0);
		if (seq % 8 >= 6 || seq == N - 1) {
			ck_assert_int_eq(o->read(c, &b, 0, got, off + len), 0);
			ck_assert_int_eq(memcmp(got, &size, 8), 0);
			ck_assert_msg(memcmp(got + off, want, len) == 0,
				      "frame %u (%zu bytes at +%zu) differs", seq, len, off);
		}
	}
	if (b0 >= 0) /* each frame a batch of the resident kernel */
		ck_assert_int_ge(ga_mem_cuda_resident_batches(c) - b0, N);
	o->free(c, &b);
}

START_TEST(test_resident)
{
	const struct ga_mem_ops *o2 = NULL;
	void *c2 = NULL;

	if (!have_gpu())
		return;
	ck_assert_int_eq(ga_mem_cuda_resident_batches(mctx), -1);
	{
		uint64_t ns, batches;

		ck_assert_int_eq(ga_mem_cuda_resident_work(mctx, &ns, &batches), -ENOTSUP);
	}
	if (ga_mem_cuda_kernel_copies(mctx) < 0) {
		/* Nothing to test, which on the GPU machine means its build
		 * lost the kernel: a failure there, not a quiet pass. */
		if (gpu_required())
			ck_abort_msg("GA_REQUIRE_GPU=1 and the CUDA kernels are not loaded "
				     "(built without nvcc, or the module failed to load): "
				     "the resident kernel was not tested");
		printf("SKIP: kernel not loaded (library built without nvcc): no resident "
		       "kernel\n");
		return;
	}
	pattern_frames(ops, mctx); /* the launched kernel's patterns, for comparison */
	open_with("GPUASYNC_CUDA_RESIDENT", "1", NULL, &o2, &c2);
	ck_assert_int_eq(ga_mem_cuda_resident_batches(c2), 0);
	defer_case(o2, c2, -1);
	ck_assert_int_gt(ga_mem_cuda_resident_batches(c2), 0);
	pattern_frames(o2, c2);
	from_case(o2, c2);
	{
		uint64_t ns = 0, batches = 0;

		ck_assert_int_eq(ga_mem_cuda_resident_work(c2, &ns, &batches), 0);
		ck_assert_int_eq((long long)batches, ga_mem_cuda_resident_batches(c2));
		ck_assert_msg(ns > 0 && ns / batches < 1000000,
			      "the kernel's work: %llu ns over %llu batches",
			      (unsigned long long)ns, (unsigned long long)batches);
	}
	o2->close(c2);
	open_with("GPUASYNC_CUDA_RESIDENT", "1", "GPUASYNC_CUDA_NO_FILL", &o2, &c2);
	defer_case(o2, c2, -1);
	pattern_frames(o2, c2);
	o2->close(c2);
}
END_TEST

static Suite *mem_cuda_suite(void)
{
	return suite_of("mem_cuda", "core", 0,
			SUITE_TESTS({test_open_reports}, {test_bad_index}, {test_alloc_rw_leak},
				    {test_async_order}, {test_threads}, {test_ipc},
				    {test_read_many}, {test_defer_copies},
				    {test_alloc_waits_for_frees}, {test_write_from},
				    {test_resident}));
}

int main(int argc, char **argv)
{
	SRunner *sr;
	int failed;

	if (argc == 4 && strcmp(argv[1], "--ipc-child") == 0)
		return ipc_child(argv[2], strtoul(argv[3], NULL, 0));

	/* A GPU that is there but fails is a failure, never a skip. */
	if (gpu_probe() == 1)
		return EXIT_FAILURE;
	open_rc = ga_mem_cuda_open(0, &ops, &mctx, gpu_name, sizeof(gpu_name), why, sizeof(why));
	sr = srunner_create(mem_cuda_suite());
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (!open_rc)
		ops->close(mctx);
	if (failed)
		return EXIT_FAILURE;
	/* Without a GPU only the reason was checked: that is a skip (ctest
	 * SKIP_RETURN_CODE), never a pass; gpu_probe has said there is none. */
	return open_rc ? GPU_PROBE_SKIP : EXIT_SUCCESS;
}
