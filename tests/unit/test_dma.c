// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The card's DMA stores each byte of a descriptor, doorbell or completion
 * once (core/include/gpuasync/dma.h): a consumer that clears a doorbell
 * the moment it sees it must not find it set again by a second store.
 *
 * Seen store by store: the destination page is read-only, each store
 * faults, the handler notes where it lands, opens the page and single-
 * steps the store (x86's trap flag), and the trap closes the page again.
 * A store whose first byte was already written is a second store.  The
 * detector is shown to see one: memcpy() stores a 4-byte word twice.
 */
#define _GNU_SOURCE /* REG_EFL */
#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "gpuasync/dma.h"
#include "common/run_suite.h"

#if defined(__x86_64__) && defined(__linux__)
#define TRAP_FLAG 0x100

static uint8_t *page;
static long page_size;
static uint8_t before[65536];
static uint8_t written[65536]; /* bytes stored so far */
static volatile int stores, again;

static void on_store(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uint8_t *at = si->si_addr;

	(void)sig;
	if (at < page || at >= page + page_size)
		_exit(3); /* not ours: a real fault */
	stores++;
	if (written[at - page])
		again++;
	written[at - page] = 1;
	memcpy(before, page, page_size);
	mprotect(page, page_size, PROT_READ | PROT_WRITE);
	uc->uc_mcontext.gregs[REG_EFL] |= TRAP_FLAG;
}

static void on_step(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)sig, (void)si;
	for (long i = 0; i < page_size; i++)
		if (page[i] != before[i])
			written[i] = 1;
	mprotect(page, page_size, PROT_READ);
	uc->uc_mcontext.gregs[REG_EFL] &= ~TRAP_FLAG;
}

static void watch(void)
{
	struct sigaction sa = {.sa_flags = SA_SIGINFO};

	page_size = sysconf(_SC_PAGESIZE);
	ck_assert_int_le(page_size, (long)sizeof(before));
	page = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(page, MAP_FAILED);
	sa.sa_sigaction = on_store;
	ck_assert_int_eq(sigaction(SIGSEGV, &sa, NULL), 0);
	sa.sa_sigaction = on_step;
	ck_assert_int_eq(sigaction(SIGTRAP, &sa, NULL), 0);
}

/* Copy @len bytes to @off with @copy, watched; the source's bytes all
 * differ from what the page held, so every first store changes them. */
static void watched_copy(void (*copy)(void *, const void *, size_t), size_t off, size_t len)
{
	uint8_t src[64];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i + 1);
	memset(page, 0xEE, page_size);
	memset(written, 0, sizeof(written));
	stores = again = 0;
	mprotect(page, page_size, PROT_READ);
	copy(page + off, src, len);
	mprotect(page, page_size, PROT_READ | PROT_WRITE);
	ck_assert_mem_eq(page + off, src, len);
	for (long i = 0; i < page_size; i++)
		if ((size_t)i < off || (size_t)i >= off + len)
			ck_assert_uint_eq(page[i], 0xEE);
}

static void dma_put(void *dst, const void *src, size_t len)
{
	ga_dma_put(dst, src, len);
}

/* Through a pointer the compiler cannot see: the C library's memcpy. */
static void *(*volatile libc_memcpy)(void *, const void *, size_t) = memcpy;

static void plain_memcpy(void *dst, const void *src, size_t len)
{
	libc_memcpy(dst, src, len);
}

START_TEST(test_doorbell_once)
{
	watch();
	/* The size word at + 4 of a descriptor: one store. */
	watched_copy(dma_put, 4, 4);
	ck_assert_int_eq(stores, 1);
	ck_assert_int_eq(again, 0);
	/* The descriptor's two words, the read engine's 16-byte completion. */
	watched_copy(dma_put, 0, 8);
	ck_assert_int_eq(stores, 2);
	ck_assert_int_eq(again, 0);
	watched_copy(dma_put, 0, 16);
	ck_assert_int_eq(stores, 4);
	ck_assert_int_eq(again, 0);
}
END_TEST

START_TEST(test_short_writes_once)
{
	/* Every length a short write can have, at every alignment. */
	watch();
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 1; len <= GA_DMA_EXACT_BYTES; len++) {
			watched_copy(dma_put, off, len);
			ck_assert_msg(again == 0, "%zu bytes at offset %zu: a byte stored twice",
				      len, off);
		}
}
END_TEST

START_TEST(test_payload_copied)
{
	/* Longer writes are payloads, copied whole by memcpy. */
	watch();
	watched_copy(dma_put, 3, 64);
}
END_TEST

START_TEST(test_detector_sees_memcpy_twice)
{
	/* Why ga_dma_put exists, and proof the detector sees a second store. */
	watch();
	watched_copy(plain_memcpy, 4, 4);
	ck_assert_int_eq(stores, 2);
	ck_assert_int_eq(again, 1);
}
END_TEST

SUITE_MAIN("dma", "core", 0, {test_doorbell_once}, {test_short_writes_once}, {test_payload_copied},
	   {test_detector_sees_memcpy_twice})
#else
int main(void)
{
	return 77; /* the detector single-steps with x86's trap flag */
}
#endif
