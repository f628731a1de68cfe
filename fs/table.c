/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The file table and the inode scheme: fs_table_build() joins the parts
 * main.c lists, once at mount, keeping what the running card has; inode
 * numbers are computed from (row, buffer index, generation) and mapped back
 * by fs_node_of(); modes, paths and the README come from the rows.  Nothing
 * here talks to FUSE or runs a handler: tree.c's operations call these, and
 * values.c runs handlers.  See fs.h for the row format.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"

/* ---- the table --------------------------------------------------------------- */

bool fs_dir_per_buffer(enum fs_dir d, enum ga_dir *dir)
{
	switch (d) {
	case FS_D_WBUF:
	case FS_D_WLAT:
		*dir = GA_DIR_WRITE;
		return true;
	case FS_D_RBUF:
	case FS_D_RLAT:
		*dir = GA_DIR_READ;
		return true;
	default:
		return false;
	}
}

bool fs_row_per_buffer(const struct fs_node *n, enum ga_dir *dir)
{
	return fs_dir_per_buffer((n->flags & FS_DYNNAME) ? n->dir : n->parent, dir);
}

bool fs_dir_is_collection(enum fs_dir d)
{
	return d == FS_D_BUFFERS || d == FS_D_READ_BUFFERS;
}

static bool has_child(const struct fs_node *rows, unsigned int n, enum fs_dir d)
{
	for (unsigned int i = 0; i < n; i++)
		if (rows[i].parent == d)
			return true;
	return false;
}

int fs_table_build(struct fs *fs, const struct fs_part *parts, unsigned int nparts)
{
	unsigned int cap = FS_ROWS_MAX * 2, n = 0, kept, fixed = 0;
	struct fs_node *all = calloc(cap, sizeof(*all));
	int ret = 0;
	bool dropped;

	if (!all)
		return -ENOMEM;
	for (unsigned int p = 0; p < nparts; p++)
		fixed += parts[p].nrows;
	/* Generated rows get the room the static ones leave. */
	for (unsigned int p = 0; p < nparts; p++) {
		if (parts[p].generate) {
			ret = parts[p].generate(fs, all + n, cap - n - fixed);
			if (ret < 0)
				goto out;
			n += (unsigned int)ret;
		}
		for (unsigned int i = 0; i < parts[p].nrows; i++)
			all[n++] = parts[p].rows[i];
		fixed -= parts[p].nrows;
	}

	/* Rows that exist once are kept or dropped now (is_visible); per-buffer
	 * rows are checked again for each buffer at lookup.  Every text file
	 * with a value reports its real length (FS_SIZED): tail, less +G and
	 * wc -c trust st_size, and a sysfs page (4096) cut pyrogue's 6093 bytes
	 * short. */
	kept = 0;
	for (unsigned int i = 0; i < n; i++) {
		enum ga_dir d;

		if (all[i].show && !(all[i].flags & FS_BINARY))
			all[i].flags |= FS_SIZED;

		if (all[i].visible && !fs_row_per_buffer(&all[i], &d) &&
		    !all[i].visible(fs, &all[i], 0))
			continue;
		all[kept++] = all[i];
	}
	n = kept;
	/* A directory with nothing in it is absent (e.g. read latency on V1). */
	do {
		dropped = false;
		kept = 0;
		for (unsigned int i = 0; i < n; i++) {
			if (i && all[i].dir != FS_D_NONE && !fs_dir_is_collection(all[i].dir) &&
			    !has_child(all, n, all[i].dir)) {
				dropped = true;
				continue;
			}
			all[kept++] = all[i];
		}
		n = kept;
	} while (dropped);

	if (n > FS_ROWS_MAX) {
		ret = -E2BIG;
		goto out;
	}
	for (int d = 0; d < FS_D_COUNT; d++)
		fs->dir_row[d] = -1;
	for (unsigned int i = 0; i < n; i++) {
		fs->rows[i] = all[i];
		if (fs->rows[i].name_store[0])
			fs->rows[i].name = fs->rows[i].name_store;
		if (fs->rows[i].dir != FS_D_NONE)
			fs->dir_row[fs->rows[i].dir] = (int)i;
	}
	fs->nrows = n;
	ret = 0;
out:
	free(all);
	return ret;
}

