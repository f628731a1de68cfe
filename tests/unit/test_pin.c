// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The pin path on the simulated card: pin=p2p, auto and dmabuf with host
 * memory (dma-bufs through /dev/udmabuf and huge pages) and, with --gpu,
 * with CUDA memory (cuMemGetHandleForAddressRange).  Where the memory
 * exports, every buffer goes to the card as a dma-buf the sim checks
 * (exporter named in fdinfo, size by lseek), frames still land, and no fd
 * stays open; where it cannot, pin=dmabuf refuses the open saying what is
 * missing and auto says why it chose p2p.
 *
 *   test_pin          host memory: exit 77 (skipped) when the kernel has no
 *                     udmabuf, after checking the refusal; without free huge
 *                     pages too, except under CI=true (reserve some there)
 *   test_pin --gpu    CUDA memory: exit 77 without a GPU
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuasync/device.h"
#include "gpuasync/sim.h"
#include "common/fd_count.h"
#include "common/gpu_probe.h"
#include "common/suite_tests.h"

static bool gpu_mode;
/* What the machine offers, found once in main(): "" when the memory
 * exports, else the reason pin=dmabuf gives. */
static char no_dmabuf[512];

static int open_pin(enum ga_pin pin, struct ga_dev **dev)
{
	struct ga_open_opts o = GA_OPEN_OPTS_DEFAULT;

	o.use_gpu = gpu_mode;
	o.pin = pin;
	return ga_dev_open_opts("sim:version=4,max_buffers=16", &o, dev);
}

/* The one pinned entry of write buffer @i. */
static struct ga_pinned pinned_of(struct ga_dev *dev, unsigned int i)
{
	struct ga_pinned p[16];
	unsigned int n = 0;

	ck_assert_int_eq(ga_dev_pinned(dev, p, 16, &n), 0);
	for (unsigned int k = 0; k < n && k < 16; k++)
		if (p[k].dir == GA_DIR_WRITE && p[k].index == i)
			return p[k];
	ck_abort_msg("write buffer %u not in the pinned table", i);
	return p[0];
}

/* Open with @pin, into @info, and make write buffer 0 of @size, into @bi. */
static struct ga_dev *open_one_buffer(enum ga_pin pin, size_t size, struct ga_dev_info *info,
				      struct ga_buf_info *bi)
{
	struct ga_dev *dev;
	struct ga_buf *b;

	ck_assert_int_eq(open_pin(pin, &dev), 0);
	ck_assert_int_eq(ga_dev_info(dev, info), 0);
	ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 0, size, &b), 0);
	ck_assert_int_eq(ga_buf_info(b, bi), 0);
	return dev;
}

START_TEST(test_p2p)
{
	struct ga_dev_info info;
	struct ga_buf_info bi;
	struct ga_pinned p;
	struct ga_dev *dev = open_one_buffer(GA_PIN_P2P, 2 * GA_GPU_PAGE_SIZE, &info, &bi);

	ck_assert_str_eq(info.pin, "p2p");
	ck_assert_ptr_nonnull(strstr(info.pin_note, "pin=p2p"));
	ck_assert(ga_dev_has(dev, GA_CAP_DMABUF)); /* the sim takes dma-bufs */
	ck_assert(!bi.dmabuf);
	p = pinned_of(dev, 0);
	ck_assert(!p.dmabuf);
	ck_assert_uint_eq(p.gpu_address, bi.gpu_address);
	ga_dev_close(dev);
}
END_TEST

/* auto: dma-buf exactly when pin=dmabuf would open, else p2p and why. */
START_TEST(test_auto)
{
	struct ga_dev_info info;
	struct ga_buf_info bi;
	struct ga_dev *dev = open_one_buffer(GA_PIN_AUTO, GA_GPU_PAGE_SIZE, &info, &bi);

	ck_assert_ptr_nonnull(strstr(info.pin_note, "pin=auto"));
	if (no_dmabuf[0]) {
		ck_assert_str_eq(info.pin, "p2p");
		/* the same reason pin=dmabuf gives */
		ck_assert_msg(strstr(no_dmabuf, strstr(info.pin_note, "no dma-buf: ") + 12),
			      "\"%s\" vs \"%s\"", info.pin_note, no_dmabuf);
		ck_assert(!bi.dmabuf);
	} else {
		ck_assert_str_eq(info.pin, "dmabuf");
		ck_assert(bi.dmabuf);
	}
	ga_dev_close(dev);
}
END_TEST

/* pin=dmabuf where the memory cannot export: refused, saying what is
 * missing, and nothing left open. */
START_TEST(test_dmabuf_refused)
{
	struct ga_dev *dev = NULL;
	unsigned int fds;

	if (!no_dmabuf[0])
		return; /* it can here: test_dmabuf_path */
	fds = fd_count();
	ck_assert_int_eq(open_pin(GA_PIN_DMABUF, &dev), -ENOTSUP);
	ck_assert_ptr_null(dev);
	ck_assert_str_eq(ga_last_error(), no_dmabuf);
	ck_assert_msg(strstr(no_dmabuf, gpu_mode ? "DMA_BUF" : "udmabuf") ||
			      strstr(no_dmabuf, "huge page"),
		      "\"%s\" does not say what is missing", no_dmabuf);
	ck_assert_uint_eq(fd_count(), fds);
}
END_TEST

