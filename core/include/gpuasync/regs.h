/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The GpuAsyncCore register map: one table, every field once.
 *
 * GA_REGISTERS() below is the only place that knows an offset.  It expands
 * into the enum of register ids, the table of struct ga_reg rows (lib and
 * kmod), the files under registers/ and buffers/<i>/, the metrics names,
 * the generated README and the table tests.  Adding a register is adding
 * one row.
 *
 * Layouts (which versions use which: GA_VERSIONS below; their names and
 * the buffers each holds: ga_layout_name, ga_layout_max_buffers):
 *   GA_LAYOUT_V1         the first map, one 4 KiB block
 *   GA_LAYOUT_V4         the V4 map, firmware since 2026-03-20: latency
 *                        block at 0xC0..0xF8 with max/min and read DMA
 *   GA_LAYOUT_V4_LEGACY  the V4 map as the upstream driver headers still
 *                        describe it: latencies at 0x48/0x50/0x58 only
 * Both V4 layouts report the same version, so the choice between them is a
 * setting (config "latency_block", sim option "latency=legacy"), never a
 * guess.
 *
 * Row columns:
 *   id, "name", access, format, flags, array,
 *   loc(V1), loc(V4), loc(V4_LEGACY), min_version, "unit", "one-line doc",
 *   "pyrogue variable" (docs/registers.md lists what pyrogue has that we lack)
 * loc is GA_LOC(offset, lsb, msb, stride) or GA_NA.  For per-buffer rows (array !=
 * GA_ARRAY_NONE) the instance i lives at offset + i * stride; stride 0 means
 * only buffer 0 is measured in that layout (V4 latencies).
 *
 * Offsets are relative to the GpuAsyncCore block (BAR0 + GA_CORE_OFFSET).
 * This header is plain C usable from the kernel (kmod/) too.
 */
#ifndef GPUASYNC_REGS_H
#define GPUASYNC_REGS_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#endif

enum ga_layout {
	GA_LAYOUT_V1,
	GA_LAYOUT_V4,
	GA_LAYOUT_V4_LEGACY,
	GA_LAYOUT_COUNT
};

/*
 * What each firmware version has (docs/firmware.md §2.2-2.4, §4): the one
 * place that knows which versions exist.  Columns:
 *   version, layout, legacy (the layout config "latency_block=legacy"
 *   picks; the same layout where there is no choice), quiesce_wait_ms,
 *   quiesce_poll_ms, "what it added"
 * Quiesce rule, before memory the card may still write into is freed:
 * a version that reports engine activity (write/read_active) is polled
 * until both bits clear, for at most quiesce_poll_ms; one that cannot say
 * gets a fixed wait of quiesce_wait_ms, as the reference driver does.
 * Rows run 1, 2, 3, ... without gaps; the last is the newest version we
 * know, and anything above it is refused everywhere.  A new version on an
 * existing layout is one row here (plus min_version on the registers it
 * adds).  Buffer limits and the identity fields (version, max_buffers,
 * dma_data_bytes: GA_F_WIDE_ID rows) follow from the layout.
 */
/* clang-format off */
#define GA_VERSIONS(X) \
 X(1, GA_LAYOUT_V1, GA_LAYOUT_V1, 50, 0, "the version register") \
 X(2, GA_LAYOUT_V1, GA_LAYOUT_V1, 50, 0, "write timeout counter, demux select") \
 X(3, GA_LAYOUT_V1, GA_LAYOUT_V1, 50, 0, "buffer watermarks") \
 X(4, GA_LAYOUT_V4, GA_LAYOUT_V4_LEGACY, 50, 0, "up to 1024 buffers, the V4 map") \
 X(5, GA_LAYOUT_V4, GA_LAYOUT_V4_LEGACY, 0, 1000, "engine active bits")
/* clang-format on */

struct ga_version {
	uint8_t version;
	enum ga_layout layout;
	enum ga_layout layout_legacy;
	uint16_t quiesce_wait_ms; /* cannot report activity: fixed wait */
	uint16_t quiesce_poll_ms; /* reports activity: poll at most this long */
	const char *doc;
};

/* Counts the rows: GA_VERSION_ROWS is how many there are. */
enum ga_version_rows {
#define GA_VERSION_ENUM(v, ...) GA_VERSION_ROW_##v,
	GA_VERSIONS(GA_VERSION_ENUM)
#undef GA_VERSION_ENUM
	GA_VERSION_ROWS
};
/* The newest firmware version known (rows are 1..GA_VERSION_MAX). */
#define GA_VERSION_MAX GA_VERSION_ROWS

/* Indexed by version - 1 (defined in core/regs.c). */
extern const struct ga_version ga_versions[GA_VERSION_MAX];

/* The row of firmware @version, or NULL when it is not one we know. */
const struct ga_version *ga_version_find(unsigned int version);


enum ga_access {
	GA_RO, /* read-only: registers/<name> is 0444 */
	GA_RW, /* read-write: 0644, read-modify-write of the field */
	GA_WO, /* write-only strobe: 0200, any write triggers */
};

enum ga_format {
	GA_FMT_DEC,
	GA_FMT_HEX,
	GA_FMT_BOOL,
};

