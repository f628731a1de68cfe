/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The tree: the low-level FUSE operations, which loop over the one file
 * table (built, numbered and rendered in table.c), and the operations
 * table itself at the end.
 *
 *   $ ls /mnt/gpuasync
 *   README  buffers  config  device  errors  metrics  read_buffers  registers  sim
 *   $ mkdir /mnt/gpuasync/buffers/0 && ls /mnt/gpuasync/buffers/0
 *   data  gpu_address  header  latency  size  status  write_enable
 *
 * Reading: every file is opened with direct_io (values are generated; the
 * page cache would serve stale ones).  A text file is rendered whole at
 * offset 0 into the open file's buffer and later offsets are served from
 * that snapshot, so a reader that needs several read() calls sees one
 * consistent value, and EOF as long as it reads on past the end.  Binary
 * files (data, raw, push, last_read) are windows read and written at the
 * caller's offset.  Every text file with a value (FS_SIZED, set by
 * fs_table_build) reports its real length as st_size; errors (FS_APPEND)
 * renders again for a read past the snapshot's end, so tail -f sees new
 * lines.
 *
 * Writing text: what one open writes is one text (a value, a settings
 * file), written in order from where it starts and applied whole at close
 * (FLUSH); each write is checked as it arrives, so a refusal reaches the
 * writer even where close's cannot (a shell builtin).  O_TRUNC is
 * ignored.  The store handler validates before touching anything, so a
 * refused text changes nothing; every refusal replies with the errno and
 * leaves a line in errors (fs_reply_fail).
 *
 * Permissions: the daemon checks modes (may(), below), as the kernel's
 * default_permissions would, which the mount does not ask for: with it,
 * every open() of a file whose attributes are never cached (FS_SIZED: a
 * register, metrics) cost the kernel's permission GETATTR, one more round
 * trip.  The daemon also refuses to open read-only files for writing and
 * write-only files for reading, since root passes mode checks.
 *
 * Every request gets exactly one reply; handlers end in fs_reply_fail()
 * or one fuse_reply_*() call.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"

#define ENTRY_TIMEOUT 1.0 /* seconds; the skeleton is static (fuse-anchors §6.19) */

static const struct fuse_lowlevel_ops fs_ops; /* at the end of this file */

static struct fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Seconds the kernel may keep a node's attributes: the skeleton is static,
 * but a write buffer's data changes size with every frame, and cmp -s
 * trusts st_size. */
static double attr_timeout(const struct fs_node *n)
{
	return (n->flags & (FS_VARSIZE | FS_SIZED)) ? 0.0 : ENTRY_TIMEOUT;
}

/* ---- permissions -------------------------------------------------------------------- */

/* Whether the caller of @req is in group @gid: its own group, else its
 * supplementary groups (read from /proc by libfuse: asked only when the
 * answer matters). */
static bool in_group(fuse_req_t req, gid_t gid)
{
	gid_t some[64], *list = some;
	bool in = false;
	int n;

	if (fuse_req_ctx(req)->gid == gid)
		return true;
	n = fuse_req_getgroups(req, 64, some);
	if (n > 64 && (list = malloc((size_t)n * sizeof(*list))))
		n = fuse_req_getgroups(req, n, list); /* more than 64 groups: all of them */
	for (int i = 0; list && i < n && !in; i++)
		in = list[i] == gid;
	if (list != some)
		free(list);
	return in;
}

/*
 * Whether the caller of @req may @want (R_OK, W_OK, X_OK bits) on a node of
 * mode @mode, owned as every node is (fs->uid, fs->gid): the owner's bits
 * for the owner, the group's for its members, the rest for everyone else,
 * as the kernel decides.  Root passes for reading and writing; executing
 * wants an x bit somewhere (directories have them all).
 */
static bool may(fuse_req_t req, const struct fs *fs, unsigned int mode, unsigned int want)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	unsigned int bits = mode & 7;

	if (c->uid == 0)
		return !(want & X_OK) || (mode & 0111);
	if (c->uid == fs->uid)
		bits = (mode >> 6) & 7;
	else if (c->gid == fs->gid || ((((mode >> 3) ^ mode) & want) && in_group(req, fs->gid)))
		bits = (mode >> 3) & 7;
	return (bits & want) == want;
}

/* A request that would change directory @parent (make, remove, rename,
 * link in it) without write and search permission there, as the kernel
 * asks: refused with EACCES and no errors line (the mode says so); true
 * when it was. */
