/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Recorded runs (docs/record.md): a file of the frames a mount saw, one
 * record per frame, that the simulated card can play back into its write
 * buffers.  A framed binary, little-endian, version 1:
 *
 *   file header, 64 bytes:
 *     +0  magic "GARUN\r\n\032"      +8  u32 version (1)
 *     +12 u32 header bytes (64)      +16 u32 record header bytes (96)
 *     +20 u32 dma_data_bytes of the card recorded (0: unknown)
 *     +24 u64 CLOCK_REALTIME ns when the file was made
 *     +32 u32 the card's firmware version   +36 u32 flags (1: synthesised)
 *     +40 char[20] source, NUL-padded ("sim", "datadev", "synth", ...)
 *     +60 u32 CRC-32 of bytes 0..59
 *   then records, each a multiple of 8 bytes:
 *     +0  u32 magic "GAFR"           +4  u32 record bytes, all of it
 *     +8  u64 record number in the file, from 0
 *     +16 u8[8] the frame's descriptor as the card wrote it (gpuasync/frame.h)
 *     +24 u32 payload bytes stored   +28 u16 sub-frames   +30 u16 flags
 *     +32 u64 CLOCK_REALTIME ns      +40 u64 CLOCK_MONOTONIC ns (when seen)
 *     +48 u64 frames the mount had seen, this one included
 *     +56 u32 rx_frame_count when seen   +60 u32 write buffer index
 *     +64 u64 TimingHeader word 0 (pulse ID 55:0, control 63:56)
 *     +72 u32 its nanoseconds        +76 u32 its seconds
 *     +80 u32 payload offset of the TimingHeader
 *     +84 u8 batch result (enum ga_batch_result; 5: not a batch)
 *     +92 u32 CRC-32 (zlib's) of the record with these 4 bytes left out
 *     +96 sub-frames x 12 bytes: u32 offset, u32 size, u8 tdest,
 *         u8 tuser_first, u8 tuser_last, u8 0
 *     then the payload, then zeros to a multiple of 8
 *
 * A record is written whole or the file ends in it: a reader takes every
 * complete record and reports where the last one ends (a recorder killed
 * with SIGKILL leaves such a file).
 */
#ifndef GPUASYNC_RECORD_H
#define GPUASYNC_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuasync/batch.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_REC_VERSION	    1u
#define GA_REC_FILE_BYTES   64u
#define GA_REC_HEADER_BYTES 96u
#define GA_REC_SUB_BYTES    12u
#define GA_REC_MAX_PAYLOAD  (1u << 30)
#define GA_REC_MAGIC	    "GARUN\r\n\032"
#define GA_REC_FRAME_MAGIC  0x52464147u /* "GAFR" */
#define GA_REC_F_TIMING	    1u		/* pulse_ctl, th_time_*, th_off valid */
#define GA_REC_F_CUT	    2u		/* the frame was longer than its buffer */
#define GA_REC_FILE_SYNTH   1u
#define GA_REC_BATCH_NONE   5u /* GA_BATCH_NOT_BATCH: not a batch */

struct ga_rec_file {
	uint32_t version, dma_data_bytes, card_version, flags;
	uint64_t created_ns;
	char source[20];
};

struct ga_rec_frame {
	uint64_t number;
	uint8_t desc[8];
	uint32_t payload_bytes;
	uint16_t nsub, flags;
	uint64_t realtime_ns, monotonic_ns, seen;
	uint32_t rx_frame_count, buffer;
	uint64_t pulse_ctl;
	uint32_t th_time_ns, th_time_s, th_off;
	uint8_t batch;
	struct ga_batch_sub sub[GA_BATCH_MAX_SUB];
	const uint8_t *payload; /* payload_bytes; a reader's own buffer */
};

/* Encode the file header into @out. */
void ga_rec_file_encode(const struct ga_rec_file *f, uint8_t out[GA_REC_FILE_BYTES]);
/* Bytes the record of @f takes. */
size_t ga_rec_frame_bytes(const struct ga_rec_frame *f);
/* Encode @f (payload included) into @out of ga_rec_frame_bytes(f) bytes. */
void ga_rec_frame_encode(const struct ga_rec_frame *f, uint8_t *out);
/* What the DRP reads in a payload (@len bytes behind descriptor @desc): the
 * TimingHeader (bare, 32 bytes, or a batch's sub-frame 0) and the batch's
 * sub-frames, into @f's derived fields; the rules of the mount's frames/. */
void ga_rec_derive(struct ga_rec_frame *f, const uint8_t *payload, uint32_t len);

/* What a replay's schedule and live rewrite need of a whole file, made
 * frame by frame (ga_rec_extent_add, from a zeroed struct): frames, their
 * first and last CLOCK_MONOTONIC times, the lowest and highest pulse ID. */
struct ga_rec_extent {
	uint64_t frames, first_ns, last_ns, pulse_min, pulse_max;
};
void ga_rec_extent_add(struct ga_rec_extent *e, const struct ga_rec_frame *f);
/* How long one play lasts: the recorded span and one mean frame interval. */
uint64_t ga_rec_play_ns(const struct ga_rec_extent *e);
/* Pulse IDs one play covers (0 when no frame had a TimingHeader): what a
 * live replay adds to them at each play. */
uint64_t ga_rec_pulse_span(const struct ga_rec_extent *e);

/* A replay made to look live: the TimingHeader at @th (a frame's payload +
 * th_off, of a frame with GA_REC_F_TIMING) gets its pulse ID plus
 * @pulse_add (so pulse IDs go on across plays) and the host's
 * CLOCK_REALTIME now as its time stamp. */
void ga_rec_live(uint8_t *th, uint64_t pulse_add);

/* Reading a file, one record at a time in bounded memory. */
struct ga_rec_reader;
/* Open @path and check its header: 0, or -errno with the reason in
 * ga_last_error (-EBADMSG: not such a file, -EPROTONOSUPPORT: a newer version). */
int ga_rec_open(const char *path, struct ga_rec_reader **r, struct ga_rec_file *info);
/* The next record into @f (its payload valid until the next call): 1, 0 at
 * the end of the file, -EBADMSG for a bad or truncated record (ga_last_error
 * names its number and byte offset), another -errno from reading. */
int ga_rec_next(struct ga_rec_reader *r, struct ga_rec_frame *f);
/* Back to the first record. */
int ga_rec_rewind(struct ga_rec_reader *r);
/* Byte offset where the next record starts. */
uint64_t ga_rec_offset(const struct ga_rec_reader *r);
void ga_rec_close(struct ga_rec_reader *r);

#ifdef __cplusplus
}
#endif
#endif /* GPUASYNC_RECORD_H */