/* Row flags: how monitoring and the filesystem should treat the value. */
#define GA_F_COUNTER 0x01  /* monotonic event counter: metrics "_total" */
#define GA_F_CYCLES 0x02   /* clock cycles: metrics in seconds via clock_hz */
#define GA_F_DRIVER 0x04   /* programmed by the driver when buffers change */
#define GA_F_BYTES 0x08    /* a size in bytes */
#define GA_F_TRIGGER 0x10  /* RW, but every write also triggers an action */
#define GA_F_WIDE_ID 0x20  /* identity/config, not live state */
/* An engine enable: switched through ga_dev_enable(), which uses the
 * driver's enable ioctl where it has one, not a raw field write. */
#define GA_F_ENGINE_WRITE 0x40 /* FPGA->GPU (firmware write engine) */
#define GA_F_ENGINE_READ 0x80  /* GPU->FPGA (firmware read engine) */
/* A 64-bit value: the row's word holds the low half, the next word (offset
 * + 4) the high half; loc is the low word (lsb 0, msb 31).  Read it whole
 * with ga_reg_read64; ga_reg_read gives it only while it fits 32 bits. */
#define GA_F_U64 0x100
/* A count shown as field + 1: the firmware keeps the index of a ring's last
 * entry (count - 1).  Such a row is a read-only second view of the same
 * bits as the raw row (write_count -> write_buffers), never a field of its
 * own; the table tests check that it shadows exactly one raw row. */
#define GA_F_PLUS_ONE 0x200
/* A stream monitor's counter reset (AxiStreamMonAxiL config bit 0): the
 * library strobes every such row whenever count_reset is written, as
 * pyrogue's countReset resets every device below the root. */
#define GA_F_WITH_COUNT_RESET 0x400
/* A running minimum that count_reset sets to all ones (V4 latency mins,
 * facts sheet 3.4): all ones means no sample since, not a value. */
#define GA_F_RUNNING_MIN 0x800
/* Reset values and what count_reset does (docs/firmware.md §2.3, §2.4,
 * §3.4); every other field powers on as 0 and count_reset leaves it. */
#define GA_F_RESET_ONE 0x1000     /* powers on as 1, not 0 */
#define GA_F_COUNT_CLEARED 0x2000 /* count_reset sets it to 0 */
/* A watermark: count_reset restarts it from the present state. */
#define GA_F_WATERMARK 0x4000

enum ga_array {
	GA_ARRAY_NONE,  /* a scalar: registers/<name> */
	GA_ARRAY_WRITE, /* one per FPGA->GPU (write) buffer: buffers/<i>/ */
	GA_ARRAY_READ,  /* one per GPU->FPGA (read) buffer: read_buffers/<i>/ */
};

struct ga_reg_loc {
	uint16_t offset;
	uint8_t lsb, msb;
	uint16_t stride;
	uint8_t present;
};

#define GA_LOC(off, lsb, msb, stride) { (off), (lsb), (msb), (stride), 1 }
#define GA_NA { 0, 0, 0, 0, 0 }