static bool dir_change_refused(fuse_req_t req, struct fs *fs, fuse_ino_t parent)
{
	unsigned int row, idx;

	if (fs_node_of(fs, parent, &row, &idx) < 0 ||
	    may(req, fs, fs_mode(fs, &fs->rows[row]), W_OK | X_OK))
		return false; /* a missing parent: the handler answers ENOENT */
	fuse_reply_err(req, EACCES);
	return true;
}

/* ---- replies ------------------------------------------------------------------------ */

void fs_reply_fail(fuse_req_t req, struct fs *fs, const char *path, int err)
{
	fs_error_add(fs, path, err, fs_last_error());
	fs_err_clear();
	fuse_reply_err(req, -err);
}

void fs_reply_fail_node(fuse_req_t req, struct fs *fs, const struct fs_node *n, unsigned int idx,
			int err)
{
	char path[256];

	fs_path(fs, n, idx, path, sizeof(path));
	fs_reply_fail(req, fs, path, err);
}

/* An observer mount (-o observe) changes nothing: every request that
 * would (a write, mkdir, rmdir) is refused here, before any handler, with
 * one errors line.  The library refuses as well (ga_open_opts.observe). */
static bool observe_refused(fuse_req_t req, struct fs *fs, const char *path, const char *what)
{
	if (!fs->cfg.observe)
		return false;
	fs_err(-EROFS, "observer mount (-o observe): %s; the card belongs to another process",
	       what);
	fs_reply_fail(req, fs, path, -EROFS);
	return true;
}

static void reply_entry(fuse_req_t req, struct fs *fs, unsigned int row, unsigned int idx)
{
	struct fuse_entry_param e = {0};
	enum ga_dir d;

	e.ino = fs_ino(fs, row, idx);
	/* A buffer made again after rmdir reuses its numbers; the new
	 * generation tells the kernel that inodes it still holds are stale. */
	if (fs_row_per_buffer(&fs->rows[row], &d))
		e.generation = fs->slots[d][idx].gen;
	e.attr_timeout = attr_timeout(&fs->rows[row]);
	e.entry_timeout = ENTRY_TIMEOUT;
	fs_stat_caller = fuse_req_ctx(req)->pid;
	fs_node_stat(fs, row, idx, &e.attr);
	fs_stat_caller = 0;
	fuse_reply_entry(req, &e);
}

/* ---- operations ------------------------------------------------------------------------ */

static void fs_op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* O_TRUNC arrives with open instead of as a setattr; it is ignored
	 * either way (fuse-anchors §6.6). */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~(unsigned int)FUSE_CAP_AUTO_INVAL_DATA;
	/* A known size, so sim/push can tell a whole write from a piece. */
	if (conn->max_write > FS_MAX_WRITE)
		conn->max_write = FS_MAX_WRITE;
}

static void fs_op_destroy(void *userdata)
{
	struct fs *fs = userdata;

	/* No notification may go out once the session is going away. */
	atomic_store(&fs->sampler_stop, true);
}

static void fs_op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = req_fs(req);
	unsigned int prow, pidx, idx;
	enum fs_dir d;

	if (fs_node_of(fs, parent, &prow, &pidx) < 0) {
		fuse_reply_err(req, ENOENT); /* a removed buffer's directory */
		return;
	}
	d = fs->rows[prow].dir;
	if (d == FS_D_NONE) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (fs_dir_is_collection(d) && fs_buffer_name(name, &idx) == 0) {
		enum ga_dir gd = d == FS_D_BUFFERS ? GA_DIR_WRITE : GA_DIR_READ;
		int r = fs->dir_row[d == FS_D_BUFFERS ? FS_D_WBUF : FS_D_RBUF];

		if (r >= 0 && idx < GA_MAX_BUFFERS && ga_buf_get(fs->dev, gd, idx)) {
			reply_entry(req, fs, (unsigned int)r, idx);
			return;
		}
	}
	for (unsigned int r = 0; r < fs->nrows; r++) {
		const struct fs_node *n = &fs->rows[r];

		if (n->parent == d && !(n->flags & FS_DYNNAME) && !strcmp(n->name, name) &&
		    fs_node_visible(fs, r, pidx)) {
			reply_entry(req, fs, r, pidx);
			return;
		}
	}
	fuse_reply_err(req, ENOENT); /* a miss is an answer, not an error to log */
}

