// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The AxiVersion identity table (gpuasync/axiversion.h) and its text
 * rendering.  gpuasync/firmware.def is expanded here, once, into ga_fw_fields[]
 * with designated initializers.  Part of core/: no libc beyond ga_base.h,
 * so the few number formats are written out by hand.
 */
#include "ga_base.h"
#include "gpuasync/axiversion.h"

#define GA_FW_ROW(id_, name_, off_, words_, kind_, lsb_, msb_, access_, value_, doc_, pyrogue_)    \
	[GA_FW_##id_] = {                                                                          \
		.name = name_,                                                                     \
		.offset = off_,                                                                    \
		.words = words_,                                                                   \
		.kind = kind_,                                                                     \
		.lsb = lsb_,                                                                       \
		.msb = msb_,                                                                       \
		.access = access_,                                                                 \
		.value = value_,                                                                   \
		.doc = doc_,                                                                       \
		.pyrogue = pyrogue_,                                                               \
	},

const struct ga_fw_field ga_fw_fields[GA_FW_COUNT] = {
#define GA_DEF_FIRMWARE GA_FW_ROW
#include <gpuasync/firmware.def>
};

#undef GA_FW_ROW

static_assert(sizeof(ga_fw_fields) / sizeof(ga_fw_fields[0]) == GA_FW_COUNT,
	      "ga_fw_fields[] and enum ga_fw_id disagree");

int ga_fw_find(const char *name)
{
	unsigned int i;

	for (i = 0; name && i < GA_FW_COUNT; i++)
		if (ga_fw_fields[i].name && !strcmp(ga_fw_fields[i].name, name))
			return (int)i;
	return -ENOENT;
}

/* The bits of its word that single-word row @f covers. */
static uint32_t field_mask(const struct ga_fw_field *f)
{
	return (f->msb - f->lsb == 31 ? ~0u : ((1u << (f->msb - f->lsb + 1)) - 1)) << f->lsb;
}

uint32_t ga_fw_write_mask(uint32_t off)
{
	uint32_t mask = 0;
	unsigned int i;

	for (i = 0; i < GA_FW_COUNT; i++) {
		const struct ga_fw_field *f = &ga_fw_fields[i];

		if (f->access != GA_FWA_RW || off < f->offset || off >= f->offset + 4u * f->words)
			continue;
		if (f->words > 1)
			mask = ~0u;
		else
			mask |= field_mask(f);
	}
	return mask;
}

uint32_t ga_fw_image_word(uint32_t off)
{
	uint32_t word = 0;
	unsigned int i;

	for (i = 0; i < GA_FW_COUNT; i++)
		if (ga_fw_fields[i].words == 1 && ga_fw_fields[i].offset == off)
			word = ga_fw_put((enum ga_fw_id)i, word, ga_fw_fields[i].value);
	return word;
}

void ga_fw_emulated(uint32_t *block, const char *card, uint64_t chip)
{
	/* GitHash, least significant word first; no public build to name. */
	static const uint32_t git[5] = {0x89abcdef, 0x01234567, 0xdeadbeef, 0xcafef00d, 0x5eed5eed};
	static const char head[] = "GpuAsyncKcu1500: gpuasync emulated card, ";
	static const char tail[] = ", Built Thu Jan  1 00:00:00 UTC 2026 by gpuasync";
	const struct ga_fw_field *f = ga_fw_fields;
	char *stamp = (char *)&block[f[GA_FW_BUILD_STAMP].offset / 4];
	size_t room = 4u * f[GA_FW_BUILD_STAMP].words - sizeof(head) - sizeof(tail) + 1;
	size_t n = strlen(card) < room ? strlen(card) : room;
	uint32_t *dna = &block[f[GA_FW_DNA].offset / 4];
	uint32_t off;

	for (off = 0; off < GA_FW_SIZE; off += 4)
		block[off / 4] = ga_fw_image_word(off);
	memcpy(&block[f[GA_FW_GIT_HASH].offset / 4], git, sizeof(git));
	/* UltraScale's DNA is 96 bits, words 0-2: @chip, then a constant. */
	dna[0] = (uint32_t)chip;
	dna[1] = (uint32_t)(chip >> 32);
	dna[2] = 0x00000040;
	memcpy(stamp, head, sizeof(head) - 1);
	memcpy(stamp + sizeof(head) - 1, card, n);
	memcpy(stamp + sizeof(head) - 1 + n, tail, sizeof(tail));
}