/* clang-format off */
#define GA_REGISTERS(X) \
 X(MAX_BUFFERS, "max_buffers", GA_RO, GA_FMT_DEC, GA_F_WIDE_ID, GA_ARRAY_NONE, \
   GA_LOC(0x04, 24, 28, 0), GA_LOC(0x00, 0, 15, 0), GA_LOC(0x00, 0, 15, 0), 1, "", \
   "buffers per direction the firmware supports", \
   "AxiGpuAsyncCore.MaxBuffers") \
 X(AR_CACHE, "ar_cache", GA_RW, GA_FMT_HEX, 0, GA_ARRAY_NONE, \
   GA_LOC(0x04, 0, 3, 0), GA_LOC(0x04, 0, 3, 0), GA_LOC(0x04, 0, 3, 0), 1, "", \
   "AXI ARCACHE used for GPU->FPGA reads", \
   "AxiGpuAsyncCore.AxiReadCache") \
 X(AW_CACHE, "aw_cache", GA_RW, GA_FMT_HEX, 0, GA_ARRAY_NONE, \
   GA_LOC(0x04, 8, 11, 0), GA_LOC(0x04, 8, 11, 0), GA_LOC(0x04, 8, 11, 0), 1, "", \
   "AXI AWCACHE used for FPGA->GPU writes", \
   "AxiGpuAsyncCore.AxiWriteCache") \
 X(DMA_DATA_BYTES, "dma_data_bytes", GA_RO, GA_FMT_DEC, GA_F_WIDE_ID | GA_F_BYTES, GA_ARRAY_NONE, \
   GA_LOC(0x04, 16, 23, 0), GA_LOC(0x04, 16, 23, 0), GA_LOC(0x04, 16, 23, 0), 1, "bytes", \
   "AXI data width; the payload starts this far into each buffer", \
   "AxiGpuAsyncCore.AxiBusWidth") \
 X(WRITE_COUNT, "write_count", GA_RW, GA_FMT_DEC, GA_F_DRIVER, GA_ARRAY_NONE, \
   GA_LOC(0x08, 0, 7, 0), GA_LOC(0x08, 0, 14, 0), GA_LOC(0x08, 0, 14, 0), 1, "", \
   "raw field: index of the last write buffer in the ring (write_buffers - 1)", \
   "AxiGpuAsyncCore.WriteCount") \
 X(WRITE_BUFFERS, "write_buffers", GA_RO, GA_FMT_DEC, GA_F_PLUS_ONE, GA_ARRAY_NONE, \
   GA_LOC(0x08, 0, 7, 0), GA_LOC(0x08, 0, 14, 0), GA_LOC(0x08, 0, 14, 0), 1, "buffers", \
   "write buffers in the firmware's ring (write_count + 1; 1 also when none is registered)", \
   "") \
 X(WRITE_ENABLE, "write_enable", GA_RW, GA_FMT_BOOL, GA_F_ENGINE_WRITE, GA_ARRAY_NONE, \
   GA_LOC(0x08, 8, 8, 0), GA_LOC(0x08, 15, 15, 0), GA_LOC(0x08, 15, 15, 0), 1, "", \
   "FPGA->GPU write engine on; off drops frames (header still goes to buffer 0's address)", \
   "AxiGpuAsyncCore.WriteEnable") \
 X(READ_COUNT, "read_count", GA_RW, GA_FMT_DEC, GA_F_DRIVER, GA_ARRAY_NONE, \
   GA_LOC(0x08, 16, 23, 0), GA_LOC(0x08, 16, 30, 0), GA_LOC(0x08, 16, 30, 0), 1, "", \
   "raw field: index of the last read buffer in the ring (read_buffers - 1)", \
   "AxiGpuAsyncCore.ReadCount") \
 X(READ_BUFFERS, "read_buffers", GA_RO, GA_FMT_DEC, GA_F_PLUS_ONE, GA_ARRAY_NONE, \
   GA_LOC(0x08, 16, 23, 0), GA_LOC(0x08, 16, 30, 0), GA_LOC(0x08, 16, 30, 0), 1, "buffers", \
   "read buffers in the firmware's ring (read_count + 1; 1 also when none is registered)", \
   "") \
 X(READ_ENABLE, "read_enable", GA_RW, GA_FMT_BOOL, GA_F_ENGINE_READ, GA_ARRAY_NONE, \
   GA_LOC(0x08, 24, 24, 0), GA_LOC(0x08, 31, 31, 0), GA_LOC(0x08, 31, 31, 0), 1, "", \
   "GPU->FPGA read engine on; off discards pending read requests", \
   "AxiGpuAsyncCore.ReadEnable") \
 X(RX_FRAME_COUNT, "rx_frame_count", GA_RO, GA_FMT_DEC, GA_F_COUNTER | GA_F_COUNT_CLEARED, GA_ARRAY_NONE, \
   GA_LOC(0x10, 0, 31, 0), GA_LOC(0x10, 0, 31, 0), GA_LOC(0x10, 0, 31, 0), 1, "frames", \
   "frames finished by the FPGA->GPU write engine, dropped ones included", \
   "AxiGpuAsyncCore.RxFrameCnt") \
 X(TX_FRAME_COUNT, "tx_frame_count", GA_RO, GA_FMT_DEC, GA_F_COUNTER | GA_F_COUNT_CLEARED, GA_ARRAY_NONE, \
   GA_LOC(0x14, 0, 31, 0), GA_LOC(0x14, 0, 31, 0), GA_LOC(0x14, 0, 31, 0), 1, "frames", \
   "frames finished by the GPU->FPGA read engine", \
   "AxiGpuAsyncCore.TxFrameCnt") \
 X(AXI_WRITE_ERROR_COUNT, "axi_write_error_count", GA_RO, GA_FMT_DEC, GA_F_COUNTER | GA_F_COUNT_CLEARED, GA_ARRAY_NONE, \
   GA_LOC(0x18, 0, 31, 0), GA_LOC(0x18, 0, 31, 0), GA_LOC(0x18, 0, 31, 0), 1, "errors", \
   "write DMA returns with a non-zero result (AXI error, overflow or timeout)", \
   "AxiGpuAsyncCore.WriteAxiErrorCnt") \
 X(AXI_READ_ERROR_COUNT, "axi_read_error_count", GA_RO, GA_FMT_DEC, GA_F_COUNTER | GA_F_COUNT_CLEARED, GA_ARRAY_NONE, \
   GA_LOC(0x1C, 0, 31, 0), GA_LOC(0x1C, 0, 31, 0), GA_LOC(0x1C, 0, 31, 0), 1, "errors", \
   "read DMA returns with a non-zero result", \
   "AxiGpuAsyncCore.ReadAxiErrorCnt") \
 X(COUNT_RESET, "count_reset", GA_WO, GA_FMT_DEC, 0, GA_ARRAY_NONE, \
   GA_LOC(0x20, 0, 31, 0), GA_LOC(0x20, 0, 31, 0), GA_LOC(0x20, 0, 31, 0), 1, "", \
   "write anything: clear frame/error/timeout counters, latency max/min, watermarks and both stream monitors", \
   "AxiGpuAsyncCore.CountReset") \
 X(AXI_WRITE_ERROR_VALUE, "axi_write_error_value", GA_RO, GA_FMT_HEX, GA_F_COUNT_CLEARED, GA_ARRAY_NONE, \
   GA_LOC(0x24, 0, 3, 0), GA_LOC(0x24, 0, 3, 0), GA_LOC(0x24, 0, 3, 0), 1, "", \
   "last write error: bits 1:0 AXI response, bit 2 overflow, bit 3 timeout", \
   "AxiGpuAsyncCore.WriteAxiErrorVal") \
 X(AXI_READ_ERROR_VALUE, "axi_read_error_value", GA_RO, GA_FMT_HEX, GA_F_COUNT_CLEARED, GA_ARRAY_NONE, \
   GA_LOC(0x28, 0, 2, 0), GA_LOC(0x28, 0, 2, 0), GA_LOC(0x28, 0, 2, 0), 1, "", \
   "last read error code", \
   "AxiGpuAsyncCore.ReadAxiErrorVal") \
 X(ROUTE_MASK0, "route_mask0", GA_RO, GA_FMT_HEX, 0, GA_ARRAY_NONE, \
   GA_LOC(0x2C, 0, 7, 0), GA_NA, GA_NA, 1, "", "stream demux route 0 TDEST mask", \
   "") \
 X(ROUTE_DEST0, "route_dest0", GA_RO, GA_FMT_HEX, 0, GA_ARRAY_NONE, \
   GA_LOC(0x2C, 8, 15, 0), GA_NA, GA_NA, 1, "", "stream demux route 0 TDEST value", \
   "") \
 X(ROUTE_MASK1, "route_mask1", GA_RO, GA_FMT_HEX, 0, GA_ARRAY_NONE, \
   GA_LOC(0x2C, 16, 23, 0), GA_NA, GA_NA, 1, "", "stream demux route 1 TDEST mask", \
   "") \
 X(ROUTE_DEST1, "route_dest1", GA_RO, GA_FMT_HEX, 0, GA_ARRAY_NONE, \
   GA_LOC(0x2C, 24, 31, 0), GA_NA, GA_NA, 1, "", "stream demux route 1 TDEST value", \
   "") \
 X(VERSION, "version", GA_RO, GA_FMT_DEC, GA_F_WIDE_ID, GA_ARRAY_NONE, \
   GA_LOC(0x30, 0, 7, 0), GA_LOC(0x30, 0, 7, 0), GA_LOC(0x30, 0, 7, 0), 1, "", \
   "GpuAsyncCore firmware version", \
   "AxiGpuAsyncCore.VersionNumber") \
 X(AXI_WRITE_TIMEOUT_COUNT, "axi_write_timeout_count", GA_RO, GA_FMT_DEC, GA_F_COUNTER | GA_F_COUNT_CLEARED, GA_ARRAY_NONE, \
   GA_LOC(0x34, 0, 31, 0), GA_LOC(0x34, 0, 31, 0), GA_LOC(0x34, 0, 31, 0), 2, "errors", \
   "write DMA transfers that timed out", \
   "AxiGpuAsyncCore.AxiWriteTimeoutErrorCnt") \
 X(DEMUX_SELECT, "demux_select", GA_RW, GA_FMT_BOOL, GA_F_RESET_ONE, GA_ARRAY_NONE, \
   GA_LOC(0x38, 0, 0, 0), GA_LOC(0x38, 0, 0, 0), GA_LOC(0x38, 0, 0, 0), 2, "", \
   "1: incoming frames go to the GPU path, 0: to the normal CPU DMA path", \
   "AxiGpuAsyncCore.AxisDeMuxSelect") \
 X(MIN_WRITE_BUFFERS, "min_write_buffers", GA_RO, GA_FMT_DEC, GA_F_WATERMARK, GA_ARRAY_NONE, \
   GA_LOC(0x3C, 0, 31, 0), GA_LOC(0x3C, 0, 10, 0), GA_LOC(0x3C, 0, 10, 0), 3, "buffers", \
   "fewest free write buffers seen since count_reset", \
   "AxiGpuAsyncCore.MinWriteFreeList") \
 X(MIN_READ_QUEUE, "min_read_queue", GA_RO, GA_FMT_DEC, GA_F_WATERMARK, GA_ARRAY_NONE, \
   GA_LOC(0x40, 0, 31, 0), GA_NA, GA_NA, 3, "requests", \
   "fewest pending read requests seen since count_reset", \
   "") \
 X(MAX_READ_QUEUE, "max_read_queue", GA_RO, GA_FMT_DEC, GA_F_WATERMARK, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x40, 0, 10, 0), GA_LOC(0x40, 0, 10, 0), 4, "requests", \
   "most pending read requests seen since count_reset", \
   "AxiGpuAsyncCore.MaxReadQueueList") \
 X(WRITE_ACTIVE, "write_active", GA_RO, GA_FMT_BOOL, 0, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x44, 0, 0, 0), GA_LOC(0x44, 0, 0, 0), 5, "", \
   "write engine not idle: RDMA into GPU memory may be in flight", \
   "") \
 X(READ_ACTIVE, "read_active", GA_RO, GA_FMT_BOOL, 0, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x44, 1, 1, 0), GA_LOC(0x44, 1, 1, 0), 5, "", \
   "read engine not idle: RDMA from GPU memory may be in flight", \
   "") \
 X(WRITE_MAX_SIZE, "write_max_size", GA_RW, GA_FMT_DEC, GA_F_DRIVER | GA_F_BYTES | GA_F_RESET_ONE, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x60, 0, 31, 0), GA_LOC(0x60, 0, 31, 0), 4, "bytes", \
   "largest payload written into any write buffer (shared; 0 is stored as 1)", \
   "AxiGpuAsyncCore.RemoteWriteMaxSize") \
 X(TOTAL_LATENCY, "total_latency", GA_RO, GA_FMT_DEC, GA_F_CYCLES, GA_ARRAY_WRITE, \
   GA_LOC(0x500, 0, 31, 16), GA_LOC(0xC0, 0, 31, 0), GA_LOC(0x48, 0, 31, 0), 1, "cycles", \
   "frame accepted into the buffer until its read DMA completed", \
   "AxiGpuAsyncCore.TotLatency") \
 X(TOTAL_LATENCY_MAX, "total_latency_max", GA_RO, GA_FMT_DEC, GA_F_CYCLES | GA_F_COUNT_CLEARED, GA_ARRAY_WRITE, \
   GA_NA, GA_LOC(0xC4, 0, 31, 0), GA_NA, 4, "cycles", "largest total latency since count_reset", \
   "AxiGpuAsyncCore.TotLatencyMax") \
 X(TOTAL_LATENCY_MIN, "total_latency_min", GA_RO, GA_FMT_DEC, GA_F_CYCLES | GA_F_RUNNING_MIN, GA_ARRAY_WRITE, \
   GA_NA, GA_LOC(0xC8, 0, 31, 0), GA_NA, 4, "cycles", "smallest total latency since count_reset", \
   "AxiGpuAsyncCore.TotLatencyMin") \
 X(GPU_LATENCY, "gpu_latency", GA_RO, GA_FMT_DEC, GA_F_CYCLES, GA_ARRAY_WRITE, \
   GA_LOC(0x504, 0, 31, 16), GA_LOC(0xD0, 0, 31, 0), GA_LOC(0x50, 0, 31, 0), 1, "cycles", \
   "write into the buffer done until the GPU re-armed it", \
   "AxiGpuAsyncCore.GpuLatency") \
 X(GPU_LATENCY_MAX, "gpu_latency_max", GA_RO, GA_FMT_DEC, GA_F_CYCLES | GA_F_COUNT_CLEARED, GA_ARRAY_WRITE, \
   GA_NA, GA_LOC(0xD4, 0, 31, 0), GA_NA, 4, "cycles", "largest GPU latency since count_reset", \
   "AxiGpuAsyncCore.GpuLatencyMax") \
 X(GPU_LATENCY_MIN, "gpu_latency_min", GA_RO, GA_FMT_DEC, GA_F_CYCLES | GA_F_RUNNING_MIN, GA_ARRAY_WRITE, \
   GA_NA, GA_LOC(0xD8, 0, 31, 0), GA_NA, 4, "cycles", "smallest GPU latency since count_reset", \
   "AxiGpuAsyncCore.GpuLatencyMin") \
 X(WRITE_LATENCY, "write_latency", GA_RO, GA_FMT_DEC, GA_F_CYCLES, GA_ARRAY_WRITE, \
   GA_LOC(0x508, 0, 31, 16), GA_LOC(0xE0, 0, 31, 0), GA_LOC(0x58, 0, 31, 0), 1, "cycles", \
   "frame accepted into the buffer until its write DMA returned", \
   "AxiGpuAsyncCore.WrDmaLatency") \
 X(WRITE_LATENCY_MAX, "write_latency_max", GA_RO, GA_FMT_DEC, GA_F_CYCLES | GA_F_COUNT_CLEARED, GA_ARRAY_WRITE, \
   GA_NA, GA_LOC(0xE4, 0, 31, 0), GA_NA, 4, "cycles", "largest write DMA latency since count_reset", \
   "AxiGpuAsyncCore.WrDmaLatencyMax") \
 X(WRITE_LATENCY_MIN, "write_latency_min", GA_RO, GA_FMT_DEC, GA_F_CYCLES | GA_F_RUNNING_MIN, GA_ARRAY_WRITE, \
   GA_NA, GA_LOC(0xE8, 0, 31, 0), GA_NA, 4, "cycles", "smallest write DMA latency since count_reset", \
   "AxiGpuAsyncCore.WrDmaLatencyMin") \
 X(READ_LATENCY, "read_latency", GA_RO, GA_FMT_DEC, GA_F_CYCLES, GA_ARRAY_READ, \
   GA_NA, GA_LOC(0xF0, 0, 31, 0), GA_NA, 4, "cycles", \
   "read DMA of read buffer 0 started until it completed", \
   "AxiGpuAsyncCore.RdDmaLatency") \
 X(READ_LATENCY_MAX, "read_latency_max", GA_RO, GA_FMT_DEC, GA_F_CYCLES | GA_F_COUNT_CLEARED, GA_ARRAY_READ, \
   GA_NA, GA_LOC(0xF4, 0, 31, 0), GA_NA, 4, "cycles", "largest read DMA latency since count_reset", \
   "AxiGpuAsyncCore.RdDmaLatencyMax") \
 X(READ_LATENCY_MIN, "read_latency_min", GA_RO, GA_FMT_DEC, GA_F_CYCLES | GA_F_RUNNING_MIN, GA_ARRAY_READ, \
   GA_NA, GA_LOC(0xF8, 0, 31, 0), GA_NA, 4, "cycles", "smallest read DMA latency since count_reset", \
   "AxiGpuAsyncCore.RdDmaLatencyMin") \
 X(IB_MON_RESET, "inbound_monitor_reset", GA_WO, GA_FMT_DEC, GA_F_WITH_COUNT_RESET, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x100, 0, 0, 0), GA_LOC(0x100, 0, 0, 0), 4, "", \
   "write 1: clear the FPGA->GPU stream monitor (count_reset does it too)", \
   "AxiGpuAsyncCore.GpuIbAxisMon.CntRst") \
 X(IB_MON_FRAME_COUNT, "inbound_frames", GA_RO, GA_FMT_DEC, GA_F_COUNTER | GA_F_U64, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x104, 0, 31, 0), GA_LOC(0x104, 0, 31, 0), 4, "frames", \
   "stream monitor: frames seen on the FPGA->GPU stream (64-bit)", \
   "AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameCnt") \
 X(IB_MON_FRAME_RATE, "inbound_frame_rate", GA_RO, GA_FMT_DEC, 0, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x10C, 0, 31, 0), GA_LOC(0x10C, 0, 31, 0), 4, "Hz", \
   "stream monitor: FPGA->GPU frames in the last second", \
   "AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameRate") \
 X(IB_MON_FRAME_RATE_MAX, "inbound_frame_rate_max", GA_RO, GA_FMT_DEC, 0, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x110, 0, 31, 0), GA_LOC(0x110, 0, 31, 0), 4, "Hz", \
   "stream monitor: highest FPGA->GPU frame rate since its reset", \
   "AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameRateMax") \
 X(IB_MON_FRAME_RATE_MIN, "inbound_frame_rate_min", GA_RO, GA_FMT_DEC, 0, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x114, 0, 31, 0), GA_LOC(0x114, 0, 31, 0), 4, "Hz", \
   "stream monitor: lowest FPGA->GPU frame rate since its reset", \
   "AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameRateMin") \
 X(IB_MON_BANDWIDTH, "inbound_bandwidth", GA_RO, GA_FMT_DEC, GA_F_U64, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x118, 0, 31, 0), GA_LOC(0x118, 0, 31, 0), 4, "bytes/s", \
   "stream monitor: FPGA->GPU bytes in the last second (64-bit)", \
   "AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].Bandwidth") \
 X(IB_MON_BANDWIDTH_MAX, "inbound_bandwidth_max", GA_RO, GA_FMT_DEC, GA_F_U64, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x120, 0, 31, 0), GA_LOC(0x120, 0, 31, 0), 4, "bytes/s", \
   "stream monitor: highest FPGA->GPU bandwidth since its reset (64-bit)", \
   "AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].BandwidthMax") \
 X(IB_MON_BANDWIDTH_MIN, "inbound_bandwidth_min", GA_RO, GA_FMT_DEC, GA_F_U64, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x128, 0, 31, 0), GA_LOC(0x128, 0, 31, 0), 4, "bytes/s", \
   "stream monitor: lowest FPGA->GPU bandwidth since its reset (64-bit)", \
   "AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].BandwidthMin") \
 X(IB_MON_FRAME_SIZE, "inbound_frame_size", GA_RO, GA_FMT_DEC, GA_F_BYTES, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x130, 0, 31, 0), GA_LOC(0x130, 0, 31, 0), 4, "bytes", \
   "stream monitor: size of the last FPGA->GPU frame", \
   "AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameSize") \
 X(IB_MON_FRAME_SIZE_MAX, "inbound_frame_size_max", GA_RO, GA_FMT_DEC, GA_F_BYTES, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x134, 0, 31, 0), GA_LOC(0x134, 0, 31, 0), 4, "bytes", \
   "stream monitor: largest FPGA->GPU frame since its reset", \
   "AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameSizeMax") \
 X(IB_MON_FRAME_SIZE_MIN, "inbound_frame_size_min", GA_RO, GA_FMT_DEC, GA_F_BYTES, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x138, 0, 31, 0), GA_LOC(0x138, 0, 31, 0), 4, "bytes", \
   "stream monitor: smallest FPGA->GPU frame since its reset", \
   "AxiGpuAsyncCore.GpuIbAxisMon.Ch[0].FrameSizeMin") \
 X(OB_MON_RESET, "outbound_monitor_reset", GA_WO, GA_FMT_DEC, GA_F_WITH_COUNT_RESET, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x200, 0, 0, 0), GA_LOC(0x200, 0, 0, 0), 4, "", \
   "write 1: clear the GPU->FPGA stream monitor (count_reset does it too)", \
   "AxiGpuAsyncCore.GpuObAxisMon.CntRst") \
 X(OB_MON_FRAME_COUNT, "outbound_frames", GA_RO, GA_FMT_DEC, GA_F_COUNTER | GA_F_U64, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x204, 0, 31, 0), GA_LOC(0x204, 0, 31, 0), 4, "frames", \
   "stream monitor: frames seen on the GPU->FPGA stream (64-bit)", \
   "AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameCnt") \
 X(OB_MON_FRAME_RATE, "outbound_frame_rate", GA_RO, GA_FMT_DEC, 0, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x20C, 0, 31, 0), GA_LOC(0x20C, 0, 31, 0), 4, "Hz", \
   "stream monitor: GPU->FPGA frames in the last second", \
   "AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameRate") \
 X(OB_MON_FRAME_RATE_MAX, "outbound_frame_rate_max", GA_RO, GA_FMT_DEC, 0, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x210, 0, 31, 0), GA_LOC(0x210, 0, 31, 0), 4, "Hz", \
   "stream monitor: highest GPU->FPGA frame rate since its reset", \
   "AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameRateMax") \
 X(OB_MON_FRAME_RATE_MIN, "outbound_frame_rate_min", GA_RO, GA_FMT_DEC, 0, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x214, 0, 31, 0), GA_LOC(0x214, 0, 31, 0), 4, "Hz", \
   "stream monitor: lowest GPU->FPGA frame rate since its reset", \
   "AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameRateMin") \
 X(OB_MON_BANDWIDTH, "outbound_bandwidth", GA_RO, GA_FMT_DEC, GA_F_U64, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x218, 0, 31, 0), GA_LOC(0x218, 0, 31, 0), 4, "bytes/s", \
   "stream monitor: GPU->FPGA bytes in the last second (64-bit)", \
   "AxiGpuAsyncCore.GpuObAxisMon.Ch[0].Bandwidth") \
 X(OB_MON_BANDWIDTH_MAX, "outbound_bandwidth_max", GA_RO, GA_FMT_DEC, GA_F_U64, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x220, 0, 31, 0), GA_LOC(0x220, 0, 31, 0), 4, "bytes/s", \
   "stream monitor: highest GPU->FPGA bandwidth since its reset (64-bit)", \
   "AxiGpuAsyncCore.GpuObAxisMon.Ch[0].BandwidthMax") \
 X(OB_MON_BANDWIDTH_MIN, "outbound_bandwidth_min", GA_RO, GA_FMT_DEC, GA_F_U64, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x228, 0, 31, 0), GA_LOC(0x228, 0, 31, 0), 4, "bytes/s", \
   "stream monitor: lowest GPU->FPGA bandwidth since its reset (64-bit)", \
   "AxiGpuAsyncCore.GpuObAxisMon.Ch[0].BandwidthMin") \
 X(OB_MON_FRAME_SIZE, "outbound_frame_size", GA_RO, GA_FMT_DEC, GA_F_BYTES, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x230, 0, 31, 0), GA_LOC(0x230, 0, 31, 0), 4, "bytes", \
   "stream monitor: size of the last GPU->FPGA frame", \
   "AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameSize") \
 X(OB_MON_FRAME_SIZE_MAX, "outbound_frame_size_max", GA_RO, GA_FMT_DEC, GA_F_BYTES, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x234, 0, 31, 0), GA_LOC(0x234, 0, 31, 0), 4, "bytes", \
   "stream monitor: largest GPU->FPGA frame since its reset", \
   "AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameSizeMax") \
 X(OB_MON_FRAME_SIZE_MIN, "outbound_frame_size_min", GA_RO, GA_FMT_DEC, GA_F_BYTES, GA_ARRAY_NONE, \
   GA_NA, GA_LOC(0x238, 0, 31, 0), GA_LOC(0x238, 0, 31, 0), 4, "bytes", \
   "stream monitor: smallest GPU->FPGA frame since its reset", \
   "AxiGpuAsyncCore.GpuObAxisMon.Ch[0].FrameSizeMin") \
 X(WRITE_ADDR_LO, "write_address_low", GA_RW, GA_FMT_HEX, GA_F_DRIVER, GA_ARRAY_WRITE, \
   GA_LOC(0x100, 0, 31, 16), GA_LOC(0x4000, 0, 31, 8), GA_LOC(0x4000, 0, 31, 8), 1, "", \
   "bus address of the write buffer, low word", \
   "AxiGpuAsyncCore.Buffer[i].RemoteWriteAddress") \
 X(WRITE_ADDR_HI, "write_address_high", GA_RW, GA_FMT_HEX, GA_F_DRIVER, GA_ARRAY_WRITE, \
   GA_LOC(0x104, 0, 31, 16), GA_LOC(0x4004, 0, 31, 8), GA_LOC(0x4004, 0, 31, 8), 1, "", \
   "bus address of the write buffer, high word", \
   "AxiGpuAsyncCore.Buffer[i].RemoteWriteAddress") \
 X(WRITE_SIZE, "write_size", GA_RW, GA_FMT_DEC, GA_F_DRIVER | GA_F_BYTES, GA_ARRAY_WRITE, \
   GA_LOC(0x108, 0, 31, 16), GA_NA, GA_NA, 1, "bytes", \
   "largest payload written into this buffer", \
   "") \
 X(READ_ADDR_LO, "read_address_low", GA_RW, GA_FMT_HEX, GA_F_DRIVER, GA_ARRAY_READ, \
   GA_LOC(0x200, 0, 31, 16), GA_LOC(0x6000, 0, 31, 8), GA_LOC(0x6000, 0, 31, 8), 1, "", \
   "bus address of the read buffer, low word", \
   "AxiGpuAsyncCore.Buffer[i].RemoteReadAddress") \
 X(READ_ADDR_HI, "read_address_high", GA_RW, GA_FMT_HEX, GA_F_DRIVER, GA_ARRAY_READ, \
   GA_LOC(0x204, 0, 31, 16), GA_LOC(0x6004, 0, 31, 8), GA_LOC(0x6004, 0, 31, 8), 1, "", \
   "bus address of the read buffer, high word", \
   "AxiGpuAsyncCore.Buffer[i].RemoteReadAddress") \
 X(FREE_LIST, "free_list", GA_WO, GA_FMT_DEC, 0, GA_ARRAY_WRITE, \
   GA_LOC(0x300, 0, 31, 4), GA_LOC(0x2000, 0, 31, 4), GA_LOC(0x2000, 0, 31, 4), 1, "", \
   "write anything: arm the write buffer (put it on the free list)", \
   "") \
 X(READ_SIZE, "read_size", GA_RW, GA_FMT_DEC, GA_F_TRIGGER | GA_F_BYTES, GA_ARRAY_READ, \
   GA_LOC(0x400, 0, 31, 4), GA_LOC(0x3000, 0, 31, 4), GA_LOC(0x3000, 0, 31, 4), 1, "bytes", \
   "bytes to send from the read buffer; every write queues one read", \
   "AxiGpuAsyncCore.Buffer[i].RemoteReadSize")
