/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Values in and out of files, for every handler module (buffers.c,
 * registers.c, sim.c, core.c, poll.c) and for tree.c's read path: the
 * parsers a store handler calls on what was written (one value, with the
 * reason for a refusal recorded for the errors file); fs_render(), which
 * runs a node's show handler inside its handler context (the per-buffer
 * lock and the check that the buffer is still the one the file was opened
 * on); and fs_node_stat(), whose size comes from a node's size handler in
 * the same context.  Nothing here talks to FUSE.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fs.h"

/* ---- value parsing shared by the store handlers ---------------------------- */

/* What was written, as written but escaped (\n, \t, \xNN), for the
 * errors line; "..." when it does not fit. */
static const char *excerpt(const char *buf, size_t len, char *out, size_t outlen)
{
	size_t n = 0, i;

	for (i = 0; i < len && n + 8 < outlen; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (c == '\n' || c == '\t' || c == '\\')
			n += (size_t)snprintf(out + n, outlen - n, "\\%c",
					      c == '\n'	  ? 'n'
					      : c == '\t' ? 't'
							  : '\\');
		else if (c >= 0x20 && c < 0x7f && c != '\'')
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, outlen - n, "\\x%02x", c);
	}
	if (i < len)
		n += (size_t)snprintf(out + n, outlen - n, "...");
	out[n] = '\0';
	return out;
}

/* Text on more than one line ("7\n8\n": printf writes each line apart). */
static bool several_lines(const char *buf, size_t len)
{
	const char *nl = memchr(buf, '\n', len);

	if (!nl)
		return false;
	for (nl++; nl < buf + len; nl++)
		if (*nl != ' ' && *nl != '\t' && *nl != '\n' && *nl != '\r')
			return true;
	return false;
}

int fs_parse_u64(const char *buf, size_t len, uint64_t max, bool size, uint64_t *out)
{
	char ex[64];
	int ret;

	if (!len || (len == 1 && buf[0] == '\n'))
		return fs_err(-EINVAL, "empty value: write one number");
	if (several_lines(buf, len))
		return fs_err(-EINVAL,
			      "'%s' is more than one value: a file takes one value per open",
			      excerpt(buf, len, ex, sizeof(ex)));
	ret = size ? ga_parse_size(buf, len, max, out) : ga_parse_u64(buf, len, max, out);
	if (ret == -ERANGE)
		return fs_err(-ERANGE, "'%s' is out of range: 0..%llu",
			      excerpt(buf, len, ex, sizeof(ex)), (unsigned long long)max);
	if (ret < 0)
		return fs_err(-EINVAL, "'%s' is not a number (decimal, 0x hex%s)",
			      excerpt(buf, len, ex, sizeof(ex)), size ? ", K/M/G suffix" : "");
	return 0;
}

int fs_parse_bool(const char *buf, size_t len, bool *out)
{
	uint64_t v;
	int ret = fs_parse_u64(buf, len, 1, false, &v);

	if (ret == -EINVAL && len && ga_parse_bool(buf, len, out) == 0)
		return 0; /* yes/no, on/off, true/false */
	if (ret < 0) {
		char ex[64];

		return fs_err(ret, "'%s': write 1 or 0", excerpt(buf, len, ex, sizeof(ex)));
	}
	*out = v != 0;
	return 0;
}

int fs_write_link_check(struct fs *fs)
{
	int up = ga_dev_link(fs->dev);

	if (up == 0)
		return fs_err(-ENOLINK, "link down: nothing is written to the card until "
					"device/link reads up again");
	return up < 0 ? up : 0;
}

/* ---- handler context ------------------------------------------------------------ */

int fs_ctx_enter(struct fs *fs, struct fs_ctx *c, const struct fs_node *n, unsigned int idx,
		 const struct fs_open *fo)
{
	enum ga_dir d;

	*c = (struct fs_ctx){.fs = fs, .node = n, .idx = idx};
	if (!fs_row_per_buffer(n, &d))
		return 0;
	pthread_rwlock_rdlock(&fs->bufs_lock);
	c->buf = ga_buf_get(fs->dev, d, idx);
	if (!c->buf || (fo && fo->gen != fs->slots[d][idx].gen)) {
		pthread_rwlock_unlock(&fs->bufs_lock);
		return fs_err(-ENODEV, "%s/%u was removed; this file belonged to it",
			      d == GA_DIR_WRITE ? "buffers" : "read_buffers", idx);
	}
	c->locked = true;
	return 0;
}

void fs_ctx_leave(struct fs *fs, struct fs_ctx *c)
{
	if (c->locked)
		pthread_rwlock_unlock(&fs->bufs_lock);
	c->locked = false;
}

/* The library found the card no longer holding our buffers (any read of a
 * state may find it): say so once in errors, where an operator looks. */