static void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_open *fo = fi ? (struct fs_open *)(uintptr_t)fi->fh : NULL;
	unsigned int row, idx;
	struct stat st;

	if (fs_node_of(fs, ino, &row, &idx) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	/* fi: the kernel names the open file for lseek SEEK_END (tail) */
	fs_stat_caller = fuse_req_ctx(req)->pid;
	fs_node_stat_open(fs, row, idx, fo && fo->node == &fs->rows[row] ? fo : NULL, &st);
	fs_stat_caller = 0;
	fuse_reply_attr(req, &st, attr_timeout(&fs->rows[row]));
}

static void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			  struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	unsigned int row, idx;

	(void)attr;
	if (fs_node_of(fs, ino, &row, &idx) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		fs_err(-EPERM, "modes and owners are fixed; use the [access] settings");
		fs_reply_fail_node(req, fs, &fs->rows[row], idx, -EPERM);
		return;
	}
	/* Truncating or touching wants write permission (or ownership). */
	if (fuse_req_ctx(req)->uid != fs->uid && !may(req, fs, fs_mode(fs, &fs->rows[row]), W_OK)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if ((to_set & FUSE_SET_ATTR_SIZE) && !(fs->rows[row].store || fs->rows[row].write_bin)) {
		fs_err(-EACCES, "read-only file");
		fs_reply_fail_node(req, fs, &fs->rows[row], idx, -EACCES);
		return;
	}
	/* Truncation (O_TRUNC, ': > file') and times are accepted and ignored:
	 * truncating is not a command. */
	fs_op_getattr(req, ino, fi);
}

/* ---- directories ---------------------------------------------------------------------- */

static struct fs_open *open_alloc(struct fs *fs, const struct fs_node *n, unsigned int idx)
{
	struct fs_open *fo = calloc(1, sizeof(*fo));

	if (!fo)
		return NULL;
	fo->node = n;
	fo->idx = idx;
	pthread_mutex_init(&fo->lock, NULL);
	pthread_mutex_lock(&fs->open_lock);
	fo->next_open = fs->open_list;
	if (fs->open_list)
		fs->open_list->prev_open = fo;
	fs->open_list = fo;
	pthread_mutex_unlock(&fs->open_lock);
	return fo;
}

static void open_free(struct fs *fs, struct fs_open *fo)
{
	pthread_mutex_lock(&fs->open_lock);
	if (fo->prev_open)
		fo->prev_open->next_open = fo->next_open;
	else
		fs->open_list = fo->next_open;
	if (fo->next_open)
		fo->next_open->prev_open = fo->prev_open;
	pthread_mutex_unlock(&fs->open_lock);
	fo->have_snap = false;
	fs_snap_account(fs, fo);
	sb_free(&fo->snap);
	sb_free(&fo->wtext);
	pthread_mutex_destroy(&fo->lock);
	free(fo);
}

void fs_opens_free_all(struct fs *fs)
{
	while (fs->open_list) {
		struct fs_open *fo = fs->open_list;

		fs_poll_forget(fs, fo);
		open_free(fs, fo);
	}
}

/* Reply with @size bytes at @off of the open file's snapshot, which the
 * caller holds fo->lock for.  The reply completes the caller's read, after
 * which the kernel may release the file at once (on another thread in the
 * multi-threaded loop): so copy, unlock, and only then reply, touching @fo
 * no more. */
static void reply_slice_unlock(fuse_req_t req, struct fs_open *fo, size_t size, off_t off)
{
	char small[512], *copy = small;
	size_t len = 0;

	if (off >= 0 && (size_t)off < fo->snap.len) {
		len = fo->snap.len - (size_t)off;
		if (len > size)
			len = size;
		if (len > sizeof(small))
			copy = malloc(len);
		if (copy)
			memcpy(copy, fo->snap.buf + off, len);
	}
	pthread_mutex_unlock(&fo->lock);
	if (!copy)
		fuse_reply_err(req, ENOMEM);
	else
		fuse_reply_buf(req, copy, len);
	if (copy != small)
		free(copy);
}

/* reply_slice_unlock, dropping the snapshot first (the reply is copied). */
static void reply_slice_unlock_drop(fuse_req_t req, struct fs *fs, struct fs_open *fo, size_t size,
				    off_t off)
{
	struct strbuf snap = fo->snap;

	fo->snap = (struct strbuf){0};
	fo->have_snap = false;
	fs_snap_account(fs, fo);
	pthread_mutex_unlock(&fo->lock);
	if (off >= 0 && (size_t)off < snap.len) {
		size_t len = snap.len - (size_t)off;

		fuse_reply_buf(req, snap.buf + off, len < size ? len : size);
	} else {
		fuse_reply_buf(req, NULL, 0);
	}
	sb_free(&snap);
}

