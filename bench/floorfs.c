/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * floorfs: the smallest useful FUSE filesystem, the floor gpuasyncfs is
 * measured against.  One file, "val", 16 bytes, served the way gpuasyncfs
 * serves a register: direct_io, noflush, the single-threaded loop, 1 s
 * entry/attribute timeouts, default_permissions.  Whatever gpuasyncfs
 * costs above this is its own overhead, not FUSE's.
 *
 *   floorfs -f MOUNTPOINT     (fusermount3 -u MOUNTPOINT to stop)
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VAL_INO 2
static const char val[] = "123456789012345\n";

static int floor_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else if (ino == VAL_INO) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = 4096;
	} else {
		return -1;
	}
	return 0;
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = {.ino = VAL_INO, .attr_timeout = 1.0, .entry_timeout = 1.0};

	if (parent != FUSE_ROOT_ID || strcmp(name, "val")) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	floor_stat(VAL_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (floor_stat(ino, &st) < 0)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, 1.0);
}

static void floor_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != VAL_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->direct_io = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void floor_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	size_t len = sizeof(val) - 1;

	(void)ino;
	(void)fi;
	if ((size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, val + off, size < len - (size_t)off ? size : len - (size_t)off);
}

static void floor_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops floor_ops = {
	.lookup = floor_lookup,
	.getattr = floor_getattr,
	.open = floor_open,
	.read = floor_read,
	.release = floor_release,
};

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse_session *se;
	int ret = 1;

	if (fuse_parse_cmdline(&args, &opts) != 0 || !opts.mountpoint) {
		fprintf(stderr, "usage: %s -f MOUNTPOINT\n", argv[0]);
		goto out_free_args;
	}
	if (fuse_opt_add_arg(&args, "-odefault_permissions") != 0)
		goto out_free_opts;
	se = fuse_session_new(&args, &floor_ops, sizeof(floor_ops), NULL);
	if (!se)
		goto out_free_opts;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_destroy;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_remove_handlers;
	fuse_daemonize(opts.foreground);
	ret = fuse_session_loop(se) < 0;
	fuse_session_unmount(se);
out_remove_handlers:
	fuse_remove_signal_handlers(se);
out_destroy:
	fuse_session_destroy(se);
out_free_opts:
	free(opts.mountpoint);
out_free_args:
	fuse_opt_free_args(&args);
	return ret;
}