void fs_note_lost(struct fs *fs)
{
	unsigned int now = ga_dev_registrations_lost(fs->dev);
	unsigned int seen = atomic_load(&fs->lost_seen);

	if (now != seen && atomic_compare_exchange_strong(&fs->lost_seen, &seen, now))
		fs_error_add(fs, "buffers", -EIO,
			     "the card no longer holds our buffers (another program removed "
			     "them, or the driver did when one buffer's memory went away): "
			     "every buffer is ERROR; rmdir them (highest index first) and "
			     "mkdir again");
}

/* Every read and every sample looks at the link (one register read): a
 * card that drops off the bus is in errors at the next look, once. */
void fs_note_link(struct fs *fs)
{
	int up = ga_dev_link(fs->dev);
	int seen = atomic_load(&fs->link_down);

	/* ga_dev_open refused a card without link: it was up at mount. */
	if (up < 0 || (!up) == seen || !atomic_compare_exchange_strong(&fs->link_down, &seen, !up))
		return;
	if (!up)
		fs_error_add(fs, "device/link", -ENOLINK,
			     "link down: every register reads 0xffffffff (PCIe link lost, card "
			     "powered off or reloading its firmware); writes are refused until it "
			     "is back");
	else
		fs_error_add(fs, "device/link", 0, "link up again: registers answer");
}

static int render(struct fs *fs, const struct fs_node *n, unsigned int idx,
		  const struct fs_open *fo, struct strbuf *sb)
{
	struct fs_ctx c;
	int ret;

	sb_reset(sb);
	ret = fs_ctx_enter(fs, &c, n, idx, fo);
	if (ret < 0)
		return ret;
	ret = n->show(&c, sb);
	fs_ctx_leave(fs, &c);
	fs_note_lost(fs);
	fs_note_link(fs);
	if (ret == 0 && sb->oom)
		ret = fs_err(-ENOMEM, "out of memory rendering the file");
	return ret;
}

bool fs_snap_account(struct fs *fs, struct fs_open *fo)
{
	size_t now = fo->have_snap ? fo->snap.cap : 0;
	uint64_t total;

	if (now >= fo->snap_counted)
		total = atomic_fetch_add(&fs->snap_bytes, now - fo->snap_counted) + now -
			fo->snap_counted;
	else
		total = atomic_fetch_sub(&fs->snap_bytes, fo->snap_counted - now) -
			(fo->snap_counted - now);
	fo->snap_counted = now;
	return total <= FS_SNAP_BUDGET;
}

int fs_render(struct fs *fs, const struct fs_open *fo, struct strbuf *sb)
{
	return render(fs, fo->node, fo->idx, fo, sb);
}

int fs_render_node(struct fs *fs, const struct fs_node *n, unsigned int idx, struct strbuf *sb)
{
	return render(fs, n, idx, NULL, sb);
}

/*
 * The render a stat made, handed to the open that follows.  With an
 * attribute timeout of 0 (FS_SIZED), a program that stats a file and then
 * opens it (cat, tail, Python) makes a GETATTR, then OPEN, then READ (and
 * so did every open() while the kernel checked modes, default_permissions):
 * rendering at the stat and again at the read doubled the cost of reading
 * metrics (issue 30: 308 -> 695 us with 1024 host-memory buffers).  So a stat's render is kept for the same
 * process's next stat or open of the same file within HANDOFF_NS, and
 * becomes that open file's snapshot (served by its first read at offset 0):
 * one render per open(), and st_size agrees with what is read.  Any change
 * the mount makes (a write, mkdir, rmdir, an errors line) drops it; files
 * that change by themselves (FS_LIVE, FS_APPEND) never use it.
 */
#define HANDOFF_NS 10000000ull

_Thread_local pid_t fs_stat_caller;

static struct {
	pthread_mutex_t lock; /* guards the rest */
	const struct fs *fs;
	const struct fs_node *node;
	unsigned int idx;
	pid_t pid;
	uint64_t t_ns;
	struct strbuf sb; /* until an open takes it */
	size_t len;	  /* its length, kept for stats after the open */
	uint64_t gen;  /* handoff_gen when its render began */
	uint64_t errs; /* fs->err_total then: metrics counts errors lines */
	bool valid;
} handoff = {.lock = PTHREAD_MUTEX_INITIALIZER};
static _Atomic uint64_t handoff_gen; /* +1 at every change */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool handoff_eligible(const struct fs_node *n, pid_t pid)
{
	return pid > 0 && (n->flags & FS_SIZED) && !(n->flags & (FS_LIVE | FS_APPEND)) && n->show;
}

/* Prerequisite: handoff.lock held. */
static bool handoff_matches(const struct fs *fs, const struct fs_node *n, unsigned int idx,
			    pid_t pid)
{
	return handoff.valid && handoff.fs == fs && handoff.node == n && handoff.idx == idx &&
	       handoff.pid == pid && handoff.gen == atomic_load(&handoff_gen) &&
	       handoff.errs == atomic_load(&fs->err_total) && mono_ns() - handoff.t_ns < HANDOFF_NS;
}