static void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	unsigned int row, idx;
	struct fs_open *fo;

	if (fs_node_of(fs, ino, &row, &idx) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (fs->rows[row].dir == FS_D_NONE) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fo = open_alloc(fs, &fs->rows[row], idx);
	if (!fo) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uintptr_t)fo;
	if (fuse_reply_open(req, fi) != 0)
		open_free(fs, fo); /* interrupted: no releasedir will come */
}

static int dirbuf_add(fuse_req_t req, struct strbuf *sb, const char *name, uint64_t ino,
		      unsigned int mode)
{
	static const char zeros[512];
	struct stat st = {.st_ino = ino, .st_mode = mode};
	size_t need = fuse_add_direntry(req, NULL, 0, name, NULL, 0), old = sb->len;

	if (need > sizeof(zeros) || sb_put(sb, zeros, need))
		return -ENOMEM;
	fuse_add_direntry(req, sb->buf + old, need, name, &st, (off_t)(old + need));
	return 0;
}

static int list_dir(fuse_req_t req, struct fs *fs, const struct fs_open *fo, fuse_ino_t ino,
		    struct strbuf *sb)
{
	const struct fs_node *dn = fo->node;
	enum fs_dir d = dn->dir;
	enum ga_dir gdir;
	int ret = 0;

	/* a buffer directory listed after its buffer went away */
	if (fs_row_per_buffer(dn, &gdir) && !ga_buf_get(fs->dev, gdir, fo->idx))
		return -ENOENT;
	sb_reset(sb);
	ret |= dirbuf_add(req, sb, ".", ino, S_IFDIR);
	ret |= dirbuf_add(req, sb, "..", FUSE_ROOT_ID, S_IFDIR);
	for (unsigned int r = 0; r < fs->nrows; r++) {
		const struct fs_node *n = &fs->rows[r];

		if (n->parent != d || (n->flags & FS_DYNNAME) || !fs_node_visible(fs, r, fo->idx))
			continue;
		ret |= dirbuf_add(req, sb, n->name, fs_ino(fs, r, fo->idx), fs_mode(fs, n));
	}
	if (fs_dir_is_collection(d)) {
		enum ga_dir gd = d == FS_D_BUFFERS ? GA_DIR_WRITE : GA_DIR_READ;
		int r = fs->dir_row[d == FS_D_BUFFERS ? FS_D_WBUF : FS_D_RBUF];
		unsigned int count;

		pthread_rwlock_rdlock(&fs->bufs_lock);
		count = ga_buf_count(fs->dev, gd);
		for (unsigned int i = 0; r >= 0 && i < count && i < GA_MAX_BUFFERS; i++) {
			char name[16];

			if (!ga_buf_get(fs->dev, gd, i))
				continue;
			snprintf(name, sizeof(name), "%u", i);
			ret |= dirbuf_add(req, sb, name, fs_ino(fs, (unsigned int)r, i), S_IFDIR);
		}
		pthread_rwlock_unlock(&fs->bufs_lock);
	}
	return ret ? -ENOMEM : 0;
}

static void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_open *fo = (struct fs_open *)(uintptr_t)fi->fh;

	pthread_mutex_lock(&fo->lock);
	if (off == 0 || !fo->have_snap) {
		int ret = list_dir(req, fs, fo, ino, &fo->snap);

		if (ret < 0) {
			pthread_mutex_unlock(&fo->lock);
			fuse_reply_err(req, -ret);
			return;
		}
		fo->have_snap = true;
	}
	reply_slice_unlock(req, fo, size, off);
}