uint64_t fs_ino(const struct fs *fs, unsigned int row, unsigned int idx)
{
	enum ga_dir d;

	/* Per-buffer nodes: the buffer's generation is part of the number, so
	 * a buffer made again never shares inode numbers with the removed one
	 * (whose directory a shell may still be in: ENOENT there, not EIO). */
	if (fs_row_per_buffer(&fs->rows[row], &d))
		return 1 + row +
		       (uint64_t)FS_ROWS_MAX *
			       (idx + 1 + (uint64_t)(GA_MAX_BUFFERS + 1) * fs->slots[d][idx].gen);
	return 1 + row;
}

/* Is row @r there for buffer @idx?  A per-buffer directory is there when
 * something in it is (buffers/1/latency/ is absent on V4). */
bool fs_node_visible(struct fs *fs, unsigned int r, unsigned int idx)
{
	const struct fs_node *n = &fs->rows[r];

	if (n->visible && !n->visible(fs, n, idx))
		return false;
	if (n->dir != FS_D_NONE && !(n->flags & FS_DYNNAME) && r) {
		enum ga_dir d;

		if (!fs_row_per_buffer(n, &d))
			return true;
		for (unsigned int i = 0; i < fs->nrows; i++)
			if (fs->rows[i].parent == n->dir && fs_node_visible(fs, i, idx))
				return true;
		return false;
	}
	return true;
}

/* Inode -> row and buffer index; -ENOENT for numbers that name nothing
 * now (a removed buffer's files). */
int fs_node_of(struct fs *fs, fuse_ino_t ino, unsigned int *row, unsigned int *idx)
{
	uint64_t v, slot, gen;
	enum ga_dir d;
	bool per;

	if (ino == 0)
		return -ENOENT;
	v = ino - 1;
	*row = (unsigned int)(v % FS_ROWS_MAX);
	slot = (v / FS_ROWS_MAX) % (GA_MAX_BUFFERS + 1);
	gen = (v / FS_ROWS_MAX) / (GA_MAX_BUFFERS + 1);
	if (*row >= fs->nrows)
		return -ENOENT;
	per = fs_row_per_buffer(&fs->rows[*row], &d);
	if (per != (slot != 0) || (!per && gen))
		return -ENOENT;
	*idx = per ? (unsigned int)(slot - 1) : 0;
	if (per && (gen != fs->slots[d][*idx].gen || !ga_buf_get(fs->dev, d, *idx) ||
		    !fs_node_visible(fs, *row, *idx)))
		return -ENOENT; /* removed, or an earlier incarnation of it */
	return 0;
}

unsigned int fs_mode(const struct fs *fs, const struct fs_node *n)
{
	unsigned int wmode = fs->cfg.mode & 0777;
	/* an observer mount (read-only) shows no write bits */
	unsigned int keep = fs->cfg.observe ? 07555 : 07777;

	if (n->dir != FS_D_NONE)
		return S_IFDIR |
		       ((fs_dir_is_collection(n->dir) ? 0555 | (wmode & 0222) : 0555) & keep);
	switch (n->mode) {
	case 0644:
		return S_IFREG | (wmode & keep); /* writable files: [access] mode */
	case 0200:
		return S_IFREG | (wmode & 0222 & keep);
	default:
		return S_IFREG | (n->mode & keep); /* 0444, and raw's 0600 */
	}
}

int fs_path(const struct fs *fs, const struct fs_node *n, unsigned int idx, char *buf, size_t len)
{
	const char *parts[8];
	char num[16];
	int np = 0, off = 0;

	while (n && n->parent != FS_D_NONE && np < 8) {
		if (n->flags & FS_DYNNAME) {
			if (idx == UINT_MAX)
				snprintf(num, sizeof(num), "<i>");
			else
				snprintf(num, sizeof(num), "%u", idx);
			parts[np++] = num;
		} else {
			parts[np++] = n->name;
		}
		n = fs->dir_row[n->parent] >= 0 ? &fs->rows[fs->dir_row[n->parent]] : NULL;
	}
	buf[0] = '\0';
	while (np-- > 0 && off < (int)len)
		off += snprintf(buf + off, len - (size_t)off, "%s%s", parts[np], np ? "/" : "");
	return off;
}