void fs_stat_handoff_drop(struct fs *fs)
{
	atomic_fetch_add(&handoff_gen, 1);
	pthread_mutex_lock(&handoff.lock);
	if (handoff.fs == fs)
		handoff.valid = false;
	pthread_mutex_unlock(&handoff.lock);
}

void fs_stat_handoff_adopt(struct fs *fs, struct fs_open *fo, pid_t pid)
{
	struct strbuf sb = {0};

	if (!handoff_eligible(fo->node, pid))
		return;
	pthread_mutex_lock(&handoff.lock);
	if (handoff_matches(fs, fo->node, fo->idx, pid)) {
		sb = handoff.sb; /* its length stays for an fstat */
		handoff.sb = (struct strbuf){0};
	}
	pthread_mutex_unlock(&handoff.lock);
	if (!sb.buf)
		return;
	pthread_mutex_lock(&fo->lock);
	sb_free(&fo->snap);
	fo->snap = sb;
	fo->have_snap = fo->stat_snap = true;
	fo->at_eof = false;
	fs_snap_account(fs, fo);
	pthread_mutex_unlock(&fo->lock);
}

/* An FS_SIZED file's length: rendered into @fo's snapshot, or a scratch
 * buffer without one (kept for the open that may follow, above); -1 when
 * it cannot be rendered now. */
static off_t sized_length(struct fs *fs, const struct fs_node *n, unsigned int idx,
			  struct fs_open *fo)
{
	struct strbuf sb = {0};
	off_t len = -1;
	pid_t pid = fs_stat_caller;

	if (fo) {
		pthread_mutex_lock(&fo->lock);
		fo->have_snap = fo->stat_snap = fs_render(fs, fo, &fo->snap) == 0;
		fo->at_eof = false;
		if (fo->have_snap)
			len = (off_t)fo->snap.len;
		fs_snap_account(fs, fo);
		pthread_mutex_unlock(&fo->lock);
	} else if (handoff_eligible(n, pid)) {
		uint64_t gen = atomic_load(&handoff_gen), errs = atomic_load(&fs->err_total);

		pthread_mutex_lock(&handoff.lock);
		if (handoff_matches(fs, n, idx, pid))
			len = (off_t)handoff.len;
		pthread_mutex_unlock(&handoff.lock);
		if (len < 0 && fs_render_node(fs, n, idx, &sb) == 0) {
			len = (off_t)sb.len;
			pthread_mutex_lock(&handoff.lock);
			sb_free(&handoff.sb);
			handoff.fs = fs;
			handoff.node = n;
			handoff.idx = idx;
			handoff.pid = pid;
			handoff.t_ns = mono_ns();
			handoff.sb = sb;
			handoff.len = sb.len;
			handoff.gen = gen;
			handoff.errs = errs;
			handoff.valid = true;
			pthread_mutex_unlock(&handoff.lock);
			sb = (struct strbuf){0};
		}
		sb_free(&sb);
	} else {
		if (fs_render_node(fs, n, idx, &sb) == 0)
			len = (off_t)sb.len;
		sb_free(&sb);
	}
	fs_err_clear(); /* a stat has no errors line to give */
	return len;
}

void fs_node_stat(struct fs *fs, unsigned int row, unsigned int idx, struct stat *st)
{
	fs_node_stat_open(fs, row, idx, NULL, st);
}

void fs_node_stat_open(struct fs *fs, unsigned int row, unsigned int idx, struct fs_open *fo,
		       struct stat *st)
{
	const struct fs_node *n = &fs->rows[row];

	memset(st, 0, sizeof(*st));
	st->st_ino = fs_ino(fs, row, idx);
	st->st_mode = fs_mode(fs, n);
	st->st_nlink = n->dir != FS_D_NONE ? 2 : 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = 4096;
	st->st_atime = st->st_mtime = st->st_ctime = fs->start;
	if (n->dir == FS_D_NONE) {
		st->st_size = FS_TEXT_MAX;
		if (!n->show && !(n->flags & FS_BINARY)) {
			st->st_size = 0; /* a write-only action: nothing to read */
		} else if ((n->flags & FS_SIZED) && n->show) {
			/* tail, wc -c and cp trust st_size; a file that cannot
			 * be rendered now keeps the sysfs page. */
			off_t len = sized_length(fs, n, idx, fo);

			if (len >= 0)
				st->st_size = len;
		} else if (n->size) {
			struct fs_ctx c;

			if (fs_ctx_enter(fs, &c, n, idx, NULL) == 0) {
				st->st_size = (off_t)n->size(&c);
				fs_ctx_leave(fs, &c);
			}
		} else if (n->flags & FS_BINARY) {
			st->st_size = 0;
		}
		/* Whole blocks, so cp does not take the file for a sparse one. */
		st->st_blocks = (st->st_size + 511) / 512;
	}
}
