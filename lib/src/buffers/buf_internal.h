/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the buffer files (buf*.c) share: small helpers and the functions one
 * of them defines for the others.  Not installed.  Unless a comment says
 * otherwise, everything here is called with dev->lock held.
 */
#ifndef GA_BUF_INTERNAL_H
#define GA_BUF_INTERNAL_H

#include "internal.h"

static inline bool dir_valid(enum ga_dir dir)
{
	return dir == GA_DIR_WRITE || dir == GA_DIR_READ;
}

static inline const char *dir_name(enum ga_dir dir)
{
	return dir == GA_DIR_WRITE ? "write" : "read";
}

/* Where the payload starts: V1 read buffers are read from their base (no
 * header, no completion word); everything else has the header area. */
static inline size_t payload_offset(const struct ga_dev *dev, enum ga_dir dir)
{
	if (dir == GA_DIR_READ && dev->info.layout == GA_LAYOUT_V1)
		return 0;
	return dev->info.dma_data_bytes;
}

static inline bool is_v4(const struct ga_dev *dev)
{
	return dev->info.layout != GA_LAYOUT_V1;
}

static inline uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline int buf_mem_read(struct ga_buf *b, size_t off, void *dst, size_t len)
{
	return b->dev->mem->read(b->dev->mem_ctx, &b->mem, off, dst, len);
}

static inline int buf_mem_write(struct ga_buf *b, size_t off, const void *src, size_t len)
{
	return b->dev->mem->write(b->dev->mem_ctx, &b->mem, off, src, len);
}

/* buf_state.c */
bool buf_state_needs_header(const struct ga_buf *b);
enum ga_buf_state buf_state_from_header_locked(struct ga_buf *b, const uint8_t raw[8], int read_rc);
enum ga_buf_state buf_state_locked(struct ga_buf *b);
void buf_info_fill_locked(struct ga_buf *b, struct ga_buf_info *info);
void buf_check_registration_locked(struct ga_dev *dev);

/* buf_card.c */
void buf_zero_addresses(struct ga_dev *dev, enum ga_dir dir, unsigned int index);
int buf_read_enables(struct ga_dev *dev, uint32_t *wr, uint32_t *rd);
int buf_register_locked(struct ga_dev *dev, struct ga_buf *b);
void buf_free(struct ga_dev *dev, struct ga_buf *b);
/* Before memory goes: until no RDMA is in flight (V5 active bits; 50 ms
 * before V5 when an engine was on). */
void buf_wait_idle(struct ga_dev *dev, bool was_on);

/* buf_remove_one.c: frees the last buffer of @dir */
int buf_rebuild_without_last(struct ga_dev *dev, enum ga_dir dir);

#endif