/* clang-format on */

enum ga_reg_id {
#define GA_REG_ENUM(id, ...) GA_REG_##id,
	GA_REGISTERS(GA_REG_ENUM)
#undef GA_REG_ENUM
	GA_REG_COUNT
};

struct ga_reg {
	const char *name;
	enum ga_access access;
	enum ga_format format;
	unsigned int flags;
	enum ga_array array;
	struct ga_reg_loc loc[GA_LAYOUT_COUNT];
	uint8_t min_version;
	const char *unit;
	const char *doc;
	/* The variable rogue's pyrogue tree (axi-pcie-core's AxiPcieCore)
	 * names this field, relative to AxiPcieCore ("AxiGpuAsyncCore.
	 * RxFrameCnt"; "[i]" for per-buffer rows); "" when pyrogue has none. */
	const char *pyrogue;
};

/* The table, indexed by enum ga_reg_id (defined in core/regs.c). */
extern const struct ga_reg ga_regs[GA_REG_COUNT];

/* Firmware version -> layout (latency_legacy picks the row's legacy
 * layout); GA_LAYOUT_COUNT for a version not in GA_VERSIONS, which every
 * function below then refuses. */
enum ga_layout ga_layout_for_version(unsigned int version, bool latency_legacy);
const char *ga_layout_name(enum ga_layout layout);
/* Buffers per direction the layout's address map can hold (0 for
 * GA_LAYOUT_COUNT); ga_reg_offset never goes past it, whatever
 * max_buffers says. */
