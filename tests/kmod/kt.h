/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the kt suite's case files share (kt.c: environment, registers,
 * stub memory, cases; kt_dmabuf.c: buffers from dma-bufs; kt_drp.c: the
 * upstream calls LCLS-II's DRP and rogue make besides the GPU ones).
 */
#ifndef KT_H
#define KT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gpuasync/abi.h"
#include "gpuasync/regs.h"
#include "nv_p2p_stub_uapi.h"

#define KB64 0x10000u

struct kcase {
	const char *name;
	void (*fn)(void);
};

/* Set by a failed CHECK; a case that could not run sets case_skipped. */
extern int case_failed;
extern const char *case_skipped;
void fail(const char *fn, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fail(__func__, __LINE__, "(" #cond ") " __VA_ARGS__);                      \
	} while (0)

/* @expr must fail with errno @err. */
#define CHECK_ERR(expr, err)                                                                       \
	do {                                                                                       \
		errno = 0;                                                                         \
		long r_ = (long)(expr);                                                            \
		if (r_ != -1 || errno != (err))                                                    \
			fail(__func__, __LINE__, "%s: got %ld errno %d (%s), want errno %d (%s)",  \
			     #expr, r_, errno, strerror(errno), (err), strerror(err));             \
	} while (0)

#define CHECK_OK(expr)                                                                             \
	do {                                                                                       \
		errno = 0;                                                                         \
		long r_ = (long)(expr);                                                            \
		if (r_ < 0)                                                                        \
			fail(__func__, __LINE__, "%s: got %ld errno %d (%s)", #expr, r_, errno,    \
			     strerror(errno));                                                     \
	} while (0)


/* The card's node (-d; /dev/gpuasync_emu0 by default). */
extern const char *dev_path;

/* The card under test (identify()). */
extern unsigned int version, max_buffers, ddb;
extern enum ga_layout layout;

int open_card(void);
int open_stub(void);
long sys_read(const char *name);
/* The text of sysfs @name (one line), or -1. */
int sys_gets(const char *name, char *buf, int len);
int sys_write(const char *name, const char *val);
/* A gpuasync.ko parameter as a number (bools: Y 1, N 0); -1 if unreadable. */
long sys_read_param(const char *name);
/* Wait (bounded) until sysfs @name reaches at least @want. */
long sys_wait(const char *name, long want);
int write_file(const char *path, const char *val);
/* Does the kernel log hold a line containing @text? */
bool dmesg_has(const char *text);
int stub_param(const char *name, const char *val);
struct nvstub_stats stub_stats(void);

/* "GPU memory" from the stub: va for the driver, map for the test. */
struct gmem {
	uint64_t va, size;
	uint8_t *map;
};
struct gmem galloc(int s, uint64_t size);
void gfree(int s, struct gmem *g);

/* GPU_Add_Nvidia_Memory. */
int add_buf(int fd, int write, uint64_t va, uint32_t size);
uint32_t reg_off(enum ga_reg_id id, unsigned int index);
/* The word at @core_off in GpuAsyncCore (DMA_Read_Register). */
uint32_t rd_word(int fd, uint32_t core_off);
void wr_word(int fd, uint32_t core_off, uint32_t val);
/* The GpuAsyncCore block mapped read-write, or NULL. */
volatile uint32_t *map_core(int fd);
uint32_t field(int fd, enum ga_reg_id id, unsigned int index);
uint64_t buf_addr_reg(int fd, bool write, unsigned int i);
int get_table(int fd, struct ga_buffer_entry *e, unsigned int cap);
/* Nothing pinned or attached anywhere, no buffers, no owner, addresses clear. */
void check_clean(int fd, const char *why);
/* A delivered frame of the card's generator: doorbell, header, payload. */
void check_frame(const uint8_t *b, uint32_t size, uint32_t seq, const char *what);

/* Re-arms write buffers 0..3 (clearing their doorbells) and re-enables
 * the engine until stop: run as a thread beside invalidations. */
struct racer {
	int fd;
	volatile int stop;
	uint8_t *map[4];
};
void *rearm_loop(void *p);

/* A file's cases, NAME_cases, and how many, n_NAME_cases. */
#define KT_CASES(name)                                                                             \
	extern const struct kcase name##_cases[];                                                  \
	extern const unsigned int n_##name##_cases

/* kt_drp.c, kt_proc.c, kt_trap.c, kt_regs.c, kt_hwmon.c, kt_dmabuf.c */
KT_CASES(drp);
KT_CASES(proc);
KT_CASES(trap);
KT_CASES(regs);
KT_CASES(hwmon);
KT_CASES(dmabuf);
void hold_dmabuf(void);

#endif /* KT_H */