static void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	open_free(req_fs(req), (struct fs_open *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

/* "buffers/7" for @name in directory @parent (for errors lines). */
static void child_path(struct fs *fs, fuse_ino_t parent, const char *name, char *buf, size_t len)
{
	unsigned int row, idx;
	size_t n;

	buf[0] = '\0';
	if (fs_node_of(fs, parent, &row, &idx) == 0)
		fs_path(fs, &fs->rows[row], idx, buf, len);
	n = strlen(buf);
	snprintf(buf + n, len - n, "%s%s", n ? "/" : "", name);
}

/*
 * The start mkdir and rmdir share: @parent must be buffers/ or read_buffers/
 * (@why says what else is refused).  Fills @path (for errors) and @d; returns
 * -1 after replying when the request ends here.
 */
static int collection_parent(fuse_req_t req, struct fs *fs, fuse_ino_t parent, const char *name,
			     char *path, size_t len, enum fs_dir *d, const char *why)
{
	unsigned int prow, pidx;

	fs_err_clear();
	if (fs_node_of(fs, parent, &prow, &pidx) < 0) {
		fuse_reply_err(req, ENOENT);
		return -1;
	}
	if (dir_change_refused(req, fs, parent))
		return -1;
	*d = fs->rows[prow].dir;
	child_path(fs, parent, name, path, len);
	if (!fs_dir_is_collection(*d)) {
		fs_err(-EPERM, "%s", why);
		fs_reply_fail(req, fs, path, -EPERM);
		return -1;
	}
	return 0;
}

static void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs *fs = req_fs(req);
	unsigned int idx;
	char path[256];
	enum fs_dir d;
	int ret;

	fs_stat_handoff_drop(fs); /* a change: no stat render outlives it */
	(void)mode;
	if (collection_parent(req, fs, parent, name, path, sizeof(path), &d,
			      "only buffers/ and read_buffers/ have directories to make") < 0)
		return;
	if (observe_refused(req, fs, path, "no buffer is added"))
		return;
	ret = fs_buffer_mkdir(fs, d == FS_D_BUFFERS ? GA_DIR_WRITE : GA_DIR_READ, name, &idx);
	if (ret < 0) {
		fs_reply_fail(req, fs, path, ret);
		return;
	}
	reply_entry(req, fs, (unsigned int)fs->dir_row[d == FS_D_BUFFERS ? FS_D_WBUF : FS_D_RBUF],
		    idx);
}

static void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = req_fs(req);
	char path[256];
	enum fs_dir d;
	int ret;

	fs_stat_handoff_drop(fs); /* a change: no stat render outlives it */
	if (collection_parent(
		    req, fs, parent, name, path, sizeof(path), &d,
		    "only buffer directories (buffers/<i>, read_buffers/<i>) can be removed") < 0)
		return;
	if (observe_refused(req, fs, path, "no buffer is removed"))
		return;
	ret = fs_buffer_rmdir(fs, d == FS_D_BUFFERS ? GA_DIR_WRITE : GA_DIR_READ, name);
	if (ret < 0)
		fs_reply_fail(req, fs, path, ret);
	else
		fuse_reply_err(req, 0);
}

static void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = req_fs(req);
	char path[256];

	if (dir_change_refused(req, fs, parent))
		return;
	child_path(fs, parent, name, path, sizeof(path));
	fs_err(-EPERM,
	       "files of the tree cannot be removed; rmdir a buffer directory to release it");
	fs_reply_fail(req, fs, path, -EPERM);
}

static void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			 struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	char path[256];

	(void)mode;
	(void)fi;
	if (dir_change_refused(req, fs, parent))
		return;
	child_path(fs, parent, name, path, sizeof(path));
	fs_err(-EACCES, "no such file, and files cannot be created (see README)");
	fs_reply_fail(req, fs, path, -EACCES);
}

static void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			dev_t rdev)
{
	(void)rdev;
	fs_op_create(req, parent, name, mode, NULL);
}

/* Requests for names the tree does not have: @err with an errors line
 * for @name in directory @parent, as every other refusal. */
static void refuse_name(fuse_req_t req, fuse_ino_t parent, const char *name, int err,
			const char *why)
{
	struct fs *fs = req_fs(req);
	char path[256];

	if (dir_change_refused(req, fs, parent))
		return;
	child_path(fs, parent, name, path, sizeof(path));
	fs_err(err, "%s", why);
	fs_reply_fail(req, fs, path, err);
}

static void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
			 const char *newname, unsigned int flags)
{
	(void)newparent;
	(void)newname;
	(void)flags;
	refuse_name(req, parent, name, -EPERM,
		    "names are fixed: nothing in the tree can be renamed (a buffer directory's "
		    "name is its index)");
}

static void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino;
	refuse_name(req, newparent, newname, -EPERM, "hard links cannot be made in the tree");
}

static void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	refuse_name(req, parent, name, -EPERM,
		    "symbolic links cannot be made in the tree; make them outside, pointing in");
}

/* Extended attributes: the tree has none.  Reading them is answered
 * ENOSYS, which the kernel remembers (no further requests, "not
 * supported" for the caller); setting or removing one is a refusal. */
static void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			   size_t size, int flags)
{
	struct fs *fs = req_fs(req);
	unsigned int row, idx;

	(void)name;
	(void)value;
	(void)size;
	(void)flags;
	if (fs_node_of(fs, ino, &row, &idx) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fs_err(-ENOTSUP, "extended attributes are not supported");
	fs_reply_fail_node(req, fs, &fs->rows[row], idx, -ENOTSUP);
}

static void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fs_op_setxattr(req, ino, name, NULL, 0, 0);
}

