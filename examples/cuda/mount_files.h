/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the CUDA consumers (consumer.c, drp_consumer.cu; C and C++) read and
 * write through the mount: files under the mount point @mnt, which each
 * program sets from its command line, and a monotonic clock.  Errors end
 * the program with die() (the includer defines it: cuda_check.h).
 */
#ifndef GA_MOUNT_FILES_H
#define GA_MOUNT_FILES_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *mnt;

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read <mnt>/<rel> into @buf (trailing newline removed); -errno if absent. */
static inline int fs_read(const char *rel, char *buf, size_t len)
{
	char path[4096];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", mnt, rel) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

static inline uint64_t fs_u64(const char *rel)
{
	char buf[256];
	int rc = fs_read(rel, buf, sizeof(buf));

	if (rc)
		die("cannot read %s/%s: %s", mnt, rel, strerror(-rc));
	return strtoull(buf, NULL, 0);
}

static inline void fs_write(const char *rel, const char *val)
{
	char path[4096];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", mnt, rel) >= sizeof(path))
		die("%s/%s: path too long", mnt, rel);
	fd = open(path, O_WRONLY);
	if (fd < 0 || write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		die("cannot write '%s' to %s: %s", val, path, strerror(errno));
	/* the value is applied at close, which says what that came to */
	if (close(fd) < 0)
		die("cannot write '%s' to %s: %s", val, path, strerror(errno));
}

/* The 64 bytes of a buffer's CUDA IPC handle from its ipc_handle file
 * (@rel, hex) into @out (the handle struct's reserved bytes). */
static inline void fs_ipc_handle(const char *rel, char *out, size_t len)
{
	char hex[256];
	int rc = fs_read(rel, hex, sizeof(hex));

	if (rc)
		die("%s/%s: %s (is the daemon using GPU memory? see device/gpu)", mnt, rel,
		    strerror(-rc));
	if (strlen(hex) != 2 * len)
		die("%s/%s: not a %zu-byte handle", mnt, rel, len);
	for (size_t k = 0; k < len; k++) {
		unsigned int v;

		sscanf(hex + 2 * k, "%2x", &v);
		out[k] = (char)v;
	}
}

#endif