/* Every buffer a dma-buf the sim checked; frames land; fds all closed. */
START_TEST(test_dmabuf_path)
{
	uint8_t frame[3000], back[3000];
	struct ga_buf *b[4];
	struct ga_dev_info info;
	struct ga_buf_info bi;
	struct ga_header h;
	struct ga_pinned p;
	struct ga_dev *dev;
	unsigned int fds, ddb, round;

	if (no_dmabuf[0])
		return; /* test_dmabuf_refused; main() reports the skip */
	fds = fd_count();
	ck_assert_msg(open_pin(GA_PIN_DMABUF, &dev) == 0, "%s", ga_last_error());
	ck_assert_int_eq(ga_dev_info(dev, &info), 0);
	ck_assert_str_eq(info.pin, "dmabuf");
	printf("pin: %s\n", info.pin_note);
	ddb = info.dma_data_bytes;
	for (round = 0; round < 10; round++) {
		for (unsigned int i = 0; i < 4; i++) {
			ck_assert_msg(ga_buf_create(dev, GA_DIR_WRITE, i, 2 * GA_GPU_PAGE_SIZE,
						    &b[i]) == 0,
				      "create %u: %s", i, ga_last_error());
			ck_assert_int_eq(ga_buf_info(b[i], &bi), 0);
			ck_assert(bi.dmabuf);
			p = pinned_of(dev, i);
			ck_assert(p.dmabuf);
			ck_assert_uint_eq(p.gpu_address, 0); /* offset into the dma-buf */
			ck_assert_uint_eq(p.size, 2 * GA_GPU_PAGE_SIZE);
		}
		ck_assert_int_eq(ga_buf_arm(b[0]), 0);
		ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, true), 0);
		for (size_t k = 0; k < sizeof(frame); k++)
			frame[k] = (uint8_t)(k * 7 + round);
		ck_assert_int_eq(ga_sim_push(dev, frame, sizeof(frame), 5000), 0);
		ck_assert_int_eq(ga_buf_header(b[0], &h), 0);
		ck_assert_uint_eq(h.size, sizeof(frame));
		ck_assert_int_eq(ga_buf_read(b[0], ddb, back, sizeof(back)), 0);
		ck_assert(memcmp(frame, back, sizeof(frame)) == 0);
		ck_assert_int_eq(ga_dev_enable(dev, GA_DIR_WRITE, false), 0);
		for (unsigned int i = 4; i-- > 0;)
			ck_assert_int_eq(ga_buf_destroy(b[i]), 0);
	}
	if (!gpu_mode) {
		/* host memory exports one huge page per buffer, no more */
		ck_assert_int_eq(ga_buf_create(dev, GA_DIR_WRITE, 0, 64 << 20, &b[0]), -EINVAL);
		ck_assert_ptr_nonnull(strstr(ga_last_error(), "huge page"));
	}
	ga_dev_close(dev);
	ck_assert_uint_eq(fd_count(), fds);
}
END_TEST

/* Out-of-range pin values: refused before anything is made. */
START_TEST(test_bad_pin)
{
	struct ga_dev *dev = NULL;

	ck_assert_int_eq(open_pin((enum ga_pin)GA_PIN_COUNT, &dev), -EINVAL);
	ck_assert_ptr_null(dev);
	ck_assert_int_eq(open_pin((enum ga_pin) - 1, &dev), -EINVAL);
}
END_TEST

int main(int argc, char **argv)
{
	struct ga_dev *dev = NULL;
	const char *ci = getenv("CI");
	SRunner *sr;
	int failed, rc;

	gpu_mode = argc > 1 && strcmp(argv[1], "--gpu") == 0;
	if (gpu_mode) {
		rc = gpu_probe();
		if (rc)
			return rc; /* 77 only where there is no GPU */
		rc = open_pin(GA_PIN_P2P, &dev);
		if (gpu_card_in_gpu_memory(rc, dev))
			return EXIT_FAILURE;
	}
	rc = open_pin(GA_PIN_DMABUF, &dev);
	if (rc == 0)
		ga_dev_close(dev);
	else
		snprintf(no_dmabuf, sizeof(no_dmabuf), "%s", ga_last_error());
	printf("dma-buf export (%s memory): %s\n", gpu_mode ? "CUDA" : "host",
	       no_dmabuf[0] ? no_dmabuf : "works");

	sr = srunner_create(suite_of("pin", "sim", 120,
				     SUITE_TESTS({test_p2p}, {test_auto}, {test_dmabuf_refused},
						 {test_dmabuf_path}, {test_bad_pin})));
	if (gpu_mode) /* CUDA state must not cross a fork: main() used it */
		srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (failed)
		return EXIT_FAILURE;
	if (no_dmabuf[0] && !gpu_mode && strstr(no_dmabuf, "huge page") && ci &&
	    strcmp(ci, "true") == 0) {
		printf("FAILED: CI=true and no free huge page: reserve some "
		       "(echo 8 > /proc/sys/vm/nr_hugepages) so the dma-buf path runs\n");
		return EXIT_FAILURE;
	}
	if (no_dmabuf[0] && gpu_mode && getenv("GA_REQUIRE_GPU") &&
	    strcmp(getenv("GA_REQUIRE_GPU"), "1") == 0) {
		printf("FAILED: GA_REQUIRE_GPU=1 and the dma-buf path of GPU memory did not run: "
		       "%s\n",
		       no_dmabuf);
		return EXIT_FAILURE;
	}
	if (no_dmabuf[0]) {
		printf("SKIP: the dma-buf path did not run (refusal checked): %s\n", no_dmabuf);
		return 77;
	}
	return EXIT_SUCCESS;
}