/* access(2), test -r/-w/-x: the same decision as open's and mkdir's. */
static void fs_op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct fs *fs = req_fs(req);
	unsigned int row, idx;

	if (fs_node_of(fs, ino, &row, &idx) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (mask != F_OK &&
	    !may(req, fs, fs_mode(fs, &fs->rows[row]), (unsigned int)mask & (R_OK | W_OK | X_OK))) {
		fuse_reply_err(req, EACCES);
		return;
	}
	fuse_reply_err(req, 0);
}

/* ---- files ------------------------------------------------------------------------------ */

static void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	unsigned int row, idx;
	const struct fs_node *n;
	struct fs_open *fo;
	int acc = fi->flags & O_ACCMODE;
	bool readable, writable;
	enum ga_dir d = GA_DIR_WRITE;

	fs_err_clear();
	if (fs_node_of(fs, ino, &row, &idx) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	n = &fs->rows[row];
	if (n->dir != FS_D_NONE) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (!may(req, fs, fs_mode(fs, n),
		 acc == O_RDONLY   ? R_OK
		 : acc == O_WRONLY ? W_OK
				   : R_OK | W_OK)) {
		fuse_reply_err(req, EACCES); /* the mode says so: no errors line */
		return;
	}
	readable = n->show || n->read_bin;
	writable = n->store || n->write_bin;
	/* Root passes the kernel's mode checks: refuse here as well.  A grep
	 * over every file of registers/ reads each write-only action file;
	 * the mode says so already, and an errors line each would raise
	 * gpuasyncfs_errors_total for no mistake at all. */
	if (acc != O_WRONLY && !readable) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if (acc != O_RDONLY && !writable) {
		fs_err(-EACCES, "read-only file");
		fs_reply_fail_node(req, fs, n, idx, -EACCES);
		return;
	}
	if (acc != O_RDONLY && fs->cfg.observe) {
		char path[256];

		fs_path(fs, n, idx, path, sizeof(path));
		if (observe_refused(req, fs, path, "nothing is written"))
			return;
	}
	fo = open_alloc(fs, n, idx);
	if (!fo) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (fs_row_per_buffer(n, &d)) {
		pthread_rwlock_rdlock(&fs->bufs_lock);
		if (!ga_buf_get(fs->dev, d, idx)) {
			pthread_rwlock_unlock(&fs->bufs_lock);
			open_free(fs, fo);
			fuse_reply_err(req, ENOENT);
			return;
		}
		fo->gen = fs->slots[d][idx].gen;
		pthread_rwlock_unlock(&fs->bufs_lock);
	}
	if (acc == O_RDONLY)
		fs_stat_handoff_adopt(fs, fo, fuse_req_ctx(req)->pid);
	fi->fh = (uintptr_t)fo;
	fi->direct_io = 1; /* every read is a fresh hardware read */
	fi->keep_cache = 0;
	/* A written text is applied at FLUSH; a reader saves the round trip. */
	fi->noflush = acc == O_RDONLY;
	if (fuse_reply_open(req, fi) != 0)
		open_free(fs, fo); /* interrupted: the kernel will not send release */
}

static void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_open *fo = (struct fs_open *)(uintptr_t)fi->fh;
	const struct fs_node *n = fo->node;
	int ret;

	(void)ino;
	fs_err_clear();
	if (n->flags & FS_BINARY) {
		struct fs_ctx c;
		char *buf = malloc(size ? size : 1);
		ssize_t got;

		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		got = fs_ctx_enter(fs, &c, n, fo->idx, fo);
		if (got == 0) {
			got = n->read_bin(&c, buf, size, off);
			fs_ctx_leave(fs, &c);
		}
		if (got < 0)
			fs_reply_fail_node(req, fs, n, fo->idx, (int)got);
		else
			fuse_reply_buf(req, buf, (size_t)got);
		free(buf);
		return;
	}

	pthread_mutex_lock(&fo->lock);
	/* A reader that reads on past EOF (Go's promtool reads twice) gets
	 * EOF again, not the tail of a newer, longer rendering. */
	if (fo->at_eof && !fo->have_snap && off > 0 && (size_t)off >= fo->eof_len) {
		pthread_mutex_unlock(&fo->lock);
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if ((off == 0 && !fo->stat_snap) || !fo->have_snap ||
	    ((n->flags & FS_APPEND) && (size_t)off >= fo->snap.len)) {
		fo->stat_snap = false;
		fo->at_eof = false;
		ret = fs_render(fs, fo, &fo->snap);
		if (ret < 0) {
			fo->have_snap = false;
			pthread_mutex_unlock(&fo->lock);
			fs_reply_fail_node(req, fs, n, fo->idx, ret);
			return;
		}
		fo->have_snap = true;
	}
	fo->stat_snap = false;
	/* What one open file pins is bounded: the snapshot goes at EOF (a
	 * read past its end), or at once while the daemon holds too many.  A
	 * file that cannot be polled lets it go already with the read that
	 * reaches its end (the read after it, past the end, is answered EOF
	 * from at_eof), which spares that read's copy: a 1 MiB read of metrics
	 * (200 kB with 1024 buffers) is served from the snapshot itself.  A
	 * live file keeps it: poll compares the value with what was last read. */
	if (off >= 0 && !(n->flags & FS_APPEND) &&
	    ((size_t)off >= fo->snap.len ||
	     (!(n->flags & FS_LIVE) && (size_t)off + size >= fo->snap.len))) {
		fo->at_eof = true;
		fo->eof_len = fo->snap.len;
		reply_slice_unlock_drop(req, fs, fo, size, off);
		return;
	}
	if (!fs_snap_account(fs, fo)) {
		reply_slice_unlock_drop(req, fs, fo, size, off);
		return;
	}
	reply_slice_unlock(req, fo, size, off);
}