uint32_t ga_fw_put(enum ga_fw_id id, uint32_t word, uint32_t value)
{
	const struct ga_fw_field *f;
	uint32_t mask;

	if ((unsigned int)id >= GA_FW_COUNT || ga_fw_fields[id].words != 1)
		return word;
	f = &ga_fw_fields[id];
	mask = field_mask(f);
	return (word & ~mask) | ((value << f->lsb) & mask);
}

struct out {
	char *buf;
	size_t len, n;
};

static void put_c(struct out *o, char c)
{
	if (o->n + 1 < o->len)
		o->buf[o->n] = c;
	o->n++;
}

static void put_s(struct out *o, const char *s)
{
	while (*s)
		put_c(o, *s++);
}

static void put_hex(struct out *o, uint32_t v, unsigned int digits)
{
	static const char hex[] = "0123456789abcdef";

	while (digits--)
		put_c(o, hex[(v >> (digits * 4)) & 0xf]);
}

static void put_dec(struct out *o, uint32_t v)
{
	char tmp[10];
	unsigned int k = 0;

	do {
		tmp[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k)
		put_c(o, tmp[--k]);
}

int ga_fw_format(enum ga_fw_id id, const uint32_t *words, char *buf, size_t len)
{
	const struct ga_fw_field *f;
	struct out o = {buf, len, 0};
	uint32_t v, any = 0;
	unsigned int w, b;

	if ((unsigned int)id >= GA_FW_COUNT || !buf || !len)
		return -EINVAL;
	f = &ga_fw_fields[id];
	v = words[0] >> f->lsb;
	if (f->msb - f->lsb < 31)
		v &= (1u << (f->msb - f->lsb + 1)) - 1;
	switch (f->kind) {
	case GA_FWK_HEX:
		put_s(&o, "0x");
		put_hex(&o, v, 8);
		break;
	case GA_FWK_HEX3:
		put_s(&o, "0x");
		put_hex(&o, v, 3);
		break;
	case GA_FWK_DEC:
		put_dec(&o, v);
		break;
	case GA_FWK_GIT:
		for (w = 0; w < f->words; w++)
			any |= words[w];
		if (!any) {
			put_s(&o, "dirty");
			break;
		}
		for (w = f->words; w-- > 0;)
			put_hex(&o, words[w], 8);
		break;
	case GA_FWK_WIDE:
		put_s(&o, "0x");
		for (w = f->words; w-- > 0;)
			put_hex(&o, words[w], 8);
		break;
	case GA_FWK_STRING: {
		size_t end;

		/* bytes in address order, up to the first NUL */
		for (w = 0; w < f->words; w++) {
			for (b = 0; b < 4; b++) {
				char c = (char)(words[w] >> (8 * b));

				if (!c)
					goto padded;
				put_c(&o, (c >= 0x20 && c < 0x7f) ? c : '?');
			}
		}
	padded:
		/* and without the space padding */
		end = o.n < o.len ? o.n : o.len - 1;
		while (end && buf[end - 1] == ' ')
			end--;
		if (o.n < o.len)
			o.n = end;
		break;
	}
	default:
		return -EINVAL;
	}
	if (o.n >= o.len) {
		buf[o.len - 1] = '\0';
		return -ENOSPC;
	}
	buf[o.n] = '\0';
	return (int)o.n;
}
