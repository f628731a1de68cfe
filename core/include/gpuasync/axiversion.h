/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The card's firmware identity: SURF's AxiVersion block at BAR0 + 0x20000
 * (docs/firmware.md §2.1; layout of surf's
 * python/surf/axi/_AxiVersion.py), as one table like the register table.
 *
 * gpuasync/firmware.def is the only place that knows an AxiVersion offset.
 * It expands into the enum of identity ids and the table of struct
 * ga_fw_field rows; the daemon makes device/firmware/<name> of each row,
 * the README lists them, the simulated and emulated cards fill them.
 *
 * Row columns: id, "name", offset (bytes from the AxiVersion base), words
 * (32-bit words the value spans, least significant first), kind (how the
 * words become text), lsb, msb (for single-word fields), access (GA_FWA_RO
 * identity, or GA_FWA_RW: a word the firmware keeps as written, 0 at
 * power-up as in surf's AxiVersion), value (what the field holds in the
 * image the emulated cards model, docs/firmware.md §2.5; GA_FW_CARD where
 * ga_fw_emulated() or the card fills it: live, per card or several words), "one-line
 * doc", "pyrogue variable" (relative to axi-pcie-core's AxiPcieCore, whose
 * PcieAxiVersion extends surf's AxiVersion with the userValues names);
 * NULL where pyrogue has no variable for the word.
 *
 * The emulated cards (library and kernel) start from the table's values
 * (ga_fw_image_word) and keep a write only in the bits of an RW row
 * (ga_fw_write_mask); everything else in the block is identity and ignores
 * writes, as on the card.  AxiVersion's reload and reset controls
 * (0x100-0x10C) are no rows: nothing here may reload or reset a card, so
 * the emulated cards drop writes there and read 0 (power-up).
 *
 * This header is plain C usable from the kernel (kmod/) too.
 */
#ifndef GPUASYNC_AXIVERSION_H
#define GPUASYNC_AXIVERSION_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stddef.h>
#include <stdint.h>
#endif

/* BAR0 offset of the AxiVersion block, and the span the table reaches. */
#define GA_FW_BASE 0x20000u
#define GA_FW_SIZE 0x1000u

enum ga_fw_access {
	GA_FWA_RO, /* identity: writes are ignored */
	GA_FWA_RW, /* kept as written (ScratchPad) */
};

/* The value column of a row the emulated cards fill themselves. */
#define GA_FW_CARD 0u

/* DMA_CLK_FREQ_C of the image the emulated cards model (firmware.def's
 * dma_clock_hz row), so their clock, and the clock the library assumes
 * for a card whose AxiVersion reports none: 250 MHz, 4 ns per cycle. */
#define GA_DMA_CLOCK_HZ_DEFAULT 250000000u

enum ga_fw_kind {
	GA_FWK_HEX,    /* one field, "0x%08x" */
	GA_FWK_HEX3,   /* one field, "0x%03x" (hardware type, 12 bits) */
	GA_FWK_DEC,    /* one field, decimal */
	GA_FWK_GIT,    /* 160-bit SHA-1 as 40 hex digits; all zero: "dirty" */
	GA_FWK_WIDE,   /* a wide number: "0x" and 8 hex digits per word */
	GA_FWK_STRING, /* bytes of text, NUL- or space-padded */
};

/* The rows: gpuasync/firmware.def (GA_DEF_FIRMWARE(...) each). */

enum ga_fw_id {
#define GA_FW_ENUM(id, ...) GA_FW_##id,
#define GA_DEF_FIRMWARE GA_FW_ENUM
#include <gpuasync/firmware.def>
#undef GA_FW_ENUM
	GA_FW_COUNT
};

struct ga_fw_field {
	const char *name;
	uint16_t offset; /* from GA_FW_BASE */
	uint8_t words;
	uint8_t kind; /* enum ga_fw_kind */
	uint8_t lsb, msb;
	uint8_t access; /* enum ga_fw_access */
	uint32_t value; /* the modelled image's field value (single-word rows) */
	const char *doc;
	const char *pyrogue; /* "AxiVersion.GitHash", or NULL */
};

/* The table, indexed by enum ga_fw_id (core/axiversion.c). */
extern const struct ga_fw_field ga_fw_fields[GA_FW_COUNT];

/*
 * The bits of the AxiVersion word at @off (from GA_FW_BASE) that a write
 * changes on the card: those of the RW rows there, 0 where the word is
 * identity or no row's.  What the emulated cards apply a write through.
 */
uint32_t ga_fw_write_mask(uint32_t off);

/*
 * The AxiVersion word at @off (from GA_FW_BASE) as the modelled image holds
 * it at power-up: the value column of every single-word row there, each at
 * its bits; 0 where no row gives one.  What the emulated cards start from.
 */
uint32_t ga_fw_image_word(uint32_t off);

/*
 * The whole AxiVersion block (GA_FW_SIZE / 4 words) of an emulated card of
 * the modelled image: every ga_fw_image_word(), the image's git hash (one
 * build: the same on every emulated card), a DNA of @chip (unique per
 * card, as per chip) and a build stamp whose server part names @card
 * ("gpuasync.ko").  The caller then fills what its card measures.
 */
void ga_fw_emulated(uint32_t *block, const char *card, uint64_t chip);

/* @word with row @id's bits replaced by @value (single-word rows). */
uint32_t ga_fw_put(enum ga_fw_id id, uint32_t word, uint32_t value);

/* Longest text a row renders to (build stamp), NUL included. */
#define GA_FW_TEXT_MAX 260u

/* Lookup by name (file name under device/firmware/): id, or -ENOENT. */
int ga_fw_find(const char *name);

/*
 * Render row @id from its @words (ga_fw_fields[id].words of them, least
 * significant first, as read from offset, offset + 4, ...) into @buf of
 * @len bytes, without a newline.  Returns the length, or -ENOSPC.
 */
int ga_fw_format(enum ga_fw_id id, const uint32_t *words, char *buf, size_t len);

#endif /* GPUASYNC_AXIVERSION_H */