/* ---- writing text: one open writes one text ----------------------------------------- */

/*
 * Shells write a text in pieces: bash's and dash's printf and echo write
 * once per line, dd once per block.  So the pieces one open writes are
 * gathered and the whole text is applied at FLUSH (close(2) returns its
 * errno: cat, tee, dd, /usr/bin/printf and Python report it), and each
 * piece is checked as it arrives, the text so far taken as the whole
 * (c->check_only: nothing changes).  A shell's builtin never sees close
 * fail (its redirection is undone with dup2), but it sees a write fail,
 * which is where a refusal lands: '[regs]' refuses the write carrying it,
 * and a later write of a refused text is refused too, so nothing of it is
 * applied.  Only the hardware can still refuse at close (a read-back
 * that differs, a link that went down meanwhile).
 *
 * A write that ends on a CUT_BLOCK boundary inside a line may be a block
 * writer's cut (dd's bs, cat's 128 KiB, stdio's buffer), not the end of
 * the text: its last line is checked with the next write or at close.
 */
#define CUT_BLOCK 512u

/* Check (or with @apply, apply) the first @len bytes of @fo's text. */
static int text_store(struct fs *fs, struct fs_open *fo, size_t len, bool apply)
{
	struct fs_ctx c;
	int ret;

	if (!len && !apply)
		return 0; /* nothing whole yet */
	ret = fs_ctx_enter(fs, &c, fo->node, fo->idx, fo);
	if (ret < 0)
		return ret;
	c.check_only = !apply;
	ret = fo->node->store(&c, fo->wtext.buf ? fo->wtext.buf : "", len);
	fs_ctx_leave(fs, &c);
	return ret;
}

/* Add @size bytes written at @off to @fo's text and check it; fo->lock held. */
static int text_write(struct fs *fs, struct fs_open *fo, const char *buf, size_t size, off_t off)
{
	size_t max = fo->node->flags & FS_BIG_TEXT ? FS_WHOLE_WRITE : FS_TEXT_MAX, len;

	if (fo->wrefused)
		return fo->wrefused; /* the refusal has its errors line */
	if (!fo->wstarted) {
		sb_reset(&fo->wtext);
		fo->wbase = off; /* O_APPEND: the kernel's idea of the end */
		fo->wstarted = true;
	} else if (off != fo->wbase + (off_t)fo->wtext.len) {
		return fs_err(-EINVAL,
			      "a write at offset %lld where the text written through this open "
			      "file ends at %lld: one open writes one text, in order (open the "
			      "file again for another)",
			      (long long)off, (long long)(fo->wbase + (off_t)fo->wtext.len));
	}
	if (size > max - fo->wtext.len)
		return fs_err(-EINVAL,
			      "%zu bytes written through one open file: a %s is at most %zu "
			      "bytes",
			      fo->wtext.len + size, max == FS_TEXT_MAX ? "value" : "file", max);
	if (sb_put(&fo->wtext, buf, size))
		return fs_err(-ENOMEM, "out of memory keeping the written text");
	len = fo->wtext.len;
	if (size >= CUT_BLOCK && len % CUT_BLOCK == 0 && fo->wtext.buf[len - 1] != '\n') {
		const char *nl = memrchr(fo->wtext.buf, '\n', len);

		len = nl ? (size_t)(nl - fo->wtext.buf) + 1 : 0;
	}
	return text_store(fs, fo, len, false);
}

