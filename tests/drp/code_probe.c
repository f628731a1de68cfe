// SPDX-License-Identifier: GPL-2.0
/*
 * code_probe DEVICE CODE...: send each ioctl CODE (a bare datadev number,
 * argument 0) to DEVICE and print "CODE RESULT ERRNO-NAME" a line, for the
 * compatibility table's cells of codes a driver may not have (upstream's
 * dma-buf commands 0x800A-0x800E on 7.4 and 7.5).  Exit 0 when every call
 * was made, 1 when DEVICE cannot be opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static const char *errno_name(int e)
{
	switch (e) {
	case 0:
		return "0";
	case EPERM:
		return "EPERM";
	case ENOTTY:
		return "ENOTTY";
	case EINVAL:
		return "EINVAL";
	case EBADF:
		return "EBADF";
	case EBUSY:
		return "EBUSY";
	default:
		return strerror(e);
	}
}

int main(int argc, char *argv[])
{
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: %s DEVICE CODE...\n", argv[0]);
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		unsigned long code = strtoul(argv[i], NULL, 0);
		int r;

		errno = 0;
		r = ioctl(fd, code, 0);
		printf("0x%lx %d %s\n", code, r, errno_name(r < 0 ? errno : 0));
	}
	close(fd);
	return 0;
}