unsigned int ga_layout_max_buffers(enum ga_layout layout);

/* Is register @id part of firmware @version in @layout?  Never for a
 * version above GA_VERSION_MAX. */
bool ga_reg_present(enum ga_reg_id id, enum ga_layout layout,
		    unsigned int version);

/*
 * Byte offset of instance @index of @id.  Returns 0, or -ENOENT when the
 * register is absent from the layout/version, -ERANGE when @index is not an
 * instance that exists (index >= max_buffers, or != 0 for stride-0 rows).
 */
int ga_reg_offset(enum ga_reg_id id, enum ga_layout layout, unsigned int version,
		  unsigned int index, unsigned int max_buffers, uint32_t *offset);

/*
 * The field accessor (regmap's reg_field in spirit): the one way lib, kmod
 * and the model write a field.  The value is checked before anything is
 * touched: one that does not fit the field is -ERANGE (a number outside
 * the field's range, as the library has always answered and as a file
 * under registers/ reports it; -EINVAL stays for input that is not a
 * number at all), and nothing is written.  Then the field goes into its
 * word: a strobe (GA_WO) or a whole-word field is one store, anything else
 * a read-modify-write.  Callers serialise writers of a shared word.
 */
struct ga_reg_io {
	void *ctx;
	int (*read)(void *ctx, uint32_t offset, uint32_t *word);
	int (*write)(void *ctx, uint32_t offset, uint32_t word);
};