/* Apply what @fo wrote since the last flush, whole; fo->lock held.  A text
 * refused at a write was answered there: nothing is applied, 0. */
static int text_flush(struct fs *fs, struct fs_open *fo)
{
	int ret = 0;

	if (fo->wstarted && !fo->wrefused)
		ret = text_store(fs, fo, fo->wtext.len, true);
	fo->wstarted = false;
	fo->wrefused = 0;
	sb_free(&fo->wtext);
	return ret;
}

static void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_open *fo = (struct fs_open *)(uintptr_t)fi->fh;
	const struct fs_node *n = fo->node;
	struct fs_ctx c;
	ssize_t ret;

	(void)ino;
	fs_err_clear();
	fs_stat_handoff_drop(fs); /* a change: no stat render outlives it */
	if (!(n->flags & FS_BINARY)) {
		bool again;

		pthread_mutex_lock(&fo->lock);
		again = fo->wrefused != 0;
		ret = text_write(fs, fo, buf, size, off);
		if (ret < 0 && !again) {
			fo->wrefused = (int)ret;
			sb_free(&fo->wtext);
		}
		pthread_mutex_unlock(&fo->lock);
		if (ret < 0 && again)
			fuse_reply_err(req, (int)-ret); /* the rest of a refused text */
		else if (ret < 0)
			fs_reply_fail_node(req, fs, n, fo->idx, (int)ret);
		else
			fuse_reply_write(req, size);
		return;
	}
	ret = fs_ctx_enter(fs, &c, n, fo->idx, fo);
	if (ret == 0) {
		ret = n->write_bin(&c, buf, size, off);
		fs_ctx_leave(fs, &c);
	}
	if (ret < 0)
		fs_reply_fail_node(req, fs, n, fo->idx, (int)ret);
	else
		fuse_reply_write(req, (size_t)ret);
}

/* The text this open gathered, applied (or refused) under its lock. */
static int open_text_apply(struct fs *fs, struct fs_open *fo)
{
	int ret;

	fs_err_clear();
	pthread_mutex_lock(&fo->lock);
	ret = text_flush(fs, fo);
	pthread_mutex_unlock(&fo->lock);
	return ret;
}

/* close(2): the text this open wrote is applied now, and close returns
 * what that came to (every close of a copy of the file sends one). */
static void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_open *fo = (struct fs_open *)(uintptr_t)fi->fh;
	int ret;

	(void)ino;
	ret = open_text_apply(fs, fo);
	if (ret < 0)
		fs_reply_fail_node(req, fs, fo->node, fo->idx, ret);
	else
		fuse_reply_err(req, 0);
}

static void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fs_open *fo = (struct fs_open *)(uintptr_t)fi->fh;
	int ret;

	(void)ino;
	/* Written after the last flush (none comes without a close): applied
	 * still, its refusal only in errors. */
	ret = open_text_apply(fs, fo);
	if (ret < 0) {
		char path[256];

		fs_path(fs, fo->node, fo->idx, path, sizeof(path));
		fs_error_add(fs, path, ret, fs_last_error());
		fs_err_clear();
	}
	fs_poll_forget(fs, fo);
	open_free(fs, fo);
	fuse_reply_err(req, 0);
}

struct fuse_session *fs_session_new(struct fuse_args *args, struct fs *fs)
{
	return fuse_session_new(args, &fs_ops, sizeof(fs_ops), fs);
}

static const struct fuse_lowlevel_ops fs_ops = {
	.init = fs_op_init,
	.destroy = fs_op_destroy,
	.lookup = fs_op_lookup,
	.getattr = fs_op_getattr,
	.setattr = fs_op_setattr,
	.mknod = fs_op_mknod,
	.mkdir = fs_op_mkdir,
	.unlink = fs_op_unlink,
	.rmdir = fs_op_rmdir,
	.open = fs_op_open,
	.read = fs_op_read,
	.write = fs_op_write,
	.flush = fs_op_flush,
	.release = fs_op_release,
	.access = fs_op_access,
	.opendir = fs_op_opendir,
	.readdir = fs_op_readdir,
	.releasedir = fs_op_releasedir,
	.create = fs_op_create,
	.rename = fs_op_rename,
	.link = fs_op_link,
	.symlink = fs_op_symlink,
	.setxattr = fs_op_setxattr,
	.removexattr = fs_op_removexattr,
	.poll = fs_op_poll,
};
