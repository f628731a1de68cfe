// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * settings: save and restore a card's settings, as rogue users do with
 * SaveConfig/LoadConfig.
 *
 *   $ cat /mnt/gpuasync/settings > card0.ini
 *   $ cat card0.ini > /mnt/gpuasync/settings          # or -o settings=card0.ini
 *
 * A setting is a register field a user may choose and that stays until
 * changed: present on the running firmware, not an array, read-write,
 * neither programmed by the driver (counts, addresses, payload limit), nor a
 * trigger (read sizes, count_reset), nor run control (the engine enables,
 * which start and stop DMA).  All of them come from the register table.
 *
 * A read renders every setting as ini text in table order, with comments
 * naming the firmware version and layout.  A write is applied staged:
 *  1. parse and validate the whole text (unknown, read-only, absent on this
 *     firmware, repeated or out-of-range entries refuse the whole write
 *     with EINVAL/ERANGE and an `errors` line naming the line);
 *  2. write the given settings in table order (the order of docs/registers.md);
 *  3. read every one back; if one does not hold what was written, or a write
 *     failed, write back what every applied setting held before (EIO).
 * Steps 2 and 3 (with the reads of the values held before) hold
 * fs->reg_store_lock, which every register store through the mount takes:
 * another client's echo into a register waits for the whole write instead
 * of landing between apply and read-back, where it made the write fail
 * and be rolled back over the echo (issue 24 item 4).
 * A file saved from another firmware version is applied setting by
 * setting: fields keep their meaning across versions under the same name
 * (the table maps a name to each layout's location), so a name the running
 * firmware also has means the same thing, and a name it lacks is refused.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

#define staged fs_staged

bool fs_is_setting(const struct fs *fs, enum ga_reg_id id)
{
	return ga_reg_present(id, fs->info.layout, fs->info.version) && ga_reg_is_setting(id);
}

/* A card whose link is down reads all ones: no settings to save, and none
 * to apply (as the device/firmware files). */
int fs_settings_link_check(struct fs *fs)
{
	int up = ga_dev_link(fs->dev);

	if (up == 0)
		return fs_err(-ENOLINK, "settings: the card's link is down (its registers read "
					"all ones): nothing read, nothing written; try again when "
					"device/link reads up");
	return up < 0 ? up : 0;
}

static int show_settings(struct fs_ctx *c, struct strbuf *sb)
{
	struct fs *fs = c->fs;
	int ret = fs_settings_link_check(fs);

	if (ret < 0)
		return ret;
	ret = sb_printf(
		sb,
		"# gpuasyncfs settings of %s: GpuAsyncCore firmware version %u, "
		"layout %s\n"
		"# Restore: cat FILE > MOUNTPOINT/settings, or mount with -o settings=FILE\n"
		"[registers]\n",
		fs->cfg.device, fs->info.version, ga_layout_name(fs->info.layout));

	for (int id = 0; id < GA_REG_COUNT && !ret; id++) {
		uint32_t v;

		if (!fs_is_setting(fs, (enum ga_reg_id)id))
			continue;
		ret = ga_reg_read(fs->dev, (enum ga_reg_id)id, 0, &v);
		if (ret < 0)
			return ret;
		ret = sb_printf(sb, "# %s\n", ga_regs[id].doc);
		if (!ret)
			ret = sb_printf(
				sb, ga_regs[id].format == GA_FMT_HEX ? "%s = 0x%x\n" : "%s = %u\n",
				ga_regs[id].name, v);
	}
	return ret ? -ENOMEM : 0;
}

static size_t trim(const char **s, size_t len)
{
	while (len && isspace((unsigned char)**s)) {
		(*s)++;
		len--;
	}
	while (len && isspace((unsigned char)(*s)[len - 1]))
		len--;
	return len;
}

/* One line of the text: nothing, a section, or a setting staged into @st. */
static int parse_line(struct fs *fs, const char *s, size_t len, unsigned int line,
		      struct staged *st, unsigned int *n)
{
	const char *eq, *val, *end;
	size_t klen, vlen;
	uint64_t v;
	int id, ret;

	len = trim(&s, len);
	if (!len || *s == '#' || *s == ';')
		return 0;
	if (*s == '[') {
		if (len == strlen("[registers]") && !strncmp(s, "[registers]", len))
			return 0;
		return fs_err(-EINVAL, "settings line %u: unknown section %.*s (only [registers])",
			      line, (int)len, s);
	}
	end = s + len;
	eq = memchr(s, '=', len);
	if (!eq)
		return fs_err(-EINVAL, "settings line %u: '%.*s' is not 'name = value'", line,
			      (int)len, s);
	klen = (size_t)(eq - s);
	klen = trim(&s, klen);
	val = eq + 1;
	vlen = trim(&val, (size_t)(end - val));
	{
		char key[64];

		snprintf(key, sizeof(key), "%.*s", (int)(klen < sizeof(key) ? klen : 0), s);
		id = ga_reg_find(key);
	}
	if (id < 0)
		return fs_err(-EINVAL, "settings line %u: unknown setting '%.*s'", line, (int)klen,
			      s);
	if (!ga_reg_present((enum ga_reg_id)id, fs->info.layout, fs->info.version))
		return fs_err(-EINVAL,
			      "settings line %u: '%s' does not exist on firmware version %u "
			      "(layout %s)",
			      line, ga_regs[id].name, fs->info.version,
			      ga_layout_name(fs->info.layout));
	if (!fs_is_setting(fs, (enum ga_reg_id)id))
		return fs_err(-EINVAL,
			      "settings line %u: '%s' is not a setting (read-only, programmed by "
			      "the driver, a trigger or an engine enable)",
			      line, ga_regs[id].name);
	for (unsigned int i = 0; i < *n; i++)
		if (st[i].id == (enum ga_reg_id)id)
			return fs_err(-EINVAL, "settings line %u: '%s' already set on line %u",
				      line, ga_regs[id].name, st[i].line);
	ret = fs_parse_u64(val, vlen, ga_reg_field_max((enum ga_reg_id)id, fs->info.layout),
			   ga_regs[id].flags & GA_F_BYTES, &v);
	if (ret < 0)
		return fs_err(ret, "settings line %u: '%s = %.*s': %s", line, ga_regs[id].name,
			      (int)vlen, val,
			      ret == -ERANGE ? "out of range for the field" : "not a number");
	st[*n] = (struct staged){.id = (enum ga_reg_id)id, .value = (uint32_t)v, .line = line};
	(*n)++;
	return 0;
}

/* Table order: sort the staged settings by register id. */
static int by_id(const void *a, const void *b)
{
	return (int)((const struct staged *)a)->id - (int)((const struct staged *)b)->id;
}

/* Steps 2 and 3 of a settings write, under fs->reg_store_lock: no other
 * register store through the mount lands between reading the old values
 * and the last read-back (or roll-back). */
static int apply_locked(struct fs *fs, struct staged *st, unsigned int n)
{
	unsigned int applied = 0;
	int ret = fs_settings_link_check(fs);

	if (ret < 0)
		return ret;
	for (unsigned int i = 0; i < n; i++) {
		ret = ga_reg_read(fs->dev, st[i].id, 0, &st[i].old);
		if (ret < 0)
			return fs_err(ret, "settings: cannot read '%s' before changing it",
				      ga_regs[st[i].id].name);
	}
	for (; applied < n; applied++) {
		ret = ga_reg_write(fs->dev, st[applied].id, 0, st[applied].value);
		if (ret < 0)
			break;
	}
	if (ret >= 0) {
		for (unsigned int i = 0; i < n; i++) {
			uint32_t now = 0;

			if (ga_reg_read(fs->dev, st[i].id, 0, &now) < 0 || now != st[i].value) {
				ret = fs_err(-EIO,
					     "settings line %u: '%s' reads back 0x%x after writing "
					     "0x%x: "
					     "every setting restored",
					     st[i].line, ga_regs[st[i].id].name, now, st[i].value);
				break;
			}
		}
	} else {
		ret = fs_err(ret, "settings line %u: writing '%s' failed: every setting restored",
			     st[applied].line, ga_regs[st[applied].id].name);
	}
	if (ret < 0) /* roll back what was applied, newest first */
		while (applied--)
			ga_reg_write(fs->dev, st[applied].id, 0, st[applied].old);
	return ret;
}

int fs_store_settings(struct fs_ctx *c, const char *buf, size_t len)
{
	struct staged st[GA_REG_COUNT];
	struct fs *fs = c->fs;
	unsigned int n = 0, line = 1;
	const char *p = buf, *end = buf + len;
	int ret = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (memchr(p, '\0', l))
			return fs_err(-EINVAL, "settings line %u: contains a NUL byte", line);
		ret = parse_line(fs, p, l, line, st, &n);
		if (ret < 0)
			return ret;
		p += l + (nl ? 1 : 0);
		line++;
	}
	if (c->check_only)
		return fs_settings_link_check(fs);
	return fs_settings_commit(fs, st, n);
}

int fs_settings_commit(struct fs *fs, struct fs_staged *st, unsigned int n)
{
	int ret;

	qsort(st, n, sizeof(st[0]), by_id);
	pthread_mutex_lock(&fs->reg_store_lock);
	ret = apply_locked(fs, st, n);
	pthread_mutex_unlock(&fs->reg_store_lock);
	return ret;
}

/* clang-format off */
const struct fs_node fs_settings_rows[] = {
	{ .name = "settings", .parent = FS_D_ROOT, .dir = FS_D_NONE, .mode = 0644, .flags = FS_SIZED,
	  .show = show_settings, .store = fs_store_settings, .reg = -1,
	  .doc = "the card's settings as ini text; writing such a text applies it whole or not at all" },
};
const unsigned int fs_settings_nrows = sizeof(fs_settings_rows) / sizeof(fs_settings_rows[0]);
/* clang-format on */