/* ---- README ------------------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append @n lines sorted, freeing them and the array; @ret an earlier error. */
static int put_sorted(struct strbuf *sb, char **lines, unsigned int n, int ret)
{
	qsort(lines, n, sizeof(*lines), cmp_str);
	for (unsigned int i = 0; i < n; i++) {
		sb_puts(sb, lines[i]);
		free(lines[i]);
	}
	free(lines);
	return ret ? ret : (sb->oom ? -ENOMEM : 0);
}

/* One line per node of the table, sorted by path; per-buffer nodes appear
 * once with <i> and as they exist for buffer 0. */
int fs_render_readme(struct fs *fs, struct strbuf *sb)
{
	char **lines = calloc(fs->nrows, sizeof(*lines));
	unsigned int n = 0;
	int ret = 0;

	if (!lines)
		return -ENOMEM;
	sb_printf(sb, "# gpuasyncfs %s on %s: %s backend, firmware version %u (layout %s)\n",
		  GPUASYNC_VERSION_STRING, fs->info.path, fs->info.backend, fs->info.version,
		  ga_layout_name(fs->info.layout));
	sb_printf(sb, "# Text files hold one value; write one value to change it.  "
		      "poll(POLLPRI) on a live file wakes when its value changes.\n");
	for (unsigned int r = 1; r < fs->nrows; r++) {
		const struct fs_node *nd = &fs->rows[r];
		enum ga_dir d;
		char path[256];

		if (fs_row_per_buffer(nd, &d) && !(nd->flags & FS_DYNNAME) && nd->visible &&
		    !nd->visible(fs, nd, 0))
			continue;
		fs_path(fs, nd, UINT_MAX, path, sizeof(path));
		if (asprintf(&lines[n], "%-38s %s\n",
			     nd->dir != FS_D_NONE ? strcat(path, "/") : path,
			     nd->doc ? nd->doc : "") < 0) {
			ret = -ENOMEM;
			break;
		}
		n++;
	}
	return put_sorted(sb, lines, n, ret);
}

/* ---- pyrogue names ----------------------------------------------------------------------- */

/* The pyrogue variable a row stands for (ga_regs[] and ga_fw_fields[]
 * carry it), or NULL. */
static const char *row_pyrogue(const struct fs_node *nd)
{
	int fw;

	if (nd->reg >= 0)
		return ga_regs[nd->reg].pyrogue[0] ? ga_regs[nd->reg].pyrogue : NULL;
	if (nd->parent == FS_D_FIRMWARE && (fw = ga_fw_find(nd->name)) >= 0)
		return ga_fw_fields[fw].pyrogue;
	return NULL;
}

/*
 * One line per file that has a pyrogue name, sorted by that name, so that
 * `grep RxFrameCnt pyrogue` finds the file.  Per-buffer files appear with
 * <i> when pyrogue has one variable per buffer ("Buffer[i]"), and as
 * buffer 0's when pyrogue has one for buffer 0 only (the V4 latencies).
 */
int fs_show_pyrogue(struct fs_ctx *c, struct strbuf *sb)
{
	struct fs *fs = c->fs;
	char **lines = calloc(fs->nrows, sizeof(*lines));
	unsigned int n = 0;
	int ret = 0;

	if (!lines)
		return -ENOMEM;
	sb_puts(sb, "# pyrogue variable (below AxiPcieCore)     file here\n");
	for (unsigned int r = 1; r < fs->nrows; r++) {
		const struct fs_node *nd = &fs->rows[r];
		const char *py = row_pyrogue(nd);
		enum ga_dir d;
		char path[256];

		if (!py)
			continue;
		if (fs_row_per_buffer(nd, &d) && nd->visible && !nd->visible(fs, nd, 0))
			continue;
		fs_path(fs, nd, fs_row_per_buffer(nd, &d) && !strstr(py, "[i]") ? 0 : UINT_MAX,
			path, sizeof(path));
		if (asprintf(&lines[n], "%-42s %s\n", py, path) < 0) {
			ret = -ENOMEM;
			break;
		}
		n++;
	}
	return put_sorted(sb, lines, n, ret);
}