/* @value into the bits @mask (lowest at @lsb) of *@word: 0, or -ERANGE
 * with *@word unchanged.  The step ga_field_write and the model share. */
static inline int ga_field_insert(uint32_t *word, uint32_t mask, unsigned int lsb, uint32_t value)
{
	if (value > (mask >> lsb))
		return -ERANGE;
	*word = (*word & ~mask) | (value << lsb);
	return 0;
}

/* Write @value into field @id of the word at @offset (from ga_reg_offset):
 * 0, -ERANGE (does not fit, nothing written), -ENOENT (no field in this
 * layout), or the io's error. */
int ga_field_write(const struct ga_reg_io *io, enum ga_reg_id id, enum ga_layout layout,
		   uint32_t offset, uint32_t value);
/* Read field @id of the word at @offset. */
int ga_field_read(const struct ga_reg_io *io, enum ga_reg_id id, enum ga_layout layout,
		  uint32_t offset, uint32_t *value);

/* Field helpers: extract/insert the field bits of a 32-bit word.
 * ga_reg_field_set composes a word for a value known to fit (tests, raw
 * word tools): it drops bits beyond the field; writes go through
 * ga_field_write, which refuses them. */
uint32_t ga_reg_field_mask(enum ga_reg_id id, enum ga_layout layout);
uint32_t ga_reg_field_get(enum ga_reg_id id, enum ga_layout layout, uint32_t word);
uint32_t ga_reg_field_set(enum ga_reg_id id, enum ga_layout layout, uint32_t word,
			  uint32_t value);
/* Largest value the field can hold. */
uint32_t ga_reg_field_max(enum ga_reg_id id, enum ga_layout layout);

/* Lookup by name (file name under registers/): id, or -ENOENT. */
int ga_reg_find(const char *name);

#endif /* GPUASYNC_REGS_H */
